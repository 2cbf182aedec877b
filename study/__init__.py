"""A comparative GEMM study: each classic optimization stage in hand-written CUDA, in Triton and in Gluon.

The public API is the catalogue, study/registry.py: `implementations()`, `get(name)`, `stages()`,
`baseline_for()`, `Impl`, and stage 16's fp8 quantization helpers, study/core/fp8.py: `quantize_a`, `quantize_b`.
They load on first use, so that rendering the report needs neither torch nor Triton.

The package is layered; each layer imports only the ones below it (pyproject.toml's import contracts):

    study/<command>.py   the commands: python -m study.sweep | report | probe | accuracy | profile | sanitize |
                         evidence | build
    study/present/       figures and the report, from results files
    study/measure/       runner, timing, sweep, probe, ceilings, ncu profiles, sanitizer, accuracy, evidence
    study/registry.py    the catalogue: every implementation, declared once
    study/launch/        build (nvcc, cubin cache), driver (cuda.core), launch records, cuBLAS through torch
    study/core/          the GEMM contract, precision labels and tolerances, the judge, stages, paths
"""
__all__ = ["Impl", "baseline_for", "get", "implementations", "quantize_a", "quantize_b", "stages"]


def __getattr__(name: str):
    if name in ("quantize_a", "quantize_b"):
        from study.core import fp8
        return getattr(fp8, name)
    if name in __all__:
        from study import registry
        return getattr(registry, name)
    raise AttributeError(f"module 'study' has no attribute {name!r}")
