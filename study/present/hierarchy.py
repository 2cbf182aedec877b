"""What reports/profile.csv (study/measure/ncu.py) says: a hierarchical roofline and the stages' claims against it.

* `per_call`: the kernels of one profiled call summed (a cuBLAS call may launch several), with its achieved
  TFLOP/s (2MNK over ncu's kernel time) and its intensity at each memory level: FLOPs per DRAM byte (read +
  written), per L2 byte and per shared-memory byte (LSU wavefronts x 128 B).
* `figure`: the hierarchical roofline of one dtype, one panel per backend (cuBLAS on each for reference): a call
  is three points at one height, one per level, against that level's measured bandwidth ceiling (DRAM, L2,
  shared memory) and the dtype's compute ceiling, in the manner of Nsight Compute's hierarchical roofline.
* `achieved_traffic`: the DRAM bytes ncu counted per call, for the rooflines that place calls by them; calls the
  profile audit rejects (`audit.implausible_calls`) are left out of it and of `figure`, and `excluded_note` names them.
* `claims`: every stage's docstring claim about shared-memory banks or traffic (`Stage.claims`) beside the
  counters of its kernel at n^3, with a verdict where the claim can be checked mechanically.

Imports neither torch nor triton: the report renders on any machine.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from study.measure.audit import CALL, call_totals
from study.measure.frame import positive, prepare, series_key
from study.present import figures as roofline
from study.core.stages import STAGES

SUMMED = ("time_ms", "dram_read_bytes", "dram_write_bytes", "l2_bytes", "l1_bytes", "smem_bytes",
          "smem_ld_wavefronts", "smem_st_wavefronts", "smem_ld_conflicts", "smem_st_conflicts", "instructions")
KEY = ["impl", "backend", "stage", "dtype", "precision", "M", "N", "K"]
# Memory level -> (profile column of intensity, ceiling key in ceilings.json, label, marker)
LEVELS = (("dram", "dram_gbps", "DRAM", "^"), ("l2", "l2_gbps", "L2", "s"), ("smem", "smem_gbps", "shared", "o"))
LEVEL_COLOURS = {"dram": roofline.DRAM_COLOUR, "l2": "#7b3294", "smem": "#008837"}
COMPUTE = {"fp32": "fp32_fma_tflops", "fp16": "fp16_tc_tflops", "bf16": "bf16_tc_tflops", "int8": "int8_tc_tops",
           "uint8": "int8_tc_tops", "fp8e4m3": "fp8_tc_tflops", "fp64": "fp64_tc_tflops"}
# A claim of "no conflicts" holds when the extra wavefronts are at most this share of all shared wavefronts.
CONFLICT_FREE = 0.01


def load(path: Path) -> pd.DataFrame | None:
    if not Path(path).exists():
        return None
    df = pd.read_csv(path)
    if df.empty:
        return None
    df["stage"] = df["stage"].astype(str).map(lambda s: s.zfill(2) if s.isdigit() else s)
    return df


def per_call(df: pd.DataFrame) -> pd.DataFrame:
    """One row per profiled call: its kernels summed (audit.call_totals: times, bytes and counts summed,
    percentages weighted by kernel time), with their names, and its intensity at each memory level."""
    agg = call_totals(df).rename(columns={"kernels": "n_kernels"})
    names = df.groupby(CALL, sort=False)["kernel"].agg(lambda s: " + ".join(dict.fromkeys(s)))
    agg = agg.merge(names.rename("kernels").reset_index(), on=CALL, how="left")
    flops = 2.0 * agg["M"].astype(float) * agg["N"].astype(float) * agg["K"].astype(float)
    agg["tflops"] = flops / (agg["time_ms"] * 1e9)
    agg["dram"] = flops / (agg["dram_read_bytes"] + agg["dram_write_bytes"])
    agg["l2"] = flops / agg["l2_bytes"]
    agg["smem"] = flops / agg["smem_bytes"]
    return agg.replace([np.inf, -np.inf], np.nan)


def plausible(agg: pd.DataFrame, implausible: dict) -> pd.DataFrame:
    """The per-call rows whose call the audit did not reject."""
    if not implausible or agg.empty:
        return agg
    keys = zip(agg["impl"], agg["dtype"], agg["M"].astype(int), agg["N"].astype(int), agg["K"].astype(int))
    return agg[[k not in implausible for k in keys]]


def achieved_traffic(report_dir: Path, implausible: dict) -> pd.DataFrame | None:
    """impl, dtype, M, N, K and dram_bytes (read + written, the call's kernels summed) of every plausible profiled
    call; None without a profile.csv."""
    df = load(Path(report_dir) / "profile.csv")
    if df is None:
        return None
    agg = plausible(per_call(df), implausible)
    agg = agg.assign(dram_bytes=agg["dram_read_bytes"] + agg["dram_write_bytes"])
    return agg.loc[agg["dram_bytes"] > 0, ["impl", "dtype", "M", "N", "K", "dram_bytes"]]


def excluded_note(implausible: dict) -> str:
    """One sentence naming the calls kept out of every figure, and why; "" when none is."""
    if not implausible:
        return ""
    named = "; ".join(f"{k[0]} {k[1]} {k[2]}x{k[3]}x{k[4]} ({why})" for k, why in sorted(implausible.items()))
    return f"Left out of the figures, their profile failing the audit: {named}."


def _cube(agg: pd.DataFrame) -> pd.DataFrame:
    """The calls at the profile's n^3 (the largest square shape in it)."""
    sq = agg[(agg["M"] == agg["N"]) & (agg["N"] == agg["K"])]
    return sq[sq["M"] == sq["M"].max()] if len(sq) else sq


def figure(agg: pd.DataFrame, ceilings: dict | None, dtype: str, path: Path) -> Path | None:
    pts = _cube(agg[agg["dtype"] == dtype])
    pts = pts[pts["tflops"] > 0]
    if pts.empty:
        return None
    measured = (ceilings or {}).get("measured") or {}
    bw = {lvl: positive(measured.get(key)) for lvl, key, _, _ in LEVELS}
    peak = positive(measured.get(COMPUTE.get(dtype, "")))
    xs = pd.concat([pts[lvl] for lvl, *_ in LEVELS]).dropna()
    xs = xs[xs > 0]
    if xs.empty:
        return None
    xlim = (xs.min() / 4, xs.max() * 4)
    top = max([pts["tflops"].max()] + ([peak] if peak else []))
    ylim = (pts["tflops"].min() / 4, top * 2.5)
    styles = roofline.series_styles(prepare(pts.assign(stage_title="", passed=True)))
    panels = [p for p in roofline.PANELS if p[1] in set(pts["backend"])] or list(roofline.PANELS[:1])
    axes_rc, ctx_rc = roofline.theme()
    with axes_rc, ctx_rc:
        fig = Figure(figsize=(2.6 + 5.2 * len(panels), 5.4), layout="constrained")
        axes = fig.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False)[0]
        for ax, (title, backend) in zip(axes, panels):
            for lvl, _, label, _ in LEVELS:
                if bw[lvl]:
                    x_end = min(xlim[1], 1000 * (peak or top * 2) / bw[lvl])
                    ax.plot([xlim[0], x_end], [bw[lvl] * xlim[0] / 1000, bw[lvl] * x_end / 1000], "-",
                            color=LEVEL_COLOURS[lvl], lw=1.3)
                    ax.annotate(f"{label} {bw[lvl]:,.0f} GB/s", (xlim[0] * 1.5, bw[lvl] * xlim[0] * 1.5 / 1000),
                                xytext=(4, 4), textcoords="offset points", fontsize=7.5, color=LEVEL_COLOURS[lvl])
            if peak:
                ax.axhline(peak, color="#222222", lw=1.3)
                ax.annotate(f"{COMPUTE[dtype]} {peak:,.0f}", (xlim[1], peak), xytext=(-3, 3),
                            textcoords="offset points", ha="right", fontsize=7.5)
            panel = pts[pts["backend"].isin({backend, "cublas"})]
            for _, r in panel.iterrows():
                st = styles[series_key(r["stage"], r["impl"])]
                xs_r = [r[lvl] for lvl, *_ in LEVELS]
                ok = [x for x in xs_r if x and np.isfinite(x)]
                if len(ok) > 1:
                    ax.plot([min(ok), max(ok)], [r["tflops"]] * 2, "-", color=st.colour, lw=0.7, alpha=0.6)
                for (lvl, _, _, marker), x in zip(LEVELS, xs_r):
                    if x and np.isfinite(x):
                        ax.scatter([x], [r["tflops"]], marker=marker, s=40, color=st.colour, edgecolors="white",
                                   linewidths=0.5, zorder=3)
            ax.set(xscale="log", yscale="log", xlim=xlim, ylim=ylim, title=f"{title} ({dtype}, cuBLAS for reference)",
                   xlabel="FLOP per byte moved at each level (ncu)")
            roofline.plain_log_ticks(ax)
        axes[0].set_ylabel("TOP/s" if dtype.startswith(("int", "uint")) else "TFLOP/s")
        keys = sorted({series_key(s, i) for s, i in zip(pts["stage"], pts["impl"])},
                      key=lambda k: styles[k].order)
        handles = [Line2D([], [], ls="", marker="o", color=styles[k].colour, label=styles[k].label) for k in keys]
        handles += [Line2D([], [], ls="", marker=m, color="#555555", label=f"{lab} intensity") for _, _, lab, m in LEVELS]
        fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize=8.5)
        return roofline.save(fig, path)


