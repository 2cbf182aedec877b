"""Stage 15 (Triton) - TCEC: fp32 GEMM on fp16 tensor cores with error correction, from pre-split operands.

Technique:  the Triton form of cuda_kernels/15_tcec.cu (gemm_tcec_tma).  Two passes (tcec_presplit, below) find
            each row of A's and column of B's largest |x|, scale the line by the exact power of two that puts it
            in [2^14, 2^15) and write fp16 copies hi = fp16(x), lo = fp16((x - hi) * 2^11) of A [M, K] and B [K, N].
            The GEMM, tcec_tma_kernel, is persistent (one program per SM) and reads k-tiles of the copies by TMA
            (device-side descriptors, so that the boxes follow the autotuned config) into a ring that wgmma reads
            from shared memory.  Per k-tile, hi*hi runs into a fresh tensor-core accumulator and is added to an
            fp32 sum by an add.rn.f32 written as inline PTX (no pass can fold it back into the wgmma); lo*hi and
            hi*lo share a second accumulator over all of K, scaled by 2^-11 once, in the epilogue.  The constexpr
            SPLIT of the same kernel gives the variants: gemm_markidis_tma (lo unscaled, all three products in one
            accumulator) and gemm_nocorr_tma (hi only).  gemm_tf32 (triton:15_tcec-tf32) is the shootout's 3xTF32
            form: tf32_kernel splits fp32 tiles in registers, hi = tf32(x), lo = tf32(x - hi), and computes
            D^T = B^T A^T (TF32 wgmma wants both shared-memory operands K-major), its k-tiles promoted as above.
Reproduces: seed 002 (Ootomo & Yokota, WMMAe-TCEC), section 4.4, eqs. (6)-(7): the 2^11-scaled split, the product
            without lo*lo, and hi*hi's accumulation kept out of the tensor cores, which round toward zero.
            gemm_markidis_tma is the method it improves on (Markidis et al. 2018); gemm_nocorr_tma is the floor.
Changed:    from Triton 14: fp32 inputs, split by passes into two fp16 matrices each; three products per k-tile,
            a second accumulator and an fp32 sum in registers.  From this stage's first Triton form (both operands
            split in registers inside the k-loop, tile by tile; docs/15_tcec.md): the split leaves the k-loop, and
            the GEMM reads fp16 tiles, half the bytes of fp32 ones, straight into wgmma's shared-memory layout.
Why faster: split in the k-loop, the kernel spent its issue slots on conversions and waited on every product;
            here the loop is TMA copies and wgmma plus 128 add.rn.f32 a thread per k-tile of 64 (hi*hi promoted
            every 32 k), and the passes move each operand through DRAM about three times.  It measured
            135.6 TFLOP/s at 4096^3 and 129.3 at 8192^3 on an H100, 2.64x and 2.52x cuBLAS SGEMM, the passes
            included (the sweep of 3bd236b, reports/h100/results.csv; at 8192^3 its p20-p80 times span 2.5x SGEMM's
            rate, a tie with it): Triton waits on each product that is not a loop-carried accumulator.
Ragged edges: the copies are padded to multiples of 8 halves (zeros past K in A, past N in B) and read through
            descriptors of their [M, K] and [K, N] corners, which zero-fill past M, N and K.  Stores are masked;
            beta == 0 (HAS_C=False) compiles no load of C; offsets are 64-bit.  gemm_tf32: masked loads give zeros
            outside M, N and K (zeros split into zeros).
Alignment:  none required of A, B, C or D.  The passes read A and B at any strides and write copies that are
            16-byte aligned, their pitches padded to 8 halves, as TMA needs.  gemm_tf32: odd views get 4-byte
            copies instead of 16-byte ones.
Input range: fp32's, by the passes' scaling; the epilogue multiplies back by 2^-(ea + eb).  A value more than
            ~2^29 below its line's largest |x| keeps fewer bits (fp16 subnormals).  Rows and columns holding an inf
            or a NaN are split as zeros and recomputed in fp32 by tma_fixup_kernel, a launch of its own, so inf and
            NaN come out as SGEMM's.  gemm_tf32 keeps fp32's range unscaled; nonfinite_fixup, inside tf32_kernel,
            recomputes its inf and NaN lines.
Compiles to (Triton 3.6, sm_90a, ptxas -v; tcec at 128x128x64, 8 warps): per 32 k each warpgroup waits on the
            ring slot's mbarrier, issues 6 SS wgmma m64n128k16 in three commit groups (hi*hi with scale-d 0,
            lo*hi, hi*lo) with a wait_group 0 after the first two, then 64 add.rn.f32 while hi*lo runs; the TMA
            copies (A hi and lo, B hi and lo: cp.async.bulk.tensor, 32-deep boxes) fill the ring two k-tiles
            ahead.  255 registers without C, no spills; 213048 bytes of shared memory.  gemm_tf32: 255 registers
            and spills in every config, from nonfinite_fixup's loop inlined in tf32_kernel (without it, at most
            216 and no spills).
"""
from __future__ import annotations

