"""docs/ holds the study's notes by stage and by method, not as a work log; every file it names exists."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from study.core.stages import STAGES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TREES = ("docs", "cuda_kernels", "triton_kernels", "study", "tools")
SUFFIXES = {".md", ".py", ".cu", ".cuh", ".j2", ".sh", ".toml", ".html"}
WORK_LOG = [re.compile(p, re.IGNORECASE) for p in (
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|\w+teenth|twentieth"
    r"|next|this|last|previous)\s+session\b",
    r"hand-?over",
    r"\bNOTES\.md\b",
    r"for the next session",
)]
NAMED = re.compile(r"\b(tools/[\w.-]+|docs/[\w.-]+\.md)")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def _files(tree: str) -> list[Path]:
    base = ROOT / tree
    return sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                  and "__pycache__" not in p.parts)


def _hits(paths: list[Path], pattern: re.Pattern) -> list[str]:
    out = []
    for p in paths:
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            out += [f"{p.relative_to(ROOT)}:{n}: {m.group(0)}" for m in pattern.finditer(line)]
    return out


def test_docs_has_method_and_one_file_per_stage():
    names = {p.name for p in DOCS.glob("*.md")}
    want = {f"{s.key}.md" for s in STAGES} | {"method.md", "README.md"}
    assert want <= names, sorted(want - names)
    assert not (ROOT / "NOTES.md").exists()
    index = (DOCS / "README.md").read_text()
    assert all(f"({n})" in index for n in want - {"README.md"})


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("pattern", WORK_LOG, ids=lambda p: p.pattern[:24])
def test_no_work_log_headings_or_references(tree, pattern):
    assert _hits(_files(tree), pattern) == []


@pytest.mark.parametrize("pattern", WORK_LOG, ids=lambda p: p.pattern[:24])
def test_readme_has_no_work_log_references(pattern):
    assert _hits([ROOT / "README.md"], pattern) == []


@pytest.mark.parametrize("tree", TREES)
def test_named_tools_and_docs_exist(tree):
    missing = [h for h in _hits(_files(tree), NAMED) if not (ROOT / h.rsplit(": ", 1)[1]).exists()]
    assert missing == []


def test_readme_names_only_existing_tools_and_docs():
    missing = [h for h in _hits([ROOT / "README.md"], NAMED) if not (ROOT / h.rsplit(": ", 1)[1]).exists()]
    assert missing == []


@pytest.mark.parametrize("name", ["method.md", *(f"{s.key}.md" for s in STAGES)])
def test_entries_carry_dates_and_commits(name):
    text = (DOCS / name).read_text()
    entries = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert entries, f"{name} has no entries"
    undated = [e.splitlines()[0] for e in entries if not (DATE.search(e) and COMMIT.search(e))]
    assert undated == []


def _stage_sources() -> list[Path]:
    return sorted([*(ROOT / "cuda_kernels").glob("*.cu"), *(ROOT / "cuda_kernels").glob("*.cuh"),
                   *(ROOT / "triton_kernels").glob("*.py"), *(ROOT / "triton_kernels" / "gluon").glob("*.py")])


def test_stage_files_fit_120_columns():
    long = [f"{p.relative_to(ROOT)}:{i}" for p in _stage_sources()
            for i, line in enumerate(p.read_text().splitlines(), 1) if len(line) > 120]
    assert len(_stage_sources()) > 40 and not long, f"lines over 120 columns: {long}"


def test_the_wgmma_machinery_is_written_once():
    """Stages 14 and 15 both take descriptors, fences and the wgmma instruction from cuda_kernels/wgmma.cuh."""
    for name in ("14_wgmma.cu", "15_tcec.cu"):
        text = (ROOT / "cuda_kernels" / name).read_text()
        assert '#include "wgmma.cuh"' in text, name
        assert not re.search(r'"[^"\n]*wgmma\.(fence|commit_group|wait_group|mma_async)', text), \
            f"{name} spells a wgmma instruction in its own asm"
    assert "wgmma.mma_async" in (ROOT / "cuda_kernels" / "wgmma.cuh").read_text()
