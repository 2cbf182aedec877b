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
from study.contract import DTYPES
from tests.helpers import ALPHA_BETA, column_major, impl_dtypes, scalars

SHAPES = [(n, n, n) for n in (1, 7, 31, 33, 127, 257, 1000)] + [
    (1, 1000, 7), (1000, 1, 33), (257, 33, 1000), (31, 1000, 127), (128, 64, 8), (2, 3, 4099)]

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_matches_float64(impl_name, dtype, M, N, K, alpha, beta):
    impl = study.get(impl_name)
    alpha, beta = scalars(dtype, alpha, beta)
    x = make_inputs(M, N, K, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} {M}x{N}x{K} alpha={alpha} beta={beta} seed={x.seed}: {v.error}"


def _col_major_impls():
    return impl_dtypes(only=lambda impl: "col-major" in impl.layouts)


@pytest.mark.parametrize("layouts", ["rc", "cr", "cc"])
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (33, 45, 70), (127, 1, 257), (257, 130, 31), (64, 128, 96)])
@pytest.mark.parametrize("impl_name,dtype", _col_major_impls())
def test_transposed_operands(impl_name, dtype, M, N, K, layouts):
    """A and/or B handed in as transposed views (column-major, as `x.t()` gives): the kernel reads them in
    that order (seed 003's col_major fragments), with the general alpha and beta."""
    impl = study.get(impl_name)
    alpha, beta = scalars(dtype, 2.5, -0.75)
    x = make_inputs(M, N, K, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
    if layouts[0] == "c":
        x.a = column_major(x.a)
    if layouts[1] == "c":
        x.b = column_major(x.b)
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} {layouts} {M}x{N}x{K}: seed={x.seed}: {v.error}"


def _fp16_output_impls():
    """The ladder's kernels with fp16 D (the f16 -> f16 pair accumulates in fp16 too)."""
    return impl_dtypes(only=lambda impl: impl.stage is not None,
                       dtype_filter=lambda impl, d: impl.out_dtypes.get(d, d) == "fp16")


@pytest.mark.parametrize("impl_name,dtype", _fp16_output_impls())
def test_fp16_output_near_its_range(impl_name, dtype):
    """fp16 D (and fp16 accumulation, for the f16 -> f16 pair) holds results up to 65504 only.  Inputs scaled
    by 16 put |D| near 3e4 over K = 1024 (std 8192, so an overflow would need an 8-sigma element): still
    representable, and it must come back finite and right, not inf."""
    impl = study.get(impl_name)
    x = make_inputs(128, 128, 1024, dtype, "cuda")
    x.a, x.b = x.a * 16, x.b * 16
    v = run_and_judge(impl, dtype, x)
    assert float(x.out.float().abs().max()) > 2e4, "the test must reach the top of fp16's range"
    assert v.passed, f"{impl_name} {dtype} scaled to fp16's range: seed={x.seed}: {v.error}"


@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_padded_rows_and_repeat_calls(impl_name, dtype):
    """Leading dimensions larger than the row (views into wider buffers), called twice on fresh data."""
    impl = study.get(impl_name)
    M, N, K = 45, 77, 129
    alpha, beta = scalars(dtype, 1.5, 0.5) if DTYPES[dtype].is_floating_point else (2.0, 3.0)
    for _ in range(2):
        x = make_inputs(M, N + 3, K + 5, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
        x.a, x.b = x.a[:, :K], x.b[:K, :N]      # lda = K + 5, ldb = N + 3
        wide_c = make_inputs(M, N + 9, 1, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype)).c
        x.c = wide_c[:, :N]                     # ldc = N + 9, in the output dtype
        poison = float("nan") if x.out.is_floating_point() else -(2**31)
        wide_out = torch.full((M, N + 2), poison, device="cuda", dtype=x.out.dtype)
        x.out = wide_out[:, :N]
        v = run_and_judge(impl, dtype, x)
        assert v.passed, f"{impl_name} {dtype} padded: seed={x.seed}: {v.error}"
        edge = wide_out[:, N:]
        assert (edge.isnan() if x.out.is_floating_point() else edge == poison).all(), "wrote outside D's columns"


def _shifted(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` that starts one element into its storage and has an odd leading dimension: neither its
    start nor its row pitch is a multiple of 16 bytes (or of 4 bytes, for 2-byte dtypes)."""
    rows, cols = t.shape
    pad = 1 if cols % 2 == 0 else 2
    fill = float("nan") if t.is_floating_point() else -1
    buf = torch.full((rows * (cols + pad) + 1,), fill, device=t.device, dtype=t.dtype)
    view = buf[1:].view(rows, cols + pad)[:, :cols]
    view.copy_(t)
    return view


@pytest.mark.parametrize("M,N,K", [(67, 45, 131), (130, 257, 64)])
@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_unaligned_views(impl_name, dtype, M, N, K):
    """Operands at storage offset 1 with odd leading dimensions: a 16-byte vector path must notice and fall
    back (or refuse before launch), never fault on a misaligned address or read the wrong elements."""
    impl = study.get(impl_name)
    alpha, beta = (1.5, 0.5) if DTYPES[dtype].is_floating_point else (2.0, 3.0)
    x = make_inputs(M, N, K, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
    x.a, x.b, x.c, x.out = (_shifted(t) for t in (x.a, x.b, x.c, x.out))
    assert all(t.data_ptr() % 16 and t.stride(0) % 2 for t in (x.a, x.b, x.c, x.out)), "views must be misaligned"
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} unaligned {M}x{N}x{K}: seed={x.seed}: {v.error}"


def _persistent_impls():
    return impl_dtypes(only=lambda impl: hasattr(impl.launch, "many_tiles"))


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA[:2])
@pytest.mark.parametrize("impl_name,dtype", _persistent_impls())
def test_persistent_grid_walks_many_tiles(impl_name, dtype, alpha, beta):
    """A persistent launch (one block per SM) on at least 2.5 tiles per SM, ragged in M, N and K: each block
    computes several tiles, and its ring of k-tiles runs on from one tile into the next."""
    impl = study.get(impl_name)
    M, N = impl.launch.many_tiles(torch.cuda.get_device_properties(0).multi_processor_count)
    x = make_inputs(M, N, 333, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} {M}x{N}x333 alpha={alpha} beta={beta} seed={x.seed}: {v.error}"


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
