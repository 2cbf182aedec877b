"""Every registered implementation against the float64 reference, on the GPU.

Ragged sizes on purpose (1, 7, 31, 33, 127, 257, 1000 and non-square mixes): none of them divide the
tiles.  Each case draws fresh random inputs, passes a NaN-filled C when beta == 0, poisons D with NaN, and
checks that A, B and C are untouched (study.verify.run_and_judge).
"""
from __future__ import annotations

import pytest
import torch

import study
from study.verify import judge, make_inputs, reference, reference_scale, run_and_judge
from tests.helpers import ALPHA_BETA, impl_dtypes

SHAPES = [(n, n, n) for n in (1, 7, 31, 33, 127, 257, 1000)] + [
    (1, 1000, 7), (1000, 1, 33), (257, 33, 1000), (31, 1000, 127), (128, 64, 8), (2, 3, 4099)]

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_matches_float64(impl_name, dtype, M, N, K, alpha, beta):
    impl = study.get(impl_name)
    x = make_inputs(M, N, K, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} {M}x{N}x{K} alpha={alpha} beta={beta} seed={x.seed}: {v.error}"


@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_padded_rows_and_repeat_calls(impl_name, dtype):
    """Leading dimensions larger than the row (views into wider buffers), called twice on fresh data."""
    impl = study.get(impl_name)
    M, N, K = 45, 77, 129
    for _ in range(2):
        x = make_inputs(M, N + 3, K + 5, dtype, "cuda", 1.5, 0.5)
        x.a, x.b = x.a[:, :K], x.b[:K, :N]      # lda = K + 5, ldb = N + 3
        wide_c = torch.randn(M, N + 9, device="cuda").to(x.a.dtype)
        x.c = wide_c[:, :N]
        wide_out = torch.full((M, N + 2), float("nan"), device="cuda", dtype=x.out.dtype)
        x.out = wide_out[:, :N]
        v = run_and_judge(impl, dtype, x)
        assert v.passed, f"{impl_name} {dtype} padded: seed={x.seed}: {v.error}"
        assert wide_out[:, N:].isnan().all(), "wrote outside D's columns"


def _shifted(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` that starts one element into its storage and has an odd leading dimension: neither its
    start nor its row pitch is a multiple of 16 bytes (or of 4 bytes, for 2-byte dtypes)."""
    rows, cols = t.shape
    pad = 1 if cols % 2 == 0 else 2
    buf = torch.full((rows * (cols + pad) + 1,), float("nan"), device=t.device, dtype=t.dtype)
    view = buf[1:].view(rows, cols + pad)[:, :cols]
    view.copy_(t)
    return view


@pytest.mark.parametrize("M,N,K", [(67, 45, 131), (130, 257, 64)])
@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_unaligned_views(impl_name, dtype, M, N, K):
    """Operands at storage offset 1 with odd leading dimensions: a 16-byte vector path must notice and fall
    back (or refuse before launch), never fault on a misaligned address or read the wrong elements."""
    impl = study.get(impl_name)
    x = make_inputs(M, N, K, dtype, "cuda", 1.5, 0.5)
    x.a, x.b, x.c, x.out = (_shifted(t) for t in (x.a, x.b, x.c, x.out))
    assert all(t.data_ptr() % 16 and t.stride(0) % 2 for t in (x.a, x.b, x.c, x.out)), "views must be misaligned"
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} unaligned {M}x{N}x{K}: seed={x.seed}: {v.error}"


def _batched_impls():
    return [pytest.param(i.name, id=i.name) for i in study.implementations() if hasattr(i.launch, "batched")]


@pytest.mark.parametrize("B,M,N,K", [(3, 33, 45, 70), (2, 64, 128, 96), (5, 1, 7, 3)])
@pytest.mark.parametrize("impl_name", _batched_impls())
def test_batched_launch_matches_float64(impl_name, B, M, N, K):
    """A launcher with a batched grid (seed 002's Figure 8 workload): every matrix of the batch is right,
    including odd sizes whose matrices do not start on 16-byte boundaries."""
    impl = study.get(impl_name)
    dtype = next(iter(impl.dtypes))
    xs = [make_inputs(M, N, K, dtype, "cuda") for _ in range(B)]
    a, b = torch.stack([x.a for x in xs]), torch.stack([x.b for x in xs])
    d = impl.batched(a, b)
    torch.cuda.synchronize()
    for i, x in enumerate(xs):
        v = judge(d[i], reference(x), impl.precision(dtype), scale=lambda: reference_scale(x))
        assert v.passed, f"{impl_name} batch {i} of {B}, {M}x{N}x{K}: seed={x.seed}: {v.error}"
