"""What the study found on one GPU, said in sentences generated from its results, so that they cannot go stale.

Each finding is a topic, a sentence or two, and the family of the chart that shows it (study/present/interactive.py).
The landing page, each GPU's page and the README's results block (python -m study.report --readme) all print
these; a stage with its own page module (present/pages.py) adds its own findings.  Only passing rows count, and
a stale row (measured on code that has changed since) is left out by the caller.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from study.core.stages import STAGES
from study.measure.frame import variant_of
from study.present.formatting import fmt_num
from study.present.pages import STAGE_PAGES
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


def _tf(x) -> str:
    return fmt_num(float(x))


def _one(rows: pd.DataFrame, **eq) -> pd.Series | None:
    for col, v in eq.items():
        rows = rows[rows[col] == v]
    return rows.iloc[-1] if len(rows) else None


def _ladder(at: pd.DataFrame, dtype: str, precision: str, backend: str) -> pd.DataFrame:
    rows = at[(at["dtype"] == dtype) & (at["precision"] == precision) & (at["backend"] == backend)
              & (at["stage"] != "baseline") & at["main"]]
    return rows.sort_values("stage")


def simt_ladder(at: pd.DataFrame, n: int) -> Finding | None:
    lad = _ladder(at, "fp32", "fp32", "cuda")
    if len(lad) < 2:
        return None
    first, last = lad.iloc[0], lad.iloc[-1]
    gains = lad["tflops"].values[1:] / lad["tflops"].values[:-1]
    i = int(gains.argmax()) + 1
    big = lad.iloc[i]
    return Finding("The SIMT ladder", (
        f"At {n}³ fp32, the CUDA SIMT ladder climbs from {_tf(first['tflops'])} TFLOP/s (stage {first['stage']}, "
        f"{TITLES.get(first['stage'], '')}) to {_tf(last['tflops'])} (stage {last['stage']}), "
        f"{last['tflops'] / first['tflops']:.0f}x. The largest single step is stage {big['stage']} "
        f"({TITLES.get(big['stage'], '')}): {gains[i - 1]:.2f}x over stage {lad.iloc[i - 1]['stage']}."), "fp32")


def best_simt(at: pd.DataFrame, n: int) -> Finding | None:
    sgemm = _one(at, impl=SGEMM, dtype="fp32")
    hand = at[(at["dtype"] == "fp32") & (at["precision"] == "fp32") & (at["stage"] != "baseline") & at["main"]]
    if sgemm is None or hand.empty:
        return None
    parts = []
    for b, title in BACKENDS.items():
        mine = hand[hand["backend"] == b]
        if len(mine):
            r = mine.loc[mine["tflops"].idxmax()]
            parts.append(f"{title} {_tf(r['tflops'])} (stage {r['stage']}, {r['tflops'] / sgemm['tflops']:.1%} of it)")
    return Finding("Best SIMT against cuBLAS", (
        f"Against {SGEMM_NAME} at {_tf(sgemm['tflops'])} TFLOP/s, timed adjacently at {n}³, the best hand-written "
        "fp32 SIMT kernels reach " + ", ".join(parts) + "."), "fp32")


def versus_cuda(at: pd.DataFrame, n: int) -> Finding | None:
    """Triton and Gluon against the CUDA form of the same stage, in the stage's own ladder dtype."""
    parts = []
    for b in ("triton", "gluon"):
        ratios = []
        for dtype, precision in (("fp32", "fp32"), (TC_DTYPE, TC_PRECISION)):
            cuda = _ladder(at, dtype, precision, "cuda").set_index("stage")["tflops"]
            other = _ladder(at, dtype, precision, b).set_index("stage")["tflops"]
            ratios += [(s, other[s] / cuda[s]) for s in cuda.index.intersection(other.index)]
        if not ratios:
            continue
        ahead = [f"{s} ({r:.2f}x)" for s, r in ratios if r > 1.05]
        behind = [f"{s} ({r:.2f}x)" for s, r in ratios if r < 0.95]
        level = len(ratios) - len(ahead) - len(behind)
        parts.append(f"{BACKENDS[b]} is within 5% of CUDA at {level} of {len(ratios)} stages, ahead at "
                     f"{', '.join(ahead) or 'none'} and behind at {', '.join(behind) or 'none'}")
    if not parts:
        return None
    return Finding("Triton and Gluon against CUDA", (
        f"Per stage at {n}³ (fp32 for the SIMT stages, {TC_DTYPE} for the tensor-core stages; ratio to the CUDA "
        "form's TFLOP/s): " + "; ".join(parts) + "."), "")


