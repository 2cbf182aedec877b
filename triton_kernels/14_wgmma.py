"""Stage 14 (Triton) - wgmma fed by TMA: what Triton 3.6 can express of the Hopper rung, each form named for
what the compiler did with it.

Technique:  operands arrive through TMA (host TensorDescriptor objects: one bulk tensor copy per tile of A or B,
            landing in shared memory in the 128-byte swizzle wgmma reads, zero-filled past the matrix edge), and
            tl.dot on them compiles to wgmma.mma_async.  Triton writes the rest itself: a ring of num_stages
            shared-memory slots whose copies complete on mbarriers, software-pipelined so that the copies of
            k-tiles ahead are in flight while wgmma runs on this one.  The forms differ in the grid:
            * triton:14_wgmma-tma (tma_tile_kernel, gemm_tma): one program per 128x256 tile of D, in GROUP_M-grouped
              order, k-tiles through a 3-slot ring; the epilogue scales in fp32, rounds once to the input dtype and
              stores D (reading C, when beta != 0) through TMA in two 128x128 halves.
            * triton:14_wgmma (the stage's registered form): the same tiles, ring and epilogue in a persistent grid,
              stage 13's tma_persistent_kernel (triton_kernels/13_swizzle.py): one program per SM walks the
              tiles, its tile loop flattened with the k-loop (tl.range(flatten=True)), so the next tile's copies
              start while this tile's last products and its epilogue run.
            What Triton 3.6 does not give on sm_90 is the split the CUDA and Gluon forms write by hand: a producer
            warpgroup and consumer warpgroups (below, "Warp specialization").
Reproduces: no seed covers Hopper (seed 000 stops at mma.sync).  Its anchors: Triton's tutorial
            09-persistent-matmul (matmul_kernel_tma: host descriptors, one program per tile; and its persistent
            kernel with tl.range(flatten=..., warp_specialize=...)), and the Gluon tutorials 07-persistence and
            08-warp-specialization, whose hand-written partitions are the Gluon form's.
Changed:    from Triton 13: nothing in the persistent form (stage 13's kernel already is this rung in Triton: wgmma,
            TMA, the compiler's mbarrier ring); triton:14_wgmma-tma takes its persistence away, one program per
            tile, so that the two forms show what the persistent grid buys.
Why faster: against stage 12, wgmma replaces ldmatrix + mma.sync (no operand in registers) and one TMA copy a
            tile replaces every thread's cp.async address work.  Persistence (triton:14_wgmma against -tma):
            no program launch and prologue per tile, and each tile's epilogue overlaps the next tile's copies.
            Predicted for triton:14_wgmma-tma: a few points of cuBLAS below the persistent form at 4096^3 and
            8192^3 (before it ran; measured below).
Measured:   triton:14_wgmma (stage 13's kernel under this name) on an H100, the sweep of 3bd236b: 731.1 TFLOP/s fp16
            at 4096^3, and 98.9-100.8% of cuBLAS over fp16 and bf16 at 4096^3 and 8192^3 (reports/h100/results.csv).
            On an H200 (the sweep of d183105) 99.1-107.3% at the same four (reports/h200/results.csv).  ncu at
            4096^3 fp16 on the H100: tensor pipe active 93.0% (cuBLAS 94.8%), L2 bytes 0.92 GB
            (reports/h100/profile.csv).  triton:14_wgmma-tma on the H100, the same sweep: 715.9 TFLOP/s fp16 at
            4096^3, 96.9-101.0% of cuBLAS over the four; 1.4-2.0 points below the persistent form at 4096^3, and
            at 8192^3 0.2-0.5 points above it.  ncu at 4096^3 fp16: tensor pipe active
            91.0%, L2 bytes 1.10 GB.
Ragged edges: on aligned operands ragged M, N, K stay on the TMA path: loads past the edge read zeros, stores
            past the edge are clipped by the hardware.  beta == 0 (HAS_C=False) compiles no read of C.
Alignment:  TMA needs 16-byte aligned base addresses and leading dimensions (A, B, D, and C when read).  Both
            forms check them first (stage 13's tma_ok); any that fails sends the whole call to stage 13's
            `pointer_kernel` (masked loads, a cp.async ring, wgmma from shared memory): slower, never wrong.
Compiles to (Triton 3.6, sm_90a, offline: python -m study.measure.offline, cuobjdump of its cubins):
            triton:14_wgmma-tma is tma_tile_kernel at 8 warps in one role (no producer warpgroup, no setmaxnreg).
            Per k-tile each warpgroup waits on its slot's mbarrier (mbarrier.try_wait.parity), issues 4
            wgmma.mma_async m64n256k16 (f32 accumulators, f16 or bf16 operands from shared memory), commits and
            keeps one k-tile's wgmmas in flight (wait_group 1), then one thread refills the slot read before:
            expect_tx of 48 KB and two cp.async.bulk.tensor.2d copies (A's 128x64 box, B's 64x256) completing on
            that slot's mbarrier.  The ring is 3 slots with one `full` mbarrier each; no `empty` barrier: a slot
            is refilled once wait_group 1 has retired its reader and a bar.sync has passed.  Epilogue per half:
            C by a TMA copy on its own mbarrier, stmatrix into shared memory, fence.proxy.async, a
            cp.async.bulk.tensor store.  147,480 bytes of shared memory (one program per SM); 154 registers
            (fp16) and 170 (bf16), no spills.  triton:14_wgmma: the same loop in stage 13's persistent kernel
            (213,032 bytes: the ring and the epilogue's own buffers).  The pointer path: stage 13's.
Warp specialization, tried (docs/14_wgmma.md): tl.range(warp_specialize=True) changes nothing at 8 warps or
            with flatten=True.  At num_warps=4, an unflattened tile loop, device-side descriptors
            (tl.make_tensor_descriptor) and a whole-tile epilogue, the compiler does build a producer warpgroup
            and two consumer warpgroups (.reqntid 384, setmaxnreg 40/232, 8 wgmma m64n256k16 a k-tile); its
            source is commit 6f7cc5f's triton_kernels/15_wgmma.py.  It is not registered: its PTX is not
            reproducible.  Three compiles of it on GPU machines gave three digests; recompiled here in fresh
            caches (Triton 3.6, offline, seven compiles), the fp16 unit gave two digests (6cd8c49f, 819b07b3)
            and the bf16 unit two (14b3b36c, dfd8ba36); the two fp16 PTX differ only in the order of a consumer's
            two mbarrier.arrive after its wait_group 0.  No GPU record can vouch for a binary that changes between
            compiles; besides, one of two GPU-suite runs of it failed one case (fp16, 1000^3, alpha -1, beta 1).
"""
from __future__ import annotations

