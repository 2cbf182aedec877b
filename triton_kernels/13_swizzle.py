"""Stage 13 (Triton) - the fastest plain-Triton fp16/bf16 GEMM here: persistent, TMA-fed, 128B-swizzled wgmma.

Technique:  a persistent kernel (one program per SM) walks the output tiles in GROUP_M-grouped order.
            Operands arrive through TMA (host TensorDescriptor objects, one per matrix): each load of a
            BLOCK_MxBLOCK_K tile of A or BLOCK_KxBLOCK_N tile of B is a single bulk tensor copy that
            lands in shared memory already in the 128-byte-swizzled layout wgmma reads, zero-filled past
            the matrix edge.  The loop over tiles is flattened with the K loop (tl.range(flatten=True)),
            so the pipeliner starts the next tile's loads while this tile's last products and its
            epilogue run.  The epilogue scales in fp32, rounds once to the input dtype, and writes D
            through TMA in two BLOCK_N/2-wide halves (epilogue subtiling: half the staging buffer, and
            the first half's TMA store can proceed while the second half is converted).  C, when beta != 0, is read
            through TMA as well.
Reproduces: seed 000 kernel 9 (an XOR-swizzled shared-memory layout against bank conflicts on the
            operand reads and the copies into shared memory) - here the swizzle is TMA's hardware 128B
            mode, picked by the compiler, not an XOR we write.  Bank conflicts not measured here.
Changed:    stages 11/12 staged tiles with cp.async (every thread computes addresses and issues 16-byte
            copies) into a ring the compiler swizzles; now one thread issues a TMA copy per tile, the
            program stays resident across tiles, and tiles are visited in L2-friendly groups.
Why faster: TMA frees the warps from address arithmetic and copy issue; persistence removes per-tile launch
            and prologue cost and lets the epilogue overlap the next tile's loads; grouping keeps A and B
            tiles in L2.
Alignment:  TMA needs 16-byte aligned base addresses and leading dimensions that are multiples of 16 bytes
            (TensorDescriptor asserts it).  gemm() checks A, B, C (when read) and D first; any operand that
            fails sends the whole call to `pointer_kernel` (masked tl.load/tl.store, cp.async pipeline,
            the stage 11 loop with grouping), so an odd view is slower, never wrong.  Ragged M, N, K on
            aligned operands stay on the TMA path: loads past the edge read zeros, stores past the edge
            are clipped by the hardware.

What the compiler made of it (Triton 3.6, sm_90a, compiled offline; TMA_META, beta == 0):
* Loads: cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes (SASS UTMALDG.2D), two
  per k-tile (A, B), issued by one elected thread after mbarrier.arrive.expect_tx; consumers wait with
  mbarrier.try_wait.parity.  Shared layout: nvmma_shared 128-byte swizzle for both operands (TMA's
  SWIZZLE_128B mode) for both operand tiles.
* Products: two warpgroups of 64 rows; per k-tile each issues 4 wgmma.mma_async.sync.aligned.m64n256k16
  .f32.f16.f16 (bf16: .f32.bf16.bf16), then wgmma.wait_group 1 before refilling the slot just consumed.
  One flattened loop over (tile, k-tile): the next tile's first loads are issued before this tile's
  epilogue.  3 slots of 48 KB; 163 registers, no spills; 180 KB of shared memory in all (213 KB with C).
* Epilogue: each half (128x128) goes registers -> stmatrix.x4 (16 per half) -> fence.proxy.async ->
  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group (SASS UTMASTG.2D); cp.async.bulk.wait_group.read 0
  before the staging buffer is reused.  With C, C's halves arrive by TMA too.
* Not used, and why: tl.range(warp_specialize=True) changes nothing at num_warps=8 on sm_90 (identical
  binary); at num_warps=4 Triton's Hopper warp specialization (producer + 2 consumer warpgroups,
  setmaxnreg) compiles only with a pointer-store epilogue (its partitioner rejects the whole-tile
  descriptor store), and that kernel did not finish within 240 s on the H100 (hang, not diagnosed).
Measured on an H100 SXM (tools/triton_tc_probe.py, L2 flushed, median; fp16 4096^3, cuBLAS 741.8 TFLOP/s at
1980 MHz): 
            TMA_META (128x256x64, 3 stages, split epilogue)   723.8 TFLOP/s  97.6%  (1965 MHz)
            the same, 4 stages (229 KB; no room for C)         733.6          98.9%
            256x128x64, 3 stages                               659.2          88.9%
            128x128x64, 4 stages                               598.3          80.7%
            triton:tuned (baseline, autotuned)                 698.5          94.2%  (1860 MHz)
bf16 and 8192^3 were not measured (device budget); the >= 95% target is so far met at fp16 4096^3 only.
"""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from triton_kernels._common import check_grid, epilogue, gemm_args, grouped_tile

