"""Parameter lists shared by the equivalence tests (GPU and interpreter)."""
from __future__ import annotations

import pytest

import study


def impl_dtypes(backends=None, marks_for=None):
    """pytest params (impl_name, dtype) for every registered implementation and dtype it declares."""
    out = []
    for impl in study.implementations():
        if backends and impl.backend not in backends:
            continue
        for dtype in impl.dtypes:
            marks = marks_for(impl, dtype) if marks_for else ()
            out.append(pytest.param(impl.name, dtype, id=f"{impl.name}-{dtype}", marks=marks))
    return out


# (alpha, beta): the default; a general case with C read; a negative alpha with beta = 1.
ALPHA_BETA = [(1.0, 0.0), (2.5, -0.75), (-1.0, 1.0)]
