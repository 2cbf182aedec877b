"""Stage 11 (Gluon) - mma_v2 fed from shared memory that a multi-stage cp.async ring fills.

Technique:  one program (8 warps) owns a 128x128 tile of D; the warps are stacked along M
            (NVMMADistributedLayout warps_per_cta [8, 1]), each holding a 16x128 strip of D as 1 x 16 mma
            tiles of 16x8: WMMA's arrangement, one 16-row fragment row per warp.  K advances BK = 32 at a
            time through a 4-slot ring of shared memory: while the warps multiply k-tile t, 16-byte
            cp.async copies of tiles t+1 .. t+3 are in flight (cp.async.cg with zero-fill, commit_group /
            wait_group).  Per k16 slice a warp loads its A and B fragments from the ring into the mma
            operand layouts (DotOperandLayout, k_width 2) and issues 16 mma.sync.m16n8k16.  Shared tiles
            are plain row-major.  fp16 and bf16 in, fp32 accumulation, C and D in the input type.
Reproduces: seed 000 kernel 7b (WMMA fed from shared memory that cp.async fills, a multi-stage pipeline);
            CUDA stage 11's block (128x128, 8 warps, BK 32, 4 slots).
Changed:    from Gluon 10: each k-tile is copied once per program into shared memory (16-byte copies, no
            registers in transit), three tiles ahead of the one being multiplied, and every warp reads its
            fragments from there.  Tiles grow from 64x64 to 128x128, D is in the input dtype.
Why faster: each element of A and B crosses from L2 once per program, as 16-byte copies, its latency
            covered by the tiles ahead.  But every warp reads all of B's k-tile and the unpadded rows
            conflict (below): measured 53.6 TFLOP/s fp16 at 4096^3 on an H100, slower than Gluon 10
            (reports/h100/results.csv).  Stage 13's swizzle is the fix.
Ragged edges: 16-byte copies of full k-tiles, masked by row (A) and by 8-column chunk (B: a chunk that starts
            below N is 16-byte aligned and holds a valid element; its values past N reach only D's columns
            past N, never stored).  The last, partial k-tile is loaded element-wise with per-k masks after
            the ring loop.  Masked loads zero-fill; stores are masked; beta == 0 (HAS_C=False) compiles no
            load of C.
Alignment:  operands or pitches that are not 16-byte aligned (ALIGNED=False) take the element-wise path for
            every tile.
Bank use:   unpadded tiles: most fragment loads conflict (ncu: 495M of 570M load wavefronts).
Gluon against CUDA (3.6): no WMMA (mma_v2; its shared -> fragment loads are already ldmatrix); no padding
            (PaddedSharedLayout does not lower); two bar.sync per k-tile (one ring allocation); 4-byte
            epilogue stores; no partial cp.async of a chunk straddling K.  sm_90: 124 registers (185 with
            beta != 0), 64 KiB of shared memory, no spills.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp

from triton_kernels.gluon._common import (as_multiple, fill_indices, fill_tile, grouped_tile, launch_tiles,
                                          partial_tile_mma, ring_k_tiles, rows_aligned_16, store_pieces, tile_mma)

META = dict(BM=128, BN=128, BK=32, WM=8, WN=1, STAGES=4, GROUP_M=8, ALIGNED=True, num_warps=8, num_stages=1)


# M, N, K are never specialised to constants: with K = 1 or N = 1 a branch around an async copy would fold
# to a constant-false scf.if, which crashes the 3.6 lowering (as Gluon stages 07, 09, 14).
@gluon.jit(do_not_specialize=["M", "N", "K"])
def wmma_async_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                      HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                      WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                      ALIGNED: gl.constexpr):
    gl.static_assert(gl.num_warps() == WM * WN, "launch with num_warps = WM * WN")
    gl.static_assert(BK % 16 == 0 and STAGES >= 2, "whole k16 slices, a ring of 2 or more")
    if ALIGNED:   # the launcher checked ld % 8 == 0 (16-byte rows); written so that Triton can see it
        lda, ldb, ldc, ldd = as_multiple(lda, 8), as_multiple(ldb, 8), as_multiple(ldc, 8), as_multiple(ldd, 8)
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[WM, WN], instr_shape=[16, 8])
    OPA: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    OPB: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2)
    SMEM: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])

    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    a_rows, a_k, a_in_m, b_k, b_cols, b_in_n, b_in_n8 = fill_indices(row0, col0, M, N, BM, BN, BK)

    As = gl.allocate_shared_memory(A.dtype.element_ty, [STAGES, BM, BK], SMEM)
    Bs = gl.allocate_shared_memory(B.dtype.element_ty, [STAGES, BK, BN], SMEM)
    # ALIGNED: the ring carries the full k-tiles only; the partial one is done after the loop.
    k_tiles = ring_k_tiles(K, BK, ALIGNED)

    # Prologue: tiles 0 .. STAGES-2 in flight.  Every step commits one group, empty or not, so tile t is
    # always group t and "at most STAGES-2 groups pending" means the tile about to be used has landed.
    for t in gl.static_range(STAGES - 1):
        if t < k_tiles:
            fill_tile(As.index(t), Bs.index(t), A, B, a_rows, a_k, a_in_m, b_k, b_cols, b_in_n8, b_in_n, lda,
                      ldb, K, t, BK, ALIGNED)
        cp.commit_group()

    acc = gl.zeros([BM, BN], gl.float32, MMA)
    for kt in range(k_tiles):
        cp.wait_group(STAGES - 2)
        # Tile kt is visible to all, and every warp is done with tile kt - 1, whose slot is refilled below.
        gl.thread_barrier()
        nxt = kt + STAGES - 1
        if nxt < k_tiles:
            fill_tile(As.index(nxt % STAGES), Bs.index(nxt % STAGES), A, B, a_rows, a_k, a_in_m, b_k, b_cols,
                      b_in_n8, b_in_n, lda, ldb, K, nxt, BK, ALIGNED)
        cp.commit_group()
        acc = tile_mma(acc, As.index(kt % STAGES), Bs.index(kt % STAGES), OPA, OPB, BK)
    cp.wait_group(0)   # only empty groups remain, but no copy may outlive the program's shared memory
    if ALIGNED:   # the partial k-tile, element-wise
        acc = partial_tile_mma(acc, As, Bs, A, B, a_rows, a_k, a_in_m, b_k, b_cols, b_in_n, lda, ldb, K, k_tiles,
                               OPA, OPB, BK)

    # Epilogue in pieces along the mma layout's register repeats (no data moves): with beta != 0 a lane
    # holds only a piece of its C values at a time.
    full_n = col0 + BN <= N
    store_pieces(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, BM // (16 * WM),
                 BN // (8 * WN) >= 2)


def launch(p, meta: dict | None = None, name: str = "gluon:11_wmma_async"):
    """Run the kernel with launch parameters `meta` (default META; stage 12 passes its own); ALIGNED is
    decided here."""
    return launch_tiles(name, wmma_async_kernel, p, {**(meta or META), "ALIGNED": rows_aligned_16(p)})


def gemm(p):
    return launch(p)


KERNEL = wmma_async_kernel
