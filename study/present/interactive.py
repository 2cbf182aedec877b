"""The report's interactive figures: plotly charts, returned as HTML fragments for the report's pages.

What each figure shows (every one zooms, toggles a trace on a legend click and isolates it on a double click):

* roofline(df, ceilings, family, traffic): TFLOP/s against arithmetic intensity, log-log, for one family of rows
  (FAMILIES, by the rows' precision) under only that family's ceilings: measured (solid) and datasheet (dashed)
  peaks from ceilings.json, the DRAM slope, and for the family that holds a split stage (Stage.split_peaks) that
  stage's share of each peak it splits onto.  Intensity is FLOPs per DRAM byte ncu counted for the call where
  `traffic` has it, with a menu for FLOPs per byte of compulsory traffic; another menu picks one stage.
* ladder(df, family, sizes): TFLOP/s by stage and variant at the largest square sizes, a bar per backend, with
  the cuBLAS routine the rows are measured against (their baseline_impl) as a named horizontal line.
* size_sweep(df, shape_set): TFLOP/s against problem size, one facet per family, a line per implementation:
  against the side for square shapes, against "MxNxK" (ordered by FLOPs) for other shape sets; each backend's
  best form and the baselines drawn, a menu showing every form.
* pareto(points): speed against error, log-log, with the Pareto front (points no other point beats on both);
  pareto_menu(panels) the same for several sets of errors (one per input distribution), a menu picking one.
* cross_gpu(frames): the same implementations at the largest square size every GPU measured, a bar per GPU.

One look on every figure and page: colour is the backend (backend_colour), the marker symbol the stage, a
variant is its stage's symbol outlined in black (plotly's "-dot" form of it), a baseline has a fixed symbol of
its own (stage_symbol, marker_line).  A failed row (passed false) is drawn hollow (hatched, for a bar) and its
hover says FAILED.  Legends sit below the plot, at most 20 entries: one per backend (a click hides all its
series), one per baseline, one for the ceilings (_collapse_legend).  Hovering a point shows its implementation,
precision, shape, TFLOP/s with its p20-p80 spread, SM clock and power-limited mark (spread.fmt_measure),
percentage of its named baseline, relerr, SM clock and commit (HOVER_FIELDS).

Each xxx_figure() builds a plotly Figure (None when there is nothing to draw); xxx() wraps it as an HTML fragment
with a stable div id (fig-roofline-fp32, ...) and without plotly's JavaScript: every page loads the tree's one
plotly.min.js, which plotly_src() copies from the plotly package into reports/ and names relative to the page, so
nothing is fetched when a page is viewed.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from study.core.schema import TOLERANCE
from study.core.stages import STAGES
from study.measure.frame import NUMERIC_COLUMNS, dtype_order, prepare, series_key, variant_of
from study.present.figures import (BACKEND_NAMES, DRAM_COLOUR, SPLIT_STAGES, dram_slopes, limits, ridge,
                                   ceiling_values, plottable, split_ceilings, split_key)
from study.present.formatting import fmt_num
from study.present.spread import fmt_measure
from study.present.tcec_figures import pareto_front

# --- families: which rows share a roofline ---------------------------------------------------------
#
# By the precision the arithmetic really has, never mixing: fp32 inputs computed at fp32 accuracy (SIMT FMA, and
# the split emulations held to fp32's tolerance in study.core.schema.TOLERANCE) apart from fp32 inputs rounded to
# tf32, and both apart from fp32 inputs computed below fp32 accuracy (inputs rounded to fp16, splits whose
# corrections lose bits); the tensor-core input types by family.  A row whose (dtype, precision) no family takes
# gets a family of its own (family_of), so a new precision never lands unmarked beside another.


@dataclass(frozen=True)
class Family:
    title: str                                        # a roofline's or ladder's title
    short: str                                        # a facet's title
    keep: Callable[[pd.DataFrame], pd.Series]         # which prepared rows belong to it
    ceilings: frozenset[str]                          # the ceilings.json keys (and split keys) that bound it
    unit: str = "TFLOP/s"


def _fp32_accurate(df: pd.DataFrame) -> pd.Series:
    """Rows whose precision is held to fp32's tolerance (an unknown precision is not)."""
    return df["precision"].map(lambda p: TOLERANCE.get(p, math.inf) <= TOLERANCE["fp32"]).astype(bool)


def _split_keys(peaks=None) -> frozenset[str]:
    """The split stages' share of each peak they split onto (all peaks, or those in `peaks`)."""
    return frozenset(split_key(k, s) for s in SPLIT_STAGES for k in s.split_peaks if peaks is None or k in peaks)


FAMILIES: dict[str, Family] = {
    "fp32": Family("fp32 inputs at fp32 accuracy: SIMT FMA and the fp32-accurate split emulations",
                   "fp32 (SIMT, fp32-accurate splits)",
                   lambda d: (d["dtype"] == "fp32") & _fp32_accurate(d),
                   frozenset({"fp32_fma_tflops"}) | _split_keys()),
    "tf32": Family("tf32 tensor cores (fp32 inputs rounded to tf32)", "tf32 (fp32 inputs)",
                   lambda d: (d["dtype"] == "fp32") & (d["precision"] == "tf32"),
                   frozenset({"tf32_tc_tflops", "mma_sync_tf32_tflops"})),
    "fp32_reduced": Family("fp32 inputs computed below fp32 accuracy (inputs rounded to fp16, or split with a "
                           "lossy correction)",
                           "fp32 inputs, below fp32 accuracy",
                           lambda d: (d["dtype"] == "fp32") & ~_fp32_accurate(d) & (d["precision"] != "tf32"),
                           frozenset({"fp16_tc_tflops", "mma_sync_fp16_tflops"}) | _split_keys({"fp16_tc_tflops"})),
    "fp16_bf16": Family("fp16 / bf16 tensor cores", "fp16 / bf16",
                        lambda d: d["dtype"].isin(["fp16", "bf16"]),
                        frozenset({"fp16_tc_tflops", "bf16_tc_tflops", "mma_sync_fp16_tflops",
                                   "mma_sync_bf16_tflops"})),
    # fp8 e4m3 operands with fp32 scales (per tensor, row or block), D in bf16: twice the fp16 rate, its own roof.
    "fp8": Family("fp8 e4m3 tensor cores (fp32 scales, bf16 output)", "fp8 e4m3",
                  lambda d: d["dtype"] == "fp8e4m3", frozenset({"fp8_tc_tflops"})),
    "int8": Family("int8 / uint8 tensor cores (int32 accumulate)", "int8 / uint8",
                   lambda d: d["dtype"].isin(["int8", "uint8"]),
                   frozenset({"int8_tc_tops", "mma_sync_int8_tops"}), unit="TOP/s"),
    "fp64": Family("fp64 inputs and arithmetic", "fp64",
                   lambda d: d["dtype"] == "fp64", frozenset({"fp64_tc_tflops"})),
}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def family_of(df: pd.DataFrame) -> pd.Series:
    """The family key of each row of a prepared frame: the first of FAMILIES that keeps it, else a family of its
    (dtype, precision) alone, keyed "other_<dtype>_<precision>"."""
    out = pd.Series("", index=df.index, dtype=object)
    for key, fam in FAMILIES.items():
        out[(out == "") & fam.keep(df)] = key
    rest = out == ""
    out[rest] = [f"other_{_slug(f'{d} {p}')}" for d, p in zip(df.loc[rest, "dtype"], df.loc[rest, "precision"])]
    return out


