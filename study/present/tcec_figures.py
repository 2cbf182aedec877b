"""Stage 15's figures (seed 002's TCEC): error against K, speed against accuracy with its Pareto front, and
seed 002's Figure 8 on this GPU.  study/present/tcec.py puts them on the report's stage-15 section.

Styles follow study/present/figures.py: the baselines keep their colours and markers, line styles the backend.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory
from matplotlib.ticker import NullLocator

from study.core.stages import STAGES
from study.measure.frame import prepare, variant_of
from study.present.figures import (BASELINE_STYLES, EXTRA_BASELINE_STYLES, LINESTYLES, STAGE_COLOURS, STAGE_MARKERS,
                                   PlainLogFormatter, plottable, save, theme)

_SLUGS = {s.number: s.slug for s in STAGES}


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
    """What a method computes, whatever its backend: a stage-15 variant ("14 tcec", "14 markidis") or the
    baseline's own name; colours follow the family, line styles the backend."""
    if stage == "baseline" or not stage:
        return method
    return f"{stage} {variant_of(stage, method) or _SLUGS.get(stage, stage)}"


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
    if len(xs):
        ax.plot(list(xs), [0.97] * len(xs), ls="", marker="x", color="#b31d28", ms=7, mew=1.6,
                transform=blended_transform_factory(ax.transData, ax.transAxes), clip_on=False, zorder=4)


# Panels of accuracy_vs_k() side by side before they wrap to another row.
PANELS_PER_ROW = 4


def accuracy_vs_k(acc: pd.DataFrame, path: Path, distributions=("randn", "uniform", "wide"),
                  distribution_labels: dict | None = None) -> Path | None:
    """Relative Frobenius error against K, one panel per input distribution (PANELS_PER_ROW to a row), log
    scales, a line per method (colour: what it computes; line style: backend).  Methods that produced NaN/inf are
    marked on the top edge.  The median and componentwise errors are in the section's tables."""
    if acc is None or acc.empty:
        return None
    acc = acc[acc["error"].fillna("") == ""]
    dists = [d for d in distributions if (acc["distribution"] == d).any()] + \
        sorted(set(acc["distribution"]) - set(distributions))
    if not dists:
        return None
    distribution_labels = distribution_labels or {}
    acc = acc.assign(family=[method_family(s, m) for s, m in zip(acc["stage"], acc["method"])])
    styles = _family_styles(acc["family"])
    axes_rc, ctx_rc = theme()
    with axes_rc, ctx_rc:
        cols = min(len(dists), PANELS_PER_ROW)
        rows = -(-len(dists) // cols)
        fig = Figure(figsize=(2.8 + 4.4 * cols, 4.6 * rows), layout="constrained")
        grid = fig.subplots(rows, cols, squeeze=False)
        for ax in grid.flat[len(dists):]:
            ax.set_axis_off()
        for ax, dist in zip(grid.flat, dists):
            g = acc[acc["distribution"] == dist]
            for (method, backend, family), s in g.groupby(["method", "backend", "family"], sort=False):
                s = s.sort_values("K")
                v = s["relerr"].to_numpy(dtype=float)
                ok = np.isfinite(v) & (v > 0)
                colour, marker = styles[family]
                ax.plot(s["K"][ok], v[ok], LINESTYLES.get(backend, "-"), color=colour, marker=marker, ms=4.5, lw=1.3)
                _mark_nonfinite(ax, s["K"][~np.isfinite(v)])
            ks = sorted(set(g["K"].dropna().astype(int)))
            ax.set_yscale("log")
            ax.set_xscale("log", base=2)
            if ks:
                ax.set_xticks(ks, [str(k) for k in ks])
                ax.xaxis.set_minor_locator(NullLocator())
            sizes = ", ".join(str(m) for m in sorted(set(g["M"].dropna().astype(int))))
            ax.set(title=f"{distribution_labels.get(dist, dist)} inputs", xlabel=f"K (M = N = {sizes})")
        for ax in grid[:, 0]:
            ax.set_ylabel("relative Frobenius error")
        handles = [Line2D([], [], color=styles[f][0], marker=styles[f][1], label=f) for f in styles]
        names = {"cuda": "CUDA, cuBLAS", "triton": "Triton", "gluon": "Gluon"}
        backends = [b for b in names if (acc["backend"] == b).any() or (b == "cuda" and (acc["backend"] == "cublas").any())]
        handles += [Line2D([], [], color="#555555", ls=LINESTYLES[b], label=names[b]) for b in backends]
        handles.append(Line2D([], [], ls="", marker="x", color="#b31d28", mew=1.6, label="NaN/inf in the result"))
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return save(fig, path)


def pareto(points: pd.DataFrame, path: Path) -> Path | None:
    """Speed against accuracy: TFLOP/s across, relative error up (log); lower right is better.  Each point is
    labelled with its implementation; the Pareto front (pareto_front()) is the stepped line."""
    if points is None or points.empty:
        return None
    pts = plottable(prepare(points).assign(relerr=pd.to_numeric(points["relerr"], errors="coerce")),
                     "tflops", "relerr")
    if pts.empty:
        return None
    pts = pts.assign(family=[method_family(s, m) for s, m in zip(pts["stage"], pts["impl"])])
    styles = _family_styles(pts["family"])
    front = pts[pareto_front(pts)].sort_values("tflops")
    axes_rc, ctx_rc = theme()
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
        ax.xaxis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
        ax.xaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.6)))
        ax.annotate("better: lower right", xy=(0.98, 0.03), xycoords="axes fraction", ha="right", fontsize=8,
                    color="#555555")
        handles = [Line2D([], [], color="#555555", lw=1.2, label="Pareto front")]
        handles += [Line2D([], [], ls="", marker=styles[f][1], color=styles[f][0], label=f) for f in styles]
        handles += [Line2D([], [], ls="", marker="o", markerfacecolor="#555555", markeredgecolor="#555555",
                           label="filled: CUDA / cuBLAS"),
                    Line2D([], [], ls="", marker="o", markerfacecolor="white", markeredgecolor="#555555",
                           label="hollow: Triton / Gluon")]
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return save(fig, path)


