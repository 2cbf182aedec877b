"""Stage 14 (Triton) - TCEC: fp32 GEMM on fp16 tensor cores with error correction.

Technique:  each fp32 input x is split in registers into two fp16 numbers, hi = fp16(x) and
            lo = fp16((x - hi) * 2^11), so that x = hi + lo / 2^11 to about 22 bits.  D = A @ B is then
            three fp16 tensor-core products, hi_A hi_B + (lo_A hi_B + hi_A lo_B) / 2^11, with lo_A lo_B
            (2^-22 of the result) dropped.  The tensor cores' own accumulation rounds toward zero, so a long
            K run summed inside them loses a bit per step and drifts (relerr ~5e-6 at 4096^3, 4x cuBLAS
            SGEMM's).  So each k-tile (BLOCK_K = 32..64, 2-4 k16 steps) is a fresh tensor-core chunk - the
            two corrections first, scaled by the exact 2^-11, then hi·hi on top - and the chunk is added
            into the fp32 accumulator with a round-to-nearest fp32 add on the CUDA cores (DeepGEMM-style
            promotion).  gemm_markidis, gemm_nocorr and gemm_tf32 are the same kernel with another split.
Reproduces: seed 002 (Ootomo & Yokota, WMMAe-TCEC), section 4.4: its eqs. (6)-(7) - the split with the 2^11
            scale that keeps lo out of fp16 subnormals, the product without lo·lo, and the accumulation
            kept out of the tensor cores' round-toward-zero (the paper's "avoiding the rounding inside
            Tensor Cores, RZ").  Markidis et al. 2018 (lo unscaled, everything in one tensor-core
            accumulator) is gemm_markidis, the method the paper improves on.
Changed:    the ladder up to stage 09 was fp32 FMAs on the CUDA cores.  Now the multiplies run on the
            tensor cores (wgmma on sm_90), in three fp16 products per k-tile, and the CUDA cores only split
            the operands and promote the chunks.
Why faster: fp16 wgmma issues ~15x the multiply-adds per clock of fp32 FMA, so even three products with the
            split and the promotion on the CUDA cores beat SGEMM's ceiling.  Prediction was >= 2x cuBLAS.
            Measured (H100 SXM, 4096^3, this file's kernel timed config by config; cuBLAS SGEMM 52.0
            TFLOP/s, relerr 1.15e-6): 134 TFLOP/s (2.6x cuBLAS) at relerr 2.0e-7, six times more accurate
            than SGEMM itself.  Markidis 141 TFLOP/s at 1.45e-5; fp16 inputs alone 243 at 2.9e-4;
            3xTF32 72 (1.4x) at 2.4e-7.

What the compiler made of it (Triton 3.6, sm_90, compiled offline with 16-byte aligned operands; a
128x128x64 tile, 8 warps = 2 warpgroups, one per 64 rows):
* The A tile is split in registers and fed to wgmma from registers (the RS form); the B tile is staged as
  fp32 in shared memory by cp.async (16-byte copies), read back, split, and written as two fp16 tiles to a
  128-byte-swizzled buffer that wgmma reads.  Per k-tile each warpgroup issues 12
  wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16: 4 for lo_A hi_B into a fresh accumulator (scale-d
  off), 4 for hi_A lo_B, 4 for hi_A hi_B, each product closed by wgmma.wait_group 0.  Between them the
  chunk is scaled (64 mul.f32 by 2^-11, exact); after the last wait come the 64 add.f32 (round to nearest)
  into the fp32 accumulator: the promotion lands on the CUDA cores, outside every wgmma.
* Why not `acc += tl.dot(a, b)`: Triton's combine pass rewrites add(dot(a, b, 0), acc) into
  dot(a, b, acc), which puts the sum back inside the tensor core (measured: the same 4.9e-6 as one
  accumulator).  Here the chunk's dot starts from the scaled corrections, not from a zero, so the pattern
  does not match and the add stays an add.  No inline asm and no wait beyond the ones Triton inserts.
* Every dot waits (wait_group 0) before the next: a B operand written to shared memory inside the loop is
  not multi-buffered, so Triton will not leave its wgmma in flight.  The two warpgroups and the cp.async
  prefetch overlap what is left.
* 3xTF32 (gemm_tf32) computes the transposed product D^T = B^T A^T: TF32 wgmma needs both shared-memory
  operands K-major, and B is N-contiguous in memory.  Written straight (hi_A from registers, B split into
  shared memory), Triton stored B's splits transposed with bank conflicts: 36 TFLOP/s, the same as
  Triton's own input_precision="tf32x3".  Transposed, the split A tile (K-contiguous) is the shared
  operand and B^T the register one: 72 TFLOP/s.  wgmma.mma_async...m64n128k8.f32.tf32.tf32, 12 per k-tile
  of 32.
* Registers and spills per config are listed beside the config lists below.
Ragged edges: masked loads give zeros outside M, N and K (zeros split into zeros, so the padding adds
            nothing); masked stores; beta == 0 (HAS_C=False) compiles no load of C.  Offsets are 64-bit.
Input range: the fp16 splits need |x| <= 65504: beyond it hi is inf and D gets inf or NaN, never a finite
            wrong number.  Below fp16's normal range (|x| < 2^-14 for hi, about 2^-25 for lo) bits are lost
            gradually, as the paper notes: scale such data first.  The TF32 split keeps fp32's exponent
            range (only |x| within 2^-12 of FLT_MAX rounds up to inf).
Against the CUDA stage (cuda_kernels/14_tcec.cu): that one uses mma.sync m16n8k16 with ldmatrix, 128x128
tiles, and promotes after every k16 step; here wgmma (Hopper's warpgroup MMA) does 64 rows per warpgroup,
and the promotion interval is a whole k-tile (32-64 k) because Triton exposes no finer handle on the MMA
chain.  The measured error is no worse for it: four truncated k16 steps per chunk cost far less than the
RN adds into the fp32 accumulator.
"""
from __future__ import annotations

