"""The committed reports/ rendered afresh, once per test session: its data (every file but the pages and images)
copied into a temporary tree, a stale plotly.min.js left in each GPU folder as an earlier renderer did, and the
tree rendered exactly as `python -m study.report --stale` renders reports/.  Tests that change a tree copy it first."""
from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GPUS = tuple(sorted(d.name for d in (REPO / "reports").iterdir() if (d / "results.csv").exists()))


@functools.lru_cache(maxsize=None)
def rendered_reports() -> Path:
    from study.present.report import main
    top = Path(tempfile.mkdtemp(prefix="rendered-reports-"))
    atexit.register(shutil.rmtree, top, ignore_errors=True)
    root = top / "reports"
    shutil.copytree(REPO / "reports", root, ignore=shutil.ignore_patterns("*.html", "*.png", "plotly.min.js"))
    for gpu in GPUS:
        (root / gpu / "plotly.min.js").write_text("stale copy")
    # A report with rows measured on code that has changed since is committed with them marked (--stale).
    assert main(["--dir", str(root), "--stale"]) == 0
    return root
