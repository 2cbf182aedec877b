"""Stage 14 (Triton) - TCEC: fp32 GEMM on fp16 tensor cores with error correction.

Technique:  each fp32 input x is split in registers into two fp16 numbers, hi = fp16(x) and
            lo = fp16((x - hi) * 2^11), so that x = hi + lo / 2^11 to about 22 bits.  D = A @ B becomes
            three fp16 tensor-core products, hi_A hi_B + (lo_A hi_B + hi_A lo_B) / 2^11; lo_A lo_B (2^-22
            of the result) is dropped.  The tensor cores' own accumulation rounds toward zero, so a long K
            run summed inside them drifts (issue 6's H200 prototype: relerr 4.9e-6 at 4096^3, 4x cuBLAS SGEMM's).  So each k-tile
            (BLOCK_K = 32 or 64, 2-4 k16 steps) is one chunk in a fresh tensor-core accumulator - the two
            corrections first, scaled by the exact 2^-11, then hi·hi on top - and the chunk is added into
            the fp32 accumulator with a round-to-nearest add on the CUDA cores (DeepGEMM-style promotion).
            gemm_markidis, gemm_nocorr and gemm_tf32 are the same kernel with another split (SPLIT).
Reproduces: seed 002 (Ootomo & Yokota, WMMAe-TCEC), section 4.4, eqs. (6)-(7): the split with the 2^11
            scale that keeps lo out of fp16 subnormals, the product without lo·lo, and the sum kept out of
            the tensor cores' RZ ("avoiding the rounding inside Tensor Cores").  gemm_markidis is the method
            it improves on (Markidis et al. 2018: lo unscaled, all three products in one tensor-core
            accumulator); gemm_nocorr is hi alone; gemm_tf32 our own 3xTF32.
Changed:    stages 01-09 were fp32 FMAs on the CUDA cores.  Now the multiplies run on the tensor cores
            (wgmma, sm_90), three fp16 products per k-tile; the CUDA cores split the operands and promote.
Why faster: fp16 wgmma retires ~15x the multiply-adds per clock of fp32 FMA, so three products plus the
            split and the promotion still clear SGEMM's ceiling.  Predicted >= 2x cuBLAS at SGEMM's error.
            Measured on an H100 SXM (tools/tcec_triton_probe.py: each config launched directly, do_bench
            median, randn inputs, relerr against float64):

              M=N=K  cuBLAS SGEMM       tcec (128x128x64)      markidis           fp16 hi only       3xTF32
              4096   51.7 TF, 1.15e-6   133.8 TF 2.59x 2.0e-7  140.0 TF 1.45e-5   267.2 TF 2.9e-4    72.9 TF 2.4e-7
              8192   48.5 TF, 1.62e-6   125.1 TF 2.58x 2.5e-7  136.6 TF 2.89e-5   258.3 TF 2.9e-4    72.6 TF 3.2e-7

            TCEC is 2.6x cuBLAS SGEMM and 6-7x more accurate than it.  Markidis is as fast but 60-120x
            less accurate: its unscaled lo loses bits in fp16 subnormals and its sum truncates.
            study.sweep --quick of bc14610 (reports/, L2 flushed, autotuned): tcec 129.5 TFLOP/s, 2.49x
            cuBLAS, relerr 2.0e-7 at 4096^3; 123.0, 2.40x, 2.4e-7 at 8192^3 (SM clock 1600-1840 MHz).

What the compiler made of it (Triton 3.6, sm_90, compiled offline with 16-byte aligned operands; 128x128x64
tile, 8 warps = 2 warpgroups of 64 rows each):
* A's fp32 tile is read from the cp.async ring (16-byte copies) straight into wgmma's register-operand
  layout and split there; B's is read back, split, and its hi and lo written as fp16 to a 128-byte-swizzled
  buffer that wgmma reads from shared memory.  Per k-tile each warpgroup issues 12
  wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16: 4 for lo_A hi_B (the first with scale-d = 0: a
  fresh accumulator), 4 for hi_A lo_B, then 64 mul.f32 by 2^-11 (0f3A000000, exact), 4 for hi_A hi_B,
  each product closed by wgmma.wait_group 0; then 64 add.f32 (round to nearest) into the fp32 accumulator.
  The promotion is on the CUDA cores, outside every wgmma.
* Why not `acc += tl.dot(a, b)`: Triton's combine pass rewrites add(dot(a, b, 0), acc) into dot(a, b, acc)
  and the sum goes back inside the tensor core (a prototype measured exactly the one-accumulator 4.9e-6).  Here the
  chunk's last dot starts from the scaled corrections, not from zero, so the pattern does not match and the
  add stays an add - no inline asm, and no wait beyond those Triton inserts anyway.
* Every product waits (wait_group 0) before the next: a B operand written to shared memory inside the loop
  is not multi-buffered, so Triton will not leave its wgmma in flight (the plain fp16 product in gemm_nocorr
  waits too).  Two warpgroups and the cp.async prefetch overlap what they can.
* Tried and dropped: the corrections in their own loop-carried accumulator (three 64-register tiles: 253
  registers at BLOCK_K 32, 125 TFLOP/s; spills at 64); both corrections as one dot over a 2*BLOCK_K
  concatenation (one wait fewer, but the join/reshape shuffles cost more: 48-56); 128x128x128 (spills, 103).
* 3xTF32 (gemm_tf32) computes D^T = B^T A^T: TF32 wgmma wants both shared-memory operands K-major and B
  is N-contiguous.  Written straight, Triton wrote B's splits transposed with bank conflicts: 36 TFLOP/s,
  as fast as Triton's own input_precision="tf32x3".  Transposed, A's split (K-contiguous) is the shared
  operand and B^T comes from registers (B is staged with 4-byte cp.async, transposed): 72-73.
  wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32, 12 per k-tile of 32, the same waits and 64 add.f32.
  Rounding to TF32 is integer code (add, and.b32 0xFFFFE000), bit-exact with cvt.rna.tf32.f32.
* Registers and spills per config are beside the config lists below.  With odd views (no 16-byte
  alignment) the copies are 4-byte and most configs sit at 255 registers with up to ~300 B of spills:
  correct, slower.  The autotuner caches per (M, N, K, SPLIT), not per alignment.
Ragged edges: masked loads give zeros outside M, N and K (zeros split into zeros, so padding adds nothing);
            masked stores; beta == 0 (HAS_C=False) compiles no load of C.  Offsets are 64-bit.
Input range: the fp16 splits need |x| <= 65504: beyond it hi is inf and D gets inf or NaN, never a finite
            wrong number.  Below |x| ~ 2^-12 bits go gradually (lo's fp16 subnormals put a floor of ~2^-36
            under the split's absolute error; Markidis' unscaled lo, 2^-25): scale such data first.  The TF32 split keeps fp32's range (only |x| within 2^-12 of FLT_MAX
            rounds up to inf).
Against the CUDA stage (cuda_kernels/14_tcec.cu): both run wgmma m64n128k16 with A from registers and B from
shared memory, two warpgroups per 128x128 tile.  The CUDA stage promotes hi*hi every 4 k-tiles from its own
accumulator and keeps the corrections apart (three 64-register tiles); here a chunk is one k-tile, the
corrections are folded into it first, and every product waits.  Triton gives no handle on the MMA chain
below one tl.dot, nor on which warp copies what.  Neither promotion interval costs accuracy that shows.
"""
from __future__ import annotations

