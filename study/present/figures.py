"""What every figure of the study shares: the compute ceilings (names, colours, measured and datasheet values,
and a split stage's share of them), the roofline's geometry (DRAM slope, ridge, axis limits), the styles of
the static (matplotlib) figures (a colour and marker per series), and their saving.  The interactive figures
are in interactive.py; the static ones that remain are the hierarchical rooflines (hierarchy.py) and the
accuracy study's (tcec_figures.py).

Matplotlib objects are built without pyplot, so rendering never touches a display or a global backend.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from study.core.stages import STAGES, Stage
from study.measure.frame import positive, series_key, variant_of

# Compute ceilings in a fixed order with fixed, dark colours, so that they never read as stage markers
# (which use the bright colourblind palette) and look the same on every figure.
CEILINGS: dict[str, tuple[str, str]] = {
    "fp32_fma_tflops": ("FP32 FMA", "#8c0800"),
    "tf32_tc_tflops": ("TF32 TC", "#001c7f"),
    "fp16_tc_tflops": ("FP16 TC", "#12711c"),
    "bf16_tc_tflops": ("BF16 TC", "#591e71"),
    "int8_tc_tops": ("INT8 TC", "#b8850a"),
    "fp8_tc_tflops": ("FP8 TC", "#8f2d56"),
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


def dram_slopes(ceilings: dict | None) -> tuple[float | None, float | None]:
    c = ceilings or {}
    return positive((c.get("measured") or {}).get(DRAM_KEY)), positive((c.get("datasheet") or {}).get(DRAM_KEY))


def ridge(peak_tflops: float, gbps: float | None) -> float | None:
    # TFLOP/s = GB/s * FLOP/byte / 1000, so the slope meets a ceiling at 1000 * peak / bandwidth.
    return 1000.0 * peak_tflops / gbps if gbps else None


def limits(points: pd.DataFrame, ceils, dram) -> tuple[tuple[float, float], tuple[float, float]]:
    xs = list(points["intensity"])
    ys = list(points["tflops"])
    for _, _, _, m, d in ceils:
        ys += [v for v in (m, d) if v]
        xs += [r for r in (ridge(m, dram[0]) if m else None, ridge(d, dram[1]) if d else None) if r]
    return (min(xs) / 3, max(xs) * 3), (min(points["tflops"]) / 3, max(ys) * 2.5)
