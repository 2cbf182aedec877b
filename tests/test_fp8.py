"""fp8 (stage 16) on the CPU: the quantization helpers, and the contract's refusals before any launch."""
from __future__ import annotations

import pytest
import torch

import study
from study.core import fp8

FP8 = [i.name for i in study.implementations(dtype="fp8e4m3")]


@pytest.mark.parametrize("scaling", fp8.SCALINGS)
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (37, 300, 129), (256, 130, 1000)])
def test_quantize_round_trip(scaling, M, N, K):
    """quantize_a / quantize_b give e4m3 operands (A row-major, B K-major) and scales in the contract's shapes and
    layouts, which the contract takes; dequantized, they are the input to e4m3's precision (3 mantissa bits: a
    relative error below 2^-4 per element), and no group's largest value saturates."""
    g = torch.Generator().manual_seed(M * N + K)
    x_a = torch.randn(M, K, generator=g) * torch.exp2(torch.randint(-20, 20, (M, 1), generator=g).float())
    x_b = torch.randn(K, N, generator=g) * 1e-3
    qa, sa = fp8.quantize_a(x_a, scaling)
    qb, sb = fp8.quantize_b(x_b, scaling)
    assert qa.dtype == qb.dtype == fp8.E4M3 and qa.stride(1) == 1 and (K == 1 or qb.stride(0) == 1)
    p = fp8.validate_scaled("q", scaling, {"fp8e4m3": "x"}, {"fp8e4m3": "bf16"}, qa, qb, None, 1.0, 0.0, None,
                            sa, sb, allow_cpu=True)
    assert p.scaling == scaling and p.bt.shape == (N, K)
    for x, q, s, op in ((x_a, qa, sa, "a"), (x_b, qb, sb, "b")):
        back = fp8.dequantize(q, s, scaling, op)
        rel = (back - x.double()).abs() / x.double().abs().clamp_min(1e-300)
        big = x.double().abs() >= x.double().abs().max() * 2.0**-6    # away from e4m3's subnormals per tensor
        assert float(rel[big].max()) <= 2.0**-4, f"{op}: worst relative error {float(rel[big].max()):.3g}"
        assert q.float().abs().max() <= fp8.E4M3_MAX


@pytest.mark.parametrize("scaling", fp8.SCALINGS)
def test_quantize_refuses_what_it_cannot_scale(scaling):
    """NaN, an infinity or a value beyond float32's range would spoil its whole group's scale (e4m3 has no
    infinity): refused, as are empty, 1-D and complex inputs, before anything is quantized."""
    g = torch.Generator().manual_seed(7)
    for quantize in (fp8.quantize_a, fp8.quantize_b):
        x = torch.randn(40, 300, generator=g)
        for bad in (float("nan"), float("inf"), -float("inf")):
            y = x.clone()
            y[3, 200] = bad
            with pytest.raises(ValueError, match="NaN, infinite or beyond float32's range"):
                quantize(y, scaling)
        with pytest.raises(ValueError, match="beyond float32's range"):
            quantize(x.double() * 1e39, scaling)
        for shape in ((0, 5), (5, 0), (7,)):
            with pytest.raises(ValueError, match="non-empty 2-D matrix"):
                quantize(torch.ones(shape), scaling)
        with pytest.raises(TypeError, match="real-valued"):
            quantize(torch.ones(4, 4, dtype=torch.complex64), scaling)
        with pytest.raises(ValueError, match="scaling must be one of"):
            quantize(x, "channel")


@pytest.mark.parametrize("scaling", fp8.SCALINGS)
def test_quantize_tiny_and_zero_groups_stay_finite(scaling):
    """A group of zeros gets scale 1; a group whose amax / 448 underflows float32 gets float32's smallest normal
    number, never 0 (0 / 0 would turn the group's zeros into NaN): every scale is positive and finite, and the
    dequantized operand is finite and within that scale's rounding of the input."""
    x = torch.zeros(130, 260)
    x[0, 0] = 1e-43                   # amax / 448 is below float32's smallest subnormal
    x[5, 140] = -3e-41                # a subnormal scale if not clamped
    x[129, 259] = 2.5                 # an ordinary group
    for quantize, op in ((fp8.quantize_a, "a"), (fp8.quantize_b, "b")):
        q, s = quantize(x, scaling)
        assert bool(torch.isfinite(s).all()) and bool((s > 0).all()), s
        back = fp8.dequantize(q, s, scaling, op)
        assert bool(torch.isfinite(back).all())
        assert float((back - x.double()).abs().max()) <= 2.5 * 2.0**-4
        assert float(back[129, 259]) == pytest.approx(2.5, rel=2.0**-4)


def _call(name, M=33, N=45, K=300, **over):
    impl = study.get(name)
    a = torch.zeros(M, K).to(fp8.E4M3)
    b = torch.zeros(N, K).to(fp8.E4M3).t()
    sa, sb = fp8.unit_scales(impl.scaling, M, N, K)
    args = {**dict(a=a, b=b, scale_a=sa, scale_b=sb), **over}
    return fp8.validate_scaled(name, impl.scaling, impl.dtypes, impl.out_dtypes, args["a"], args["b"], None, 1.0,
                               0.0, None, args["scale_a"], args["scale_b"], allow_cpu=True)


