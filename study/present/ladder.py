"""The study's ladders at the reference size: fp32 (the SIMT stages, then fp32 on tensor cores apart), fp16
tensor cores, and fp8 e4m3, whose one stage's forms (a scaling mode each) are its steps, each against cuBLASLt's
fp8 GEMM of the same scaling and accumulation.  Per ladder, a headline sentence, a table (stage | what it adds |
CUDA | Triton | Gluon | % of cuBLAS, each value with its spread) and a log-scale chart whose steps are in stage
order, for the landing page (interactive) and the README (a static PNG of the stage ladders).

A stage's step is its registered main form, `<backend>:<stage key>` (no variant), so stage 14's intermediate
forms never follow its final one.  Rows of another precision than the ladder's (split fp32) are kept apart: their own
table rows and their own markers, off the line.  Every number comes from results.csv (study.present.spread).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from matplotlib.figure import Figure

from study.core.stages import STAGES
from study.present import figures, interactive, spread
from study.present.formatting import fmt_num

BACKENDS = {"cuda": "CUDA", "triton": "Triton", "gluon": "Gluon"}
SIZE = 4096                  # the study's reference size, where measured


@dataclass(frozen=True)
class Form:
    """One step of a ladder of one stage's forms: the implementations `<backend>:<stage key><suffix>`, measured
    against their own cuBLAS entry (the one of the same precision label)."""
    suffix: str
    precision: str
    baseline: str
    words: str


@dataclass(frozen=True)
class Ladder:
    key: str
    short: str                       # the headline's and the static figure's name of it
    title: str
    dtype: str
    precision: str
    apart: tuple[str, ...]           # stages shown apart, at their own precision (fp32 on tensor cores)
    baseline: str                    # the cuBLAS routine of the % column, in the ladder's dtype
    baseline_name: str
    # A ladder of one stage's forms rather than of stages: that stage's number, and its forms in order, each
    # against its own baseline (`baseline` is then the first form's).
    stage: str = ""
    forms: tuple[Form, ...] = ()


# A ladder's line holds every stage whose main form measured its dtype at its precision; the split stages (fp32 on
# tensor cores, Stage.fp32_products > 1) are kept apart on the fp32 ladder.
_SPLIT = tuple(s.number for s in STAGES if s.fp32_products > 1)
# fp8 e4m3 (one stage, its scaling modes): each form against cuBLASLt's fp8 GEMM of the same scaling and
# accumulation (torch._scaled_mm; the registry's fp8 baselines), at the precision its label names.
_FP8 = next((s for s in STAGES if s.slug == "fp8"), None)
FP8_FORMS = (Form("", "fp8e4m3-tensor/fp32acc", "cublas:fp8", "per-tensor scales"),
             Form("-row", "fp8e4m3-row/fp32acc", "cublas:fp8-row", "row-wise scales"),
             Form("-block", "fp8e4m3-block/fp32acc", "cublas:fp8-block", "1x128 / 128x128 block scales"),
             Form("-tcacc", "fp8e4m3-tensor/tcacc", "cublas:fp8-fastacc", "per-tensor scales, no promotion"))
LADDERS = (
    Ladder("fp32", "fp32", "fp32 ladder", "fp32", "fp32", _SPLIT, "cublas", "cuBLAS SGEMM"),
    Ladder("tensor", "fp16 tensor cores", "Tensor-core ladder (fp16, fp32 accumulation)", "fp16", "fp16/fp32acc", (),
           "cublas", "cuBLAS fp16"),
    *((Ladder("fp8", "fp8 e4m3 tensor cores", "fp8 e4m3 (bf16 output): each scaling mode against cuBLASLt's",
              "fp8e4m3", FP8_FORMS[0].precision, (), FP8_FORMS[0].baseline, "cuBLASLt fp8 of the same scaling",
              _FP8.number, FP8_FORMS),) if _FP8 else ()),
)
STAGE = {s.number: s for s in STAGES}


def reference_size(df: pd.DataFrame) -> int | None:
    """SIZE where the rows hold it, else the largest square they hold."""
    sq = df[(df["M"] == df["N"]) & (df["N"] == df["K"]) & df["passed"] & (df["tflops"] > 0)]
    sides = set(sq["M"].astype(int))
    return SIZE if SIZE in sides else (max(sides) if sides else None)


def _at(df: pd.DataFrame, n: int) -> pd.DataFrame:
    return df[(df["M"] == n) & (df["N"] == n) & (df["K"] == n) & df["passed"] & (df["tflops"] > 0)]


def main_row(at: pd.DataFrame, stage: str, backend: str, dtype: str) -> pd.Series | None:
    """The registered main form of a stage on one backend (impl `<backend>:<stage key>`), in `dtype`."""
    rows = at[(at["impl"] == f"{backend}:{STAGE[stage].key}") & (at["dtype"] == dtype)]
    return rows.iloc[-1] if len(rows) else None


def _pct(r: pd.Series, base: pd.Series | None, baseline: str) -> float | None:
    if r.get("baseline_impl") == baseline and pd.notna(r.get("pct_cublas")):
        return float(r["pct_cublas"])
    return 100.0 * r["tflops"] / base["tflops"] if base is not None else None


def compact(r: pd.Series) -> str:
    """"45.6 ±0.3%" (or "1,488 −7.8/+0.3%", spread.spread_text): a table cell's value and its spread (the clock
    goes in the cell's title)."""
    return fmt_num(float(r["tflops"])) + spread.spread_text(r)


