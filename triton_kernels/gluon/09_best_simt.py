"""Stage 09 (Gluon) - the best SIMT SGEMM: warp tiling, a cp.async pipeline, the tile chosen per shape.

Technique:  the CUDA stage 09 kernel's shape classes, written in Gluon.  The largest, 128x256 tiles of D
            for 8 warps: warp w owns a 128x32 share, each lane 16x8 outputs made of 4x2 blocks of 4x4 that
            sit 32 rows apart (the accumulator's BlockedLayout).  K advances 32 at a time through a 3-slot
            ring of shared memory filled by cp.async: B with 16-byte copies, A with 4-byte copies that
            transpose it (A^T[k][m]) on the way in.  Per k a lane reads four 16-byte vectors of A^T and two
            of B and issues 128 FMAs (gl.fma).  Programs are numbered in groups of GROUP_M tile rows so that
            neighbours in time share A and B tiles in L2.  Grids too small for 128x256 tiles to give every
            SM a program use 128x128 (4 warps, 16x8 per lane) or 64x64 (4 warps, 4x8 per lane) instead.
Reproduces: seed 000 kernels 3-5 (2-D tiling, float4, N-stage cp.async), seed 001 (2-D block tiling and
            vectorized access); the tiles, lane map and stage count of the CUDA stage 09 (its BEST_TILES).
Changed:    against Gluon stage 07: 16x8 outputs per lane instead of 8x8, BK 32 instead of 8, lanes arranged
            so that a warp's A^T read touches 8 distinct vectors and its B read 4, grouped program order,
            and the tile picked per shape.
Why faster: the FP32 pipe issues one FMA warp-instruction per scheduler per clock, so every other
            instruction is lost throughput: at 128x256 a 32-k tile is 4096 FFMA in 4654 SASS instructions
            (88%), against 82% for stage 07.  Target: within 20% of the CUDA stage; measured 45.5 TFLOP/s
            at 4096^3 fp32, 88% of cuBLAS (H100; reports/h100/results.csv).
Ragged edges: a masked cp.async copies 0 bytes and zero-fills its destination (src-size 0), so rows past
            M, columns past N and k past K arrive as zeros.  Tiles whose columns run past N copy B with
            per-column masks (4-byte copies) and store with per-element masks; full tiles mask k (copies)
            and rows (stores) only.  beta == 0 (HAS_C=False) compiles no load of C.  All offsets 64-bit.
Alignment:  16-byte copies and stores need ld % 4 == 0, passed as LD4 (the kernel writes (ld // 4) * 4);
            base alignment Triton proves itself.  A misaligned view gets 4-byte copies and scalar stores.
Bank use:   A^T's SharedLinearLayout (offset bits 2-4 = k0-2 XOR m2-4) makes the copies and the reads
            conflict-free; ncu finds no shared-memory bank conflicts.
Gluon against CUDA (3.6): no padding or XOR SwizzledSharedLayout (see Gluon stage 07); gl.fma rank-1
            updates, since gl.dot_fma would hold 384 operand values per lane; the ring is one allocation,
            so Triton adds a second bar.sync per tile (under 1% at BK 32); M, N, K are not specialised.
            sm_90, 128x256: 251-255 registers, 144 KiB of shared memory, no spills.
"""
from __future__ import annotations

import functools

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp

from triton_kernels._common import check_grid, gemm_args
from triton_kernels.gluon._common import epilogue, epilogue_store, grouped_tile, split_cols, split_rows, store_part

# The shape classes, largest first, as the CUDA stage's BEST_TILES (study/registry.py): BM x BN tiles,
# WM x WN warps, BK k per ring slot, STAGES slots.  Lanes form 8 rows x 4 columns in every warp.
_TILES = (
    dict(BM=128, BN=256, BK=32, WM=1, WN=8),    # 16x8 per lane, 144 KiB of shared memory
    dict(BM=128, BN=128, BK=32, WM=1, WN=4),    # 16x8 per lane, 96 KiB
    dict(BM=64, BN=64, BK=16, WM=2, WN=2),      # 4x8 per lane, 24 KiB
)
_COMMON = dict(STAGES=3, GROUP_M=8, LD4=True, num_stages=1)


def variants(entry: str = "gemm") -> list[dict]:
    """Launch parameters of each shape class, largest tile first (constexprs plus num_warps/num_stages)."""
    return [{**t, **_COMMON, "num_warps": t["WM"] * t["WN"]} for t in _TILES]


