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

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from triton_kernels._common import check_grid, gemm_args
from triton_kernels.gluon._common import as_int64, epilogue_store, tile_indices

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

    pid = gl.program_id(0)
    rows, cols = tile_indices(pid, M, N, TILE, TILE, L)
    in_m = rows < M
    in_n = cols < N
    # Thread (ty, tx) loads A[row0 + ty, k0 + tx] and B[k0 + ty, col0 + tx]: both coalesced along lanes.
    k_col = gl.arange(0, TILE, layout=gl.SliceLayout(0, L))           # k along a row of A's tile
    k_row = gl.arange(0, TILE, layout=gl.SliceLayout(1, L))           # k along a column of B's tile
    a_ptrs = A + rows[:, None] * lda + k_col[None, :]
    b_ptrs = B + k_row.to(gl.int64)[:, None] * ldb + cols[None, :]
    b_step = as_int64(ldb) * TILE                                  # 64-bit: TILE * ldb may exceed 2**31

    As = gl.allocate_shared_memory(gl.float32, [TILE, TILE], SMEM)
    Bs = gl.allocate_shared_memory(gl.float32, [TILE, TILE], SMEM)
    acc = gl.zeros([TILE, TILE], gl.float32, L)
    for k0 in range(0, K, TILE):
        k_left = K - k0                                               # columns of this K tile still in range
        a = gl.load(a_ptrs, mask=in_m[:, None] & (k_col < k_left)[None, :], other=0.0)
        b = gl.load(b_ptrs, mask=(k_row < k_left)[:, None] & in_n[None, :], other=0.0)
        As.store(a.to(gl.float32))
        Bs.store(b.to(gl.float32))
        gl.thread_barrier()                                           # tiles complete before anyone reads
        acc = gl.dot_fma(As.load(gl.DotOperandLayout(0, L, 0)), Bs.load(gl.DotOperandLayout(1, L, 0)), acc)
        gl.thread_barrier()                                           # everyone done before the overwrite
        a_ptrs += TILE
        b_ptrs += b_step
    epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C)


def gemm(p):
    M, N, _ = p.mnk
    programs = triton.cdiv(M, TILE) * triton.cdiv(N, TILE)
    check_grid("gluon:03_smem_tiling", programs)
    return smem_tiling_kernel[(programs,)](**gemm_args(p), **META)


KERNEL = smem_tiling_kernel
