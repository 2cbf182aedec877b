"""Fresh inputs, a poisoned output, a float64 reference and the pass/fail rule: one definition, used by the
sweep's runner and by the equivalence tests alike."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import torch

from study.core import fp8
from study.core.contract import DTYPES
from study.core.schema import ELEMENT_MODEL, ELEMENT_SIGMAS, tolerance


@dataclass
class Inputs:
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor          # random when beta != 0, all NaN when beta == 0 (it must not be read)
    out: torch.Tensor        # poisoned with NaN: anything left unwritten fails the check
    alpha: float
    beta: float
    seed: int
    # fp8 only: scaling mode -> (scale_a, scale_b) drawn for the operands as made, in study/core/fp8.py's layouts
    scales: dict | None = None

    def scale_args(self, impl) -> dict:
        """The scale keywords of `impl`'s call (an fp8 GEMM's; none for any other): the drawn scales of its mode,
        cut to A's and B's current shapes (a test may hand in a sub-matrix)."""
        scaling = getattr(impl, "scaling", None)
        if scaling is None:
            return {}
        (M, K), N = self.a.shape, self.b.shape[1]
        sa, sb = fp8.scales_for(*self.scales[scaling], scaling, M, N, K)
        return {"scale_a": sa, "scale_b": sb}

    def operands64(self, scaling: str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """A and B in float64 as the GEMM means them: dequantized with their scales for an fp8 call."""
        if scaling is None:
            return self.a.double(), self.b.double()
        M, K, N = *self.a.shape, self.b.shape[1]
        s = dict(zip(("scale_a", "scale_b"), fp8.scales_for(*self.scales[scaling], scaling, M, N, K)))
        return (fp8.dequantize(self.a, s["scale_a"], scaling, "a"), fp8.dequantize(self.b, s["scale_b"], scaling, "b"))


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

    scaled = DTYPES[dtype] == fp8.E4M3
    a, b = rand(M, K, DTYPES[dtype]), rand(N, K, DTYPES[dtype]).t() if scaled else rand(K, N, DTYPES[dtype])
    scales = None
    if scaled:       # B K-major, and scales of every mode, 2^[-2, 2) each
        scales = {}
        for mode in fp8.SCALINGS:
            shapes = fp8.scale_shapes(mode, M, N, K)
            sa, sb = (torch.exp2(torch.rand(s, generator=g, device=device) * 4 - 2) for s in shapes)
            scales[mode] = tuple(fp8.column_major(t) if t.dim() == 2 else t for t in (sa, sb))
    if beta == 0 and ot.is_floating_point:
        c = torch.full((M, N), float("nan"), device=device, dtype=ot)   # must never be read
    else:
        c = rand(M, N, ot)
    out = torch.full((M, N), float("nan") if ot.is_floating_point else -(2**31), device=device, dtype=ot)
    return Inputs(a, b, c, out, float(alpha), float(beta), seed, scales)


def pitched16(t: torch.Tensor) -> torch.Tensor:
    """A copy of the row-major `t` whose rows start on 16-byte boundaries (the pitch rounded up, the padding
    NaN or -1): ragged sizes with operands that a 16-byte vector path may take."""
    rows, cols = t.shape
    per = max(1, 16 // t.element_size())
    fill = float("nan") if t.is_floating_point() else -1
    buf = torch.full((rows, -(-cols // per) * per), fill, device=t.device, dtype=t.dtype)
    view = buf[:, :cols]
    view.copy_(t)
    return view


def reference(x: Inputs, scaling: str | None = None) -> torch.Tensor:
    a, b = x.operands64(scaling)
    ref = x.alpha * (a @ b)
    if x.beta != 0:
        ref += x.beta * x.c.double()
    return ref


@dataclass
class Verdict:
    relerr: float
    tol: float
    passed: bool
    error: str


@dataclass
class Terms:
    """Per element of D, in float64: `l2`, the l2 norm of the terms it is summed from, sqrt(sum_k (alpha a_ik
    b_kj)^2 + (beta c_ij)^2) (rounding errors of independent terms add like it, and it does not cancel as D
    can); `parts`, |alpha (A B)_ij| + |beta c_ij| (what an epilogue that rounds alpha A B before adding beta C
    rounds twice)."""
    l2: torch.Tensor
    parts: torch.Tensor


def reference_terms(x: Inputs, scaling: str | None = None) -> Terms:
    a, b = x.operands64(scaling)
    sq = (x.alpha ** 2) * (a.square() @ b.square())
    parts = (x.alpha * (a @ b)).abs()
    if x.beta != 0:
        sq += (x.beta ** 2) * x.c.double().square()
        parts += (x.beta * x.c.double()).abs()
    return Terms(sq.sqrt(), parts)


_UNIT = {torch.float32: 2**-24, torch.float16: 2**-11, torch.bfloat16: 2**-8, torch.float64: 2**-53}
_HALF_SUBNORMAL = {torch.float32: 2.0**-150, torch.float16: 2.0**-25, torch.bfloat16: 2.0**-134, torch.float64: 0.0}


def element_bound(precision: str, terms: Terms, ref: torch.Tensor, k: int, out_dtype) -> torch.Tensor:
    """How far each element of D may be from the float64 reference (schema.ELEMENT_MODEL):
    SIGMAS * (u_in + u_acc * sqrt(K)) * terms.l2 + u_acc * K / 8 * max(|ref|, terms.l2)
    + u_out * (|ref| + terms.parts) (+ half the output's smallest subnormal).  The first term is independent
    rounding errors; the second the bias of a truncating tensor-core accumulator, one ulp of the running sum per
    k-step of 8 or more (a 4096x4096x14336 fp16 sweep row of gluon:10_wmma missed the first term alone by 2% on
    one element of 16.7M); u_out is the output dtype's unit roundoff, at most two roundings to D's type (cuBLAS's
    fp16 and bf16 GEMMs with beta = 1 were measured one ulp off: alpha A B rounded, then the sum).  Integer
    precisions must match exactly."""
    if precision not in ELEMENT_MODEL:
        raise KeyError(f"no per-element error model for precision {precision!r} in study/core/schema.py")
    u_in, u_acc = ELEMENT_MODEL[precision]
    u_out = _UNIT.get(out_dtype, 0.0)
    return (ELEMENT_SIGMAS * (u_in + u_acc * math.sqrt(k)) * terms.l2 + u_acc * k / 8 * torch.maximum(ref.abs(), terms.l2)
            + 1.01 * u_out * (ref.abs() + terms.parts) + _HALF_SUBNORMAL.get(out_dtype, 0.0))


def judge(out: torch.Tensor, ref: torch.Tensor, precision: str, terms=None, k: int | None = None) -> Verdict:
    """D against the float64 reference.  NaN or inf anywhere (an unwritten element included) fails; then:

    * the relative Frobenius error must be within the precision's tolerance at this K (schema.tolerance);
    * with `terms` (a callable giving reference_terms) and K, every element must be within its own bound
      (element_bound), so that one wrong element fails as well as a wrong matrix; and where D cancels (a
      1x1x1 product with beta C close to -alpha A B, say), the Frobenius error is measured against the norm of
      the terms instead of D's, ||D - ref|| <= tol max(||ref||, ||terms.l2||): still the label's own
      precision, never a looser fallback, so TF32 posing as fp32 fails every shape."""
    tol = tolerance(precision, k)
    d = out.double()
    bad = int((~torch.isfinite(d)).sum())
    if bad:
        return Verdict(math.nan, tol, False, f"{bad} of {d.numel()} elements are NaN/inf (unwritten or corrupt)")
    diff = d - ref
    denom = float(ref.norm())
    relerr = float(diff.norm()) / denom if denom > 0 else float(diff.norm())
    scale = denom
    if terms is not None:
        t = terms()
        scale = max(denom, float(t.l2.norm()))
        bound = element_bound(precision, t, ref, k or 1, out.dtype)
        over = diff.abs() > bound
        if bool(over.any()):
            i, j = divmod(int((diff.abs() - bound).argmax()), d.shape[1])
            return Verdict(relerr, tol, False,
                           f"{int(over.sum())} of {d.numel()} elements outside their {precision} bound; worst "
                           f"({i}, {j}): got {float(d[i, j]):.6g}, want {float(ref[i, j]):.6g}, "
                           f"bound {float(bound[i, j]):.3g}")
    if not float(diff.norm()) <= tol * scale:
        return Verdict(relerr, tol, False, f"relerr {relerr:.3e} > tol {tol:.1e} for {precision}")
    return Verdict(relerr, tol, True, "")


def run_and_judge(impl, dtype: str, x: Inputs) -> Verdict:
    """Call impl on x (through its public, contract-checked entry) and judge D; A, B, C must be untouched."""
    before = [t.clone() for t in (x.a, x.b, x.c)]
    scaling = getattr(impl, "scaling", None)
    impl(x.a, x.b, x.c, alpha=x.alpha, beta=x.beta, out=x.out, **x.scale_args(impl))
    if x.out.is_cuda:
        torch.cuda.synchronize(x.out.device)   # surfaces asynchronous launch errors here, not later
    v = judge(x.out, reference(x, scaling), impl.precision(dtype), terms=lambda: reference_terms(x, scaling),
              k=x.a.shape[1])
    for label, t0, t1 in zip("ABC", before, (x.a, x.b, x.c)):
        if t0.dtype == fp8.E4M3:              # compared bit for bit (torch has no NaN tests for e4m3)
            t0, t1 = t0.view(torch.uint8), t1.view(torch.uint8)
        same_nans = torch.equal(t0.isnan(), t1.isnan()) if t0.is_floating_point() else True
        if not same_nans or not torch.equal(t0.nan_to_num(0.0), t1.nan_to_num(0.0)):
            return Verdict(v.relerr, v.tol, False, f"{label} was modified")
    return v
