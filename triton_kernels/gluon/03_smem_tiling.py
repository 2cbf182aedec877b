"""Stage 03 (Gluon) - shared-memory tiling: the CUDA stage 03 kernel, written with explicit shared memory.

Technique:  one program (1024 threads, num_warps=32) owns a 32x32 tile of D, one output per thread: warp w
            holds row w of the tile and lane l column l, exactly CUDA's (threadIdx.y, threadIdx.x).  It
            walks K in steps of 32: every thread loads one element of a 32x32 tile of A and one of B from
            global memory, the tiles are stored to shared memory (gl.allocate_shared_memory), a barrier,
            then gl.dot_fma runs the 32 FMAs per thread out of shared memory, and a second barrier guards
            the tiles before the next step overwrites them.
Reproduces: seed 004 (tiled matrix multiplication, TILE_WIDTH, boundary handling), seed 001 "CacheGEMM".
Changed:    against the Triton stage 03 (which cannot name shared memory and keeps rank-1 updates in
            registers), the staging through shared memory is now written out, as in the CUDA kernel.
Why faster: each element of A and B loaded from global memory is reused by 32 threads from shared memory:
            global traffic falls 32x (seed 004: 4 B/FLOP -> 4/TILE B/FLOP).  Measured: 8.5 TFLOP/s at
            4096^3 fp32 on an H100 (reports/h100/results.csv).
Ragged edges: masked loads (other=0) zero-fill the parts of a tile outside M, N or K; zeros add nothing to
            the dot product.  The epilogue stores only rows < M and columns < N, and with beta == 0
            (HAS_C=False) C is never read.  All offsets are 64-bit.
Bank use:   plain row-major tiles (SwizzledSharedLayout(1, 1, 1, [1, 0])), the CUDA As/Bs: a warp reads one
            broadcast word of As and 32 consecutive words of Bs, which the bank arithmetic predicts to be
            conflict-free; ncu finds 1% of the shared-load wavefronts conflict (which access, not measured).
Compiles to (Triton 3.6, sm_90): with blocked-parent DotOperandLayouts gl.dot_fma lowers to 32 fma.rn.f32
            per thread, never an MMA (the TTGIR's inputPrecision = tf32 is a default that changes nothing).
            Each thread loads its whole row of As and column of Bs before its FMAs (LDS.128, ldmatrix used
            as data movement), where CUDA interleaves.  The two gl.thread_barrier() calls are CUDA's two
            __syncthreads().  32 registers, 8 KB shared, no spills.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton_kernels._common import launch, tiles
from triton_kernels.gluon._common import smem_dot_fma

TILE = 32
META = dict(TILE=TILE, num_warps=TILE, num_stages=1)   # 32 warps = 1024 threads, one per output


@gluon.jit
def smem_tiling_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                       HAS_C: gl.constexpr, TILE: gl.constexpr):
    # The register tile: one output per thread, lanes along columns, warps along rows.
    L: gl.constexpr = gl.BlockedLayout(size_per_thread=[1, 1], threads_per_warp=[1, 32],
                                       warps_per_cta=[TILE, 1], order=[1, 0])
    gl.static_assert(TILE == 32, "one warp per tile row: TILE must be the warp width")
    gl.static_assert(gl.num_warps() == TILE, "launch with num_warps == TILE (1024 threads)")
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])

    # Thread (ty, tx) loads A[row0 + ty, k0 + tx] and B[k0 + ty, col0 + tx] (L for the loads as well: both
    # coalesced along lanes), the tiles go to shared memory, a barrier (CUDA's first __syncthreads), gl.dot_fma
    # out of shared memory, a second barrier before the next K step overwrites the tiles.
    smem_dot_fma(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C, TILE, TILE, TILE, L, L, L, SMEM, SMEM)


def gemm(p):
    return launch("gluon:03_smem_tiling", smem_tiling_kernel, p, tiles(p, TILE, TILE), **META)


KERNEL = smem_tiling_kernel
