"""Stage 16's baselines: cuBLASLt fp8 through torch._scaled_mm, one per scaling mode torch takes on Hopper.

torch._scaled_mm wants what cuBLASLt wants: A row-major and B column-major (the K-major operands of the contract),
16-byte aligned starts and pitches, K and N multiples of 16, and for block scales (A 1x128, B 128x128, both
column-major) whole 128-blocks and scale pitches of 16 bytes (M and ceil(K/128) multiples of 4).  A call that
meets them is one _scaled_mm into D; any other is computed on zero-padded copies (scales padded with 1), the
copies made inside the timed call, and cut back into D.  alpha != 1 or beta != 0 adds an fp32 epilogue after it
(torch.addcmul-style, two roundings to bf16 at most).  With use_fast_accum off (the default here) cuBLASLt
promotes the tensor core's partial sums into fp32, as stage 16's "fp32acc" forms do; on, it does not ("tcacc").
"""
from __future__ import annotations

import torch

from study.core.fp8 import BLOCK, blocks, column_major


def _up(n: int, m: int) -> int:
    return -(-n // m) * m


def _aligned(t: torch.Tensor, pitch: int) -> bool:
    return t.data_ptr() % 16 == 0 and (t.shape[0] == 1 or pitch % 16 == 0)


def _padded_sizes(p) -> tuple[int, int, int]:
    M, N, K = p.mnk
    if p.scaling == "block":
        Kp = _up(K, BLOCK)
        return _up(M, 16), _up(N, BLOCK), Kp if blocks(Kp) % 4 == 0 else _up(K, 4 * BLOCK)
    return M, _up(N, 16), _up(K, 16)


def _pad(t: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    return torch.zeros(rows, cols, dtype=t.dtype, device=t.device)


def _operands(p):
    """(A, B^T, scale_a, scale_b, refresh, (Mp, Np)): what _scaled_mm takes, with refresh() re-copying the inputs
    into padded buffers where the call does not meet cuBLASLt's constraints (nothing to do where it does)."""
    M, N, K = p.mnk
    Mp, Np, Kp = _padded_sizes(p)
    bt = p.bt
    if (Mp, Np, Kp) == (M, N, K) and _aligned(p.a, p.lda) and _aligned(bt, p.ldbt):
        sa, sb = p.scale_a, p.scale_b
        if p.scaling == "row":
            sa, sb = sa.view(M, 1), sb.view(1, N)
        return p.a, bt, sa, sb, (lambda: None), (M, N)
    a = _pad(p.a, Mp, Kp)
    b = _pad(bt, Np, Kp)
    if p.scaling == "tensor":
        sa, sb = p.scale_a, p.scale_b
    elif p.scaling == "row":
        sa, sb = torch.ones(Mp, 1, device=a.device), torch.ones(1, Np, device=a.device)
    else:
        sa = column_major(torch.ones(Mp, blocks(Kp), device=a.device))
        sb = column_major(torch.ones(blocks(Kp), blocks(Np), device=a.device))

    def refresh():
        a[:M, :K].copy_(p.a)
        b[:N, :K].copy_(bt)
        if p.scaling == "row":
            sa[:M, 0].copy_(p.scale_a)
            sb[0, :N].copy_(p.scale_b)
        elif p.scaling == "block":
            sa[:M, :blocks(K)].copy_(p.scale_a)
            sb[:blocks(K), :blocks(N)].copy_(p.scale_b)
    return a, b, sa, sb, refresh, (Mp, Np)


def _prepare(p, fast_accum: bool = False):
    M, N, _ = p.mnk
    a, bt, sa, sb, refresh, (Mp, Np) = _operands(p)
    out = p.out
    direct = (Mp, Np) == (M, N) and p.alpha == 1.0 and p.beta == 0.0 and out.is_contiguous() \
        and out.data_ptr() % 16 == 0

    def mm(into=None):
        return torch._scaled_mm(a, bt.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum, out=into)

    if direct:
        def run():
            refresh()            # nothing to do unless K was padded
            mm(out)
        return run

    def run():
        refresh()
        d = mm()[:M, :N].float()
        if p.alpha != 1.0:
            d = d * p.alpha
        if p.beta != 0.0:
            d = d + p.beta * p.c.float()
        out.copy_(d)
    return run


def prepare_tensor(p):
    return _prepare(p)


def prepare_row(p):
    return _prepare(p)


def prepare_block(p):
    return _prepare(p)


def prepare_fastacc(p):
    return _prepare(p, fast_accum=True)
