"""Stage 15 (Gluon) - TCEC: fp32 GEMM on fp16 tensor cores with error correction, split in registers (WMMAe).

Technique:  one program (8 warps) owns a 128x128 tile of D; warps form 2 x 4, each holding 64x32 as 4 x 4
            mma.sync m16n8k16 tiles.  K moves BK = 32 at a time through a 3-slot ring of fp32 A and B tiles
            filled by cp.async.  Each k16 slice is loaded from shared memory straight into the mma operand
            layout (DotOperandLayout, k_width 2) while still fp32, scaled there by its row's or column's
            power of two (Range) and split elementwise:
                hi = fp16(x),   lo = fp16((x - fp32(hi)) * 2^11)
            Three mma_v2 per slice: hi_A hi_B with a zero accumulator, its fp32 result added to a register
            sum by round-to-nearest add.f32 every k16 (the tensor cores' accumulation rounds toward zero);
            lo_A hi_B + hi_A lo_B into a second, tensor-core accumulator.  D = alpha*(sum + corr/2^11) + beta*C.
            VARIANT selects gemm_tcec, gemm_markidis (lo unscaled, one accumulator), gemm_nocorr (hi only),
            gemm_tf32 (3xTF32 by cvt.rna.tf32, mma.sync m16n8k8, 64x128 tile) or gemm_tcec_wgmma (below).
Reproduces: seed 002 (Ootomo & Yokota 2022, WMMAe-TCEC, section 4.4): eqs. (6)-(7)'s split, scaling and
            correction, accumulation kept out of the tensor cores' RZ, and WMMAe's fp16 fragments built from
            fp32 data in registers (foreach_ij; here the DotOperandLayout), never stored as hi/lo tiles.
Changed:    from Gluon 09 (best SIMT): the multiplies move from fp32 FMAs to tensor cores (mma.sync), the
            operands are read as mma fragments, and A is no longer stored transposed.
Why faster: three fp16 products at mma.sync's ~643 TFLOP/s bound the method at ~214 TFLOP/s of fp32 work,
            4x cuBLAS SGEMM; this form is issue-bound below that (~140).  Predicted 90-130 TFLOP/s at
            4096^3; measured 64.0 TFLOP/s, the scaling pass included (H100; reports/h100/results.csv).
Ragged edges: masked cp.async copies 0 bytes and zero-fills (src-size 0), so rows past M, columns past N and
            k past K arrive as zeros, whose splits are zeros.  Stores are masked; beta == 0 (HAS_C=False)
            compiles no load of C.  64-bit offsets.
Range:      fp32's, as the Triton form.  tcec_amax (a Triton pass over A and B) finds each row of A's and
            column of B's largest |x|; row i of A and column j of B are multiplied by 2^ea[i] and 2^eb[j]
            (exact) in registers before the split, so that it sees its line's largest |x| in [2^14, 2^15), and
            the epilogue multiplies back by 2^-(ea + eb) in two exact steps.  A value more than ~2^29 below its
            row's (or column's) largest |x| loses relative precision in fp16's subnormals.  Rows and columns
            holding an inf or a NaN are recomputed in fp32 FMAs (fixup_kernel, a second launch), so inf and
            NaN come out as SGEMM's.  gemm_tf32 needs no scaling, only that recomputation.
gemm_tcec_wgmma (gluon:15_tcec-wgmma): the CUDA stage's mapping on wgmma, two warpgroups of 64x128.  A is
            split in wgmma's register-A layout; B, scaled, once per program into double-buffered fp16 hi/lo tiles
            (128-byte swizzle), while the tensor cores run the previous k-tile.  Every k-tile ends in
            warpgroup_mma_wait(0), so the tensor pipe drains once per 32 k.
Gluon against CUDA (3.6): XOR-swizzled shared tiles, proved conflict-free by gl.static_assert; two
            bar.sync per k-tile (one ring allocation); hi*hi's add stays an add (Gluon runs no combine
            pass).  sm_90: tcec 255 registers, 97 KiB of shared memory, no spills (nor in any other entry or
            compile unit).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

from triton_kernels._common import INF_BITS, pow2, scale_exponent, tcec_amax, unscale
from triton_kernels.gluon._common import (as_int64, as_multiple, assert_conflict_free, epilogue, grouped_tile,
                                          launch_tiles, pitches_divisible, ring_advance, ring_prologue, split_cols,
                                          store_part, store_pieces)

# Variant codes (the VARIANT constexpr) and the entry point of each.  TCEC_WGMMA is the method on wgmma (see
# _wgmma_body); it is not in study/registry.py's TCEC_VARIANTS.
TCEC, MARKIDIS, NOCORR, TF32X3, TCEC_WGMMA = 0, 1, 2, 3, 4
_ENTRIES = {"gemm_tcec": TCEC, "gemm_markidis": MARKIDIS, "gemm_nocorr": NOCORR, "gemm_tf32": TF32X3,
            "gemm_tcec_wgmma": TCEC_WGMMA}

# 128x128 tile, 8 warps as 2 x 4 (64x32 of D each, 4 x 4 mma tiles), BK 32 = two k16 slices per ring slot,
# a 3-slot cp.async ring; tiles in GROUP_M-row groups for L2 reuse (as gluon stage 09).  The wgmma body
# ignores WM and WN: its 8 warps are two warpgroups of 64 rows each.
_META = dict(BM=128, BN=128, BK=32, WM=2, WN=4, STAGES=3, GROUP_M=8, LD4=True, num_warps=8, num_stages=1)


def variants(entry: str = "gemm_tcec") -> list[dict]:
    """Launch parameters of `entry` (constexprs plus num_warps/num_stages), one tile shape each."""
    v = _ENTRIES[entry]
    # tf32 operands are twice the registers of fp16 ones and mma_v2 takes K >= 16 (two m16n8k8 per call):
    # at 64x32 per warp ptxas spilled 252 bytes, at 32x32 none.
    tile = dict(BM=64) if v == TF32X3 else {}
    return [{**_META, **tile, "VARIANT": v}]


META = variants()[0]

_LO_SCALE = gl.constexpr(2048.0)          # 2^11: seed 002's scaling of the fp16 residual
_LO_UNSCALE = gl.constexpr(1.0 / 2048.0)  # exact


@gluon.constexpr_function
def _smem_layouts(k_width):
    """Shared layouts of a ring slot's A slice [BM, 16] and B tile [BK, BN] (fp32, row-major, 16-byte
    units XORed with the row), chosen so that the fragment loads are conflict-free: the kernel proves it
    with gl.bank_conflicts.  fp16 fragments (k_width 2) read 8-byte k pairs of A and single words of B;
    tf32 fragments (k_width 1) read A with ldmatrix (rows of 16 bytes) and B as single words 4 rows apart."""
    if k_width == 2:
        return (gl.SwizzledSharedLayout(vec=4, per_phase=1, max_phase=4, order=[1, 0]),
                gl.SwizzledSharedLayout(vec=4, per_phase=1, max_phase=8, order=[1, 0]))
    return (gl.SwizzledSharedLayout(vec=4, per_phase=2, max_phase=4, order=[1, 0]),
            gl.SwizzledSharedLayout(vec=8, per_phase=1, max_phase=8, order=[1, 0]))


@gluon.constexpr_function
def _thread_contiguous(ll):
    """A 1-D shared layout in which each thread's elements of the 1-D distributed layout `ll` (as
    gl.to_linear_layout gives it) lie consecutive, in register order, so that a thread reads them in 16-byte
    loads: its offset bits are ll's register bits, then its lane and warp bits (broadcast ones dropped)."""
    bases = [b for b in ll.reg_bases + ll.lane_bases + ll.warp_bases if b[0] != 0]
    assert sorted(b[0] for b in bases) == [1 << i for i in range(len(bases))], "every element exactly once"
    return gl.SharedLinearLayout(bases)


