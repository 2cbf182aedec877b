"""cuBLAS baselines for the dtypes the tensor-core ladder adds (int8 and fp64), through torch, like study.launch.cublas."""
from __future__ import annotations

import torch

from study.launch import cublas


def gemm_fp64(p):
    """DGEMM (on Hopper's fp64 tensor cores): study.launch.cublas's torch.addmm, registered as its own baseline."""
    cublas.gemm_fp32(p)


def gemm_int8(p):
    """int8 x int8 -> int32 through torch._int_mm (cuBLASLt IMMA).  _int_mm takes only M > 16 and K, N
    multiples of 8, but on the H100 (torch 2.11, CUDA 13) cuBLASLt refused (CUBLAS_STATUS_NOT_SUPPORTED)
    every padded shape tried but 32^3: M x N x K = 17x1000x8, 24x1000x8, 40^3, 130x264x64 and 136x264x64.
    So every dimension goes up to a multiple of 32: a shape that is not one already is zero-padded into a
    copy first (exact: zeros add nothing), and the timed shapes (multiples of 32) call cuBLAS alone.  alpha
    and beta (integral, by the contract) are applied in int32 afterwards."""
    M, N, K = p.mnk
    Mp, Np, Kp = (-(-d // 32) * 32 for d in (M, N, K))
    a, b = p.a, p.b
    if (Mp, Np, Kp) != (M, N, K):
        a = torch.zeros((Mp, Kp), dtype=torch.int8, device=a.device)
        b = torch.zeros((Kp, Np), dtype=torch.int8, device=b.device)
        a[:M, :K], b[:K, :N] = p.a, p.b
    if (Mp, Np) == (M, N) and p.out.is_contiguous() and p.alpha == 1 and p.c is None:
        torch._int_mm(a, b, out=p.out)
        return
    d = torch._int_mm(a, b)[:M, :N]
    if p.alpha != 1:
        d = d * int(p.alpha)
    if p.c is not None:
        d = d + int(p.beta) * p.c
    p.out.copy_(d)