META = variants()[0]


@gluon.constexpr_function
def _a_smem_layout(BK, BM):
    """A^T tile [BK, BM] in shared memory.  Offset bit i holds the (k, m) in bases[i]: m0, m1, then k0-2
    XOR m2-4, then m2-4 (which also flip k0-2: the XOR), the rest of m, the rest of k."""
    bases = [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0], [1, 4], [2, 8], [4, 16]]
    bases += [[0, 1 << b] for b in range(5, BM.bit_length() - 1)]
    bases += [[1 << b, 0] for b in range(3, BK.bit_length() - 1)]
    return gl.SharedLinearLayout(bases)


@gluon.constexpr_function
def _transposed(layout):
    """The BlockedLayout of the transposed tile: loading [1, BM] in it and permuting gives [BM, 1] in layout."""
    return gl.BlockedLayout(layout.size_per_thread[::-1], layout.threads_per_warp[::-1],
                            layout.warps_per_cta[::-1], [1 - o for o in layout.order])


@gluon.jit
def _issue_tile(As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, kt, full_n,
                BK: gl.constexpr):
    """cp.async of k-tile kt into ring slots As, Bs; everything outside A or B arrives as zeros."""
    k0 = kt * BK
    k_left = K - k0
    # A through a transposed pointer tile, ptr[k, m] = A + m*lda + k: the descriptor is A^T's [BK, BM].
    cp.async_copy_global_to_shared(As, A + a_rows[None, :] * lda + (k0 + a_k)[:, None],
                                   mask=a_in_m & (a_k < k_left)[:, None])
    b_ptrs = B + (k0 + b_k).to(gl.int64)[:, None] * ldb + b_cols[None, :]
    if full_n:   # mask constant along a row: 16-byte copies
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=(b_k < k_left)[:, None])
    else:        # the tile crosses N: per-column masks, 4-byte copies
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=(b_k < k_left)[:, None] & b_in_n)


