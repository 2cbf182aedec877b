"""Stage 09 (Triton) - best SIMT fp32: two side-by-side ieee dots per tile (16x8 per thread), pipelined,
grouped for L2, autotuned.

Technique:  a program owns a BLOCK_M x BLOCK_N tile of D as two accumulators, the left and right halves.
            Per K step it loads one BLOCK_M x BLOCK_K tile of A and two BLOCK_K x BLOCK_N/2 tiles of B and
            issues two tl.dot(..., input_precision="ieee") that share the A operand: true fp32 FMAs, no
            tensor cores.  num_stages pipelines the loads through cp.async (stage 07), programs run in
            GROUP_M-grouped order so that neighbours share A and B tiles in L2, and @triton.autotune picks
            the tile, BLOCK_K, warps and pipeline depth per shape from CONFIGS.
Reproduces: seed 000 kernels 3-5 (2-D register tiling, 16-byte loads, N-stage cp.async pipeline), seed 001
            (2D block tiling, vectorized access); the CUDA stage 09's 128x256 tile, 8 warps and 16x8
            outputs per thread.
Changed:    stage 07's one 128x128 dot gave each thread 16x4 outputs: Triton fixes an FMA dot's layout
            itself (sizePerThread capped at [4, 4], lanes along N first), and one 128x256 dot spills.  Two
            128x128 dots on one A tile give each thread 16x8 (two 16x4 blocks 128 columns apart).
Why faster: per k a thread reads 16 A values (shared by both dots) and 8 B values for 128 FMAs: shared loads
            per FFMA fall from 5/64 to 3/64.  Predicted 46-49 TFLOP/s at 4096^3; measured 43.6 TFLOP/s, 84.7% of
            cuBLAS (fp32, H100; reports/h100/results.csv).
Ragged edges: masked loads give zeros outside M, N and K (a masked cp.async copies 0 bytes); masked stores;
            beta == 0 (HAS_C=False) compiles no load of C.  Offsets are 64-bit.
Alignment:  none required: an odd view gets 4-byte copies (and the 128x256 configs spill): correct, slow.
            The autotuner caches its choice per (M, N, K), not per alignment.
Compiles to (Triton 3.6, sm_90): cp.async.cg 16-byte copies into num_stages - 1 unswizzled slots; the A
            reads are warp-uniform and ptxas merges all shared loads into LDS.128; registers per config are
            listed beside CONFIGS.  The gap to CUDA 09 lies in how the K loop's instructions are scheduled,
            not in how many there are (ncu), and plain Triton leaves that order to the compiler.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import check_grid, config_variants, epilogue, grouped_tile, launch_autotuned, max_tiles


def _config(bm, bn, bk, warps, stages):
    return triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                         num_warps=warps, num_stages=stages)


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages).  Offline sm_90 compile (aligned): per-thread tile, registers,
# stack bytes, shared memory, and how many programs of it fit an SM by registers.
CONFIGS = [
    _config(128, 256, 16, 8, 3),   # 16x8, 255 regs, 48 KB, 1 per SM: the CUDA 09 tile and thread shape
    _config(128, 256, 16, 8, 4),   # 16x8, 255 regs, 72 KB, 1 per SM
    _config(128, 256, 32, 8, 3),   # 16x8, 255 regs + 56 B of spills (~25 LDL/STL per 4096 FFMA), 96 KB
    _config(64, 256, 16, 4, 4),    # 16x8, 254 regs, 60 KB, 2 per SM
    _config(64, 256, 16, 4, 3),    # 16x8, 40 KB, 2 per SM
    _config(128, 128, 16, 8, 4),   # 8x8, 128 regs, 48 KB, 2 per SM
    _config(128, 128, 32, 8, 3),   # 8x8, 168 regs, 64 KB, 1 per SM
    _config(64, 128, 32, 4, 4),    # 8x8, 194 regs, 72 KB, 2 per SM: small outputs
]
# The interpreter (CPU tests) cannot benchmark, so it runs one small config.
INTERPRETER_CONFIG = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=4)


@triton.jit
def best_simt_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                     HAS_C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    HALF: tl.constexpr = BLOCK_N // 2
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols_l = (pid_n * BLOCK_N + tl.arange(0, HALF)).to(tl.int64)    # left half of the tile
    cols_r = cols_l + HALF                                           # right half
    ks = tl.arange(0, BLOCK_K)
    in_m = rows[:, None] < M
    in_l, in_r = cols_l[None, :] < N, cols_r[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    bl_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols_l[None, :]
    br_ptrs = bl_ptrs + HALF
    step_b = BLOCK_K * tl.cast(ldb, tl.int64)
    acc_l = tl.zeros([BLOCK_M, HALF], dtype=tl.float32)
    acc_r = tl.zeros([BLOCK_M, HALF], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):   # num_stages (launch option) pipelines the three loads via cp.async
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b_l = tl.load(bl_ptrs, mask=in_k[:, None] & in_l, other=0.0)
        b_r = tl.load(br_ptrs, mask=in_k[:, None] & in_r, other=0.0)
        # Two dots on one A operand: each thread's A fragment is read from shared memory once for both.
        acc_l = tl.dot(a, b_l, acc_l, input_precision="ieee", out_dtype=tl.float32)   # never TF32
        acc_r = tl.dot(a, b_r, acc_r, input_precision="ieee", out_dtype=tl.float32)
        a_ptrs += BLOCK_K
        bl_ptrs += step_b
        br_ptrs += step_b
    d_l = epilogue(acc_l, alpha, beta, C + rows[:, None] * ldc + cols_l[None, :], in_m & in_l, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols_l[None, :], d_l.to(D.dtype.element_ty), mask=in_m & in_l)
    d_r = epilogue(acc_r, alpha, beta, C + rows[:, None] * ldc + cols_r[None, :], in_m & in_r, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols_r[None, :], d_r.to(D.dtype.element_ty), mask=in_m & in_r)


tuned_kernel = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(best_simt_kernel)


def gemm(p):
    check_grid("triton:09_best_simt", max_tiles(p, CONFIGS))
    return launch_autotuned(best_simt_kernel, tuned_kernel, p, INTERPRETER_CONFIG)


KERNEL = best_simt_kernel


def variants(entry: str) -> list[dict]:
    """Every compile-time variant gemm may launch (for the offline precision check in the tests)."""
    return config_variants(CONFIGS)
