"""study/ is layered (pyproject.toml's import contracts): each layer imports only the layers below it, and no
two modules import each other, directly or round a cycle.  import-linter checks it from the source."""
from __future__ import annotations

import re
from pathlib import Path

from study.core.stages import STAGES

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(monkeypatch):
    from importlinter.cli import lint_imports
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0, \
        "an import breaks study/'s layering: run lint-imports for the details"


def _stage_literals(source: str) -> list[str]:
    """String constants in code (docstrings aside) that are a stage number, "01" to "19"."""
    import ast
    tree = ast.parse(source)
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docs and re.fullmatch(r"0[1-9]|1[0-9]", n.value)]


def test_a_generic_module_names_no_stage():
    """Stage-specific code lives in its stage's own module (study/present/tcec.py, ...); generic modules take
    stage numbers from the stage table and the catalogue, which are data."""
    allowed = {"core/stages.py", "registry.py"}
    for path in sorted((ROOT / "study").rglob("*.py")):
        rel = path.relative_to(ROOT / "study").as_posix()
        if rel in allowed or re.search(r"(^|/)(stage\d\d|tcec)[_a-z]*\.py$", rel):
            continue
        assert not _stage_literals(path.read_text()), f"study/{rel} names stage {_stage_literals(path.read_text())}"


def test_the_stage_check_sees_a_stage_number():
    assert _stage_literals('x = "14"\ny = "baseline"') == ["14"]
    assert _stage_literals('"""stage "01" is the naive one."""\nz = 1') == []


# Modules for every stage: a stage's own code lives in modules of its own (study/present/tcec.py for stage 15),
# reached through data (study/core/stages.py) or the report's list of stage pages (study/present/pages.py).
GENERIC = ("study/measure/frame.py", "study/measure/accuracy.py",
           "study/present/figures.py", "study/present/report.py", "study/present/hierarchy.py",
           "study/present/formatting.py", "study/present/interactive.py", "study/present/findings.py",
           "study/present/stage_pages.py", "study/present/stage_forms.py", "study/present/form_diffs.py",
           *(f"study/present/sections/{m}.py" for m in (
               "__init__", "environment", "findings", "profile", "results", "rooflines", "sizes", "stages")))


def test_generic_modules_name_no_stage_even_in_prose():
    """The test above finds stage numbers in code; this also reads comments and docstrings, and names."""
    numbers = "|".join(s.number for s in STAGES)
    keys = "|".join(s.key for s in STAGES)
    named = re.compile(rf"""["']({numbers})["']|\bstages? ({numbers})\b|\b({keys})\b|\btcec\b""", re.IGNORECASE)
    for path in GENERIC:
        found = named.search((ROOT / path).read_text(encoding="utf-8"))
        assert found is None, f"{path} names a stage: {found and found.group(0)}"
