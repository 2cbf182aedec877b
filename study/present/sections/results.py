"""Every row of results.csv, in a table the reader can sort (click a heading) and filter (type in the box)."""
from __future__ import annotations

import pandas as pd

from study.measure.frame import NUMERIC_COLUMNS, call_key

ID, NAV, TEMPLATE = "results", "All results", "sections/results.html.j2"
COLUMNS = ("impl", "stage", "backend", "dtype", "precision", "M", "N", "K", "shape_set", "alpha", "beta", "ms",
           "tflops", "gbps", "intensity", "pct_cublas", "baseline_impl", "relerr", "tol", "passed", "registers",
           "smem_bytes", "spills", "sm_clock_mhz", "error")


def _text(col: str, v) -> str:
    if col in NUMERIC_COLUMNS:
        return "" if pd.isna(v) else (f"{v:.4g}" if isinstance(v, float) and not float(v).is_integer() else str(int(v)))
    return "yes" if v is True else "NO" if v is False else str(v)


def full_rows(df: pd.DataFrame, stale: set) -> list[dict]:
    out = []
    for _, r in df.iterrows():
        key = call_key(r) if pd.notna(r["M"]) else None
        out.append({"cells": [(c, _text(c, r[c]), c in NUMERIC_COLUMNS) for c in COLUMNS],
                    "passed": bool(r["passed"]), "stale": key in stale})
    return out


def build(ctx) -> dict | None:
    if ctx.df.empty:
        return None
    return {"columns": COLUMNS, "rows": full_rows(ctx.df, ctx.stale), "csv": (ctx.report_dir / "results.csv").exists()}
