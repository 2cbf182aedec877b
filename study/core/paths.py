"""Where the study's sources live, and which files make up a CUDA kernel's source."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CUDA_DIR = ROOT / "cuda_kernels"
TRITON_DIR = ROOT / "triton_kernels"
BENCH_DIR = ROOT / "study" / "kernels"     # the micro-benchmarks behind the ceilings, and the profiler's marker


def source_closure(source: Path) -> list[Path]:
    """The source plus every header in its directory it could include (conservative: all of them)."""
    return [source] + sorted(source.parent.glob("*.cuh"))
