"""The report's figures: roofline, TFLOP/s vs size, the ladder, and stage 14's accuracy figures (error vs K,
the speed/accuracy Pareto plot, seed 002's Figure 8).

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

from study.stages import STAGES

NUMERIC = ("M", "N", "K", "alpha", "beta", "tflops", "intensity")

# Compute ceilings in a fixed order with fixed, dark colours, so that they never read as stage markers
# (which use the bright colourblind palette) and look the same on every figure.
CEILINGS: dict[str, tuple[str, str]] = {
    "fp32_fma_tflops": ("FP32 FMA", "#8c0800"),
    "tf32_tc_tflops": ("TF32 TC", "#001c7f"),
    "fp16_tc_tflops": ("FP16 TC", "#12711c"),
    "bf16_tc_tflops": ("BF16 TC", "#591e71"),
    "int8_tc_tops": ("INT8 TC", "#b8850a"),
    # The mma.sync issue peaks (study/kernels/mma_peak.cu): what stages 10-13 can reach without wgmma.
    "mma_sync_fp16_tflops": ("mma.sync FP16", "#3d8c45"),
    "mma_sync_bf16_tflops": ("mma.sync BF16", "#8a5aa0"),
    "mma_sync_tf32_tflops": ("mma.sync TF32", "#4b6cc0"),
    "mma_sync_int8_tops": ("mma.sync INT8", "#d4a73a"),
    "fp64_tc_tflops": ("FP64 TC", "#6b3e26"),
}
DRAM_KEY, DRAM_COLOUR = "dram_gbps", "#3c3c3c"
OTHER_CEILING_COLOUR = "#592f0d"

# Stage 14 (seed 002) computes an fp32 product as three tensor-core products of split operands, so its
# compute ceiling is a third of the measured tensor-core peak: seed 002, Section 4.4.1 and Figure 7 ("dividing
# the theoretical peak performance of FP16-TC ... by 3").  Drawn on the fp32 roofline when stage-14 rows are
# there: (source ceiling) -> (key, label, colour).  Seed 002's other bound, shared-memory bandwidth over the
# operand bytes per FLOP of a register blocking (Sections 3 and 4.4.1), needs a measured shared-memory
# bandwidth; ceilings.json has none (only a datasheet-style SMs x 128 B/clk figure could be had), so it is left out.
TCEC_STAGE = "14"
SPLIT_CEILINGS: dict[str, tuple[str, str, str]] = {
    "fp16_tc_tflops": ("fp16_tc_over3_tflops", "FP16 TC / 3 (TCEC)", "#0b6e6e"),
    "tf32_tc_tflops": ("tf32_tc_over3_tflops", "TF32 TC / 3 (3xTF32)", "#4b4bb0"),
}

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
    "fp32": {"fp32_fma_tflops", "tf32_tc_tflops", *(k for k, _, _ in SPLIT_CEILINGS.values())},
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
# Markers of a stage's variants (stage 14's markidis, nocorr, tf32): filled shapes (the points get a white
# edge, which would hide line markers), in the stage's colour, so a variant differs from its stage by shape.
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


def as_bool(s: pd.Series) -> pd.Series:
    if s.dtype == bool:
        return s
    return s.astype(str).str.strip().str.lower().isin({"true", "1", "yes"})


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Coerce the columns the figures use, so a frame read any way (all-str, or by pandas' guesses) works."""
    df = df.copy()
    for col in NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df else np.nan
    for col in ("stage", "impl", "backend", "dtype", "precision", "shape_set", "stage_title"):
        df[col] = df[col].fillna("").astype(str) if col in df else ""
    # A stage read back as the integer 1 must still match "01".
    df["stage"] = df["stage"].map(lambda s: s.zfill(2) if s.isdigit() else s)
    df["passed"] = as_bool(df["passed"]) if "passed" in df else False
    return df


_STAGE_KEYS = {s.number: s.key for s in STAGES}


def variant_of(stage: str, impl: str) -> str:
    """The variant suffix of a stage's implementation: "cuda:14_tcec-markidis" -> "markidis", and "" for the
    stage's main kernel (a stage may register several variants per backend, as stage 14 does)."""
    key = _STAGE_KEYS.get(stage)
    body = impl.split(":", 1)[-1]
    return body[len(key):].lstrip("-_") if key and body.startswith(key) else ""


def series_key(stage: str, impl: str) -> str:
    if stage == "baseline":
        return impl
    variant = variant_of(stage, impl)
    return f"{stage}-{variant}" if variant else stage


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