def _family(key: str, rows: pd.DataFrame) -> Family:
    if key in FAMILIES:
        return FAMILIES[key]
    mine = rows[rows["family"] == key]
    dtype, precision = (mine["dtype"].iloc[0], mine["precision"].iloc[0]) if len(mine) else ("", key)
    return Family(f"{dtype} inputs, {precision} arithmetic", f"{dtype}, {precision}",
                  lambda d: family_of(d) == key, frozenset(),
                  "TOP/s" if dtype.startswith(("int", "uint")) else "TFLOP/s")


def _rows(df: pd.DataFrame | None, max_clock: float | None = None) -> pd.DataFrame:
    """A results frame read any way, typed for the figures, with each row's series and family, and the GPU's
    highest SM clock (environment.json's sm_clock_max_mhz; the hover marks a row well below it power-limited)."""
    if df is None or df.empty:
        return pd.DataFrame()
    d = prepare(df)
    d["max_clock"] = max_clock
    for col in NUMERIC_COLUMNS:
        d[col] = pd.to_numeric(d[col], errors="coerce") if col in d else np.nan
    for col in ("baseline_impl", "commit", "gpu"):
        d[col] = d[col].fillna("").astype(str) if col in d else ""
    d["series"] = [series_key(s, i) for s, i in zip(d["stage"], d["impl"])]
    d["family"] = family_of(d)
    return d


def families(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(key, title) of every family the rows hold, FAMILIES first in their order, then any of their own."""
    rows = _rows(df)
    if rows.empty:
        return []
    present = list(dict.fromkeys(rows["family"]))
    keys = [k for k in FAMILIES if k in present] + sorted(k for k in present if k not in FAMILIES)
    return [(k, _family(k, rows).title) for k in keys]


# --- style: one colour per backend, one symbol per stage ---------------------------------------------

# The PNG ladder's backend colours (seaborn's colourblind palette), and black for cuBLAS.
BACKEND_COLOURS = {"cuda": "#0173b2", "triton": "#de8f05", "gluon": "#029e73", "cublas": "#000000"}
OTHER_COLOUR = "#7f7f7f"
# One filled shape per stage, in STAGES order; a variant adds "-dot", a failed row "-open".
STAGE_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon", "hexagon",
                 "triangle-left", "triangle-right", "cross", "x", "octagon", "diamond-tall", "diamond-wide",
                 "triangle-ne", "triangle-sw", "triangle-nw", "triangle-se", "hexagon2")
# Baselines: stars and a hexagram, which no stage uses.
BASELINE_SYMBOLS = {"cublas": "star", "cublas:tf32": "star-diamond", "cublas:fp64": "star-square",
                    "cublas:int8": "star-triangle-up", "triton:tuned": "hexagram", "cublas:fp8": "hourglass",
                    "cublas:fp8-row": "bowtie", "cublas:fp8-block": "circle-cross", "cublas:fp8-fastacc": "square-x"}
OTHER_BASELINE_SYMBOL = "star-triangle-down"
BASELINES = "baselines"          # the legend group of the baseline rows
GPU_COLOURS = ("#332288", "#cc6677", "#117733", "#aa4499", "#88ccee", "#999933")
_STAGE_INDEX = {s.number: i for i, s in enumerate(STAGES)}
_SLUGS = {s.number: s.slug for s in STAGES}


def backend_colour(backend: str) -> str:
    """The colour of a backend ("cuda", "triton", "gluon", "cublas") on every figure and page."""
    return BACKEND_COLOURS.get(backend, OTHER_COLOUR)


def stage_symbol(key: str) -> str:
    """The plotly marker symbol of a series (study.measure.frame.series_key): a stage's own shape, "<shape>-dot"
    for one of its variants; a baseline's fixed symbol ("triton:tuned-tf32" is triton:tuned's, dotted)."""
    if key in BASELINE_SYMBOLS:
        return BASELINE_SYMBOLS[key]
    for name, symbol in BASELINE_SYMBOLS.items():
        if key.startswith(f"{name}-"):
            return f"{symbol}-dot"
    stage, _, variant = key.partition("-")
    if stage in _STAGE_INDEX:
        index = _STAGE_INDEX[stage]
    elif stage.isdigit():
        index = int(stage) - 1                      # a stage not (yet) in STAGES keeps its place in the ladder
    else:
        return OTHER_BASELINE_SYMBOL
    base = STAGE_SYMBOLS[index % len(STAGE_SYMBOLS)]
    return f"{base}-dot" if variant else base


def marker_line(key: str) -> dict:
    """The outline of a series' markers: thin and white, and dark for a variant, so that a variant reads as its
    stage's shape outlined (its dot is small), never as the hollow of a failed row."""
    return dict(color="#1a1a1a", width=1) if stage_symbol(key).endswith("-dot") else dict(color="#ffffff", width=0.5)


def marker_symbol(key: str, passed: bool) -> str:
    """stage_symbol(), hollow for a row that failed its check."""
    symbol = stage_symbol(key)
    return symbol if passed else symbol.replace("-dot", "") + ("-open-dot" if symbol.endswith("-dot") else "-open")


def _group(stage: str, backend: str) -> str:
    return BASELINES if stage == "baseline" else backend


def _group_title(group: str) -> str:
    return BACKEND_NAMES.get(group, group)


def _rank(stage: str, backend: str, impl: str, dtype: str) -> tuple:
    """Where a series sits in legends and on a ladder's axis: backends in BACKEND_NAMES order, baselines last;
    within one, stages in STAGES order, a stage before its variants, then input dtypes."""
    groups = [*BACKEND_NAMES, BASELINES]
    group = _group(stage, backend)
    dtypes = dtype_order([dtype])
    order = _STAGE_INDEX.get(stage, len(_STAGE_INDEX) + (int(stage) if stage.isdigit() else 0))
    if group == BASELINES:
        names = list(BASELINE_SYMBOLS)
        order = next((i for i, n in enumerate(names) if impl == n or impl.startswith(f"{n}-")), len(names))
    return (groups.index(group) if group in groups else len(groups) - 1, order, variant_of(stage, impl) != "",
            impl, dtypes[0] if dtypes else dtype)


# --- hover ---------------------------------------------------------------------------------------------

# What a point's hover names, in the template's words ("TFLOP/s" is "TOP/s" on integer figures, "relerr" the
# error's own name on a Pareto plot): tests/test_interactive.py reads every template for them.
HOVER_FIELDS = ("implementation", "precision", "shape MxNxK", "TFLOP/s", "vs baseline", "relerr", "SM clock",
                "commit")


def _pct(pct, baseline: str) -> str:
    if not baseline:
        return "no baseline measured beside it"
    return f"{pct:.1f}% of {baseline}" if np.isfinite(pct) else f"not measured against {baseline}"