def tensor_core_ladder(at: pd.DataFrame, n: int) -> Finding | None:
    base = _one(at, impl="cublas", dtype=TC_DTYPE)
    if base is None:
        return None
    parts = []
    for b, title in BACKENDS.items():
        lad = _ladder(at, TC_DTYPE, TC_PRECISION, b)
        full = at[(at["dtype"] == TC_DTYPE) & (at["precision"] == TC_PRECISION) & (at["backend"] == b)
                  & (at["stage"] != "baseline")]
        if lad.empty:
            continue
        best = full.loc[full["tflops"].idxmax()]
        parts.append(f"{title} from {_tf(lad.iloc[0]['tflops'])} (stage {lad.iloc[0]['stage']}) to "
                     f"{_tf(best['tflops'])} ({best['impl']}, {best['tflops'] / base['tflops']:.1%})")
    if not parts:
        return None
    return Finding("The tensor-core ladder", (
        f"In {TC_DTYPE} with fp32 accumulation at {n}³, against cuBLAS {TC_DTYPE} at {_tf(base['tflops'])} TFLOP/s "
        "(% of it): " + "; ".join(parts) + "."), "fp16_bf16")


def _emitted(ptx: dict, impl: str) -> str:
    """What an implementation's PTX has (reports/ptx.json): its MMA instructions and its copy engines."""
    s = (ptx.get(impl) or {}).get("summary") or {}
    mma = sorted({m.split(" ")[0] for m in s.get("mma") or []})
    copies = ["TMA copies"] * bool(s.get("tma")) + ["cp.async"] * bool(s.get("cp_async"))
    return ", ".join([", ".join(mma) or "no MMA (FMA only)", *copies])


def triton_wins(at: pd.DataFrame, n: int, ptx: dict) -> Finding | None:
    """Where Triton is 10% or more ahead of the CUDA form of its stage, with what its PTX shows it emitted; and
    where it is 10% or more behind, with what the stage records Triton could not express."""
    notes = {s.number: s.notes.get("triton", "") for s in STAGES}
    wins, losses = [], []
    for dtype, precision in (("fp32", "fp32"), (TC_DTYPE, TC_PRECISION)):
        cuda = _ladder(at, dtype, precision, "cuda").set_index("stage")
        tri = _ladder(at, dtype, precision, "triton").set_index("stage")
        for s in cuda.index.intersection(tri.index):
            r = tri.loc[s, "tflops"] / cuda.loc[s, "tflops"]
            what = f"stage {s} {dtype} ({_tf(tri.loc[s, 'tflops'])} against {_tf(cuda.loc[s, 'tflops'])}, {r:.2f}x"
            if r >= 1.1:
                wins.append(what + f"): its PTX has {_emitted(ptx, tri.loc[s, 'impl'])}")
            elif r <= 1 / 1.1:
                why = notes.get(s, "")
                losses.append(what + (f"): {why}" if why else ")"))
    if not wins and not losses:
        return None
    text = (f"Triton wins at {'; at '.join(wins)}." if wins else "Triton is nowhere 10% ahead of CUDA.")
    if losses:
        text += f" It loses at {'; at '.join(losses)}."
    return Finding("Where Triton wins, and why", text, "")


def findings(df: pd.DataFrame, report_dir: Path, ptx: dict | None = None) -> list[Finding]:
    """The findings of one GPU's results (a prepared frame, stale rows already left out)."""
    n = largest_square(df)
    if n is None:
        return []
    size = 4096 if largest_square(df[df["M"] == 4096]) else n     # the study's reference size, where measured
    at = _at(df, size)
    out = [f(at, size) for f in (simt_ladder, best_simt, versus_cuda, tensor_core_ladder)]
    out.append(triton_wins(at, size, ptx or {}))
    for page in STAGE_PAGES:
        out += [Finding(topic, text, family) for topic, text, family in page.findings(df, report_dir, size)]
    return [f for f in out if f is not None]


def ptx_facts(report_dir: Path) -> dict:
    """reports/ptx.json (python -m study.ptx), wherever the stage pages find it."""
    return repo_file(report_dir, "ptx.json") or {}