@gluon.jit
def _store_row_piece(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C: gl.constexpr,
                     COL_SPLIT: gl.constexpr):
    if COL_SPLIT:
        left, right = split_cols(x)
        store_part(left, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)
        store_part(right, alpha, beta, C, D, row0, col0 + x.shape[1] // 2, M, N, ldc, ldd, full_n, HAS_C)
    else:
        store_part(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)


# M, N, K are never specialised to constants (see the docstring: a constant-false branch around an
# async copy crashes the 3.6 compiler); leading dimensions still are.
@gluon.jit(do_not_specialize=["M", "N", "K"])
def best_simt_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                     HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                     WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                     LD4: gl.constexpr):
    NW: gl.constexpr = gl.num_warps()
    gl.static_assert(NW == WM * WN, "launch with num_warps = WM * WN")
    gl.static_assert(BM % (32 * WM) == 0 and BN % (16 * WN) == 0, "whole 4x4 blocks per lane")
    gl.static_assert(BK % 8 == 0 and BM % (4 * NW) == 0, "a warp's A copies span 8 k x 4 rows")
    # The register tile.  Lane l of warp (wm, wn) holds the 4x4 blocks at rows 4*(l // 4) + 32*wm + 32*WM*i
    # and columns 4*(l % 4) + 16*wn + 16*WN*j (the layout covers 32*WM x 16*WN and wraps).
    L: gl.constexpr = gl.BlockedLayout([4, 4], [8, 4], [WM, WN], [1, 0])
    LT: gl.constexpr = _transposed(L)
    # Copy layouts.  A as the transposed pointer tile [BK, BM]: a warp copies 8 k (contiguous in A) of
    # 4 rows, four 32-byte segments.  B [BK, BN]: 16-byte chunks, lanes along a row.
    LA: gl.constexpr = gl.BlockedLayout([1, 1], [8, 4], [1, NW], [0, 1])
    TPW_N: gl.constexpr = 32 if BN // 4 >= 32 else BN // 4
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [32 // TPW_N, TPW_N], [NW, 1], [1, 0])
    SA: gl.constexpr = _a_smem_layout(BK, BM)
    SB: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])   # Bs[k][n]

    if LD4:   # the launcher checked ld % 4 == 0; written so Triton can see it (16-byte vectors)
        ldb = (ldb // 4).to(gl.int64) * 4
        ldc = (ldc // 4).to(gl.int64) * 4
        ldd = (ldd // 4).to(gl.int64) * 4
    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    full_n = col0 + BN <= N
    a_rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(0, LA)).to(gl.int64)
    a_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LA))
    a_in_m = (a_rows < M)[None, :]
    b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    b_cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, LB)).to(gl.int64)
    b_in_n = (b_cols < N)[None, :]

    As = gl.allocate_shared_memory(gl.float32, [STAGES, BK, BM], SA)
    Bs = gl.allocate_shared_memory(gl.float32, [STAGES, BK, BN], SB)
    k_tiles = gl.cdiv(K, BK)

    # Prologue: tiles 0 .. STAGES-2 in flight.  Every step commits one group, empty or not, so tile t is
    # always group t and "at most STAGES-2 groups pending" always means the tile about to be used is in.
    for t in gl.static_range(STAGES - 1):
        if t < k_tiles:
            _issue_tile(As.index(t), Bs.index(t), A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n,
                        lda, ldb, K, t, full_n, BK)
        cp.commit_group()

    acc = gl.zeros([BM, BN], gl.float32, L)
    for kt in range(k_tiles):
        cp.wait_group(STAGES - 2)
        # One barrier, two jobs: tile kt is visible to all, and every thread has finished tile kt-1,
        # whose slot the copy below overwrites.
        gl.thread_barrier()
        nxt = kt + STAGES - 1
        if nxt < k_tiles:
            _issue_tile(As.index(nxt % STAGES), Bs.index(nxt % STAGES), A, a_rows, a_k, a_in_m,
                        B, b_k, b_cols, b_in_n, lda, ldb, K, nxt, full_n, BK)
        cp.commit_group()

        a_tile = As.index(kt % STAGES)
        b_tile = Bs.index(kt % STAGES)
        for k in gl.static_range(BK):
            # Row k of A^T as [BM, 1] and row k of B as [1, BN] in the accumulator's layout: a lane's
            # 16 (or 4) rows and 8 columns, 16-byte loads; the broadcast is free; gl.fma -> fma.rn.f32.
            a = gl.convert_layout(gl.permute(a_tile.slice(k, 1).load(LT), [1, 0]), L, assert_trivial=True)
            b = b_tile.slice(k, 1).load(L)
            a, b = gl.broadcast(a, b)
            acc = gl.fma(a, b, acc)
    cp.wait_group(0)   # only empty groups remain, but no copy may outlive the program's shared memory

    # Epilogue in pieces along the layout's wraps (no data movement): 4 row pieces when a lane's rows wrap
    # 4 times, 2 column pieces when its columns wrap twice.
    ROW_WRAPS: gl.constexpr = BM // (32 * WM)
    COL_SPLIT: gl.constexpr = BN // (16 * WN) >= 2
    if ROW_WRAPS >= 4:
        top, bottom = split_rows(acc)
        p0, p1 = split_rows(top)
        p2, p3 = split_rows(bottom)
        Q: gl.constexpr = BM // 4
        _store_row_piece(p0, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT)
        _store_row_piece(p1, alpha, beta, C, D, row0 + Q, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT)
        _store_row_piece(p2, alpha, beta, C, D, row0 + 2 * Q, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT)
        _store_row_piece(p3, alpha, beta, C, D, row0 + 3 * Q, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT)
    elif ROW_WRAPS >= 2:
        top, bottom = split_rows(acc)
        _store_row_piece(top, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT)
        _store_row_piece(bottom, alpha, beta, C, D, row0 + BM // 2, col0, M, N, ldc, ldd, full_n, HAS_C,
                         COL_SPLIT)
    else:
        _store_row_piece(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT)


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def pick(M: int, N: int, sms: int) -> dict:
    """The largest tile whose grid still gives every SM a program (as the CUDA stage's CudaDispatch)."""
    for v in variants():
        if triton.cdiv(M, v["BM"]) * triton.cdiv(N, v["BN"]) >= sms:
            return v
    return variants()[-1]


def gemm(p):
    M, N, _ = p.mnk
    meta = pick(M, N, _sm_count(p.a.device.index if p.a.device.index is not None else torch.cuda.current_device()))
    programs = triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])
    check_grid("gluon:09_best_simt", programs)
    args = gemm_args(p)
    ld4 = all(args[ld] % 4 == 0 for ld in ("ldb", "ldc", "ldd"))
    return best_simt_kernel[(programs,)](**args, **{**meta, "LD4": ld4})


KERNEL = best_simt_kernel
