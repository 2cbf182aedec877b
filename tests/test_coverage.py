"""The GPU suite and the sanitizer reach every CUDA entry, proven on the CPU for a 132-SM GPU (H100 SXM, H200).

A CUDA implementation is a set of entries (a dispatch's tile shapes, `_unaligned` twins, per-dtype and
per-layout kernels, a pre-split kernel, a TMA form's fallback).  Which one a call launches depends on the
dtype, the operands' layouts and alignment, and the output's size against the SM count.  Each launch class
says which entries a call runs (`plan`); here every call the GPU suite makes (as pytest collects it) and every
call the sanitizer makes (study.measure.sanitize.calls) is planned on CPU tensors of the same layout, and the
union must be every entry the implementation has.
"""
from __future__ import annotations

import pytest

import study
from study.measure import sanitize
from study.core import fp8
from study.core.contract import validate
from study.registry import reachable_entries
from study.core.verify import make_inputs, pitched16
from tests.helpers import (ACCUMULATOR_SHAPE, DISPATCH_K, FP8_ACCUMULATOR_SHAPE, PADDED_SHAPE, column_major,
                           shifted)

SMS = 132


def _plan(impl, a, b, c, out, alpha=2.0, beta=3.0) -> tuple[str, ...]:
    scaling = getattr(impl, "scaling", None)
    if scaling:          # an fp8 GEMM: which entry runs does not depend on the scales' values
        (M, K), N = a.shape, b.shape[1]
        p = fp8.validate_scaled(impl.name, scaling, impl.dtypes, impl.out_dtypes, a, b, c, alpha, beta, out,
                                *fp8.unit_scales(scaling, M, N, K), allow_cpu=True)
    else:
        p = validate(impl.name, impl.dtypes, impl.out_dtypes, a, b, c, alpha, beta, out, allow_cpu=True,
                     layouts=impl.layouts)
    return impl.launch.plan(p, SMS)


GPU_SUITE = ("tests/test_gpu_equivalence.py", "tests/test_gpu_regressions.py")
_COLLECT = """
import json, sys, pytest
class Calls:
    def __init__(self):
        self.calls = []
    def pytest_collection_modifyitems(self, items):
        for it in items:
            p = getattr(it, "callspec", None)
            self.calls.append([it.originalname, {k: v for k, v in (p.params if p else {}).items()
                                                 if isinstance(v, (str, int, float, bool))}])
c = Calls()
pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-o", "addopts=-ra", *sys.argv[2:]],
            plugins=[c])
open(sys.argv[1], "w").write(json.dumps(c.calls))
"""


def collect(root, out) -> dict[str, list[tuple[str, dict]]]:
    """{implementation: [(test function, its parameters)]}: the GPU suite of the tree at `root` as pytest collects
    it (in a fresh process), so a GPU test renamed away or re-parametrised changes what this file sees."""
    import json
    import os
    import subprocess
    import sys
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(study.registry.ROOT)])}
    subprocess.run([sys.executable, "-c", _COLLECT, str(out), *GPU_SUITE], cwd=root, check=True, env=env,
                   capture_output=True, timeout=600)
    calls: dict[str, list] = {}
    for fn, params in json.loads(out.read_text()):
        calls.setdefault(params.get("impl_name"), []).append((fn, params))
    return calls


@pytest.fixture(scope="module")
def suite_calls(tmp_path_factory):
    return collect(study.registry.ROOT, tmp_path_factory.mktemp("collect") / "calls.json")


