"""The accuracy study of the stages that trade fp32 accuracy for tensor-core speed (`Stage.accuracy_study`): how
far each fp32-input method is from a float64 reference as K grows, for eight input distributions, and seed
002's Figure 8 (batched SGEMM: TFLOP/s and error) on this GPU.

    python -m study.accuracy             # reports/accuracy.csv, reports/fig8.csv (sized for < 3 min on an H100)
    python -m study.accuracy --quick     # K in 256, 4096; Figure 8 at k = 1024, 4096
    python -m study.accuracy --no-fig8 --ks 1024 --distributions wide

Error versus K (accuracy.csv): M = N = --size, one row per (distribution, K, method).  The methods are every
registered implementation that takes fp32 inputs and is either of a studied stage or a baseline, plus "cublas:fp16":
torch.mm of the inputs rounded to fp16, fp32 accumulation and fp32 output (one fp16 tensor-core GEMM with
no correction; on `wide` inputs the fp16 cast overflows to inf, which is the point).

The inputs (DISTRIBUTIONS; sample_pair() draws A and B, and each Distribution says how): randn, uniform [0, 1)
and wide (exponents over 2^+-24) at every K of KS; tiny and huge (randn at the two ends of fp32's exponent
range), spread (rows of A and columns of B scaled by up to 2^+-40), cancel (D far smaller than |A||B|) and
negative (uniform (-1, 0]) at K = 256 and 4096 only (Distribution.ks).  Budget of the default run: the error-vs-K
part is 12 + 10 = 22 inputs of M = N = 1024.  On an H100 with 23 methods and cold kernel caches (2026-11-24, before
`negative` was added) it took 84 s, 72 of them the first calls' compilation and about 1 s the 8 inputs of the
added distributions; Figure 8 took 12 s, 102 s in all.

Errors (ErrorTally; METRIC_DEFINITIONS says the same for the report), with R = A @ B and |A||B| the product
of the elementwise absolute values, both in float64 from the same fp32 inputs:
  relerr         ||D - R||_F / ||R||_F  (relative Frobenius)
  median_relerr  median over elements with R != 0 of |D - R| / |R|  (the metric of the Ozaki-scheme papers)
  componentwise  max over elements of |D - R| / (|A||B|)  (0/0 counts 0, x/0 counts inf): the componentwise
                 error bound of a dot product, so an element whose R is near zero through cancellation does
                 not dominate it as it dominates max |D - R| / |R|
A D with any NaN/inf gets inf for all of them, and `nonfinite` counts the bad elements.

Figure 8 (fig8.csv): 256 independent products of 1024 x k by k x 1024, uniform [0, 1) inputs, each
implementation of a studied stage on --fig8-backends through `Impl.batched` against cuBLAS batched SGEMM
(torch.bmm, TF32 off).

This module imports torch only inside functions, so the report can read its column lists and its distributions'
names and descriptions on a machine without torch.
"""
from __future__ import annotations

import csv
import datetime as dt
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from study.core import cli
from study.core.paths import ROOT

KS = (256, 1024, 4096, 16384)
QUICK_KS = (256, 4096)
# `wide`: |x| = 2^e with e uniform in [-24, 24), random signs.  fp16 holds magnitudes up to 65504 (2^16) and
# normals down to 2^-14, so a sixth of these overflow an fp16 split to inf and a fifth fall into its
# subnormals; tf32 keeps fp32's 8-bit exponent, so a tf32 split sees none of that.
WIDE_EXPONENT = 24
# `tiny` and `huge`: randn times 2^-60 and 2^58.  A product of two tiny values is near 2^-120, just above fp32's
# smallest normal (2^-126), so the low parts of a split (2^-8 and 2^-16 below their value) multiply into fp32
# subnormals, which tensor-core accumulators may flush.  The huge side stops at 2^58, not 2^60: an element of D is
# 2^(2e) times a sum of K products of two normal draws (standard deviation sqrt(K)), and with 2^60 its standard
# deviation at K = 4096 is already 2^126, so dozens of the elements of a 1024 x 1024 D (75 in one draw) pass fp32's
# largest value (2^128) and even SGEMM returns inf.  At 2^58 the largest element over K <= 16384 stays near 2^125.
TINY_EXPONENT, HUGE_EXPONENT = -60, 58
# `spread`: each row of A and each column of B scaled by 2^e, e a uniform integer in [-40, 40], so rows and columns
# differ by up to 2^80 and the elements of D by up to 2^160 (2^-80 to 2^80 times a randn dot product).
SPREAD_EXPONENT = 40
# `cancel`: B's lower half is -Y + 2^-12 Z, so D = 2^-12 X Z from terms of size |X||Y|.
CANCEL_EXPONENT = -12


