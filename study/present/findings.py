"""What the study found on one GPU, said in sentences generated from its results, so that they cannot go stale.

Each finding is a topic, a sentence or two, and the family of the chart that shows it (study/present/interactive.py).
The landing page, each GPU's page and the README's results block (python -m study.report --readme) all print
these; a stage with its own page module or page part (present/pages.py) adds its own findings.  Only passing rows
count, and a stale row (measured on code that has changed since) is left out by the caller.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from study.core.stages import STAGES
from study.core.paths import CUDA_DIR
from study.measure.frame import load_json, variant_of
from study.present import ladder, spread
from study.present.pages import STAGE_EXTRAS, STAGE_PAGES
from study.present.stage_pages import repo_file

BACKENDS = {"cuda": "CUDA", "triton": "Triton", "gluon": "Gluon"}
SGEMM, SGEMM_NAME = "cublas", "cuBLAS SGEMM (fp32, TF32 off)"
TC_DTYPE, TC_PRECISION = "fp16", "fp16/fp32acc"     # the tensor-core ladder is read in fp16 with fp32 accumulation
TITLES = {s.number: s.title for s in STAGES}


@dataclass(frozen=True)
class Finding:
    topic: str
    text: str
    family: str = ""        # the interactive family whose ladder shows it ("" when none)


def largest_square(df: pd.DataFrame) -> int | None:
    sq = df[(df["M"] == df["N"]) & (df["N"] == df["K"]) & df["passed"]]
    return int(sq["M"].max()) if len(sq) else None


def _at(df: pd.DataFrame, n: int) -> pd.DataFrame:
    """Passing rows at n^3, with a column `main`: the row is its stage's main implementation, not a variant."""
    at = df[(df["M"] == n) & (df["N"] == n) & (df["K"] == n) & df["passed"] & (df["tflops"] > 0)]
    return at.assign(main=[variant_of(s, i) == "" for s, i in zip(at["stage"], at["impl"])])


def _one(rows: pd.DataFrame, **eq) -> pd.Series | None:
    for col, v in eq.items():
        rows = rows[rows[col] == v]
    return rows.iloc[-1] if len(rows) else None


def _ladder(at: pd.DataFrame, dtype: str, precision: str, backend: str) -> pd.DataFrame:
    rows = at[(at["dtype"] == dtype) & (at["precision"] == precision) & (at["backend"] == backend)
              & (at["stage"] != "baseline") & at["main"]]
    return rows.sort_values("stage")


def _m(r, clock) -> str:
    """A value as findings state it: "45.6 ±0.3%", and "(power-limited)" where its clock was held down."""
    return ladder.compact(r) + (" (power-limited)" if spread.power_limited(r, clock) else "")


def _span(ratios) -> str:
    """"1.55–3.02x", or "2.73x" for one ratio."""
    lo, hi = min(ratios), max(ratios)
    return f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x"


def _stages(numbers: list[str]) -> str:
    return "stage " + numbers[0] if len(numbers) == 1 else "stages " + ", ".join(numbers[:-1]) + " and " + numbers[-1]


def simt_ladder(at: pd.DataFrame, n: int, clock) -> Finding | None:
    lad = _ladder(at, "fp32", "fp32", "cuda")
    if len(lad) < 2:
        return None
    first, last = lad.iloc[0], lad.iloc[-1]
    gains = lad["tflops"].values[1:] / lad["tflops"].values[:-1]
    i = int(gains.argmax()) + 1
    big = lad.iloc[i]
    return Finding("The SIMT ladder", (
        f"At {n}³ fp32, CUDA climbs {last['tflops'] / first['tflops']:.0f}x, from {_m(first, clock)} TFLOP/s "
        f"(stage {first['stage']}) to {_m(last, clock)} (stage {last['stage']}); the largest step is stage "
        f"{big['stage']}, {TITLES.get(big['stage'], '').lower()}: {gains[i - 1]:.1f}x."), "fp32")


