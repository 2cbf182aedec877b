"""Stage 15's section of the report (seed 002's TCEC): its error against K per input distribution (accuracy.csv:
relative Frobenius, median elementwise and componentwise errors), each fp32-labelled method's claims against
cuBLAS SGEMM per distribution and metric (its error over SGEMM's on the same inputs: beats, ties or loses, said in
a table and in sentences, never by hand), each variant's error as a multiple of the TCEC method's, speed
(results.csv) against each distribution's error (accuracy.csv) with the Pareto front, and seed 002's Figure 8 on
this GPU (fig8.csv) beside the paper's A100 figure.  python -m study.accuracy writes the two CSVs;
tcec_figures.py draws the static figures, interactive.py the Pareto plot.

The report reaches it as one of its stage pages (study/present/pages.py says what a page module gives).
The stage's own ceilings on the fp32 roofline come from its Stage record (fp32_products, split_peaks).  Seed
002's other bound, shared-memory bandwidth over the operand bytes per FLOP of a register blocking (Sections 3
and 4.4.1), needs a measured shared-memory bandwidth; ceilings.json has none, so it is left out.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from study.core import stages
from study.core.schema import TOLERANCE
from study.measure.accuracy import (ACCURACY_COLUMNS, DISTRIBUTION, DISTRIBUTIONS, FIG8_COLUMNS, METRIC_DEFINITIONS,
                                    SEED002_MAX_RELERR_DEFINITION)
from study.measure.frame import load_table, positive, variant_of
from study.present import interactive, tcec_figures
from study.present.figures import BACKEND_NAMES
from study.present.formatting import finite, fmt_num
from study.present.tcec_figures import pareto_front
from study.present.ladder import compact

NUMBER = stages.stage("tcec").number
ID, NAV, TEMPLATE = "tcec", "Stage 15: TCEC", "tcec.html.j2"
FILES = ("accuracy.csv", "fig8.csv")
ACC_NUMERIC = ("M", "N", "K", "relerr", "median_relerr", "componentwise", "nonfinite")
FIG8_NUMERIC = ("batch", "M", "N", "K", "ms", "reps", "tflops", "sgemm_tflops", "x_sgemm", "relerr", "median_relerr",
                "componentwise", "seed002_max_relerr", "nonfinite", "sm_clock_mhz")
# accuracy.csv's errors, in the order the tables show them, with their column headings.
METRICS = (("relerr", "Frobenius"), ("median_relerr", "median"), ("componentwise", "componentwise"))
# The same errors in a sentence's words.
METRIC_WORDS = {"relerr": "relative Frobenius error", "median_relerr": "median elementwise error",
                "componentwise": "componentwise error"}
SGEMM = "cublas"   # cuBLAS SGEMM (fp32, TF32 off): what every claim of accuracy is measured against
DIST_LABELS = {name: d.label for name, d in DISTRIBUTION.items()}
# The precisions that claim fp32 accuracy (and any other held to fp32's tolerance, study.core.schema.TOLERANCE):
# each gets a verdict against SGEMM per distribution and metric.
FP32_LABELS = ("fp32", "fp16x3-tcec", "tf32x3", "bf16x6", "bf16x9")
# A method's error over SGEMM's on the same inputs: below BEATS it beats SGEMM, up to TIES it ties, above it loses.
BEATS, TIES = 0.8, 1.25
VERDICTS = ("beats", "ties", "loses")
# The K at which each distribution's error meets the speed on the Pareto plot (the largest K below it otherwise).
PARETO_K = 4096
PNGS = ("tcec_accuracy.png", "tcec_pareto.png", "tcec_fig8.png")

# Seed 002 (Ootomo & Yokota, HPC Asia 2023), shared/seeds/002-ootomo-yokota-wmmae-tcec-paper.txt.
PAPER = {
    "gpu": "NVIDIA A100 (40GB, SXM4)",
    # Section 4.4.2 "Performance evaluation", Figure 8 (and the abstract): WMMAe-TCEC batched SGEMM emulation.
    "tcec_tflops": 54.2,
    # Section 2.1.1, Table 1: A100 FP32 peak and FP16 tensor-core peak.
    "fp32_peak_tflops": 19.5,
    "fp16_tc_tflops": 312.0,
    # Section 4.4.2: the shared-memory-bandwidth bound of their blocking, WMMA API alone vs WMMAe.
    "smem_bound_wmma_tflops": 52.0,
    "smem_bound_wmmae_tflops": 104.0,
    "cite": "seed 002, Section 4.4.2 and Figure 8 (54.2 TFLOP/s); Table 1 (A100 FP32 peak 19.5 TFLOP/s)",
}


def _method_order(stage: str, backend: str, method: str) -> tuple:
    """Stage 15 first (CUDA, Triton, Gluon; the method before its variants), then the baselines by name."""
    backends = list(BACKEND_NAMES)
    return (stage != NUMBER, backends.index(backend) if backend in backends else len(backends),
            variant_of(stage, method) != "", method)


def _err_cell(r, metric: str) -> dict:
    if r is None:
        return {"text": "", "title": "not measured", "bad": False}
    if r["error"]:
        return {"text": "raised", "title": r["error"], "bad": True}
    if r["nonfinite"] > 0:
        return {"text": f"NaN/inf x{int(r['nonfinite'])}", "title": "elements of D that are NaN or inf", "bad": True}
    return {"text": fmt_num(r[metric]), "title": f"{r['method']} {r['distribution']} K={int(r['K'])} {metric}",
            "bad": False}


def times(ratio: float, digits: int = 3) -> str:
    """A ratio as "7.5x", "0.46x", "1,400x" or "1.74e+06x"; "NaN/inf" for an infinite one (a method that returned
    NaN/inf)."""
    if math.isinf(ratio):
        return "NaN/inf"
    return f"{ratio:,.0f}x" if 1000 <= ratio < 1e5 else f"{ratio:.{digits}g}x"


def fp32_labelled(precision: str) -> bool:
    """A precision that claims fp32 accuracy: one of FP32_LABELS, or any held to fp32's tolerance."""
    return precision in FP32_LABELS or TOLERANCE.get(precision, math.inf) <= TOLERANCE["fp32"]


