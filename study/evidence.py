"""reports/gpu-evidence.json: proof, for CI (which has no GPU), that each kernel as it is now passed on one.

Written only by a GPU test run (`pytest -m gpu --write-evidence reports/gpu-evidence.json`), never by hand.
Each record names an implementation, the SHA-256 of its sources and launch declaration
(`Impl.source_sha256`), the GPU, the date, the outcome, and how many of the full suite's tests for it ran (a
filtered run, `-k`, writes a record that does not count).  tests/test_evidence.py fails on CPU when any
registered implementation's current hash has no passing, complete record, so an unverified kernel cannot land.
The "sanitizer" list holds compute-sanitizer's counts per CUDA kernel (study/sanitize.py), keyed the same way.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from . import registry


def _doc(path: Path | str) -> dict:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else {}


def load(path: Path | str) -> list[dict]:
    return _doc(path).get("records", [])


def _write(path: Path | str, doc: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def record(path: Path | str, outcomes: dict[str, tuple[int, int]], expected: dict[str, int]) -> None:
    """outcomes: impl name -> (tests passed, tests run); expected: impl name -> how many GPU tests the full
    suite has for it (a filtered run writes a record that does not count).  Replaces records of the same
    (impl, sha256)."""
    import torch
    from .environment import git_commit
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    gpu = torch.cuda.get_device_name()
    fresh = []
    for name, (passed, total) in sorted(outcomes.items()):
        impl = registry.get(name)
        fresh.append({"impl": name, "sha256": impl.source_sha256(),
                      "sources": [str(s.relative_to(registry.ROOT)) for s in impl.sources],
                      "outcome": "passed" if total and passed == total else "failed",
                      "tests_passed": passed, "tests_run": total, "tests_expected": expected.get(name),
                      "gpu": gpu, "date": now,
                      "commit": git_commit(), "torch": torch.__version__})
    keys = {(r["impl"], r["sha256"]) for r in fresh}
    doc = _doc(path)
    doc["records"] = [r for r in doc.get("records", []) if (r["impl"], r["sha256"]) not in keys] + fresh
    _write(path, doc)


def record_sanitizer(path: Path | str, counts: dict[str, dict[str, int | None]], gpu: str, commit: str,
                     shapes) -> None:
    """counts: CUDA implementation -> {tool: errors attributed to it, or None if the tool did not get to it}.
    Replaces records of the same (impl, sha256)."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    fresh = []
    for name, tools in sorted(counts.items()):
        impl = registry.get(name)
        clean = bool(tools) and all(v == 0 for v in tools.values())
        fresh.append({"impl": name, "sha256": impl.source_sha256(), "errors": tools,
                      "outcome": "clean" if clean else "errors", "shapes": [list(s) for s in shapes],
                      "gpu": gpu, "date": now, "commit": commit})
    keys = {(r["impl"], r["sha256"]) for r in fresh}
    doc = _doc(path)
    doc["sanitizer"] = [r for r in doc.get("sanitizer", []) if (r["impl"], r["sha256"]) not in keys] + fresh
    _write(path, doc)


def sanitizer_clean(path: Path | str, impl) -> dict | None:
    sha = impl.source_sha256()
    for r in _doc(path).get("sanitizer", []):
        if r["impl"] == impl.name and r["sha256"] == sha and r["outcome"] == "clean":
            return r
    return None


def passing(path: Path | str, impl, expected: int) -> dict | None:
    """The record that proves `impl`'s current source: its tests all passed, and there were as many as the
    full GPU suite now has for it (`expected`), so neither a filtered run nor one from before tests were
    added counts."""
    sha = impl.source_sha256()
    for r in load(path):
        if (r["impl"] == impl.name and r["sha256"] == sha and r["outcome"] == "passed"
                and r["tests_run"] == expected):
            return r
    return None