@dataclass(frozen=True)
class Distribution:
    """One input distribution: its name in accuracy.csv, its name and its recipe in the report's words, the K values
    of a default run, and whether A and B are drawn together (sample_pair() only) or each on its own (sample())."""
    name: str
    label: str
    about: str
    ks: tuple[int, ...] = KS
    joint: bool = False


DISTRIBUTION_LIST = (
    Distribution("randn", "randn", "A and B standard normal"),
    Distribution("uniform", "uniform [0, 1)", "A and B uniform on [0, 1): no cancellation, R = |A||B|"),
    Distribution("wide", "wide-exponent",
                 f"|x| = 2^e, e uniform in [-{WIDE_EXPONENT}, {WIDE_EXPONENT}), random signs: an fp16 split overflows "
                 "(beyond 65504) or falls into subnormals, where a tf32 or bf16 split (fp32's exponent) does not"),
    Distribution("tiny", "tiny", f"randn x 2^{TINY_EXPONENT}: products near 2^{2 * TINY_EXPONENT}, where the low parts "
                 "of a split multiply into fp32 subnormals (and fp16 holds none of the inputs)", QUICK_KS),
    Distribution("huge", "huge", f"randn x 2^{HUGE_EXPONENT}: D up to about 2^125 (fp32 overflows at 2^128), beyond "
                 "fp16's range but inside bf16's and tf32's", QUICK_KS),
    Distribution("spread", "row/column-spread",
                 f"randn, each row of A and each column of B scaled by 2^e, e a uniform integer in [-{SPREAD_EXPONENT}, "
                 f"{SPREAD_EXPONENT}]: the elements of D span 2^+-{2 * SPREAD_EXPONENT}", QUICK_KS, joint=True),
    Distribution("cancel", "cancelling",
                 f"A = [X, X], B = [Y; -Y + 2^{CANCEL_EXPONENT} Z] (X, Y, Z randn, K split in halves): D = "
                 f"2^{CANCEL_EXPONENT} X Z, some 2^-16 (K = 256) to 2^-18 (K = 4096) of |A||B|", QUICK_KS, joint=True),
    Distribution("negative", "all-negative", "A and B uniform on (-1, 0]: no cancellation, R = |A||B|, every "
                 "input negative: a split or accumulator that rounds one way, not by magnitude, shows as a bias",
                 QUICK_KS),
)
DISTRIBUTION = {d.name: d for d in DISTRIBUTION_LIST}
DISTRIBUTIONS = tuple(DISTRIBUTION)
# Seed 002's text does not list Figure 8's k values (the figure is a plot).  k = 8192 already takes 17 GB of
# operands (256 x 1024 x 8192 x 4 B each for A and B); 16384 (34 GB, and twice the time) is left out.
FIG8_KS = (1024, 2048, 4096, 8192)
QUICK_FIG8_KS = (1024, 4096)
FIG8_BATCH, FIG8_MN = 256, 1024
FP16_METHOD = "cublas:fp16"
BMM_METHOD = "cublas:bmm"

ACCURACY_COLUMNS = (
    "distribution",   # one of DISTRIBUTIONS (see sample_pair())
    "M", "N", "K",
    "method",         # registry name, or cublas:fp16 (defined in this module)
    "backend", "stage", "precision",
    "relerr",         # ||D - R||_F / ||R||_F against the float64 product R of the same fp32 inputs
    "median_relerr",  # median over elements with R != 0 of |D - R| / |R| (see ErrorTally)
    "componentwise",  # max over elements of |D - R| / (|A||B|), |A||B| in float64 (see ErrorTally)
    "nonfinite",      # NaN/inf elements of D; when > 0 every error is inf
    "seed",           # of the inputs, shared by every method of this (distribution, K)
    "error",          # exception text when the method raised; the row is still written
    "gpu", "commit", "date",
)
FIG8_COLUMNS = (
    "method", "backend", "stage", "precision",
    "batch", "M", "N", "K",
    "launch",         # batched (one launch, launcher has .batched) | loop (one checked call per matrix) | torch.bmm
    "ms", "ms_p20", "ms_p80", "reps",
    "tflops",         # batch * 2*M*N*K / ms, CUDA events, median
    "sgemm_tflops",   # cuBLAS batched SGEMM at the same k, timed just before
    "x_sgemm",        # tflops / sgemm_tflops
    "relerr", "median_relerr", "componentwise",   # over all `batch` products, against float64 (as accuracy.csv)
    "seed002_max_relerr",   # seed 002's Figure 8 metric: max over elements with R != 0 of |D - R| / |R|
    "nonfinite",
    "sm_clock_mhz", "seed", "error",
    "gpu", "commit", "date",
)

