"""Committed data held to its own arithmetic and to physics: the checks behind `python -m study.report --check`
and the CPU tests over every reports/<gpu>/ folder.

Each check reads committed files and returns human-readable problems (an empty list: nothing wrong):

    results_problems    results.csv: tflops = 2MNK/ms, `passed` <=> a finite relerr <= tol and no error,
                        pct_cublas = 100 * tflops / its baseline row's, no row above its precision's ceiling
    profile_problems    profile.csv: no impossible counter on any kernel; per call (its kernels summed,
                        `call_totals`), no throughput above the ceiling and a time within 15% of the sweep's
    sanitizer_problems  gpu-evidence.json: a record marked clean has every count 0 and names its calls
    ptx_problems        ptx.json: each summary and sentence equal to what the compiled units give now

`audit(report_dir)` runs the first two over one GPU's folder; `implausible_calls` names the profiled calls the
report keeps out of its figures.  Nothing here imports torch or Triton.
"""
from __future__ import annotations

import copy
import functools
import json
import math
from pathlib import Path

import pandas as pd

from study.core.paths import ROOT
from study.core.schema import tolerance

REPORTS = ROOT / "reports"
# Rounding: the CSV holds Python's repr of each float, so the arithmetic agrees to about 1e-15; 1e-9 is rounding.
REL = 1e-9
# A profiled call's summed kernel time may differ from the sweep's median by this fraction:
# ncu replays one call with cold caches and its own clock, the sweep times hundreds with L2 flushed.
PROFILE_TIME_REL = 0.15

# Precision -> (the unit that does its work, the products per output term).  A composed method runs its unit's
# work `products` times over (three fp16 products for TCEC, six or nine bf16 ones for the bf16 splits), so its
# ceiling in fp32-equivalent FLOP/s is the unit's divided by that count.  Every precision of
# study/core/schema.py's TOLERANCE is here (tests/test_audit.py); the unit's ceilings are the `measured` entries
# of ceilings.json named "<unit>_..." (the library's tensor-core GEMM) and "mma_sync_<unit>_..." (the mma.sync
# micro-benchmark): the larger one is the least the unit is known to reach.
UNIT_OF: dict[str, tuple[str, int]] = {
    "fp32": ("fp32_fma", 1),
    "tf32": ("tf32", 1),
    "fp16/fp32acc": ("fp16", 1),
    "fp16/fp16acc": ("fp16", 1),
    "fp16": ("fp16", 1),
    "bf16/fp32acc": ("bf16", 1),
    "fp64": ("fp64", 1),
    "int8/int32acc": ("int8", 1),
    "uint8/int32acc": ("int8", 1),
    "fp16x3-tcec": ("fp16", 3),
    "fp16x3-markidis": ("fp16", 3),
    "fp16-inputs": ("fp16", 1),
    "tf32x3": ("tf32", 3),
    "tf32x3-tcacc": ("tf32", 3),
    "bf16x6": ("bf16", 6),
    "bf16x6-tcacc": ("bf16", 6),
    "bf16x9": ("bf16", 9),
    "bf16x9-tcacc": ("bf16", 9),
    # fp8's ceiling is cuBLAS fp8 per-tensor with fp32 accumulation (promoted), fp8_tc_tflops.  Unpromoted
    # accumulation (cuBLAS's fast accumulation, stage 16's tcacc form) runs faster than that, so it is a unit of
    # its own, with no ceiling measured yet.
    "fp8e4m3-tensor/fp32acc": ("fp8", 1),
    "fp8e4m3-row/fp32acc": ("fp8", 1),
    "fp8e4m3-block/fp32acc": ("fp8", 1),
    "fp8e4m3-tensor/tcacc": ("fp8fastacc", 1),
}
# A measured ceiling is one call's median (cuBLAS at 8192^3, a micro-benchmark for FMA and mma.sync), not the
# unit's peak: another shape of the same library may run a little more efficiently at the same clock (the
# committed H100 cuBLAS fp16 row at 2048x8192x8192 is 1.1% above the 8192^3 ceiling, both at 1952-1956 MHz).
# So a row may pass its ceiling by CEILING_MARGIN, and by the ratio of its own SM clock to the clock the
# ceiling was measured at where that is higher (throughput scales with the clock; never scaled down, since the
# power-limited rows run at lower clocks and a better efficiency per clock than the ceiling's call).  What
# this catches is a row off by a factor: a misattributed profile or a wrong time, not a percent.
CEILING_MARGIN = 0.02


