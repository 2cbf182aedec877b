"""Render <dir>/index.html and its PNGs from results.csv, environment.json and ceilings.json, plus stage 14's
accuracy.csv and fig8.csv (python -m study.accuracy) when they are there.

Needs no GPU and never imports torch or triton, so a recorded sweep can be re-rendered anywhere.
Usage: python -m study.report [--dir reports]
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import jinja2
import pandas as pd

from study import counters, hierarchy, roofline
from study.accuracy import ACCURACY_COLUMNS, DISTRIBUTIONS, FIG8_COLUMNS, MAX_RELERR_DEFINITION, PAPER
from study.schema import RESULT_COLUMNS
from study.stages import STAGES

REPO = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "templates"

NUMERIC_COLUMNS = ("M", "N", "K", "alpha", "beta", "ms", "ms_p20", "ms_p80", "reps", "tflops", "gbps",
                   "intensity", "pct_cublas", "relerr", "tol", "registers", "smem_bytes", "spills", "sm_clock_mhz")
# One measurement per (implementation, dtype, shape, alpha, beta); a resumed sweep appends, so the last wins.
ROW_KEY = ["impl", "dtype", "M", "N", "K", "alpha", "beta"]
ENV_ORDER = ("gpu", "sm_count", "l2_bytes", "compute_capability", "driver", "cuda_runtime", "nvcc", "torch",
             "triton", "cuda_bindings", "python", "commit", "date", "sweep_args", "fixture")
CEILING_NAMES = {"dram_gbps": "DRAM bandwidth", "l2_gbps": "L2 bandwidth", "smem_gbps": "Shared-memory bandwidth",
                 **{k: v[0] for k, v in roofline.CEILINGS.items()}}
FULL_TABLE_COLUMNS = ("impl", "stage", "backend", "dtype", "precision", "M", "N", "K", "shape_set", "alpha",
                      "beta", "ms", "tflops", "gbps", "intensity", "pct_cublas", "relerr", "tol", "passed",
                      "registers", "smem_bytes", "spills", "sm_clock_mhz", "error")


# --- loading --------------------------------------------------------------------------------------

def load_results(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """The results as typed columns, duplicates resolved to the last row; plus notes for the page."""
    if not path.exists():
        return pd.DataFrame(columns=RESULT_COLUMNS), [f"no {path.name} in this directory"]
    # All-str first: pandas would otherwise turn stage "01" into the integer 1.
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    notes = []
    missing = [c for c in RESULT_COLUMNS if c not in raw.columns]
    if missing:
        notes.append(f"{path.name} lacks columns: {', '.join(missing)}")
    for col in missing:
        raw[col] = ""
    df = roofline.prepare(raw)
    for col in NUMERIC_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce")
    dedup = df.drop_duplicates(subset=ROW_KEY, keep="last").reset_index(drop=True)
    if len(dedup) < len(df):
        notes.append(f"{len(df) - len(dedup)} earlier duplicate row(s) superseded by later re-runs "
                     f"(still in {path.name})")
    return dedup, notes


def load_json(path: Path) -> dict | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


# --- formatting -----------------------------------------------------------------------------------

def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def fmt_num(x, digits: int = 3) -> str:
    """Significant-figure formatting that keeps small errors (1e-7) and big counts (4096) readable."""
    if not _finite(x):
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    if abs(x) < 1e-2:
        return f"{x:.2e}"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:,.0f}"


def fmt_bytes(n) -> str:
    if not _finite(n):
        return ""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{int(n)} B"


def fmt_value(key: str, value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key.endswith("_bytes") and _finite(value):
        return f"{value} ({fmt_bytes(value)})"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return "" if value is None else str(value)


# --- page sections --------------------------------------------------------------------------------

def environment_rows(env: dict | None) -> list[tuple[str, str]]:
    if not env:
        return []
    keys = [k for k in ENV_ORDER if k in env] + [k for k in env if k not in ENV_ORDER]
    return [(k, fmt_value(k, env[k])) for k in keys]


def _unit(key: str) -> str:
    return {"_gbps": "GB/s", "_tflops": "TFLOP/s", "_tops": "TOP/s"}.get(
        next((s for s in ("_gbps", "_tflops", "_tops") if key.endswith(s)), ""), "")


def ceiling_rows(ceilings: dict | None) -> list[dict]:
    c = ceilings or {}
    measured, datasheet = c.get("measured") or {}, c.get("datasheet") or {}
    clocks, methods, errors = c.get("sm_clock_mhz") or {}, c.get("method") or {}, c.get("errors") or {}
    known = ["dram_gbps", "l2_gbps", "smem_gbps", *roofline.CEILINGS]
    keys = [k for k in known if k in measured or k in datasheet]
    keys += sorted((set(measured) | set(datasheet)) - set(known) - {"source"})
    rows = []
    for key in keys:
        m, d = roofline.positive(measured.get(key)), roofline.positive(datasheet.get(key))
        rows.append({
            "name": CEILING_NAMES.get(key, key), "key": key, "unit": _unit(key),
            "measured": fmt_num(m, 4) if m else "not measured", "datasheet": fmt_num(d, 4) if d else "",
            "pct": f"{100 * m / d:.0f}%" if m and d else "", "clock": fmt_num(roofline.positive(clocks.get(key)), 4),
            "method": fmt_value(key, methods.get(key)), "error": fmt_value(key, errors.get(key)),
        })
    return rows


def reference_shape(df: pd.DataFrame) -> tuple[tuple[int, int, int] | None, bool]:
    """The largest square shape of this frame (True), or failing that the largest by FLOPs (False)."""
    sq = df[(df["shape_set"] == "square") & (df["M"] == df["N"]) & (df["N"] == df["K"])].dropna(subset=["M"])
    if not sq.empty:
        m = int(sq["M"].max())
        return (m, m, m), True
    shaped = df.dropna(subset=["M", "N", "K"])
    if shaped.empty:
        return None, False
    r = shaped.loc[(shaped["M"] * shaped["N"] * shaped["K"]).idxmax()]
    return (int(r["M"]), int(r["N"]), int(r["K"])), False


def _cell(rows: pd.DataFrame) -> dict | None:
    if rows.empty:
        return None
    r = rows.iloc[-1]
    res = [fmt_num(r["registers"]), fmt_bytes(r["smem_bytes"]), fmt_num(r["spills"])]
    return {
        "impl": r["impl"], "precision": r["precision"], "tflops": fmt_num(r["tflops"]),
        "pct": fmt_num(r["pct_cublas"]), "baseline": r["baseline_impl"], "relerr": fmt_num(r["relerr"]),
        "tol": fmt_num(r["tol"]), "passed": bool(r["passed"]), "error": r["error"],
        "resources": " / ".join(res) if any(res) else "",
    }


def _backends(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(backend, column title) for every ladder backend in the frame, in the study's order."""
    present = set(df["backend"]) - {"cublas", ""}
    known = [b for b in roofline.BACKEND_NAMES if b in present]
    return [(b, roofline.BACKEND_NAMES.get(b, b)) for b in known + sorted(present - set(known))]


