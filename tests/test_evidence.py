"""CI has no GPU, so every kernel must carry proof that its current source passed on one.

reports/gpu-evidence.json is written by `pytest -m gpu --write-evidence ...` on the GPU (tools/gpu_run.sh),
never by hand.  Change a kernel, its hash changes, and this test fails until the GPU run is repeated.
"""
from __future__ import annotations

import pytest

import study
from study import evidence, registry

EVIDENCE = registry.ROOT / "reports" / "gpu-evidence.json"


@pytest.mark.parametrize("name", [i.name for i in study.implementations()])
def test_current_source_passed_on_a_gpu(name):
    impl = study.get(name)
    rec = evidence.passing(EVIDENCE, impl)
    assert rec is not None, (f"{name}: no passing GPU record for source hash {impl.source_sha256()[:12]} in "
                             f"{EVIDENCE.name}; run tools/gpu_run.sh on a GPU and commit its evidence")
    assert rec["tests_run"] > 0 and rec["tests_passed"] == rec["tests_run"]
    assert rec["gpu"].startswith("NVIDIA "), f"{name}: evidence does not name the GPU it ran on: {rec}"
