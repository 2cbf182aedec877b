"""reports/gpu-evidence.json: proof, for CI (which has no GPU), that each kernel as it is now passed on one.

Written only by a GPU test run (`pytest -m gpu --write-evidence reports/gpu-evidence.json`), never by hand.
Each record names an implementation, the SHA-256 of its sources and launch declaration
(`Impl.source_sha256`), the GPU, the date and the outcome.  tests/test_evidence.py fails on CPU when any
registered implementation's current hash has no passing record, so an unverified kernel cannot land.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from . import registry


def load(path: Path | str) -> list[dict]:
    p = Path(path)
    return json.loads(p.read_text())["records"] if p.exists() else []


def record(path: Path | str, outcomes: dict[str, tuple[int, int]]) -> None:
    """outcomes: impl name -> (tests passed, tests run).  Replaces records of the same (impl, sha256)."""
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
                      "tests_passed": passed, "tests_run": total, "gpu": gpu, "date": now,
                      "commit": git_commit(), "torch": torch.__version__})
    keys = {(r["impl"], r["sha256"]) for r in fresh}
    kept = [r for r in load(path) if (r["impl"], r["sha256"]) not in keys]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps({"records": kept + fresh}, indent=1) + "\n")


def passing(path: Path | str, impl) -> dict | None:
    sha = impl.source_sha256()
    for r in load(path):
        if r["impl"] == impl.name and r["sha256"] == sha and r["outcome"] == "passed":
            return r
    return None
