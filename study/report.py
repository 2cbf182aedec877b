"""Render <dir>/index.html and its PNGs from results.csv, environment.json and ceilings.json.

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

from study import roofline
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
CEILING_NAMES = {"dram_gbps": "DRAM bandwidth", **{k: v[0] for k, v in roofline.CEILINGS.items()}}
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
    known = ["dram_gbps", *roofline.CEILINGS]
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
    """What the stage bought, measured: its TFLOP/s against the previous stage's, per backend."""
    if prev is None:
        return ""
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
        rows.append({
            "kind": "stage", "number": num, "title": s.title if s else titles.get(num, ""),
            "summary": s.summary if s else "", "seed": s.seed if s else "",
            "bought": _bought(at, num, numbers[i - 1] if i else None, backends),
            "notes": [f"{roofline.BACKEND_NAMES.get(b, b)}: {t}" for b, t in (s.notes if s else {}).items()],
            "cells": {b: _cell(at[(at["stage"] == num) & (at["backend"] == b)]) for b, _ in backends},
        })
    return rows


def _baseline_rows(at: pd.DataFrame, impls: list[str], backends) -> list[dict]:
    rows = []
    for impl in impls:
        cell = _cell(at[at["impl"] == impl])
        # cuBLAS sits with CUDA; a tuned Triton baseline sits with Triton, so each column compares like with like.
        side = at.loc[at["impl"] == impl, "backend"].iloc[-1] if cell else "cuda"
        side = side if side in dict(backends) else "cuda"
        rows.append({"kind": "baseline", "number": "baseline", "title": impl, "summary": "", "seed": "",
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


# --- figures and page -----------------------------------------------------------------------------

def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "unknown"


def render_figures(df: pd.DataFrame, ceilings: dict | None, report_dir: Path) -> tuple[list[dict], str | None]:
    # Outputs of an earlier render (e.g. a dtype since dropped) would otherwise linger beside the new page.
    for old in [*report_dir.glob("roofline_*.png"), report_dir / "tflops_vs_size.png", report_dir / "ladder_fp32.png"]:
        old.unlink(missing_ok=True)
    rooflines = []
    for dtype in roofline.dtype_order(df["dtype"]) if not df.empty else []:
        name = f"roofline_{_safe(dtype)}.png"
        if roofline.roofline(df, ceilings, dtype, report_dir / name):
            rooflines.append({"dtype": dtype, "src": name})
    size = roofline.tflops_vs_size(df, report_dir / "tflops_vs_size.png")
    ladder = roofline.ladder(df, report_dir / "ladder_fp32.png")
    return rooflines, ("tflops_vs_size.png" if size else None), ("ladder_fp32.png" if ladder else None)


def context(report_dir: Path) -> dict:
    df, notes = load_results(report_dir / "results.csv")
    env = load_json(report_dir / "environment.json")
    ceilings = load_json(report_dir / "ceilings.json")
    rooflines, size_png, ladder_png = render_figures(df, ceilings, report_dir)
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
        "notes": notes,
        "links": [n for n in ("results.csv", "environment.json", "ceilings.json") if (report_dir / n).exists()]
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