import contextvars
import functools

import triton
import triton.language as tl

from triton_kernels._common import (INF_BITS, check_grid, config_variants, epilogue, grouped_tile, interpreting,
                                    launch_autotuned, max_tiles, nonfinite_fixup, pow2, scale_exponent, store_tile,
                                    tcec_amax, tile_rows_cols, unscale)


# --- the split passes of the TMA forms (Gluon's too) -------------------------------------------------------
# tcec_presplit() writes A's and B's fp16 splits to memory once, so that the GEMM reads them through TMA: fp16
# tiles, half the bytes of fp32 ones, landing in shared memory in wgmma's layout.  Each operand moves through
# DRAM three times: the maxima pass reads it, the split reads it again and writes hi and lo (2 x fp16 = one
# fp32).  Two launches after a zero fill, each over A's tiles then B's (Python's launch, tens of microseconds,
# is not paid twice).
_PASS_ROWS, _PASS_COLS, _PASS_WARPS = 32, 256, 8   # a program's [rows, columns] tile of A or B


@triton.jit
def _tile_of(pid, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    """Row and column indices of tile pid of a rows x cols matrix (tiles in row-major order)."""
    n = tl.cdiv(cols, BC)
    return (pid // n) * BR + tl.arange(0, BR), (pid % n) * BC + tl.arange(0, BC)


@triton.jit
def _abs_bits(X, r, c, rows, cols, s_row, s_col):
    """The bits of |x| over a tile (0 outside the matrix), inf and every NaN as INF_BITS."""
    x = tl.load(X + r[:, None].to(tl.int64) * s_row + c[None, :].to(tl.int64) * s_col,
                mask=(r < rows)[:, None] & (c < cols)[None, :], other=0.0)
    bits = tl.abs(x).to(tl.int32, bitcast=True)
    return tl.where(bits >= INF_BITS, INF_BITS, bits)


@triton.jit
def _amax_pair_kernel(A, B, OUT, M, N, K, sam, sak, sbk, sbn, a_tiles, BR: tl.constexpr, BC: tl.constexpr):
    """tcec_amax's maxima in one launch (OUT zeroed): programs below a_tiles take [BR, BC] tiles of A and
    reduce along k, the rest tiles of B, reduced along k too (down its columns)."""
    pid = tl.program_id(0)
    if pid < a_tiles:
        rows, ks = _tile_of(pid, M, K, BR, BC)
        tl.atomic_max(OUT + rows, tl.max(_abs_bits(A, rows, ks, M, K, sam, sak), axis=1), mask=rows < M)
    else:
        kr, cols = _tile_of(pid - a_tiles, K, N, BR, BC)
        tl.atomic_max(OUT + M + cols, tl.max(_abs_bits(B, kr, cols, K, N, sbk, sbn), axis=0), mask=cols < N)


@triton.jit
def _split_tile(X, HI, LO, AMAX, r, c, rows, cols, s_row, s_col, ld8, SCALE_ROWS: tl.constexpr,
                LO_SCALE: tl.constexpr, WITH_LO: tl.constexpr):
    """HI, LO [rows, ld8 * 8] (row-major) at the tile r x c = the split of X [rows, cols] (strides s_row, s_col),
    each row (or each column, SCALE_ROWS=False) times its exact power of two; zeros in columns cols ..
    ld8*8 - 1 and in lines holding an inf or a NaN.  The pitch arrives divided by 8 so the compiler knows
    that rows start 16-byte aligned."""
    in_r = r < rows
    x = tl.load(X + r[:, None].to(tl.int64) * s_row + c[None, :].to(tl.int64) * s_col,
                mask=in_r[:, None] & (c < cols)[None, :], other=0.0)
    if SCALE_ROWS:
        bits = tl.load(AMAX + r, mask=in_r, other=0)[:, None]
    else:
        bits = tl.load(AMAX + c, mask=c < cols, other=0)[None, :]
    # An exact scaling (scale_exponent keeps x * 2^e normal and below 2^15); a line with an inf or a NaN -> 0.
    xs = tl.where(bits < INF_BITS, x * pow2(scale_exponent(bits)), 0.0)
    hi = xs.to(tl.float16)                                        # round to nearest even
    pitch = ld8 * 8
    out = r[:, None].to(tl.int64) * pitch + c[None, :]
    mask = in_r[:, None] & (c < pitch)[None, :]
    tl.store(HI + out, hi, mask=mask)
    if WITH_LO:
        lo = ((xs - hi.to(tl.float32)) * LO_SCALE).to(tl.float16)   # xs - hi is exact in fp32
        tl.store(LO + out, lo, mask=mask)


@triton.jit
def _split_pair_kernel(A, B, A_HI, A_LO, B_HI, B_LO, AMAX, M, N, K, sam, sak, sbk, sbn, lda8, ldb8, a_tiles,
                       LO_SCALE: tl.constexpr, WITH_LO: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr):
    """Both splits in one launch: programs below a_tiles take tiles of A_HI/A_LO [M, lda8 * 8], each row
    scaled by its own power of two; the rest tiles of B_HI/B_LO [K, ldb8 * 8], each column by its own."""
    pid = tl.program_id(0)
    if pid < a_tiles:
        r, c = _tile_of(pid, M, lda8 * 8, BR, BC)
        _split_tile(A, A_HI, A_LO, AMAX, r, c, M, K, sam, sak, lda8, True, LO_SCALE, WITH_LO)
    else:
        r, c = _tile_of(pid - a_tiles, K, ldb8 * 8, BR, BC)
        _split_tile(B, B_HI, B_LO, AMAX + M, r, c, K, N, sbk, sbn, ldb8, False, LO_SCALE, WITH_LO)


def tcec_presplit(p, lo_scale: float = 2048.0, with_lo: bool = True):
    """-> (a_hi, a_lo, b_hi, b_lo, amax)
    a_hi, a_lo: torch.float16 [M, Kp], Kp = ceil(K/8)*8: row i = split of A[i, :] * 2^ea[i]; zeros in columns K..Kp-1
    b_hi, b_lo: torch.float16 [K, Np], Np = ceil(N/8)*8: column j = split of B[:, j] * 2^eb[j]; zeros in cols N..Np-1
    amax: int32 [M + N], exactly what tcec_amax(p) returns (so scale_exponent / nonfinite_fixup work unchanged)
    A line (row of A / column of B) holding an inf or a NaN gets hi = lo = 0 everywhere (its outputs are
    recomputed by nonfinite_fixup), so the GEMM never meets inf/NaN.  with_lo=False: a_lo, b_lo are None.
    hi = fp16_rn(x 2^e), lo = fp16_rn((x 2^e - hi) lo_scale): lo_scale 2^11 for TCEC, 1 for Markidis (a power of
    two: the residual's product stays exact).  A and B may have any strides.  The four splits are views of one
    allocation, each 16-byte aligned."""
    import torch
    M, N, K = p.mnk
    Kp, Np = triton.cdiv(K, 8) * 8, triton.cdiv(N, 8) * 8
    dev = p.a.device
    amax = torch.zeros(M + N, dtype=torch.int32, device=dev)
    sam, sak, sbk, sbn = p.a.stride(0), p.a.stride(1), p.b.stride(0), p.b.stride(1)
    br, bc = _PASS_ROWS, _PASS_COLS
    a_tiles = triton.cdiv(M, br) * triton.cdiv(K, bc)
    programs = a_tiles + triton.cdiv(K, br) * triton.cdiv(max(N, Np), bc)
    check_grid("tcec_presplit", programs)
    _amax_pair_kernel[(a_tiles + triton.cdiv(K, br) * triton.cdiv(N, bc),)](
        p.a, p.b, amax, M, N, K, sam, sak, sbk, sbn, a_tiles, BR=br, BC=bc, num_warps=_PASS_WARPS)
    parts = 2 if with_lo else 1
    buf = torch.empty(parts * (M * Kp + K * Np), dtype=torch.float16, device=dev)
    a_hi, b_hi = buf[:M * Kp].view(M, Kp), buf[M * Kp:M * Kp + K * Np].view(K, Np)
    a_lo = b_lo = None
    if with_lo:
        rest = buf[M * Kp + K * Np:]
        a_lo, b_lo = rest[:M * Kp].view(M, Kp), rest[M * Kp:].view(K, Np)
    a_tiles = triton.cdiv(M, br) * triton.cdiv(Kp, bc)
    _split_pair_kernel[(a_tiles + triton.cdiv(K, br) * triton.cdiv(Np, bc),)](
        p.a, p.b, a_hi, a_hi if a_lo is None else a_lo, b_hi, b_hi if b_lo is None else b_lo, amax, M, N, K,
        sam, sak, sbk, sbn, Kp // 8, Np // 8, a_tiles, LO_SCALE=float(lo_scale), WITH_LO=with_lo, BR=br, BC=bc,
        num_warps=_PASS_WARPS)
    return a_hi, a_lo, b_hi, b_lo, amax




def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


# 2^11: |x - hi| <= 2^-11 |x|, so the scaled lo has about x's magnitude and stays a normal fp16 number.
SCALE = tl.constexpr(2048.0)


# --- the method: a persistent GEMM on the fp16 splits, fed by TMA ---------------------------------------------

# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).  tcec keeps three 128x128 fp32 tiles in registers (acc, the
# corrections, the fresh hi*hi chunk): 192 of a thread's registers at 8 warps, so 128x128 is its widest tile.
# At 4 warps (64x128) two programs share an SM.  tcec's registers with C / without (ptxas -v, sm_90a, offline;
# no spills) and shared memory.
TMA_CONFIGS = [
    _config(128, 128, 64, 8, 3),   # 228 / 207 regs, 213016 bytes
    _config(128, 128, 32, 8, 4),   # 232 / 203 regs, 147488 bytes
    _config(64, 128, 32, 4, 4),    # 223 / 221 regs, 106528 bytes: the autotuner's pick near 1000^3 on an H100
]
TMA_INTERPRETER_CONFIG = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)


@triton.jit
def _add_rn(x, y, ASM: tl.constexpr):
    """x + y rounded to nearest, as an add.rn.f32 the compiler cannot fold into a tensor-core accumulator."""
    if ASM:
        return tl.inline_asm_elementwise("add.rn.f32 $0, $1, $2;", "=f,f,f", [x, y], dtype=tl.float32,
                                         is_pure=True, pack=1)
    else:   # the interpreter runs no PTX (and folds nothing)
        return x + y


@triton.jit
def tcec_tma_kernel(A_hi, A_lo, B_hi, B_lo, C, D, AMAX, M, N, K, lda8, ldb8, ldc, ldd, alpha, beta,
                    HAS_C: tl.constexpr, SPLIT: tl.constexpr, ASM: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """Persistent: program p of P takes tiles p, p + P, ...; k-tiles of the splits (pitches lda8 * 8, ldb8 * 8)
    arrive by TMA, through descriptors of their [M, K] and [K, N] corners (zeros past them) built here, so that
    their boxes follow the config.  The outputs of lines holding an inf or a NaN are left to tma_fixup_kernel."""
    # tcec promotes hi*hi every PART_K of k (two k16 steps inside the tensor core, whose adds truncate): its boxes
    # are PART_K deep, PARTS of them a k-tile.
    PARTS: tl.constexpr = 2 if SPLIT == "tcec" and BLOCK_K >= 32 else 1
    PART_K: tl.constexpr = BLOCK_K // PARTS
    ah_desc = tl.make_tensor_descriptor(A_hi, shape=[M, K], strides=[lda8 * 8, 1], block_shape=[BLOCK_M, PART_K])
    bh_desc = tl.make_tensor_descriptor(B_hi, shape=[K, N], strides=[ldb8 * 8, 1], block_shape=[PART_K, BLOCK_N])
    if SPLIT != "nocorr":
        al_desc = tl.make_tensor_descriptor(A_lo, shape=[M, K], strides=[lda8 * 8, 1], block_shape=[BLOCK_M, PART_K])
        bl_desc = tl.make_tensor_descriptor(B_lo, shape=[K, N], strides=[ldb8 * 8, 1], block_shape=[PART_K, BLOCK_N])
    start = tl.program_id(0)
    programs = tl.num_programs(0)
    n_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    tile_out = start - programs   # the epilogue's own tile counter, as stage 13's
    for tile in tl.range(start, n_tiles, programs, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        cc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for kt in range(k_tiles):
            k = kt * BLOCK_K
            if SPLIT == "nocorr":
                acc = tl.dot(ah_desc.load([off_m, k]), bh_desc.load([k, off_n]), acc, out_dtype=tl.float32)
            elif SPLIT == "markidis":
                a_hi = ah_desc.load([off_m, k])
                b_hi = bh_desc.load([k, off_n])
                a_lo = al_desc.load([off_m, k])
                b_lo = bl_desc.load([k, off_n])
                acc = tl.dot(a_hi, b_hi, acc, out_dtype=tl.float32)
                acc = tl.dot(a_lo, b_hi, acc, out_dtype=tl.float32)
                acc = tl.dot(a_hi, b_lo, acc, out_dtype=tl.float32)
            else:
                for part in tl.static_range(PARTS):
                    kp = k + part * PART_K
                    a_hi = ah_desc.load([off_m, kp])
                    b_hi = bh_desc.load([kp, off_n])
                    a_lo = al_desc.load([off_m, kp])
                    b_lo = bl_desc.load([kp, off_n])
                    hh = tl.dot(a_hi, b_hi, out_dtype=tl.float32)      # a fresh tensor-core accumulator
                    cc = tl.dot(a_lo, b_hi, cc, out_dtype=tl.float32)  # the corrections: over all K
                    cc = tl.dot(a_hi, b_lo, cc, out_dtype=tl.float32)
                    acc = _add_rn(acc, hh, ASM)                        # the promotion, round to nearest
        tile_out += programs
        pid_m, pid_n = grouped_tile(tile_out, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
        cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
        ea = scale_exponent(tl.load(AMAX + rows, mask=rows < M, other=0))
        eb = scale_exponent(tl.load(AMAX + M + cols, mask=cols < N, other=0))
        if SPLIT == "tcec":
            acc = acc + cc * (1.0 / SCALE)
        acc = unscale(acc, ea[:, None] + eb[None, :])
        # Stored in four BLOCK_N/4-wide pieces: the layout change before each store (for coalescing) then
        # takes a quarter of the tile's shared memory, which leaves room for a third ring slot.
        left, right = _halves(acc)
        q0, q1 = _halves(left)
        q2, q3 = _halves(right)
        Q: tl.constexpr = BLOCK_N // 4
        _store_cols(q0, pid_n * BLOCK_N, rows, C, D, M, N, ldc, ldd, alpha, beta, HAS_C)
        _store_cols(q1, pid_n * BLOCK_N + Q, rows, C, D, M, N, ldc, ldd, alpha, beta, HAS_C)
        _store_cols(q2, pid_n * BLOCK_N + 2 * Q, rows, C, D, M, N, ldc, ldd, alpha, beta, HAS_C)
        _store_cols(q3, pid_n * BLOCK_N + 3 * Q, rows, C, D, M, N, ldc, ldd, alpha, beta, HAS_C)


@triton.jit
def _halves(x):
    """x's left and right halves (columns)."""
    return tl.split(tl.permute(tl.reshape(x, (x.shape[0], 2, x.shape[1] // 2)), (0, 2, 1)))


@triton.jit
def _store_cols(x, col0, rows, C, D, M, N, ldc, ldd, alpha, beta, HAS_C: tl.constexpr):
    """D[rows, col0 ...] = alpha * x + beta * C there, masked to M x N."""
    cols = (col0 + tl.arange(0, x.shape[1])).to(tl.int64)
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    store_tile(x, alpha, beta, C, D, rows[:, None], cols[None, :], mask, ldc, ldd, HAS_C)


@triton.jit
def tma_fixup_kernel(A, B, C, D, AMAX, M, N, K, sam, sak, sbk, sbn, ldc, ldd, alpha, beta, HAS_C: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """nonfinite_fixup for A and B of any strides, one program per tile of D: where a row of A or a column of B
    holds an inf or a NaN, D = alpha * sum_k A[i, k] B[k, j] + beta * C in fp32, k in order.  A launch of its
    own: inside the GEMM its never-run loop made ptxas spill (255 registers).  Other tiles load their maxima
    and exit."""
    rows, cols = tile_rows_cols(tl.program_id(0), N, BLOCK_M, BLOCK_N)
    in_m, in_n = rows < M, cols < N
    bad = ((tl.load(AMAX + rows, mask=in_m, other=0) >= INF_BITS)[:, None]
           | (tl.load(AMAX + M + cols, mask=in_n, other=0) >= INF_BITS)[None, :])
    if tl.max(tl.max(bad.to(tl.int32), axis=1), axis=0) > 0:
        s = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for k in range(0, K):
            a = tl.load(A + rows * sam + k * sak, mask=in_m, other=0.0)
            b = tl.load(B + k * tl.cast(sbk, tl.int64) + cols * sbn, mask=in_n, other=0.0)
            s += a[:, None] * b[None, :]
        store_tile(s, alpha, beta, C, D, rows[:, None], cols[None, :], bad & in_m[:, None] & in_n[None, :], ldc, ldd,
                   HAS_C)


_TMA_KEY = ["M", "N", "K", "SPLIT", "HAS_C"]
_tuned_tma = triton.autotune(configs=TMA_CONFIGS, key=_TMA_KEY)(tcec_tma_kernel)
_FIXUP_TILE = 64


@functools.lru_cache(maxsize=None)
def _sm_count(device) -> int:
    """The persistent grid's size: one program per SM (4 on the interpreter, so that each walks several tiles)."""
    import torch
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4


def tma_splits(p, split: str):
    """tcec_presplit for `split` ("tcec", "markidis" or "nocorr"), after the checks the TMA form needs."""
    import torch
    name = f"triton:15_tcec ({split}, TMA)"
    if p.a.dtype != torch.float32 or p.b.dtype != torch.float32:
        raise ValueError(f"{name}: takes fp32 A and B, got {p.a.dtype} and {p.b.dtype}")
    if p.a.device.type == "cuda" and torch.cuda.get_device_capability(p.a.device)[0] < 9:
        raise ValueError(f"{name}: needs TMA and wgmma (sm_90 or later)")
    return tcec_presplit(p, lo_scale=1.0 if split == "markidis" else SCALE.value, with_lo=split != "nocorr")


def tma_gemm(p, split: str, splits):
    """The persistent GEMM on tma_splits(p, split), then the fix-up of inf/NaN lines."""
    import torch
    M, N, K = p.mnk
    a_hi, a_lo, b_hi, b_lo, amax = splits
    a_lo = a_hi if a_lo is None else a_lo   # nocorr: placeholders, never loaded
    b_lo = b_hi if b_lo is None else b_lo
    c = p.c if p.c is not None else p.out   # a placeholder pointer when HAS_C=False: never read
    sms = _sm_count(p.a.device)
    args = dict(A_hi=a_hi, A_lo=a_lo, B_hi=b_hi, B_lo=b_lo, C=c, D=p.out, AMAX=amax, M=M, N=N, K=K,
                lda8=a_hi.stride(0) // 8, ldb8=b_hi.stride(0) // 8, ldc=c.stride(0), ldd=p.out.stride(0),
                alpha=p.alpha, beta=p.beta, HAS_C=p.c is not None, SPLIT=split, ASM=not interpreting())
    # One program per SM; two for 64-row tiles (4 warps: half the registers and shared memory).
    grid = lambda cfg: (min(sms * (2 if cfg["BLOCK_M"] == 64 else 1),
                            triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])),)

    def run():   # the descriptors live in Triton's global scratch: 128 bytes a program each
        triton.set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=p.a.device))
        if interpreting():
            return tcec_tma_kernel[grid(TMA_INTERPRETER_CONFIG)](**args, **TMA_INTERPRETER_CONFIG)
        return _tuned_tma[grid](**args)
    kernel = contextvars.copy_context().run(run)   # the caller's allocator (or none) stays
    fix = (triton.cdiv(M, _FIXUP_TILE) * triton.cdiv(N, _FIXUP_TILE),)
    check_grid(f"triton:15_tcec ({split}, TMA)", fix[0])
    tma_fixup_kernel[fix](p.a, p.b, c, p.out, amax, M, N, K, p.a.stride(0), p.a.stride(1), p.b.stride(0),
                          p.b.stride(1), c.stride(0), p.out.stride(0), p.alpha, p.beta, HAS_C=p.c is not None,
                          BLOCK_M=_FIXUP_TILE, BLOCK_N=_FIXUP_TILE, num_warps=4)
    return kernel


def _launch_tma(p, split: str):
    return tma_gemm(p, split, tma_splits(p, split))


def gemm_tcec_tma(p):
    """fp16x3-tcec on TMA: split passes, hi*hi promoted per k-tile, corrections in their own accumulator."""
    return _launch_tma(p, "tcec")


def gemm_markidis_tma(p):
    """fp16x3-markidis on TMA: lo unscaled, all three products in one tensor-core accumulator."""
    return _launch_tma(p, "markidis")


def gemm_nocorr_tma(p):
    """fp16-inputs on TMA: hi only."""
    return _launch_tma(p, "nocorr")


# --- the shootout's 3xTF32 form (gemm_tf32): a split in registers, tile by tile ------------------------------

# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages); the splits are fp32, twice the bytes per k of the fp16 ones.
# ptxas -v (sm_90a, offline): 255 registers and spills in every config, from the inlined nonfinite_fixup (without
# it: 216 registers at BLOCK_K 32, 191-199 at 16, no spills).  Shared memory per config below.
TF32_CONFIGS = [
    _config(128, 128, 32, 8, 3),   # 98304 bytes
    _config(128, 128, 32, 8, 4),   # 131072 bytes
    _config(128, 128, 16, 8, 4),   # 65536 bytes
]
# The interpreter (CPU tests) cannot benchmark, so it runs one small config (tl.dot needs dims >= 16).
INTERPRETER_CONFIG = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)


@triton.jit
def _round_tf32(x):
    # Round to TF32 (10 mantissa bits), to nearest with ties away from zero: what cvt.rna.tf32.f32 does, as
    # integer ops so the interpreter runs it too.  The carry from bit 12 moves into the exponent when it
    # must.  NaN passes through untouched: a payload of all ones would otherwise carry into the sign.
    bits = x.to(tl.uint32, bitcast=True)
    r = ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return tl.where(x == x, r, x)


@triton.jit
def _split_tf32(x):
    hi = _round_tf32(x)
    lo = _round_tf32(x - hi)   # exact difference; the tensor core would truncate it, so round it here
    return hi, lo


@triton.jit
def tf32_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX,
                HAS_C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr):
    """One program per BLOCK_M x BLOCK_N tile of D: fp32 tiles of A and B loaded (num_stages pipelines both
    loads via cp.async), split into TF32 hi and lo in registers, three TF32 products per k-tile in a fresh
    accumulator, added into the fp32 sum with round-to-nearest adds.  AMAX (tcec_amax) only finds the lines
    holding an inf or a NaN: TF32 keeps fp32's exponent range, so nothing is scaled."""
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    in_m = rows[:, None] < M
    in_n = cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    step_b = BLOCK_K * tl.cast(ldb, tl.int64)
    amax_a = tl.load(AMAX + rows, mask=rows < M, other=0)
    amax_b = tl.load(AMAX + M + cols, mask=cols < N, other=0)
    acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)   # D^T: see below
    for k0 in range(0, K, BLOCK_K):
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0.0)
        a_hi, a_lo = _split_tf32(a)
        b_hi, b_lo = _split_tf32(b)
        # D^T = B^T A^T: the split A tile, K-contiguous, becomes the shared-memory operand that TF32 wgmma
        # needs K-major; B^T goes from registers.  Corrections first, then hi*hi on top, one chunk per k-tile.
        chunk = tl.dot(tl.trans(b_hi), tl.trans(a_lo), input_precision="tf32", out_dtype=tl.float32)
        chunk = tl.dot(tl.trans(b_lo), tl.trans(a_hi), chunk, input_precision="tf32", out_dtype=tl.float32)
        chunk = tl.dot(tl.trans(b_hi), tl.trans(a_hi), chunk, input_precision="tf32", out_dtype=tl.float32)
        acc += chunk   # the promotion: one round-to-nearest fp32 add per element per k-tile
        a_ptrs += BLOCK_K
        b_ptrs += step_b
    acc = tl.trans(acc)
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)
    bad = (amax_a[:, None] >= INF_BITS) | (amax_b[None, :] >= INF_BITS)
    nonfinite_fixup(A, B, C, D, rows, cols, bad, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C)