def _bought(at: pd.DataFrame, num: str, prev: str | None, backends) -> str:
    """What the stage bought, measured: its TFLOP/s against the previous stage's, per backend (main kernels
    only: a stage's variants are measured against the stage itself, in their own rows)."""
    if prev is None:
        return ""
    at = at[at["variant"] == ""]
    parts = []
    for b, title in backends:
        now = at.loc[(at["stage"] == num) & (at["backend"] == b) & at["passed"], "tflops"]
        before = at.loc[(at["stage"] == prev) & (at["backend"] == b) & at["passed"], "tflops"]
        if len(now) and len(before) and before.iloc[-1] > 0:
            parts.append(f"{title} {now.iloc[-1] / before.iloc[-1]:.2f}x")
    return f"Against stage {prev}: " + ", ".join(parts) + "." if parts else ""


def _stage_rows(at: pd.DataFrame, present: set[str], titles: dict[str, str], backends) -> list[dict]:
    known = {s.number: s for s in STAGES}
    numbers = [s.number for s in STAGES if s.number in present] + sorted(present - set(known))
    rows = []
    for i, num in enumerate(numbers):
        s = known.get(num)
        here = at[at["stage"] == num]
        # A stage with variants (stage 14: tcec, markidis, nocorr, tf32 on every backend) gets a row per
        # variant, titled by its implementations' own title (which names the precision), never one cell
        # holding whichever variant came last.
        variants = [""] + sorted(set(here["variant"]) - {""})
        for v in variants:
            mine = here[here["variant"] == v]
            own = [t for t in mine["stage_title"] if t]
            title = own[0] if own and len(variants) > 1 else (s.title if s else titles.get(num, ""))
            main = v == ""
            rows.append({
                "kind": "stage", "number": num, "title": title,
                "variant": (v or (s.slug if s else "")) if len(variants) > 1 else "",
                "summary": s.summary if s and main else "", "seed": s.seed if s and main else "",
                "bought": _bought(at, num, numbers[i - 1] if i else None, backends) if main else "",
                "notes": [f"{roofline.BACKEND_NAMES.get(b, b)}: {t}" for b, t in (s.notes if s else {}).items()]
                         if main else [],
                "cells": {b: _cell(mine[mine["backend"] == b]) for b, _ in backends},
            })
    return rows