@gluon.jit
def _issue_tile(As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, kt, full_n,
                BK: gl.constexpr):
    """cp.async of k-tile kt into ring slots As and Bs (fp32); everything outside A or B arrives as zeros.
    a_rows/a_k give each element of As its row and k offset within the tile, b_k/b_cols those of Bs."""
    k0 = kt * BK
    k_left = K - k0
    a_ptrs = A + a_rows * lda + (k0 + a_k)
    if k_left >= BK:   # mask constant along a row's k: 16-byte copies
        cp.async_copy_global_to_shared(As, a_ptrs, mask=a_in_m)
    else:              # the last k-tile: per-k masks, 4-byte copies
        cp.async_copy_global_to_shared(As, a_ptrs, mask=a_in_m & (a_k < k_left))
    b_in_k = b_k < k_left
    b_ptrs = B + (k0 + b_k).to(gl.int64) * ldb + b_cols
    if full_n:   # mask constant along a row: 16-byte copies
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=b_in_k)
    else:        # the tile crosses N: per-column masks, 4-byte copies
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=b_in_k & b_in_n)


@gluon.jit
def _tf32(x):
    """x rounded to tf32 (10 mantissa bits, nearest, ties away), as the CUDA stage's cvt.rna."""
    return gl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=gl.float32,
                                     is_pure=True, pack=1)