def suite_entries(impl, calls) -> set[str]:
    """The entries the GPU suite's collected calls of `impl` launch, each call planned on CPU tensors of the
    layout its test function gives them (tests/test_gpu_equivalence.py); a test function not modelled here
    adds nothing."""
    seen: set[str] = set()
    for fn, p in calls.get(impl.name, []):
        if "dtype" not in p:           # batched and range tests: launches these calls already reach
            continue
        dtype = p["dtype"]
        od = impl.out_dtypes.get(dtype)

        def x_of(M, N, K):
            return make_inputs(M, N, K, dtype, "cpu", 1.0, 0.5, od)
        if fn == "test_matches_float64":
            x = x_of(p["M"], p["N"], p["K"])
            seen.update(_plan(impl, x.a, x.b, x.c, x.out))
        elif fn == "test_transposed_operands":
            x, ab = x_of(p["M"], p["N"], p["K"]), p["layouts"]
            a = column_major(x.a) if ab[0] == "c" else x.a
            b = column_major(x.b) if ab[1] == "c" else x.b
            seen.update(_plan(impl, a, b, x.c, x.out))
        elif fn == "test_padded_rows_and_repeat_calls":
            M, N, K = PADDED_SHAPE
            x = x_of(M, N + 3, K + 5)
            c, out = x_of(M, N + 9, 1).c[:, :N], x_of(M, N + 2, 1).out[:, :N]
            seen.update(_plan(impl, x.a[:, :K], x.b[:K, :N], c, out))
        elif fn == "test_unaligned_views":
            x = x_of(p["M"], p["N"], p["K"])
            seen.update(_plan(impl, *(shifted(t) for t in (x.a, x.b, x.c, x.out))))
        elif fn == "test_persistent_grid_walks_many_tiles":
            x = x_of(*impl.launch.many_tiles(SMS), 333)
            seen.update(_plan(impl, x.a, x.b, x.c, x.out))
        elif fn == "test_every_tile_a_dispatch_can_pick":
            x = x_of(*impl.launch.shapes(SMS)[p["choice"]], DISPATCH_K)
            view = pitched16 if p["aligned"] else shifted
            seen.update(_plan(impl, *(view(t) for t in (x.a, x.b, x.c, x.out))))
        elif fn == "test_accumulates_in_fp32":
            x = x_of(*ACCUMULATOR_SHAPE)
            seen.update(_plan(impl, x.a, x.b, None, x.out, beta=0.0))
        elif fn == "test_fp8_promotion":
            x = x_of(*FP8_ACCUMULATOR_SHAPE)
            seen.update(_plan(impl, x.a, x.b, None, x.out, beta=0.0))
    return seen


def all_entries(impl) -> set[str]:
    return reachable_entries(impl)


def _cuda():
    return [i.name for i in study.implementations("cuda")]


@pytest.mark.parametrize("name", _cuda())
def test_gpu_suite_reaches_every_entry(name, suite_calls):
    impl = study.get(name)
    missing = all_entries(impl) - suite_entries(impl, suite_calls)
    assert not missing, f"{name}: the GPU suite never launches {sorted(missing)} on a {SMS}-SM GPU"


SANITIZER_AWAITING: dict[str, set[str]] = {}   # implementation -> entries the sanitizer does not reach yet


@pytest.mark.parametrize("name", _cuda())
def test_sanitizer_reaches_every_entry(name):
    impl = study.get(name)
    seen = set()
    for _, a, b, x, alpha, beta in sanitize.calls(impl, SMS, "cpu"):
        seen.update(_plan(impl, a, b, x.c, x.out, alpha, beta))
    missing = all_entries(impl) - seen
    assert missing == SANITIZER_AWAITING.get(name, set()), \
        f"{name}: the sanitizer never launches {sorted(missing)} on a {SMS}-SM GPU (awaiting: drop what it reaches now)"


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
    """Stage 14's last form: 128x256 tiles where 256x192 ones would leave a wave short (4096^3: 2.67 waves of
    the big tile against 3.88), 256x192 clusters where the waves are near even (8192^3, 6144^3); each choice's
    test shape has many tiles per SM and an odd count of tile-rows, on GPUs of any size (that it picks its
    choice: the test above)."""
    d = study.get("cuda:14_wgmma").launch
    wide, narrow = d.choices
    assert d.pick(4096, 4096, 132) is narrow and d.pick(1, 1, 132) is narrow and d.pick(2048, 8192, 132) is narrow
    assert d.pick(8192, 8192, 132) is wide and d.pick(6144, 6144, 132) is wide
    for sms in (132, 114, 78, 16):
        for (M, N), c in zip(d.shapes(sms), d.choices):
            rows, cols = -(-M // c.tile[0]), -(-N // c.tile[1])
            assert rows % 2 and rows * cols >= 2.5 * sms, (sms, M, N, c.tile)


# The GPU tests that alone reach some entries: renamed away, the suite misses those entries (mutation e).
SOLE_REACH = ("test_unaligned_views", "test_persistent_grid_walks_many_tiles", "test_every_tile_a_dispatch_can_pick",
              "test_accumulates_in_fp32")


def test_renaming_away_the_gpu_tests_that_reach_entries_fails(tmp_path):
    import shutil
    root = tmp_path / "repo"
    shutil.copytree(study.registry.ROOT / "tests", root / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(study.registry.ROOT / "pyproject.toml", root)
    path = root / GPU_SUITE[0]
    text = path.read_text()
    for fn in SOLE_REACH:
        assert f"def {fn}(" in text, f"{fn} is gone from {GPU_SUITE[0]}: update SOLE_REACH"
        text = text.replace(f"def {fn}(", f"def renamed_{fn[5:]}(")
    path.write_text(text)
    calls = collect(root, tmp_path / "calls.json")
    missing = {n: all_entries(study.get(n)) - suite_entries(study.get(n), calls) for n in _cuda()}
    assert sum(map(len, missing.values())) >= 6, missing
