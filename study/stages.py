"""The stage ladder as data: what each stage is, where it comes from, and what it should buy.

This module imports nothing heavy (no torch, no triton), so the report can read it on any machine.
Implementations are attached to stages in `study.registry`.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Stage:
    number: str          # "01", "02", ... ; the same prefix names the .cu and the .py file
    slug: str            # "naive" -> cuda_kernels/01_naive.cu, triton_kernels/01_naive.py
    title: str
    seed: str            # which seed (shared/seeds) it reproduces, cited by number
    summary: str         # one sentence for the report's stage table
    notes: dict[str, str] = field(default_factory=dict)   # backend -> what that form could not express

    @property
    def key(self) -> str:
        return f"{self.number}_{self.slug}"


STAGES: tuple[Stage, ...] = (
    Stage(
        "01", "naive", "Naive: one thread per output",
        "seed 001 (naive SGEMM), seed 004 (MatrixMulKernel), seed 000 kernel 1",
        "Each thread computes one element of D with a K-long dot product read straight from global "
        "memory; neighbouring threads walk neighbouring rows, so a warp's loads of A are strided.",
    ),
    Stage(
        "02", "coalesced", "Coalesced global access",
        "seed 001 (global memory coalescing)",
        "Same arithmetic, but neighbouring threads now own neighbouring columns, so a warp reads one "
        "contiguous row segment of B and a single broadcast element of A per step.",
    ),
    Stage(
        "03", "smem_tiling", "Shared-memory tiling",
        "seed 004 (tiled matmul with boundary handling), seed 001 (shared memory)",
        "A block stages 32x32 tiles of A and B in shared memory, so every element fetched from global "
        "memory is reused 32 times; ragged edges are zero-filled.",
    ),
    Stage(
        "04", "tiling_1d", "1D block tiling + thread coarsening",
        "seed 000 kernel 2, seed 001 (1D BlockTiling)",
        "Each thread computes a strip of 8 outputs down one column of a 64x64 tile, so one B value read from "
        "shared memory feeds 8 FMAs held in registers.",
    ),
    Stage(
        "05", "tiling_2d", "2D block tiling",
        "seed 000 kernel 3, seed 001 (2D BlockTiling)",
        "Each thread computes an 8x8 block of a 128x128 tile: per k it reads 8 A and 8 B values from shared "
        "memory into registers and does 64 FMAs (an outer product).",
    ),
    Stage(
        "06", "vectorized", "Vectorized (float4) access",
        "seed 000 kernel 4, seed 001 (vectorized access)",
        "As stage 05, with 16-byte global loads and stores and A stored transposed in shared memory, so a "
        "thread's operands arrive in 16-byte shared loads.",
    ),
    Stage(
        "07", "cp_async", "cp.async multi-stage pipeline",
        "seed 000 kernel 5",
        "A ring of shared-memory stages filled by asynchronous copies (cp.async), so the loads of later "
        "k-tiles overlap the FMAs on the current one.",
    ),
    Stage(
        "08", "warp_specialized", "Warp specialization",
        "seed 000 kernel 6",
        "Producer warps only copy tiles into the ring and consumer warps only compute, handing stages over "
        "through per-stage barriers instead of block-wide synchronisation.",
    ),
    Stage(
        "09", "best_simt", "Best SIMT: warp tiling + pipeline, tuned per shape",
        "seed 000 kernels 3-5, seed 001",
        "Warp-tiled 8x8 register tiles with conflict-free 16-byte shared loads, a multi-stage cp.async "
        "pipeline, and the tile shape chosen per problem so the grid fills the GPU.",
    ),
)


def stage(number_or_key: str) -> Stage:
    for s in STAGES:
        if number_or_key in (s.number, s.key, s.slug):
            return s
    raise KeyError(f"no stage {number_or_key!r}; known: {[s.key for s in STAGES]}")