def _baseline_rows(at: pd.DataFrame, impls: list[str], backends) -> list[dict]:
    rows = []
    for impl in impls:
        cell = _cell(at[at["impl"] == impl])
        # cuBLAS sits with CUDA; a tuned Triton baseline sits with Triton, so each column compares like with like.
        side = at.loc[at["impl"] == impl, "backend"].iloc[-1] if cell else "cuda"
        side = side if side in dict(backends) else "cuda"
        rows.append({"kind": "baseline", "number": "baseline", "title": impl, "variant": "", "summary": "", "seed": "",
                     "bought": "", "notes": [], "cells": {b: cell if b == side else None for b, _ in backends}})
    return rows


def stage_tables(df: pd.DataFrame) -> list[dict]:
    tables = []
    backends = _backends(df) or [("cuda", "CUDA")]
    for dtype in roofline.dtype_order(df["dtype"]):
        d = df[df["dtype"] == dtype]
        shape, square = reference_shape(d)
        if shape is None:
            continue
        at = d[(d["M"] == shape[0]) & (d["N"] == shape[1]) & (d["K"] == shape[2])]
        at = at.assign(variant=[roofline.variant_of(st, i) for st, i in zip(at["stage"], at["impl"])])
        present = set(d["stage"]) - {"baseline", ""}
        titles = dict(zip(d["stage"], d["stage_title"]))
        styles = roofline.series_styles(df)
        impls = sorted(set(d.loc[d["stage"] == "baseline", "impl"]), key=lambda i: styles[i].order)
        tables.append({"dtype": dtype, "shape": "x".join(map(str, shape)), "square": square, "backends": backends,
                       "rows": _stage_rows(at, present, titles, backends) + _baseline_rows(at, impls, backends)})
    return tables


def full_rows(df: pd.DataFrame) -> list[dict]:
    out = []
    for _, r in df.iterrows():
        cells = {c: (fmt_num(r[c]) if c in NUMERIC_COLUMNS else str(r[c])) for c in FULL_TABLE_COLUMNS}
        cells["passed"] = "yes" if r["passed"] else "NO"
        out.append({"cells": cells, "passed": bool(r["passed"])})
    return out


# --- stage 14: TCEC accuracy (accuracy.csv, fig8.csv from python -m study.accuracy) --------------------

TCEC_STAGE = roofline.TCEC_STAGE
ACC_NUMERIC = ("M", "N", "K", "relerr", "max_relerr", "nonfinite")
FIG8_NUMERIC = ("batch", "M", "N", "K", "ms", "reps", "tflops", "sgemm_tflops", "x_sgemm", "max_relerr", "relerr",
                "nonfinite", "sm_clock_mhz")
TCEC_PNGS = ("tcec_accuracy.png", "tcec_pareto.png", "tcec_fig8.png")


def load_table(path: Path, columns, numeric) -> tuple[pd.DataFrame | None, list[str]]:
    """A CSV of the accuracy study as typed columns (None when absent), plus notes for the page."""
    if not path.exists():
        return None, []
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in raw.columns]
    for col in missing:
        raw[col] = ""
    for col in numeric:
        raw[col] = pd.to_numeric(raw[col], errors="coerce")
    return raw, ([f"{path.name} lacks columns: {', '.join(missing)}"] if missing else [])


def _method_order(stage: str, backend: str, method: str) -> tuple:
    """Stage 14 first (CUDA, Triton, Gluon; the method before its variants), then the baselines by name."""
    backends = list(roofline.BACKEND_NAMES)
    return (stage != TCEC_STAGE, backends.index(backend) if backend in backends else len(backends),
            roofline.variant_of(stage, method) != "", method)


def _err_cell(r, metric: str) -> dict:
    if r is None:
        return {"text": "", "title": "not measured", "bad": False}
    if r["error"]:
        return {"text": "raised", "title": r["error"], "bad": True}
    if r["nonfinite"] > 0:
        return {"text": f"NaN/inf x{int(r['nonfinite'])}", "title": "elements of D that are NaN or inf", "bad": True}
    return {"text": fmt_num(r[metric]), "title": f"{r['method']} {r['distribution']} K={int(r['K'])}", "bad": False}


