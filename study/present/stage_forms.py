"""The measured ladder of a stage's forms, for its page (study/present/stage_pages.py): where a backend has more
than one registered form of the stage (its main form `<backend>:<key>` and its variants `<backend>:<key>-<suffix>`),
one table per dtype, a row per form, backend by backend in the registry's order: at each headline size its
TFLOP/s with spread and SM clock (spread.fmt_measure), its share of cuBLAS and its step from the form before, a
difference inside the p20-p80 spreads reading as a tie (spread.tie); and, where the stage declares it
(Stage.step_counters), the one ncu counter that explains the step, from profile.csv at 4096^3 (a call's kernels
summed, audit-rejected calls left out: stage_chart.counters), before -> after.

study.registry imports torch, which the report never does, so the forms come from the data (results.csv,
profile.csv, and the repository-wide gpu-evidence.json and ptx.json the page reads), in the order the stage declares
(Stage.step_counters, checked against the registry by tests/test_stage_pages.py), else in the order results.csv
first holds them: the sweep writes each shape's rows in the registry's order.  A form with no row at a size or
dtype shows "—" (not measured).
"""
from __future__ import annotations

import math

import pandas as pd

from study.core.stages import Stage
from study.measure.frame import call_key, dtype_order
from study.present import spread, stage_chart
from study.present.formatting import fmt_num

BACKENDS = {"cuda": "CUDA", "triton": "Triton", "gluon": "Gluon"}
MISSING = "—"
FOLD_ABOVE = 14          # a dtype's table of more forms than this starts folded
# A counter's words on the page; a column not named here is shown by its profile.csv name.
COUNTER_NAMES = {"tensor_pct": "tensor pipe active %", "issue_pct": "issue slots busy %", "l2_bytes": "L2 MB",
                 "dram_bytes": "DRAM MB", "smem_st_conflicts": "shared-store bank conflicts",
                 "smem_ld_conflicts": "shared-load bank conflicts", "occupancy_pct": "occupancy %",
                 "instructions": "instructions (millions)"}


def suffix(s: Stage, impl: str) -> str | None:
    """"-ws" for "cuda:<key>-ws", "" for the main form, None for an implementation of another stage."""
    body = impl.split(":", 1)[-1]
    if body == s.key:
        return ""
    return body[len(s.key):] if body.startswith(f"{s.key}-") else None


def forms(s: Stage, names) -> dict[str, list[str]]:
    """backend -> the stage's forms among `names` (implementation names, in the order first seen), in the order
    Stage.step_counters declares their suffixes, then the undeclared ones in the order seen."""
    declared = list(s.step_counters)
    seen = [n for n in dict.fromkeys(names) if isinstance(n, str) and suffix(s, n) is not None]
    out = {}
    for backend in BACKENDS:
        mine = [n for n in seen if n.split(":", 1)[0] == backend]
        rank = {n: (declared.index(suffix(s, n)) if suffix(s, n) in declared else len(declared), i)
                for i, n in enumerate(mine)}
        if mine:
            out[backend] = sorted(mine, key=rank.get)
    return out


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt_counter(column: str, value) -> str:
    """A counter's value as the page writes it: bytes in MB, instructions in millions, the rest as counted."""
    v = _num(value)
    if v is None:
        return MISSING
    return fmt_num(v / 1e6 if column.endswith("_bytes") or column == "instructions" else v)


def _step(r: dict, before: dict | None) -> str:
    """This row against the form before's at the same shape and dtype: a tie inside the spreads, else the change."""
    if before is None:
        return ""
    if spread.tie(r, before):
        return "tie"
    return f"{100.0 * (float(r['tflops']) / float(before['tflops']) - 1.0):+.1f}%".replace("-", "−")


def _cell(r: dict | None, before: dict | None, base: dict | None, max_clock, stale: set) -> dict:
    """One size of a form's row: its TFLOP/s as spread.fmt_measure states it (spread, SM clock, power limit),
    its share of its baseline ("(tie)" where the two ranges overlap) and its step from the form before."""
    if r is None:
        return {"tflops": MISSING, "title": "not measured", "pct": MISSING, "pct_title": "", "step": "",
                "limited": False, "passed": True, "stale": False}
    pct = fmt_num(_num(r.get("pct_cublas")))
    tied = base is not None and spread.tie(r, base)
    title = f"{r['impl']} {r['dtype']} {fmt_num(r['M'])}³" + (f", commit {r['commit']}" if r.get("commit") else "")
    if before is not None:
        title += f"; {spread.compare_word(r, before)} {before['impl']} ({spread.fmt_measure(before, max_clock)})"
    return {"tflops": spread.fmt_measure(r, max_clock), "title": title,
            "pct": (f"{pct} (tie)" if tied and pct else pct) or MISSING,
            "pct_title": f"% of {r['baseline_impl']}" + (f" ({spread.fmt_measure(base, max_clock)})" if base else "")
            if isinstance(r.get("baseline_impl"), str) else "",
            "step": _step(r, before), "limited": spread.power_limited(r, max_clock), "passed": bool(r["passed"]),
            "stale": call_key(r) in stale}


