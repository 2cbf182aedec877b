"""Stage 02 (Triton) - coalesced access: one program per row segment of D.

Technique:  each program owns BLOCK_N consecutive outputs of one row of D and loops over k one step at a
            time: it loads one scalar A[row, k] (shared by the whole program, a broadcast) and a contiguous
            vector B[k, col:col+BLOCK_N], and accumulates their product.  Still no tl.dot: fp32 FMAs.
Reproduces: seed 001 (global memory coalescing).
Changed:    stage 01 spent a program on one output and read B down a column (strided); here the lanes of a
            program sit on consecutive columns, exactly as the CUDA stage 02 threads do.
Why faster: every load of B is a contiguous BLOCK_N*4-byte segment (full 128-byte transactions), A is one
            broadcast scalar per step, and D is stored as one contiguous vector.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import epilogue, launch

META = dict(BLOCK_N=128, num_warps=4)


@triton.jit
def coalesced_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                     HAS_C: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    n_blocks = tl.cdiv(N, BLOCK_N)
    row = pid // n_blocks          # consecutive programs share a row, so that row of A stays in L1/L2
    cols = (pid % n_blocks) * BLOCK_N + tl.arange(0, BLOCK_N)
    in_n = cols < N
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    a_ptr = A + row * lda
    b_ptrs = B + cols          # advanced by whole rows of B: pointer arithmetic cannot overflow int32
    for _ in range(0, K):
        a = tl.load(a_ptr).to(tl.float32)
        b = tl.load(b_ptrs, mask=in_n, other=0.0).to(tl.float32)
        acc += a * b
        a_ptr += 1
        b_ptrs += ldb
    d = epilogue(acc, alpha, beta, C + row * ldc + cols, in_n, HAS_C)
    tl.store(D + row * ldd + cols, d.to(D.dtype.element_ty), mask=in_n)


def gemm(p):
    M, N, _ = p.mnk
    return launch("triton:02_coalesced", coalesced_kernel, p, M * triton.cdiv(N, META["BLOCK_N"]), **META)


KERNEL = coalesced_kernel
