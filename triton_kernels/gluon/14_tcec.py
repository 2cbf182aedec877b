"""Stage 14 (Gluon) - TCEC: fp32 GEMM on fp16 tensor cores with error correction, split in registers (WMMAe).

Technique:  one program (8 warps) owns a 128x128 tile of D; the warps form 2 x 4 and each holds 64x32 of it
            as 4 x 4 mma.sync m16n8k16 tiles (NVMMADistributedLayout version [2, 0], warps_per_cta [2, 4]).
            K advances BK = 32 at a time through a 3-slot ring of fp32 A and B tiles filled by cp.async.  Each
            k16 slice is loaded from shared memory straight into the mma operand layout (DotOperandLayout,
            k_width 2) while still fp32, and split there, elementwise (the layout is kept, no data moves):
                hi = fp16(x),   lo = fp16((x - fp32(hi)) * 2^11)
            then three mma_v2 per slice: hi_A hi_B with a zero accumulator, whose fp32 result is added to a
            register sum with round-to-nearest add.f32 every k16 (the tensor cores' own accumulation rounds
            toward zero), and lo_A hi_B + hi_A lo_B into a second, tensor-core accumulator.  At the end
            D = alpha * (sum + corr / 2^11) + beta * C.  Variants (VARIANT constexpr, one kernel):
              gemm_tcec      the method above;
              gemm_markidis  lo = fp16(x - hi) unscaled, all three products chained in one accumulator;
              gemm_nocorr    hi only: one fp16 product per k16, the uncorrected floor;
              gemm_tf32      3xTF32: hi = cvt.rna.tf32(x), lo = cvt.rna.tf32(x - hi) (inline asm), fp32
                             operands (k_width 1, mma.sync m16n8k8 tf32), hi*hi promoted every k16 as in
                             tcec, no scaling: fp32's exponent range.  64x128 tile (see below).
Reproduces: seed 002 (Ootomo & Yokota 2022, WMMAe-TCEC): the split and scaling of eqs. 4-5 and the
            correction of eq. 6 (numbered (6)-(7) in the seed's text), the finding that accumulating inside
            the tensor cores (RZ) is what kept Markidis et al. short of fp32, and WMMAe's point: fragments
            of A_F16, dA_F16 (and B's) are built from the fp32 data in registers (foreach_ij), never stored
            as hi/lo copies in shared memory.  Here foreach_ij is the DotOperandLayout: the compiler knows
            which (row, k) each fragment register holds, so the split is plain elementwise code.
Changed:    from Gluon stage 09 (best SIMT): the multiplies move from fp32 FMAs to the tensor cores (mma_v2 ->
            mma.sync); operands are read from shared memory as mma fragments instead of rank-1 rows, and
            are split in registers between ld.shared and mma.  A is no longer stored transposed: its rows
            (k contiguous) move by 16-byte cp.async like B's.
Why faster: three fp16 products at mma.sync's ~643 TFLOP/s bound the method at ~214 TFLOP/s of fp32 work,
            4x cuBLAS SGEMM (~51).  This form is issue-bound below that: per k-tile a warp issues 96 mma.sync
            and ~890 other instructions (128 promotion adds, ~4.5 per split value for 96 values, 64
            ld.shared, copies), ~1970 issue cycles per SM sub-partition (2 warps) against ~1250 of tensor
            pipe: a bound of ~140 TFLOP/s.  Prediction: 90-130 TFLOP/s at 4096^3, 2-2.5x SGEMM.
Ragged edges: masked cp.async copies 0 bytes and zero-fills (src-size 0), so rows past M, columns past N and
            k past K arrive as zeros, whose splits are zeros.  Full k-tiles mask A by row only (16-byte
            copies); the last k-tile masks per k (4-byte copies); tiles that cross N copy B with per-column
            masks.  Stores are masked; beta == 0 (HAS_C=False) compiles no load of C.  64-bit offsets.
Range:      as the CUDA stage: the fp16 split needs |x| <= 65504 and loses accuracy below ~2^-14, where lo
            falls into fp16 subnormals; gemm_tf32 has neither limit.

Gluon against the CUDA stage (cuda_kernels/14_tcec.cu):
* Where the split happens.  The CUDA stage splits each element once per block on its way into shared memory
  (hi/lo fp16 tiles, read with ldmatrix).  Here each warp splits the fragments it reads, the WMMAe mapping:
  an element of A is split by the 4 warps that share its rows, one of B by the 2 that share its columns, 3x
  the conversions of a split-once, in exchange for no hi/lo tiles (96 KiB of fp32 ring instead of fp16
  hi + lo tiles and their st.shared pass).  Per k16 and lane: 32 fp32 values of A (16 ld.shared.v2) and 16
  of B (16 ld.shared.b32) are split, ~4.5 instructions each (cvt.rn.f16x2.f32, cvt.f32.f16, sub, mul,
  cvt.rn.f16.f32), for 48 mma.sync and 64 add.f32.
* Shared layouts are XOR swizzles of 16-byte units picked per operand so that the fragment loads are
  conflict-free, and the kernel proves it at compile time (gl.static_assert on gl.bank_conflicts == 0).
* A ring slot holds A's k-tile as two k16 slices stacked along rows ([2 * BM, 16]), so one cp.async per
  operand fills a slot.  The forms Gluon 3.6 refused: a [STAGES, 2, BM, 16] ring with a 2-D layout ("rank
  must be equal to or one less than the shape size. Got 2 and 4"), with a 3-D layout then indexed to 2-D
  ("Got 3 and 2"), and slicing a slot at a run-time offset ("expected 'start' to be an int but got
  int32[]").  One copy per k16 slice compiles but makes two async writes to one allocation, and Triton's
  barrier analysis puts a bar.sync between them (measured in the PTX: 3 bar.sync per k-tile instead of 2).
* Two bar.sync per k-tile, not one: as in Gluon 09, the analysis cannot tell the ring slot being filled
  from the one being read and adds a barrier between the copy issue and the fragment loads.
* gemm_tf32 uses a 64x128 tile (32x32 per warp): mma_v2 takes K >= 16 ("Input shapes should have M >= 1,
  N >= 1 and K >= 16"), so a tf32 call is two m16n8k8 and holds 16 k of hi and lo fragments where the CUDA
  stage holds 8; at 64x32 per warp that spilled 252 bytes.
* hi*hi goes through a zero accumulator and an explicit add (SASS: HMMA.16816.F32 ..., RZ, then FADDs).  In
  plain Triton the same source `acc + tl.dot(a_hi, b_hi)` is rewritten by the combine pass into
  tt.dot(a_hi, b_hi, acc) (checked on 3.6's TTIR), which would put the promotion back inside the tensor
  core's RZ accumulator; Gluon runs no combine pass.
* Compiled for sm_90, no spills: tcec 255 registers (254 with beta == 0), markidis 202, nocorr 201, tf32
  240; 96 KiB of shared memory (tf32: 72 KiB), one program per SM.  The tcec count is at the edge:
  issuing the hi*hi product after the corrections, or promoting every 32 k, spilled 4-72 bytes.  Per k-tile
  and lane (tcec): 96 mma.sync.m16n8k16.f16, 128 add.f32 (promotion), 32 ld.shared.v2 + 32 ld.shared.b32,
  4 cp.async.cg (16 B), 2 bar.sync.
"""
from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from triton_kernels._common import check_grid, gemm_args
from triton_kernels.gluon._common import epilogue, epilogue_store