import os

import triton
import triton.language as tl

from triton_kernels._common import check_grid, epilogue, gemm_args


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).  Offline sm_90 compile of gemm_tcec, 16-byte aligned operands:
# registers, spills, shared memory.  Three 128x128 fp32 tiles (acc, chunk, scratch) leave no room for
# 128x256 tiles without spills.
FP16_CONFIGS = [
    _config(128, 128, 64, 8, 3),   # 235 regs, no spills, 160 KB: the fastest at 4096^3
    _config(128, 128, 32, 8, 3),   # 193 regs, no spills, 80 KB
    _config(64, 128, 32, 4, 3),    # 178 regs, no spills, 64 KB: twice the programs for small outputs
]
# gemm_tf32 (transposed product, fp32 tiles: twice the shared memory per k of the fp16 splits).
TF32_CONFIGS = [
    _config(128, 128, 32, 8, 3),   # 216 regs, no spills, 96 KB
    _config(128, 128, 32, 8, 4),   # 216 regs, no spills, 128 KB
    _config(128, 128, 16, 8, 4),   # 199 regs, no spills, 72 KB
]
# The interpreter (CPU tests) cannot benchmark, so it runs one small config (tl.dot needs dims >= 16).
INTERPRETER_CONFIG = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)

SCALE = tl.constexpr(2048.0)   # 2^11: lo = (x - hi) * 2^11 starts where fp16's normal range does for |x| near 1


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
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: GROUP_M row-tiles take each column sweep together, so their B tiles are still in L2.
    width = GROUP_M * grid_n
    group = pid // width
    first_m = group * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % group_m
    pid_n = (pid % width) // group_m

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
            # Markidis et al.: lo unscaled (it falls into fp16 subnormals once |x| < 2^-3) and every product
            # summed inside the tensor cores' truncating accumulator.
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
