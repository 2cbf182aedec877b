"""Stage 15 (Gluon) - TCEC: fp32 GEMM on fp16 tensor cores with error correction, from pre-split operands.

Technique:  the Gluon twin of cuda_kernels/15_tcec.cu (gemm_tcec_tma).  Passes (tcec_presplit, Triton) find
            each row of A's and column of B's largest |x|, scale the line by the exact power of two that puts it
            in [2^14, 2^15) (Range) and write fp16 copies hi = fp16(x), lo = fp16((x - hi) * 2^11).  The GEMM,
            tcec_tma_kernel, is rung 14's persistent, warp-specialized machinery: a loader warp TMA-loads A hi/lo
            128x64 and B hi/lo 64x128 boxes into a 3-slot mbarrier ring; two consumer warpgroups own 64x128
            each of a 128x128 tile and issue SS wgmma m64n128k16.  Per k-tile of 64, hi*hi runs into a fresh
            accumulator (scale-d 0) and is added to an fp32 sum by round-to-nearest add.f32; lo*hi + hi*lo share
            a second accumulator over all of K.  D = alpha * (sum + corr / 2^11) * 2^-(ea + eb) + beta * C.
            The constexpr VARIANT of the same kernel gives gemm_markidis_tma (lo unscaled, all three products
            in one accumulator) and gemm_nocorr_tma (hi only).  gemm_tf32 (gluon:15_tcec-tf32) is the
            shootout's form: 3xTF32 on mma_v2 m16n8k8, split in registers (tf32_kernel, below).
Reproduces: seed 002 (Ootomo & Yokota 2022, section 4.4): the split, scaling and correction of eqs. (6)-(7),
            and hi*hi's accumulation kept out of the tensor cores, which round toward zero.
Changed:    from Gluon 14: fp32 inputs, split by passes into two fp16 matrices each; three products per
            k-tile, a second accumulator and an fp32 sum in registers.  From this stage's first Gluon form
            (both operands split in registers for mma_v2, the WMMAe mapping; docs/15_tcec.md): the split leaves
            the k-loop.
Why faster: split in the k-loop, the method was bound by issue slots; here the loop is rung 14's, with three
            times its wgmmas and 128 add.f32 a thread per k-tile of 64 (hi*hi promoted every 32 k), and the
            passes move each operand through DRAM about three times.
Measured:   190.6 TFLOP/s at 4096^3 and 210.4 at 8192^3 on an H100, 3.70x and 4.11x cuBLAS SGEMM, the passes
            included (the sweep of 3bd236b, reports/h100/results.csv).
Ragged edges: the split copies are padded to multiples of 8 halves (zeros past K in A, past N in B) and read
            through descriptors of [M, K] and [K, N] views, which zero-fill past M, N and K.  Stores are masked;
            beta == 0 (HAS_C=False) compiles no load of C; 64-bit offsets.  gemm_tf32: masked cp.async copies
            0 bytes and zero-fills, 16-byte copies only where every pitch is a multiple of 4.
Range:      fp32's, by the scaling; the epilogue multiplies back by 2^-(ea + eb) in two exact steps.  A value
            more than ~2^29 below its row's (or column's) largest |x| loses relative precision in fp16's
            subnormals.  Rows and columns holding an inf or a NaN are recomputed in fp32 FMAs (fixup_kernel, a
            second launch), so inf and NaN come out as SGEMM's.  gemm_tf32 needs no scaling, only that.
Gluon against CUDA (3.6, sm_90a, ptxas -v): one ring allocation per operand holds a slot's hi and lo side by
            side; Gluon puts a bar.sync of the warpgroup before each consumer's ring wait, before its arrive and
            before the k-tile's second half, three per k-tile, where the CUDA kernel's warps wait and arrive on
            their own.  168 registers at launch, setmaxnreg 40 (loader) and 232 (consumers); ring 192 KiB
            (nocorr 96).  gemm_tf32: 240-242 registers.  No unit spills.
"""
from __future__ import annotations

import importlib

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.ampere import mma_v2
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from triton_kernels._common import INF_BITS, scale_exponent, tcec_amax, unscale
from triton_kernels.gluon._common import (as_int64, as_multiple, assert_conflict_free, epilogue, grouped_tile,
                                          launch_tiles, pitches_divisible, ring_advance, ring_prologue, split_cols,
                                          store_part, store_pieces)

