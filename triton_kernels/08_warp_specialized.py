"""Stage 08 (Triton) - warp specialization: NOT EXPRESSIBLE for an fp32 FMA dot on sm_90 in Triton 3.6.

What runs here is stage 07's kernel (same tiles, warps and pipeline) with automatic warp specialization
requested on its K loop, tl.range(..., warp_specialize=True).  On sm_90 the request is accepted and ignored:
the compiled kernel is stage 07's, instruction for instruction.  This row measures stage 07 again, under
the stage 08 name, so that the ladder shows what Triton gives for this step: nothing.

Technique:  (attempted) split the program's warps into a producer that only copies tiles into the shared-
            memory ring and consumers that only compute, handing slots over through barriers: the CUDA
            stage's 1 producer warp + 8 consumer warps.  (compiled) stage 07: all 8 warps issue their
            share of every tile's cp.async copies and compute, one barrier pair per k-tile.
Reproduces: seed 000 kernel 6 (one producer warp feeding consumer warps).
Changed:    only the loop's warp_specialize flag, and it changes nothing in the output.
Why faster: it is not: identical code, so stage 07's time (40.5 TFLOP/s at 4096^3 fp32 on an H100, as
            Triton 07; reports/h100/results.csv).  The CUDA stage expects 0.85-1.0x of its stage 07 too.
Ragged edges: stage 07's: masked loads give zeros outside M, N and K; masked stores; beta == 0 (HAS_C=False)
            compiles no load of C.  Offsets are 64-bit.
Why not expressible (Triton 3.6): the sm_90 warp-specialization pass only partitions loops around wgmma
            dots, and an fp32 ieee dot is lowered to FMAs; triton.language itself cannot give different
            warps different code (no warp id, no per-warp branch).  Explicit partitions exist one level
            down, in Gluon (gl.warp_specialize), which is where this study's Gluon stage 08 lives.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import epilogue, launch_tiles, tile_rows_cols

META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, WARP_SPECIALIZE=True, num_warps=8, num_stages=4)


@triton.jit
def warp_specialized_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                            HAS_C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    rows, cols = tile_rows_cols(tl.program_id(0), N, BLOCK_M, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    in_m, in_n = rows[:, None] < M, cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    # The request: partition this loop into producer (loads) and consumer (dot) warps.  Ignored on sm_90.
    for k0 in tl.range(0, K, BLOCK_K, warp_specialize=WARP_SPECIALIZE):
        a = tl.load(a_ptrs + k0, mask=in_m & (ks[None, :] < K - k0), other=0.0)
        b = tl.load(b_ptrs + k0 * tl.cast(ldb, tl.int64), mask=(ks[:, None] < K - k0) & in_n, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee", out_dtype=tl.float32)   # never TF32
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def gemm(p):
    return launch_tiles("triton:08_warp_specialized", warp_specialized_kernel, p, META)


KERNEL = warp_specialized_kernel
