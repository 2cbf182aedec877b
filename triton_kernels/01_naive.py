"""Stage 01 (Triton) - naive: one program per output element.

Technique:  Triton has no "one thread per output": its unit is a program, a block of threads that works on
            whole tensors.  The closest honest equivalent of the naive CUDA kernel is one program per element
            of D, which walks K in chunks of BLOCK_K, multiplies a row chunk of A by a column chunk of B
            element-wise, and sums.  No tl.dot, so no tensor cores: plain fp32 multiply-adds.
Reproduces: seed 001 (naive SGEMM), seed 004 (MatrixMulKernel).
Changed:    nothing; the floor of the Triton ladder.
Why slow:   nothing is reused on chip.  Each program reads K elements of A (contiguous) and K elements of a
            column of B (one 32-byte sector per element: ldb floats apart), so B costs ~32x the bytes it
            uses; consecutive programs take consecutive rows, as stage 01's threads do, so neighbouring
            programs share the B column through L2 at best.  A warp is spent on a single output.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import epilogue, launch

META = dict(BLOCK_K=32, num_warps=1)   # one warp per output element


@triton.jit
def naive_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                 HAS_C: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    row = pid % M            # consecutive programs walk down a column of D, like stage 01's threads
    col = pid // M
    offs = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs
        in_k = k < K
        a = tl.load(A + row * lda + k, mask=in_k, other=0.0)
        b = tl.load(B + k.to(tl.int64) * ldb + col, mask=in_k, other=0.0)
        acc += a.to(tl.float32) * b.to(tl.float32)
    d = epilogue(tl.sum(acc, axis=0), alpha, beta, C + row * ldc + col, True, HAS_C)
    tl.store(D + row * ldd + col, d.to(D.dtype.element_ty))


def gemm(p):
    M, N, _ = p.mnk
    return launch("triton:01_naive", naive_kernel, p, M * N, **META)


KERNEL = naive_kernel
