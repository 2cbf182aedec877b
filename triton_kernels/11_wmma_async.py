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
            Measured: 520.4 TFLOP/s fp16 at 4096^3, 68.8% of cuBLAS (H100; reports/h100/results.csv).
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

from triton_kernels._common import check_grid, epilogue, gemm_args

META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=4)


@triton.jit
def wmma_async_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    rows = ((pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = ((pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    in_m, in_n = rows[:, None] < M, cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    b_step = BLOCK_K * tl.cast(ldb, tl.int64)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):   # num_stages (launch option) = depth of the cp.async ring
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
        a_ptrs += BLOCK_K
        b_ptrs += b_step
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def gemm(p):
    M, N, _ = p.mnk
    programs = triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"])
    check_grid("triton:11_wmma_async", programs)
    return wmma_async_kernel[(programs,)](**gemm_args(p), **META)


KERNEL = wmma_async_kernel