def error_ratio(r, sgemm, metric: str = "relerr") -> float | None:
    """The method's error over SGEMM's on the same inputs (below 1: more accurate than SGEMM); inf when the method
    returned NaN/inf (or erred where SGEMM was exact); None when either did not run, SGEMM returned NaN/inf, or an
    error is not a number."""
    if r is None or sgemm is None or r["error"] or sgemm["error"] or sgemm["nonfinite"] > 0:
        return None
    if r["nonfinite"] > 0:
        return math.inf
    mine, base = r[metric], sgemm[metric]
    if not (finite(mine) and finite(base)):
        return None
    if base == 0:
        return 1.0 if mine == 0 else math.inf
    return mine / base


def verdict(ratio: float) -> str:
    """"beats" SGEMM (an error below BEATS times SGEMM's), "ties" (up to TIES times) or "loses", judged on the ratio
    to the three significant digits the report prints (times()), so a printed 0.8x never beats."""
    shown = float(f"{ratio:.3g}")
    return "beats" if shown < BEATS else "ties" if shown <= TIES else "loses"


def _ks_text(ks) -> str:
    return f"K = {', '.join(str(k) for k in ks)}"


def _range(ratios) -> str:
    """The span of some ratios ("0.25–0.71x", "1.3x"), NaN/inf named apart."""
    ok = [r for r in ratios if math.isfinite(r)]
    lo, hi = (times(min(ok)), times(max(ok))) if ok else ("", "")
    span = lo if lo == hi else f"{lo[:-1]}\u2013{hi}"
    return ", ".join(t for t in (span, "NaN/inf" if len(ok) < len(ratios) else "") if t)


def _groups(by_k: dict[int, float]) -> list[tuple[str, list[int], list[float]]]:
    """{K: ratio} as (verdict, its Ks, their ratios), in VERDICTS order."""
    out = []
    for v in VERDICTS:
        ks = sorted(k for k, r in by_k.items() if verdict(r) == v)
        if ks:
            out.append((v, ks, [by_k[k] for k in ks]))
    return out


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _pattern(groups) -> str:
    """Verdicts with their Ks and ratios: "ties at K = 4096 (1.1x) and loses at K = 256 (2.2x)"."""
    return _and([f"{v} at {_ks_text(ks)} ({_range(rs)})" for v, ks, rs in groups])


