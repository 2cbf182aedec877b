"""Stage 15 (Triton) - TCEC: fp32 GEMM on fp16 tensor cores with error correction.

Technique:  each fp32 input x is split in registers into two fp16 numbers, hi = fp16(x) and
            lo = fp16((x - hi) * 2^11), so that x = hi + lo / 2^11 to about 22 bits.  D = A @ B becomes
            three fp16 tensor-core products, hi_A hi_B + (lo_A hi_B + hi_A lo_B) / 2^11; lo_A lo_B is
            dropped.  The tensor cores' own accumulation rounds toward zero, so each k-tile is one chunk in
            a fresh tensor-core accumulator (the two corrections first, scaled by the exact 2^-11, then
            hi*hi on top), added into the fp32 accumulator with a round-to-nearest add on the CUDA cores
            (DeepGEMM-style promotion).  gemm_markidis, gemm_nocorr and gemm_tf32 are the same kernel with
            another split (SPLIT); gemm_tf32 computes D^T = B^T A^T, since TF32 wgmma wants both shared-
            memory operands K-major.
Reproduces: seed 002 (Ootomo & Yokota, WMMAe-TCEC), section 4.4, eqs. (6)-(7): the 2^11-scaled split, the
            product without lo*lo, and the sum kept out of the tensor cores' RZ.  gemm_markidis is the
            method it improves on (Markidis et al. 2018); gemm_nocorr is hi alone; gemm_tf32 our own 3xTF32.
Changed:    stages 01-09 were fp32 FMAs on the CUDA cores.  Now the multiplies run on the tensor cores
            (wgmma, sm_90), three fp16 products per k-tile; the CUDA cores split the operands and promote.
Why faster: fp16 wgmma retires ~15x the multiply-adds per clock of fp32 FMA, so three products plus the
            split and the promotion still clear SGEMM's ceiling.  Predicted >= 2x cuBLAS SGEMM at its
            error; measured 2.2x (111.3 TFLOP/s at 4096^3, H100, the scaling pass included;
            reports/h100/results.csv).
Ragged edges: masked loads give zeros outside M, N and K (zeros split into zeros); masked stores; beta == 0
            (HAS_C=False) compiles no load of C.  Offsets are 64-bit.
Alignment:  none required: odd views get 4-byte copies (and some spills): correct, slower.
Input range: fp32's.  A first pass (tcec_amax, triton_kernels/_common.py) finds each row of A's and column of
            B's largest |x|; the kernel multiplies row i by 2^ea and column j by 2^eb (exact) so that every
            fp16 split sees its line's largest |x| in [2^14, 2^15), and the epilogue multiplies back by
            2^-(ea + eb).  A value more than ~2^29 below its line's largest keeps fewer bits (fp16 subnormals).
            Rows and columns holding an inf or a NaN are recomputed in fp32 (nonfinite_fixup), so inf and NaN
            come out as SGEMM's.  The TF32 split keeps fp32's range unscaled.
Compiles to (Triton 3.6, sm_90, 128x128x64, 8 warps): A is split in wgmma's register-operand layout, B's hi
            and lo are written to a 128-byte-swizzled shared buffer; per k-tile each warpgroup issues 12
            wgmma m64n128k16, each closed by wait_group 0, then 64 add.f32.  The chunk's last dot starts
            from the scaled corrections, not from zero, so Triton's combine pass cannot fold the add back
            into the tensor core.
"""
from __future__ import annotations

import contextvars
import functools

import triton
import triton.language as tl

from triton_kernels._common import (INF_BITS, check_grid, config_variants, epilogue, grouped_tile, interpreting,
                                    launch_autotuned, max_tiles, nonfinite_fixup, pow2, scale_exponent, store_tile,
                                    tcec_amax, tcec_presplit, tile_rows_cols, unscale)


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages), shared by tcec, markidis and nocorr.  Registers for tcec /
# markidis / nocorr (16-byte aligned, beta == 0; the H100 run reported the same), none spilling; shared
# memory; TFLOP/s at 4096^3 on an H100, same order.  acc and the chunk, two 128x128 fp32 tiles, already
# take 128 registers per thread at 8 warps: 128x256 would spill.
FP16_CONFIGS = [
    _config(128, 128, 64, 8, 3),   # 235 / 217 / 181 regs, 160 KB; 134 / 139 / 244
    _config(128, 128, 32, 8, 3),   # 193 / 148 / 128 regs, 80 KB;  120 / 140 / 267
    _config(64, 128, 32, 4, 3),    # 178 / 158 / 129 regs, 64 KB;  103 / 123 / 183: small outputs
]
# gemm_tf32 (the transposed product; its splits are fp32, twice the bytes per k of the fp16 ones).
TF32_CONFIGS = [
    _config(128, 128, 32, 8, 3),   # 216 regs, no spills, 96 KB; 72.9 TFLOP/s
    _config(128, 128, 32, 8, 4),   # 216 regs, no spills, 128 KB; 72.4
    _config(128, 128, 16, 8, 4),   # 199 regs, no spills, 64 KB; 69.1
]
# The interpreter (CPU tests) cannot benchmark, so it runs one small config (tl.dot needs dims >= 16).
INTERPRETER_CONFIG = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)

