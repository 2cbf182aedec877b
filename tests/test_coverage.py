"""The GPU suite and the sanitizer reach every CUDA entry, proven on the CPU for a 132-SM GPU (H100 SXM, H200).

A CUDA implementation is a set of entries (a dispatch's tile shapes, `_unaligned` twins, per-dtype and
per-layout kernels, a pre-split kernel, a TMA form's fallback).  Which one a call launches depends on the
dtype, the operands' layouts and alignment, and the output's size against the SM count.  Each launch class
says which entries a call runs (`plan`); here every call the GPU suite makes (tests/helpers.py's shapes) and
every call the sanitizer makes (study.measure.sanitize.calls) is planned on CPU tensors of the same layout, and the
union must be every entry the implementation has.
"""
from __future__ import annotations

import pytest

import study
from study.measure import sanitize
from study.core.contract import validate
from study.registry import reachable_entries
from study.core.verify import make_inputs, pitched16
from tests.helpers import (ACCUMULATOR_SHAPE, PADDED_SHAPE, SHAPES, TRANSPOSED_LAYOUTS, TRANSPOSED_SHAPES,
                           UNALIGNED_SHAPES, column_major, shifted)

SMS = 132


def _plan(impl, a, b, c, out, alpha=2.0, beta=3.0) -> tuple[str, ...]:
    p = validate(impl.name, impl.dtypes, impl.out_dtypes, a, b, c, alpha, beta, out, allow_cpu=True,
                 layouts=impl.layouts)
    return impl.launch.plan(p, SMS)


def suite_entries(impl) -> set[str]:
    """The entries the GPU suite's calls of `impl` launch (tests/test_gpu_equivalence.py)."""
    seen: set[str] = set()
    for dtype in impl.dtypes:
        od = impl.out_dtypes.get(dtype)

        def x_of(M, N, K):
            return make_inputs(M, N, K, dtype, "cpu", 1.0, 0.5, od)
        for M, N, K in SHAPES:
            x = x_of(M, N, K)
            seen.update(_plan(impl, x.a, x.b, x.c, x.out))
        if "col-major" in impl.layouts:
            for M, N, K in TRANSPOSED_SHAPES:
                x = x_of(M, N, K)
                for ab in TRANSPOSED_LAYOUTS:
                    a = column_major(x.a) if ab[0] == "c" else x.a
                    b = column_major(x.b) if ab[1] == "c" else x.b
                    seen.update(_plan(impl, a, b, x.c, x.out))
        M, N, K = PADDED_SHAPE
        x = x_of(M, N + 3, K + 5)
        c, out = x_of(M, N + 9, 1).c[:, :N], x_of(M, N + 2, 1).out[:, :N]
        seen.update(_plan(impl, x.a[:, :K], x.b[:K, :N], c, out))
        for M, N, K in UNALIGNED_SHAPES:
            x = x_of(M, N, K)
            seen.update(_plan(impl, *(shifted(t) for t in (x.a, x.b, x.c, x.out))))
        if hasattr(impl.launch, "many_tiles"):
            x = x_of(*impl.launch.many_tiles(SMS), 333)
            seen.update(_plan(impl, x.a, x.b, x.c, x.out))
        for M, N in getattr(impl.launch, "shapes", lambda s: [])(SMS):
            x = x_of(M, N, 67)
            seen.update(_plan(impl, *(pitched16(t) for t in (x.a, x.b, x.c, x.out))))
            seen.update(_plan(impl, *(shifted(t) for t in (x.a, x.b, x.c, x.out))))
        if impl.precision(dtype).endswith("/fp32acc"):
            x = x_of(*ACCUMULATOR_SHAPE)
            seen.update(_plan(impl, x.a, x.b, None, x.out, beta=0.0))
    return seen


def all_entries(impl) -> set[str]:
    return reachable_entries(impl)


def _cuda():
    return [i.name for i in study.implementations("cuda")]


@pytest.mark.parametrize("name", _cuda())
def test_gpu_suite_reaches_every_entry(name):
    impl = study.get(name)
    missing = all_entries(impl) - suite_entries(impl)
    assert not missing, f"{name}: the GPU suite never launches {sorted(missing)} on a {SMS}-SM GPU"


@pytest.mark.parametrize("name", _cuda())
def test_sanitizer_reaches_every_entry(name):
    impl = study.get(name)
    seen = set()
    for _, a, b, x, alpha, beta in sanitize.calls(impl, SMS, "cpu"):
        seen.update(_plan(impl, a, b, x.c, x.out, alpha, beta))
    missing = all_entries(impl) - seen
    assert not missing, f"{name}: the sanitizer never launches {sorted(missing)} on a {SMS}-SM GPU"


def _dispatches():
    return [i.name for i in study.implementations("cuda") if hasattr(i.launch, "choices")]


@pytest.mark.parametrize("name", _dispatches())
def test_dispatch_shapes_pick_each_tile_on_every_size_of_gpu(name):
    d = study.get(name).launch
    for sms in (132, 114, 78, 16):
        shapes = d.shapes(sms)
        assert [d.pick(M, N, sms) for M, N in shapes] == list(d.choices)
        assert all(M % 16 and N % 16 for M, N in shapes), f"dispatch shapes must be ragged: {shapes}"


def test_model_dispatch_picks_by_waves_and_covers_each_tile():
    """Stage 15's last form: 128x256 tiles where 256x192 ones would leave a wave short (4096^3: 2.67 waves of
    the big tile against 3.88), 256x192 clusters where the waves are near even (8192^3, 6144^3); each choice's
    test shape has many tiles per SM and an odd count of tile-rows, on GPUs of any size (that it picks its
    choice: the test above)."""
    d = study.get("cuda:15_wgmma").launch
    wide, narrow = d.choices
    assert d.pick(4096, 4096, 132) is narrow and d.pick(1, 1, 132) is narrow and d.pick(2048, 8192, 132) is narrow
    assert d.pick(8192, 8192, 132) is wide and d.pick(6144, 6144, 132) is wide
    for sms in (132, 114, 78, 16):
        for (M, N), c in zip(d.shapes(sms), d.choices):
            rows, cols = -(-M // c.tile[0]), -(-N // c.tile[1])
            assert rows % 2 and rows * cols >= 2.5 * sms, (sms, M, N, c.tile)
