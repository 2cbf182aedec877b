"""Every row of results.csv, in a table the reader can sort (click a heading) and filter (type in the box), one
input dtype at a time (the buttons above it), so the page stays short; each row's TFLOP/s also as the report
states a measurement (spread.fmt_measure: its p20-p80 spread, SM clock and power-limited mark)."""
from __future__ import annotations

import pandas as pd

from study.measure.frame import NUMERIC_COLUMNS, call_key, dtype_order
from study.present.spread import fmt_measure

ID, NAV, TEMPLATE = "results", "All results", "sections/results.html.j2"
MEASURED = "measured (±p20-p80, clock)"
COLUMNS = ("impl", "stage", "backend", "dtype", "precision", "M", "N", "K", "shape_set", "alpha", "beta", "ms",
           "ms_p20", "ms_p80", "tflops", MEASURED, "gbps", "intensity", "pct_cublas", "baseline_impl", "relerr", "tol",
           "passed", "registers", "smem_bytes", "spills", "sm_clock_mhz", "ms_idle", "sm_clock_idle_mhz", "error")
NUMERIC = set(NUMERIC_COLUMNS) | {"ms_idle", "sm_clock_idle_mhz"}


def _text(col: str, v) -> str:
    if col in NUMERIC:
        v = pd.to_numeric(v, errors="coerce")
        return "" if pd.isna(v) else (f"{v:.4g}" if isinstance(v, float) and not float(v).is_integer() else str(int(v)))
    return "yes" if v is True else "NO" if v is False else str(v)


def full_rows(df: pd.DataFrame, stale: set, max_clock=None) -> list[dict]:
    out = []
    for _, r in df.iterrows():
        key = call_key(r) if pd.notna(r["M"]) else None
        cells = [(c, fmt_measure(r, max_clock) if c == MEASURED else _text(c, r.get(c, "")), c in NUMERIC)
                 for c in COLUMNS]
        out.append({"cells": cells, "dtype": r["dtype"], "passed": bool(r["passed"]), "stale": key in stale})
    return out


def build(ctx) -> dict | None:
    if ctx.df.empty:
        return None
    return {"columns": COLUMNS, "rows": full_rows(ctx.df, ctx.stale, ctx.max_clock),
            "dtypes": dtype_order(ctx.df["dtype"]), "csv": (ctx.report_dir / "results.csv").exists()}