@gluon.jit
def _split(x, VARIANT: gl.constexpr):
    """fp32 x -> (hi, lo) operands, elementwise: the layout (an mma fragment) is kept."""
    if VARIANT == 3:
        hi = _tf32(x)
        lo = _tf32(x - hi)
    else:
        hi = x.to(gl.float16)
        r = x - hi.to(gl.float32)   # exact
        if VARIANT != 1:
            r = r * _LO_SCALE       # exact; brings lo back to x's magnitude, clear of fp16 subnormals
        lo = r.to(gl.float16)
    return hi, lo


@gluon.jit
def _line_amax(AMAX, first, n, SIZE: gl.constexpr, LAYOUT: gl.constexpr):
    """tcec_amax's int32 bits of lines first .. first + SIZE - 1 (0 past n), in the 1-D LAYOUT."""
    idx = first + gl.arange(0, SIZE, layout=LAYOUT).to(gl.int64)
    return gl.load(AMAX + idx, mask=idx < n, other=0)


@gluon.jit
def _line_scales(AMAX, first, n, SIZE: gl.constexpr, SMEM: gl.constexpr):
    """Shared [SIZE] fp32: for lines first.. of A (rows) or B (columns, AMAX + M), the exact 2^e that puts the
    line's largest finite |x| in [2^14, 2^15) (1 for a line of zeros or with an inf or a NaN).  Read once
    per program; in shared memory they cost the main loop no registers outside the split that uses them."""
    L1: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    scale = pow2(scale_exponent(_line_amax(AMAX, first, n, SIZE, L1)))
    return gl.allocate_shared_memory(gl.float32, [SIZE], SMEM, scale)


@gluon.jit
def _unscaled(x, AMAX, row0, col0, M, N):
    """x (rows row0.., columns col0.. of the product) times 2^-(ea + eb): unscale, two exact steps, only a
    subnormal result rounds.  The line maxima are read again, in x's slice layouts."""
    L: gl.constexpr = x.type.layout
    ea = scale_exponent(_line_amax(AMAX, row0, M, x.shape[0], gl.SliceLayout(1, L)))
    eb = scale_exponent(_line_amax(AMAX + M, col0, N, x.shape[1], gl.SliceLayout(0, L)))
    return unscale(x, ea[:, None] + eb[None, :])


@gluon.jit
def _store_unscaled(x, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row0, col0, full_n, HAS_C: gl.constexpr):
    """store_part of x unscaled: the piece of D at (row0, col0) = alpha * x * 2^-(ea + eb) + beta * C."""
    x = _unscaled(x, AMAX, row0, col0, M, N)
    store_part(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)


