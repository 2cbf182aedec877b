"""Stage 07 (Triton) - a cp.async pipeline: tl.dot (ieee) in a K loop that Triton software-pipelines.

Technique:  one program of 256 threads (num_warps=8) owns a 128x128 tile of D.  Each K step loads a 128x16
            tile of A and a 16x128 tile of B and hands them to tl.dot(..., input_precision="ieee"), which
            on fp32 inputs means FMAs on the CUDA cores (no tensor cores, no TF32).  With num_stages=4 the
            compiler turns the loads into cp.async copies into a ring of shared-memory slots, issued
            ahead of the dot, so later k-tiles are in flight while the current one is computed.
Reproduces: seed 000 kernel 5 (N-stage asynchronous pipeline, 4 stages; 15.2 -> 14.9 ms on an L4).
Changed:    stage 06 loaded each k-tile into registers and waited for it before computing.  Now the copies
            go global -> shared without a trip through registers, several k-tiles ahead, and tl.dot reads
            its operands from the shared-memory ring.  The per-thread register tile is no longer chosen
            by the kernel (see below): tl.dot fixes it.
Why faster: global-memory latency is hidden behind the FMAs of earlier tiles instead of stalling every
            k-tile, and the loop stays lean (SASS: 1024 FFMA in 1166 instructions, 88%; stage 06: 512 in
            584, plus a wait for each tile's loads).  Prediction: 1.1-1.5x over Triton 06 at 4096^3.
Ragged edges: masked loads give zeros outside M, N and K (a masked cp.async copies 0 bytes and zero-fills);
            masked stores skip rows and columns outside D; beta == 0 (HAS_C=False) compiles no load of C.
            Offsets are 64-bit.

What the compiler made of it (Triton 3.6, sm_90, compiled offline):
* cp.async: yes, for this FMA dot on sm_90.  With 16-byte aligned operands the loads become
  cp.async.cg.shared.global 16-byte copies (LDGSTS in SASS: 2 of A and 2 of B per thread per k-tile),
  with cp.async.commit_group / wait_group and one bar.sync pair per k-tile.  If the runtime cannot prove
  16-byte alignment (an odd view), they become 4-byte cp.async.ca copies (and 255 registers with 80 bytes
  of spills): slower, still correct.
* Shared memory: 48 KB = 3 slots x (128x16 + 16x128) x 4 B.  Triton's num_stages=4 keeps 3 k-tiles in
  the ring (num_stages - 1 slots), not 4.  Plain row-major slots (no swizzle).
* Accumulator layout: blocked, sizePerThread [4, 4], threadsPerWarp [1, 32], warpsPerCTA [8, 1].  This is
  fixed by Triton's dot conversion, not by the kernel: for an FMA dot it caps sizePerThread at 4x4 and
  spreads lanes along N first.  So each thread holds 16 rows x 4 columns (4 blocks of 4x4, 32 rows
  apart), not the CUDA stage's 8x8.  All 32 lanes of a warp share their 16 rows, so A is read with
  warp-uniform (broadcast) LDS.128 along k and B with one LDS.128 per k: 5 LDS.128 per 64 FFMA, against
  CUDA's 4 (stage 09 widens the tile to 16x8).
* 172 registers, no spills: one program per SM.
Differences from the CUDA stage: BLOCK_K is 16, not 8 (Triton refuses a dot with K < 16), so each slot
holds twice the data; the ring has 3 slots of 16 KB instead of 4 of 8 KB.  The A tile stays k-contiguous in
shared memory (CUDA transposes it with 4-byte copies); the warp-uniform reads make that free here.

Measured on an H100 SXM at 1980 MHz, 4096^3 fp32 (study.sweep --quick of 2781d1a, cuBLAS 51.6 TFLOP/s;
ncu --clock-control none):
40.5 TFLOP/s (78% of cuBLAS), 1.51x Triton 06, at the top of the
1.1-1.5x predicted, and faster than CUDA 07 (37.4): ncu counts 2450M instructions against CUDA 07's 2990M
(16-byte copies only: A stays k-contiguous), issue slots 71% busy, no shared-load bank conflicts.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import check_grid, epilogue, gemm_args

META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=16, num_warps=8, num_stages=4)


@triton.jit
def cp_async_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta,
                    HAS_C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    rows = ((pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = ((pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    in_m, in_n = rows[:, None] < M, cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]                 # the k-tile at k0: a_ptrs + k0
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]    # the k-tile at k0: b_ptrs + k0 * ldb
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):   # num_stages (launch option) pipelines the loads feeding the dot
        a = tl.load(a_ptrs + k0, mask=in_m & (ks[None, :] < K - k0), other=0.0)
        b = tl.load(b_ptrs + k0 * tl.cast(ldb, tl.int64), mask=(ks[:, None] < K - k0) & in_n, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee", out_dtype=tl.float32)   # never TF32
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def gemm(p):
    M, N, _ = p.mnk
    programs = triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"])
    check_grid("triton:07_cp_async", programs)
    return cp_async_kernel[(programs,)](**gemm_args(p), **META)


KERNEL = cp_async_kernel
