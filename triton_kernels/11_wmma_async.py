"""Stage 11 (Triton) - tensor cores fed by the compiler's multi-stage cp.async ring (num_stages).

Technique:  the stage 10 loop (masked tile loads, one tl.dot per BLOCK_K step) for fp16 and bf16, on the
            CUDA stage's 128x128 tile with 8 warps (256 threads) and BLOCK_K 32, compiled with
            num_stages=4.  The software pipeliner turns the two tl.load calls into asynchronous copies
            into a ring of shared-memory slots, issued NUM_STAGES - 1 k-tiles ahead of the tl.dot that
            consumes them, and the dot reads its operands from the ring in place.  fp32 accumulation; D
            and C in the input dtype (as cuBLAS HGEMM).  Row-major operands only.
Reproduces: seed 000 kernel 7b (WMMA fed through a multi-stage cp.async pipeline).
Changed:    stage 10 ran num_stages=1: each k-tile went global -> registers -> shared memory -> tensor
            core with nothing in flight behind it.  Now three k-tiles are in flight while one is multiplied;
            the tile grows from 64x64 (4 warps) to the CUDA stage's 128x128 (8 warps).
Why faster: the global-memory latency of a k-tile (~1 us under load) hides behind the products of the
            previous ones, and each program's operand traffic per FLOP halves with the doubled tile.
            Measured: 519.8 TFLOP/s fp16 at 4096^3, 70.3% of cuBLAS (H100; reports/h100/results.csv).
Ragged edges: masked loads give zeros outside M, N and K (a masked cp.async copies zero bytes and fills
            zeros); masked stores; beta == 0 (HAS_C=False) compiles no load of C.  Offsets are 64-bit.
Compiles to (Triton 3.6, sm_90a): 16-byte cp.async.cg copies into 4 ring slots (64 KB) in NVMMA swizzles
            chosen by the compiler; two warpgroups of 64 rows each issue 2 wgmma m64n128k16 per k-tile
            straight from the ring, one k-tile's products left in flight (wait_group 1).  No ldmatrix in the
            loop.  106 registers, no spills.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import launch_tiles, masked_dot_loop, operand_tiles, store_tile, tile_rows_cols

META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=4)


@triton.jit
def wmma_async_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows, cols = tile_rows_cols(tl.program_id(0), N, BLOCK_M, BLOCK_N)
    ks, in_m, in_n, a_ptrs, b_ptrs = operand_tiles(A, B, M, N, lda, ldb, rows, cols, BLOCK_K)
    # The K loop: a masked load of each k-tile of A and B, one tl.dot per BLOCK_K step.  num_stages (launch
    # option) = depth of the cp.async ring the compiler builds for its two loads.
    acc = masked_dot_loop(a_ptrs, b_ptrs, ks, in_m, in_n, K, ldb, BLOCK_M, BLOCK_N, BLOCK_K)
    store_tile(acc, alpha, beta, C, D, rows[:, None], cols[None, :], in_m & in_n, ldc, ldd, HAS_C)


def gemm(p):
    return launch_tiles("triton:11_wmma_async", wmma_async_kernel, p, META)


KERNEL = wmma_async_kernel