@gluon.jit
def _mma_v2_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX, row0, col0,
                 HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                 WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, VARIANT: gl.constexpr):
    """Variants 0-3 on mma.sync: both operands split in registers (the WMMAe mapping)."""
    NW: gl.constexpr = gl.num_warps()
    gl.static_assert(NW == WM * WN, "launch with num_warps = WM * WN")
    KS: gl.constexpr = 16
    KSUB: gl.constexpr = BK // KS
    gl.static_assert(BK % KS == 0, "whole k16 slices per ring slot")
    KW: gl.constexpr = 1 if VARIANT == 3 else 2
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[WM, WN], instr_shape=[16, 8])
    OPA: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=KW)
    OPB: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=KW)
    # Copy layouts: 16-byte chunks, lanes along the contiguous dimension.
    LA: gl.constexpr = gl.BlockedLayout([1, 4], [32 // (KS // 4), KS // 4], [NW, 1], [1, 0])
    TPW_N: gl.constexpr = 32 if BN // 4 >= 32 else BN // 4
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [32 // TPW_N, TPW_N], [NW, 1], [1, 0])
    SA: gl.constexpr = _smem_layouts(KW)[0]
    SB: gl.constexpr = _smem_layouts(KW)[1]
    assert_conflict_free(gl.float32, BM, KS, OPA, SA, "A fragment loads")
    assert_conflict_free(gl.float32, KS, BN, OPB, SB, "B fragment loads")

    full_n = col0 + BN <= N
    # A ring slot holds a k-tile of A as KSUB slices stacked along rows, [KSUB * BM, KS]: row j*BM + m is
    # A[row0 + m, k0 + j*KS : k0 + (j+1)*KS].  One copy per operand and tile (a copy per slice would be
    # two writes to one allocation, and Triton's barrier analysis puts a bar.sync between them).
    a_r = gl.arange(0, KSUB * BM, layout=gl.SliceLayout(1, LA))
    a_rows = (row0 + (a_r % BM).to(gl.int64))[:, None]
    a_in_m = a_rows < M
    a_k = ((a_r // BM) * KS)[:, None] + gl.arange(0, KS, layout=gl.SliceLayout(0, LA))[None, :]
    b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))[:, None]
    b_cols = (col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, LB)).to(gl.int64))[None, :]
    b_in_n = b_cols < N

    As = gl.allocate_shared_memory(gl.float32, [STAGES, KSUB * BM, KS], SA)
    Bs = gl.allocate_shared_memory(gl.float32, [STAGES, BK, BN], SB)
    k_tiles = gl.cdiv(K, BK)

    # The cp.async ring of gluon stage 09 (one allocation), with this stage's copies.
    ring_prologue(_issue_tile, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, k_tiles,
                  full_n, BK, STAGES)

    # The fp16 splits' scales of A's rows and B's columns (tf32 needs none), which each k16 slice reads in
    # its fragments' layouts (16-byte loads, 3 a slice): held in 12 registers through the loop instead, they
    # made ptxas spill.
    RA: gl.constexpr = gl.SliceLayout(1, OPA)
    CB: gl.constexpr = gl.SliceLayout(0, OPB)
    if VARIANT != 3:
        sa = _line_scales(AMAX, row0, M, BM, _thread_contiguous(gl.to_linear_layout(RA, [BM])))
        sb = _line_scales(AMAX + M, col0, N, BN, _thread_contiguous(gl.to_linear_layout(CB, [BN])))

    zero = gl.zeros([BM, BN], gl.float32, MMA)
    acc = gl.zeros([BM, BN], gl.float32, MMA)    # RN sum of hi*hi (tcec, tf32) or the only accumulator
    corr = gl.zeros([BM, BN], gl.float32, MMA)   # tcec/tf32: lo*hi + hi*lo, inside the tensor cores
    for kt in range(k_tiles):
        ring_advance(_issue_tile, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, kt, k_tiles,
                     full_n, BK, STAGES)
        a_tile = As.index(kt % STAGES)
        b_tile = Bs.index(kt % STAGES)
        for j in gl.static_range(KSUB):
            # fp32 straight into the fragment layouts; the split keeps them, so no convert_layout appears.
            a = a_tile.slice(j * BM, BM).load(OPA)
            b = b_tile.slice(j * KS, KS).load(OPB)
            if VARIANT != 3:   # exact powers of two, before the split
                a = a * sa.load(RA)[:, None]
                b = b * sb.load(CB)[None, :]
            if VARIANT == 2:
                acc = mma_v2(a.to(gl.float16), b.to(gl.float16), acc)
            else:
                a_hi, a_lo = _split(a, VARIANT)
                b_hi, b_lo = _split(b, VARIANT)
                if VARIANT == 1:
                    acc = mma_v2(a_lo, b_hi, acc)
                    acc = mma_v2(a_hi, b_lo, acc)
                    acc = mma_v2(a_hi, b_hi, acc)
                else:
                    # hi*hi first: issued after the corrections, ptxas needed 4 bytes of spills.
                    acc = acc + mma_v2(a_hi, b_hi, zero, input_precision="tf32")
                    corr = mma_v2(a_lo, b_hi, corr, input_precision="tf32")
                    corr = mma_v2(a_hi, b_lo, corr, input_precision="tf32")
    cp.wait_group(0)   # only empty groups remain, but no copy may outlive the program's shared memory

    if VARIANT == 0:
        acc = acc + corr * _LO_UNSCALE
    elif VARIANT == 3:
        acc = acc + corr
    if VARIANT != 3:
        acc = _unscaled(acc, AMAX, row0, col0, M, N)
    # Epilogue in row pieces along the mma layout's row repeats (BM / (16 * WM) of them), so the split
    # moves no data: with beta != 0 a thread holds a quarter of its C values at a time, not all.
    store_pieces(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, BM // (16 * WM), False)


@gluon.jit
def _wg_prepare_b(t, k_tiles, As, Bs, Bh, Bl, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K,
                  full_n, sb, BK: gl.constexpr, STAGES: gl.constexpr, LB: gl.constexpr):
    """Wait for fp32 tile t, start the copy of tile t + STAGES - 1 into the slot tile t - 1 left, and split
    B's tile t, scaled by its columns' powers of two, into Bh/Bl (fp16, shared: the wgmma's B operands).
    A's tile t stays in its ring slot."""
    # The ring's barrier has a third job here: every warpgroup has waited for its wgmmas of tile t - 2, the
    # last readers of Bh/Bl.
    ring_advance(_issue_tile, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, t, k_tiles,
                 full_n, BK, STAGES)
    b_hi, b_lo = _split(Bs.index(t % STAGES).load(LB) * sb.load(gl.SliceLayout(0, LB))[None, :], 0)
    Bh.store(b_hi)
    Bl.store(b_lo)
    fence_async_shared()   # generic-proxy stores, read next by the async proxy (wgmma)
    gl.thread_barrier()


@gluon.jit
def _wgmma_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX, row0, col0,
                HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                STAGES: gl.constexpr):
    """The method on wgmma: A split in registers (WMMAe, wgmma's register-A form), B split once per program
    into fp16 hi/lo tiles in shared memory (wgmma reads B only from there), double-buffered so that the
    split of tile kt + 1 overlaps the tensor cores' work on tile kt."""
    NW: gl.constexpr = gl.num_warps()
    gl.static_assert(NW == 8 and BM == 128, "two warpgroups, 64 rows of D each")
    # Two warpgroups stacked along M; each wgmma is m64 n BN k16.
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[NW, 1], instr_shape=[16, BN, 16])
    OPA: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    # Copy layouts.  A: a thread copies 64 contiguous bytes of one row (four 16-byte cp.async from one
    # pointer; with four rows per thread, 4 more pointer registers, ptxas spilled 36 bytes), at the price
    # of 2-way bank conflicts on those writes.  B: 16-byte chunks along rows, also how B is read to split.
    LA: gl.constexpr = gl.BlockedLayout([1, 16], [32 * 16 // BK, BK // 16], [NW, 1], [1, 0])
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [NW, 1], [1, 0])
    SA: gl.constexpr = gl.SwizzledSharedLayout(vec=8, per_phase=1, max_phase=4, order=[1, 0])
    SB: gl.constexpr = gl.SwizzledSharedLayout(vec=1, per_phase=1, max_phase=1, order=[1, 0])
    SH: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BK, BN], gl.float16)
    assert_conflict_free(gl.float32, BM, BK, OPA, SA, "A fragment loads")
    assert_conflict_free(gl.float16, BK, BN, LB, SH, "B hi/lo stores")

    full_n = col0 + BN <= N
    a_rows = (row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, LA)).to(gl.int64))[:, None]
    a_in_m = a_rows < M
    a_k = gl.arange(0, BK, layout=gl.SliceLayout(0, LA))[None, :]
    b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))[:, None]
    b_cols = (col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, LB)).to(gl.int64))[None, :]
    b_in_n = b_cols < N

    As = gl.allocate_shared_memory(gl.float32, [STAGES, BM, BK], SA)
    Bs = gl.allocate_shared_memory(gl.float32, [STAGES, BK, BN], SB)
    B_hi = gl.allocate_shared_memory(gl.float16, [2, BK, BN], SH)
    B_lo = gl.allocate_shared_memory(gl.float16, [2, BK, BN], SH)
    k_tiles = gl.cdiv(K, BK)

    ring_prologue(_issue_tile, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, k_tiles,
                  full_n, BK, STAGES)
    # The scales of A's rows and B's columns, read where they are used, in A's register operand's layout and
    # B's copy layout (8- and 16-byte loads): held in registers through the loop, they made ptxas spill.
    RA: gl.constexpr = gl.SliceLayout(1, OPA)
    sa = _line_scales(AMAX, row0, M, BM, _thread_contiguous(gl.to_linear_layout(RA, [BM])))
    sb = _line_scales(AMAX + M, col0, N, BN, gl.SwizzledSharedLayout(1, 1, 1, [0]))
    _wg_prepare_b(0, k_tiles, As, Bs, B_hi.index(0), B_lo.index(0), A, a_rows, a_k, a_in_m, B, b_k, b_cols,
                  b_in_n, lda, ldb, K, full_n, sb, BK, STAGES, LB)
    a_hi, a_lo = _split(As.index(0).load(OPA) * sa.load(RA)[:, None], 0)

    zero = gl.zeros([BM, BN], gl.float32, MMA)
    acc = gl.zeros([BM, BN], gl.float32, MMA)
    corr = gl.zeros([BM, BN], gl.float32, MMA)
    for kt in range(k_tiles):
        hs = B_hi.index(kt % 2)
        ls = B_lo.index(kt % 2)
        hh = warpgroup_mma(a_hi, hs, zero, use_acc=False, is_async=True)
        corr = warpgroup_mma(a_lo, hs, corr, is_async=True)
        corr = warpgroup_mma(a_hi, ls, corr, is_async=True)
        # While the tensor cores run tile kt: B of tile kt + 1 into the other Bh/Bl buffer (past the last
        # tile this splits a stale slot, never read), then hi*hi's RN adds, then A of tile kt + 1 into
        # the registers hi*hi's result has freed.  hi*hi (BK = 32: two k16 steps chained in the tensor
        # core, so promoted every 32 k) is done once at most the two correction groups are in flight.
        _wg_prepare_b(kt + 1, k_tiles, As, Bs, B_hi.index((kt + 1) % 2), B_lo.index((kt + 1) % 2), A, a_rows,
                      a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, full_n, sb, BK, STAGES, LB)
        hh = warpgroup_mma_wait(2, deps=[hh])
        acc = acc + hh
        n_hi, n_lo = _split(As.index((kt + 1) % STAGES).load(OPA) * sa.load(RA)[:, None], 0)
        corr, a_hi, a_lo = warpgroup_mma_wait(0, deps=[corr, a_hi, a_lo])
        a_hi = n_hi
        a_lo = n_lo
    cp.wait_group(0)

    acc = acc + corr * _LO_UNSCALE
    # Epilogue in column quarters (register bits of the wgmma layout; its top row bit is the warpgroup), each
    # unscaled on its own: a thread holds 32 columns of the tile, too many exponents to hold at once.
    left, right = split_cols(acc)
    q0, q1 = split_cols(left)
    q2, q3 = split_cols(right)
    Q: gl.constexpr = BN // 4
    _store_unscaled(q0, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row0, col0, full_n, HAS_C)
    _store_unscaled(q1, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row0, col0 + Q, full_n, HAS_C)
    _store_unscaled(q2, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row0, col0 + 2 * Q, full_n, HAS_C)
    _store_unscaled(q3, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row0, col0 + 3 * Q, full_n, HAS_C)