# 2^11: |x - hi| <= 2^-11 |x|, so the scaled lo has about x's magnitude and stays a normal fp16 number.
SCALE = tl.constexpr(2048.0)


@triton.jit
def _split_fp16(x, LO_SCALE: tl.constexpr):
    hi = x.to(tl.float16)                            # round to nearest even
    lo = ((x - hi.to(tl.float32)) * LO_SCALE).to(tl.float16)   # x - hi is exact in fp32
    return hi, lo


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
def tcec_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, AMAX,
                HAS_C: tl.constexpr, SPLIT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    in_m = rows[:, None] < M
    in_n = cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    step_b = BLOCK_K * tl.cast(ldb, tl.int64)
    # Exact power-of-two scales (see triton_kernels/_common.py): row i of A times 2^ea[i], column j of B times
    # 2^eb[j], so every fp16 split sees its line's largest |x| in [2^14, 2^15).  TF32 keeps fp32's range: no scale.
    amax_a = tl.load(AMAX + rows, mask=rows < M, other=0)
    amax_b = tl.load(AMAX + M + cols, mask=cols < N, other=0)
    if SPLIT != "tf32":
        ea = scale_exponent(amax_a)
        eb = scale_exponent(amax_b)
        scale_a = pow2(ea)[:, None]
        scale_b = pow2(eb)[None, :]
    if SPLIT == "tf32":
        acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)   # D^T: see the header
    else:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):   # num_stages (launch option) pipelines both loads via cp.async
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0.0)
        if SPLIT != "tf32":
            a = a * scale_a
            b = b * scale_b
        if SPLIT == "nocorr":
            acc = tl.dot(a.to(tl.float16), b.to(tl.float16), acc, out_dtype=tl.float32)
        elif SPLIT == "markidis":
            # Markidis et al.: lo unscaled (it falls into fp16 subnormals once |x| is below about 2^-2) and
            # every product summed inside the tensor cores' truncating accumulator.
            a_hi, a_lo = _split_fp16(a, 1.0)
            b_hi, b_lo = _split_fp16(b, 1.0)
            acc = tl.dot(a_hi, b_hi, acc, out_dtype=tl.float32)
            acc = tl.dot(a_lo, b_hi, acc, out_dtype=tl.float32)
            acc = tl.dot(a_hi, b_lo, acc, out_dtype=tl.float32)
        elif SPLIT == "tcec":
            a_hi, a_lo = _split_fp16(a, SCALE)
            b_hi, b_lo = _split_fp16(b, SCALE)
            # One chunk per k-tile, in a fresh tensor-core accumulator: corrections first, brought to scale
            # (exact), then hi·hi on top.  Starting the last dot from a non-zero value is also what keeps
            # Triton from folding the add below into the MMA accumulator.
            chunk = tl.dot(a_lo, b_hi, out_dtype=tl.float32)
            chunk = tl.dot(a_hi, b_lo, chunk, out_dtype=tl.float32)
            chunk = tl.dot(a_hi, b_hi, chunk * (1.0 / SCALE), out_dtype=tl.float32)
            acc += chunk   # the promotion: one round-to-nearest fp32 add per element per k-tile
        else:
            a_hi, a_lo = _split_tf32(a)
            b_hi, b_lo = _split_tf32(b)
            # D^T = B^T A^T: the split A tile, K-contiguous, becomes the shared-memory operand that TF32
            # wgmma needs K-major; B^T goes from registers.  No scale: TF32 has fp32's exponent range.
            chunk = tl.dot(tl.trans(b_hi), tl.trans(a_lo), input_precision="tf32", out_dtype=tl.float32)
            chunk = tl.dot(tl.trans(b_lo), tl.trans(a_hi), chunk, input_precision="tf32", out_dtype=tl.float32)
            chunk = tl.dot(tl.trans(b_hi), tl.trans(a_hi), chunk, input_precision="tf32", out_dtype=tl.float32)
            acc += chunk
        a_ptrs += BLOCK_K
        b_ptrs += step_b
    if SPLIT == "tf32":
        acc = tl.trans(acc)
    else:
        acc = unscale(acc, ea[:, None] + eb[None, :])
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)
    bad = (amax_a[:, None] >= INF_BITS) | (amax_b[None, :] >= INF_BITS)
    nonfinite_fixup(A, B, C, D, rows, cols, bad, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C)


