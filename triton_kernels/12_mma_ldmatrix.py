"""Stage 12 (Triton) - mma.sync m16n8k16 fed by ldmatrix, warp-tiled 2x4: the MMA v2 path, asked for.

Technique:  the stage 11 kernel (128x128 tile, BLOCK_K 32, 8 warps, a 4-deep cp.async pipeline), compiled
            with Triton's MMA v3 (wgmma) lowering switched off, so tl.dot takes the Ampere-style path the
            CUDA stage writes by hand: each warp owns a 64x32 tile of D (warpsPerCTA [2, 4]) held as
            4 x 4 m16n8 accumulator fragments, reads its A fragments with ldmatrix.x4 and its B fragments
            with ldmatrix.x4.trans from shared memory, and issues 32 mma.sync.m16n8k16 per k-tile.
            fp32 accumulation; D and C in the input dtype.  Row-major operands only.
How it is asked for: on sm_90 no tl.dot argument or launch option selects the instruction.  The switch is
            the compiler environment variable DISABLE_MMA_V3=1 (part of Triton's on-disk cache key, not in
            the user documentation).  gemm() sets it only around its own launch, of a JITFunction of its
            own, whose in-memory cache (keyed without the environment) therefore only ever holds MMA v2
            binaries.  Without the switch the same source compiles to stage 11's wgmma.
Reproduces: seed 000 kernel 8 (mma.sync m16n8k16 with ldmatrix) and its 2D warp-tiled variant.
Changed:    stage 11 let Triton choose, and on Hopper it chose wgmma (operands read by the tensor core
            straight from shared memory).  Here every operand passes through registers: ldmatrix, then
            mma.sync, as on Ampere.
Why faster: on the CUDA side, mma.sync + ldmatrix replaces WMMA's opaque fragment loads.  On Hopper
            mma.sync issues at well under wgmma's rate, so in Triton this stage is SLOWER than stage 11:
            295.1 TFLOP/s fp16 at 4096^3, 0.57x stage 11 (H100; reports/h100/results.csv).  It is kept
            as the instruction-for-instruction counterpart of CUDA stage 12.
Ragged edges: masked loads give zeros outside M, N and K; masked stores; beta == 0 compiles no load of C.
Compiles to (Triton 3.6, sm_90a, DISABLE_MMA_V3=1): #mma version 2 in XOR-swizzled shared layouts picked by
            the compiler (the swizzle CUDA stage 13 writes by hand is already here); num_stages=4 gives 3
            ring slots (48 KB); stmatrix epilogue.  141 registers, no spills.
"""
from __future__ import annotations

import importlib
import os
from contextlib import contextmanager

import triton

from triton_kernels._common import launch_tiles

# Module names that start with a digit cannot be imported with an import statement.
_stage11 = importlib.import_module("triton_kernels.11_wmma_async")

META = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=4)


# Stage 11's kernel function, under a JIT object of its own: Triton's in-memory kernel cache is per JIT object
# and ignores the environment, so sharing stage 11's object would hand this stage 11's wgmma binary.
mma_v2_kernel = triton.jit(_stage11.KERNEL.fn)


@contextmanager
def mma_v2_only():
    """DISABLE_MMA_V3=1 for the duration of a launch (which is when the JIT compiles), then as before."""
    old = os.environ.get("DISABLE_MMA_V3")
    os.environ["DISABLE_MMA_V3"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["DISABLE_MMA_V3"]
        else:
            os.environ["DISABLE_MMA_V3"] = old


def gemm(p):
    with mma_v2_only():
        return launch_tiles("triton:12_mma_ldmatrix", mma_v2_kernel, p, META)


KERNEL = mma_v2_kernel