METRIC_DEFINITIONS = {
    "relerr": "relative Frobenius error ||D - R||_F / ||R||_F, R the float64 product of the same fp32 inputs",
    "median_relerr": "median over the elements with R != 0 of |D - R| / |R| (the elementwise measure of the "
                     "Ozaki-scheme papers; a typical element, not the worst)",
    "componentwise": "max over the elements of |D - R| / (|A||B|), |A||B| the float64 product of the elementwise "
                     "absolute values (0/0 counts 0): the worst element measured against the size of its own dot "
                     "product's terms, so cancellation to a near-zero R does not inflate it",
}
# Seed 002 names its accuracy metric only as "a max relative error" (Section 4.4.2, Figure 8) and gives no
# formula.  We read it elementwise: max_ij |D_ij - R_ij| / |R_ij|.  On inputs with mixed signs an element of R
# near zero (cancellation) dominates it, so accuracy.csv does not record it; fig8.csv keeps it, under a name that
# says whose it is, beside the metrics above.  Figure 8 runs on uniform [0, 1) inputs (the seed does not say
# which), where R = |A||B| elementwise, so there it equals `componentwise`.
SEED002_MAX_RELERR_DEFINITION = ("max over elements with R != 0 of |D - R| / |R|, R the float64 product; seed 002 "
                                 "(Section 4.4.2) names \"a max relative error\" without a formula")


# --- inputs and metrics ------------------------------------------------------------------------------

def _unknown(dist: str) -> ValueError:
    return ValueError(f"unknown distribution {dist!r}; known: {', '.join(DISTRIBUTIONS)}")


def sample(dist: str, shape: tuple[int, ...], generator, device="cpu"):
    """fp32 values of one distribution drawn on their own (a Distribution that is not `joint`): randn; uniform
    [0, 1); wide (|x| = 2^e, e ~ U[-24, 24), random sign); tiny and huge (randn x 2^-60, x 2^58); negative
    (uniform on (-1, 0]).  A joint distribution (spread, cancel) needs both operands: sample_pair()."""
    import torch
    kw = {"generator": generator, "device": device, "dtype": torch.float32}
    if dist not in DISTRIBUTION:
        raise _unknown(dist)
    if DISTRIBUTION[dist].joint:
        raise ValueError(f"distribution {dist!r} draws A and B together: use sample_pair()")
    if dist == "uniform":
        return torch.rand(shape, **kw)
    if dist == "negative":
        return -torch.rand(shape, **kw)
    if dist == "wide":
        e = torch.rand(shape, **kw) * (2 * WIDE_EXPONENT) - WIDE_EXPONENT
        sign = torch.randint(0, 2, shape, generator=generator, device=device).to(torch.float32) * 2 - 1
        return torch.exp2(e) * sign
    scale = {"tiny": 2.0**TINY_EXPONENT, "huge": 2.0**HUGE_EXPONENT}.get(dist, 1.0)   # exact: a power of two
    return torch.randn(shape, **kw) * scale