def _shape(m, n, k) -> str:
    return f"{int(m)}x{int(n)}x{int(k)}" if all(np.isfinite([m, n, k])) else "not given"


def customdata_of(rows: pd.DataFrame, error: str = "relerr", extra: tuple[str, ...] = ()) -> np.ndarray:
    """Per row, the hover's text: implementation, precision, shape, TFLOP/s (with its p20-p80 spread, SM clock and
    power-limited mark: spread.fmt_measure, against the rows' max_clock column where set), % of baseline, error,
    SM clock, commit, FAILED or not, then the `extra` columns as text."""
    out = []
    for r in rows.to_dict("records"):
        err = r[error]
        shape = _shape(r["M"], r["N"], r["K"])
        out.append([
            r["impl"], r["precision"] or "not given",
            f"{shape} ({r['shape_set']})" if r["shape_set"] else shape,
            fmt_measure(r, r.get("max_clock")) or fmt_num(r["tflops"]), _pct(r["pct_cublas"], r["baseline_impl"]),
            ("0 (exact)" if err == 0 else fmt_num(err)) if np.isfinite(err) else "not measured",
            f"{r['sm_clock_mhz']:.0f} MHz" if np.isfinite(r["sm_clock_mhz"]) else "not recorded",
            r["commit"] or "not recorded",
            "" if r["passed"] else " <span style='color:#b31d28'><b>FAILED</b></span>",
            *(fmt_num(r[c]) if isinstance(r[c], float) else str(r[c]) for c in extra)])
    return np.array(out, dtype=object).reshape(len(out), 9 + len(extra))


def hovertemplate(unit: str = "TFLOP/s", error_label: str = "relerr", extra: tuple[str, ...] = ()) -> str:
    """The hover of a point whose customdata is customdata_of()'s; `extra` labels its extra columns."""
    lines = ["implementation: <b>%{customdata[0]}</b>%{customdata[8]}", "precision: %{customdata[1]}",
             "shape MxNxK: %{customdata[2]}", f"{unit}: %{{customdata[3]}}",
             "vs baseline: %{customdata[4]}", f"{error_label}: %{{customdata[5]}}", "SM clock: %{customdata[6]}",
             "commit: %{customdata[7]}"]
    lines += [f"{label}: %{{customdata[{9 + i}]}}" for i, label in enumerate(extra)]
    return "<br>".join(lines) + "<extra></extra>"


# --- traces and layout -------------------------------------------------------------------------------

def _name(stage: str, backend: str, impl: str, precision: str, several: set[str]) -> str:
    """A legend item: the implementation without its backend (the legend group names it), and its precision
    when the figure holds the implementation at several."""
    name = impl[len(backend) + 1:] if stage != "baseline" and impl.startswith(f"{backend}:") else impl
    return f"{name} · {precision}" if impl in several else name


def _several(rows: pd.DataFrame) -> set[str]:
    """The implementations a figure holds at more than one precision."""
    n = rows.groupby("impl")["precision"].nunique()
    return set(n[n > 1].index)


def _series(rows: pd.DataFrame):
    """Each implementation's rows, one series per (implementation, dtype, precision), in _rank() order."""
    keys = ["stage", "backend", "impl", "dtype", "precision"]
    groups = sorted(rows.groupby(keys, sort=False), key=lambda kv: _rank(*kv[0][:4]))
    return [(dict(zip(keys, k)), g) for k, g in groups]


FP8_BASELINES = f"{BASELINES}: cuBLASLt fp8"


def _legend(key: dict, ranks: dict, several: set[str]) -> dict:
    """A series' legend: a ladder series in its backend's group, a baseline in a group of its own (_collapse_legend
    gives each group one entry)."""
    group = _group(key["stage"], key["backend"])
    name = _name(key["stage"], key["backend"], key["impl"], key["precision"], several)
    legend = group
    if group == BASELINES:   # a baseline's own entry; the four cuBLASLt fp8 modes share one (markers tell them apart)
        legend = FP8_BASELINES if key["impl"].startswith("cublas:fp8") else f"{BASELINES}: {name}"
    return dict(name=name, legendgroup=legend,
                legendgrouptitle_text=_group_title(group),
                legendrank=ranks[_rank(key["stage"], key["backend"], key["impl"], key["dtype"])],
                meta={"impl": key["impl"], "backend": key["backend"], "precision": key["precision"],
                      "dtype": key["dtype"], "stage": key["stage"]})


def _ranks(rows: pd.DataFrame) -> dict:
    keys = sorted({_rank(s, b, i, d) for s, b, i, d in zip(rows["stage"], rows["backend"], rows["impl"], rows["dtype"])})
    return {k: 1 + i for i, k in enumerate(keys)}


def _points(rows: pd.DataFrame, x: str, *, unit: str, ranks: dict, several: set[str], y: str = "tflops",
            mode: str = "markers", error: str = "relerr", error_label: str = "relerr",
            extra: tuple[tuple[str, str], ...] = (), xvalues: pd.Series | None = None,
            views: dict[str, list] | None = None) -> list[go.Scatter]:
    """A scatter trace per series: colour by backend, symbol by stage, hollow where the check failed.  `x` and
    `y` name the columns drawn (`xvalues`, by row, replaces `x` on a categorical axis); `extra` adds (label,
    column) lines to the hover; `views` ({column: []}) receives each trace's x in each named column, for a menu
    that moves the points."""
    traces = []
    for key, g in _series(rows):
        g = g.sort_values(x) if xvalues is None else g.assign(_x=xvalues.loc[g.index]).sort_values("_x")
        baseline = key["stage"] == "baseline"
        colour = backend_colour(key["backend"])
        series = g["series"].iloc[0]
        if not g["passed"].iloc[0]:
            # The legend draws a trace's first symbol: lead with an empty point in the passed look.
            g = pd.concat([g.iloc[:1].assign(**{x: np.nan, y: np.nan, "passed": True, "_x": None}), g])
        for column, xs in (views or {}).items():
            xs.append([v if np.isfinite(v) and v > 0 else None for v in g[column].astype(float)])
        traces.append(go.Scatter(
            x=g[x] if xvalues is None else g["_x"], y=g[y], mode=mode,
            marker=dict(symbol=[marker_symbol(series, p) for p in g["passed"]], color=colour,
                        size=13 if baseline else 10, line=marker_line(series)),
            line=dict(color=colour, width=2.5 if baseline else 1.3),
            customdata=customdata_of(g, error, tuple(c for _, c in extra)),
            hovertemplate=hovertemplate(unit, error_label, tuple(label for label, _ in extra)),
            **_legend(key, ranks, several)))
    return traces


# The legend group of what is not a series: ceilings, the Pareto front, what a hollow marker means.
KEY = "key"


def _failed_note(fig: go.Figure, rows: pd.DataFrame, **where) -> None:
    """A legend-only item saying what a hollow marker means, when some row failed."""
    failed = int((~rows["passed"]).sum())
    if failed:
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"hollow: failed check ({failed})",
                                 marker=dict(symbol="circle-open", color="#555555", size=9), legendgroup=KEY,
                                 legendgrouptitle_text=KEY, legendrank=10**6, hoverinfo="skip"), **where)