def best_simt(at: pd.DataFrame, n: int, clock) -> Finding | None:
    sgemm = _one(at, impl=SGEMM, dtype="fp32")
    hand = at[(at["dtype"] == "fp32") & (at["precision"] == "fp32") & (at["stage"] != "baseline") & at["main"]]
    if sgemm is None or hand.empty:
        return None
    parts = []
    for b, title in BACKENDS.items():
        mine = hand[hand["backend"] == b]
        if len(mine):
            r = mine.loc[mine["tflops"].idxmax()]
            parts.append(f"{title} {r['tflops'] / sgemm['tflops']:.0%} ({_m(r, clock)}, stage {r['stage']})")
    return Finding("Best SIMT against cuBLAS", (
        f"The best fp32 SIMT kernels reach " + ", ".join(parts) + f" of {SGEMM_NAME}, {_m(sgemm, clock)} TFLOP/s "
        f"at {n}³."), "fp32")


def _standing(at: pd.DataFrame, backend: str) -> tuple[list, list, list]:
    """(ahead, tied, behind) of a backend against the CUDA form of each stage, as (stage, ratio), in the stage's
    own ladder dtype; a difference inside the two rows' spreads is a tie."""
    out = ([], [], [])
    for dtype, precision in (("fp32", "fp32"), (TC_DTYPE, TC_PRECISION)):
        cuda = _ladder(at, dtype, precision, "cuda").set_index("stage")
        other = _ladder(at, dtype, precision, backend).set_index("stage")
        for s in cuda.index.intersection(other.index):
            a, c = other.loc[s], cuda.loc[s]
            word = spread.compare_word(a, c, "ahead", "behind", "tied")
            out[("ahead", "tied", "behind").index(word)].append((s, a["tflops"] / c["tflops"]))
    return out


def versus_cuda(at: pd.DataFrame, n: int, clock) -> Finding | None:
    """Triton and Gluon against the CUDA form of the same stage: how many stages ahead, tied, behind."""
    parts = []
    for b in ("triton", "gluon"):
        ahead, tied, behind = _standing(at, b)
        ratios = [r for _, r in ahead + tied + behind]
        if ratios:
            parts.append(f"{BACKENDS[b]} is ahead at {len(ahead)}, tied at {len(tied)} and behind at {len(behind)} "
                         f"({_span(ratios)})")
    if not parts:
        return None
    return Finding("Triton and Gluon against CUDA", (
        f"Stage by stage at {n}³ (fp32 SIMT, {TC_DTYPE} tensor-core), " + "; ".join(parts)
        + ". Ties are differences inside the p20–p80 spreads."), "")


def tensor_core_ladder(at: pd.DataFrame, n: int, clock) -> Finding | None:
    base = _one(at, impl="cublas", dtype=TC_DTYPE)
    if base is None:
        return None
    tops = {b: lad.loc[lad["tflops"].idxmax()] for b in BACKENDS
            if len(lad := _ladder(at, TC_DTYPE, TC_PRECISION, b))}
    if not tops:
        return None
    first = _ladder(at, TC_DTYPE, TC_PRECISION, "cuda")
    parts = [f"{BACKENDS[b]} {_m(r, clock)} (stage {r['stage']}, {spread.compare_word(r, base, 'ahead of', 'behind', 'tied with')} it)"
             for b, r in tops.items()]
    start = (f"from {_m(first.iloc[0], clock)} (CUDA, stage {first.iloc[0]['stage']}) " if len(first) else "")
    return Finding("The tensor-core ladder", (
        f"In {TC_DTYPE} at {n}³ the ladder climbs {start}to cuBLAS {TC_DTYPE}'s {_m(base, clock)} TFLOP/s: "
        + ", ".join(parts) + "."), "fp16_bf16")


def cuda_instruction(stage: str) -> str:
    """The MMA instruction a CUDA stage issues, read from its source: wgmma, mma.sync (PTX or mma_sync.cuh), or
    WMMA (nvcuda::wmma); "" for none."""
    path = next(CUDA_DIR.glob(f"{stage}_*.cu"), None)
    text = path.read_text(encoding="utf-8") if path else ""
    for marker, name in (("wgmma.mma_async", "wgmma"), ("mma.sync.aligned", "mma.sync"), ("wmma::mma_sync", "WMMA"),
                         ('#include "mma_sync.cuh"', "mma.sync")):
        if marker in text:
            return name
    return ""