@pytest.mark.parametrize("name", FP8)
def test_fp8_contract_refuses_before_launch(name):
    """Each refusal names the implementation and what is wrong: A not K-major, B not K-major (row-major B), no
    scales, scales of another mode's shape, a block scale stored row-major, scales that are not float32."""
    impl = study.get(name)
    M, N, K = 33, 45, 300
    assert _call(name).mnk == (M, N, K)
    with pytest.raises(ValueError, match=rf"{name}: A must be K-major"):
        _call(name, a=torch.zeros(K, M).to(fp8.E4M3).t())
    with pytest.raises(ValueError, match=rf"{name}: B must be K-major"):
        _call(name, b=torch.zeros(K, N).to(fp8.E4M3))
    with pytest.raises(TypeError, match=rf"{name}: {impl.scaling} scaling needs scale_a"):
        _call(name, scale_a=None)
    with pytest.raises(TypeError, match=rf"{name}: scale_b must be float32"):
        _call(name, scale_b=torch.ones(fp8.scale_shapes(impl.scaling, M, N, K)[1], dtype=torch.float64))
    wrong = {"tensor": (M,), "row": (1,), "block": (M,)}[impl.scaling]
    with pytest.raises(ValueError, match=rf"{name}: {impl.scaling} scaling takes scale_a of shape"):
        _call(name, scale_a=torch.ones(wrong))
    if impl.scaling == "block":
        with pytest.raises(ValueError, match=rf"{name}: block scaling takes scale_a .* column-major"):
            _call(name, scale_a=torch.ones(M, fp8.blocks(K)))
    with pytest.raises(TypeError, match=rf"{name}: supports dtypes"):
        impl(torch.zeros(M, K, dtype=torch.bfloat16), torch.zeros(K, N, dtype=torch.bfloat16))


def test_scales_cut_to_a_sub_problem():
    """scales_for cuts scales drawn for a larger problem to the sub-problem's shapes, in the canonical layouts."""
    sa, sb = fp8.column_major(torch.rand(40, 3)), fp8.column_major(torch.rand(3, 2))
    ca, cb = fp8.scales_for(sa, sb, "block", 33, 100, 200)
    assert ca.shape == (33, 2) and ca.stride() == (1, 33) and cb.shape == (2, 1)
    assert torch.equal(ca, sa[:33, :2]) and torch.equal(cb, sb[:2, :1])


@pytest.mark.parametrize("M,N,K", [(33, 45, 1024), (256, 300, 300), (100, 129, 129), (128, 256, 1024),
                                   (1, 1, 1), (4, 8, 385)])
def test_block_scales_in_16_byte_runs(M, N, K):
    """block_scales_16 gives sa as K / 128 rows of M and sb as N / 128 rows of K / 128 (rounded up), each row a
    multiple of 4 floats from a 16-byte aligned start, holding the caller's values; scales already so are used as
    they are, others are copied, and refresh() copies them again (a prepared call re-runs on changed scales)."""
    kb, nb = fp8.blocks(K), fp8.blocks(N)
    sa = fp8.column_major(torch.rand(M, kb) + 0.5)
    sb = fp8.column_major(torch.rand(kb, nb) + 0.5)
    p = _call("cuda:16_fp8-block", M=M, N=N, K=K, scale_a=sa, scale_b=sb)
    ra, rb, refresh = fp8.block_scales_16(p)
    for r, src, rows, cols in ((ra, sa.t(), kb, M), (rb, sb.t(), nb, kb)):
        assert r.shape[0] == rows and r.data_ptr() % 16 == 0 and r.stride(1) == 1
        assert rows == 1 or r.stride(0) % 4 == 0
        assert (r.data_ptr() == src.data_ptr()) == (cols % 4 == 0), "copied exactly when a row is no whole run"
        refresh()
        assert torch.equal(r[:, :cols], src)
        src.mul_(2.0)
        refresh()
        assert torch.equal(r[:, :cols], src), "refresh() must copy the scales' current values"
        if r.shape[1] > cols:
            assert not r[:, cols:].any(), "the padding reads as zeros"


def test_tma_only_variant_refuses_a_d_its_stores_cannot_take():
    """The per-tensor variant `tmaonly` is compiled with the TMA-store epilogue alone: a D whose start or pitch is
    not 16-byte aligned is refused before launch (it would otherwise be left unwritten)."""
    from study import registry
    impl = study.get("cuda:16_fp8")
    M, N, K = 64, 72, 256
    a, b = torch.zeros(M, K).to(fp8.E4M3), torch.zeros(N, K).to(fp8.E4M3).t()
    sa, sb = fp8.unit_scales("tensor", M, N, K)
    odd = torch.empty(M * (N + 2) + 1, dtype=torch.bfloat16)[1:].view(M, N + 2)[:, :N]   # 2-byte offset
    p = fp8.validate_scaled("cuda:16_fp8", "tensor", impl.dtypes, impl.out_dtypes, a, b, None, 1.0, 0.0, odd, sa, sb,
                            allow_cpu=True)
    with pytest.raises(ValueError, match=r"TMA stores of D only"):
        registry.VARIANTS["cuda:16_fp8"]["tmaonly"].bind("cuda:16_fp8/tmaonly", p)
