"""Stage 12 (Gluon) - mma_v2 fed from shared memory through ldmatrix, warps tiled in 2D.

Technique:  one program (8 warps) owns a 128x128 tile of D; the warps form 2 x 4 (NVMMADistributedLayout
            warps_per_cta [2, 4]), each holding 64x32 of D as 4 x 4 mma tiles of 16x8 (64 fp32 accumulators
            per lane).  K advances BK = 32 at a time through a 3-slot ring of shared memory filled by 16-byte
            cp.async copies.  Per k16 slice a warp loads its A fragments (64x16) and B fragments (16x32) from
            the ring straight into the mma operand layouts (DotOperandLayout, k_width 2); Gluon lowers those
            loads to ldmatrix.x4 (A) and ldmatrix.x4.trans (row-major B), 4 + 2 per slice, for 16
            mma.sync.m16n8k16.  The shared tiles are plain row-major (SwizzledSharedLayout with vec=1,
            max_phase=1: no swizzle), the "before" case of stage 13.
Reproduces: seed 000 kernel 8 (mma.sync custom: ldmatrix x4 for A, .trans for B, the m16n8k16 fragment layout)
            and its 2D warp-tiled variant, with seed 000 kernel 7b's cp.async staging; CUDA stage 12's shape
            (128x128, 2 x 4 warps of 64x32, BK 32, 3 slots).
Changed:    from Gluon 11: warps_per_cta [8, 1] -> [2, 4].  Stage 11's warps each own a 16-row strip across
            all 128 columns, so every warp loads all of B's k-tile; here a warp loads a quarter of B and half
            of A.  3 ring slots instead of 4 (as the CUDA stage).
Why faster: shared-memory traffic per mma: per k16 slice a warp issues 6 ldmatrix.x4 (4 A, 2 B) for 16
            mma.sync, where stage 11 issued 9 (1 A, 8 B) for 16.  What remains: the unswizzled rows put the
            8 addresses of an 8x8 ldmatrix matrix in the same 4 banks (A, 64-byte rows) or the same 4 banks
            of every row (B, 256-byte rows).  ncu at 4096^3 fp16: 218M of the 268M shared-load wavefronts
            are bank conflicts (stage 11: 495M of 570M); the tensor pipe is active 15.7% of the time.
            Measured (H100 SXM, tools/gluon_tc_probe.py, L2 flushed, median; % of cuBLAS torch.mm):
            4096^3 fp16 102.0 TFLOP/s (13.8%), bf16 101.2 (13.2%); 8192^3 fp16 103.1 (15.3%), bf16 102.3
            (14.8%).  CUDA stage 12 (same shape, same unswizzled tiles): 100.4 / 99.6 / 101.2 / 100.2.
Ragged edges: 16-byte cp.async copies for full k-tiles, masked by row (A) and by 8-column chunk (B: columns
            up to N rounded up to 8; a chunk that starts below N is 16-byte aligned and holds a valid
            element, so reading all of it stays in memory that exists, and its values past N reach only D's
            columns past N, which are never stored).  The last, partial k-tile is loaded element-wise with
            per-k masks (what lies past K in a chunk may be NaN) after the ring loop.  Operands or pitches
            that are not 16-byte aligned (ALIGNED=False) take the element-wise path for every tile.
            Masked loads zero-fill; stores are masked; beta == 0 (HAS_C=False) compiles no load of C.

The code is stage 11's (triton_kernels/gluon/11_wmma_async.py), imported rather than copied: in Gluon both
stages are mma_v2 fed from a cp.async ring, and what stage 12 changes is the launch -- warps_per_cta and the
number of ring slots (META below).

Gluon against the CUDA stage (cuda_kernels/12_mma_ldmatrix.cu):
* ldmatrix is not written: it is what Triton 3.6 emits for a shared -> DotOperandLayout load whenever the
  layout allows it (checked in the PTX: ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, for this
  unswizzled layout and for stage 13's swizzled one alike).
* Two bar.sync per k-tile instead of one: the ring is one allocation and Triton's barrier analysis, which
  tracks whole allocations, cannot tell the slot being refilled from the slot being read; it adds a barrier
  between the copy issue and the fragment loads.  Stage 13 splits the ring in two to remove it.
* PaddedSharedLayout (the CUDA stages' other way to break the bank pattern) does not lower in 3.6 for NVIDIA
  ("unknown layout" in toLinearLayout), so the "before" case is unpadded.
* A chunk straddling K cannot be copied partially (CUDA uses cp.async's src-size per element); the partial
  k-tile goes through registers instead.
* Compiled for sm_90, no spills: 159 registers (180 with beta != 0), 48 KiB of shared memory.  Per k-tile
  and lane: 4 cp.async.cg (16 B), 8 ldmatrix.x4 + 4 ldmatrix.x4.trans, 32 mma.sync, 2 bar.sync.
* Every GPU equivalence test (tests/test_gpu_equivalence.py -k gluon:12, 85 cases) passes.
"""
from __future__ import annotations

import importlib

# Module names that start with a digit cannot be imported with an import statement.
_stage11 = importlib.import_module("triton_kernels.gluon.11_wmma_async")

# Stage 11 stacks its 8 warps along M ([8, 1], 4 slots); here they tile D in 2D, [2, 4], in 3 slots.
META = dict(BM=128, BN=128, BK=32, WM=2, WN=4, STAGES=3, GROUP_M=8, ALIGNED=True, num_warps=8, num_stages=1)
KERNEL = _stage11.KERNEL


def gemm(p):
    return _stage11.launch(p, META, "gluon:12_mma_ldmatrix")