def sample_pair(dist: str, m: int, k: int, n: int, generator, device="cpu", batch: tuple[int, ...] = ()):
    """A (batch x m x k) and B (batch x k x n), fp32, of one distribution.  Independent distributions draw A, then
    B, with sample() (so a seed gives what two sample() calls gave).  The joint ones:

    spread: each row of A and each column of B scaled by a power of two: A[i, :] = 2^a_i X[i, :] and
      B[:, j] = 2^b_j Y[:, j], with X, Y randn and a_i, b_j uniform integers in [-40, 40].  Every element of
      D = 2^(a_i + b_j) (X Y)[i, j] keeps randn's relative structure; what changes is where in the exponent range
      it sits (2^-80 to 2^80 times a randn dot product), which an fp16 split cannot cover and a scaled split must
      handle row by row.
    cancel: K is split in halves of h = K // 2: A = [X, X] and B = [Y; -Y + 2^-12 Z], X (m x h), Y, Z (h x n) randn,
      so A B = X Y - X Y + 2^-12 X Z = 2^-12 X Z: each element a sum of h terms of size about 2^-12, about
      2^-12 sqrt(h) in all, while |A||B| sums 2h terms of size |x||y| (about 0.64 K).  At K = 4096 |R| is some
      2^-18 of |A||B|: every method's rounding error, a fraction of |A||B|, is magnified that much relative to R.
      B's lower half is rounded to fp32 once (-Y + 2^-12 Z is not exact), so R, the float64 product of the fp32 A
      and B, is 2^-12 X Z plus X times that rounding; R, not 2^-12 X Z, is the reference.  An odd K leaves A's last
      column and B's last row zero.
    """
    import torch
    if dist not in DISTRIBUTION:
        raise _unknown(dist)
    kw = {"generator": generator, "device": device, "dtype": torch.float32}
    batch = tuple(batch)
    if not DISTRIBUTION[dist].joint:
        return sample(dist, (*batch, m, k), generator, device), sample(dist, (*batch, k, n), generator, device)
    if dist == "spread":
        def scales(shape):
            e = torch.randint(-SPREAD_EXPONENT, SPREAD_EXPONENT + 1, shape, generator=generator, device=device)
            return torch.exp2(e.to(torch.float32))
        a = torch.randn((*batch, m, k), **kw) * scales((*batch, m, 1))
        b = torch.randn((*batch, k, n), **kw) * scales((*batch, 1, n))
        return a, b
    h, odd = k // 2, k % 2
    x, y, z = torch.randn((*batch, m, h), **kw), torch.randn((*batch, h, n), **kw), torch.randn((*batch, h, n), **kw)
    pad = dict(device=device, dtype=torch.float32)
    a = torch.cat([x, x, torch.zeros((*batch, m, odd), **pad)], dim=-1)
    b = torch.cat([y, -y + z * 2.0**CANCEL_EXPONENT, torch.zeros((*batch, odd, n), **pad)], dim=-2)
    return a, b


def distribution_ks(dists, ks=None, quick: bool = False) -> dict[str, tuple[int, ...]]:
    """The K values of each distribution in a run: `ks` for all when given, else each Distribution's own (only
    those of QUICK_KS with `quick`)."""
    if ks:
        return {d: tuple(ks) for d in dists}
    return {d: tuple(k for k in DISTRIBUTION[d].ks if not quick or k in QUICK_KS) for d in dists}


class ErrorTally:
    """The errors of D against R (the module docstring defines them) and D's NaN/inf count, gathered chunk by
    chunk so Figure 8's float64 temporaries stay a few hundred MB.  `absprod` is |A||B| for the same chunk.
    The median needs every ratio: they are kept as float32 (4 bytes an element: 4 MB at 1024 x 1024, 1 GiB for
    Figure 8's 256 products) and sorted once at the end.  Any NaN/inf makes every error inf: a method that
    overflowed has no meaningful error, and the count says how badly it broke."""

    def __init__(self):
        self.diff2 = self.ref2 = 0.0
        self.max_rel = self.max_cw = 0.0
        self.ratios = []
        self.nonfinite = 0

    def add(self, d, ref, absprod) -> None:
        d = d.double()
        bad = ~d.isfinite()
        self.nonfinite += int(bad.sum())
        diff = (d - ref).masked_fill(bad, 0.0).abs_()
        self.diff2 += float((diff * diff).sum())
        self.ref2 += float((ref * ref).sum())
        cw = diff / absprod                      # 0/0 (every term zero, D exact) is NaN here and counts 0
        self.max_cw = max(self.max_cw, float(cw.masked_fill_(cw.isnan(), 0.0).max()))
        del cw
        nz = ref != 0
        if nz.any():
            rel = diff[nz] / ref.abs()[nz]
            self.max_rel = max(self.max_rel, float(rel.max()))
            self.ratios.append(rel.float())

    def result(self) -> dict:
        """relerr, median_relerr, componentwise, seed002_max_relerr (fig8.csv only) and nonfinite."""
        if self.nonfinite:
            return dict.fromkeys(ERROR_KEYS, math.inf) | {"nonfinite": self.nonfinite}
        relerr = math.sqrt(self.diff2 / self.ref2) if self.ref2 > 0 else math.sqrt(self.diff2)
        return {"relerr": relerr, "median_relerr": median(self.ratios), "componentwise": self.max_cw,
                "seed002_max_relerr": self.max_rel if self.ratios else math.nan, "nonfinite": 0}


