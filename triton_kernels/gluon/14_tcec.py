"""Stage 14 (Gluon) - TCEC: fp32 GEMM on fp16 tensor cores with error correction, split in registers (WMMAe).

Technique:  one program (8 warps) owns a 128x128 tile of D; warps form 2 x 4, each holding 64x32 as 4 x 4
            mma.sync m16n8k16 tiles (NVMMADistributedLayout version [2, 0], warps_per_cta [2, 4]).  K moves
            BK = 32 at a time through a 3-slot ring of fp32 A and B tiles filled by cp.async.  Each k16 slice
            is loaded from shared memory straight into the mma operand layout (DotOperandLayout, k_width 2)
            while still fp32, and split there elementwise (the layout is kept, no data moves):
                hi = fp16(x),   lo = fp16((x - fp32(hi)) * 2^11)
            Three mma_v2 per slice: hi_A hi_B with a zero accumulator, its fp32 result added to a register
            sum by round-to-nearest add.f32 every k16 (the tensor cores' accumulation rounds toward zero);
            lo_A hi_B + hi_A lo_B into a second, tensor-core accumulator.  D = alpha*(sum + corr/2^11) + beta*C.
            One kernel, VARIANT constexpr: gemm_tcec (the method); gemm_markidis (lo = fp16(x - hi)
            unscaled, all three products in one accumulator); gemm_nocorr (hi only); gemm_tf32 (3xTF32:
            hi = cvt.rna.tf32(x), lo = cvt.rna.tf32(x - hi) by inline asm, k_width 1, mma.sync m16n8k8
            tf32, hi*hi promoted as in tcec, fp32's exponent range; 64x128 tile, see below).
Reproduces: seed 002 (Ootomo & Yokota 2022, WMMAe-TCEC, section 4.4): the split, scaling and correction of
            its eqs. (6)-(7), the finding that accumulating in the tensor
            cores (RZ) kept Markidis et al. short of fp32, and WMMAe's point: the fp16 fragments are built
            from fp32 data in registers (foreach_ij), never stored as hi/lo copies in shared memory.  Here
            foreach_ij is the DotOperandLayout: the compiler knows which (row, k) each register holds.
Changed:    from Gluon 09 (best SIMT): the multiplies move from fp32 FMAs to tensor cores (mma_v2 ->
            mma.sync); operands are read as mma fragments, not rank-1 rows, and split in registers between
            ld.shared and mma.  A is no longer stored transposed: its rows move by 16-byte cp.async like B's.
Why faster: three fp16 products at mma.sync's ~643 TFLOP/s bound the method at ~214 TFLOP/s of fp32 work,
            4x cuBLAS SGEMM (~51).  This form is issue-bound below that: per k-tile a warp issues 96
            mma.sync and ~890 other instructions (128 promotion adds, ~4.5 per split value for 96 values,
            64 ld.shared, copies): ~1970 issue cycles per SM sub-partition (2 warps) against ~1250 of tensor
            pipe, a bound of ~140 TFLOP/s.  Predicted 90-130 TFLOP/s at 4096^3; measured 75 (below).
Ragged edges: masked cp.async copies 0 bytes and zero-fills (src-size 0), so rows past M, columns past N and
            k past K arrive as zeros, whose splits are zeros.  Full k-tiles mask A by row only (16-byte
            copies); the last k-tile masks per k (4-byte copies); tiles that cross N copy B with per-column
            masks.  Stores are masked; beta == 0 (HAS_C=False) compiles no load of C.  64-bit offsets.
Range:      as the CUDA stage: the fp16 split needs |x| <= 65504 and loses accuracy below ~2^-14, where lo
            falls into fp16 subnormals; gemm_tf32 has neither limit.

Gluon against the CUDA stage (cuda_kernels/14_tcec.cu):
* Where the split happens.  The CUDA stage runs wgmma: each warp splits its own 16 rows of A in registers
  (no other warp reads them) and 1/8 of B into shared hi/lo tiles that both warpgroups read.  Here, on
  mma.sync, each warp splits the fragments it reads, the WMMAe mapping: an element of A is split by the 4
  warps that share its rows, one of B by the 2 that share its columns, for no hi/lo tiles at all.  Per k16
  and lane: 32 fp32 values of A (16 ld.shared.v2) and 16 of B (16 ld.shared.b32) are split, ~4.5
  instructions each (cvt.rn.f16x2.f32, cvt.f32.f16, sub, mul, cvt.rn.f16.f32), for 48 mma.sync and 64
  add.f32.  gemm_tcec_wgmma below is the CUDA stage's mapping.
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
  8 cp.async.cg (16 B), 2 bar.sync.

gemm_tcec_wgmma (VARIANT 4, registered as gluon:14_tcec-wgmma): the method on Hopper's wgmma, two
warpgroups of 64x128 (NVMMADistributedLayout version [3, 0], wgmma m64n128k16).  A stays WMMAe: fp32
fragments loaded in wgmma's register-A layout (DotOperandLayout, k_width 2) and split in registers.  B
cannot: wgmma reads B only from shared memory, so each program splits B's tile once into fp16 hi/lo tiles
(NVMMASharedLayout, 128-byte swizzle), double-buffered.  While the tensor cores run tile kt (three async
wgmma groups: hi*hi with use_acc=False, then the two corrections into their accumulator) the warps split B
and A of tile kt + 1; warpgroup_mma_wait(2) frees hi*hi for its round-to-nearest adds while the corrections
still run.  hi*hi is promoted every 32 k (two k16 steps chained in the tensor core): promoting every k16
would hold a fourth 64-register accumulator.  255 registers, no spills (A's copy gives each thread 64
contiguous bytes of one row, one pointer: with four rows per thread ptxas spilled 36 bytes; the price is
2-way bank conflicts on A's cp.async writes), 128 KiB of shared memory; per k-tile and warpgroup 6 wgmma,
3 bar.sync, 1 fence.proxy.async.  Bound: 3 products at wgmma's ~989 TFLOP/s give ~330 TFLOP/s of fp32 work;
shared-memory traffic (~112 KB per k-tile with wgmma's B reads, ~880 cycles) lowers that to ~290.  It
reaches 110: every k-tile ends in warpgroup_mma_wait(0) (the next tile's wgmmas need a_hi/a_lo and the B
buffer they read released), so the tensor pipe drains once per 32 k, and 3 bar.sync stop both warpgroups.

Measured on an H100 SXM, study.sweep --quick of bc14610 (reports/; L2 flushed, median; cuBLAS SGEMM 52.0
TFLOP/s at 4096^3, 51.3 at 8192^3): tcec 76.7 TFLOP/s (1.48x) at relerr 3.0e-7 and 76.6 (1.49x) at 4.2e-7;
tcec_wgmma 106.1 (2.04x) at 2.3e-7 and 106.9 (2.09x) at 3.1e-7; markidis 85.4 / 86.2 at 1.4e-5 / 2.9e-5;
nocorr 150.9 / 155.9 at 2.9e-4; tf32 40.3 / 41.2 at 3.1e-7 / 4.2e-7.  Against the CUDA stage (136.4 /
128.5): mma_v2 is issue-bound (above), and the wgmma form (22% / 17% behind) drains the tensor pipe once per
k-tile (warpgroup_mma_wait(0)) and stops both warpgroups at 3 bar.sync.  Every entry also matched a float64 reference on 8 shapes from 1x1x1 to 1024^3
(ragged, N = 1, M = 1), beta 0 with C full of NaN and beta 0.5, contiguous and offset-by-one odd-stride views
(worst relerr: tcec 1.8e-7, markidis 3.6e-6, nocorr 4.9e-4, tf32 1.8e-7, tcec_wgmma 1.5e-7).
"""
from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma, warpgroup_mma_wait

