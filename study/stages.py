"""The stage ladder as data: what each stage is, where it comes from, and what it should buy.

This module imports nothing heavy (no torch, no triton), so the report can read it on any machine.
Implementations are attached to stages in `study.registry`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    number: str          # "01", "02", ... ; the same prefix names the .cu and the .py file
    slug: str            # "naive" -> cuda_kernels/01_naive.cu, triton_kernels/01_naive.py
    title: str
    seed: str            # which seed (shared/seeds) it reproduces, cited by number
    summary: str         # one sentence for the report's stage table

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
)


def stage(number_or_key: str) -> Stage:
    for s in STAGES:
        if number_or_key in (s.number, s.key, s.slug):
            return s
    raise KeyError(f"no stage {number_or_key!r}; known: {[s.key for s in STAGES]}")
