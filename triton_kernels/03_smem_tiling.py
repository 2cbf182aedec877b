"""Stage 03 (Triton) - blocked tiling: one program per BLOCK_M x BLOCK_N tile of D.

Technique:  each program owns a BLOCK_M x BLOCK_N tile of D in registers and walks K, adding one rank-1
            update per k: a column of A's tile (BLOCK_M values) times a row of B's tile (BLOCK_N values).
            Triton does not expose shared memory; the tile's operands live on chip (registers, backed by
            L1, which on Hopper is the same SRAM as shared memory), which is what the CUDA stage 03 stages
            by hand.  No tl.dot: fp32 FMAs on the CUDA cores.
Reproduces: seed 004 (tiled matrix multiplication), seed 001 (shared memory).
Changed:    stage 02 reused nothing across rows; now every element of A brought on chip is used BLOCK_N
            times and every element of B BLOCK_M times.
Why faster: global traffic per FLOP falls by the tile size (seed 004's 4 B/FLOP divided by the tile width).
Ragged edges: masked loads give zeros outside M, N and K; masked stores skip rows and columns outside D.

Why rank-1 updates and not sum(a[:, :, None] * b[None, :, :], axis=1) over loaded 2-D tiles: Triton's
combine pass recognises that broadcast-multiply-reduce as a matrix product and turns it into tt.dot, which
then takes tl.dot's default fp32 precision, TF32.  Measured on an H200 (this repo's first GPU run): relerr
7.7e-4 against float64, where true fp32 gives ~1e-6.  A "no tensor cores, fp32" stage that silently runs
TF32 would be a false result, so this form leaves the compiler nothing to rewrite.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import epilogue, launch_tiles, tile_rows_cols

META = dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=8, num_warps=4)


@triton.jit
def tiled_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                 HAS_C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows, cols = tile_rows_cols(tl.program_id(0), N, BLOCK_M, BLOCK_N)
    in_m, in_n = rows < M, cols < N
    a_ptrs = A + rows * lda          # column k of A's tile: a_ptrs + k
    b_ptrs = B + cols                # row k of B's tile: b_ptrs + k * ldb
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        for kk in tl.static_range(BLOCK_K):   # unrolled: BLOCK_K independent loads in flight
            k = k0 + kk
            a = tl.load(a_ptrs + k, mask=in_m & (k < K), other=0.0).to(tl.float32)
            b = tl.load(b_ptrs + k.to(tl.int64) * ldb, mask=in_n & (k < K), other=0.0).to(tl.float32)
            acc += a[:, None] * b[None, :]
    mask = in_m[:, None] & in_n[None, :]
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def gemm(p):
    return launch_tiles("triton:03_smem_tiling", tiled_kernel, p, META)


KERNEL = tiled_kernel
