"""CI has no GPU, so every kernel must carry proof that its current source passed on one.

reports/gpu-evidence.json is written by `pytest -m gpu --write-evidence ...` on the GPU (tools/gpu_run.sh),
never by hand.  Change a kernel, its hash changes, and this test fails until the GPU run is repeated.  A record
counts only if it ran as many tests as the full GPU suite now has for that implementation.  CUDA kernels also
need a clean compute-sanitizer record (study/sanitize.py) for their current source.

AWAITING_GPU and AWAITING_SANITIZER name, explicitly, what was committed without that proof.  Their tests are
strict xfails: the day the proof is committed they XPASS, which fails the run until the name is removed here.
"""
from __future__ import annotations

import pytest

import study
from study import evidence, registry
from tests.helpers import expected_gpu_tests

EVIDENCE = registry.ROOT / "reports" / "gpu-evidence.json"

# Nothing awaits GPU evidence: the H100 run of 2026-11-23 (commits fa84eb1 and 305448a) recorded every
# implementation's full suite.
AWAITING_GPU: set[str] = set()
# Every CUDA kernel has a clean record: stage 09, the last, after its fix in 6a402ce (NOTES.md, "Stage 09
# initcheck").
AWAITING_SANITIZER: set[str] = set()


@pytest.fixture(scope="module")
def expected():
    return expected_gpu_tests()


def _awaiting(awaiting: set[str], names: list[str], what: str) -> list:
    """`names` as pytest params, those in `awaiting` as strict xfails (they must fail until `what` lands)."""
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=f"{what} not committed yet"))
            if n in awaiting else n for n in names]


@pytest.mark.parametrize("name", _awaiting(AWAITING_GPU, [i.name for i in study.implementations()], "GPU evidence"))
def test_current_source_passed_on_a_gpu(name, expected):
    impl = study.get(name)
    rec = evidence.passing(EVIDENCE, impl, expected[name])
    assert rec is not None, (f"{name}: no passing GPU record of all {expected[name]} of its tests for source hash "
                             f"{impl.source_sha256()[:12]} in {EVIDENCE.name}; run tools/gpu_run.sh on a GPU "
                             f"and commit its evidence")
    assert rec["tests_run"] > 0 and rec["tests_passed"] == rec["tests_run"]
    assert rec["gpu"].startswith("NVIDIA "), f"{name}: evidence does not name the GPU it ran on: {rec}"


@pytest.mark.parametrize("name", _awaiting(AWAITING_SANITIZER, [i.name for i in study.implementations("cuda")],
                                           "a clean compute-sanitizer record"))
def test_cuda_kernel_is_sanitizer_clean(name):
    """compute-sanitizer memcheck, racecheck, synccheck and initcheck found nothing in this kernel's current
    source, on ragged shapes (study/sanitize.py, run by tools/gpu_run.sh)."""
    impl = study.get(name)
    rec = evidence.sanitizer_clean(EVIDENCE, impl)
    assert rec is not None, (f"{name}: no clean compute-sanitizer record for source hash "
                             f"{impl.source_sha256()[:12]}; run STUDY_STEPS=sanitize tools/gpu_run.sh on a GPU")
    assert set(rec["errors"]) == {"memcheck", "racecheck", "synccheck", "initcheck"}, rec


def test_awaiting_lists_name_real_implementations():
    known = {i.name for i in study.implementations()}
    assert AWAITING_GPU <= known and AWAITING_SANITIZER <= known