def form_steps(df: pd.DataFrame, ladder: Ladder, n: int) -> list[dict]:
    """A forms ladder's steps: per form, its row per backend at its precision, and its own baseline's row."""
    at = _at(df, n)
    key, out = STAGE[ladder.stage].key, []
    for f in ladder.forms:
        rows = {}
        for b in BACKENDS:
            r = at[(at["impl"] == f"{b}:{key}{f.suffix}") & (at["dtype"] == ladder.dtype)
                   & (at["precision"] == f.precision)]
            if len(r):
                rows[b] = r.iloc[-1]
        base = at[(at["impl"] == f.baseline) & (at["dtype"] == ladder.dtype)]
        if rows or len(base):
            out.append({"stage": ladder.stage, "apart": False, "rows": rows, "precision": f.precision, "form": f,
                        "base": base.iloc[-1] if len(base) else None})
    return out


def steps(df: pd.DataFrame, ladder: Ladder, n: int) -> list[dict]:
    """One step per stage of the ladder (its line, then the stages apart): the main form's row per backend; for a
    ladder of one stage's forms, one step per form (form_steps)."""
    if ladder.forms:
        return form_steps(df, ladder, n)
    at = _at(df, n)
    out = []
    on_line = [s.number for s in STAGES if s.number not in _SPLIT and s.on_ladders]
    for stage in on_line + list(ladder.apart):
        apart = stage in ladder.apart
        rows = {b: main_row(at, stage, b, "fp32" if apart else ladder.dtype) for b in BACKENDS}
        rows = {b: r for b, r in rows.items() if r is not None and (apart or r["precision"] == ladder.precision)}
        if rows:
            out.append({"stage": stage, "apart": stage in ladder.apart, "rows": rows,
                        "precision": next(iter(rows.values()))["precision"]})
    return out


def baseline_row(df: pd.DataFrame, ladder: Ladder, n: int) -> pd.Series | None:
    at = _at(df, n)
    rows = at[(at["impl"] == ladder.baseline) & (at["dtype"] == ladder.dtype)]
    return rows.iloc[-1] if len(rows) else None


def _best(rows: dict) -> tuple[str, pd.Series]:
    return max(rows.items(), key=lambda kv: kv[1]["tflops"])


def _tied_with(rows: dict, best: str) -> list[str]:
    return [BACKENDS[b] for b, r in rows.items() if b != best and spread.tie(r, rows[best])]