def claim_text(by_k: dict[int, float]) -> str:
    """One metric's claim over the Ks measured: "beats (0.25–0.71x)" when every K agrees, else each verdict with
    its Ks ("ties at K = 4096 (1.1x) and loses at K = 256 (2.2x)")."""
    groups = _groups(by_k)
    return f"{groups[0][0]} ({_range(groups[0][2])})" if len(groups) == 1 else _pattern(groups)


def claim_clauses(verdicts: dict[str, dict[int, float]], raised=()) -> str:
    """What a method does against SGEMM on one distribution, from {metric: {K: its error / SGEMM's}} (in METRICS'
    order): metrics whose verdict is the same at every K share a clause ("beats by relative Frobenius error
    (0.25–0.71x) and median elementwise error (0.3x)"), metrics whose verdict changes with K name their Ks ("ties at
    K = 4096 (1.1x) and loses at K = 256 (2.2x) by componentwise error"); a method that returned NaN/inf at every
    K says so."""
    verdicts = {m: v for m, v in verdicts.items() if v}
    if not verdicts:
        return ""
    every = sorted({k for v in verdicts.values() for k in v})
    if all(math.isinf(r) for v in verdicts.values() for r in v.values()):
        said = f"returned NaN/inf at every K measured ({', '.join(map(str, every))}), so loses by every metric"
    else:
        # A clause per verdict that holds at every K (each metric with its ratios), or per pattern of verdicts over
        # the Ks (the metrics that share it), in the order of their first metric (METRICS').
        clauses: dict[str, list[str]] = {}
        for metric, by_k in verdicts.items():
            groups = _groups(by_k)
            if len(groups) == 1:
                clauses.setdefault(groups[0][0], []).append(f"{METRIC_WORDS[metric]} ({_range(groups[0][2])})")
            else:
                clauses.setdefault(_pattern(groups), []).append(METRIC_WORDS[metric])
        said = "; ".join(f"{what} by {_and(items)}" for what, items in clauses.items())
    if raised:
        said += f"; it raised at {_ks_text(sorted(raised))}"
    return said


def claim_sentence(method: str, dist: str, ks, verdicts: dict[str, dict[int, float]], raised=()) -> str:
    """One sentence on a method against SGEMM on one distribution (claim_clauses())."""
    return (f"On {DIST_LABELS.get(dist, dist)} inputs ({_ks_text(ks)}), {method} against cuBLAS SGEMM (its error / "
            f"SGEMM's on the same inputs): {claim_clauses(verdicts, raised)}.")


def _verdicts(m: str, dist: str, ks, last: dict) -> dict[str, dict[int, float]]:
    """{metric: {K: m's error / SGEMM's}} on one distribution, where both ran."""
    out = {}
    for metric, _ in METRICS:
        ratios = {k: error_ratio(last.get((m, dist, k)), last.get((SGEMM, dist, k)), metric) for k in ks}
        out[metric] = {k: v for k, v in ratios.items() if v is not None}
    return out


def _distributions(acc: pd.DataFrame) -> list[str]:
    """The distributions of accuracy.csv, DISTRIBUTIONS first in their order, then any other by name."""
    present = set(acc["distribution"])
    return [d for d in DISTRIBUTIONS if d in present] + sorted(present - set(DISTRIBUTIONS))


def _latest(acc: pd.DataFrame) -> dict:
    """accuracy.csv's last row per (method, distribution, K)."""
    return {(r["method"], r["distribution"], int(r["K"])): r for _, r in acc.dropna(subset=["K"]).iterrows()}


