"""Parameter lists shared by the equivalence tests (GPU and interpreter)."""
from __future__ import annotations

import pytest

import study


def impl_dtypes(backends=None, marks_for=None, only=None, dtype_filter=None):
    """pytest params (impl_name, dtype) for every registered implementation and dtype it declares (or those
    `only(impl)` and `dtype_filter(impl, dtype)` keep)."""
    out = []
    for impl in study.implementations():
        if (backends and impl.backend not in backends) or (only and not only(impl)):
            continue
        for dtype in impl.dtypes:
            if dtype_filter and not dtype_filter(impl, dtype):
                continue
            marks = marks_for(impl, dtype) if marks_for else ()
            out.append(pytest.param(impl.name, dtype, id=f"{impl.name}-{dtype}", marks=marks))
    return out


# (alpha, beta): the default; a general case with C read; a negative alpha with beta = 1.
ALPHA_BETA = [(1.0, 0.0), (2.5, -0.75), (-1.0, 1.0)]


def scalars(dtype: str, alpha: float, beta: float) -> tuple[float, float]:
    """(alpha, beta) as the test means them; integer GEMMs take integral scalars, so the general case
    (2.5, -0.75) becomes (2, -3) there."""
    from study.contract import DTYPES
    if DTYPES[dtype].is_floating_point:
        return alpha, beta
    return {(2.5, -0.75): (2.0, -3.0)}.get((alpha, beta), (alpha, beta))


def column_major(t):
    """The same matrix stored column-major: a transposed view of a contiguous copy (what `x.t()` hands in)."""
    return t.t().contiguous().t()


def expected_gpu_tests() -> dict[str, int]:
    """How many GPU tests the full suite has for each implementation, from a collection in a fresh process
    (no -k, no deselection): an evidence record counts only if it ran them all."""
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "counts.json"
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                               "-p", "no:xdist", "-m", "gpu", "--gpu-test-counts", str(out),
                               "tests/test_gpu_equivalence.py"], cwd=root, capture_output=True, text=True)
        if not out.exists():
            raise RuntimeError(f"collecting the GPU tests failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())
