"""The report's figures: roofline, TFLOP/s vs size and the ladder, drawn from the frames of study.measure.frame,
and the styles (a colour and marker per series) that every figure of the study shares.

Matplotlib objects are built without pyplot, so rendering never touches a display or a global backend.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import LogFormatter, NullLocator

from study.core.stages import STAGES, Stage
from study.measure.frame import dtype_order, positive, prepare, series_key, variant_of

# Compute ceilings in a fixed order with fixed, dark colours, so that they never read as stage markers
# (which use the bright colourblind palette) and look the same on every figure.
CEILINGS: dict[str, tuple[str, str]] = {
    "fp32_fma_tflops": ("FP32 FMA", "#8c0800"),
    "tf32_tc_tflops": ("TF32 TC", "#001c7f"),
    "fp16_tc_tflops": ("FP16 TC", "#12711c"),
    "bf16_tc_tflops": ("BF16 TC", "#591e71"),
    "int8_tc_tops": ("INT8 TC", "#b8850a"),
    # The mma.sync issue peaks (study/kernels/mma_peak.cu): what the tensor-core stages reach without wgmma.
    "mma_sync_fp16_tflops": ("mma.sync FP16", "#3d8c45"),
    "mma_sync_bf16_tflops": ("mma.sync BF16", "#8a5aa0"),
    "mma_sync_tf32_tflops": ("mma.sync TF32", "#4b6cc0"),
    "mma_sync_int8_tops": ("mma.sync INT8", "#d4a73a"),
    "fp64_tc_tflops": ("FP64 TC", "#6b3e26"),
}
DRAM_KEY, DRAM_COLOUR = "dram_gbps", "#3c3c3c"
OTHER_CEILING_COLOUR = "#592f0d"

# A stage that splits each fp32 product into several tensor-core products (Stage.fp32_products) has, on the fp32
# roofline, its own ceilings: that fraction of each peak it splits onto (Stage.split_peaks), drawn when its rows
# are there.  Colour by the peak divided.
SPLIT_COLOURS = {"fp16_tc_tflops": "#0b6e6e", "tf32_tc_tflops": "#4b4bb0"}
SPLIT_STAGES = tuple(s for s in STAGES if s.split_peaks)


def split_key(peak: str, stage: Stage) -> str:
    """The ceiling key of a split stage's share of a peak: "fp16_tc_tflops" -> "fp16_tc_over3_tflops"."""
    return peak.replace("_tflops", f"_over{stage.fp32_products}_tflops")


# One roofline per group of rows: each input dtype of its own, except that the tensor-core stages' dtypes are
# drawn by family (issue 7): fp16 and bf16 together, tf32 (fp32 inputs computed in TF32), int8 and uint8.
# Group -> (title, row filter).  A row may sit on two figures: a TF32 row is also an fp32-input row.
TC_FAMILIES: dict[str, tuple[str, Callable[[pd.DataFrame], pd.Series]]] = {
    "fp16_bf16": ("fp16 / bf16 tensor cores", lambda df: df["dtype"].isin(["fp16", "bf16"])),
    "tf32": ("tf32 tensor cores (fp32 inputs)", lambda df: df["precision"] == "tf32"),
    "int8": ("int8 / uint8 tensor cores", lambda df: df["dtype"].isin(["int8", "uint8"])),
}
_FAMILY_OF_DTYPE = {"fp16": "fp16_bf16", "bf16": "fp16_bf16", "int8": "int8", "uint8": "int8"}

# The ceilings that actually bound a group; in a dtype's figure the others are drawn fainter for context, in a
# tensor-core family's figure they are left out.
RELEVANT = {
    "fp32": {"fp32_fma_tflops", "tf32_tc_tflops", *(split_key(k, s) for s in SPLIT_STAGES for k in s.split_peaks)},
    "tf32": {"tf32_tc_tflops", "mma_sync_tf32_tflops"},
    "fp16_bf16": {"fp16_tc_tflops", "bf16_tc_tflops", "mma_sync_fp16_tflops", "mma_sync_bf16_tflops"},
    "int8": {"int8_tc_tops", "mma_sync_int8_tops"},
    "fp64": {"fp64_tc_tflops"},
}

