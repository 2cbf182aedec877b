"""Stage 10 (Gluon) - the first tensor-core stage: mma_v2 with fragments loaded straight from global memory.

Technique:  one program (4 warps) owns a 64x64 tile of D; the warps form 2 x 2, each holding 32x32 of it as
            2 x 4 mma tiles of 16x8 (NVMMADistributedLayout version [2, 0]).  K advances BK = 32 at a time:
            every warp loads its own A rows and B columns for those 32 k from global memory directly into
            the mma operand layout (gl.load with a DotOperandLayout pointer tensor: no shared memory), and
            calls mma_v2, which is mma.sync: m16n8k16 for fp16 and bf16 (k_width 2), m16n8k8 tf32 for fp32
            inputs (k_width 1), m16n8k32 s8 for int8 (k_width 4).  D and C have the accumulator's type:
            fp32 (int32 for int8).  Column-major A or B (a transposed torch view) are the same code with
            the index roles swapped (A_COL / B_COL constexprs), one compiled kernel per layout pair.
Reproduces: seed 003 (a generic WMMA GEMM over type pairs, either storage order per operand), seed 000
            kernel 7 (WMMA fragments loaded from memory, one warp per fragment tile).
Changed:    from Gluon 09 (SIMT): the multiplies move from fp32 FMAs to tensor cores, and the operands from
            shared memory to registers straight from global memory, as WMMA's load_matrix_sync does from a
            global pointer.  Gluon has no WMMA API: DotOperandLayout is the fragment, mma.sync m16n8kK the
            instruction that the WMMA shapes lower to.
Why faster: a single mma.sync m16n8k16 does 2048 multiply-adds, the work of 64 warp-wide FMAs.  What limits
            this form is the loads (nothing staged in shared memory, row-major B as 2-byte loads, global
            latency in the k loop); stages 11-13 fix this with shared memory.  Measured: 59.4 TFLOP/s fp16
            at 4096^3 on an H100 (reports/h100/results.csv).
Ragged edges: masked loads give zeros outside M, N and K: tiles that cross M or N, and the last partial
            k-tile, mask every element; an interior tile's full k-tiles load unmasked.  Stores are masked;
            beta == 0 (HAS_C=False) compiles no load of C.  All offsets are 64-bit.
Gluon against CUDA: no uint8 (Triton: "only int8 supported!"); fp64 and f16 -> f16 compile but are not
            registered (fp64 alpha and beta would arrive as fp32); no 32x8x16 / 8x32x16 shapes.  tf32
            operands are not rounded (no cvt.rna.tf32: the tensor core truncates).  int8 accumulates with
            .satfinite (saturating, where WMMA wraps; the study's inputs never reach it).  sm_90: 155-158
            registers, no spills.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from triton_kernels._common import check_grid, tiles
from triton_kernels.gluon._common import as_int64, epilogue_store, grouped_tile

# 64x64 tiles for 4 warps (2 x 2, 32x32 of D each), as the CUDA stage's 128-thread 64x64 blocks; BK 32 is
# one int8 k32 step, two fp16/bf16 k16 steps, four tf32 k8 steps.  A_COL / B_COL: the operand layouts,
# set per call by gemm().
META = dict(BM=64, BN=64, BK=32, WM=2, WN=2, GROUP_M=8, A_COL=False, B_COL=False, num_warps=4, num_stages=1)


@gluon.jit
def _mma(a, b, acc, IS_TF32: gl.constexpr):
    if IS_TF32:
        return mma_v2(a, b, acc, input_precision="tf32")
    else:
        return mma_v2(a, b, acc)


@gluon.jit
def _int_epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C: gl.constexpr):
    """D = alpha * acc + beta * C in int32 arithmetic (alpha, beta arrive as integers)."""
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    d = acc * alpha
    if HAS_C:
        d = d + beta * gl.load(C + rows[:, None] * ldc + cols[None, :], mask=mask, other=0)
    gl.store(D + rows[:, None] * ldd + cols[None, :], d.to(gl.int32), mask=mask)


@gluon.jit
def wmma_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                WM: gl.constexpr, WN: gl.constexpr, GROUP_M: gl.constexpr,
                A_COL: gl.constexpr, B_COL: gl.constexpr):
    """lda / ldb are the pitches of A and B in their own storage order (A_COL: A[i, k] at A + i + k*lda)."""
    NW: gl.constexpr = gl.num_warps()
    gl.static_assert(NW == WM * WN, "launch with num_warps = WM * WN")
    IN: gl.constexpr = A.dtype.element_ty
    IS_INT: gl.constexpr = IN == gl.int8
    IS_TF32: gl.constexpr = IN == gl.float32
    # k_width: consecutive k per 32-bit register of a fragment (4 int8, 2 fp16/bf16, 1 fp32).
    KW: gl.constexpr = 4 if IS_INT else (1 if IS_TF32 else 2)
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[WM, WN], instr_shape=[16, 8])
    OPA: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=KW)
    OPB: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=KW)

    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    # Index vectors as slices of the operand layouts, so the pointer tiles are born in fragment layout.
    a_rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, OPA)).to(gl.int64)
    ka = gl.arange(0, BK, layout=gl.SliceLayout(0, OPA))
    kb = gl.arange(0, BK, layout=gl.SliceLayout(1, OPB))
    b_cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, OPB)).to(gl.int64)
    lda64 = as_int64(lda)
    ldb64 = as_int64(ldb)
    # Loop-invariant pieces: one 64-bit offset per row of A (per k if A is column-major) and per column of
    # B (per k if B is row-major).  The pointer tiles are rebuilt from them every k-tile: a pointer tile
    # carried across iterations would hold one 64-bit pointer per element (211 registers for fp16, int8
    # spilled), where this form holds one per row or k and folds the rest into address immediates.
    if A_COL:
        a_row_off = a_rows[:, None]
        a_k_off = ka.to(gl.int64)[None, :] * lda64
        a_kstride = lda64
    else:
        a_row_off = a_rows[:, None] * lda64
        a_k_off = ka[None, :]
        a_kstride = as_int64(1)
    if B_COL:
        b_col_off = b_cols[None, :] * ldb64
        b_k_off = kb[:, None]
        b_kstride = as_int64(1)
    else:
        b_col_off = b_cols[None, :]
        b_k_off = kb.to(gl.int64)[:, None] * ldb64
        b_kstride = ldb64
    a_in_m = (a_rows < M)[:, None]
    b_in_n = (b_cols < N)[None, :]

    if IS_INT:
        acc = gl.zeros([BM, BN], gl.int32, MMA)
    else:
        acc = gl.zeros([BM, BN], gl.float32, MMA)
    # Interior tiles run their whole k-tiles without masks; the rest (edge tiles, the last partial k-tile)
    # takes the masked loop.
    interior = (row0 + BM <= M) & (col0 + BN <= N)
    k_fast = gl.where(interior, K - K % BK, 0)
    for k0 in range(0, k_fast, BK):
        a = gl.load((A + k0 * a_kstride) + a_row_off + a_k_off)
        b = gl.load((B + k0 * b_kstride) + b_k_off + b_col_off)
        acc = _mma(a, b, acc, IS_TF32)
    for k0 in range(k_fast, K, BK):
        k_left = K - k0
        a = gl.load((A + k0 * a_kstride) + a_row_off + a_k_off, mask=a_in_m & (ka < k_left)[None, :], other=0)
        b = gl.load((B + k0 * b_kstride) + b_k_off + b_col_off, mask=b_in_n & (kb < k_left)[:, None], other=0)
        acc = _mma(a, b, acc, IS_TF32)

    rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, MMA)).to(gl.int64)
    cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, MMA)).to(gl.int64)
    if IS_INT:
        _int_epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C)
    else:
        epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C)


def variants(entry: str = "gemm") -> list[dict]:
    """Launch parameters (one tile shape; the layout pair is chosen per call)."""
    return [dict(META)]


def gemm(p):
    M, N, K = p.mnk
    programs = tiles(p, META["BM"], META["BN"])
    check_grid("gluon:10_wmma", programs)
    c = p.c if p.c is not None else p.out   # a placeholder pointer; HAS_C=False means it is never read
    alpha, beta = p.alpha, p.beta
    if not p.a.dtype.is_floating_point:    # integer epilogue: the contract guarantees integral values
        alpha, beta = int(alpha), int(beta)
    return wmma_kernel[(programs,)](p.a, p.b, c, p.out, M, N, K, p.lda, p.ldb, c.stride(0), p.out.stride(0),
                                    alpha, beta, HAS_C=p.c is not None,
                                    **{**META, "A_COL": p.a_col, "B_COL": p.b_col})


KERNEL = wmma_kernel