def _plottable(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
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


def _theme():
    return sns.axes_style("whitegrid"), sns.plotting_context("notebook", font_scale=0.85)


class _PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of which ticks to label, but written 0.5, 10, 2000 rather than 5e-01."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:g}"


def _plain_log_ticks(ax) -> None:
    # Readers compare TFLOP/s between points, which plain numbers make easier than exponents.
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log":
            axis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
            axis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    return Path(path)


# --- ceilings -------------------------------------------------------------------------------------

def positive(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) and v > 0 else None


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


def split_ceilings(ceilings: dict | None) -> list[tuple[str, str, str, float | None, float | None]]:
    """Stage 14's ceilings, in ceiling_values()'s form: a third of each tensor-core peak it splits onto."""
    out = []
    for key, _, _, m, d in ceiling_values(ceilings):
        if key in SPLIT_CEILINGS:
            new_key, label, colour = SPLIT_CEILINGS[key]
            out.append((new_key, label, colour, m / 3 if m else None, d / 3 if d else None))
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
    points = _plottable(_of_group(prepare(df), dtype), "intensity", "tflops")
    if points.empty:
        return None
    styles = series_styles(prepare(df))
    ceils, dram = ceiling_values(ceilings), _dram(ceilings)
    if dtype == "fp32" and (points["stage"] == TCEC_STAGE).any():
        ceils += split_ceilings(ceilings)
    if dtype in TC_FAMILIES:
        ceils = [c for c in ceils if c[0] in RELEVANT[dtype]]
    xlim, ylim = _limits(points, ceils, dram)
    unit = "TOP/s" if dtype.startswith(("int", "uint")) else "TFLOP/s"
    axes_rc, ctx_rc = _theme()
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
            _plain_log_ticks(ax)
            if panel.empty:
                ax.text(0.5, 0.5, f"no {title} rows", transform=ax.transAxes, ha="center", color="#777777")
        axes[0].set_ylabel(unit)
        fig.legend(handles=_legend_handles(points, styles, bool(ceils or any(dram))), loc="outside right upper",
                   frameon=False, fontsize=8.5)
        if not ceils and not any(dram):
            fig.suptitle("no ceilings measured", fontsize=9, color="#777777")
        return _save(fig, path)


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


def dtype_order(dtypes) -> list[str]:
    pref = ["fp32", "tf32", "fp16", "bf16", "fp8", "int8"]
    return sorted(set(dtypes), key=lambda d: (pref.index(d) if d in pref else len(pref), d))


def tflops_vs_size(df: pd.DataFrame, path: Path) -> Path | None:
    """TFLOP/s against the side of square problems, one panel per dtype."""
    if df is None or df.empty:
        return None
    d = prepare(df)
    square = d[(d["shape_set"] == "square") & (d["M"] == d["N"]) & (d["N"] == d["K"])]
    points = _plottable(square, "M", "tflops")
    if points.empty:
        return None
    styles = series_styles(d)
    dtypes = dtype_order(points["dtype"])
    axes_rc, ctx_rc = _theme()
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
            _plain_log_ticks(ax)
            ax.set_xticks(sizes, [str(s) for s in sizes])
            ax.xaxis.set_minor_locator(NullLocator())
        axes[0].set_ylabel("TFLOP/s")
        fig.legend(handles=_size_legend(points, styles), loc="outside right upper", frameon=False, fontsize=8.5)
        return _save(fig, path)


# --- the ladder -----------------------------------------------------------------------------------

def ladder(df: pd.DataFrame, path: Path, dtype: str = "fp32", sides: tuple[int, ...] = (4096, 8192)) -> Path | None:
    """TFLOP/s by stage at square sizes: one bar group per stage (a bar per backend), cuBLAS as a line.  A
    stage with variants (stage 14) gets a bar group per variant, labelled with the variant's name."""
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
    axes_rc, ctx_rc = _theme()
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
        return _save(fig, path)


# --- stage 14: accuracy ---------------------------------------------------------------------------

def pareto_front(points: pd.DataFrame, x: str = "tflops", y: str = "relerr") -> pd.Series:
    """True for each point that no other point beats: none has at least its `x` (TFLOP/s, more is better) and
    at most its `y` (error, less is better) while being strictly better in one.  Non-finite points are never
    on the front."""
    xs, ys = points[x].to_numpy(dtype=float), points[y].to_numpy(dtype=float)
    ok = np.isfinite(xs) & np.isfinite(ys)
    on = []
    for i in range(len(xs)):
        beaten = ok & (xs >= xs[i]) & (ys <= ys[i]) & ((xs > xs[i]) | (ys < ys[i]))
        on.append(bool(ok[i] and not beaten.any()))
    return pd.Series(on, index=points.index, dtype=bool)


def method_family(stage: str, method: str) -> str:
    """What a method computes, whatever its backend: a stage-14 variant ("14 tcec", "14 markidis") or the
    baseline's own name; colours follow the family, line styles the backend."""
    if stage == "baseline" or not stage:
        return method
    slug = _STAGE_KEYS.get(stage, stage).split("_", 1)[-1]
    return f"{stage} {variant_of(stage, method) or slug}"


# Figure 8's cuBLAS batched SGEMM (torch.bmm) is the same library and precision as the `cublas` rows: same look.
FAMILY_ALIASES = {"cublas:bmm": "cublas"}


def _family_styles(families) -> dict[str, tuple[str, str]]:
    """(colour, marker) per family: the baselines of study-wide figures keep their colours and markers."""
    fams = sorted(set(families), key=lambda f: (f in BASELINE_STYLES or f.startswith(("cublas", "triton")), f))
    palette = STAGE_COLOURS + [c for c, _ in EXTRA_BASELINE_STYLES]
    out, i = {}, 0
    for f in fams:
        if FAMILY_ALIASES.get(f, f) in BASELINE_STYLES:
            out[f] = BASELINE_STYLES[FAMILY_ALIASES.get(f, f)]
        else:
            out[f] = (palette[i % len(palette)], STAGE_MARKERS[i % len(STAGE_MARKERS)])
            i += 1
    return out


def _mark_nonfinite(ax, xs) -> None:
    """A method that produced NaN/inf has no error to plot: an x on the panel's top edge says it broke."""
    from matplotlib.transforms import blended_transform_factory
    if len(xs):
        ax.plot(list(xs), [0.97] * len(xs), ls="", marker="x", color="#b31d28", ms=7, mew=1.6,
                transform=blended_transform_factory(ax.transData, ax.transAxes), clip_on=False, zorder=4)


def accuracy_vs_k(acc: pd.DataFrame, path: Path, distributions=("randn", "uniform", "wide")) -> Path | None:
    """Error against K, one column of panels per input distribution: relative Frobenius error on top, max
    elementwise relative error below, log scales, a line per method (colour: what it computes; line style:
    backend).  Methods that produced NaN/inf are marked on the top edge."""
    if acc is None or acc.empty:
        return None
    acc = acc[acc["error"].fillna("") == ""]
    dists = [d for d in distributions if (acc["distribution"] == d).any()] + \
        sorted(set(acc["distribution"]) - set(distributions))
    if not dists:
        return None
    acc = acc.assign(family=[method_family(s, m) for s, m in zip(acc["stage"], acc["method"])])
    styles = _family_styles(acc["family"])
    metrics = (("relerr", "relative Frobenius error"), ("max_relerr", "max elementwise relative error"))
    axes_rc, ctx_rc = _theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(2.8 + 4.4 * len(dists), 8.0), layout="constrained")
        axes = fig.subplots(2, len(dists), sharex=True, squeeze=False)
        for col, dist in enumerate(dists):
            g = acc[acc["distribution"] == dist]
            for row, (metric, _) in enumerate(metrics):
                ax = axes[row][col]
                for (method, backend, family), s in g.groupby(["method", "backend", "family"], sort=False):
                    s = s.sort_values("K")
                    v = s[metric].to_numpy(dtype=float)
                    ok = np.isfinite(v) & (v > 0)
                    colour, marker = styles[family]
                    ax.plot(s["K"][ok], v[ok], LINESTYLES.get(backend, "-"), color=colour, marker=marker,
                            ms=4.5, lw=1.3)
                    _mark_nonfinite(ax, s["K"][~np.isfinite(v)])
                ks = sorted(set(g["K"].dropna().astype(int)))
                ax.set_yscale("log")
                ax.set_xscale("log", base=2)
                if ks:
                    ax.set_xticks(ks, [str(k) for k in ks])
                    ax.xaxis.set_minor_locator(NullLocator())
            sizes = ", ".join(str(m) for m in sorted(set(g["M"].dropna().astype(int))))
            axes[0][col].set_title(f"{dist} inputs")
            axes[1][col].set_xlabel(f"K (M = N = {sizes})")
        for row, (_, label) in enumerate(metrics):
            axes[row][0].set_ylabel(label)
        handles = [Line2D([], [], color=styles[f][0], marker=styles[f][1], label=f) for f in styles]
        names = {"cuda": "CUDA, cuBLAS", "triton": "Triton", "gluon": "Gluon"}
        backends = [b for b in names if (acc["backend"] == b).any() or (b == "cuda" and (acc["backend"] == "cublas").any())]
        handles += [Line2D([], [], color="#555555", ls=LINESTYLES[b], label=names[b]) for b in backends]
        handles.append(Line2D([], [], ls="", marker="x", color="#b31d28", mew=1.6, label="NaN/inf in the result"))
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return _save(fig, path)


