"""Every registered implementation against the float64 reference, on the GPU.

Ragged sizes on purpose (tests/helpers.py: 1, 7, 31, 33, 127, 257, 1000 and non-square mixes): none of them
divide the tiles.  Each case draws fresh random inputs, passes a NaN-filled C when beta == 0, poisons D with
NaN, and checks that A, B and C are untouched (study.core.verify.run_and_judge), and that the relative error and
every single element are within the precision's bounds.  Every launch a dispatch can pick runs, aligned and
not (tests/test_coverage.py proves it on the CPU for 132 SMs), and fp32 accumulation is checked exactly.
"""
from __future__ import annotations

import os

import pytest
import torch

import study
from study.core.verify import judge, make_inputs, pitched16, reference, reference_terms, run_and_judge
from study.core import fp8
from study.core.contract import DTYPES
from tests.helpers import (ACCUMULATOR_SHAPE, ALPHA_BETA, DISPATCH_K, FP8_ACCUMULATOR_SHAPE, PADDED_SHAPE, SHAPES,
                           TRANSPOSED_LAYOUTS, TRANSPOSED_SHAPES, UNALIGNED_SHAPES, accumulator_inputs,
                           assert_matches_float64, column_major, fp8_accumulator_inputs, impl_dtypes, scalars,
                           shifted)

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
@pytest.mark.parametrize("M,N,K", SHAPES)
@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_matches_float64(impl_name, dtype, M, N, K, alpha, beta):
    assert_matches_float64(impl_name, dtype, M, N, K, alpha, beta, "cuda")


def _col_major_impls():
    return impl_dtypes(only=lambda impl: "col-major" in impl.layouts)


@pytest.mark.parametrize("layouts", TRANSPOSED_LAYOUTS)
@pytest.mark.parametrize("M,N,K", TRANSPOSED_SHAPES)
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
    M, N, K = PADDED_SHAPE
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


@pytest.mark.parametrize("M,N,K", UNALIGNED_SHAPES)
@pytest.mark.parametrize("impl_name,dtype", impl_dtypes())
def test_unaligned_views(impl_name, dtype, M, N, K):
    """Operands at storage offset 1 with odd leading dimensions: a 16-byte vector path must notice and fall
    back (or refuse before launch), never fault on a misaligned address or read the wrong elements."""
    impl = study.get(impl_name)
    alpha, beta = (1.5, 0.5) if DTYPES[dtype].is_floating_point else (2.0, 3.0)
    x = make_inputs(M, N, K, dtype, "cuda", alpha, beta, impl.out_dtypes.get(dtype))
    x.a, x.b, x.c, x.out = (shifted(t) for t in (x.a, x.b, x.c, x.out))
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


def _dispatch_cases():
    """(impl, dtype, choice): every tile a CUDA dispatch can pick."""
    return [pytest.param(i.name, d, n, id=f"{i.name}-{d}-{'x'.join(map(str, c.tile))}")
            for i in study.implementations("cuda") if hasattr(i.launch, "choices")
            for d in i.dtypes for n, c in enumerate(i.launch.choices)]


