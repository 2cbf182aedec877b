"""Baseline (Triton) - the tuned Triton matmul: tl.dot on tensor cores, autotuned, tutorial style.

Technique:  the Triton tutorial's matmul (03-matrix-multiplication): BLOCK_M x BLOCK_N tiles, a K loop of
            tl.dot that Triton software-pipelines across `num_stages` shared-memory buffers, grouped
            ("super-grouped") program order for L2 reuse, masked ragged edges, and @triton.autotune over
            tile shapes, pipeline depth and warps.  It is the bar the hand-written Triton stages climb to.
Precision:  named, never defaulted.  tl.dot on fp32 inputs would silently use TF32; here the fp32 entry
            passes input_precision="ieee" (true fp32 FMA, no tensor cores), and a separate "tf32" entry asks
            for TF32 by name, and a "tf32x3" entry (stage 15's baseline) asks for Triton's three-product TF32
            split.  fp16/bf16 inputs accumulate in fp32 and round once at the store.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import config_variants, epilogue, grouped_tile, launch_autotuned

# Configs from the Triton tutorial's CUDA list (kept small: the sweep autotunes every new shape).
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=4, num_warps=4),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}, num_stages=5, num_warps=2),
]
# The interpreter (CPU tests) cannot benchmark, so it runs one small config.
INTERPRETER_CONFIG = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=4)


@triton.jit
def matmul_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                  HAS_C: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION, out_dtype=tl.float32)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * ldb
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


tuned_kernel = triton.autotune(configs=CONFIGS, key=["M", "N", "K", "INPUT_PRECISION"])(matmul_kernel)


def _launch(p, precision: str):
    return launch_autotuned(matmul_kernel, tuned_kernel, p, INTERPRETER_CONFIG, INPUT_PRECISION=precision)


_PRECISION = {"gemm_ieee": "ieee", "gemm_tf32": "tf32", "gemm_tf32x3": "tf32x3"}
KERNEL = matmul_kernel


def variants(entry: str) -> list[dict]:
    """Every compile-time variant `entry` may launch (for the offline precision check in the tests)."""
    return config_variants(CONFIGS, INPUT_PRECISION=_PRECISION[entry])


def gemm_ieee(p):
    """fp32 inputs: true fp32 (input_precision="ieee"); fp16/bf16: exact products, fp32 accumulation."""
    return _launch(p, "ieee")


def gemm_tf32(p):
    """fp32 inputs rounded to TF32 on the tensor cores - a different precision, so a different entry."""
    return _launch(p, "tf32")


def gemm_tf32x3(p):
    """fp32 inputs as three TF32 products (Triton's own hi/lo split): stage 15's baseline (seed 002)."""
    return _launch(p, "tf32x3")