# The legend sits below the plot, a column per legend group (CUDA, Triton, Gluon, baselines, key): the plot keeps
# the page's width, and nothing scrolls.  Its height is estimated here so the plot area keeps `plot_height`.
LEGEND_COLUMN = 0.19        # of the plot's width: five groups side by side
LEGEND_ROW_PX = 19.5


def _legend_height(fig: go.Figure) -> float:
    counts: dict[str, int] = {}
    seen = set()                  # an item once, though several panels of a menu (pareto_menu_figure) repeat it
    for item in (*fig.data, *(s for s in fig.layout.shapes if s.showlegend)):
        group = item.legendgroup or item.name or ""
        if item.showlegend is not False and (group, item.name) not in seen:
            seen.add((group, item.name))
            counts[group] = counts.get(group, 1 if item.legendgrouptitle.text else 0) + 1
    per_band = int(1 / LEGEND_COLUMN)
    if all(n == 1 for n in counts.values()):      # one entry per group (_collapse_legend): rows of per_band entries
        return (LEGEND_ROW_PX + 4) * math.ceil(len(counts) / per_band) + 12 if counts else 0
    bands = [list(counts.values())[i:i + per_band] for i in range(0, len(counts), per_band)]
    return sum(LEGEND_ROW_PX * max(b) + 12 for b in bands)


CEILINGS_GROUP = "ceilings"


def legend_entries(fig: go.Figure) -> int:
    """How many entries the figure's legend shows: its legend-shown traces and shapes, a group's repeats of one
    name once (the panels of a menu repeat their series)."""
    return len({(t.legendgroup or "", t.name) for t in (*fig.data, *fig.layout.shapes) if t.showlegend is not False
                and (t.showlegend or not isinstance(t, go.layout.Shape))})


def _collapse_legend(fig: go.Figure) -> go.Figure:
    """One legend entry per legend group: a backend's series share one entry (named by the backend), a baseline
    keeps its own, the ceilings share one.  Every trace hides its own entry, and a legend-only trace drawn like
    the group's first stands for the group: a click shows or hides the whole group, a double click isolates it.
    Stages are told apart by marker (and picked in a figure's stage menu)."""
    first: dict[str, go.BaseTraceType] = {}
    for t in fig.data:
        if t.legendgroup and t.showlegend is not False:
            first.setdefault(t.legendgroup, t)
            t.showlegend = False
        t.legendgrouptitle = None
    for group, t in first.items():
        symbol = t.marker.symbol if t.marker else None
        symbol = (symbol[0] if isinstance(symbol, (tuple, list)) and symbol else symbol) or "circle"
        mode = "lines" if group == CEILINGS_GROUP else ("markers" if "markers" in (t.mode or "markers") else "lines")
        name = BACKEND_NAMES.get(group) or {CEILINGS_GROUP: "ceilings (dashed: datasheet)",
                                            FP8_BASELINES: "cuBLASLt fp8, each scaling mode"}.get(group, t.name)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode=mode, name=name, legendgroup=group, showlegend=True,
                                 legendrank=t.legendrank, hoverinfo="skip", line=t.line,
                                 marker=dict(symbol=symbol if group not in BACKEND_NAMES else "circle",
                                             color=t.marker.color if t.marker else None, size=10)))
    return fig.update_layout(legend_groupclick="togglegroup")


def _visibility_menu(fig: go.Figure, options: list[tuple[str, Callable]], **where) -> dict:
    """An updatemenu whose buttons show the series traces each option keeps (`keep(meta)` true; a trace
    without meta, a ceiling or a legend entry, always shows)."""
    buttons = [dict(label=label, method="restyle",
                    args=[{"visible": [keep(t.meta) if isinstance(t.meta, dict) and "impl" in t.meta else True
                                       for t in fig.data]}]) for label, keep in options]
    return dict(type="dropdown", buttons=buttons, active=0, showactive=True, yanchor="bottom", **where)


def _style(fig: go.Figure, title: str, plot_height: int, below: int = 80) -> go.Figure:
    """The shared layout: white theme, width from the page (autosize), `plot_height` px of plot, `below` px for
    the x axis' ticks and title, then the legend."""
    legend = _legend_height(fig)
    fig.update_layout(
        template="plotly_white", autosize=True, height=int(70 + plot_height + below + legend), hovermode="closest",
        title=dict(text=title, x=0.0, xanchor="left", font=dict(size=15)),
        margin=dict(l=70, r=20, t=70, b=int(below + legend)), font=dict(size=12), hoverlabel=dict(align="left"),
        # A click toggles one item, a double click isolates it.
        legend=dict(orientation="h", x=0, xanchor="left", y=-below / plot_height, yanchor="top",
                    entrywidth=LEGEND_COLUMN, entrywidthmode="fraction", groupclick="toggleitem",
                    itemsizing="constant", font=dict(size=11)))
    return fig


CONFIG = {"responsive": True, "displaylogo": False, "scrollZoom": False}


def div_id(kind: str, key: str = "") -> str:
    """A figure's stable element id: div_id("roofline", "fp16_bf16") -> "fig-roofline-fp16-bf16"."""
    return "-".join(["fig"] + [_slug(p).replace("_", "-") for p in (kind, key) if p])


def fragment(fig: go.Figure | None, element_id: str) -> str | None:
    """The figure as an HTML fragment (a div and the script that draws it), without plotly's JavaScript."""
    if fig is None:
        return None
    config = {**CONFIG, "toImageButtonOptions": {"format": "png", "filename": element_id, "scale": 2}}
    return pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=element_id, config=config)


PLOTLY_JS = "plotly.min.js"


def write_plotly_js(directory: Path) -> str:
    """Copy the plotly package's own plotly.min.js into `directory` (when absent or different) and return its
    file name, for the page's <script src>."""
    path = Path(directory) / PLOTLY_JS
    data = get_plotlyjs().encode("utf-8")
    if not path.is_file() or path.read_bytes() != data:
        path.write_bytes(data)
    return PLOTLY_JS


def plotly_src(page_dir: Path, reports_root: Path) -> str:
    """The <script src> of plotly.min.js for a page in page_dir: the tree's one copy, in reports_root (written
    there when absent or different), as a path relative to the page ("../plotly.min.js" from reports/h100/)."""
    root, page = Path(reports_root).resolve(), Path(page_dir).resolve()
    write_plotly_js(root)
    return Path(os.path.relpath(root / PLOTLY_JS, page)).as_posix()


# --- roofline ------------------------------------------------------------------------------------------

def _label_clusters(ceils, unit: str) -> dict[str, str]:
    """One text per cluster of ceilings within 30% of each other (FP16 753, BF16 783 ...), hung below the lowest
    line of the cluster (the datasheet line sits just above each measured one): {ceiling key: text}."""
    levels = sorted(((m or d), key, f"{label} {m:,.0f}" if m else f"{label} datasheet {d:,.0f}")
                    for key, label, _, m, d in ceils)
    clusters: list[list[tuple]] = []
    for level in levels:
        if clusters and level[0] / clusters[-1][-1][0] < 1.3:
            clusters[-1].append(level)
        else:
            clusters.append([level])
    return {c[0][1]: " · ".join(t for _, _, t in c) + f" {unit}" for c in clusters}