def accuracy_tables(acc: pd.DataFrame) -> dict:
    """Two method x (distribution, K) tables: relative Frobenius error and max elementwise relative error."""
    dists = [d for d in DISTRIBUTIONS if (acc["distribution"] == d).any()] + \
        sorted(set(acc["distribution"]) - set(DISTRIBUTIONS))
    cols = [(d, int(k)) for d in dists for k in sorted(set(acc.loc[acc["distribution"] == d, "K"].dropna()))]
    last = {(r["method"], r["distribution"], int(r["K"])): r for _, r in acc.dropna(subset=["K"]).iterrows()}
    methods = sorted({(r["stage"], r["backend"], r["method"], r["precision"]) for _, r in acc.iterrows()},
                     key=lambda m: _method_order(*m[:3]))
    tables = []
    for metric, title in (("relerr", "Relative Frobenius error"), ("max_relerr", "Max elementwise relative error")):
        rows = [{"method": m, "backend": b, "precision": p,
                 "cells": [_err_cell(last.get((m, d, k)), metric) for d, k in cols]} for _, b, m, p in methods]
        tables.append({"title": title, "rows": rows})
    return {"dists": [(d, sum(1 for c in cols if c[0] == d)) for d in dists], "cols": cols, "tables": tables}


def worse_rows(acc: pd.DataFrame) -> tuple[list[str], list[dict]]:
    """Each stage-14 variant's relative error as a multiple of the TCEC method's, per backend, distribution
    and K: how much the correction (nocorr), the rounding outside the tensor cores (markidis) and the split
    type (tf32) are worth."""
    s14 = acc[(acc["stage"] == TCEC_STAGE) & (acc["error"] == "")].dropna(subset=["K"])
    s14 = s14.assign(variant=[roofline.variant_of(TCEC_STAGE, m) for m in s14["method"]])
    preferred = ["markidis", "nocorr", "tf32"]
    others = sorted(set(s14["variant"]) - {""} - set(preferred))
    variants = [v for v in preferred if (s14["variant"] == v).any()] + others
    rows = []
    keys = sorted({(b, d, int(k)) for b, d, k in zip(s14["backend"], s14["distribution"], s14["K"])},
                  key=lambda x: _method_order(TCEC_STAGE, x[0], "") + (x[1], x[2]))
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
                ratio = e.iloc[-1] / base
                cells.append(f"{ratio:.3g}x" if ratio < 1000 else f"{ratio:,.0f}x")
            else:
                cells.append("")
        rows.append({"backend": roofline.BACKEND_NAMES.get(backend, backend), "distribution": dist, "K": k,
                     "base": fmt_num(base) if math.isfinite(base) else "NaN/inf", "cells": cells})
    return variants, rows