from triton_kernels._common import check_grid, gemm_args
from triton_kernels.gluon._common import epilogue, epilogue_store, grouped_tile, split_cols, split_rows, store_part

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
def _mma_v2_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, row0, col0,
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
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(gl.float32, [BM, KS], OPA),
                                       gl.shared_memory_descriptor_type(gl.float32, [BM, KS], SA, [BM, KS])) == 0,
                     "A fragment loads must be free of bank conflicts")
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(gl.float32, [KS, BN], OPB),
                                       gl.shared_memory_descriptor_type(gl.float32, [KS, BN], SB, [KS, BN])) == 0,
                     "B fragment loads must be free of bank conflicts")

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

    # Prologue: tiles 0 .. STAGES-2 in flight.  Every step commits one group, empty or not, so tile t is
    # always group t and "at most STAGES-2 groups pending" always means the tile about to be used is in.
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
        # One barrier, two jobs: tile kt is visible to all, and every thread has finished tile kt-1,
        # whose slot the copy below overwrites.
        gl.thread_barrier()
        nxt = kt + STAGES - 1
        if nxt < k_tiles:
            _issue_tile(As.index(nxt % STAGES), Bs.index(nxt % STAGES), A, a_rows, a_k, a_in_m, B, b_k,
                        b_cols, b_in_n, lda, ldb, K, nxt, full_n, BK)
        cp.commit_group()

        a_tile = As.index(kt % STAGES)
        b_tile = Bs.index(kt % STAGES)
        for j in gl.static_range(KSUB):
            # fp32 straight into the fragment layouts; the split keeps them, so no convert_layout appears.
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
                    # hi*hi first: issued after the corrections, ptxas needed 4 bytes of spills.
                    acc = acc + mma_v2(a_hi, b_hi, zero, input_precision="tf32")
                    corr = mma_v2(a_lo, b_hi, corr, input_precision="tf32")
                    corr = mma_v2(a_hi, b_lo, corr, input_precision="tf32")
    cp.wait_group(0)   # only empty groups remain, but no copy may outlive the program's shared memory

    if VARIANT == 0:
        acc = acc + corr * _LO_UNSCALE
    elif VARIANT == 3:
        acc = acc + corr
    # Epilogue in row pieces along the mma layout's row repeats (BM / (16 * WM) of them), so the split
    # moves no data: with beta != 0 a thread holds a quarter of its C values at a time, not all.
    ROW_REPS: gl.constexpr = BM // (16 * WM)
    if ROW_REPS >= 4:
        top, bottom = split_rows(acc)
        q0, q1 = split_rows(top)
        q2, q3 = split_rows(bottom)
        Q: gl.constexpr = BM // 4
        store_part(q0, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)
        store_part(q1, alpha, beta, C, D, row0 + Q, col0, M, N, ldc, ldd, full_n, HAS_C)
        store_part(q2, alpha, beta, C, D, row0 + 2 * Q, col0, M, N, ldc, ldd, full_n, HAS_C)
        store_part(q3, alpha, beta, C, D, row0 + 3 * Q, col0, M, N, ldc, ldd, full_n, HAS_C)
    elif ROW_REPS >= 2:
        top, bottom = split_rows(acc)
        store_part(top, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)
        store_part(bottom, alpha, beta, C, D, row0 + BM // 2, col0, M, N, ldc, ldd, full_n, HAS_C)
    else:
        store_part(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)


@gluon.jit
def _wg_prepare_b(t, k_tiles, As, Bs, Bh, Bl, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K,
                  full_n, BK: gl.constexpr, STAGES: gl.constexpr, LB: gl.constexpr):
    """Wait for fp32 tile t, start the copy of tile t + STAGES - 1 into the slot tile t - 1 left, and split
    B's tile t into Bh/Bl (fp16, shared: the wgmma's B operands).  A's tile t stays in its ring slot."""
    cp.wait_group(STAGES - 2)
    # One barrier, three jobs: tile t has landed for all; every thread is done with tile t - 1's ring slot
    # (the copy below refills it); every warpgroup has waited for its wgmmas of tile t - 2, the last
    # readers of Bh/Bl.
    gl.thread_barrier()
    nxt = t + STAGES - 1
    if nxt < k_tiles:
        _issue_tile(As.index(nxt % STAGES), Bs.index(nxt % STAGES), A, a_rows, a_k, a_in_m, B, b_k, b_cols,
                    b_in_n, lda, ldb, K, nxt, full_n, BK)
    cp.commit_group()
    b_hi, b_lo = _split(Bs.index(t % STAGES).load(LB), 0)
    Bh.store(b_hi)
    Bl.store(b_lo)
    fence_async_shared()   # generic-proxy stores, read next by the async proxy (wgmma)
    gl.thread_barrier()


@gluon.jit
def _wgmma_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, row0, col0,
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
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(gl.float32, [BM, BK], OPA),
                                       gl.shared_memory_descriptor_type(gl.float32, [BM, BK], SA, [BM, BK])) == 0,
                     "A fragment loads must be free of bank conflicts")
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(gl.float16, [BK, BN], LB),
                                       gl.shared_memory_descriptor_type(gl.float16, [BK, BN], SH, [BK, BN])) == 0,
                     "B hi/lo stores must be free of bank conflicts")

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

    for t in gl.static_range(STAGES - 1):
        if t < k_tiles:
            _issue_tile(As.index(t), Bs.index(t), A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb,
                        K, t, full_n, BK)
        cp.commit_group()
    _wg_prepare_b(0, k_tiles, As, Bs, B_hi.index(0), B_lo.index(0), A, a_rows, a_k, a_in_m, B, b_k, b_cols,
                  b_in_n, lda, ldb, K, full_n, BK, STAGES, LB)
    a_hi, a_lo = _split(As.index(0).load(OPA), 0)

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
                      a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, full_n, BK, STAGES, LB)
        hh = warpgroup_mma_wait(2, deps=[hh])
        acc = acc + hh
        n_hi, n_lo = _split(As.index((kt + 1) % STAGES).load(OPA), 0)
        corr, a_hi, a_lo = warpgroup_mma_wait(0, deps=[corr, a_hi, a_lo])
        a_hi = n_hi
        a_lo = n_lo
    cp.wait_group(0)

    acc = acc + corr * _LO_UNSCALE
    # Epilogue in column quarters (register bits of the wgmma layout; its top row bit is the warpgroup).
    left, right = split_cols(acc)
    q0, q1 = split_cols(left)
    q2, q3 = split_cols(right)
    Q: gl.constexpr = BN // 4
    store_part(q0, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)
    store_part(q1, alpha, beta, C, D, row0, col0 + Q, M, N, ldc, ldd, full_n, HAS_C)
    store_part(q2, alpha, beta, C, D, row0, col0 + 2 * Q, M, N, ldc, ldd, full_n, HAS_C)
    store_part(q3, alpha, beta, C, D, row0, col0 + 3 * Q, M, N, ldc, ldd, full_n, HAS_C)