def _ceiling_traces(ceils, dram, xlim, unit: str) -> list[go.Scatter]:
    """Measured ceilings solid, datasheet ones dashed, each from its ridge point; the DRAM slope up to the
    highest of them."""
    traces = []
    common = dict(mode="lines+text", legendgroup=CEILINGS_GROUP,
                  legendgrouptitle_text=f"ceilings, {unit} (dashed: datasheet)",
                  legendrank=10**5, textposition="bottom left")
    top = max((m or d) for _, _, _, m, d in ceils) if ceils else None
    for gbps, dash, kind in ((dram[0], "solid", "measured"), (dram[1], "dash", "datasheet")):
        if gbps:
            x_end = min(ridge(top, gbps), xlim[1]) if top else xlim[1]
            name = f"DRAM {gbps:,.0f} GB/s" + (" datasheet" if kind == "datasheet" else "")
            traces.append(go.Scatter(
                x=[xlim[0], x_end], y=[gbps * xlim[0] / 1000, gbps * x_end / 1000], name=name, text=["", ""],
                line=dict(color=DRAM_COLOUR, dash=dash, width=2 if kind == "measured" else 1.2),
                hovertemplate=f"DRAM {gbps:,.1f} GB/s ({kind})<extra></extra>", **common))
    texts = _label_clusters(ceils, unit)
    for key, label, colour, m, d in ceils:
        for v, gbps, dash, kind in ((m, dram[0], "solid", "measured"), (d, dram[1], "dash", "datasheet")):
            if not v:
                continue
            x0 = max(ridge(v, gbps) or xlim[0], xlim[0])
            text = texts.get(key, "") if v == (m or d) else ""
            traces.append(go.Scatter(
                x=[x0, xlim[1]], y=[v, v], name=f"{label} {v:,.0f}" + (" datasheet" if kind == "datasheet" else ""),
                text=["", text], textfont=dict(color=colour if " · " not in text else "#333333", size=11),
                line=dict(color=colour, dash=dash, width=2 if m == v else 1.2),
                hovertemplate=f"{label}: {v:,.1f} {unit} ({kind})<extra></extra>", meta={"ceiling": key}, **common))
    return traces


ROOFLINE_PX = 540
ACHIEVED = "achieved"        # a roofline's column: FLOPs per DRAM byte that ncu counted for the call


def _with_traffic(points: pd.DataFrame, traffic: pd.DataFrame | None) -> pd.DataFrame:
    """The points with their achieved intensity (2MNK over the DRAM bytes ncu counted), NaN where not profiled."""
    if traffic is None or traffic.empty:
        return points.assign(**{ACHIEVED: np.nan})
    t = traffic.assign(**{c: traffic[c].astype(float) for c in ("M", "N", "K")})
    merged = points.merge(t, on=["impl", "dtype", "M", "N", "K"], how="left")
    merged.index = points.index
    return merged.assign(**{ACHIEVED: 2.0 * merged["M"] * merged["N"] * merged["K"] / merged["dram_bytes"]})


def _stage_menu(fig: go.Figure, points: pd.DataFrame) -> dict:
    stages = [n for n in dict.fromkeys(sorted(points["stage"], key=lambda st: _STAGE_INDEX.get(st, 99)))
              if n != "baseline"]
    options = [("every stage", lambda m: True)]
    options += [(f"stage {n}", lambda m, n=n: m["stage"] in (n, "baseline")) for n in stages]
    return _visibility_menu(fig, options, x=1, xanchor="right", y=1 + 8 / ROOFLINE_PX)


def roofline_figure(df: pd.DataFrame, ceilings: dict | None, family: str, traffic: pd.DataFrame | None = None,
                    max_clock: float | None = None) -> go.Figure | None:
    """The roofline of one family (FAMILIES, or a key families() returned): its rows at every shape, its own
    ceilings.  With `traffic` (hierarchy.achieved_traffic: impl, dtype, M, N, K, dram_bytes) a call sits at the
    FLOPs per DRAM byte ncu counted for it, and a menu switches to compulsory traffic (every row's `intensity`);
    a menu picks one stage.  None when the family has no row with both a TFLOP/s and an intensity."""
    rows = _rows(df, max_clock)
    if rows.empty:
        return None
    points = plottable(rows[rows["family"] == family], "intensity", "tflops")
    if points.empty:
        return None
    points = _with_traffic(points, traffic)
    achieved = bool((points[ACHIEVED] > 0).any())
    fam = _family(family, rows)
    split = [c for s in SPLIT_STAGES if (points["stage"] == s.number).any() for c in split_ceilings(ceilings, s)]
    ceils = [c for c in ceiling_values(ceilings) + split if c[0] in fam.ceilings]
    dram = dram_slopes(ceilings)
    both = pd.concat([points, points[points[ACHIEVED] > 0].assign(intensity=lambda d: d[ACHIEVED])])
    xlim, ylim = limits(both, ceils, dram)
    fig = go.Figure()
    per_op = "OP" if fam.unit == "TOP/s" else "FLOP"
    views = {"intensity": [], ACHIEVED: []}
    fig.add_traces(_points(points, "intensity", unit=fam.unit, ranks=_ranks(points), several=_several(points),
                           extra=((f"compulsory {per_op}/byte", "intensity"), (f"ncu DRAM {per_op}/byte", ACHIEVED)),
                           views=views))
    fig.add_traces(_ceiling_traces(ceils, dram, xlim, fam.unit))
    _failed_note(fig, points)
    _collapse_legend(fig)
    titles = {"intensity": f"{per_op} per byte of compulsory traffic (A, B, D, and C when beta != 0)",
              ACHIEVED: f"{per_op} per DRAM byte that ncu counted (read + written, the call's kernels summed)"}
    menus = [_stage_menu(fig, points)]
    if achieved:
        keep = [t.x for t in fig.data[len(views["intensity"]):]]
        buttons = [dict(label=label, method="update",
                        args=[{"x": [*views[view], *keep]}, {"xaxis.title.text": titles[view]}])
                   for label, view in (("achieved traffic (ncu)", ACHIEVED), ("compulsory traffic", "intensity"))]
        menus.insert(0, dict(type="dropdown", buttons=buttons, active=0, showactive=True, x=0.84, xanchor="right",
                             yanchor="bottom", y=1 + 8 / ROOFLINE_PX))
        for t, x in zip(fig.data, views[ACHIEVED]):
            t.x = x
    fig.update_layout(updatemenus=menus)
    fig.update_xaxes(type="log", range=[math.log10(xlim[0]), math.log10(xlim[1])],
                     title_text=titles[ACHIEVED if achieved else "intensity"])
    fig.update_yaxes(type="log", range=[math.log10(ylim[0]), math.log10(ylim[1])], title_text=fam.unit)
    if not ceils and (fam.ceilings or not any(dram)):   # a family whose ceiling an older ceilings.json lacks
        text = "no ceilings measured" if not any(dram) else f"{fam.short} ceiling not yet measured"
        fig.add_annotation(text=text, xref="paper", yref="paper", x=1, y=1, showarrow=False)
    return _style(fig, f"Roofline: {fam.title}", ROOFLINE_PX)