# The TMA kernel's tile (the docstring's table: fastest measured that also fits C's TMA buffers).
TMA_META = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, EPI_SPLIT=True, num_warps=8, num_stages=3)
# The fallback for operands TMA cannot describe (not 16-byte aligned).
POINTER_META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=4)


@triton.jit
def tma_persistent_kernel(a_desc, b_desc, c_desc, d_desc, M, N, K, alpha, beta, NUM_SMS,
                          HAS_C: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, EPI_SPLIT: tl.constexpr):
    start = tl.program_id(0)
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # The epilogue recomputes its tile from a counter of its own, so that the flattened loop's pipeliner
    # carries no value from a tile's first loads to its epilogue.
    tile_out = start - NUM_SMS
    for tile in tl.range(start, tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([off_m, kt * BLOCK_K])
            b = b_desc.load([kt * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc, out_dtype=tl.float32)
        tile_out += NUM_SMS
        pid_m, pid_n = grouped_tile(tile_out, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        if EPI_SPLIT:
            HALF: tl.constexpr = BLOCK_N // 2
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, HALF)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            d0 = acc0 * alpha
            if HAS_C:
                d0 += beta * c_desc.load([off_m, off_n]).to(tl.float32)
            d_desc.store([off_m, off_n], d0.to(d_desc.dtype))
            d1 = acc1 * alpha
            if HAS_C:
                d1 += beta * c_desc.load([off_m, off_n + HALF]).to(tl.float32)
            d_desc.store([off_m, off_n + HALF], d1.to(d_desc.dtype))
        else:
            d = acc * alpha
            if HAS_C:
                d += beta * c_desc.load([off_m, off_n]).to(tl.float32)
            d_desc.store([off_m, off_n], d.to(d_desc.dtype))


@triton.jit
def pointer_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    in_m, in_n = rows[:, None] < M, cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    b_step = BLOCK_K * tl.cast(ldb, tl.int64)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
        a_ptrs += BLOCK_K
        b_ptrs += b_step
    mask = in_m & in_n
    d = epilogue(acc, alpha, beta, C + rows[:, None] * ldc + cols[None, :], mask, HAS_C)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def tma_ok(t: torch.Tensor) -> bool:
    """What TMA needs of a row-major matrix: a 16-byte aligned start and a row pitch of whole 16 bytes."""
    return t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0


@functools.lru_cache(maxsize=None)
def _sm_count(device) -> int:
    if device.type != "cuda":
        return 4   # the interpreter: a few persistent programs, so each walks several tiles
    return torch.cuda.get_device_properties(device).multi_processor_count


def _desc(t: torch.Tensor, block: list[int]) -> TensorDescriptor:
    return TensorDescriptor(t, list(t.shape), [t.stride(0), 1], block)


def launch_tma(p, meta: dict):
    """The persistent TMA kernel with compile-time parameters `meta` (TMA_META or a variant)."""
    M, N, K = p.mnk
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    out_block = [bm, bn // 2 if meta["EPI_SPLIT"] else bn]
    d_desc = _desc(p.out, out_block)
    c_desc = _desc(p.c, out_block) if p.c is not None else d_desc   # never read when HAS_C=False
    sms = _sm_count(p.a.device)
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    return tma_persistent_kernel[(min(sms, tiles),)](
        _desc(p.a, [bm, bk]), _desc(p.b, [bk, bn]), c_desc, d_desc, M, N, K, p.alpha, p.beta, sms,
        HAS_C=p.c is not None, **meta)


def launch_pointer(p, meta: dict = POINTER_META):
    M, N, _ = p.mnk
    programs = triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])
    check_grid("triton:13_swizzle", programs)
    return pointer_kernel[(programs,)](**gemm_args(p), **meta)


def gemm(p):
    if all(tma_ok(t) for t in (p.a, p.b, p.c, p.out) if t is not None):
        return launch_tma(p, TMA_META)
    return launch_pointer(p)


KERNEL = tma_persistent_kernel