def pareto_points(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """fp32-input rows of stage 14 and the baselines at one square shape (4096^3 when stage 14 has it, else
    the largest square it has), with both TFLOP/s and relerr measured."""
    d = df[(df["dtype"] == "fp32") & df["stage"].isin({TCEC_STAGE, "baseline"}) & (df["M"] == df["N"])
           & (df["N"] == df["K"])]
    sides = set(d.loc[d["stage"] == TCEC_STAGE, "M"].dropna().astype(int))
    if not sides:
        return d.iloc[0:0], ""
    n = 4096 if 4096 in sides else max(sides)
    at = d[(d["M"] == n) & d["tflops"].gt(0) & d["relerr"].gt(0)]
    return at.drop_duplicates("impl", keep="last"), f"{n}x{n}x{n}"


def _best_tcec(f8: pd.DataFrame) -> pd.Series | None:
    """The TCEC method's fastest Figure 8 row, on the first backend of CUDA, Triton, Gluon that has one."""
    ok = f8[(f8["stage"] == TCEC_STAGE) & (f8["error"] == "") & f8["tflops"].gt(0)]
    ok = ok[[roofline.variant_of(TCEC_STAGE, m) == "" for m in ok["method"]]]
    if ok.empty:
        return None
    rank = {b: i for i, b in enumerate(roofline.BACKEND_NAMES)}
    ok = ok.assign(rank=[rank.get(b, len(rank)) for b in ok["backend"]])
    first = ok[ok["rank"] == ok["rank"].min()]
    return first.loc[first["tflops"].idxmax()]


def fig8_context(f8: pd.DataFrame, ceilings: dict | None) -> dict:
    """Figure 8's rows, and the paper's A100 figure beside ours, each against its own GPU's fp32 numbers."""
    rows = []
    for _, r in f8.sort_values(["K"]).iterrows():
        rows.append({"k": fmt_num(r["K"]), "method": r["method"], "launch": r["launch"], "tflops": fmt_num(r["tflops"]),
                     "x_sgemm": f"{r['x_sgemm']:.2f}x" if _finite(r["x_sgemm"]) else "",
                     "max_relerr": "NaN/inf" if r["nonfinite"] > 0 else fmt_num(r["max_relerr"]),
                     "relerr": "NaN/inf" if r["nonfinite"] > 0 else fmt_num(r["relerr"]), "error": r["error"]})
    measured = (ceilings or {}).get("measured") or {}
    fma = roofline.positive(measured.get("fp32_fma_tflops"))
    best = _best_tcec(f8)
    ours = None
    if best is not None:
        ours = {"gpu": best["gpu"], "method": best["method"], "k": fmt_num(best["K"]), "tflops": fmt_num(best["tflops"]),
                "x_peak": f"{best['tflops'] / fma:.2f}x of {fmt_num(fma, 4)} (measured FMA peak)" if fma else
                          "no measured FP32 FMA peak in ceilings.json",
                "x_sgemm": f"{best['x_sgemm']:.2f}x of {fmt_num(best['sgemm_tflops'])}" if _finite(best["x_sgemm"]) else "",
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


def tcec_section(df: pd.DataFrame, ceilings: dict | None, report_dir: Path) -> dict | None:
    """Stage 14's section: None when there is nothing of stage 14 to show (no accuracy.csv, no fig8.csv, no
    stage-14 rows in results.csv); otherwise everything that is there, and a note for what is not."""
    for name in TCEC_PNGS:
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
    front = roofline.pareto_front(points) if not points.empty else pd.Series(dtype=bool)
    refs = [(f"seed 002: TCEC on {PAPER['gpu']}, {PAPER['tcec_tflops']} TFLOP/s", PAPER["tcec_tflops"], "--"),
            (f"{PAPER['gpu']} FP32 peak {PAPER['fp32_peak_tflops']} (seed 002, Table 1)", PAPER["fp32_peak_tflops"], ":")]
    fma = roofline.positive(((ceilings or {}).get("measured") or {}).get("fp32_fma_tflops"))
    if fma:
        refs.append((f"this GPU's measured FP32 FMA peak {fma:.1f}", fma, "-."))
    acc_png = roofline.accuracy_vs_k(acc, report_dir / TCEC_PNGS[0]) if acc is not None else None
    pareto_png = roofline.pareto(points, report_dir / TCEC_PNGS[1]) if not points.empty else None
    fig8_png = roofline.fig8(f8, report_dir / TCEC_PNGS[2], refs) if f8 is not None else None
    variants, worse = worse_rows(acc) if acc is not None else ([], [])
    return {
        "notes": notes, "max_relerr_definition": MAX_RELERR_DEFINITION,
        "acc_png": acc_png and acc_png.name, "acc": accuracy_tables(acc) if acc is not None and len(acc) else None,
        "acc_source": _provenance(acc), "worse_variants": variants, "worse": worse,
        "pareto_png": pareto_png and pareto_png.name, "pareto_shape": shape,
        "pareto": [{"impl": r["impl"], "backend": r["backend"], "precision": r["precision"],
                    "tflops": fmt_num(r["tflops"]), "relerr": fmt_num(r["relerr"]), "front": bool(front[i])}
                   for i, r in points.sort_values("tflops", ascending=False).iterrows()],
        "fig8_png": fig8_png and fig8_png.name, "fig8": fig8_context(f8, ceilings) if f8 is not None else None,
        "fig8_source": _provenance(f8),
    }


# --- figures and page -----------------------------------------------------------------------------

def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "unknown"


def render_figures(df: pd.DataFrame, ceilings: dict | None, report_dir: Path) -> tuple[list[dict], str | None]:
    # Outputs of an earlier render (e.g. a dtype since dropped) would otherwise linger beside the new page.
    for old in [*report_dir.glob("roofline_*.png"), report_dir / "tflops_vs_size.png", report_dir / "ladder_fp32.png"]:
        old.unlink(missing_ok=True)
    rooflines = []
    for group, title in roofline.roofline_groups(df):
        name = f"roofline_{_safe(group)}.png"
        if roofline.roofline(df, ceilings, group, report_dir / name):
            rooflines.append({"dtype": title, "src": name})
    size = roofline.tflops_vs_size(df, report_dir / "tflops_vs_size.png")
    ladder = roofline.ladder(df, report_dir / "ladder_fp32.png")
    return rooflines, ("tflops_vs_size.png" if size else None), ("ladder_fp32.png" if ladder else None)


def counter_tables(report_dir: Path) -> list[dict]:
    """One table per reports/ncu_*.csv: what ncu counted for each profiled kernel (study/counters.py)."""
    tables = []
    for prof in counters.load_all(report_dir):
        m = prof.machine
        where = ", ".join(str(x) for x in (m.get("gpu"), m.get("commit") and f"commit {m['commit']}",
                                           m.get("n") and f"{m['n']}^3 {m.get('dtype', 'fp32')}") if x)
        rows = [{"impl": r["impl"], "kernel": r["kernel"],
                 **{k: fmt_num(r[k]) if r[k] is not None else "" for k in ("ms", "registers", "instructions_m",
                                                                        "dram_read_mb", "issue_pct", "tensor_pct")},
                 "conflicts": " / ".join(f"{int(r[k]):,}" if r[k] is not None else "" for k in
                                         ("smem_ld_conflicts", "smem_st_conflicts"))}
                for r in prof.rows]
        tables.append({"source": prof.source, "where": where, "notes": prof.notes, "rows": rows})
    return tables


def profile_section(report_dir: Path, ceilings: dict | None) -> dict | None:
    """reports/profile.csv (study/profile.py): hierarchical rooflines, claims against counters, every call."""
    for old in report_dir.glob("hierarchy_*.png"):
        old.unlink()
    df = hierarchy.load(report_dir / "profile.csv")
    if df is None:
        return None
    agg = hierarchy.per_call(df)
    figures = []
    for dtype in roofline.dtype_order(agg["dtype"]):
        name = f"hierarchy_{_safe(dtype)}.png"
        if hierarchy.figure(agg, ceilings, dtype, report_dir / name):
            figures.append({"dtype": dtype, "src": name})
    extra = load_json(report_dir / "profile_notes.json") or {}
    first = df.iloc[0]
    return {"figures": figures, "claims": hierarchy.claims(agg), "rows": hierarchy.table(agg),
            "notes": extra.get("notes", []), "where": f"{first['gpu']}, commit {first['commit']}"}


def context(report_dir: Path) -> dict:
    df, notes = load_results(report_dir / "results.csv")
    env = load_json(report_dir / "environment.json")
    ceilings = load_json(report_dir / "ceilings.json")
    rooflines, size_png, ladder_png = render_figures(df, ceilings, report_dir)
    tcec = tcec_section(df, ceilings, report_dir)
    gpu = (env or {}).get("gpu") or (ceilings or {}).get("gpu") or (df["gpu"].iloc[0] if len(df) else "")
    failed = df[~df["passed"]]
    measured = {k: v for k, v in ((ceilings or {}).get("measured") or {}).items() if roofline.positive(v)}
    return {
        "title": f"GEMM study: CUDA, Triton and Gluon ladders{f' on {gpu}' if gpu else ''}",
        "gpu": gpu, "env": environment_rows(env), "fixture": bool((env or {}).get("fixture")),
        "ceilings": ceiling_rows(ceilings), "ceilings_measured": bool(measured),
        "ceilings_source": ((ceilings or {}).get("datasheet") or {}).get("source", ""),
        "ceilings_gpu": (ceilings or {}).get("gpu", ""),
        "rooflines": rooflines, "size_png": size_png, "ladder_png": ladder_png, "stage_tables": stage_tables(df),
        "n_rows": len(df), "failed": full_rows(failed), "columns": FULL_TABLE_COLUMNS, "rows": full_rows(df),
        "notes": notes, "tcec": tcec, "counters": counter_tables(report_dir),
        "profile": profile_section(report_dir, ceilings),
        "links": [n for n in ("results.csv", "environment.json", "ceilings.json", "accuracy.csv", "fig8.csv",
                              "profile.csv")
                  if (report_dir / n).exists()]
                 + [f"{p.parent.name}/index.html" for p in sorted(report_dir.glob("*/index.html"))],  # other sweeps
    }


def render(report_dir: Path) -> Path:
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    html = env.get_template("index.html.j2").render(**context(report_dir))
    out = report_dir / "index.html"
    out.write_text(html, encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=REPO / "reports", help="directory holding results.csv etc.")
    args = ap.parse_args(argv)
    print(render(args.dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