def roofline(df: pd.DataFrame, ceilings: dict | None, family: str, traffic: pd.DataFrame | None = None,
             max_clock: float | None = None) -> str | None:
    """roofline_figure() as an HTML fragment, div id fig-roofline-<family>."""
    return fragment(roofline_figure(df, ceilings, family, traffic, max_clock), div_id("roofline", family))


# --- ladder --------------------------------------------------------------------------------------------

# The cuBLAS routines a family's rows are measured against (their baseline_impl), by (implementation, precision).
BASELINE_NAMES = {("cublas", "fp32"): "cuBLAS SGEMM (TF32 off)", ("cublas:tf32", "tf32"): "cuBLAS SGEMM (TF32 on)",
                  ("cublas", "fp16/fp32acc"): "cuBLAS HGEMM", ("cublas", "bf16/fp32acc"): "cuBLAS bf16 GEMM",
                  ("cublas:fp64", "fp64"): "cuBLAS DGEMM", ("cublas:int8", "int8/int32acc"): "cuBLAS int8 GEMM",
                  ("cublas:fp8", "fp8e4m3-tensor/fp32acc"): "cuBLASLt fp8, per-tensor scales",
                  ("cublas:fp8-row", "fp8e4m3-row/fp32acc"): "cuBLASLt fp8, row-wise scales",
                  ("cublas:fp8-block", "fp8e4m3-block/fp32acc"): "cuBLASLt fp8, block scales",
                  ("cublas:fp8-fastacc", "fp8e4m3-tensor/tcacc"): "cuBLASLt fp8, fast accumulation"}


def baseline_name(impl: str, precision: str) -> str:
    return BASELINE_NAMES.get((impl, precision), f"{impl} ({precision})")


def _square(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[(rows["M"] == rows["N"]) & (rows["N"] == rows["K"]) & (rows["M"] > 0)]


def _category(stage: str, impl: str, dtype: str, with_dtype: bool) -> str:
    """A ladder's x label: "09 best_simt", "10-m32n8k16", a baseline's name; and the input dtype where one
    stage has several."""
    if stage == "baseline":
        label = impl
    else:
        variant = variant_of(stage, impl)
        label = f"{stage}-{variant}" if variant else f"{stage} {_SLUGS.get(stage, '')}".strip()
    return f"{label} {dtype}" if with_dtype else label


def ladder_figure(df: pd.DataFrame, family: str, sizes: tuple[int, ...] = (4096, 8192),
                  max_clock: float | None = None) -> go.Figure | None:
    """TFLOP/s by stage (and variant) of one family at square sizes (`sizes` where measured, else the largest
    square the family has): a row of bars per size, a bar per backend (baselines other than cuBLAS as bars of
    their own), and each cuBLAS routine the rows are measured against as a horizontal line named in the legend."""
    rows = _rows(df, max_clock)
    if rows.empty:
        return None
    mine = _square(rows[(rows["family"] == family) & (rows["tflops"] > 0)])
    measured = sorted(set(mine["M"].astype(int)))
    chosen = [n for n in sizes if n in measured] or measured[-1:]
    bars = mine[mine["M"].isin(chosen) & (mine["backend"] != "cublas")]
    if bars.empty:
        return None
    fam = _family(family, rows)
    dtypes = bars.groupby("series")["dtype"].nunique()
    bars = bars.assign(category=[_category(s, i, d, dtypes[k] > 1) for s, i, d, k in
                                 zip(bars["stage"], bars["impl"], bars["dtype"], bars["series"])])
    order = sorted(set(zip(bars["stage"], bars["backend"], bars["impl"], bars["dtype"], bars["category"])),
                   key=lambda t: (t[0] == "baseline", _rank(*t[:4])[1:]))
    categories = list(dict.fromkeys(t[4] for t in order))
    backends = sorted(set(bars["backend"]), key=lambda b: _rank("", b, "", "")[0])
    fig = make_subplots(rows=len(chosen), cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=[f"{n}x{n}x{n}" for n in chosen])
    for r, n in enumerate(chosen, start=1):
        at = bars[bars["M"] == n]
        for b in backends:
            g = at[at["backend"] == b]
            fig.add_trace(go.Bar(
                x=g["category"], y=g["tflops"], name=BACKEND_NAMES.get(b, b), offsetgroup=b, legendgroup=b,
                showlegend=r == 1, marker=dict(color=backend_colour(b), line=dict(color=backend_colour(b), width=1),
                                               pattern=dict(shape=["" if p else "/" for p in g["passed"]])),
                customdata=customdata_of(g), hovertemplate=hovertemplate(fam.unit),
                meta={"backend": b, "size": n, "precisions": sorted(set(g["precision"]))}), row=r, col=1)
        refs = sorted(set(zip(at["baseline_impl"], at["dtype"])) - {("", d) for d in at["dtype"]})
        for j, (impl, dtype) in enumerate(refs):
            base = rows[(rows["impl"] == impl) & (rows["dtype"] == dtype) & (rows["M"] == n) & (rows["N"] == n)
                        & (rows["K"] == n) & (rows["tflops"] > 0)]
            if base.empty:
                continue
            v, precision = base["tflops"].iloc[-1], base["precision"].iloc[-1]
            name = f"{baseline_name(impl, precision)} {fmt_num(v)}"
            fig.add_hline(y=v, row=r, col=1, line=dict(color=backend_colour("cublas"), width=1.6,
                                                       dash=("solid", "dash", "dot")[j % 3]),
                          name=f"{name} at {n}", showlegend=True, legendgroup="cuBLAS", legendrank=10**5,
                          legendgrouptitle_text="cuBLAS: the rows' baseline",
                          annotation_text=name, annotation_font_size=11,
                          annotation_position=("top left", "bottom right")[j % 2])
    _failed_bars_note(fig, bars)
    fig.update_xaxes(categoryorder="array", categoryarray=categories, tickangle=-40)
    fig.update_xaxes(title_text="stage (and variant); baselines last", row=len(chosen), col=1)
    fig.update_yaxes(title_text=fam.unit, rangemode="tozero")
    return _style(fig.update_layout(barmode="group", bargap=0.2, bargroupgap=0.05),
                  f"Ladder: {fam.title}", 320 * len(chosen), below=140)


def _failed_bars_note(fig: go.Figure, bars: pd.DataFrame) -> None:
    failed = int((~bars["passed"]).sum())
    if failed:
        fig.add_trace(go.Bar(x=[None], y=[None], name=f"hatched: failed check ({failed})", legendgroup=KEY,
                             legendgrouptitle_text=KEY, legendrank=10**6,
                             marker=dict(color="#ffffff", line=dict(color="#555555", width=1),
                                         pattern=dict(shape="/", fgcolor="#555555")), hoverinfo="skip"))


def ladder(df: pd.DataFrame, family: str, sizes: tuple[int, ...] = (4096, 8192),
           max_clock: float | None = None) -> str | None:
    """ladder_figure() as an HTML fragment, div id fig-ladder-<family>."""
    return fragment(ladder_figure(df, family, sizes, max_clock), div_id("ladder", family))


# --- TFLOP/s against size ------------------------------------------------------------------------------

def best_forms(rows: pd.DataFrame) -> set[tuple[str, str, str]]:
    """(impl, dtype, precision) of each backend's fastest passing series at the rows' largest size (by FLOPs),
    one per backend and input dtype; every baseline series."""
    ok = rows[rows["passed"] & (rows["tflops"] > 0)]
    keep = {(i, d, p) for i, d, p in zip(ok["impl"], ok["dtype"], ok["precision"])
            if i in set(ok.loc[ok["stage"] == "baseline", "impl"])}
    for _, g in ok[ok["stage"] != "baseline"].groupby(["backend", "dtype"]):
        top = g[g["M"] * g["N"] * g["K"] == (g["M"] * g["N"] * g["K"]).max()]
        r = top.loc[top["tflops"].idxmax()]
        keep.add((r["impl"], r["dtype"], r["precision"]))
    return keep


def size_sweep_figure(df: pd.DataFrame, shape_set: str = "square", max_clock: float | None = None) -> go.Figure | None:
    """TFLOP/s against problem size for one shape set, one facet per family, a line per implementation.  Square
    shapes: against the side (log 2 axis).  Other sets ("llm", a model's shapes): against "MxNxK", ordered by
    FLOPs.  Drawn: each backend's fastest form per family and input dtype (best_forms) and the baselines; a menu
    shows every form."""
    rows = _rows(df, max_clock)
    if rows.empty:
        return None
    pts = rows[(rows["shape_set"] == shape_set) & (rows["tflops"] > 0) & (rows[["M", "N", "K"]] > 0).all(axis=1)]
    square = shape_set == "square"
    if square:
        pts = _square(pts)
    if pts.empty:
        return None
    fams = [k for k, _ in families(pts)]
    cols = min(3, len(fams))
    nrows = math.ceil(len(fams) / cols)
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[_family(k, rows).short for k in fams],
                        horizontal_spacing=0.07, vertical_spacing=0.12 if nrows > 1 else 0.0)
    labels = pd.Series([_shape(m, n, k) for m, n, k in zip(pts["M"], pts["N"], pts["K"])], index=pts.index)
    by_flops = sorted(set(zip(pts["M"] * pts["N"] * pts["K"], labels)))
    ranks = _ranks(pts)
    best = set()
    for i, key in enumerate(fams):
        r, c = 1 + i // cols, 1 + i % cols
        g = pts[pts["family"] == key]
        fam = _family(key, rows)
        traces = _points(g, "M", unit=fam.unit, ranks=ranks, mode="lines+markers", several=_several(pts),
                         xvalues=None if square else labels.loc[g.index])
        shown = best_forms(g)
        for t in traces:
            t.meta = {**t.meta, "family": key}
            if (t.meta["impl"], t.meta["dtype"], t.meta["precision"]) in shown:
                best.add((key, t.meta["impl"], t.meta["dtype"], t.meta["precision"]))
            else:
                t.visible = False
        fig.add_traces(traces, rows=r, cols=c)
        if square:
            sides = sorted(set(g["M"].astype(int)))
            fig.update_xaxes(type="log", tickvals=sides, ticktext=[str(s) for s in sides], row=r, col=c)
        else:
            fig.update_xaxes(type="category", categoryorder="array", categoryarray=[lab for _, lab in by_flops],
                             tickangle=-30, row=r, col=c)
        fig.update_yaxes(type="log", title_text=fam.unit if c == 1 or fam.unit != "TFLOP/s" else None, row=r, col=c)
    _failed_note(fig, pts, row=1, col=1)
    _collapse_legend(fig)
    mine = lambda m: (m["family"], m["impl"], m["dtype"], m["precision"]) in best  # noqa: E731
    fig.update_layout(updatemenus=[_visibility_menu(fig, [("best form per backend", mine),
                                                           ("every form", lambda m: True)],
                                                    x=0.4, xanchor="left", y=1 + 30 / (380 * nrows))])
    fig.update_xaxes(title_text="M = N = K" if square else "M x N x K (ordered by FLOPs)", row=nrows)
    return _style(fig, f"TFLOP/s against problem size: {shape_set} shapes", 380 * nrows, below=80 if square else 120)