import importlib

import triton
import triton.language as tl

from triton_kernels._common import check_grid, grouped_tile, launch_tiles, tiles

_stage13 = importlib.import_module("triton_kernels.13_swizzle")   # a module name that starts with a digit
tma_ok, _desc = _stage13.tma_ok, _stage13._desc

# Stage 13's tile, ring and split epilogue (128x256x64, 8 warps, 3 slots): the -tma form differs in the grid only.
TMA_META = _stage13.TMA_META


@triton.jit
def tma_tile_kernel(a_desc, b_desc, c_desc, d_desc, M, N, K, alpha, beta, HAS_C: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                    EPI_SPLIT: tl.constexpr):
    """One program per BLOCK_M x BLOCK_N tile of D; the k-loop's TMA loads pipelined by the compiler."""
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kt in range(tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, kt * BLOCK_K])
        b = b_desc.load([kt * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
    if EPI_SPLIT:    # two BLOCK_N/2-wide halves, as stage 13: half the epilogue's shared-memory buffer
        HALF: tl.constexpr = BLOCK_N // 2
        acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, HALF)), (0, 2, 1)))
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


def launch_tma_tiles(p, meta: dict = TMA_META):
    """tma_tile_kernel with compile-time parameters `meta`, one program per tile of D."""
    M, N, K = p.mnk
    bm, bn, bk = meta["BLOCK_M"], meta["BLOCK_N"], meta["BLOCK_K"]
    out_block = [bm, bn // 2 if meta["EPI_SPLIT"] else bn]
    d_desc = _desc(p.out, out_block)
    c_desc = _desc(p.c, out_block) if p.c is not None else d_desc   # never read when HAS_C=False
    programs = tiles(p, bm, bn)
    check_grid("triton:14_wgmma-tma", programs)
    return tma_tile_kernel[(programs,)](_desc(p.a, [bm, bk]), _desc(p.b, [bk, bn]), c_desc, d_desc, M, N, K,
                                        p.alpha, p.beta, HAS_C=p.c is not None, **meta)


def gemm_tma(p):
    """triton:14_wgmma-tma: one program per tile on aligned operands, stage 13's pointer kernel otherwise."""
    if all(tma_ok(t) for t in (p.a, p.b, p.c, p.out) if t is not None):
        return launch_tma_tiles(p)
    return launch_tiles("triton:14_wgmma-tma", _stage13.pointer_kernel, p, _stage13.POINTER_META)


def gemm(p):
    """triton:14_wgmma: stage 13's persistent TMA kernel (and its pointer path)."""
    return _stage13.gemm(p)


KERNEL = _stage13.KERNEL