def form_headline(ladder: Ladder, line: list[dict]) -> str:
    """A forms ladder's sentence: per form, its fastest backend and that one's share of the form's own baseline,
    the baseline and the precision named."""
    parts = []
    for s in line:
        f, base = s["form"], s["base"]
        if not s["rows"]:
            continue
        b, r = _best(s["rows"])
        tied = _tied_with(s["rows"], b)
        pct = _pct(r, base, f.baseline)
        parts.append(f"{f.words} ({f.precision}) {fmt_num(r['tflops'])} TFLOP/s ({BACKENDS[b]}"
                     + (f", tied with {' and '.join(tied)}" if tied else "")
                     + (f"; {pct:.0f}% of {f.baseline}" + (f" at {fmt_num(base['tflops'])}" if base is not None
                                                          else "") if pct is not None else "") + ")")
    return f"{ladder.short}, stage {ladder.stage}: " + "; ".join(parts) + "." if parts else ""


def headline(ladder: Ladder, line: list[dict], base: pd.Series | None, sgemm: pd.Series | None) -> str:
    """One sentence from the data: the ladder's first and best steps, the best's share of cuBLAS, and (fp32) how
    far the stages apart go beyond SGEMM at what error."""
    on = [s for s in line if not s["apart"]]
    if not on:
        return ""
    first_b, first = _best(on[0]["rows"]) if "cuda" not in on[0]["rows"] else ("cuda", on[0]["rows"]["cuda"])
    top = max(on, key=lambda s: _best(s["rows"])[1]["tflops"])
    best_b, best = _best(top["rows"])
    tied = _tied_with(top["rows"], best_b)
    pct = _pct(best, base, ladder.baseline)
    text = (f"{ladder.short}: from {fmt_num(first['tflops'])} TFLOP/s (stage {on[0]['stage']}, "
            f"{BACKENDS[first_b]}) to {fmt_num(best['tflops'])} (stage {top['stage']}, {BACKENDS[best_b]}"
            + (f", tied with {' and '.join(tied)}" if tied else "")
            + (f"; {pct:.0f}% of {ladder.baseline_name}" if pct is not None else "") + ")")
    for s in line:
        if s["apart"] and sgemm is not None:
            b, r = _best(s["rows"])
            err = ("at lower error than SGEMM" if r["relerr"] < sgemm["relerr"] else "at higher error than SGEMM")
            text += (f"; on tensor cores, {STAGE[s['stage']].title.split(':')[0]} reaches "
                     f"{r['tflops'] / sgemm['tflops']:.1f}x SGEMM {err} ({fmt_num(r['relerr'])} against "
                     f"{fmt_num(sgemm['relerr'])})")
    return text + "."


def table(df: pd.DataFrame, max_clock=None, charts: bool = True) -> list[dict]:
    """Each ladder as the landing page shows it: title, headline, baseline and a row per step."""
    n = reference_size(df)
    if n is None:
        return []
    out = []
    for ladder in LADDERS:
        line = steps(df, ladder, n)
        if not line:
            continue
        base = baseline_row(df, ladder, n)
        sgemm = baseline_row(df, LADDERS[0], n)
        rows = []
        for s in line:
            cells = {}
            for b in BACKENDS:
                r = s["rows"].get(b)
                cells[b] = None if r is None else {
                    "text": compact(r), "title": f"{r['impl']}: {spread.fmt_measure(r, max_clock, 'TFLOP/s')}",
                    "limited": spread.power_limited(r, max_clock)}
            form = s.get("form")
            against, routine = ((s["base"], form.baseline) if form else
                                (base if not s["apart"] else sgemm, ladder.baseline))
            pcts = [(b, _pct(s["rows"][b], against, routine) if b in s["rows"] else None) for b in BACKENDS]
            adds = (f"{form.words}: {form.precision}, against {form.baseline}" if form else STAGE[s["stage"]].title)
            rows.append({"stage": s["stage"], "rows": s["rows"], "adds": adds, "about": STAGE[s["stage"]].summary,
                         "apart": s["apart"], "precision": s["precision"], "cells": cells,
                         "pct": " / ".join("–" if p is None else f"{p:.0f}" for _, p in pcts),
                         "pct_of": " / ".join(BACKENDS.values()) + (f" of {routine}" if form else "")})
        bases = [s["base"] for s in line if s.get("base") is not None]
        out.append({"key": ladder.key, "title": ladder.title, "size": n, "rows": rows,
                    "headline": form_headline(ladder, line) if ladder.forms else headline(ladder, line, base, sgemm),
                    "baseline": ("; ".join(f"{r['impl']} {spread.fmt_measure(r, max_clock, 'TFLOP/s')}"
                                           for r in bases) or ladder.baseline_name) if ladder.forms else
                                (f"{ladder.baseline_name} {spread.fmt_measure(base, max_clock, 'TFLOP/s')}"
                                 if base is not None else ladder.baseline_name),
                    "baseline_name": ladder.baseline_name,
                    "chart": chart_html(df, ladder, n, max_clock) if charts else None})
    return out