def size_sweep(df: pd.DataFrame, shape_set: str = "square", max_clock: float | None = None) -> str | None:
    """size_sweep_figure() as an HTML fragment, div id fig-size-<shape_set>."""
    return fragment(size_sweep_figure(df, shape_set, max_clock), div_id("size", shape_set))


# --- speed against accuracy ----------------------------------------------------------------------------

def error_points(rows: pd.DataFrame, column: str = "relerr", label: str = "relative Frobenius error") -> pd.DataFrame:
    """Results rows as pareto() points: their `column` as the error, `label` as its name."""
    return rows.assign(error=pd.to_numeric(rows[column], errors="coerce"), metric=label)


def _stage_of(impl: str) -> str:
    body = impl.split(":", 1)[-1]
    return next((s.number for s in STAGES if body.startswith(s.key)), "baseline")


# Columns a Pareto point may carry for its hover, beside the error it is drawn at (a stage page gives them).
PARETO_EXTRA = (("median elementwise error", "median_error"), ("componentwise error", "componentwise_error"),
                ("error measured at", "error_at"))


def _pareto_panel(points: pd.DataFrame) -> tuple[list[go.Scatter], str, list[str], pd.DataFrame] | None:
    """One panel of pareto_menu_figure(): its traces (the front, then a trace per series), its metric, the
    implementations it cannot draw (an error not finite and positive), and its drawn points; None when it has
    none to draw."""
    if points is None or points.empty or not {"impl", "tflops", "error"} <= set(points.columns):
        return None
    pts = _rows(points.drop(columns=[c for c in ("series", "family") if c in points]))
    pts["error"] = pd.to_numeric(points["error"], errors="coerce").to_numpy()
    if "passed" not in points:
        pts["passed"] = True
    pts["backend"] = [b or i.split(":", 1)[0] for b, i in zip(pts["backend"], pts["impl"])]
    pts["stage"] = [s or _stage_of(i) for s, i in zip(pts["stage"], pts["impl"])]
    pts["series"] = [series_key(s, i) for s, i in zip(pts["stage"], pts["impl"])]
    drawn = plottable(pts, "tflops", "error")
    if drawn.empty:
        return None
    lost = sorted(set(pts["impl"]) - set(drawn["impl"]))
    labels = points["metric"].dropna().astype(str) if "metric" in points else pd.Series(dtype=str)
    metric = labels.iloc[0] if len(labels) else "error"
    front = drawn[pareto_front(drawn, "tflops", "error")].sort_values("tflops")
    traces = [go.Scatter(x=front["tflops"], y=front["error"], mode="lines", line_shape="vh", name="Pareto front",
                         line=dict(color="#555555", width=1.2), legendrank=0, hoverinfo="skip")]
    extra = tuple((label, col) for label, col in PARETO_EXTRA if col in points)
    traces += _points(drawn, "tflops", y="error", unit="TFLOP/s", ranks=_ranks(drawn), error="error",
                      error_label=metric, several=_several(drawn), extra=extra)
    return traces, metric, lost, drawn