def accuracy_tables(acc: pd.DataFrame) -> list[dict]:
    """One table per distribution: a row per method, per K its relative Frobenius, median elementwise and
    componentwise errors and its relative Frobenius error over SGEMM's; a claims table (each fp32-labelled method's
    verdict against SGEMM per metric, over the Ks); and a sentence per TCEC method (the stage's method on each
    backend, no variant) against SGEMM."""
    last = _latest(acc)
    tables = []
    for dist in _distributions(acc):
        at = acc[acc["distribution"] == dist]
        ks = [int(k) for k in sorted(set(at["K"].dropna()))]
        methods = sorted({(r["stage"], r["backend"], r["method"], r["precision"]) for _, r in at.iterrows()},
                         key=lambda m: _method_order(*m[:3]))
        rows, claims, sentences = [], [], []
        for stage, backend, m, precision in methods:
            cells = []
            for k in ks:
                r, base = last.get((m, dist, k)), last.get((SGEMM, dist, k))
                ratio = error_ratio(r, base)
                cells += [_err_cell(r, metric) for metric, _ in METRICS]
                cells.append({"text": "" if ratio is None or m == SGEMM else times(ratio),
                              "title": f"{m}'s relative Frobenius error / SGEMM's, {dist} K={k}"
                                       + (f": {verdict(ratio)}" if ratio is not None else ""),
                              "bad": ratio is not None and verdict(ratio) == "loses"})
            rows.append({"method": m, "precision": precision, "cells": cells})
            if m == SGEMM or not fp32_labelled(precision):
                continue
            verdicts = _verdicts(m, dist, ks, last)
            if not any(verdicts.values()):
                continue
            raised = [k for k in ks if (r := last.get((m, dist, k))) is not None and r["error"]]
            claims.append({"method": m, "precision": precision, "verdicts": verdicts, "cells": [
                {"text": claim_text(verdicts[metric]) if verdicts[metric] else "",
                 "title": "; ".join(f"K={k}: {times(v)} ({verdict(v)})" for k, v in verdicts[metric].items()),
                 "bad": any(verdict(v) == "loses" for v in verdicts[metric].values())} for metric, _ in METRICS]})
            if stage == NUMBER and not variant_of(stage, m):
                said = sorted({k for v in verdicts.values() for k in v})
                sentences.append({"method": m, "ks": said, "clauses": claim_clauses(verdicts, raised),
                                  "text": claim_sentence(m, dist, said, verdicts, raised)})
        about = DISTRIBUTION[dist].about if dist in DISTRIBUTION else ""
        tables.append({"dist": dist, "label": DIST_LABELS.get(dist, dist), "about": about, "ks": ks, "rows": rows,
                       "claims": claims, "sentences": sentences, "sizes": sorted({int(v) for v in at["M"].dropna()})})
    return tables


def worse_rows(acc: pd.DataFrame) -> tuple[list[str], list[dict]]:
    """Each stage-15 variant's relative error as a multiple of the TCEC method's, per backend, distribution
    and K: how much the correction (nocorr), the rounding outside the tensor cores (markidis) and the split
    type (tf32) are worth."""
    s14 = acc[(acc["stage"] == NUMBER) & (acc["error"] == "")].dropna(subset=["K"])
    s14 = s14.assign(variant=[variant_of(NUMBER, m) for m in s14["method"]])
    preferred = ["markidis", "nocorr", "tf32"]
    others = sorted(set(s14["variant"]) - {""} - set(preferred))
    variants = [v for v in preferred if (s14["variant"] == v).any()] + others
    rows = []
    keys = sorted({(b, d, int(k)) for b, d, k in zip(s14["backend"], s14["distribution"], s14["K"])},
                  key=lambda x: _method_order(NUMBER, x[0], "") + (x[1], x[2]))
    for backend, dist, k in keys:
        at = s14[(s14["backend"] == backend) & (s14["distribution"] == dist) & (s14["K"] == k)]
        base = at.loc[at["variant"] == "", "relerr"]
        base = float(base.iloc[-1]) if len(base) else math.nan
        cells = []
        for v in variants:
            e = at.loc[at["variant"] == v, "relerr"]
            if not len(e):
                cells.append("")
            elif not math.isfinite(e.iloc[-1]):
                cells.append("NaN/inf")
            elif math.isfinite(base) and base > 0:
                cells.append(times(e.iloc[-1] / base))
            else:
                cells.append("")
        rows.append({"backend": BACKEND_NAMES.get(backend, backend), "distribution": dist, "K": k,
                     "base": fmt_num(base) if math.isfinite(base) else "NaN/inf", "cells": cells})
    return variants, rows


