"""A comparative GEMM study: each classic optimization stage in hand-written CUDA and in Triton.

The public API is the registry: `implementations()`, `get(name)`, `stages()`; see study/registry.py.
"""
from .registry import Impl, baseline_for, get, implementations, stages

__all__ = ["Impl", "baseline_for", "get", "implementations", "stages"]
