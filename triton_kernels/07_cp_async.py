"""Stage 07 (Triton) - a cp.async pipeline: tl.dot (ieee) in a K loop that Triton software-pipelines.

Technique:  one program of 256 threads (num_warps=8) owns a 128x128 tile of D.  Each K step loads a 128x16
            tile of A and a 16x128 tile of B and hands them to tl.dot(..., input_precision="ieee"), which
            on fp32 inputs means FMAs on the CUDA cores (no tensor cores, no TF32).  With num_stages=4 the
            compiler turns the loads into cp.async copies into a ring of shared-memory slots, issued
            ahead of the dot, so later k-tiles are in flight while the current one is computed.
Reproduces: seed 000 kernel 5 (N-stage asynchronous pipeline, 4 stages).
Changed:    stage 06 loaded each k-tile into registers and waited for it before computing.  Now the copies
            go global -> shared without a trip through registers, several k-tiles ahead, and tl.dot reads
            its operands from the ring.  The per-thread register tile is now fixed by tl.dot (16x4, below).
Why faster: global-memory latency hides behind the FMAs of earlier tiles, and the loop stays lean (1024
            FFMA in 1166 instructions).  Predicted 1.1-1.5x Triton 06; measured 1.51x (40.5 TFLOP/s,
            4096^3 fp32, H100; reports/h100/results.csv).
Ragged edges: masked loads give zeros outside M, N and K (a masked cp.async copies 0 bytes and zero-fills);
            masked stores skip rows and columns outside D; beta == 0 (HAS_C=False) compiles no load of C.
            Offsets are 64-bit.
Alignment:  none required: 16-byte aligned operands get 16-byte cp.async.cg copies, an odd view 4-byte
            cp.async.ca copies (and some spills): slower, still correct.
Compiles to (Triton 3.6, sm_90): num_stages=4 keeps 3 unswizzled ring slots (48 KB), one bar.sync pair per
            k-tile.  The FMA dot's accumulator is sizePerThread [4, 4] with lanes along N, so a thread
            holds 16x4 outputs, not the CUDA stage's 8x8, and reads A warp-uniformly with LDS.128.
            BLOCK_K is 16, not 8 (tl.dot refuses K < 16).  172 registers, no spills.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import epilogue, launch_tiles

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
    return launch_tiles("triton:07_cp_async", cp_async_kernel, p, META)


KERNEL = cp_async_kernel
