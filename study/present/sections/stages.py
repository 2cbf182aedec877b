"""The stage tables: per input dtype at its largest square shape, every stage and variant per backend, with its
precision, TFLOP/s, the percentage of its named baseline, relerr and resources; each stage links its own page."""
from __future__ import annotations

import pandas as pd

from study.core.stages import STAGES
from study.measure.frame import dtype_order, variant_of
from study.present import figures as roofline
from study.present.formatting import fmt_bytes, fmt_num
from study.present.spread import fmt_measure

ID, NAV, TEMPLATE = "stages", "Stages", "sections/stages.html.j2"


def reference_shape(df: pd.DataFrame) -> tuple[tuple[int, int, int] | None, bool]:
    """The largest square shape of this frame (True), or failing that the largest by FLOPs (False)."""
    sq = df[(df["shape_set"] == "square") & (df["M"] == df["N"]) & (df["N"] == df["K"])].dropna(subset=["M"])
    if not sq.empty:
        m = int(sq["M"].max())
        return (m, m, m), True
    shaped = df.dropna(subset=["M", "N", "K"])
    if shaped.empty:
        return None, False
    r = shaped.loc[(shaped["M"] * shaped["N"] * shaped["K"]).idxmax()]
    return (int(r["M"]), int(r["N"]), int(r["K"])), False


def _cell(rows: pd.DataFrame, bases: dict, max_clock=None) -> dict | None:
    """The last row of `rows` as a table cell; its percentage names its baseline, and the baseline's precision
    where that differs from the row's (an fp16-split or TF32 row against SGEMM, say); its TFLOP/s with its
    spread and SM clock (spread.fmt_measure)."""
    if rows.empty:
        return None
    r = rows.iloc[-1]
    base = bases.get((r["baseline_impl"], r["dtype"]), "")
    res = [fmt_num(r["registers"]), fmt_bytes(r["smem_bytes"]), fmt_num(r["spills"])]
    return {
        "impl": r["impl"], "precision": r["precision"], "tflops": fmt_measure(r, max_clock) or fmt_num(r["tflops"]),
        "pct": fmt_num(r["pct_cublas"]), "baseline": r["baseline_impl"], "relerr": fmt_num(r["relerr"]),
        "other_precision": base if base and base != r["precision"] else "",
        "tol": fmt_num(r["tol"]), "passed": bool(r["passed"]), "error": r["error"],
        "resources": " / ".join(res) if any(res) else "",
    }


def _backends(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(backend, column title) for every ladder backend in the frame, in the study's order."""
    present = set(df["backend"]) - {"cublas", ""}
    known = [b for b in roofline.BACKEND_NAMES if b in present]
    return [(b, roofline.BACKEND_NAMES.get(b, b)) for b in known + sorted(present - set(known))]


def _bought(at: pd.DataFrame, num: str, prev: str | None, backends) -> str:
    """What the stage bought, measured: its TFLOP/s against the previous stage's, per backend (main kernels
    only: a stage's variants are measured against the stage itself, in their own rows)."""
    if prev is None:
        return ""
    at = at[at["variant"] == ""]
    parts = []
    for b, title in backends:
        now = at.loc[(at["stage"] == num) & (at["backend"] == b) & at["passed"], "tflops"]
        before = at.loc[(at["stage"] == prev) & (at["backend"] == b) & at["passed"], "tflops"]
        if len(now) and len(before) and before.iloc[-1] > 0:
            parts.append(f"{title} {now.iloc[-1] / before.iloc[-1]:.2f}x")
    return f"Against stage {prev}: " + ", ".join(parts) + "." if parts else ""


def _stage_rows(at: pd.DataFrame, present: set[str], titles: dict[str, str], backends, bases: dict,
                max_clock=None) -> list[dict]:
    known = {s.number: s for s in STAGES}
    numbers = [s.number for s in STAGES if s.number in present] + sorted(present - set(known))
    rows = []
    for i, num in enumerate(numbers):
        s = known.get(num)
        here = at[at["stage"] == num]
        # A stage with variants gets a row per variant, titled by its implementations' own title (which names
        # the precision), never one cell holding whichever variant came last.
        variants = [""] + sorted(set(here["variant"]) - {""})
        for v in variants:
            mine = here[here["variant"] == v]
            own = [t for t in mine["stage_title"] if t]
            title = own[0] if own and len(variants) > 1 else (s.title if s else titles.get(num, ""))
            main = v == ""
            rows.append({
                "kind": "stage", "number": num, "title": title,
                "variant": (v or (s.slug if s else "")) if len(variants) > 1 else "",
                "summary": s.summary if s and main else "", "seed": s.seed if s and main else "",
                "bought": _bought(at, num, numbers[i - 1] if i else None, backends) if main else "",
                "notes": [f"{roofline.BACKEND_NAMES.get(b, b)}: {t}" for b, t in (s.notes if s else {}).items()]
                         if main else [],
                "cells": {b: _cell(mine[mine["backend"] == b], bases, max_clock) for b, _ in backends},
            })
    return rows


def _baseline_rows(at: pd.DataFrame, impls: list[str], backends, bases: dict, max_clock=None) -> list[dict]:
    rows = []
    for impl in impls:
        cell = _cell(at[at["impl"] == impl], bases, max_clock)
        # cuBLAS sits with CUDA; a tuned Triton baseline sits with Triton, so each column compares like with like.
        side = at.loc[at["impl"] == impl, "backend"].iloc[-1] if cell else "cuda"
        side = side if side in dict(backends) else "cuda"
        rows.append({"kind": "baseline", "number": "baseline", "title": impl, "variant": "", "summary": "", "seed": "",
                     "bought": "", "notes": [], "cells": {b: cell if b == side else None for b, _ in backends}})
    return rows


def stage_tables(df: pd.DataFrame, max_clock=None) -> list[dict]:
    tables = []
    backends = _backends(df) or [("cuda", "CUDA")]
    # What each baseline computes, per input dtype: a row's percentage names its baseline's precision where it
    # differs from the row's own (an fp16-split or TF32 row against SGEMM, say).
    base_rows = df[df["stage"] == "baseline"]
    bases = dict(zip(zip(base_rows["impl"], base_rows["dtype"]), base_rows["precision"]))
    for dtype in dtype_order(df["dtype"]):
        d = df[df["dtype"] == dtype]
        shape, square = reference_shape(d)
        if shape is None:
            continue
        at = d[(d["M"] == shape[0]) & (d["N"] == shape[1]) & (d["K"] == shape[2])]
        at = at.assign(variant=[variant_of(st, i) for st, i in zip(at["stage"], at["impl"])])
        present = set(d["stage"]) - {"baseline", ""}
        titles = dict(zip(d["stage"], d["stage_title"]))
        styles = roofline.series_styles(df)
        impls = sorted(set(d.loc[d["stage"] == "baseline", "impl"]), key=lambda i: styles[i].order)
        tables.append({"dtype": dtype, "shape": "x".join(map(str, shape)), "square": square, "backends": backends,
                       "rows": _stage_rows(at, present, titles, backends, bases, max_clock)
                       + _baseline_rows(at, impls, backends, bases, max_clock)})
    return tables


def build(ctx) -> dict | None:
    tables = stage_tables(ctx.df, ctx.max_clock)
    return {"tables": tables, "pages": {p["number"]: p["href"] for p in ctx.stage_nav}} if tables else None