STAGE_MARKERS = ("o", "s", "^", "D", "v", "<", ">", "h", "p", "d", "8", "H")
# Grey and pale yellow are left out of the stage colours: grey belongs to cuBLAS, yellow is unreadable.
STAGE_COLOURS = [c for i, c in enumerate(sns.color_palette("colorblind").as_hex()) if i not in (7, 8)]
BASELINE_STYLES = {"cublas": ("#000000", "*"), "cublas:tf32": ("#7a7a7a", "X"), "triton:tuned": ("#b5179e", "P")}
EXTRA_BASELINE_STYLES = (("#4d4d4d", "p"), ("#a0522d", "d"), ("#2f4f4f", "h"))
# Markers of a stage's variants: filled shapes (the points get a white edge, which would hide line markers), in
# the stage's colour, so a variant differs from its stage by shape.
VARIANT_MARKERS = ("s", "^", "v", "<", ">", "o")

PANELS = (("CUDA", "cuda"), ("Triton", "triton"), ("Gluon", "gluon"))
BACKEND_NAMES = {backend: title for title, backend in PANELS}
LINESTYLES = {"cuda": "-", "triton": "--", "gluon": ":", "cublas": "-"}


@dataclass(frozen=True)
class Style:
    colour: str
    marker: str
    label: str
    order: int


def series_styles(df: pd.DataFrame) -> dict[str, Style]:
    """Colour, marker and label for every stage and baseline; stages keyed by STAGES order so that a stage
    looks the same on every figure and every panel, whatever subset of the ladder a sweep covered."""
    styles: dict[str, Style] = {}
    known = [s.number for s in STAGES]
    present = set(df["stage"]) - {"baseline", ""}
    stages = known + sorted(present - set(known))
    titles = {s.number: s.slug.replace("_", " ") for s in STAGES}
    variants = sorted({(s, variant_of(s, i)) for s, i in zip(df["stage"], df["impl"]) if s in present} - {(s, "")
                       for s in present})
    for i, num in enumerate(stages):
        fallback = df.loc[df["stage"] == num, "stage_title"]
        name = titles.get(num) or (fallback.iloc[0] if len(fallback) else "")
        styles[num] = Style(STAGE_COLOURS[i % len(STAGE_COLOURS)], STAGE_MARKERS[i % len(STAGE_MARKERS)],
                            f"{num} {name}".strip(), 100 * i)
    taken = {(st.colour, st.marker) for st in styles.values()}
    for i, num in enumerate(stages):
        # A stage's variants keep its colour and take their own markers, so they read as one family; the
        # palette repeats after 8 stages, so a marker is only taken if no stage of that colour has it.
        colour = styles[num].colour
        free = [m for m in dict.fromkeys(VARIANT_MARKERS + STAGE_MARKERS) if (colour, m) not in taken]
        for j, (_, v) in enumerate(x for x in variants if x[0] == num):
            styles[f"{num}-{v}"] = Style(colour, free[j % len(free)], f"{styles[num].label}-{v}", 100 * i + 1 + j)
            taken.add((colour, free[j % len(free)]))
    baselines = sorted(set(df.loc[df["stage"] == "baseline", "impl"]) - set(BASELINE_STYLES))
    for j, impl in enumerate(list(BASELINE_STYLES) + baselines):
        colour, marker = BASELINE_STYLES.get(impl) or EXTRA_BASELINE_STYLES[j % len(EXTRA_BASELINE_STYLES)]
        styles[impl] = Style(colour, marker, impl, 100 * len(stages) + j)
    return styles