# Variant codes (the VARIANT constexpr) and the study/registry.py entry point of each.
TCEC, MARKIDIS, NOCORR, TF32X3 = 0, 1, 2, 3
_ENTRIES = {"gemm_tcec": TCEC, "gemm_markidis": MARKIDIS, "gemm_nocorr": NOCORR, "gemm_tf32": TF32X3}

# 128x128 tile, 8 warps as 2 x 4 (64x32 of D each, 4 x 4 mma tiles), BK 32 = two k16 slices per ring slot,
# a 3-slot cp.async ring; tiles in GROUP_M-row groups for L2 reuse (as gluon stage 09).
_META = dict(BM=128, BN=128, BK=32, WM=2, WN=4, STAGES=3, GROUP_M=8, LD4=True, num_warps=8, num_stages=1)


def variants(entry: str = "gemm_tcec") -> list[dict]:
    """Launch parameters of `entry` (constexprs plus num_warps/num_stages), one tile shape each."""
    v = _ENTRIES[entry]
    # tf32 operands are twice the registers of fp16 ones and mma_v2 takes K >= 16 (two m16n8k8 per call):
    # at 64x32 per warp ptxas spills 252 bytes, at 32x32 none.
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


@gluon.jit
def _grouped_tile(pid, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """First row and column (int64) of program pid's tile: programs walk GROUP_M tile rows column by
    column, so consecutive programs share B tiles and a group's A rows stay in L2 (as gluon stage 09)."""
    tiles_m = gl.cdiv(M, BM)
    tiles_n = gl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = gl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    return pid_m.to(gl.int64) * BM, pid_n.to(gl.int64) * BN


@gluon.jit
def _issue_tile(As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, kt, full_n,
                BK: gl.constexpr):
    """cp.async of k-tile kt into ring slots As [KSUB * BM, KS] and Bs [BK, BN]; everything outside A or B
    arrives as zeros.  a_k and b_k are the slot's k offsets within a tile."""
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
        if VARIANT == 0:
            r = r * _LO_SCALE       # exact; brings lo back to x's magnitude, clear of fp16 subnormals
        lo = r.to(gl.float16)
    return hi, lo


@gluon.jit
def _split_rows(x):
    """x[:R/2], x[R/2:] - free when the top row bit is a register bit of x's layout (a repeat)."""
    return gl.split(gl.permute(gl.reshape(x, [2, x.shape[0] // 2, x.shape[1]]), [1, 2, 0]))


@gluon.jit
def _store_part(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C: gl.constexpr):
    LC: gl.constexpr = acc.type.layout
    rows = row0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, LC)).to(gl.int64)
    cols = col0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, LC)).to(gl.int64)
    if full_n:   # no column mask: 8-byte stores (a lane's column pair) where D and ldd allow
        mask = (rows < M)[:, None]
        d = epilogue(acc, alpha, beta, C, rows, cols, mask, ldc, HAS_C)
        gl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)
    else:
        epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C)