def table(df: pd.DataFrame, s: Stage, before: dict, sizes, prof: pd.DataFrame | None = None,
          known=(), max_clock=None, stale: set = frozenset()) -> dict | None:
    """The stage's ladder of forms: {"tabs": [{dtype, before, open, backends: [{backend, title, rows}]}], "sizes",
    "counted", "at", "profiled"}, or None where no backend has more than one form or no row of the stage is here.

    df: results.csv's rows; before: dtype -> the stage the page's chart compares with in that dtype (its main
    forms head each backend's steps; stage_chart.previous), None or absent where there is none;
    sizes: the square sizes shown; prof: the profiled calls, kernels summed (stage_chart.counters); known: other
    implementation names the page knows (gpu-evidence.json, ptx.json); stale: keys of rows measured on code that
    has changed since."""
    d = df[df["stage"] == s.number] if len(df) else pd.DataFrame(columns=["impl", "dtype"])
    names = [*d["impl"], *(prof.loc[prof["stage"] == s.number, "impl"] if prof is not None else []), *known]
    ladders = forms(s, names)
    if not any(len(v) > 1 for v in ladders.values()):
        return None
    square = df[(df["M"] == df["N"]) & (df["N"] == df["K"]) & df["M"].isin(sizes)] if len(df) else df
    rows = {(r["impl"], r["dtype"], int(r["M"])): r for r in square.to_dict("records")}   # the last row of a call
    calls = {}
    if prof is not None:
        at = prof[(prof["M"] == stage_chart.HEADLINE) & (prof["N"] == stage_chart.HEADLINE)
                  & (prof["K"] == stage_chart.HEADLINE)]
        calls = {(r["impl"], r["dtype"]): r for r in at.to_dict("records")}
    if d.empty:                                                     # nothing of the stage measured here
        return None
    runs = d.groupby("impl")["dtype"].agg(set).to_dict()
    dtypes = dtype_order(set(d["dtype"]))
    tabs = []
    for dtype in sorted(dtypes, key=lambda x: -sum(x in v for v in runs.values())):    # the most forms first
        backends = []
        for backend, impls in ladders.items():
            prev = f"{backend}:{before[dtype].key}" if before.get(dtype) else None
            out = []
            for impl in impls:
                if runs.get(impl) and dtype not in runs[impl]:      # measured, but never in this dtype: not its
                    continue
                if suffix(s, impl) in s.steps_from:                 # a sibling: its step from the form it names
                    prev = f"{backend}:{s.key}{s.steps_from[suffix(s, impl)]}"
                column = s.step_counters.get(suffix(s, impl))
                cells = []
                for n in sizes:
                    r, b = rows.get((impl, dtype, n)), rows.get((prev, dtype, n))
                    base = rows.get((r.get("baseline_impl"), dtype, n)) if r is not None else None
                    cells.append(_cell(r, b, base, max_clock, stale))
                counter = None
                if column:
                    now, was = calls.get((impl, dtype), {}).get(column), calls.get((prev, dtype), {}).get(column)
                    counter = {"column": column, "name": COUNTER_NAMES.get(column, column),
                               "value": fmt_counter(column, now), "before": fmt_counter(column, was) if prev else "",
                               "of": prev or ""}
                out.append({"impl": impl, "cells": cells, "counter": counter})
                prev = impl
            if out:
                backends.append({"backend": backend, "title": BACKENDS[backend], "rows": out})
        tabs.append({"dtype": dtype, "backends": backends, "before": before.get(dtype),
                     "open": sum(len(b["rows"]) for b in backends) <= FOLD_ABOVE})
    return {"tabs": tabs, "sizes": list(sizes), "counted": bool(s.step_counters), "at": stage_chart.HEADLINE,
            "profiled": prof is not None}