_KEY = ["M", "N", "K", "SPLIT"]
_tuned_fp16 = triton.autotune(configs=FP16_CONFIGS, key=_KEY)(tcec_kernel)
_tuned_tf32 = triton.autotune(configs=TF32_CONFIGS, key=_KEY)(tcec_kernel)
_SPLIT = {"gemm_tcec": "tcec", "gemm_markidis": "markidis", "gemm_nocorr": "nocorr", "gemm_tf32": "tf32"}


def _configs(split: str) -> list:
    return TF32_CONFIGS if split == "tf32" else FP16_CONFIGS


def _launch(p, split: str):
    check_grid(f"triton:15_tcec ({split})", max_tiles(p, _configs(split)))
    tuned = _tuned_tf32 if split == "tf32" else _tuned_fp16
    return launch_autotuned(tcec_kernel, tuned, p, INTERPRETER_CONFIG, AMAX=tcec_amax(p), SPLIT=split)


KERNEL = tcec_kernel


def variants(entry: str) -> list[dict]:
    """Every compile-time variant `entry` may launch (for the offline precision check in the tests)."""
    split = _SPLIT[entry]
    return config_variants(_configs(split), SPLIT=split)


def gemm_tcec(p):
    """fp16x3-tcec: scaled split, each k-tile's chunk promoted into fp32 with round-to-nearest adds."""
    return _launch(p, "tcec")


def gemm_markidis(p):
    """fp16x3-markidis: unscaled split, all three products accumulated inside the tensor cores."""
    return _launch(p, "markidis")


def gemm_nocorr(p):
    """fp16-inputs: hi only, one fp16 product - what the correction terms are there to fix."""
    return _launch(p, "nocorr")


def gemm_tf32(p):
    """tf32x3: hi = tf32(x), lo = tf32(x - hi), three TF32 products, promoted like gemm_tcec."""
    return _launch(p, "tf32")


# --- the TMA form: split passes, then a persistent GEMM on the fp16 splits ----------------------------------

# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).  tcec keeps three 128x128 fp32 tiles in registers (acc, the
# corrections, the fresh hi*hi chunk): 192 of a thread's registers at 8 warps, so 128x128 is its widest tile.
# At 4 warps (64x128) two programs share an SM, each other's wgmmas filling the waits of one.
TMA_CONFIGS = [
    _config(128, 128, 64, 8, 3),   # 4 x 16 KB a stage
    _config(128, 128, 32, 8, 4),
    _config(64, 128, 32, 4, 4),
]
# nocorr (one accumulator, hi only: 48 KB a stage at 128x256x64) may take 128x256 tiles too.
TMA_CONFIGS_NOCORR = TMA_CONFIGS + [_config(128, 256, 64, 8, 3)]
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
    ah_desc = tl.make_tensor_descriptor(A_hi, shape=[M, K], strides=[lda8 * 8, 1], block_shape=[BLOCK_M, BLOCK_K])
    bh_desc = tl.make_tensor_descriptor(B_hi, shape=[K, N], strides=[ldb8 * 8, 1], block_shape=[BLOCK_K, BLOCK_N])
    if SPLIT != "nocorr":
        al_desc = tl.make_tensor_descriptor(A_lo, shape=[M, K], strides=[lda8 * 8, 1], block_shape=[BLOCK_M, BLOCK_K])
        bl_desc = tl.make_tensor_descriptor(B_lo, shape=[K, N], strides=[ldb8 * 8, 1], block_shape=[BLOCK_K, BLOCK_N])
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
            a_hi = ah_desc.load([off_m, k])
            b_hi = bh_desc.load([k, off_n])
            if SPLIT == "nocorr":
                acc = tl.dot(a_hi, b_hi, acc, out_dtype=tl.float32)
            elif SPLIT == "markidis":
                a_lo = al_desc.load([off_m, k])
                b_lo = bl_desc.load([k, off_n])
                acc = tl.dot(a_hi, b_hi, acc, out_dtype=tl.float32)
                acc = tl.dot(a_lo, b_hi, acc, out_dtype=tl.float32)
                acc = tl.dot(a_hi, b_lo, acc, out_dtype=tl.float32)
            else:
                a_lo = al_desc.load([off_m, k])
                b_lo = bl_desc.load([k, off_n])
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
_tuned_tma_nocorr = triton.autotune(configs=TMA_CONFIGS_NOCORR, key=_TMA_KEY)(tcec_tma_kernel)
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
        return (_tuned_tma_nocorr if split == "nocorr" else _tuned_tma)[grid](**args)
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
