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

import triton
import triton.language as tl

from triton_kernels._common import (INF_BITS, check_grid, config_variants, epilogue, grouped_tile, launch_autotuned,
                                    max_tiles, nonfinite_fixup, pow2, scale_exponent, tcec_amax, unscale)


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