def pareto_points(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """fp32-input rows of stage 15 and the baselines at one square shape (4096^3 when stage 15 has it, else
    the largest square it has), with both TFLOP/s and relerr measured."""
    d = df[(df["dtype"] == "fp32") & df["stage"].isin({NUMBER, "baseline"}) & (df["M"] == df["N"])
           & (df["N"] == df["K"])]
    sides = set(d.loc[d["stage"] == NUMBER, "M"].dropna().astype(int))
    if not sides:
        return d.iloc[0:0], ""
    n = 4096 if 4096 in sides else max(sides)
    at = d[(d["M"] == n) & d["tflops"].gt(0) & d["relerr"].gt(0)]
    return at.drop_duplicates("impl", keep="last"), f"{n}x{n}x{n}"


def pareto_panels(points: pd.DataFrame, acc: pd.DataFrame | None) -> list[dict]:
    """Speed against error per distribution of accuracy.csv: `points` (pareto_points(), TFLOP/s from results.csv)
    with that distribution's errors at K = PARETO_K (the largest K below it where it has none; M = N as measured)
    as pareto() points, for every method in both files.  Each panel: dist, label, k, sizes, points (error =
    relerr, and median_error, componentwise_error, error_at for the hover), front (pareto_front() of the points
    over impl), missing (speed but no accuracy row at that K) and broken ({impl: "NaN/inf" or "raised"} there)."""
    if acc is None or acc.empty or points.empty:
        return []
    last = _latest(acc)
    panels = []
    for dist in _distributions(acc):
        ks = sorted({int(k) for k in acc.loc[acc["distribution"] == dist, "K"].dropna()})
        below = [k for k in ks if k <= PARETO_K]
        k = PARETO_K if PARETO_K in ks else (below[-1] if below else ks[-1])
        label = DIST_LABELS.get(dist, dist)
        rows, missing, broken = [], [], {}
        for _, p in points.iterrows():
            r = last.get((p["impl"], dist, k))
            if r is None:
                missing.append(p["impl"])
            else:         # a method that raised or returned NaN/inf is a point the figure names but cannot draw
                if r["error"] or r["nonfinite"] > 0:
                    broken[p["impl"]] = "raised" if r["error"] else "NaN/inf"
                rows.append(p.to_dict() | {
                    "error": math.nan if r["error"] else math.inf if r["nonfinite"] > 0 else r["relerr"],
                    "median_error": r["median_relerr"], "componentwise_error": r["componentwise"],
                    "error_at": f"{int(r['M'])}x{int(r['N'])}x{k}, {label} inputs (accuracy.csv)"})
        if len(broken) == len(rows):
            continue
        pts = pd.DataFrame(rows).assign(metric=f"relative Frobenius error, {label} inputs at K = {k}")
        front = pareto_front(pts, "tflops", "error")
        panels.append({"dist": dist, "label": label, "k": k, "points": pts, "missing": missing, "broken": broken,
                       "front": set(pts.loc[front, "impl"]),
                       "sizes": sorted({int(v) for v in acc.loc[acc["distribution"] == dist, "M"].dropna()})})
    return panels


def pareto_table(points: pd.DataFrame, panels: list[dict]) -> list[dict]:
    """A row per implementation of `points`, fastest first: its TFLOP/s and, per panel, its error (bold on that
    panel's Pareto front)."""
    rows = []
    for _, r in points.sort_values("tflops", ascending=False).iterrows():
        cells = []
        for p in panels:
            mine = p["points"][p["points"]["impl"] == r["impl"]]
            text = p["broken"].get(r["impl"]) or (fmt_num(float(mine["error"].iloc[-1])) if len(mine) else "")
            cells.append({"text": text, "front": r["impl"] in p["front"], "bad": r["impl"] in p["broken"]})
        rows.append({"impl": r["impl"], "backend": r["backend"], "precision": r["precision"],
                     "tflops": fmt_num(r["tflops"]), "cells": cells})
    return rows


def _best_tcec(f8: pd.DataFrame) -> pd.Series | None:
    """The TCEC method's fastest Figure 8 row, on the first backend of CUDA, Triton, Gluon that has one."""
    ok = f8[(f8["stage"] == NUMBER) & (f8["error"] == "") & f8["tflops"].gt(0)]
    ok = ok[[variant_of(NUMBER, m) == "" for m in ok["method"]]]
    if ok.empty:
        return None
    rank = {b: i for i, b in enumerate(BACKEND_NAMES)}
    ok = ok.assign(rank=[rank.get(b, len(rank)) for b in ok["backend"]])
    first = ok[ok["rank"] == ok["rank"].min()]
    return first.loc[first["tflops"].idxmax()]


FIG8_ERRORS = ("relerr", "median_relerr", "componentwise", "seed002_max_relerr")


def fig8_context(f8: pd.DataFrame, ceilings: dict | None) -> dict:
    """Figure 8's rows, and the paper's A100 figure beside ours, each against its own GPU's fp32 numbers."""
    rows = []
    for _, r in f8.sort_values(["K"]).iterrows():
        rows.append({"k": fmt_num(r["K"]), "method": r["method"], "launch": r["launch"], "tflops": fmt_num(r["tflops"]),
                     "x_sgemm": f"{r['x_sgemm']:.2f}x" if finite(r["x_sgemm"]) else "",
                     "errors": ["NaN/inf" if r["nonfinite"] > 0 else fmt_num(r[m]) for m in FIG8_ERRORS],
                     "error": r["error"]})
    measured = (ceilings or {}).get("measured") or {}
    fma = positive(measured.get("fp32_fma_tflops"))
    best = _best_tcec(f8)
    ours = None
    if best is not None:
        ours = {"gpu": best["gpu"], "method": best["method"], "k": fmt_num(best["K"]), "tflops": fmt_num(best["tflops"]),
                "x_peak": f"{best['tflops'] / fma:.2f}x of {fmt_num(fma, 4)} (measured FMA peak)" if fma else
                          "no measured FP32 FMA peak in ceilings.json",
                "x_sgemm": f"{best['x_sgemm']:.2f}x of {fmt_num(best['sgemm_tflops'])}" if finite(best["x_sgemm"]) else "",
                "launch": best["launch"]}
    paper = {"gpu": PAPER["gpu"], "tflops": fmt_num(PAPER["tcec_tflops"]),
             "x_peak": f"{PAPER['tcec_tflops'] / PAPER['fp32_peak_tflops']:.2f}x of {fmt_num(PAPER['fp32_peak_tflops'])} "
                       "(Table 1 peak)", "cite": PAPER["cite"],
             "smem": f"{fmt_num(PAPER['smem_bound_wmma_tflops'])} (WMMA API) and "
                     f"{fmt_num(PAPER['smem_bound_wmmae_tflops'])} (WMMAe) TFLOP/s"}
    return {"rows": rows, "ours": ours, "paper": paper}


def _provenance(t: pd.DataFrame | None) -> str:
    if t is None or t.empty:
        return ""
    r = t.iloc[-1]
    return f"{r['gpu']}, commit {r['commit']}, {r['date']}"


def ceiling_rows(df: pd.DataFrame, ceilings: dict | None) -> tuple[list[dict], list[str]]:
    """cuda:15_tcec at n^3 (results.csv) against its own ceiling and with its passes' share (ceilings.json's
    "tcec" probe): rows only where both exist and agree with each other (passes shorter than the call, the call
    no faster than 1.1x the ceiling); a note for what is left out."""
    probe = (ceilings or {}).get("tcec") or {}
    rows, notes = [], []
    for n in (4096, 8192):
        at = df[(df["impl"] == "cuda:15_tcec") & (df["M"] == n) & (df["N"] == n) & (df["K"] == n)
                & (df["dtype"] == "fp32") & df["passed"]]
        ceiling, passes = positive(probe.get(f"ceiling_{n}_tflops")), positive(probe.get(f"passes_{n}_ms"))
        if at.empty or not ceiling or not passes:
            continue
        r = at.iloc[-1]
        tflops, ms = float(r["tflops"]), float(r["ms"])
        if passes >= ms or tflops > 1.1 * ceiling:
            notes.append(f"at {n}^3 the stage's probe (passes {passes:.3f} ms, ceiling {ceiling:.1f} TFLOP/s) does "
                         f"not agree with the sweep's row ({ms:.3f} ms, {tflops:.1f} TFLOP/s), so it is not shown")
            continue
        rows.append({"n": n, "tflops": f"{tflops:.1f}", "clock": f"{float(r['sm_clock_mhz']):.0f}",
                     "sgemm": f"{float(r['pct_cublas']) / 100:.2f}x", "ceiling": f"{ceiling:.1f}",
                     "pct": f"{100 * tflops / ceiling:.0f}%", "ms": f"{ms:.3f}", "passes": f"{passes:.3f}",
                     "share": f"{100 * passes / ms:.0f}%"})
    return rows, notes


def section(df: pd.DataFrame, ceilings: dict | None, report_dir: Path) -> dict | None:
    """Stage 15's section: None when there is nothing of stage 15 to show (no accuracy.csv, no fig8.csv, no
    stage-15 rows in results.csv); otherwise everything that is there, and a note for what is not."""
    for name in PNGS:
        (report_dir / name).unlink(missing_ok=True)
    acc, notes = load_table(report_dir / "accuracy.csv", ACCURACY_COLUMNS, ACC_NUMERIC)
    f8, more = load_table(report_dir / "fig8.csv", FIG8_COLUMNS, FIG8_NUMERIC)
    notes += more
    points, shape = pareto_points(df)
    if acc is None and f8 is None and points.empty:
        return None
    if acc is None:
        notes.append("no accuracy.csv in this directory: python -m study.accuracy writes it on a GPU machine, "
                     "so there is no error-vs-K study here yet")
    if f8 is None:
        notes.append("no fig8.csv in this directory (python -m study.accuracy without --no-fig8 writes it)")
    if points.empty:
        notes.append("results.csv has no stage-15 rows with TFLOP/s and relerr, so there is no Pareto plot")
    panels = pareto_panels(points, acc)
    if not points.empty and not panels:      # no accuracy.csv row of these methods: the sweep's own randn relerr
        panels = [{"dist": "", "label": f"randn inputs at {shape} (results.csv)", "k": None, "sizes": [],
                   "points": interactive.error_points(points), "missing": [], "broken": {},
                   "front": set(points.loc[pareto_front(points), "impl"])}]
    refs = [(f"seed 002: TCEC on {PAPER['gpu']}, {PAPER['tcec_tflops']} TFLOP/s", PAPER["tcec_tflops"], "--"),
            (f"{PAPER['gpu']} FP32 peak {PAPER['fp32_peak_tflops']} (seed 002, Table 1)", PAPER["fp32_peak_tflops"], ":")]
    fma = positive(((ceilings or {}).get("measured") or {}).get("fp32_fma_tflops"))
    if fma:
        refs.append((f"this GPU's measured FP32 FMA peak {fma:.1f}", fma, "-."))
    acc_png = tcec_figures.accuracy_vs_k(acc, report_dir / PNGS[0], DISTRIBUTIONS, DIST_LABELS) if acc is not None else None
    pareto_png = tcec_figures.pareto(points, report_dir / PNGS[1]) if not points.empty else None
    fig8_png = tcec_figures.fig8(f8, report_dir / PNGS[2], refs) if f8 is not None else None
    variants, worse = worse_rows(acc) if acc is not None else ([], [])
    own_ceiling, more = ceiling_rows(df, ceilings)
    notes += more
    return {
        "ceiling": own_ceiling,
        "notes": notes, "definitions": [(label, METRIC_DEFINITIONS[m]) for m, label in METRICS],
        "metric_names": [label for _, label in METRICS], "beats": BEATS, "ties": TIES,
        "seed002_definition": SEED002_MAX_RELERR_DEFINITION,
        "acc_png": acc_png and acc_png.name, "acc": accuracy_tables(acc) if acc is not None and len(acc) else None,
        "acc_source": _provenance(acc), "worse_variants": variants, "worse": worse,
        "pareto_png": pareto_png and pareto_png.name, "pareto_shape": shape,
        "pareto_html": interactive.pareto_menu([(p["label"], p["points"]) for p in panels]) if panels else None,
        "pareto_panels": [{k: v for k, v in p.items() if k != "points"} for p in panels],
        "pareto": pareto_table(points, panels),
        "fig8_png": fig8_png and fig8_png.name, "fig8": fig8_context(f8, ceilings) if f8 is not None else None,
        "fig8_source": _provenance(f8),
    }


def findings(df: pd.DataFrame, report_dir: Path, n: int) -> list[tuple[str, str, str]]:
    """The stage's findings for the front page, as (topic, text, chart family): its fastest fp32-accurate form
    against SGEMM at n^3, and its accuracy against SGEMM per input distribution (accuracy.csv)."""
    out = []
    at = df[(df["M"] == n) & (df["N"] == n) & (df["K"] == n) & df["passed"] & (df["dtype"] == "fp32")]
    sgemm = at[at["impl"] == SGEMM]
    stage = at[at["stage"] == NUMBER]
    own = set(stage.loc[[not variant_of(NUMBER, i) for i in stage["impl"]], "precision"])   # the method's label
    mine = stage[stage["precision"].isin(own)]
    if len(sgemm) and len(mine):
        s, best = sgemm.iloc[-1], mine.loc[mine["tflops"].idxmax()]
        out.append(("TCEC: fp32 on fp16 tensor cores", (
            f"At {n}³ on randn inputs, {best['impl']} computes fp32 GEMMs at {compact(best)} TFLOP/s, "
            f"{best['tflops'] / s['tflops']:.2f}x cuBLAS SGEMM ({compact(s)}), at relerr {fmt_num(best['relerr'])} "
            f"against SGEMM's {fmt_num(s['relerr'])}."), "fp32"))
        grid = accuracy_grid(report_dir)
        if grid:
            counts = {v: sum(c["verdict"] == v for r in grid["rows"] for c in r["cells"]) for v in VERDICTS}
            out.append(("TCEC's accuracy against SGEMM", (
                f"Over {len(grid['rows'])} input distributions and {len(METRICS)} error metrics, {grid['method']}'s "
                f"error beats SGEMM's (below {BEATS}x) in {counts['beats']} of {sum(counts.values())} cells, ties in "
                f"{counts['ties']} and loses in {counts['loses']} (table below)."), ""))
    return out


def accuracy_grid(report_dir: Path) -> dict | None:
    """The stage's CUDA method against SGEMM as a grid: a row per input distribution, a cell per metric holding
    its verdict over the Ks measured (claim_text) and the worst verdict ("loses" over "ties" over "beats")."""
    acc, _ = load_table(Path(report_dir) / "accuracy.csv", ACCURACY_COLUMNS, ACC_NUMERIC)
    if acc is None or acc.empty or (method := _cuda_method(acc)) is None:
        return None
    rows = []
    for t in accuracy_tables(acc):
        claim = next((c for c in t["claims"] if c["method"] == method), None)
        if claim is None:
            continue
        cells = [{"text": claim_text(claim["verdicts"][m]) if claim["verdicts"][m] else "",
                  "verdict": max((verdict(v) for v in claim["verdicts"][m].values()), key=VERDICTS.index,
                                 default="")} for m, _ in METRICS]
        rows.append({"label": t["label"], "ks": _ks_text(t["ks"]), "cells": cells})
    return {"method": method, "metrics": [METRIC_WORDS[m] for m, _ in METRICS], "rows": rows} if rows else None


def _cuda_method(acc: pd.DataFrame) -> str | None:
    """The stage's own method on CUDA (no variant) in accuracy.csv, if it is there."""
    mine = acc[(acc["stage"] == NUMBER) & (acc["backend"] == "cuda")]
    return next((m for m in mine["method"] if not variant_of(NUMBER, m)), None)