def fig8(rows: pd.DataFrame, path: Path, references: list[tuple[str, float, str]]) -> Path | None:
    """Seed 002's Figure 8 on this GPU: TFLOP/s and seed 002's metric (max elementwise relative error; on
    Figure 8's non-negative inputs it equals the componentwise error) against k for the batched products, with
    horizontal reference lines (label, TFLOP/s, line style), e.g. the paper's A100 figure."""
    if rows is None or rows.empty:
        return None
    rows = rows[rows["error"].fillna("") == ""]
    if rows.empty:
        return None
    rows = rows.assign(family=[method_family(s, m) for s, m in zip(rows["stage"], rows["method"])])
    styles = _family_styles(rows["family"])
    axes_rc, ctx_rc = theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(12.5, 4.6), layout="constrained")
        ax_t, ax_e = fig.subplots(1, 2, sharex=True)
        for (method, backend, family), s in rows.groupby(["method", "backend", "family"], sort=False):
            s = s.sort_values("K")
            colour, marker = styles[family]
            kw = dict(color=colour, marker=marker, ls=LINESTYLES.get(backend, "-"), lw=1.4, ms=5, label=method)
            t = s["tflops"].to_numpy(dtype=float)
            ax_t.plot(s["K"][np.isfinite(t)], t[np.isfinite(t)], **kw)
            e = s["seed002_max_relerr"].to_numpy(dtype=float)
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
        ax_e.set(yscale="log", ylabel="max elementwise relative error\n(seed 002's metric; = componentwise here)",
                 title="accuracy")
        handles, _ = ax_t.get_legend_handles_labels()
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return save(fig, path)