def pareto(points: pd.DataFrame, path: Path) -> Path | None:
    """Speed against accuracy: TFLOP/s across, relative error up (log); lower right is better.  Each point is
    labelled with its implementation; the Pareto front (pareto_front()) is the stepped line."""
    if points is None or points.empty:
        return None
    pts = _plottable(prepare(points).assign(relerr=pd.to_numeric(points["relerr"], errors="coerce")),
                     "tflops", "relerr")
    if pts.empty:
        return None
    pts = pts.assign(family=[method_family(s, m) for s, m in zip(pts["stage"], pts["impl"])])
    styles = _family_styles(pts["family"])
    front = pts[pareto_front(pts)].sort_values("tflops")
    axes_rc, ctx_rc = _theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(10.5, 6.0), layout="constrained")
        ax = fig.subplots()
        ax.plot(front["tflops"], front["relerr"], drawstyle="steps-pre", color="#555555", lw=1.2, zorder=1)
        for n, (_, r) in enumerate(pts.sort_values("tflops").iterrows()):
            colour, marker = styles[r["family"]]
            face = colour if r["backend"] in ("cuda", "cublas") else "white"   # hollow: Triton and Gluon
            ax.scatter([r["tflops"]], [r["relerr"]], s=70, marker=marker, facecolors=face, edgecolors=colour,
                       linewidths=1.4, zorder=3)
            # Neighbours in speed often share an error level (the TCEC kernels of three backends): labels
            # alternate above and below so they do not print over each other.
            ax.annotate(r["impl"], (r["tflops"], r["relerr"]), xytext=(5, 4 if n % 2 == 0 else -11),
                        textcoords="offset points", fontsize=7, color=colour)
        ax.set(xscale="log", yscale="log", xlabel="TFLOP/s (results.csv)", ylabel="relative Frobenius error")
        ax.xaxis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
        ax.xaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))
        ax.annotate("better: lower right", xy=(0.98, 0.03), xycoords="axes fraction", ha="right", fontsize=8,
                    color="#555555")
        handles = [Line2D([], [], color="#555555", lw=1.2, label="Pareto front")]
        handles += [Line2D([], [], ls="", marker=styles[f][1], color=styles[f][0], label=f) for f in styles]
        handles += [Line2D([], [], ls="", marker="o", markerfacecolor="#555555", markeredgecolor="#555555",
                           label="filled: CUDA / cuBLAS"),
                    Line2D([], [], ls="", marker="o", markerfacecolor="white", markeredgecolor="#555555",
                           label="hollow: Triton / Gluon")]
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return _save(fig, path)