@gluon.jit(do_not_specialize=["M", "N", "K"])
def tcec_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                VARIANT: gl.constexpr, LD4: gl.constexpr):
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
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(gl.float32, [BM, KS], OPA),
                                       gl.shared_memory_descriptor_type(gl.float32, [BM, KS], SA, [BM, KS])) == 0,
                     "A fragment loads must be free of bank conflicts")
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(gl.float32, [KS, BN], OPB),
                                       gl.shared_memory_descriptor_type(gl.float32, [KS, BN], SB, [KS, BN])) == 0,
                     "B fragment loads must be free of bank conflicts")

    if LD4:
        lda = (lda // 4).to(gl.int64) * 4
        ldb = (ldb // 4).to(gl.int64) * 4
        ldc = (ldc // 4).to(gl.int64) * 4
        ldd = (ldd // 4).to(gl.int64) * 4
    row0, col0 = _grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
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

    for t in gl.static_range(STAGES - 1):
        if t < k_tiles:
            _issue_tile(As.index(t), Bs.index(t), A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb,
                        K, t, full_n, BK)
        cp.commit_group()

    zero = gl.zeros([BM, BN], gl.float32, MMA)
    acc = gl.zeros([BM, BN], gl.float32, MMA)    # RN sum of hi*hi (tcec, tf32) or the only accumulator
    corr = gl.zeros([BM, BN], gl.float32, MMA)   # tcec/tf32: lo*hi + hi*lo, inside the tensor cores
    for kt in range(k_tiles):
        cp.wait_group(STAGES - 2)
        gl.thread_barrier()
        nxt = kt + STAGES - 1
        if nxt < k_tiles:
            _issue_tile(As.index(nxt % STAGES), Bs.index(nxt % STAGES), A, a_rows, a_k, a_in_m, B, b_k,
                        b_cols, b_in_n, lda, ldb, K, nxt, full_n, BK)
        cp.commit_group()

        a_tile = As.index(kt % STAGES)
        b_tile = Bs.index(kt % STAGES)
        for j in gl.static_range(KSUB):
            a = a_tile.slice(j * BM, BM).load(OPA)
            b = b_tile.slice(j * KS, KS).load(OPB)
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
                    acc = acc + mma_v2(a_hi, b_hi, zero, input_precision="tf32")
                    corr = mma_v2(a_lo, b_hi, corr, input_precision="tf32")
                    corr = mma_v2(a_hi, b_lo, corr, input_precision="tf32")
    cp.wait_group(0)

    if VARIANT == 0:
        acc = acc + corr * _LO_UNSCALE
    elif VARIANT == 3:
        acc = acc + corr
    # Epilogue in row pieces along the mma layout's row repeats (BM / (16 * WM) of them), so the split
    # moves no data: with beta != 0 a thread holds a quarter of its C values at a time, not all.
    ROW_REPS: gl.constexpr = BM // (16 * WM)
    if ROW_REPS >= 4:
        top, bottom = _split_rows(acc)
        q0, q1 = _split_rows(top)
        q2, q3 = _split_rows(bottom)
        Q: gl.constexpr = BM // 4
        _store_part(q0, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)
        _store_part(q1, alpha, beta, C, D, row0 + Q, col0, M, N, ldc, ldd, full_n, HAS_C)
        _store_part(q2, alpha, beta, C, D, row0 + 2 * Q, col0, M, N, ldc, ldd, full_n, HAS_C)
        _store_part(q3, alpha, beta, C, D, row0 + 3 * Q, col0, M, N, ldc, ldd, full_n, HAS_C)
    elif ROW_REPS >= 2:
        top, bottom = _split_rows(acc)
        _store_part(top, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)
        _store_part(bottom, alpha, beta, C, D, row0 + BM // 2, col0, M, N, ldc, ldd, full_n, HAS_C)
    else:
        _store_part(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)


def _launch(p, entry: str):
    M, N, _ = p.mnk
    meta = variants(entry)[0]
    programs = triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])
    check_grid(f"gluon:14_tcec ({entry})", programs)
    args = gemm_args(p)
    ld4 = all(args[ld] % 4 == 0 for ld in ("lda", "ldb", "ldc", "ldd"))
    return tcec_kernel[(programs,)](**args, **{**meta, "LD4": ld4})


def gemm_tcec(p):
    return _launch(p, "gemm_tcec")


def gemm_markidis(p):
    return _launch(p, "gemm_markidis")


def gemm_nocorr(p):
    return _launch(p, "gemm_nocorr")


def gemm_tf32(p):
    return _launch(p, "gemm_tf32")


KERNEL = tcec_kernel
