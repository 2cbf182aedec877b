"""Stage 05 (Gluon) - 2-D block tiling: each thread computes an 8x8 block of D.

Technique:  one program (256 threads, num_warps=8) owns a 128x128 tile of D.  The accumulator's layout is
            the register tile: BlockedLayout(size_per_thread=[8, 8], threads_per_warp=[2, 16],
            warps_per_cta=[8, 1]) gives thread t rows 8*(t // 16) .. +7 and columns 8*(t % 16) .. +7, the
            CUDA stage's threadRow/threadCol map.  Per K step the program loads a 128xBK tile of A and a
            BKx128 tile of B with scalar, coalesced loads, stores them to shared memory, and gl.dot_fma
            does the outer products: per k, 8 values of A and 8 of B from shared memory feed 64 FMAs.
Reproduces: seed 000 kernel 3, seed 001 "2D BlockTiling"; the CUDA stage 05 kernel: same tile, threads and
            output map, the same row-major shared tiles.
Changed:    stage 04 reused each B value 8 times; now each A and each B value is reused 8 times, so the
            register tile is 8x8 instead of 8x1.
Why faster: shared-memory loads per FMA fall from ~1.1 to 0.25 (16 values per 64 FMAs), and the 128x128
            tile halves the global traffic per FLOP again against 64x64.  Measured: 29.2 TFLOP/s at 4096^3
            fp32 on an H100, 1.32x the CUDA stage (reports/h100/results.csv).
Ragged edges: masked loads (other=0) zero-fill tile parts outside M, N and K; the epilogue stores only
            in-range outputs; beta == 0 (HAS_C=False) compiles no load of C.  All offsets are 64-bit.
Bank use:   plain row-major tiles (SwizzledSharedLayout(1, 1, 1, [1, 0])); gl.bank_conflicts reports 1
            extra wavefront (2-way) on the Bs reads: 16 lanes read 8-float runs 32 bytes apart.
Gluon against CUDA: BK is 16, not 8 (gl.dot_fma refuses K < 16): half the barriers, 16 KB of shared
            memory.  A's 16 k of a row are contiguous, so As is read with LDS.128 even untransposed.  With
            16-byte aligned D, and ldd and N multiples of 16, the epilogue stores 8 contiguous outputs as 2
            st.global.v4 (CUDA 05: 4 bytes at a time).  209 registers (251 with C), no spills.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton_kernels.gluon._common import launch_tiles, smem_dot_fma

META = dict(BM=128, BN=128, BK=16, TM=8, TN=8, num_warps=8, num_stages=1)


@gluon.jit
def tiling_2d_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                     HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                     TM: gl.constexpr, TN: gl.constexpr):
    NW: gl.constexpr = gl.num_warps()
    TPW_N: gl.constexpr = BN // TN                                    # threads across a tile row: 16
    gl.static_assert(NW * 32 == (BM // TM) * (BN // TN), "one thread per TM x TN block of the tile")
    gl.static_assert(TPW_N <= 32, "a warp must span whole rows of threads")
    # The register tile: thread t owns rows TM*(t // TPW_N) .. +TM-1, columns TN*(t % TPW_N) .. +TN-1.
    L: gl.constexpr = gl.BlockedLayout(size_per_thread=[TM, TN], threads_per_warp=[32 // TPW_N, TPW_N],
                                       warps_per_cta=[NW, 1], order=[1, 0])
    # Global-load layouts, one element per thread per pass, lanes along a tile row (coalesced):
    # A's BMxBK tile in 16x16 passes, B's BKxBN tile in 2x128 passes.
    LA: gl.constexpr = gl.BlockedLayout([1, 1], [32 // BK, BK], [NW, 1], [1, 0])
    LB: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [NW // (BN // 32), BN // 32], [1, 0])
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])

    # The K loop of stage 03 with these layouts: tiles through shared memory, gl.dot_fma in L.
    smem_dot_fma(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C, BM, BN, BK, L, LA, LB, SMEM, SMEM)


def gemm(p):
    return launch_tiles("gluon:05_tiling_2d", tiling_2d_kernel, p, META)


KERNEL = tiling_2d_kernel
