"""Render <dir>/index.html and its PNGs from results.csv, environment.json and ceilings.json, plus the sections
of the stages with a page of their own (STAGE_PAGES), from their own files when they are there.

Needs no GPU and never imports torch or triton, so a recorded sweep can be re-rendered anywhere.
Usage: python -m study.report [--dir reports]
"""
from __future__ import annotations

import argparse
import sys
import re
from pathlib import Path

import jinja2
import pandas as pd

from study.measure import ncu as counters

from study.present import hierarchy

from study.present import figures as roofline
from study.present.pages import STAGE_PAGES
from study.present.formatting import fmt_bytes, fmt_num, fmt_value
from study.measure.frame import NUMERIC_COLUMNS, dtype_order, load_json, load_results, positive, variant_of
from study.core.stages import STAGES

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = Path(__file__).resolve().parent / "templates"

ENV_ORDER = ("gpu", "sm_count", "l2_bytes", "compute_capability", "driver", "cuda_runtime", "nvcc", "torch",
             "triton", "cuda_bindings", "python", "commit", "date", "sweep_args", "fixture")
CEILING_NAMES = {"dram_gbps": "DRAM bandwidth", "l2_gbps": "L2 bandwidth", "smem_gbps": "Shared-memory bandwidth",
                 **{k: v[0] for k, v in roofline.CEILINGS.items()}}
FULL_TABLE_COLUMNS = ("impl", "stage", "backend", "dtype", "precision", "M", "N", "K", "shape_set", "alpha",
                      "beta", "ms", "tflops", "gbps", "intensity", "pct_cublas", "relerr", "tol", "passed",
                      "registers", "smem_bytes", "spills", "sm_clock_mhz", "error")


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
        m, d = positive(measured.get(key)), positive(datasheet.get(key))
        rows.append({
            "name": CEILING_NAMES.get(key, key), "key": key, "unit": _unit(key),
            "measured": fmt_num(m, 4) if m else "not measured", "datasheet": fmt_num(d, 4) if d else "",
            "pct": f"{100 * m / d:.0f}%" if m and d else "", "clock": fmt_num(positive(clocks.get(key)), 4),
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
        # A stage with variants gets a row per variant, titled by its implementations' own title (which names
        # the precision), never one cell holding whichever variant came last.
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
    for dtype in dtype_order(df["dtype"]):
        d = df[df["dtype"] == dtype]
        shape, square = reference_shape(d)
        if shape is None:
            continue
        at = d[(d["M"] == shape[0]) & (d["N"] == shape[1]) & (d["K"] == shape[2])]
        at = at.assign(variant=[variant_of(st, i) for st, i in zip(at["stage"], at["impl"])])
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


def render_figures(df: pd.DataFrame, ceilings: dict | None, report_dir: Path
                   ) -> tuple[list[dict], str | None, str | None]:
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
    """One table per reports/ncu_*.csv: what ncu counted for each profiled kernel (study/measure/ncu.py)."""
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
    """reports/profile.csv (study/measure/ncu.py): hierarchical rooflines, claims against counters, every call."""
    for old in report_dir.glob("hierarchy_*.png"):
        old.unlink()
    df = hierarchy.load(report_dir / "profile.csv")
    if df is None:
        return None
    agg = hierarchy.per_call(df)
    figures = []
    for dtype in dtype_order(agg["dtype"]):
        name = f"hierarchy_{_safe(dtype)}.png"
        if hierarchy.figure(agg, ceilings, dtype, report_dir / name):
            figures.append({"dtype": dtype, "src": name})
    extra = load_json(report_dir / "profile_notes.json") or {}
    first = df.iloc[0]
    return {"figures": figures, "claims": hierarchy.claims(agg), "rows": hierarchy.table(agg),
            "notes": extra.get("notes", []), "where": f"{first['gpu']}, commit {first['commit']}"}


def stage_pages(df: pd.DataFrame, ceilings: dict | None, report_dir: Path) -> list[dict]:
    """The sections of STAGE_PAGES that have something to show, each with what the page template needs."""
    pages = []
    for page in STAGE_PAGES:
        data = page.section(df, ceilings, report_dir)
        if data is not None:
            pages.append({"id": page.ID, "nav": page.NAV, "template": page.TEMPLATE, "data": data})
    return pages


def context(report_dir: Path) -> dict:
    df, notes = load_results(report_dir / "results.csv")
    env = load_json(report_dir / "environment.json")
    ceilings = load_json(report_dir / "ceilings.json")
    rooflines, size_png, ladder_png = render_figures(df, ceilings, report_dir)
    pages = stage_pages(df, ceilings, report_dir)
    gpu = (env or {}).get("gpu") or (ceilings or {}).get("gpu") or (df["gpu"].iloc[0] if len(df) else "")
    failed = df[~df["passed"]]
    measured = {k: v for k, v in ((ceilings or {}).get("measured") or {}).items() if positive(v)}
    return {
        "title": f"GEMM study: CUDA, Triton and Gluon ladders{f' on {gpu}' if gpu else ''}",
        "gpu": gpu, "env": environment_rows(env), "fixture": bool((env or {}).get("fixture")),
        "ceilings": ceiling_rows(ceilings), "ceilings_measured": bool(measured),
        "ceilings_source": ((ceilings or {}).get("datasheet") or {}).get("source", ""),
        "ceilings_gpu": (ceilings or {}).get("gpu", ""),
        "rooflines": rooflines, "size_png": size_png, "ladder_png": ladder_png, "stage_tables": stage_tables(df),
        "n_rows": len(df), "failed": full_rows(failed), "columns": FULL_TABLE_COLUMNS, "rows": full_rows(df),
        "notes": notes, "stage_pages": pages, "counters": counter_tables(report_dir),
        "profile": profile_section(report_dir, ceilings),
        "links": [n for n in ("results.csv", "environment.json", "ceilings.json",
                              *(f for page in STAGE_PAGES for f in page.FILES), "profile.csv")
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
    ap = argparse.ArgumentParser(prog="python -m study.report", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=REPO / "reports",
                    help="directory holding results.csv etc. (default: reports/)")
    ap.add_argument("--check", action="store_true",
                    help="render nothing; exit 1, listing every missing, failed or stale row of the default sweep "
                         "and every missing profile call (a GPU's report must be one current, complete sweep)")
    args = ap.parse_args(argv)
    if not (args.dir / "results.csv").exists():
        print(f"study.report: {args.dir} has no results.csv (a sweep writes reports/<gpu>/)", file=sys.stderr)
        return 2
    if args.check:
        from study.measure.sweep import check
        problems = check(args.dir)
        for p in problems:
            print(p)
        print(f"study.report --check {args.dir}: " + (f"{len(problems)} problem(s)" if problems else
                                                      "one current, complete sweep"))
        return 1 if problems else 0
    print(render(args.dir))
    return 0