@pytest.mark.parametrize("aligned", [True, False], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("impl_name,dtype,choice", _dispatch_cases())
def test_every_tile_a_dispatch_can_pick(impl_name, dtype, choice, aligned):
    """A dispatch (stage 09) picks its tile by the grid it gives on this GPU; the usual test sizes reach only
    the smallest.  Each choice here gets a ragged shape that picks it (CudaDispatch.shapes), with operands on
    16-byte aligned rows (padded pitches: the vector entry) and shifted ones (its _unaligned twin), C read."""
    impl = study.get(impl_name)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, N = impl.launch.shapes(sms)[choice]
    x = make_inputs(M, N, DISPATCH_K, dtype, "cuda", 1.5, 0.5, impl.out_dtypes.get(dtype))
    x.a, x.b, x.c, x.out = (pitched16(t) if aligned else shifted(t) for t in (x.a, x.b, x.c, x.out))
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{impl_name} {dtype} {M}x{N}x{DISPATCH_K} {'aligned' if aligned else 'unaligned'}: seed={x.seed}: {v.error}"


def _fp32acc_impls():
    return impl_dtypes(dtype_filter=lambda impl, d: impl.precision(d).endswith("/fp32acc") and d != "fp8e4m3")


@pytest.mark.parametrize("impl_name,dtype", _fp32acc_impls())
def test_accumulates_in_fp32(impl_name, dtype):
    """"fp32acc" on the label means an fp32 running sum.  A = 1, B = 1 + r 2^-p over K = 4099: fp32 holds every
    partial sum exactly, so D must equal the exact sum rounded once to D's dtype; a 16-bit running sum drops the
    small parts once it passes 2^11 (the relative error that leaves, ~1e-3, would pass the tolerance)."""
    impl = study.get(impl_name)
    M, N, K = ACCUMULATOR_SHAPE
    a, b, exact = accumulator_inputs(dtype, "cuda", M, N, K)
    out_dtype = DTYPES[impl.out_dtypes.get(dtype, dtype)]
    out = torch.full((M, N), float("nan"), device="cuda", dtype=out_dtype)
    impl(a, b, out=out)
    torch.cuda.synchronize()
    want = exact.to(out_dtype)
    wrong = int((out != want).sum())
    assert wrong == 0, (f"{impl_name} {dtype}: {wrong} of {M * N} elements differ from the fp32-accumulated sum, "
                        f"e.g. {float(out.flatten()[(out != want).flatten().nonzero()[0]])} vs "
                        f"{float(want.flatten()[(out != want).flatten().nonzero()[0]])}")


@pytest.mark.parametrize("impl_name,dtype", impl_dtypes(dtype_filter=lambda impl, d: d == "fp8e4m3"))
def test_fp8_promotion(impl_name, dtype):
    """An fp8 "fp32acc" form adds the tensor core's partial sums into fp32 registers: on sums that climb to ~15000
    in steps of 1/8 and come back to 1 + r/8 (tests/helpers.py), over K = 16387 with unit scales of its mode, D must
    be exact.  A "tcacc" form keeps the sum in the fp8 tensor core's accumulator, whose ~13 mantissa bits cannot
    hold those steps: its D must be off (so that the label, and the report's contrast, are true)."""
    impl = study.get(impl_name)
    M, N, K = FP8_ACCUMULATOR_SHAPE
    a, b, exact = fp8_accumulator_inputs("cuda", M, N, K)
    sa, sb = fp8.unit_scales(impl.scaling, M, N, K, "cuda")
    out = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    impl(a, b, out=out, scale_a=sa, scale_b=sb)
    torch.cuda.synchronize()
    err = (out.double() - exact).abs()
    assert out.isfinite().all(), f"{impl_name}: {int((~out.isfinite()).sum())} NaN/inf elements"
    if impl.precision(dtype).endswith("/fp32acc"):
        wrong = int((err > 0).sum())
        assert wrong == 0, (f"{impl_name}: {wrong} of {M * N} elements differ from the exact sum (worst off by "
                            f"{float(err.max()):.4g}): the partial sums were not promoted to fp32")
    else:
        assert float(err.max()) > 2**-3, (f"{impl_name}: D is exact (worst error {float(err.max()):.3g}) over a sum "
                                          f"the fp8 accumulator cannot hold: the form promotes, its label says not")


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
    a0, b0 = a.clone(), b.clone()
    out = torch.full((B, M, N), float("nan"), device="cuda", dtype=a.dtype)     # poisoned: all must be written
    d = impl.batched(a, b, out=out)
    torch.cuda.synchronize()
    assert d.data_ptr() == out.data_ptr(), "batched must write into the out it is given"
    assert torch.equal(a, a0) and torch.equal(b, b0), f"{impl_name}: batched modified its inputs"
    for i, x in enumerate(xs):
        v = judge(d[i], reference(x), impl.precision(dtype), terms=lambda: reference_terms(x), k=K)
        assert v.passed, f"{impl_name} batch {i} of {B}, {M}x{N}x{K}: seed={x.seed}: {v.error}"


# --- fp32's whole range, judged against SGEMM's own error on the same inputs ------------------------------------
# The methods that emulate fp32 on tensor cores (stage 15's splits, the bf16 recipes) must be as accurate as SGEMM
# wherever SGEMM is: at magnitudes from 2^-60 to 2^60, with rows and columns 2^+-40 apart, with cancellation, and,
# on inputs of one sign, without the bias a truncating accumulator adds.  Each case draws fresh inputs, runs
# cuBLAS SGEMM (TF32 off) on them, and holds the method to 2x SGEMM's relative Frobenius and median errors.  On
# all-positive and all-negative inputs TCEC is held to SGEMM's own error, +10% for a draw's noise (a truncating
# accumulator's bias shows there, as it did at 2.1x SGEMM's error with hi*hi promoted every 4 k-tiles), with its
# mean signed relative error below half of SGEMM's relerr, at a shape where cuBLAS runs its ordinary kernel (at
# 200x136x1536 it split K, and its error on uniform inputs fell to 7.3e-8, a third of what it is at 1024x1024xK).
FP32_EMULATIONS = ("fp16x3-tcec", "tf32x3", "bf16x6", "bf16x9")
RANGE_SHAPE = (200, 136, 1536)
BIAS_SHAPE = (1024, 1024, 4096)


def _range_operands(case: str, M: int, N: int, K: int, g):
    def randn(r, c):
        return torch.randn((r, c), generator=g, device="cuda")

    def pow2(n, lo, hi):
        return torch.exp2(torch.randint(lo, hi + 1, (n,), generator=g, device="cuda").float())

    if case == "tiny":          # products near 2^-120, inside fp32's normal range
        return randn(M, K) * 2.0**-60, randn(K, N) * 2.0**-60
    if case == "huge":          # products near 2^112: |D| stays below 2^127 for K <= 16384
        return randn(M, K) * 2.0**56, randn(K, N) * 2.0**56
    if case == "opposite":      # A near 2^60, B near 2^-60
        return randn(M, K) * 2.0**60, randn(K, N) * 2.0**-60
    if case == "spread":        # every row of A and column of B its own scale, 2^-40 .. 2^40
        return randn(M, K) * pow2(M, -40, 40)[:, None], randn(K, N) * pow2(N, -40, 40)[None, :]
    if case == "cancel":        # A = [X, X], B = [Y; -Y + 2^-12 Z]: D = 2^-12 X Z, far below |A||B|
        h = K // 2
        x, y, z = randn(M, h), randn(h, N), randn(h, N)
        return torch.cat([x, x], 1), torch.cat([y, -y + z * 2.0**-12], 0)
    if case == "uniform":       # all positive: where a truncating accumulator's errors all point one way
        return torch.rand((M, K), generator=g, device="cuda"), torch.rand((K, N), generator=g, device="cuda")
    if case == "negative":      # all negative: where a split that rounds toward -inf would point one way
        return -torch.rand((M, K), generator=g, device="cuda"), -torch.rand((K, N), generator=g, device="cuda")
    raise ValueError(case)


RANGE_CASES = ("tiny", "huge", "opposite", "spread", "cancel", "uniform", "negative")
BIAS_CASES = ("uniform", "negative")


def _errors(d, ref) -> tuple[float, float]:
    diff = (d.double() - ref).abs()
    nz = ref != 0
    return float(diff.norm() / ref.norm()), float((diff[nz] / ref.abs()[nz]).median())


def _emulation_impls():
    return [pytest.param(i.name, id=i.name) for i in study.implementations(dtype="fp32")
            if i.precision("fp32") in FP32_EMULATIONS]


@pytest.mark.parametrize("case", RANGE_CASES)
@pytest.mark.parametrize("impl_name", _emulation_impls())
def test_fp32_emulation_is_as_accurate_as_sgemm(impl_name, case):
    seed = int.from_bytes(os.urandom(4), "little")
    g = torch.Generator(device="cuda").manual_seed(seed)
    M, N, K = BIAS_SHAPE if case in BIAS_CASES else RANGE_SHAPE
    a, b = _range_operands(case, M, N, K, g)
    ref = a.double() @ b.double()
    assert ref.abs().max() < 2.0**127 and ref.abs().max() > 2.0**-126, "the case must stay inside fp32's range"
    sgemm = torch.full((M, N), float("nan"), device="cuda")
    study.get("cublas")(a, b, out=sgemm)
    out = torch.full((M, N), float("nan"), device="cuda")
    study.get(impl_name)(a, b, out=out)
    torch.cuda.synchronize()
    assert out.isfinite().all(), f"{impl_name} {case}: {int((~out.isfinite()).sum())} NaN/inf elements, seed={seed}"
    got, want = _errors(out, ref), _errors(sgemm, ref)
    tcec = study.get(impl_name).precision("fp32") == "fp16x3-tcec"
    factor = 1.1 if case in BIAS_CASES and tcec else 2.0   # a tie within a draw's noise (gluon: 1.003x)
    for name, e, s in zip(("relerr", "median relative error"), got, want):
        assert e <= factor * s, (f"{impl_name} {case}: {name} {e:.3g} against SGEMM's {s:.3g} (allowed {factor}x), "
                                 f"seed={seed}")
    if case in BIAS_CASES and tcec:
        bias = float(((out.double() - ref) / ref).mean())
        assert abs(bias) <= 0.5 * want[0], (f"{impl_name}: mean signed relative error {bias:.3g} on {case} inputs, "
                                            f"against SGEMM's relerr {want[0]:.3g}: a bias; seed={seed}")


def _tcec_fp32_impls():
    return [pytest.param(i.name, id=i.name) for i in study.implementations(dtype="fp32")
            if i.stage is not None and i.stage.slug == "tcec"]


@pytest.mark.parametrize("impl_name", _tcec_fp32_impls())
def test_inf_and_nan_propagate_as_in_sgemm(impl_name):
    """inf and NaN in the inputs: D has NaN where SGEMM has NaN, the same signed inf where it has inf, and is right
    elsewhere.  The cases: an inf in A (against a column of B with a zero in its row: NaN there), a NaN in B, a
    row of A that is zero but for one -inf, a finite value beyond fp16's range beside an inf, and an inf in B."""
    M, N, K = 70, 45, 300
    x = make_inputs(M, N, K, "fp32", "cuda")
    a, b = x.a, x.b
    a[3, 5], b[5, 2] = float("inf"), 0.0
    b[7, 9] = float("nan")
    a[10, :] = 0.0
    a[10, 4] = -float("inf")
    a[20, 6], a[20, 8] = float("inf"), 1e30
    b[11, 30] = -float("inf")
    want = torch.full((M, N), float("nan"), device="cuda")
    study.get("cublas")(a, b, out=want)
    out = torch.full((M, N), float("nan"), device="cuda")
    study.get(impl_name)(a, b, out=out)
    torch.cuda.synchronize()
    assert torch.equal(out.isnan(), want.isnan()), (
        f"{impl_name}: NaN at {int(out.isnan().sum())} elements, SGEMM at {int(want.isnan().sum())}; seed={x.seed}")
    inf = want.isinf()
    assert inf.any() and torch.equal(out.isinf(), inf) and torch.equal(out[inf], want[inf]), (
        f"{impl_name}: inf differs from SGEMM's at {int((out.isinf() != inf).sum())} elements; seed={x.seed}")
    fin = want.isfinite()
    ref = a.double() @ b.double()
    err = float((out[fin].double() - ref[fin]).norm() / ref[fin].norm())
    assert err < 1e-2, f"{impl_name}: the finite elements are wrong (relerr {err:.3g}); seed={x.seed}"