# M, N, K are never specialised to constants: with K = 1 or N = 1 a branch around an async copy would fold
# to a constant-false scf.if, which crashes the 3.6 lowering (as gluon stages 07 and 09).
@gluon.jit(do_not_specialize=["M", "N", "K"])
def tcec_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX,
                HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                VARIANT: gl.constexpr, LD4: gl.constexpr):
    if LD4:   # the launcher checked ld % 4 == 0; written so Triton can see it (16-byte copies and stores)
        lda, ldb, ldc, ldd = as_multiple(lda, 4), as_multiple(ldb, 4), as_multiple(ldc, 4), as_multiple(ldd, 4)
    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    if VARIANT == 4:
        _wgmma_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX, row0, col0, HAS_C, BM, BN, BK,
                    STAGES)
    else:
        _mma_v2_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX, row0, col0, HAS_C, BM, BN, BK,
                     WM, WN, STAGES, VARIANT)


@gluon.jit
def fixup_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX, HAS_C: gl.constexpr,
                 BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """triton_kernels/_common.py's nonfinite_fixup, after tcec_kernel, on the same tiles: where row i of A or
    column j of B holds an inf or a NaN, D = alpha * sum_k A[i, k] B[k, j] + beta * C in fp32 FMAs, k in
    order, so that inf and NaN come out as SGEMM's, never the splits' (an inf's lo is NaN, and inf * 0 is
    NaN in a correction product).  A tile without such a line reads its BM + BN maxima and is done.  The
    rest, in 32-row pieces: 4 x 4 outputs a thread; per k a column of A and a row of B, in 1-D loads."""
    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    NW: gl.constexpr = gl.num_warps()
    L1: gl.constexpr = gl.BlockedLayout([1], [32], [NW], [0])
    any_bad = ((gl.max(_line_amax(AMAX, row0, M, BM, L1), axis=0) >= INF_BITS) |
               (gl.max(_line_amax(AMAX + M, col0, N, BN, L1), axis=0) >= INF_BITS))
    if any_bad:
        R: gl.constexpr = 32
        FL: gl.constexpr = gl.BlockedLayout([1, 4], [32 // (BN // 4), BN // 4], [NW, 1], [1, 0])
        cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, FL)).to(gl.int64)
        in_n = cols < N
        bad_c = gl.load(AMAX + M + cols, mask=in_n, other=0) >= INF_BITS
        b_step = as_int64(ldb)
        for r0 in range(0, BM, R):
            rows = row0 + r0 + gl.arange(0, R, layout=gl.SliceLayout(1, FL)).to(gl.int64)
            in_m = rows < M
            bad_r = gl.load(AMAX + rows, mask=in_m, other=0) >= INF_BITS
            a_ptrs = A + rows * lda
            b_ptrs = B + cols
            s = gl.zeros([R, BN], gl.float32, FL)
            for k in range(K):
                a = gl.load(a_ptrs + k, mask=in_m, other=0.0)
                b = gl.load(b_ptrs, mask=in_n, other=0.0)
                s = gl.fma(a[:, None], b[None, :], s)
                b_ptrs += b_step
            mask = (bad_r[:, None] | bad_c[None, :]) & in_m[:, None] & in_n[None, :]
            d = epilogue(s, alpha, beta, C, rows, cols, mask, ldc, HAS_C)
            gl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def _launch(p, entry: str):
    # 16-byte copies need every row start 16-byte aligned; base pointers Triton checks itself at launch.
    ld4 = pitches_divisible(p, 4)
    # The line maxima (a Triton kernel of triton_kernels/_common.py): the fp16 splits' scales, and for every
    # entry, tf32 included, the rows and columns that hold an inf or a NaN, which fixup_kernel recomputes.  A
    # kernel of its own, not a branch after tcec_kernel's store: there its code, never run, changed how ptxas
    # scheduled the main loop (gemm_tf32 lost 14% on an H100) and made it spill.
    meta = variants(entry)[0]
    amax = tcec_amax(p)
    kernel = launch_tiles(f"gluon:15_tcec ({entry})", tcec_kernel, p, {**meta, "LD4": ld4}, AMAX=amax)
    launch_tiles(f"gluon:15_tcec ({entry})", fixup_kernel, p, dict(BM=meta["BM"], BN=meta["BN"],
                 GROUP_M=meta["GROUP_M"], num_warps=meta["num_warps"]), AMAX=amax)
    return kernel


def gemm_tcec(p):
    return _launch(p, "gemm_tcec")


def gemm_markidis(p):
    return _launch(p, "gemm_markidis")


def gemm_nocorr(p):
    return _launch(p, "gemm_nocorr")


def gemm_tf32(p):
    return _launch(p, "gemm_tf32")


def gemm_tcec_wgmma(p):
    """fp16x3-tcec on wgmma (sm_90 only): registered as gluon:15_tcec-wgmma."""
    return _launch(p, "gemm_tcec_wgmma")


KERNEL = tcec_kernel