_g14 = importlib.import_module("triton_kernels.gluon.14_wgmma")
_t15 = importlib.import_module("triton_kernels.15_tcec")   # its passes, tcec_presplit
_acc_layout = _g14._acc_layout

# tcec_tma_kernel's VARIANT and the entry point of each.
TCEC, MARKIDIS, NOCORR = 0, 1, 2
_TMA_ENTRIES = {"gemm_tcec_tma": TCEC, "gemm_markidis_tma": MARKIDIS, "gemm_nocorr_tma": NOCORR}
# 128x128 tiles, a consumer warpgroup 64x128 of them (hi*hi, the promoted sum and the corrections: 64 fp32
# registers a thread each); BK 64; 3 slots of 64 KiB (A hi and lo 128x64, B hi and lo 64x128; nocorr 32 KiB);
# registers set apart as rung 14's (launch 168, loader 40, consumers 232).
META_TMA = dict(BM=128, BN=128, BK=64, STAGES=3, GROUP_M=8)
# gemm_tf32: 64x128 tiles, 8 warps as 2 x 4 (32x32 of D each), BK 32 = two k16 slices per ring slot, a 3-slot
# cp.async ring; tiles in GROUP_M-row groups for L2 reuse (as gluon stage 09).  tf32 operands are twice the
# registers of fp16 ones: at 64x32 per warp ptxas spilled 252 bytes, at 32x32 none.
META_TF32 = dict(BM=64, BN=128, BK=32, WM=2, WN=4, STAGES=3, GROUP_M=8, LD4=True, num_warps=8, num_stages=1)


def variants(entry: str = "gemm_tcec_tma") -> list[dict]:
    """Launch parameters of `entry`, one tile shape each: tcec_tma_kernel's tile and constexprs (VARIANT
    included) for the TMA forms, tf32_kernel's constexprs plus num_warps/num_stages for gemm_tf32."""
    if entry == "gemm_tf32":
        return [dict(META_TF32)]
    return [{**META_TMA, "VARIANT": _TMA_ENTRIES[entry]}]


META = variants()[0]

_LO_UNSCALE = gl.constexpr(1.0 / 2048.0)  # exact: undoes seed 002's 2^11 scaling of the fp16 residual


@gluon.jit
def _line_amax(AMAX, first, n, SIZE: gl.constexpr, LAYOUT: gl.constexpr):
    """tcec_amax's int32 bits of lines first .. first + SIZE - 1 (0 past n), in the 1-D LAYOUT."""
    idx = first + gl.arange(0, SIZE, layout=LAYOUT).to(gl.int64)
    return gl.load(AMAX + idx, mask=idx < n, other=0)


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


# --- the method: pre-split operands on rung 14's machinery ---------------------------------------------------