ERROR_KEYS = ("relerr", "median_relerr", "componentwise", "seed002_max_relerr")


def median(parts) -> float:
    """The median of the values of a list of tensors (the mean of the two middle ones for an even count); NaN
    for none.  A sort, not torch.median (the lower middle value) nor torch.quantile (16M elements at most)."""
    import torch
    if not parts:
        return math.nan
    v = torch.cat([p.reshape(-1) for p in parts]).sort().values
    n = v.numel()
    return float(v[n // 2]) if n % 2 else (float(v[n // 2 - 1]) + float(v[n // 2])) / 2


def products(a, b, chunk: int = 1):
    """R = a @ b and |a||b| in float64, for a batch (3-D) or one matrix (2-D), a chunk of matrices at a time to
    bound the float64 copies of the operands."""
    import torch
    if a.dim() == 2:
        ref, absprod = products(a[None], b[None])
        return ref[0], absprod[0]
    shape = (a.shape[0], a.shape[1], b.shape[2])
    ref = torch.empty(shape, dtype=torch.float64, device=a.device)
    absprod = torch.empty(shape, dtype=torch.float64, device=a.device)
    for i in range(0, a.shape[0], chunk):
        a64, b64 = a[i:i + chunk].double(), b[i:i + chunk].double()
        ref[i:i + chunk] = a64 @ b64
        absprod[i:i + chunk] = a64.abs_() @ b64.abs_()
        del a64, b64
    return ref, absprod


def errors(d, ref, absprod, chunk: int | None = None) -> dict:
    """ErrorTally over the whole of D, `chunk` matrices at a time for a batch (3-D) when given."""
    t = ErrorTally()
    if chunk is None:
        t.add(d, ref, absprod)
    else:
        for i in range(0, len(d), chunk):
            t.add(d[i:i + chunk], ref[i:i + chunk], absprod[i:i + chunk])
    return t.result()


# --- methods -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Method:
    name: str
    backend: str
    stage: str
    precision: str
    run: Callable          # (a, b) -> D, fp32


def _fp16_inputs(a, b):
    """One fp16 GEMM of the rounded inputs on the tensor cores, fp32 accumulation and fp32 output (torch's
    out_dtype), reduced-precision reductions off, as study.launch.cublas does for its rows."""
    import torch
    from study.launch.cublas import precision_flags
    with precision_flags(tf32=False):
        return torch.mm(a.half(), b.half(), out_dtype=torch.float32)


def _studied(impl) -> bool:
    return impl.stage is not None and impl.stage.accuracy_study


def accuracy_methods(impls) -> list[Method]:
    """The studied stages and the baselines, whatever their backend, that take fp32 inputs; then cuBLAS on fp16
    inputs."""
    chosen = [i for i in impls if "fp32" in i.dtypes and (_studied(i) or i.stage is None)]
    return [Method(i.name, i.backend, i.stage_label, i.precision("fp32"), i) for i in chosen] + \
        [Method(FP16_METHOD, "cublas", "baseline", "fp16/fp32acc", _fp16_inputs)]


def fig8_impls(impls, backends: set[str]) -> list:
    return [i for i in impls if _studied(i) and i.backend in backends and "fp32" in i.dtypes]


def _bmm_sgemm(a, b):
    import torch
    from study.launch.cublas import precision_flags
    with precision_flags(tf32=False):
        return torch.bmm(a, b)


# --- the two studies ---------------------------------------------------------------------------------

def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _error_text(e: Exception) -> str:
    return f"{type(e).__name__}: {e}".replace("\n", " ")[:500]


def _settle(device, e: Exception | None = None) -> None:
    """Surface asynchronous launch errors inside the row that caused them (a sticky one ends the run)."""
    import torch
    if device.type == "cuda":
        if e is not None and not isinstance(e, (ValueError, TypeError)):
            torch.cuda.empty_cache()
        torch.cuda.synchronize(device)


def accuracy_rows(methods: list[Method], dists, ks, size: int, device, context: dict, seed: int | None = None):
    """Yield one row per (distribution, K, method), `ks` the K values of every distribution or a mapping from
    each distribution to its own (distribution_ks()).  Inputs (sample_pair()) are fresh per (distribution, K) and
    shared by every method; a method that raises gives a row with its error, and the others go on."""
    import torch
    for dist in dists:
        for K in ks[dist] if isinstance(ks, dict) else ks:
            s = int.from_bytes(os.urandom(4), "little") if seed is None else seed
            g = torch.Generator(device=device).manual_seed(s)
            a, b = sample_pair(dist, size, K, size, g, device)
            ref, absprod = products(a, b)
            for m in methods:
                row = dict.fromkeys(ACCURACY_COLUMNS, "")
                row.update(context, distribution=dist, M=size, N=size, K=K, method=m.name, backend=m.backend,
                           stage=m.stage, precision=m.precision, seed=s, date=_now())
                try:
                    d = m.run(a, b)
                    _settle(device)
                    row.update({k: v for k, v in errors(d, ref, absprod).items() if k in row})
                except Exception as e:   # a method that cannot run is a result too
                    row["error"] = _error_text(e)
                    _settle(device, e)
                yield row
            del a, b, ref, absprod


def fig8_rows(impls, ks, device, context: dict, budget_ms: float, batch: int = FIG8_BATCH, mn: int = FIG8_MN,
              chunk: int = 16, seed: int | None = None):
    """Yield Figure 8 rows: per k, cuBLAS batched SGEMM first, then every implementation through
    `impl.batched`, each checked over the whole batch and timed (CUDA events, L2 flushed, median)."""
    import torch
    from study.measure.timing import ClockSampler, L2Flusher, bench
    flush, clock = L2Flusher(device), ClockSampler(device)
    methods = [(BMM_METHOD, "cublas", "baseline", "fp32", "torch.bmm", _bmm_sgemm)]
    methods += [(i.name, i.backend, i.stage_label, i.precision("fp32"),
                 "batched" if hasattr(i.launch, "batched") else "loop", i.batched) for i in impls]
    for k in ks:
        s = int.from_bytes(os.urandom(4), "little") if seed is None else seed
        g = torch.Generator(device=device).manual_seed(s)
        a = sample("uniform", (batch, mn, k), g, device)
        b = sample("uniform", (batch, k, mn), g, device)
        ref, absprod = products(a, b, chunk)
        flop = 2.0 * batch * mn * mn * k
        sgemm = None
        for name, backend, stage, precision, launch, fn in methods:
            row = dict.fromkeys(FIG8_COLUMNS, "")
            row.update(context, method=name, backend=backend, stage=stage, precision=precision, batch=batch,
                       M=mn, N=mn, K=k, launch=launch, seed=s, date=_now())
            try:
                d = fn(a, b)
                _settle(device)
                row.update(errors(d, ref, absprod, chunk))
                del d
                t = bench(lambda: fn(a, b), flush, clock, budget_ms, min_reps=3, max_reps=20)
                tflops = flop / (t.ms * 1e9)
                row.update(ms=t.ms, ms_p20=t.ms_p20, ms_p80=t.ms_p80, reps=t.reps, sm_clock_mhz=t.sm_clock_mhz,
                           tflops=tflops)
                if name == BMM_METHOD:
                    sgemm = tflops
                if sgemm:
                    row.update(sgemm_tflops=sgemm, x_sgemm=tflops / sgemm)
            except Exception as e:
                row["error"] = _error_text(e)
                _settle(device, e)
            yield row
        del a, b, ref, absprod
        torch.cuda.empty_cache()   # the next k needs up to 17 GB of fresh operands


# --- command line ------------------------------------------------------------------------------------

class CsvOut:
    """A CSV written and flushed row by row, so an interrupted run keeps what it measured."""

    def __init__(self, path: Path, columns):
        self.f = path.open("w", newline="")
        self.w = csv.DictWriter(self.f, columns)
        self.w.writeheader()

    def write(self, row: dict) -> None:
        self.w.writerow(row)
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def _ints(spec: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in spec.split(",") if v.strip())
    except ValueError:
        raise SystemExit(f"expected a comma list of integers, got {spec!r}") from None


def _fmt(v, spec: str = ".2e") -> str:
    return format(v, spec) if isinstance(v, float) else str(v)


def main(argv: list[str] | None = None, render=None, parts=()) -> int:
    """The accuracy study; `render(out_dir)`, if given, renders the report afterwards (unless --no-report).
    `parts`: the studies of other stages run after this one's, each a module with add_arguments(parser) and
    run(args, impls, device, context, write) (study/accuracy.py names them)."""
    ap = cli.parser("accuracy", __doc__)
    for part in parts:
        part.add_arguments(ap)
    ap.add_argument("--quick", action="store_true", help="fewer K and Figure 8 k values, shorter timing budget")
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    ap.add_argument("--size", type=int, default=1024, help="M = N of the error-vs-K study (default 1024)")
    ap.add_argument("--ks", default=None, help="K values of every distribution (default: each distribution's own, "
                    + "; ".join(f"{d.name} {','.join(map(str, d.ks))}" for d in DISTRIBUTION_LIST) + ")")
    ap.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    ap.add_argument("--fig8-ks", default=None, help=f"Figure 8 k values (default {','.join(map(str, FIG8_KS))})")
    ap.add_argument("--fig8-backends", default="cuda", help="backends timed in Figure 8 (default cuda)")
    ap.add_argument("--budget-ms", type=float, default=None, help="timing budget per Figure 8 row (default 300)")
    ap.add_argument("--no-fig8", action="store_true")
    ap.add_argument("--parts-only", action="store_true",
                    help="only the other stages' studies (fp8's error against K), not the error-vs-K study or Figure 8")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    dists = tuple(d.strip() for d in args.distributions.split(",") if d.strip())
    if unknown := set(dists) - set(DISTRIBUTIONS):
        raise SystemExit(f"--distributions: unknown {sorted(unknown)}; known: {', '.join(DISTRIBUTIONS)}")

    import torch
    if not torch.cuda.is_available():
        print("study.accuracy: no CUDA GPU is visible here, so nothing can be measured.\n"
              "The committed results still render: python -m study.report", file=sys.stderr)
        return 2

    from study.measure import environment

    from study import registry
    device = torch.device("cuda", torch.cuda.current_device())
    env = environment.collect(device)
    context = {"gpu": env["gpu"], "commit": env["commit"]}
    ks = distribution_ks(dists, _ints(args.ks) if args.ks else None, args.quick)
    fig8_ks = _ints(args.fig8_ks) if args.fig8_ks else (QUICK_FIG8_KS if args.quick else FIG8_KS)
    args.out.mkdir(parents=True, exist_ok=True)
    impls = registry.implementations()
    raised = []

    def write(path: Path, columns, rows, line, what: str) -> None:
        """Each row into `path` as it comes, printed with `line(row)`; a row that raised is kept for the end."""
        t0, out = time.time(), CsvOut(path, columns)
        for row in rows:
            out.write(row)
            raised.extend([row] if row["error"] else [])
            print(f"  {line(row)} {row['error'][:80]}", flush=True)
        out.close()
        print(f"study.accuracy: {what} in {time.time() - t0:.0f} s -> {path}")

    if args.parts_only:
        args.no_fig8 = True
    else:
        write(args.out / "accuracy.csv", ACCURACY_COLUMNS,
              accuracy_rows(accuracy_methods(impls), dists, ks, args.size, device, context),
              lambda r: f"{r['distribution']:8s} K={r['K']:<6} {r['method']:24s} relerr {_fmt(r['relerr']):9s} "
                        f"median {_fmt(r['median_relerr']):9s} componentwise {_fmt(r['componentwise']):9s}",
              "error vs K")

    if not args.no_fig8:
        backends = {b.strip() for b in args.fig8_backends.split(",")}
        budget = args.budget_ms or (100.0 if args.quick else 300.0)
        write(args.out / "fig8.csv", FIG8_COLUMNS, fig8_rows(fig8_impls(impls, backends), fig8_ks, device, context, budget),
              lambda r: f"fig8 k={r['K']:<5} {r['method']:24s} {r['launch']:9s} {_fmt(r['tflops'], '.1f'):>7s} "
                        f"TFLOP/s relerr {_fmt(r['relerr'])} median {_fmt(r['median_relerr'])}", "Figure 8")

    for part in parts:
        part.run(args, impls, device, context, write)

    for r in raised:
        print(f"  RAISED {r['method']} K={r['K']}: {r['error']}")
    if render is not None and not args.no_report:
        print(f"report: {render(args.out)}")
    return 1 if raised else 0
