"""Fresh inputs, a poisoned output, a float64 reference and the pass/fail rule: one definition, used by the
sweep's runner and by the equivalence tests alike."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

from .contract import DTYPES
from .schema import TOLERANCE


@dataclass
class Inputs:
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor          # random when beta != 0, all NaN when beta == 0 (it must not be read)
    out: torch.Tensor        # poisoned with NaN: anything left unwritten fails the check
    alpha: float
    beta: float
    seed: int


def make_inputs(M: int, N: int, K: int, dtype: str, device, alpha=1.0, beta=0.0, out_dtype: str | None = None,
                seed: int | None = None) -> Inputs:
    """Fresh random operands (a new seed every call unless given; recorded so a failure can be replayed).

    Floating inputs are randn; integer inputs are small integers (int8 in [-8, 8), uint8 in [0, 16)), so
    that no product sum over K <= 16384 overflows int32 and the result can be compared bit for bit.  C has
    the output dtype; D is poisoned (NaN, or INT32_MIN for integers) so an unwritten element is caught."""
    seed = int.from_bytes(os.urandom(4), "little") if seed is None else seed
    g = torch.Generator(device=device).manual_seed(seed)
    ot = DTYPES[out_dtype or dtype]

    def rand(r, c, t):
        if t.is_floating_point:
            return torch.randn((r, c), generator=g, device=device, dtype=torch.float32).to(t)
        low = 0 if t == torch.uint8 else -8
        return torch.randint(low, low + 16, (r, c), generator=g, device=device, dtype=torch.int32).to(t)

    a, b = rand(M, K, DTYPES[dtype]), rand(K, N, DTYPES[dtype])
    if beta == 0 and ot.is_floating_point:
        c = torch.full((M, N), float("nan"), device=device, dtype=ot)   # must never be read
    else:
        c = rand(M, N, ot)
    out = torch.full((M, N), float("nan") if ot.is_floating_point else -(2**31), device=device, dtype=ot)
    return Inputs(a, b, c, out, float(alpha), float(beta), seed)


def reference(x: Inputs) -> torch.Tensor:
    ref = x.alpha * (x.a.double() @ x.b.double())
    if x.beta != 0:
        ref += x.beta * x.c.double()
    return ref


@dataclass
class Verdict:
    relerr: float
    tol: float
    passed: bool
    error: str


def reference_scale(x: Inputs) -> torch.Tensor:
    """|alpha| |A| |B| + |beta| |C| in float64: the size of the terms each element of D is summed from."""
    scale = abs(x.alpha) * (x.a.double().abs() @ x.b.double().abs())
    if x.beta != 0:
        scale += abs(x.beta) * x.c.double().abs()
    return scale


def judge(out: torch.Tensor, ref: torch.Tensor, precision: str, scale=None) -> Verdict:
    """Relative Frobenius error against float64; NaN anywhere (an unwritten element included) fails.

    A precision that rounds its inputs (fp16, tf32) errs in proportion to the terms, not to their sum, so
    where beta C nearly cancels alpha A B (a 1x1x1 product, say) its relative error has no bound.  Such a
    result also passes if every element is within tol of the size of its terms, `scale()` (the componentwise
    bound of GEMM error analysis): still far below what a wrong index or a lost product would give."""
    tol = TOLERANCE[precision]
    d = out.double()
    bad = int((~torch.isfinite(d)).sum())
    denom = float(ref.norm())
    relerr = float((d - ref).norm()) / denom if denom > 0 else float((d - ref).norm())
    if bad:
        return Verdict(math.nan, tol, False, f"{bad} of {d.numel()} elements are NaN/inf (unwritten or corrupt)")
    if not relerr <= tol:
        if scale is not None:
            err = (d - ref).abs()
            s = scale()
            worst = float(torch.where(s > 0, err / s.clamp_min(1e-300), err * math.inf).nan_to_num(0.0).max())
            if worst <= tol:
                return Verdict(relerr, tol, True, "")
        return Verdict(relerr, tol, False, f"relerr {relerr:.3e} > tol {tol:.1e} for {precision}")
    return Verdict(relerr, tol, True, "")


def run_and_judge(impl, dtype: str, x: Inputs) -> Verdict:
    """Call impl on x (through its public, contract-checked entry) and judge D; A, B, C must be untouched."""
    before = [t.clone() for t in (x.a, x.b, x.c)]
    impl(x.a, x.b, x.c, alpha=x.alpha, beta=x.beta, out=x.out)
    if x.out.is_cuda:
        torch.cuda.synchronize(x.out.device)   # surfaces asynchronous launch errors here, not later
    v = judge(x.out, reference(x), impl.precision(dtype), scale=lambda: reference_scale(x))
    for label, t0, t1 in zip("ABC", before, (x.a, x.b, x.c)):
        same_nans = torch.equal(t0.isnan(), t1.isnan()) if t0.is_floating_point() else True
        if not same_nans or not torch.equal(t0.nan_to_num(0.0), t1.nan_to_num(0.0)):
            return Verdict(v.relerr, v.tol, False, f"{label} was modified")
    return v