@gluon.jit
def _tma_loader(ahi_desc, alo_desc, bhi_desc, blo_desc, a_ring, b_ring, ready, empty, M, N, K,
                GROUP_M: gl.constexpr, VARIANT: gl.constexpr):
    """The loader warp: k-tile after k-tile of the program's tiles, the n-th into slot n % STAGES (ring
    entries PARTS * s: hi, PARTS * s + 1: lo), once both consumers have released the slot's last use."""
    BM: gl.constexpr = ahi_desc.block_type.shape[0]
    BK: gl.constexpr = ahi_desc.block_type.shape[1]
    BN: gl.constexpr = bhi_desc.block_type.shape[1]
    PARTS: gl.constexpr = 1 if VARIANT == 2 else 2
    STAGES: gl.constexpr = a_ring.shape[0] // PARTS
    NBYTES: gl.constexpr = PARTS * (ahi_desc.block_type.nbytes + bhi_desc.block_type.nbytes)
    k_tiles = gl.cdiv(K, BK)
    tiles = gl.cdiv(M, BM) * gl.cdiv(N, BN)
    n = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        row0, col0 = grouped_tile(tile, M, N, BM, BN, GROUP_M)
        row0 = row0.to(gl.int32)   # TMA coordinates are 32-bit
        col0 = col0.to(gl.int32)
        for kt in range(k_tiles):
            s = n % STAGES
            bar = ready.index(s)
            mbarrier.wait(empty.index(s), ((n // STAGES) & 1) ^ 1)
            mbarrier.expect(bar, NBYTES)   # boxes past M, N or K arrive zero-filled and count in full
            tma.async_copy_global_to_shared(ahi_desc, [row0, kt * BK], bar, a_ring.index(PARTS * s))
            tma.async_copy_global_to_shared(bhi_desc, [kt * BK, col0], bar, b_ring.index(PARTS * s))
            if VARIANT != 2:
                tma.async_copy_global_to_shared(alo_desc, [row0, kt * BK], bar, a_ring.index(PARTS * s + 1))
                tma.async_copy_global_to_shared(blo_desc, [kt * BK, col0], bar, b_ring.index(PARTS * s + 1))
            n += 1


@gluon.jit
def _tma_consumer(a_ring, b_ring, ready, empty, C, D, AMAX, M, N, K, ldc, ldd, alpha, beta, HAS_C: gl.constexpr,
                  GROUP_M: gl.constexpr, VARIANT: gl.constexpr, WG: gl.constexpr):
    """Consumer warpgroup WG: rows WG*64.. of each tile, SS wgmma m64n128k16 (4 per product and k-tile).
    tcec: hi*hi into a fresh accumulator (scale-d 0) each k-tile, added to the fp32 sum with RN adds once it
    is done (wait(2): the corrections may still run, the k-tile before's are done and its slot goes back);
    lo*hi and hi*lo into a second accumulator over all of K.  markidis: all three into one accumulator,
    nocorr: hi*hi only, over all of K (wait(3), wait(1): the k-tile before's wgmmas are done)."""
    gl.static_assert(gl.num_warps() == 4, "a consumer is one warpgroup")
    PARTS: gl.constexpr = 1 if VARIANT == 2 else 2
    STAGES: gl.constexpr = a_ring.shape[0] // PARTS
    BM: gl.constexpr = a_ring.shape[1]
    BK: gl.constexpr = a_ring.shape[2]
    BN: gl.constexpr = b_ring.shape[2]
    HALF_K: gl.constexpr = BK // 2
    WG_M: gl.constexpr = BM // 2
    L: gl.constexpr = _acc_layout(BN)
    # Pitches zero-extended (they are >= 0): hoisted to the kernel's entry, a sign-extended one was spilled.
    ldc = gl.to_tensor(ldc).to(gl.uint32).to(gl.int64)
    ldd = gl.to_tensor(ldd).to(gl.uint32).to(gl.int64)
    k_tiles = gl.cdiv(K, BK)
    tiles = gl.cdiv(M, BM) * gl.cdiv(N, BN)
    zero = gl.zeros([WG_M, BN], gl.float32, L)
    acc = zero
    cc = zero
    n = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        row0, col0 = grouped_tile(tile, M, N, BM, BN, GROUP_M)
        acc = zero
        for kt in range(k_tiles):
            s = n % STAGES
            mbarrier.wait(ready.index(s), (n // STAGES) & 1)
            a_hi = a_ring.index(PARTS * s).slice(WG * WG_M, WG_M, dim=0)
            b_hi = b_ring.index(PARTS * s)
            if VARIANT == 2:
                acc = warpgroup_mma(a_hi, b_hi, acc, use_acc=kt > 0, is_async=True)
                acc = warpgroup_mma_wait(1, deps=[acc])
                mbarrier.arrive(empty.index((n + STAGES - 1) % STAGES), pred=kt > 0)
            else:
                a_lo = a_ring.index(PARTS * s + 1).slice(WG * WG_M, WG_M, dim=0)
                b_lo = b_ring.index(PARTS * s + 1)
                if VARIANT == 1:   # the small products first, hi*hi last
                    acc = warpgroup_mma(a_lo, b_hi, acc, use_acc=kt > 0, is_async=True)
                    acc = warpgroup_mma(a_hi, b_lo, acc, is_async=True)
                    acc = warpgroup_mma(a_hi, b_hi, acc, is_async=True)
                    acc = warpgroup_mma_wait(3, deps=[acc])
                    mbarrier.arrive(empty.index((n + STAGES - 1) % STAGES), pred=kt > 0)
                else:   # two halves of the k-tile, each hi*hi promoted (two k16 steps inside the tensor core)
                    for h in gl.static_range(2):
                        ah = a_hi.slice(h * HALF_K, HALF_K, dim=1)
                        al = a_lo.slice(h * HALF_K, HALF_K, dim=1)
                        bh = b_hi.slice(h * HALF_K, HALF_K, dim=0)
                        bl = b_lo.slice(h * HALF_K, HALF_K, dim=0)
                        hh = warpgroup_mma(ah, bh, zero, use_acc=False, is_async=True)
                        cc = warpgroup_mma(al, bh, cc, use_acc=(kt > 0) or (h > 0), is_async=True)
                        cc = warpgroup_mma(ah, bl, cc, is_async=True)
                        # cc too, as a dependency only (not waited for): the loop carries it as a tensor.
                        hh, cc = warpgroup_mma_wait(2, deps=[hh, cc])
                        if h == 0:
                            mbarrier.arrive(empty.index((n + STAGES - 1) % STAGES), pred=kt > 0)
                        acc = acc + hh   # add.f32: round to nearest, outside the tensor cores' truncation
            n += 1
        if VARIANT == 0:
            cc = warpgroup_mma_wait(0, deps=[cc])
            acc = acc + cc * _LO_UNSCALE
        else:
            acc = warpgroup_mma_wait(0, deps=[acc])
        mbarrier.arrive(empty.index((n + STAGES - 1) % STAGES))
        # Column quarters, each unscaled on its own (a thread holds 32 columns of the tile: too many exponents
        # to hold at once); C and D from registers, 64-bit offsets.
        row = row0 + WG * WG_M
        full_n = col0 + BN <= N
        Q: gl.constexpr = BN // 4
        left, right = split_cols(acc)
        q0, q1 = split_cols(left)
        q2, q3 = split_cols(right)
        _store_unscaled(q0, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row, col0, full_n, HAS_C)
        _store_unscaled(q1, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row, col0 + Q, full_n, HAS_C)
        _store_unscaled(q2, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row, col0 + 2 * Q, full_n, HAS_C)
        _store_unscaled(q3, C, D, AMAX, M, N, ldc, ldd, alpha, beta, row, col0 + 3 * Q, full_n, HAS_C)


@gluon.jit(do_not_specialize=["M", "N", "K"])
def tcec_tma_kernel(ahi_desc, alo_desc, bhi_desc, blo_desc, C, D, M, N, K, ldc, ldd, alpha, beta, AMAX,
                    HAS_C: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, VARIANT: gl.constexpr,
                    LOADER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr):
    """Persistent: the ring (one allocation per operand, hi and lo of a slot side by side), its barriers and
    the three partitions (rung 14's -persistent)."""
    PARTS: gl.constexpr = 1 if VARIANT == 2 else 2
    a_ring = gl.allocate_shared_memory(gl.float16, [PARTS * STAGES] + ahi_desc.block_type.shape, ahi_desc.layout)
    b_ring = gl.allocate_shared_memory(gl.float16, [PARTS * STAGES] + bhi_desc.block_type.shape, bhi_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)   # the loader's expect; the copies' bytes complete it
        mbarrier.init(empty.index(i), count=2)   # one arrival per consumer warpgroup
    gl.warp_specialize([(_tma_consumer, (a_ring, b_ring, ready, empty, C, D, AMAX, M, N, K, ldc, ldd, alpha, beta,
                                         HAS_C, GROUP_M, VARIANT, gl.constexpr(0))),
                        (_tma_consumer, (a_ring, b_ring, ready, empty, C, D, AMAX, M, N, K, ldc, ldd, alpha, beta,
                                         HAS_C, GROUP_M, VARIANT, gl.constexpr(1))),
                        (_tma_loader, (ahi_desc, alo_desc, bhi_desc, blo_desc, a_ring, b_ring, ready, empty, M, N,
                                       K, GROUP_M, VARIANT))],
                       [4, 1], [CONSUMER_REGS, LOADER_REGS])


def _launch_tma(p, entry: str):
    """tcec_presplit (passes: line maxima, scaled hi/lo fp16 copies), tcec_tma_kernel, fixup_kernel."""
    meta = variants(entry)[0]
    v = meta["VARIANT"]
    a_hi, a_lo, b_hi, b_lo, amax = _t15.tcec_presplit(p, 1.0 if v == MARKIDIS else 2048.0, v != NOCORR)
    bm, bn, bk = meta.pop("BM"), meta.pop("BN"), meta.pop("BK")
    M, N, K = p.mnk
    # [M, K] and [K, N] views of the padded buffers: TMA reads zeros past K and N (and M).
    a = [_g14._desc(t[:, :K], [bm, bk]) for t in (a_hi, a_hi if a_lo is None else a_lo)]
    b = [_g14._desc(t[:, :N], [bk, bn]) for t in (b_hi, b_hi if b_lo is None else b_lo)]
    c = p.c if p.c is not None else p.out   # never read when HAS_C=False
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    kernel = tcec_tma_kernel[_g14._persistent_grid(tiles, p.a.device)](
        a[0], a[1], b[0], b[1], c, p.out, M, N, K, c.stride(0), p.out.stride(0), p.alpha, p.beta, amax,
        HAS_C=p.c is not None, LOADER_REGS=_g14.LOADER_REGS, CONSUMER_REGS=_g14.CONSUMER_REGS,
        maxnreg=_g14.MAXNREG, **meta)
    launch_tiles(f"gluon:15_tcec ({entry})", fixup_kernel, p, dict(BM=bm, BN=bn, GROUP_M=meta["GROUP_M"],
                 num_warps=8), AMAX=amax)
    return kernel


def gemm_tcec_tma(p):
    """fp16x3-tcec from pre-split operands: TMA, SS wgmma, warp-specialized and persistent (sm_90 only)."""
    return _launch_tma(p, "gemm_tcec_tma")


def gemm_markidis_tma(p):
    return _launch_tma(p, "gemm_markidis_tma")


def gemm_nocorr_tma(p):
    return _launch_tma(p, "gemm_nocorr_tma")


@gluon.jit
def fixup_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX, HAS_C: gl.constexpr,
                 BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """triton_kernels/_common.py's nonfinite_fixup, after the GEMM, on its tiles: where row i of A or column j
    of B holds an inf or a NaN, D = alpha * sum_k A[i, k] B[k, j] + beta * C in fp32 FMAs, k in order, so
    that inf and NaN come out as SGEMM's, never the splits' (the passes split such lines as zeros; in
    gemm_tf32 an inf's lo is NaN, and inf * 0 is NaN in a correction product).  A tile without such a line
    reads its BM + BN maxima and is done.  The rest, in 32-row pieces: 4 x 4 outputs a thread; per k a
    column of A and a row of B, in 1-D loads."""
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


# --- gemm_tf32: 3xTF32 split in registers, mma_v2 --------------------------------------------------------------

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
    """x rounded to tf32 (10 mantissa bits, nearest, ties away), as the CUDA shootout's cvt.rna."""
    return gl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=gl.float32,
                                     is_pure=True, pack=1)


@gluon.jit
def _split(x):
    """fp32 x -> (hi, lo) tf32 operands, elementwise: the layout (an mma fragment) is kept."""
    hi = _tf32(x)
    lo = _tf32(x - hi)
    return hi, lo


# M, N, K are never specialised to constants: with K = 1 or N = 1 a branch around an async copy would fold
# to a constant-false scf.if, which crashes the 3.6 lowering (as gluon stages 07 and 09).
@gluon.jit(do_not_specialize=["M", "N", "K"])
def tf32_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                HAS_C: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                WM: gl.constexpr, WN: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr,
                LD4: gl.constexpr):
    """One program per BM x BN tile; each k16 slice of the fp32 ring is loaded straight into the mma operand
    layouts (DotOperandLayout, k_width 1) and split there: hi*hi (zero accumulator) is added to a register
    sum by add.f32 every k16, lo*hi + hi*lo go into a second, tensor-core accumulator."""
    if LD4:   # the launcher checked ld % 4 == 0; written so Triton can see it (16-byte copies and stores)
        lda, ldb, ldc, ldd = as_multiple(lda, 4), as_multiple(ldb, 4), as_multiple(ldc, 4), as_multiple(ldd, 4)
    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    NW: gl.constexpr = gl.num_warps()
    gl.static_assert(NW == WM * WN, "launch with num_warps = WM * WN")
    KS: gl.constexpr = 16
    KSUB: gl.constexpr = BK // KS
    gl.static_assert(BK % KS == 0, "whole k16 slices per ring slot")
    MMA: gl.constexpr = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[WM, WN], instr_shape=[16, 8])
    OPA: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=1)
    OPB: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=1)
    # Copy layouts: 16-byte chunks, lanes along the contiguous dimension.
    LA: gl.constexpr = gl.BlockedLayout([1, 4], [32 // (KS // 4), KS // 4], [NW, 1], [1, 0])
    TPW_N: gl.constexpr = 32 if BN // 4 >= 32 else BN // 4
    LB: gl.constexpr = gl.BlockedLayout([1, 4], [32 // TPW_N, TPW_N], [NW, 1], [1, 0])
    # Shared layouts of a ring slot's A slice [BM, 16] and B tile [BK, BN] (fp32, row-major, 16-byte units
    # XORed with the row), chosen so that the fragment loads are conflict-free (proved below): A is read with
    # ldmatrix (rows of 16 bytes), B as single words 4 rows apart.
    SA: gl.constexpr = gl.SwizzledSharedLayout(vec=4, per_phase=2, max_phase=4, order=[1, 0])
    SB: gl.constexpr = gl.SwizzledSharedLayout(vec=8, per_phase=1, max_phase=8, order=[1, 0])
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

    zero = gl.zeros([BM, BN], gl.float32, MMA)
    acc = gl.zeros([BM, BN], gl.float32, MMA)    # RN sum of hi*hi
    corr = gl.zeros([BM, BN], gl.float32, MMA)   # lo*hi + hi*lo, inside the tensor cores
    for kt in range(k_tiles):
        ring_advance(_issue_tile, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, kt, k_tiles,
                     full_n, BK, STAGES)
        a_tile = As.index(kt % STAGES)
        b_tile = Bs.index(kt % STAGES)
        for j in gl.static_range(KSUB):
            # fp32 straight into the fragment layouts; the split keeps them, so no convert_layout appears.
            a = a_tile.slice(j * BM, BM).load(OPA)
            b = b_tile.slice(j * KS, KS).load(OPB)
            a_hi, a_lo = _split(a)
            b_hi, b_lo = _split(b)
            # hi*hi first: issued after the corrections, ptxas needed 4 bytes of spills.
            acc = acc + mma_v2(a_hi, b_hi, zero, input_precision="tf32")
            corr = mma_v2(a_lo, b_hi, corr, input_precision="tf32")
            corr = mma_v2(a_hi, b_lo, corr, input_precision="tf32")
    cp.wait_group(0)   # only empty groups remain, but no copy may outlive the program's shared memory

    acc = acc + corr
    # Epilogue in row pieces along the mma layout's row repeats (BM / (16 * WM) of them), so the split
    # moves no data: with beta != 0 a thread holds a part of its C values at a time, not all.
    store_pieces(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, BM // (16 * WM), False)


def gemm_tf32(p):
    """3xTF32 (gluon:15_tcec-tf32): tcec_amax, tf32_kernel, fixup_kernel.  The line maxima only find the rows
    and columns holding an inf or a NaN, which fixup_kernel recomputes: a kernel of its own, not a branch after
    tf32_kernel's store, where its code, never run, changed how ptxas scheduled the main loop and made it spill."""
    # 16-byte copies need every row start 16-byte aligned; base pointers Triton checks itself at launch.
    meta = {**variants("gemm_tf32")[0], "LD4": pitches_divisible(p, 4)}
    amax = tcec_amax(p)
    kernel = launch_tiles("gluon:15_tcec (gemm_tf32)", tf32_kernel, p, meta)
    launch_tiles("gluon:15_tcec (gemm_tf32)", fixup_kernel, p, dict(BM=meta["BM"], BN=meta["BN"],
                 GROUP_M=meta["GROUP_M"], num_warps=meta["num_warps"]), AMAX=amax)
    return kernel


KERNEL = tcec_tma_kernel