import os

import triton
import triton.language as tl

from triton_kernels._common import check_grid, epilogue, gemm_args, grouped_tile


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
def tcec_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
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
    if SPLIT == "tf32":
        acc = tl.zeros([BLOCK_N, BLOCK_M], dtype=tl.float32)   # D^T: see the header
    else:
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):   # num_stages (launch option) pipelines both loads via cp.async
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0.0)
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
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


_KEY = ["M", "N", "K", "SPLIT"]
_tuned_fp16 = triton.autotune(configs=FP16_CONFIGS, key=_KEY)(tcec_kernel)
_tuned_tf32 = triton.autotune(configs=TF32_CONFIGS, key=_KEY)(tcec_kernel)
_SPLIT = {"gemm_tcec": "tcec", "gemm_markidis": "markidis", "gemm_nocorr": "nocorr", "gemm_tf32": "tf32"}


def _configs(split: str) -> list:
    return TF32_CONFIGS if split == "tf32" else FP16_CONFIGS


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _launch(p, split: str):
    M, N, _ = p.mnk
    check_grid(f"triton:14_tcec ({split})",
               max(triton.cdiv(M, c.kwargs["BLOCK_M"]) * triton.cdiv(N, c.kwargs["BLOCK_N"]) for c in _configs(split)))
    args = gemm_args(p)
    if _interpreting():
        cfg = INTERPRETER_CONFIG
        grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
        return tcec_kernel[grid](**args, SPLIT=split, **cfg)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    tuned = _tuned_tf32 if split == "tf32" else _tuned_fp16
    return tuned[grid](**args, SPLIT=split)


KERNEL = tcec_kernel


def variants(entry: str) -> list[dict]:
    """Every compile-time variant `entry` may launch (for the offline precision check in the tests)."""
    split = _SPLIT[entry]
    return [dict(c.kwargs, SPLIT=split, num_warps=c.num_warps, num_stages=c.num_stages) for c in _configs(split)]


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