# --- reading ---------------------------------------------------------------------------------------------------

def gpu_dirs(reports: Path = REPORTS) -> list[Path]:
    """Every GPU's report folder under reports/ (one with a results.csv): h100, h200, ..."""
    return sorted(p.parent for p in Path(reports).glob("*/results.csv"))


def _read(path: Path) -> pd.DataFrame | None:
    return pd.read_csv(path, dtype=str, keep_default_na=False) if Path(path).exists() else None


def _num(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce")


def _ceilings(report_dir: Path) -> dict | None:
    """ceilings.json, each unit's ceilings joined by the best cuBLAS row of the sweep in its precision ("<unit>_
    cublas_rows", at that row's clock): the library's GEMM at its best shape is as much a measured reach of the
    unit as its 8192^3 call, which runs power-limited on an H200 (there cuBLAS fp16 at 2048x8192x8192 ran 1.9%
    above it, the sweep of 802a346, and a Gluon row 0.3% above that).  Only a row within the ceiling
    ceilings.json gives joins: one above it is a problem the audit reports, not a ceiling."""
    path = Path(report_dir) / "ceilings.json"
    if not path.exists():
        return None
    c = json.loads(path.read_text())
    df = _read(Path(report_dir) / "results.csv")
    if df is None or not len(df):
        return c
    rows = df[(df["backend"] == "cublas") & df["precision"].map(lambda p: UNIT_OF.get(p, ("", 0))[1] == 1)]
    rows = rows.assign(_tflops=_num(rows["tflops"]), _unit=rows["precision"].map(lambda p: UNIT_OF[p][0]))
    given = copy.deepcopy(c)
    within = [r for r in rows.assign(_clock=_num(rows["sm_clock_mhz"])).to_dict("records")
              if 0 < r["_tflops"] <= (ceiling(given, r["precision"], r["_clock"]) or 0.0)]
    for unit in {r["_unit"] for r in within}:
        best = max((r for r in within if r["_unit"] == unit), key=lambda r: r["_tflops"])
        c.setdefault("measured", {})[f"{unit}_cublas_rows"] = float(best["_tflops"])
        c.setdefault("sm_clock_mhz", {})[f"{unit}_cublas_rows"] = float(best["_clock"])
    return c


def _call(r) -> tuple:
    return (r["impl"], r["dtype"], int(r["M"]), int(r["N"]), int(r["K"]))


def _name(key: tuple) -> str:
    impl, dtype, M, N, K = key
    return f"{impl} {dtype} {M}x{N}x{K}"


def ceiling(ceilings: dict, precision: str, sm_clock_mhz: float | None = None) -> float | None:
    """The largest throughput (TFLOP/s, TOP/s) a row of `precision` may show: its unit's best measured ceiling,
    over its products, with CEILING_MARGIN and the clock ratio (see above); None where ceilings.json measured no
    ceiling of that unit (a precision outside UNIT_OF has none: nothing here invents one)."""
    if precision not in UNIT_OF:
        return None
    unit, products = UNIT_OF[precision]
    measured, clocks = ceilings.get("measured", {}), ceilings.get("sm_clock_mhz", {})
    best = None
    for name, value in measured.items():
        if (name.startswith(unit + "_") or name.startswith(f"mma_sync_{unit}_")) and _finite(value) and value > 0:
            scale = 1.0
            if _finite(sm_clock_mhz) and _finite(clocks.get(name)) and clocks[name] > 0:
                scale = max(1.0, sm_clock_mhz / clocks[name])
            best = max(best or 0.0, value * scale)
    return None if best is None else best * (1 + CEILING_MARGIN) / products


def _finite(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


# --- results.csv -----------------------------------------------------------------------------------------------

def results_problems(report_dir: Path) -> list[str]:
    """results.csv held to its own arithmetic (runner.py: tflops = 2MNK / (ms 1e9), pct_cublas = 100 tflops /
    the baseline row's) and to the measured ceilings."""
    df = _read(Path(report_dir) / "results.csv")
    if df is None:
        return [f"{report_dir}: no results.csv"]
    ceilings = _ceilings(report_dir) or {}
    n = {c: _num(df[c]) for c in ("M", "N", "K", "ms", "tflops", "pct_cublas", "relerr", "tol", "sm_clock_mhz")}
    df = df.assign(**{f"_{c}": v for c, v in n.items()})
    tflops_of = {(r["impl"], r["dtype"], r["M"], r["N"], r["K"], r["alpha"], r["beta"]): r["_tflops"]
                 for _, r in df.iterrows()}
    problems = []
    for _, r in df.iterrows():
        what = _name(_call(r))
        passed = r["passed"].strip() == "True"
        flops = 2.0 * r["_M"] * r["_N"] * r["_K"]
        ok = _finite(r["_relerr"]) and _finite(r["_tol"]) and r["_relerr"] <= r["_tol"] and not r["error"].strip()
        if passed != ok:
            problems.append(f"{what}: passed={r['passed']} but relerr {r['relerr']} against tol {r['tol']}"
                            f"{', error ' + repr(r['error'][:80]) if r['error'] else ''}")
        if _finite(r["_tol"]) and r["_tol"] != tolerance(r["precision"], int(r["_K"])):
            problems.append(f"{what}: tol {r['tol']} is not {r['precision']}'s tolerance at K={int(r['_K'])}")
        if passed and not (_finite(r["_tflops"]) and _finite(r["_ms"]) and r["_ms"] > 0):
            problems.append(f"{what}: passed with no finite time or throughput (ms {r['ms']}, tflops {r['tflops']})")
            continue
        if not passed:
            continue
        if abs(r["_tflops"] - flops / (r["_ms"] * 1e9)) > REL * r["_tflops"]:
            problems.append(f"{what}: tflops {r['tflops']} is not 2MNK/ms = {flops / (r['_ms'] * 1e9):.6g}")
        base = tflops_of.get((r["baseline_impl"], r["dtype"], r["M"], r["N"], r["K"], r["alpha"], r["beta"]))
        if r["baseline_impl"] and not _finite(base):
            problems.append(f"{what}: its baseline {r['baseline_impl']} has no row of the same call")
        elif r["baseline_impl"] and abs(r["_pct_cublas"] - 100 * r["_tflops"] / base) > REL * 100 * r["_tflops"] / base:
            problems.append(f"{what}: pct_cublas {r['pct_cublas']} is not 100 x {r['_tflops']:.6g} / "
                            f"{base:.6g} ({r['baseline_impl']})")
        top = ceiling(ceilings, r["precision"], r["_sm_clock_mhz"])
        if top is not None and r["_tflops"] > top:
            problems.append(f"{what}: {r['_tflops']:.1f} TFLOP/s is above {r['precision']}'s ceiling "
                            f"({top:.1f} at {r['_sm_clock_mhz']:.0f} MHz)")
    return problems


# --- profile.csv -----------------------------------------------------------------------------------------------

CALL = ["impl", "dtype", "M", "N", "K"]
# Summed over a call's kernels: times, bytes and counts.  Time-weighted: percentages and per-cycle averages.
SUMMED = ("time_ms", "dram_read_bytes", "dram_write_bytes", "l2_bytes", "l1_bytes", "smem_ld_wavefronts",
          "smem_st_wavefronts", "smem_ld_conflicts", "smem_st_conflicts", "instructions", "smem_bytes",
          "fma_instructions", "tensor_instructions", "shared_ld_instructions", "shared_st_instructions")
NOT_WEIGHTED = set(CALL) | {"backend", "stage", "precision", "kernel", "registers", "gpu", "commit", *SUMMED}


def _profile(report_dir: Path) -> pd.DataFrame | None:
    df = _read(Path(report_dir) / "profile.csv")
    if df is None:
        return None
    for col in df.columns:
        if col not in ("impl", "backend", "stage", "dtype", "precision", "kernel", "gpu", "commit"):
            df[col] = _num(df[col])
    return df


def call_totals(profile: pd.DataFrame) -> pd.DataFrame:
    """One row per profiled call (impl, dtype, M, N, K): times, bytes and counts summed over its kernels, every
    percentage and per-cycle average weighted by kernel time, registers the most any kernel uses, and `kernels`,
    how many kernels the call launched."""
    df = profile.copy()
    weighted = [c for c in df.columns if c not in NOT_WEIGHTED]
    for c in (*SUMMED, *weighted, "registers"):
        if c in df:
            df[c] = _num(df[c])
    time = df["time_ms"].fillna(0)
    for c in weighted:
        df[c] = df[c] * time
    agg = {c: "sum" for c in (*SUMMED, *weighted) if c in df}
    agg.update({c: "first" for c in ("backend", "stage", "precision") if c in df})
    agg.update(registers="max", kernel="size")
    out = df.groupby(CALL, sort=False).agg(agg).rename(columns={"kernel": "kernels"})
    for c in weighted:
        present = df[c].notna().groupby([df[k] for k in CALL], sort=False).any()
        out[c] = (out[c] / out["time_ms"]).where(present.reindex(out.index))
    return out.reset_index()


def _kernel_problems(df: pd.DataFrame) -> list[tuple[tuple, str]]:
    """(call, problem) for each kernel row with a counter no kernel can have."""
    problems = []
    counts = [c for c in df.columns if c.endswith(("_bytes", "_wavefronts", "_conflicts", "instructions"))]
    for _, r in df.iterrows():
        what, bad = f"{_name(_call(r))} kernel {r['kernel'][:60]}", []
        if not (r["time_ms"] > 0):
            bad.append(f"time_ms {r['time_ms']}")
        bad += [f"{c} {r[c]:g}" for c in counts if r[c] < 0]
        bad += [f"{c} {r[c]:g}" for c in df.columns if c.endswith("_pct") and not r[c] <= 100 and pd.notna(r[c])]
        bad += [f"{c} {r[c]:g}" for c in df.columns if c.endswith("_pct") and r[c] < 0]
        if pd.notna(r.get("registers")) and not 0 < r["registers"] <= 255:
            bad.append(f"registers {r['registers']:g}")
        if bad:
            problems.append((_call(r), f"{what}: impossible {', '.join(bad)}"))
    return problems


def _call_problems(report_dir: Path, totals: pd.DataFrame) -> dict[tuple, str]:
    """{call: why} for every profiled call whose summed time implies a throughput above its ceiling or lies more
    than PROFILE_TIME_REL off the sweep's row of the same call."""
    ceilings = _ceilings(report_dir) or {}
    results = _read(Path(report_dir) / "results.csv")
    swept = {}
    if results is not None:
        ok = results[(results["passed"] == "True") & (_num(results["alpha"]) == 1) & (_num(results["beta"]) == 0)]
        keys = zip(ok["impl"], ok["dtype"], *(_num(ok[d]).astype(int) for d in "MNK"))
        swept = dict(zip(keys, zip(_num(ok["ms"]), _num(ok["sm_clock_mhz"]))))
    out = {}
    for _, r in totals.iterrows():
        key, t = _call(r), r["time_ms"]
        row = swept.get(key)
        implied = 2.0 * key[2] * key[3] * key[4] / (t * 1e9) if t > 0 else math.inf
        top = ceiling(ceilings, r["precision"], row[1] if row else None)
        why = []
        if top is not None and implied > top:
            why.append(f"{r['kernels']} kernel(s) summing to {t:.4g} ms imply {implied:.1f} TFLOP/s, above "
                       f"{r['precision']}'s ceiling of {top:.1f}")
        if row and abs(t / row[0] - 1) > PROFILE_TIME_REL:
            why.append(f"{r['kernels']} kernel(s) sum to {t:.4g} ms, {t / row[0]:.2f}x the sweep's {row[0]:.4g} ms")
        if why:
            out[key] = "; ".join(why)
    return out


def implausible_calls(report_dir: Path) -> dict[tuple, str]:
    """{(impl, dtype, M, N, K): reason} for the profiled calls whose numbers cannot be the call's: the report
    keeps them out of every figure and names them.  Worked out once per state of the folder's files."""
    d = Path(report_dir).resolve()
    stamp = tuple((p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None
                  for p in (d / "profile.csv", d / "results.csv", d / "ceilings.json"))
    return dict(_implausible_calls(d, stamp))


@functools.lru_cache(maxsize=16)
def _implausible_calls(report_dir: Path, stamp: tuple) -> dict[tuple, str]:
    df = _profile(report_dir)
    if df is None or df.empty:
        return {}
    out = {key: why for key, why in _kernel_problems(df)}
    out.update(_call_problems(report_dir, call_totals(df)))
    return out


# Calls whose summed kernel time is off the sweep for a measured, understood reason, by GPU folder: still kept
# out of every figure (implausible_calls), but not a problem of the report.  cuBLAS's composed bf16 recipes, whose
# kernels timed one by one summed to 0.82-0.84x their calls on the H100 (each kernel of the chain writes back what
# the one before left dirty, which a kernel timed alone on flushed caches does not), are no longer among them: they
# are profiled as one range each (study/measure/ncu.py, RANGE_PROFILED; docs/method.md).
# h200: stage 15's calls were profiled at 802a346, before the stage was rebuilt on rung 14 (pre-split passes and a
# new GEMM, docs/15_tcec.md); the sweep's rows are of d183105, so the profiled kernels are not the swept ones.  The
# autotuned Triton bf16 call at 4096^3: each process runs the config its own autotuning picks (the profile's process
# a config of 0.186 ms; the sharded sweep's rank one of 0.223 ms, the single-GPU sweep's one of 0.201 ms).
_TCEC_FORMS = ("cuda:15_tcec", "gluon:15_tcec", "triton:15_tcec")
EXPLAINED_OFF_SWEEP: dict[str, set[tuple]] = {
    "h200": {(f"{form}{variant}", "fp32", 4096, 4096, 4096) for form in _TCEC_FORMS
             for variant in ("", "-markidis", "-nocorr")} | {("triton:tuned", "bf16", 4096, 4096, 4096)},
}


def profile_problems(report_dir: Path) -> list[str]:
    """Impossible counters on any kernel row, then each call whose summed kernels cannot be the call (but for
    EXPLAINED_OFF_SWEEP's, where the only finding is the time against the sweep)."""
    df = _profile(report_dir)
    if df is None:
        return []
    calls = _call_problems(report_dir, call_totals(df))
    explained = EXPLAINED_OFF_SWEEP.get(Path(report_dir).name, set())
    return [why for _, why in _kernel_problems(df)] + [
        f"{_name(k)}: {why}" for k, why in calls.items() if not (k in explained and "ceiling" not in why)]


# --- gpu-evidence.json and ptx.json --------------------------------------------------------------------------

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


def sanitizer_problems(record: dict) -> list[str]:
    """A sanitizer record marked clean must be clean by its counts: each tool ran, found 0 errors, 0 other
    reports and exited 0 after reaching an implementation, and the record names the calls it made."""
    if record.get("outcome") != "clean":
        return []
    name, problems = record.get("impl", "?"), []
    errors, totals = record.get("errors") or {}, record.get("totals") or {}
    for tool in SANITIZER_TOOLS:
        t = totals.get(tool) or {}
        if errors.get(tool) != 0:
            problems.append(f"{name}: marked clean with {tool} errors {errors.get(tool, 'not run')}")
        bad = {k: t.get(k) for k in ("errors", "other", "exit") if t.get(k) != 0}
        if bad or not t.get("implementations_reached"):
            problems.append(f"{name}: marked clean with {tool} totals {t or 'missing'}")
    problems += [f"{name}: marked clean with unknown tool {k}" for k in sorted(set(errors) - set(SANITIZER_TOOLS))]
    if not record.get("calls"):
        problems.append(f"{name}: marked clean, but names no call it sanitized")
    return problems


def evidence_problems(path: Path = REPORTS / "gpu-evidence.json") -> list[str]:
    doc = json.loads(Path(path).read_text())
    return [p for r in doc.get("sanitizer", []) for p in sanitizer_problems(r)]


def ptx_problems(committed: dict, derived: dict) -> list[str]:
    """ptx.json (`committed`) against the entries re-derived from the compiled units now (`derived`, as
    ptx_summary.build returns them): every summary and the sentence the pages publish must be the derived one,
    and the sentence must be the summary's."""
    from study.measure.ptx_summary import sentence
    problems = []
    for name in sorted(set(committed) | set(derived)):
        c, d = committed.get(name), derived.get(name)
        if c is None or d is None:
            problems.append(f"{name}: in {'the compiled units' if c is None else 'ptx.json'} only")
            continue
        for field in ("key", "units", "summary", "sentence"):
            if c.get(field) != d.get(field):
                problems.append(f"{name}: ptx.json's {field} {str(c.get(field))[:80]!r} is not what its units "
                                f"give: {str(d.get(field))[:80]!r}")
        if c.get("summary") is not None and c.get("sentence") != sentence(c["summary"]):
            problems.append(f"{name}: ptx.json's sentence is not its summary's")
    return problems


# --- one GPU's folder --------------------------------------------------------------------------------------------

def audit(report_dir: Path) -> list[str]:
    """Every problem of one GPU's committed data (results.csv, profile.csv against ceilings.json)."""
    return results_problems(report_dir) + profile_problems(report_dir)
