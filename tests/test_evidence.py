"""CI has no GPU, so every kernel must carry proof that its current source passed on one.

reports/gpu-evidence.json is written by `pytest -m gpu --write-evidence ...` on the GPU (tools/gpu_run.sh),
never by hand.  Change a kernel, its hash changes, and this test fails until the GPU run is repeated.
"""
from __future__ import annotations

import pytest

import study
from study import evidence, registry
from tests.helpers import expected_gpu_tests

EVIDENCE = registry.ROOT / "reports" / "gpu-evidence.json"


@pytest.fixture(scope="module")
def expected():
    return expected_gpu_tests()


@pytest.mark.parametrize("name", [i.name for i in study.implementations()])
def test_current_source_passed_on_a_gpu(name, expected):
    impl = study.get(name)
    rec = evidence.passing(EVIDENCE, impl)
    assert rec is not None, (f"{name}: no passing GPU record of the full suite for source hash "
                             f"{impl.source_sha256()[:12]} in {EVIDENCE.name}; run tools/gpu_run.sh on a GPU "
                             f"and commit its evidence")
    assert rec["tests_run"] > 0 and rec["tests_passed"] == rec["tests_run"]
    assert rec["tests_run"] == expected.get(name), (
        f"{name}: its record ran {rec['tests_run']} GPU tests, the suite now has {expected.get(name)}: "
        f"tests were added since; run them on a GPU")
    assert rec["gpu"].startswith("NVIDIA "), f"{name}: evidence does not name the GPU it ran on: {rec}"


@pytest.mark.parametrize("name", [i.name for i in study.implementations("cuda")])
def test_cuda_kernel_is_sanitizer_clean(name):
    """compute-sanitizer memcheck, racecheck, synccheck and initcheck found nothing in this kernel's current
    source, on ragged shapes (study/sanitize.py, run by tools/gpu_run.sh)."""
    impl = study.get(name)
    rec = evidence.sanitizer_clean(EVIDENCE, impl)
    assert rec is not None, (f"{name}: no clean compute-sanitizer record for source hash "
                             f"{impl.source_sha256()[:12]}; run STUDY_STEPS=sanitize tools/gpu_run.sh on a GPU")
    assert set(rec["errors"]) == {"memcheck", "racecheck", "synccheck", "initcheck"}, rec
