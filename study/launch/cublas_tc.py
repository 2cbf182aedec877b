"""cuBLAS baselines for the dtypes the tensor-core ladder adds (int8 and fp64), through torch, like study.launch.cublas."""
from __future__ import annotations

import torch

from study.launch import cublas


def gemm_fp64(p):
    """DGEMM (on Hopper's fp64 tensor cores): study.launch.cublas's torch.addmm, registered as its own baseline."""
    cublas.gemm_fp32(p)


def _int8_operands(p, b_col_major: bool):
    """A and B as torch._int_mm takes them.  _int_mm takes only M > 16 and K, N multiples of 8, but on the H100
    (torch 2.11, CUDA 13) cuBLASLt refused (CUBLAS_STATUS_NOT_SUPPORTED) every padded shape tried but 32^3:
    M x N x K = 17x1000x8, 24x1000x8, 40^3, 130x264x64 and 136x264x64.  So every dimension goes up to a multiple
    of 32: a shape that is not one already is zero-padded into a copy (exact: zeros add nothing).  With
    `b_col_major`, B is also copied into column-major storage (a K x N view of an N x K row-major tensor)."""
    M, N, K = p.mnk
    Mp, Np, Kp = (-(-d // 32) * 32 for d in (M, N, K))
    a, b = p.a, p.b
    if (Mp, Np, Kp) != (M, N, K):
        a = torch.zeros((Mp, Kp), dtype=torch.int8, device=a.device)
        b = torch.zeros((Kp, Np), dtype=torch.int8, device=b.device)
        a[:M, :K], b[:K, :N] = p.a, p.b
    if b_col_major:
        b = b.t().contiguous().t()
    return a, b


def _int_mm(p, a, b) -> None:
    """D = alpha A B + beta C through torch._int_mm; alpha and beta (integral, by the contract) applied in int32."""
    M, N, _ = p.mnk
    if a.shape[0] == M and b.shape[1] == N and p.out.is_contiguous() and p.alpha == 1 and p.c is None:
        torch._int_mm(a, b, out=p.out)
        return
    d = torch._int_mm(a, b)[:M, :N]
    if p.alpha != 1:
        d = d * int(p.alpha)
    if p.c is not None:
        d = d + int(p.beta) * p.c
    p.out.copy_(d)


def prepare_int8(p):
    """cuBLASLt's int8 GEMM at its fastest: B column-major (cuBLASLt's IMMA kernels want the "TN" layout, A
    row-major and B column-major; on the H100 the ceilings' _int_mm measured 858.6 TOP/s so against 129.8 with B
    row-major).  The layout is the caller's choice of storage, as a model's int8 weights are stored once, so B is
    copied into it here, outside the timing; the timed call is the GEMM alone.  A B that changes between calls
    is not seen: the study's callers draw B once per prepared launch."""
    a, b = _int8_operands(p, b_col_major=True)
    return lambda: _int_mm(p, a, b)


def gemm_int8_rowmajor(p):
    """The same product with B row-major, as the contract hands it over: the cost of not choosing cuBLASLt's
    layout, shown beside the baseline.  Shapes that are not multiples of 32 also pay for the padded copies."""
    _int_mm(p, *_int8_operands(p, b_col_major=False))


# --- fp32 emulated by bf16 GEMMs (the fp32-emulation shootout of stage 15) -------------------------------------
# cuBLAS's own recipe (CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUDA 12.9) runs only on Blackwell; this is the same
# recipe composed from cuBLAS bf16 GEMMs, as a library user on Hopper would: x = x0 + x1 + x2, each part bf16
# (round to nearest, the differences exact in fp32), every product a cuBLAS GEMM with fp32 output (summed inside the
# tensor cores over K), smallest first, each after the first added to the running fp32 sum in cuBLAS's epilogue
# (addmm, beta = 1).  The split is inside the timed call.
_BF16X6 = ((1, 1), (0, 2), (2, 0), (0, 1), (1, 0), (0, 0))       # i + j <= 2
_BF16X9 = ((2, 2), (1, 2), (2, 1), *_BF16X6)


def _bf16_parts(x):
    x0 = x.to(torch.bfloat16)
    r = x - x0.float()
    x1 = r.to(torch.bfloat16)
    return x0, x1, (r - x1.float()).to(torch.bfloat16)


def _bf16_recipe(p, pairs) -> None:
    a, b = _bf16_parts(p.a), _bf16_parts(p.b)
    acc = None
    for i, j in pairs:   # each product after the first added in cuBLAS's epilogue (fp32 C in, fp32 D out)
        acc = (torch.mm(a[i], b[j], out_dtype=torch.float32) if acc is None
               else torch.addmm(acc, a[i], b[j], out_dtype=torch.float32))
    acc.mul_(p.alpha)
    if p.c is not None:
        acc.add_(p.c, alpha=p.beta)
    p.out.copy_(acc)


def gemm_bf16x6(p):
    """bf16x6-tcacc: the six products of parts whose indices sum to 2 or less."""
    _bf16_recipe(p, _BF16X6)


def gemm_bf16x9(p):
    """bf16x9-tcacc: all nine products."""
    _bf16_recipe(p, _BF16X9)