def _mb(x) -> str:
    return f"{x / 1e6:,.1f}" if pd.notna(x) else ""


def _count(x) -> str:
    return f"{int(x):,}" if pd.notna(x) else ""


def verdict(check: str, r) -> str:
    """'holds' / 'contradicted' for a mechanically checkable claim, '' otherwise."""
    if check not in ("ld", "ld+st"):
        return ""
    conflicts = r["smem_ld_conflicts"] + (r["smem_st_conflicts"] if check == "ld+st" else 0)
    waves = r["smem_ld_wavefronts"] + (r["smem_st_wavefronts"] if check == "ld+st" else 0)
    if pd.isna(conflicts) or pd.isna(waves) or waves <= 0:
        return ""
    return "holds" if conflicts <= CONFLICT_FREE * waves else "contradicted"


def claims(agg: pd.DataFrame) -> list[dict]:
    """One row per (stage, backend) claim, with the counters of that implementation at n^3 in its first dtype."""
    rows = []
    cube = _cube(agg)
    for s in STAGES:
        for backend, (text, check) in s.claims.items():
            impl = f"{backend}:{s.key}"
            got = cube[cube["impl"] == impl]
            if got.empty:
                rows.append({"stage": s.number, "backend": backend, "impl": impl, "claim": text,
                             "measured": "not profiled", "verdict": ""})
                continue
            r = got.iloc[0]
            share = (r["smem_ld_conflicts"] / r["smem_ld_wavefronts"]) if r["smem_ld_wavefronts"] else np.nan
            rows.append({"stage": s.number, "backend": backend, "impl": impl, "claim": text, "dtype": r["dtype"],
                         "dram_mb": _mb(r["dram_read_bytes"]), "ld": _count(r["smem_ld_conflicts"]),
                         "st": _count(r["smem_st_conflicts"]),
                         "ld_share": f"{100 * share:.1f}%" if pd.notna(share) else "",
                         "measured": "", "verdict": verdict(check, r)})
    return rows


def table(agg: pd.DataFrame) -> list[dict]:
    """Every profiled call, for the report's counter table."""
    out = []
    for _, r in agg.sort_values(["dtype", "stage", "impl", "M"]).iterrows():
        out.append({"impl": r["impl"], "dtype": r["dtype"], "shape": f"{r['M']}x{r['N']}x{r['K']}",
                    "kernels": r["kernels"], "ms": f"{r['time_ms']:.3f}" if pd.notna(r["time_ms"]) else "",
                    "tflops": f"{r['tflops']:.1f}" if pd.notna(r["tflops"]) else "",
                    "dram_r": _mb(r["dram_read_bytes"]), "dram_w": _mb(r["dram_write_bytes"]),
                    "l2": _mb(r["l2_bytes"]), "smem": _mb(r["smem_bytes"]),
                    "conflicts": f"{_count(r['smem_ld_conflicts'])} / {_count(r['smem_st_conflicts'])}",
                    "occupancy": f"{r['occupancy_pct']:.0f}" if pd.notna(r["occupancy_pct"]) else "",
                    "registers": _count(r["registers"])})
    return out
