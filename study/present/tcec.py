"""Stage 14's section of the report (seed 002's TCEC): its error against K per input distribution (accuracy.csv:
relative Frobenius, median elementwise and componentwise errors, and each method's accuracy as a multiple of
cuBLAS SGEMM's on the same inputs, said in a sentence per distribution), each variant's error as a multiple of
the TCEC method's, speed against accuracy (results.csv) with the Pareto front, and seed 002's
Figure 8 on this GPU (fig8.csv) beside the paper's A100 figure.  python -m study.accuracy writes the two CSVs;
tcec_figures.py draws the figures.

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
from study.measure.accuracy import (ACCURACY_COLUMNS, DISTRIBUTIONS, FIG8_COLUMNS, METRIC_DEFINITIONS,
                                    SEED002_MAX_RELERR_DEFINITION)
from study.measure.frame import load_table, positive, variant_of
from study.present import interactive, tcec_figures
from study.present.figures import BACKEND_NAMES
from study.present.formatting import finite, fmt_num
from study.present.tcec_figures import pareto_front

NUMBER = stages.stage("tcec").number
ID, NAV, TEMPLATE = "tcec", "Stage 14: TCEC", "tcec.html.j2"
FILES = ("accuracy.csv", "fig8.csv")
ACC_NUMERIC = ("M", "N", "K", "relerr", "median_relerr", "componentwise", "nonfinite")
FIG8_NUMERIC = ("batch", "M", "N", "K", "ms", "reps", "tflops", "sgemm_tflops", "x_sgemm", "relerr", "median_relerr",
                "componentwise", "seed002_max_relerr", "nonfinite", "sm_clock_mhz")
# accuracy.csv's errors, in the order the tables show them, with their column headings.
METRICS = (("relerr", "Frobenius"), ("median_relerr", "median"), ("componentwise", "componentwise"))
SGEMM = "cublas"   # cuBLAS SGEMM (fp32, TF32 off): what "as accurate as SGEMM" is measured against
DIST_LABELS = {"randn": "randn", "uniform": "uniform [0, 1)", "wide": "wide-exponent"}
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
    """Stage 14 first (CUDA, Triton, Gluon; the method before its variants), then the baselines by name."""
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
    """A ratio as "7.5x", "0.46x" or "1,400x"."""
    return f"{ratio:.{digits}g}x" if ratio < 1000 else f"{ratio:,.0f}x"


def sgemm_ratio(r, sgemm, metric: str = "relerr") -> float | None:
    """SGEMM's error over the method's on the same inputs (above 1: more accurate than SGEMM); 0 when the
    method returned NaN/inf; None when either did not run or SGEMM has no finite, nonzero error."""
    if r is None or sgemm is None or r["error"] or sgemm["error"] or sgemm["nonfinite"] > 0:
        return None
    if r["nonfinite"] > 0:
        return 0.0
    mine, base = r[metric], sgemm[metric]
    if not (finite(mine) and finite(base)) or base <= 0:
        return None
    return math.inf if mine == 0 else base / mine


def _ks_text(ks) -> str:
    return f"K = {', '.join(str(k) for k in ks)}"


def _range(ratios) -> str:
    lo, hi = times(min(ratios), 2), times(max(ratios), 2)
    return lo if lo == hi else f"{lo[:-1]}\u2013{hi}"


def accuracy_sentence(method: str, dist: str, ratios: dict, median_ratios: dict, raised=()) -> str:
    """One sentence on a method against SGEMM on one distribution, from {K: SGEMM error / method error} of the
    relative Frobenius error (0: the method returned NaN/inf) and of the median elementwise error; direction
    said plainly ("less accurate than SGEMM at every K" when every ratio is below 1)."""
    label = DIST_LABELS.get(dist, dist)
    ok = {k: v for k, v in ratios.items() if v > 0}
    broke = sorted(k for k, v in ratios.items() if v == 0)
    if not ok:
        said = f"On {label} inputs, {method} returned NaN/inf at every K measured ({', '.join(map(str, broke))})"
    else:
        better = sorted(k for k, v in ok.items() if v > 1)
        worse = sorted(k for k, v in ok.items() if v < 1)
        every = not broke and not raised         # "at every K" only when every K gave a finite error
        if better and worse:
            direction = f"more accurate than SGEMM at {_ks_text(better)}, less accurate at {_ks_text(worse)}"
        elif better or worse:
            word, ks = ("more", better) if better else ("less", worse)
            at = "every K" if every and len(ks) == len(ok) else _ks_text(ks)
            direction = f"{word} accurate than SGEMM at {at}"
        else:
            direction = "as accurate as SGEMM"
        said = (f"On {label} inputs, {method} is {_range(ok.values())} as accurate as cuBLAS SGEMM by relative "
                f"Frobenius error (SGEMM's error / its error, {_ks_text(sorted(ok))}): {direction}")
        med = [v for k, v in median_ratios.items() if k in ok and v and math.isfinite(v)]
        if med:
            said += f"; by median elementwise error, {_range(med)}"
        if broke:
            said += f"; NaN/inf at {_ks_text(broke)}"
    if raised:
        said += f"; it raised at {_ks_text(sorted(raised))}"
    return said + "."


def accuracy_tables(acc: pd.DataFrame) -> list[dict]:
    """One table per distribution: a row per method, per K its relative Frobenius, median elementwise and
    componentwise errors and its accuracy as a multiple of SGEMM's (SGEMM's relative Frobenius error / its own);
    and a sentence per TCEC method (the stage's method on each backend, no variant) against SGEMM."""
    dists = [d for d in DISTRIBUTIONS if (acc["distribution"] == d).any()] + \
        sorted(set(acc["distribution"]) - set(DISTRIBUTIONS))
    last = {(r["method"], r["distribution"], int(r["K"])): r for _, r in acc.dropna(subset=["K"]).iterrows()}
    tables = []
    for dist in dists:
        at = acc[acc["distribution"] == dist]
        ks = [int(k) for k in sorted(set(at["K"].dropna()))]
        methods = sorted({(r["stage"], r["backend"], r["method"], r["precision"]) for _, r in at.iterrows()},
                         key=lambda m: _method_order(*m[:3]))
        rows, sentences = [], []
        for stage, backend, m, precision in methods:
            cells = []
            for k in ks:
                r, base = last.get((m, dist, k)), last.get((SGEMM, dist, k))
                ratio = sgemm_ratio(r, base)
                cells += [_err_cell(r, metric) for metric, _ in METRICS]
                cells.append({"text": "" if ratio is None or m == SGEMM else "NaN/inf" if ratio == 0 else times(ratio),
                              "title": f"SGEMM's relative Frobenius error / {m}'s, {dist} K={k}",
                              "bad": ratio is not None and ratio < 1})
            rows.append({"method": m, "precision": precision, "cells": cells})
            if stage == NUMBER and not variant_of(stage, m):
                got = {k: last.get((m, dist, k)) for k in ks}
                ratios = {k: sgemm_ratio(r, last.get((SGEMM, dist, k))) for k, r in got.items()}
                ratios = {k: v for k, v in ratios.items() if v is not None}
                medians = {k: sgemm_ratio(got[k], last.get((SGEMM, dist, k)), "median_relerr") for k in ratios}
                raised = [k for k, r in got.items() if r is not None and r["error"]]
                if ratios:
                    sentences.append({"method": m, "text": accuracy_sentence(m, dist, ratios, medians, raised)})
        tables.append({"dist": dist, "label": DIST_LABELS.get(dist, dist), "ks": ks, "rows": rows,
                       "sentences": sentences, "sizes": sorted({int(v) for v in at["M"].dropna()})})
    return tables


def worse_rows(acc: pd.DataFrame) -> tuple[list[str], list[dict]]:
    """Each stage-14 variant's relative error as a multiple of the TCEC method's, per backend, distribution
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
    """fp32-input rows of stage 14 and the baselines at one square shape (4096^3 when stage 14 has it, else
    the largest square it has), with both TFLOP/s and relerr measured."""
    d = df[(df["dtype"] == "fp32") & df["stage"].isin({NUMBER, "baseline"}) & (df["M"] == df["N"])
           & (df["N"] == df["K"])]
    sides = set(d.loc[d["stage"] == NUMBER, "M"].dropna().astype(int))
    if not sides:
        return d.iloc[0:0], ""
    n = 4096 if 4096 in sides else max(sides)
    at = d[(d["M"] == n) & d["tflops"].gt(0) & d["relerr"].gt(0)]
    return at.drop_duplicates("impl", keep="last"), f"{n}x{n}x{n}"


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


def section(df: pd.DataFrame, ceilings: dict | None, report_dir: Path) -> dict | None:
    """Stage 14's section: None when there is nothing of stage 14 to show (no accuracy.csv, no fig8.csv, no
    stage-14 rows in results.csv); otherwise everything that is there, and a note for what is not."""
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
        notes.append("results.csv has no stage-14 rows with TFLOP/s and relerr, so there is no Pareto plot")
    front = pareto_front(points) if not points.empty else pd.Series(dtype=bool)
    refs = [(f"seed 002: TCEC on {PAPER['gpu']}, {PAPER['tcec_tflops']} TFLOP/s", PAPER["tcec_tflops"], "--"),
            (f"{PAPER['gpu']} FP32 peak {PAPER['fp32_peak_tflops']} (seed 002, Table 1)", PAPER["fp32_peak_tflops"], ":")]
    fma = positive(((ceilings or {}).get("measured") or {}).get("fp32_fma_tflops"))
    if fma:
        refs.append((f"this GPU's measured FP32 FMA peak {fma:.1f}", fma, "-."))
    acc_png = tcec_figures.accuracy_vs_k(acc, report_dir / PNGS[0], DISTRIBUTIONS, DIST_LABELS) if acc is not None else None
    pareto_png = tcec_figures.pareto(points, report_dir / PNGS[1]) if not points.empty else None
    fig8_png = tcec_figures.fig8(f8, report_dir / PNGS[2], refs) if f8 is not None else None
    variants, worse = worse_rows(acc) if acc is not None else ([], [])
    return {
        "notes": notes, "definitions": [(label, METRIC_DEFINITIONS[m]) for m, label in METRICS],
        "seed002_definition": SEED002_MAX_RELERR_DEFINITION,
        "acc_png": acc_png and acc_png.name, "acc": accuracy_tables(acc) if acc is not None and len(acc) else None,
        "acc_source": _provenance(acc), "worse_variants": variants, "worse": worse,
        "pareto_png": pareto_png and pareto_png.name, "pareto_shape": shape,
        "pareto_html": interactive.pareto(interactive.error_points(points)) if not points.empty else None,
        "pareto": [{"impl": r["impl"], "backend": r["backend"], "precision": r["precision"],
                    "tflops": fmt_num(r["tflops"]), "relerr": fmt_num(r["relerr"]), "front": bool(front[i])}
                   for i, r in points.sort_values("tflops", ascending=False).iterrows()],
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
            f"At {n}³ on randn inputs, {best['impl']} ({best['precision']}) computes fp32-input GEMMs at "
            f"{fmt_num(best['tflops'])} TFLOP/s, {best['tflops'] / s['tflops']:.2f}x cuBLAS SGEMM "
            f"({fmt_num(s['tflops'])}), at relerr {fmt_num(best['relerr'])} against SGEMM's {fmt_num(s['relerr'])}."),
            "fp32"))
        acc, _ = load_table(report_dir / "accuracy.csv", ACCURACY_COLUMNS, ACC_NUMERIC)
        if acc is not None and len(acc):
            said = [s["text"] for t in accuracy_tables(acc) for s in t["sentences"] if s["method"] == best["impl"]]
            if said:
                out.append(("TCEC's accuracy, per input distribution", " ".join(said), ""))
    return out