# --- the charts ----------------------------------------------------------------------------------------------

def _label(stage: str, apart: bool, precision: str, slug: bool = True) -> str:
    return stage + (f" {STAGE[stage].slug}" if slug else "") + (f" ({precision})" if apart else "")


def _step_label(s: dict, slug: bool = True) -> str:
    """A step's x label: its stage (_label), or for a form its stage and its precision label past the dtype
    ("tensor/fp32acc")."""
    if s.get("form"):
        return f"{s['stage']} {s['precision'].split('-', 1)[-1]}"
    return _label(s["stage"], s["apart"], s["precision"], slug=slug)


def chart(df: pd.DataFrame, ladder: Ladder, n: int, max_clock=None) -> go.Figure | None:
    """TFLOP/s on a log axis, a line per backend through the ladder's steps in stage order, p20-p80 whiskers,
    the stages apart as stars off the line, and the baseline as a horizontal line."""
    line = steps(df, ladder, n)
    if not line:
        return None
    fig = go.Figure()
    labels = [_step_label(s, slug=False) for s in line]
    lows, highs = [], []
    for b, name in BACKENDS.items():
        for apart in (False, True):
            pts = [(lab, s["rows"][b]) for lab, s in zip(labels, line) if b in s["rows"] and s["apart"] == apart]
            if not pts:
                continue
            y = np.array([float(r["tflops"]) for _, r in pts])
            ranges = [(min(lo, v), max(hi, v)) for (lo, hi), v in
                      zip([spread.throughput_range(r) or (v, v) for (_, r), v in zip(pts, y)], y)]
            lows += [lo for lo, _ in ranges]
            highs += [hi for _, hi in ranges]
            fig.add_trace(go.Scatter(
                x=[lab for lab, _ in pts], y=y, mode="markers" if apart else "lines+markers",
                name=name + (" (other precision)" if apart else ""), legendgroup=b, showlegend=not apart,
                marker=dict(color=interactive.backend_colour(b), size=11 if apart else 7,
                            symbol="star" if apart else "circle"),
                line=dict(color=interactive.backend_colour(b), width=1.6),
                error_y=dict(type="data", symmetric=False, array=[hi - v for (_, hi), v in zip(ranges, y)],
                             arrayminus=[v - lo for (lo, _), v in zip(ranges, y)], thickness=1, width=3),
                customdata=interactive.customdata_of(pd.DataFrame([{**r, "max_clock": max_clock} for _, r in pts])),
                hovertemplate=interactive.hovertemplate()))
    base = None if ladder.forms else baseline_row(df, ladder, n)
    bases = [(lab, s["base"]) for lab, s in zip(labels, line) if s.get("base") is not None]
    if bases:           # a forms ladder: each form's own baseline, a marker at its form
        y = [float(r["tflops"]) for _, r in bases]
        lows += y
        highs += y
        fig.add_trace(go.Scatter(
            x=[lab for lab, _ in bases], y=y, mode="markers", name="cuBLASLt, the form's own mode",
            marker=dict(color=interactive.backend_colour("cublas"), size=10, symbol="star"),
            customdata=interactive.customdata_of(pd.DataFrame([{**r, "max_clock": max_clock} for _, r in bases])),
            hovertemplate=interactive.hovertemplate()))
    if base is not None:
        highs.append(float(base["tflops"]))
        fig.add_hline(y=float(base["tflops"]), line=dict(color=interactive.backend_colour("cublas"), dash="dash",
                                                         width=1.2),
                      annotation_text=f"{ladder.baseline_name} {fmt_num(float(base['tflops']))}",
                      annotation_position="bottom right", annotation_font_size=11)
    fig.update_xaxes(categoryorder="array", categoryarray=labels,
                     title_text="stage and form (scaling/accumulation)" if bases else "stage")
    lo, hi = min(lows) / 1.4, max(highs) * 1.4
    ticks = []
    for mantissas in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7)):     # a narrow range (a forms ladder) takes finer ticks
        ticks = [m * 10.0 ** e for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1)
                 for m in mantissas if lo <= m * 10.0 ** e <= hi]
        if len(ticks) >= 3:
            break
    fig.update_yaxes(type="log", title_text=f"TFLOP/s at {n}³ (log)", range=[np.log10(lo), np.log10(hi)],
                     tickvals=ticks, ticktext=[fmt_num(t) for t in ticks])
    if bases:           # a forms ladder's lines cross the whole plot: its legend goes below the axis title, clear
        # of the points and of the mode bar above
        legend = dict(orientation="h", x=0, xanchor="left", y=-0.42, yanchor="top")
        below = 85
    else:
        legend = dict(x=0.99, xanchor="right", y=0.02, yanchor="bottom", bgcolor="rgba(255,255,255,0.7)")
        below = 50
    fig.update_layout(template="plotly_white", autosize=True, height=max(230, 80 + 25 * len(line)) + below - 50,
                      margin=dict(l=60, r=10, t=10, b=below), font=dict(size=11), legend=legend)
    return fig