def fig8(rows: pd.DataFrame, path: Path, references: list[tuple[str, float, str]]) -> Path | None:
    """Seed 002's Figure 8 on this GPU: TFLOP/s and max relative error against k for the batched products,
    with horizontal reference lines (label, TFLOP/s, line style), e.g. the paper's A100 figure."""
    if rows is None or rows.empty:
        return None
    rows = rows[rows["error"].fillna("") == ""]
    if rows.empty:
        return None
    rows = rows.assign(family=[method_family(s, m) for s, m in zip(rows["stage"], rows["method"])])
    styles = _family_styles(rows["family"])
    axes_rc, ctx_rc = _theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(12.5, 4.6), layout="constrained")
        ax_t, ax_e = fig.subplots(1, 2, sharex=True)
        for (method, backend, family), s in rows.groupby(["method", "backend", "family"], sort=False):
            s = s.sort_values("K")
            colour, marker = styles[family]
            kw = dict(color=colour, marker=marker, ls=LINESTYLES.get(backend, "-"), lw=1.4, ms=5, label=method)
            t = s["tflops"].to_numpy(dtype=float)
            ax_t.plot(s["K"][np.isfinite(t)], t[np.isfinite(t)], **kw)
            e = s["max_relerr"].to_numpy(dtype=float)
            ok = np.isfinite(e) & (e > 0)
            ax_e.plot(s["K"][ok], e[ok], **kw)
            _mark_nonfinite(ax_e, s["K"][np.isinf(e)])
        for label, value, ls in references:
            ax_t.axhline(value, color="#555555", ls=ls, lw=1.0)
            ax_t.annotate(label, (0.01, value), xycoords=("axes fraction", "data"), xytext=(0, 2),
                          textcoords="offset points", fontsize=7, color="#555555")
        ks = sorted(set(rows["K"].dropna().astype(int)))
        for ax in (ax_t, ax_e):
            ax.set_xscale("log", base=2)
            ax.set_xticks(ks, [str(k) for k in ks])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.set_xlabel("k (each product 1024 x k by k x 1024)")
        ax_t.set(ylabel="TFLOP/s", title="throughput", ylim=(0, None))
        ax_e.set(yscale="log", ylabel="max elementwise relative error", title="accuracy")
        handles, _ = ax_t.get_legend_handles_labels()
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return _save(fig, path)
