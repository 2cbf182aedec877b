"""Parameter lists shared by the equivalence tests (GPU and interpreter)."""
from __future__ import annotations

import pytest

import study
from study.registry import DISPATCH_K  # noqa: F401 - the suite's K for dispatch shapes, shared with the sanitizer


def impl_dtypes(backends=None, marks_for=None, only=None, dtype_filter=None):
    """pytest params (impl_name, dtype) for every registered implementation and dtype it declares (or those
    `only(impl)` and `dtype_filter(impl, dtype)` keep)."""
    out = []
    for impl in study.implementations():
        if (backends and impl.backend not in backends) or (only and not only(impl)):
            continue
        for dtype in impl.dtypes:
            if dtype_filter and not dtype_filter(impl, dtype):
                continue
            marks = marks_for(impl, dtype) if marks_for else ()
            out.append(pytest.param(impl.name, dtype, id=f"{impl.name}-{dtype}", marks=marks))
    return out


# (alpha, beta): the default; a general case with C read; a negative alpha with beta = 1.
ALPHA_BETA = [(1.0, 0.0), (2.5, -0.75), (-1.0, 1.0)]

# The GPU suite's shapes (tests/test_gpu_equivalence.py), here so that the CPU coverage test
# (tests/test_coverage.py) walks the very calls the suite makes.  Ragged on purpose: none divides a tile.
SHAPES = [(n, n, n) for n in (1, 7, 31, 33, 127, 257, 1000)] + [
    (1, 1000, 7), (1000, 1, 33), (257, 33, 1000), (31, 1000, 127), (128, 64, 8), (2, 3, 4099)]
TRANSPOSED_SHAPES = [(1, 1, 1), (33, 45, 70), (127, 1, 257), (257, 130, 31), (64, 128, 96)]
TRANSPOSED_LAYOUTS = ["rc", "cr", "cc"]
PADDED_SHAPE = (45, 77, 129)          # lda = K + 5, ldb = N + 3, ldc = N + 9, ldd = N + 2
UNALIGNED_SHAPES = [(67, 45, 131), (130, 257, 64)]
ACCUMULATOR_SHAPE = (37, 45, 4099)
FP8_ACCUMULATOR_SHAPE = (37, 45, 16387)   # tests/helpers.py's fp8_accumulator_inputs: K odd, past 2^14


def scalars(dtype: str, alpha: float, beta: float) -> tuple[float, float]:
    """(alpha, beta) as the test means them; integer GEMMs take integral scalars, so the general case
    (2.5, -0.75) becomes (2, -3) there."""
    from study.core.contract import DTYPES
    if DTYPES[dtype].is_floating_point:
        return alpha, beta
    return {(2.5, -0.75): (2.0, -3.0)}.get((alpha, beta), (alpha, beta))


def column_major(t):
    """The same matrix stored column-major: a transposed view of a contiguous copy (what `x.t()` hands in)."""
    return t.t().contiguous().t()


def expected_gpu_tests() -> dict[str, int]:
    """How many GPU tests the full suite has for each implementation (study.measure.evidence.expected_tests)."""
    from study.measure.evidence import expected_tests
    return expected_tests()


def shifted(t):
    """A copy of `t` that starts one element into its storage and has an odd leading dimension: neither its
    start nor its row pitch is a multiple of 16 bytes (or of 4 bytes, for 2-byte dtypes).  A column-major `t`
    (an fp8 B, K-major) stays column-major."""
    import torch
    if t.shape[1] > 1 and t.stride(0) == 1 and t.stride(1) != 1:
        return shifted(t.t()).t()
    rows, cols = t.shape
    pad = 1 if cols % 2 == 0 else 2
    fill = float("nan") if t.is_floating_point() else -1
    buf = torch.full((rows * (cols + pad) + 1,), fill, device=t.device, dtype=t.dtype)
    view = buf[1:].view(rows, cols + pad)[:, :cols]
    view.copy_(t)
    return view


def accumulator_inputs(dtype: str, device, M: int, N: int, K: int):
    """A = 1 and B = 1 + r * 2^-p (r in {1, 2, 3}, p = 10 for fp16, 7 for bf16: the last bits each format
    holds).  Every partial sum is exact in fp32, so an fp32 accumulator gives D exactly; a 16-bit one loses
    the small parts once the running sum passes 2^11 (fp16) or 2^8 (bf16).  Returns A, B and D in float64."""
    import torch

    from study.core.contract import DTYPES
    p = {"fp16": 10, "bf16": 7}[dtype]
    a = torch.ones(M, K, dtype=DTYPES[dtype], device=device)
    r = torch.randint(1, 4, (K, N), device=device, dtype=torch.int32).double()
    b64 = 1 + r * 2.0**-p
    return a, b64.to(DTYPES[dtype]), b64.sum(0, keepdim=True).expand(M, N)


def fp8_accumulator_inputs(device, M: int, N: int, K: int):
    """e4m3 A = 1 and, per column of B, K = 2h + 1 values: h of 1 + r/8 (r in 1..7, exact in e4m3), the same h
    negated, then one more 1 + r/8.  D's exact value is that last one, exact in bf16; the running sum climbs to
    about 1.9 h on the way, a multiple of 1/8 that fp32 holds exactly (for h < 2^20) and the fp8 tensor core's
    accumulator, about 13 mantissa bits, does not once it passes 2^10.  Returns A, B (K-major) and D in float64."""
    import torch
    h = (K - 1) // 2
    assert K == 2 * h + 1, "K must be odd"
    r = 1 + torch.randint(1, 8, (N, h + 1), device=device, dtype=torch.int32).double() / 8
    bt = torch.cat([r[:, :h], -r[:, :h], r[:, h:]], dim=1)
    a = torch.ones(M, K, device=device).to(torch.float8_e4m3fn)
    return a, bt.to(torch.float8_e4m3fn).t(), r[:, h].double()[None, :].expand(M, N)


def assert_matches_float64(impl_name: str, dtype: str, M: int, N: int, K: int, alpha: float, beta: float, device):
    """One call of the implementation on fresh inputs and a poisoned D, judged against float64."""
    from study.core.verify import make_inputs, run_and_judge
    impl = study.get(impl_name)
    alpha, beta = scalars(dtype, alpha, beta)
    x = make_inputs(M, N, K, dtype, device, alpha, beta, impl.out_dtypes.get(dtype))
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} {M}x{N}x{K} alpha={alpha} beta={beta} seed={x.seed}: {v.error}"