def triton_instruction(ptx: dict, impl: str, dtype: str = "f16") -> str:
    """The MMA instruction of an implementation's PTX in one operand type (reports/ptx.json): wgmma or mma.sync."""
    mma = ((ptx.get(impl) or {}).get("summary") or {}).get("mma") or []
    names = {m.split(".")[0] for m in mma if f" {dtype} ->" in m}
    return "wgmma" if "wgmma" in names else "mma.sync" if "mma" in names else ""


def instructions(at: pd.DataFrame, n: int, ptx: dict) -> Finding | None:
    """Where Triton's tensor-core form compiles to another MMA instruction than the CUDA form of its stage: its
    ratio there compares instructions, not like for like."""
    cuda = _ladder(at, TC_DTYPE, TC_PRECISION, "cuda").set_index("stage")
    tri = _ladder(at, TC_DTYPE, TC_PRECISION, "triton").set_index("stage")
    unlike = {}
    for s in cuda.index.intersection(tri.index):
        mine, theirs = triton_instruction(ptx, tri.loc[s, "impl"]), cuda_instruction(s)
        if mine and theirs and mine != theirs:
            unlike.setdefault((mine, theirs), []).append((s, tri.loc[s, "tflops"] / cuda.loc[s, "tflops"]))
    if not unlike:
        return None
    parts = [f"{_stages([s for s, _ in v])} Triton's tl.dot compiles to {mine} where CUDA issues {theirs} "
             f"({_span([r for _, r in v])})" for (mine, theirs), v in unlike.items()]
    return Finding("Not like for like", (
        f"At " + "; at ".join(parts) + f" at {n}³ {TC_DTYPE}: these ratios compare instructions, not the stage's "
        "technique."), "")


def triton_losses(at: pd.DataFrame, n: int) -> Finding | None:
    """Where Triton is behind the CUDA form of its stage beyond the spread, with the worst stage's recorded reason
    (what Triton could not express, study/core/stages.py)."""
    _, _, behind = _standing(at, "triton")
    if not behind:
        return None
    worst, r = min(behind, key=lambda t: t[1])
    why = next((s.notes.get("triton", "") for s in STAGES if s.number == worst), "").split(":")[0]
    return Finding("Where Triton loses", (
        f"Triton is behind CUDA at {_stages([s for s, _ in behind])} ({_span([x for _, x in behind])} at {n}³); at stage {worst}, the worst, "
        + (f"{why}." if why else "nothing is recorded as missing.")), "")


def findings(df: pd.DataFrame, report_dir: Path, ptx: dict | None = None) -> list[Finding]:
    """The findings of one GPU's results (a prepared frame, stale rows already left out)."""
    n = largest_square(df)
    if n is None:
        return []
    size = 4096 if largest_square(df[df["M"] == 4096]) else n     # the study's reference size, where measured
    at = _at(df, size)
    off = {s.number for s in STAGES if not s.on_ladders}     # stages of another regime: their own findings only
    at = at[~at["stage"].astype(str).str.zfill(2).isin(off)]
    clock = (load_json(Path(report_dir) / "environment.json") or {}).get("sm_clock_max_mhz")
    out = [f(at, size, clock) for f in (simt_ladder, best_simt, versus_cuda, tensor_core_ladder)]
    out += [instructions(at, size, ptx or {}), triton_losses(at, size)]
    for page in (*STAGE_PAGES, *STAGE_EXTRAS):
        out += [Finding(topic, text, family) for topic, text, family in page.findings(df, report_dir, size)]
    return [f for f in out if f is not None]


def ptx_facts(report_dir: Path) -> dict:
    """reports/ptx.json (python -m study.ptx), wherever the stage pages find it."""
    return repo_file(report_dir, "ptx.json") or {}