_tuned_tf32 = triton.autotune(configs=TF32_CONFIGS, key=["M", "N", "K"])(tf32_kernel)


def gemm_tf32(p):
    """tf32x3: hi = tf32(x), lo = tf32(x - hi), three TF32 products, promoted like gemm_tcec_tma's hi*hi."""
    check_grid("triton:15_tcec (tf32)", max_tiles(p, TF32_CONFIGS))
    return launch_autotuned(tf32_kernel, _tuned_tf32, p, INTERPRETER_CONFIG, AMAX=tcec_amax(p))


# --- what the study's tooling reads ------------------------------------------------------------------------

KERNEL = tcec_tma_kernel   # the method's GEMM
_TMA_SPLIT = {"gemm_tcec_tma": "tcec", "gemm_markidis_tma": "markidis", "gemm_nocorr_tma": "nocorr"}


def variants(entry: str) -> list[dict]:
    """Every compile-time variant of `entry`'s GEMM kernel (tcec_tma_kernel's, tf32_kernel's for gemm_tf32):
    each autotuner config's parameters and options, plus the constexprs the launcher adds."""
    if entry == "gemm_tf32":
        return config_variants(TF32_CONFIGS)
    split = _TMA_SPLIT[entry]
    return config_variants(TMA_CONFIGS, SPLIT=split, ASM=True)