def plottable(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    """Rows that can sit on log axes: finite and positive in every named column."""
    ok = np.ones(len(df), dtype=bool)
    for col in cols:
        v = df[col].to_numpy(dtype=float)
        ok &= np.isfinite(v) & (v > 0)
    out = df[ok].copy()
    out["series"] = [series_key(s, i) for s, i in zip(out["stage"], out["impl"])]
    return out


def _of_group(df: pd.DataFrame, group: str) -> pd.DataFrame:
    if group in TC_FAMILIES:
        return df[TC_FAMILIES[group][1](df)]
    return df[df["dtype"] == group]


def roofline_groups(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(group, title) of every roofline the rows call for: the input dtypes outside the tensor-core families,
    then each family with rows."""
    if df is None or df.empty:
        return []
    df = prepare(df)
    plain = [d for d in dtype_order(df["dtype"]) if d not in _FAMILY_OF_DTYPE]
    return [(d, d) for d in plain] + [(g, title) for g, (title, keep) in TC_FAMILIES.items() if keep(df).any()]


def theme():
    return sns.axes_style("whitegrid"), sns.plotting_context("notebook", font_scale=0.85)


class PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of which ticks to label, but written 0.5, 10, 2000 rather than 5e-01."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:g}"


def plain_log_ticks(ax) -> None:
    # Readers compare TFLOP/s between points, which plain numbers make easier than exponents.
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
            axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))


def save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    return Path(path)


# --- ceilings -------------------------------------------------------------------------------------

def ceiling_values(ceilings: dict | None) -> list[tuple[str, str, str, float | None, float | None]]:
    """(key, label, colour, measured, datasheet) for every compute ceiling with at least one value."""
    measured = (ceilings or {}).get("measured") or {}
    datasheet = (ceilings or {}).get("datasheet") or {}
    # Bandwidths (DRAM, and the L2 / shared-memory ceilings of the hierarchical roofline) are slopes, not roofs.
    keys = list(CEILINGS) + sorted(k for k in (set(measured) | set(datasheet)) - set(CEILINGS) - {"source"}
                                   if not k.endswith("_gbps"))
    out = []
    for key in keys:
        m, d = positive(measured.get(key)), positive(datasheet.get(key))
        if m is None and d is None:
            continue
        label, colour = CEILINGS.get(key, (key.replace("_", " "), OTHER_CEILING_COLOUR))
        out.append((key, label, colour, m, d))
    return out


def split_ceilings(ceilings: dict | None, stage: Stage) -> list[tuple[str, str, str, float | None, float | None]]:
    """A split stage's ceilings, in ceiling_values()'s form: its share of each tensor-core peak it splits onto."""
    n, out = stage.fp32_products, []
    for key, label, _, m, d in ceiling_values(ceilings):
        if key in stage.split_peaks:
            out.append((split_key(key, stage), f"{label} / {n} ({stage.split_peaks[key]})",
                        SPLIT_COLOURS.get(key, OTHER_CEILING_COLOUR), m / n if m else None, d / n if d else None))
    return out


def _dram(ceilings: dict | None) -> tuple[float | None, float | None]:
    c = ceilings or {}
    return positive((c.get("measured") or {}).get(DRAM_KEY)), positive((c.get("datasheet") or {}).get(DRAM_KEY))


def _ridge(peak_tflops: float, gbps: float | None) -> float | None:
    # TFLOP/s = GB/s * FLOP/byte / 1000, so the slope meets a ceiling at 1000 * peak / bandwidth.
    return 1000.0 * peak_tflops / gbps if gbps else None


def _limits(points: pd.DataFrame, ceils, dram) -> tuple[tuple[float, float], tuple[float, float]]:
    xs = list(points["intensity"])
    ys = list(points["tflops"])
    for _, _, _, m, d in ceils:
        ys += [v for v in (m, d) if v]
        xs += [r for r in (_ridge(m, dram[0]) if m else None, _ridge(d, dram[1]) if d else None) if r]
    return (min(xs) / 3, max(xs) * 3), (min(points["tflops"]) / 3, max(ys) * 2.5)


def _label_sides(ceils) -> dict[str, str]:
    """Which side of its line each ceiling label sits on, as a matplotlib va ("top" hangs it below).

    Below by default, because the datasheet line of the same unit is drawn just above the measured one;
    when two units nearly coincide (FP16 700, BF16 720) the upper one's label moves above its line."""
    sides: dict[str, str] = {}
    prev: tuple[float, str] | None = None
    for key, _, _, m, d in sorted(ceils, key=lambda c: c[3] or c[4]):
        v = m or d
        crowded = prev is not None and v / prev[0] < 1.35 and sides[prev[1]] == "top"
        sides[key] = "bottom" if crowded else "top"
        prev = (v, key)
    if prev is not None:
        # The slope stops at the highest ceiling, so above that line is the one place it never crosses.
        sides[prev[1]] = "bottom"
    return sides


def _draw_dram(ax, ceils, dram, xlim, ylim) -> None:
    top = max((m or d) for _, _, _, m, d in ceils) if ceils else ylim[1]
    for gbps, ls, lw in ((dram[0], "-", 1.6), (dram[1], "--", 0.9)):
        if gbps:
            x_end = min(_ridge(top, gbps), xlim[1])
            ax.plot([xlim[0], x_end], [gbps * xlim[0] / 1000, gbps * x_end / 1000], ls, color=DRAM_COLOUR, lw=lw)
    gbps = dram[0] or dram[1]
    if gbps:
        # Anchor where the slope is inside the view; the text hangs below-right, clear of the rising line.
        x = min(max(xlim[0] * 1.6, 1000 * ylim[0] * 1.6 / gbps), xlim[1] / 4)
        ax.annotate(f"DRAM {gbps:,.0f} GB/s", (x, gbps * x / 1000), xytext=(6, -2), textcoords="offset points",
                    va="top", fontsize=7.5, color=DRAM_COLOUR)


def _label_ceiling(ax, key, label, colour, m, d, dram, xlim, va, alpha) -> None:
    unit = "TOP/s" if key.endswith("_tops") else "TFLOP/s"
    text = f"{label} {m:,.0f} {unit}" if m else f"{label} (datasheet {d:,.0f})"
    # Labelled just right of the ridge, because the best kernels crowd the far right under the ceilings;
    # but right-aligned at the edge when the ridge is too far right for the text to fit inside the axes.
    x = max((_ridge(m, dram[0]) if m else _ridge(d, dram[1])) or xlim[0], xlim[0])
    at_edge = np.log(x / xlim[0]) / np.log(xlim[1] / xlim[0]) > 0.6
    ax.annotate(text, (xlim[1] if at_edge else x, m or d), xytext=(-3 if at_edge else 6, 2 if va == "bottom" else -2),
                textcoords="offset points", ha="right" if at_edge else "left", va=va, fontsize=7.5,
                color=colour, alpha=alpha)


def _draw_ceilings(ax, ceils, dram, group: str, xlim, ylim) -> None:
    _draw_dram(ax, ceils, dram, xlim, ylim)
    sides = _label_sides(ceils)
    relevant = RELEVANT.get(group, set())
    for key, label, colour, m, d in ceils:
        strong = key in relevant or not relevant
        alpha = 0.95 if strong else 0.5
        for v, gbps, ls, lw in ((m, dram[0], "-", 1.6 if strong else 1.1), (d, dram[1], "--", 0.9)):
            if v:
                x0 = max(_ridge(v, gbps) or xlim[0], xlim[0])
                ax.plot([x0, xlim[1]], [v, v], ls, color=colour, lw=lw, alpha=alpha)
        _label_ceiling(ax, key, label, colour, m, d, dram, xlim, sides[key], alpha)


# --- points ---------------------------------------------------------------------------------------

def _draw_points(ax, points: pd.DataFrame, styles: dict[str, Style]) -> None:
    for key, g in points.groupby("series", sort=False):
        st = styles[key]
        ok, bad = g[g["passed"]], g[~g["passed"]]
        size = 110 if st.marker == "*" else 55
        ax.scatter(ok["intensity"], ok["tflops"], s=size, marker=st.marker, color=st.colour,
                   edgecolors="white", linewidths=0.6, zorder=3)
        ax.scatter(bad["intensity"], bad["tflops"], s=size, marker=st.marker, facecolors="none",
                   edgecolors=st.colour, linewidths=1.4, zorder=3)


def _legend_handles(points: pd.DataFrame, styles: dict[str, Style], with_ceilings: bool) -> list[Line2D]:
    keys = sorted(set(points["series"]), key=lambda k: styles[k].order)
    handles = [Line2D([], [], ls="", marker=styles[k].marker, color=styles[k].colour,
                      markersize=10 if styles[k].marker == "*" else 7, label=styles[k].label) for k in keys]
    if (~points["passed"]).any():
        handles.append(Line2D([], [], ls="", marker="o", markerfacecolor="none", markeredgecolor="#555555",
                              markersize=7, label=f"hollow: failed check ({int((~points['passed']).sum())})"))
    if with_ceilings:
        handles += [Line2D([], [], color="#555555", lw=1.6, label="measured ceiling"),
                    Line2D([], [], color="#555555", lw=0.9, ls="--", label="datasheet ceiling")]
    return handles


def roofline(df: pd.DataFrame, ceilings: dict | None, dtype: str, path: Path) -> Path | None:
    """Roofline of one input dtype, or of one tensor-core family (TC_FAMILIES): the CUDA, Triton and Gluon
    forms side by side (each panel that has rows), cuBLAS on every panel for reference."""
    if df is None or df.empty:
        return None
    points = plottable(_of_group(prepare(df), dtype), "intensity", "tflops")
    if points.empty:
        return None
    styles = series_styles(prepare(df))
    ceils, dram = ceiling_values(ceilings), _dram(ceilings)
    if dtype == "fp32":
        ceils += [c for s in SPLIT_STAGES if (points["stage"] == s.number).any() for c in split_ceilings(ceilings, s)]
    if dtype in TC_FAMILIES:
        ceils = [c for c in ceils if c[0] in RELEVANT[dtype]]
    xlim, ylim = _limits(points, ceils, dram)
    unit = "TOP/s" if dtype.startswith(("int", "uint")) else "TFLOP/s"
    axes_rc, ctx_rc = theme()
    with axes_rc, ctx_rc:
        panels = [p for p in PANELS if p[1] in set(points["backend"])] or list(PANELS[:1])
        fig = Figure(figsize=(2.6 + 5.2 * len(panels), 5.4), layout="constrained")
        axes = fig.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False)[0]
        for ax, (title, backend) in zip(axes, panels):
            panel = points[points["backend"].isin({backend, "cublas"})]
            _draw_ceilings(ax, ceils, dram, dtype, xlim, ylim)
            _draw_points(ax, panel, styles)
            what = TC_FAMILIES[dtype][0] if dtype in TC_FAMILIES else dtype
            ax.set(xscale="log", yscale="log", xlim=xlim, ylim=ylim, title=f"{title} ({what}, cuBLAS for reference)",
                   xlabel="arithmetic intensity (FLOP/byte, compulsory traffic)")
            plain_log_ticks(ax)
            if panel.empty:
                ax.text(0.5, 0.5, f"no {title} rows", transform=ax.transAxes, ha="center", color="#777777")
        axes[0].set_ylabel(unit)
        fig.legend(handles=_legend_handles(points, styles, bool(ceils or any(dram))), loc="outside right upper",
                   frameon=False, fontsize=8.5)
        if not ceils and not any(dram):
            fig.suptitle("no ceilings measured", fontsize=9, color="#777777")
        return save(fig, path)


# --- TFLOP/s vs size ------------------------------------------------------------------------------

def _size_legend(points: pd.DataFrame, styles: dict[str, Style]) -> list[Line2D]:
    keys = sorted(set(points["series"]), key=lambda k: styles[k].order)
    handles = [Line2D([], [], color=styles[k].colour, marker=styles[k].marker, label=styles[k].label) for k in keys]
    backends = [b for b in BACKEND_NAMES if b in set(points["backend"])]
    handles += [Line2D([], [], color="#555555", ls=LINESTYLES[b], label=BACKEND_NAMES[b]) for b in backends]
    if (~points["passed"]).any():
        handles.append(Line2D([], [], ls="", marker="o", markerfacecolor="none", markeredgecolor="#555555",
                              label="hollow: failed check"))
    return handles


def _draw_size_lines(ax, g: pd.DataFrame, styles: dict[str, Style]) -> None:
    for (key, backend), s in g.groupby(["series", "backend"], sort=False):
        st = styles[key]
        s = s.sort_values("M")
        ok, bad = s[s["passed"]], s[~s["passed"]]
        lw = 2.2 if backend == "cublas" else 1.5
        ax.plot(ok["M"], ok["tflops"], LINESTYLES.get(backend, ":"), color=st.colour, marker=st.marker, lw=lw,
                markersize=9 if st.marker == "*" else 5.5)
        ax.plot(bad["M"], bad["tflops"], ls="", marker=st.marker, markerfacecolor="none",
                markeredgecolor=st.colour, markersize=7)


def tflops_vs_size(df: pd.DataFrame, path: Path) -> Path | None:
    """TFLOP/s against the side of square problems, one panel per dtype."""
    if df is None or df.empty:
        return None
    d = prepare(df)
    square = d[(d["shape_set"] == "square") & (d["M"] == d["N"]) & (d["N"] == d["K"])]
    points = plottable(square, "M", "tflops")
    if points.empty:
        return None
    styles = series_styles(d)
    dtypes = dtype_order(points["dtype"])
    axes_rc, ctx_rc = theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(5.2 * len(dtypes) + 2.6, 4.6), layout="constrained")
        axes = fig.subplots(1, len(dtypes), squeeze=False)[0]
        for ax, dt in zip(axes, dtypes):
            g = points[points["dtype"] == dt]
            _draw_size_lines(ax, g, styles)
            sizes = sorted(set(g["M"].astype(int)))
            ax.set(xscale="log", yscale="log", title=dt, xlabel="M = N = K",
                   xlim=(min(sizes) / 1.5, max(sizes) * 1.5))
            ax.set_xscale("log", base=2)
            plain_log_ticks(ax)
            ax.set_xticks(sizes, [str(s) for s in sizes])
            ax.xaxis.set_minor_locator(NullLocator())
        axes[0].set_ylabel("TFLOP/s")
        fig.legend(handles=_size_legend(points, styles), loc="outside right upper", frameon=False, fontsize=8.5)
        return save(fig, path)