def chart_html(df: pd.DataFrame, ladder: Ladder, n: int, max_clock=None) -> str | None:
    return interactive.fragment(chart(df, ladder, n, max_clock), interactive.div_id("ladder-step", ladder.key))


def png(df: pd.DataFrame, path: Path) -> Path | None:
    """Both ladders as one static figure (the README's), log TFLOP/s by stage, a line per backend, the stages
    apart as stars, the baselines dashed."""
    n = reference_size(df)
    if n is None:
        return None
    ladders = [x for x in LADDERS if not x.forms]        # the stage ladders; a stage's forms are on its page
    fig = Figure(figsize=(11, 3.8))
    axes = fig.subplots(1, len(ladders), gridspec_kw={"width_ratios": [len(steps(df, x, n)) + 1 for x in ladders]})
    for ax, ladder in zip(np.atleast_1d(axes), ladders):
        line = steps(df, ladder, n)
        labels = [_label(s["stage"], s["apart"], s["precision"]).replace(" (", "\n(") for s in line]
        for b, name in BACKENDS.items():
            colour = interactive.backend_colour(b)
            for apart in (False, True):
                pts = [(i, float(s["rows"][b]["tflops"])) for i, s in enumerate(line)
                       if b in s["rows"] and s["apart"] == apart]
                if pts:
                    xs, ys = zip(*pts)
                    ax.plot(xs, ys, marker="*" if apart else "o", ms=11 if apart else 5,
                            ls="none" if apart else "-", color=colour, label=None if apart else name)
        base = baseline_row(df, ladder, n)
        if base is not None:
            ax.axhline(float(base["tflops"]), color="#555555", ls="--", lw=1)
            ax.annotate(f"{ladder.baseline_name} {fmt_num(float(base['tflops']))}",
                        (sum(not s["apart"] for s in line) - 1, float(base["tflops"])), xytext=(0, 3), textcoords="offset points",
                        fontsize=8, color="#555555", ha="right")
        ax.set_yscale("log")
        ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", fontsize=8)
        ax.set_title(f"{ladder.short} at {n}³", fontsize=10)
        ax.set_ylabel("TFLOP/s (log)")
        ax.grid(True, which="both", alpha=0.3)
        figures.plain_log_ticks(ax)
    first = np.atleast_1d(axes)[0]
    first.plot([], [], marker="*", ms=11, ls="none", color="#777777", label="fp32 on tensor cores (apart)")
    first.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    return Path(path)