def pareto_menu_figure(panels: list[tuple[str, pd.DataFrame]]) -> go.Figure | None:
    """Speed against accuracy: TFLOP/s across, error up, both log; lower right is better, and the stepped line
    is the Pareto front.  One panel per (label, points), a menu at the top right picking which one shows (none
    with a single panel); a panel's points that cannot sit on a log axis (NaN/inf, or an exact 0) are named under
    its plot.

    `points` columns: impl, tflops and error (a number; error_points() makes them from results rows) are
    needed; metric (the error's name for the axis and hover, e.g. "relative Frobenius error"), precision,
    backend and stage (both read from impl when absent), M, N, K, shape_set, pct_cublas, baseline_impl,
    sm_clock_mhz, commit, passed and PARETO_EXTRA's columns are shown when given."""
    built = [(label, b) for label, points in panels if (b := _pareto_panel(points))]
    if not built:
        return None
    fig = go.Figure()
    spans, layouts = [], []
    for i, (label, (traces, metric, lost, _)) in enumerate(built):
        for t in traces if len(built) > 1 else ():
            t.visible = i == 0
            t.meta = {**(t.meta or {}), "panel": label}
        spans.append(range(len(fig.data), len(fig.data) + len(traces)))
        fig.add_traces(traces)
        notes = [dict(text="better: lower right", xref="paper", yref="paper", x=1, y=0, xanchor="right",
                      yanchor="bottom", showarrow=False, font=dict(color="#555555"))]
        if lost:
            notes.append(dict(text=f"not drawn (error NaN/inf, 0 or not measured): {', '.join(lost)}", xref="paper",
                              yref="paper", x=0.01, y=0.99, xanchor="left", yanchor="top", showarrow=False,
                              bgcolor="rgba(255,255,255,0.8)", font=dict(color="#b31d28", size=11)))
        layouts.append({"title.text": f"Speed against accuracy ({metric})", "yaxis.title.text": metric,
                        "annotations": notes})
    _failed_note(fig, pd.concat([b[3] for _, b in built]).drop_duplicates("impl"))
    _collapse_legend(fig)
    fig.update_layout(annotations=layouts[0]["annotations"])
    fig.update_xaxes(type="log", title_text="TFLOP/s")
    fig.update_yaxes(type="log", title_text=layouts[0]["yaxis.title.text"], exponentformat="power")
    _style(fig, layouts[0]["title.text"], 500)
    if len(built) > 1:
        n = len(fig.data)
        buttons = [dict(label=label, method="update",
                        args=[{"visible": [j in span or j >= spans[-1].stop for j in range(n)]}, layout])
                   for (label, _), span, layout in zip(built, spans, layouts)]
        fig.update_layout(updatemenus=[dict(type="dropdown", buttons=buttons, active=0, x=1, xanchor="right", y=1.02,
                                            yanchor="bottom", showactive=True)])
    return fig


def pareto_figure(points: pd.DataFrame) -> go.Figure | None:
    """pareto_menu_figure() of one panel."""
    return pareto_menu_figure([("", points)])


def pareto(points: pd.DataFrame, element_id: str = "fig-pareto") -> str | None:
    """pareto_figure() as an HTML fragment, div id fig-pareto (or `element_id`)."""
    return fragment(pareto_figure(points), element_id)


def pareto_menu(panels: list[tuple[str, pd.DataFrame]], element_id: str = "fig-pareto") -> str | None:
    """pareto_menu_figure() as an HTML fragment, div id fig-pareto (or `element_id`)."""
    return fragment(pareto_menu_figure(panels), element_id)


# --- one implementation on several GPUs ----------------------------------------------------------------

def cross_gpu_figure(frames: dict[str, pd.DataFrame]) -> go.Figure | None:
    """The implementations that two or more GPUs measured, at the largest square size every one of them has:
    one facet per family, a bar per GPU (colour by GPU).  None unless two GPUs have square rows."""
    squares = {gpu: _square(r[r["tflops"] > 0]) for gpu, r in ((g, _rows(f)) for g, f in frames.items()) if not r.empty}
    squares = {gpu: r for gpu, r in squares.items() if not r.empty}
    common = set.intersection(*(set(r["M"].astype(int)) for r in squares.values())) if len(squares) > 1 else set()
    if not common:
        return None
    n = max(common)
    at = pd.concat([r[r["M"] == n].assign(on_gpu=gpu) for gpu, r in squares.items()], ignore_index=True)
    keys = ["impl", "dtype", "precision"]
    shared = at.groupby(keys)["on_gpu"].transform("nunique") > 1
    at = at[shared]
    if at.empty:
        return None
    fams = [k for k, _ in families(at)]
    fig = make_subplots(rows=len(fams), cols=1, subplot_titles=[_family(k, at).title for k in fams],
                        vertical_spacing=min(0.12, 0.6 / len(fams)))
    for r, key in enumerate(fams, start=1):
        g = at[at["family"] == key]
        several = _several(g)
        g = g.assign(item=[f"{i} · {p}" if i in several else i for i, p in zip(g["impl"], g["precision"])])
        order = sorted(set(zip(g["stage"], g["backend"], g["impl"], g["dtype"], g["item"])), key=lambda t: _rank(*t[:4]))
        for j, gpu in enumerate(squares):
            s = g[g["on_gpu"] == gpu]
            fig.add_trace(go.Bar(x=s["item"], y=s["tflops"], name=gpu, legendgroup=gpu, showlegend=r == 1,
                                 marker=dict(color=GPU_COLOURS[j % len(GPU_COLOURS)],
                                             pattern=dict(shape=["" if p else "/" for p in s["passed"]])),
                                 customdata=customdata_of(s, extra=("on_gpu",)), meta={"gpu": gpu, "family": key},
                                 hovertemplate=hovertemplate(_family(key, at).unit, extra=("GPU",))), row=r, col=1)
        fig.update_xaxes(categoryorder="array", categoryarray=list(dict.fromkeys(t[4] for t in order)), tickangle=-40,
                         row=r, col=1)
        fig.update_yaxes(title_text=_family(key, at).unit, rangemode="tozero", row=r, col=1)
    fig.update_layout(barmode="group", legend=dict(title_text="GPU"))
    return _style(fig, f"The same implementations on {len(squares)} GPUs, at {n}x{n}x{n}", 330 * len(fams), below=140)


def cross_gpu(frames: dict[str, pd.DataFrame]) -> str | None:
    """cross_gpu_figure() as an HTML fragment, div id fig-cross-gpu."""
    return fragment(cross_gpu_figure(frames), div_id("cross", "gpu"))