# --- the ladder -----------------------------------------------------------------------------------

def ladder(df: pd.DataFrame, path: Path, dtype: str = "fp32", sides: tuple[int, ...] = (4096, 8192)) -> Path | None:
    """TFLOP/s by stage at square sizes: one bar group per stage (a bar per backend), cuBLAS as a line.  A
    stage with variants gets a bar group per variant, labelled with the variant's name."""
    if df is None or df.empty:
        return None
    d = prepare(df)
    d = d[(d["dtype"] == dtype) & (d["M"] == d["N"]) & (d["N"] == d["K"]) & d["passed"]]
    d = d.assign(series=[series_key(s, i) for s, i in zip(d["stage"], d["impl"])])
    sides = tuple(n for n in sides if (d["M"] == n).any())
    order = series_styles(d)
    stages = sorted(set(d.loc[d["stage"].isin({s.number for s in STAGES}), "series"]), key=lambda k: order[k].order)
    if not sides or not stages:
        return None
    varied = {k.split("-", 1)[0] for k in stages if "-" in k}
    slugs = {s.number: s.slug for s in STAGES}
    ticks = [k if k.split("-", 1)[0] not in varied else
             f"{k.split('-', 1)[0]}\n{k.split('-', 1)[1] if '-' in k else slugs[k]}" for k in stages]
    backends = [b for b in BACKEND_NAMES if (d["backend"] == b).any()]
    palette = dict(zip(BACKEND_NAMES, sns.color_palette("colorblind", 3).as_hex()))
    axes_rc, ctx_rc = theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(1.2 + 0.75 * len(stages) * len(sides) + 2, 4.6), layout="constrained")
        axes = fig.subplots(1, len(sides), sharey=True, squeeze=False)[0]
        width = 0.8 / max(len(backends), 1)
        for ax, n in zip(axes, sides):
            at = d[d["M"] == n]
            for j, b in enumerate(backends):
                ys = [at.loc[(at["series"] == s) & (at["backend"] == b), "tflops"] for s in stages]
                xs = [i + (j - (len(backends) - 1) / 2) * width for i in range(len(stages))]
                vals = [y.iloc[-1] if len(y) else 0.0 for y in ys]
                bars = ax.bar(xs, vals, width, color=palette[b], label=BACKEND_NAMES[b])
                for bar, v in zip(bars, vals):
                    if v:
                        ax.annotate(f"{v:.3g}", (bar.get_x() + bar.get_width() / 2, v), xytext=(0, 1),
                                    textcoords="offset points", ha="center", va="bottom", fontsize=6.5, rotation=90)
            base = at.loc[(at["impl"] == "cublas"), "tflops"]
            if len(base):
                ax.axhline(base.iloc[-1], color="#000000", lw=1.4, label="cuBLAS")
                ax.annotate(f"cuBLAS {base.iloc[-1]:.3g}", (0, base.iloc[-1]), xytext=(2, 2), textcoords="offset points",
                            xycoords=("axes fraction", "data"), fontsize=7.5)
            ax.set_xticks(range(len(stages)), ticks)
            ax.set(title=f"{dtype} {n}x{n}x{n}", xlabel="stage")
        axes[0].set_ylabel("TFLOP/s")
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside right upper", frameon=False, fontsize=8.5)
        return save(fig, path)