# M, N, K are never specialised to constants: with K = 1 or N = 1 a branch around an async copy would fold
# to a constant-false scf.if, which crashes the 3.6 lowering (as gluon stages 07 and 09).
@gluon.jit(do_not_specialize=["M", "N", "K"])
def tcec_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                VARIANT: gl.constexpr, LD4: gl.constexpr):
    if LD4:   # the launcher checked ld % 4 == 0; written so Triton can see it (16-byte copies and stores)
        lda = (lda // 4).to(gl.int64) * 4
        ldb = (ldb // 4).to(gl.int64) * 4
        ldc = (ldc // 4).to(gl.int64) * 4
        ldd = (ldd // 4).to(gl.int64) * 4
    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    if VARIANT == 4:
        _wgmma_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, row0, col0, HAS_C, BM, BN, BK, STAGES)
    else:
        _mma_v2_body(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, row0, col0, HAS_C, BM, BN, BK, WM,
                     WN, STAGES, VARIANT)


def _launch(p, entry: str):
    M, N, _ = p.mnk
    meta = variants(entry)[0]
    programs = triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"])
    check_grid(f"gluon:14_tcec ({entry})", programs)
    args = gemm_args(p)
    # 16-byte copies need every row start 16-byte aligned; base pointers Triton checks itself at launch.
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


def gemm_tcec_wgmma(p):
    """fp16x3-tcec on wgmma (sm_90 only): registered as gluon:14_tcec-wgmma."""
    return _launch(p, "gemm_tcec_wgmma")


KERNEL = tcec_kernel
