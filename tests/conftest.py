"""Shared test setup.

* Without a CUDA GPU, Triton runs under its interpreter (TRITON_INTERPRET=1 must be set before any
  triton_kernels module is imported, which is why it is set here, at collection).
* `@pytest.mark.gpu` tests are skipped without a GPU; with `--write-evidence PATH` a GPU run records, per
  implementation, the SHA-256 of its sources and whether every one of its tests passed (see study/evidence.py).
"""
from __future__ import annotations

import os

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_addoption(parser):
    parser.addoption("--write-evidence", default=None, metavar="PATH",
                     help="after a GPU run, write per-implementation pass/fail records to PATH")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    config.addinivalue_line("markers", "browser: needs headless Chromium")
    config._impl_outcomes = {}


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU here; GPU results are proven by reports/gpu-evidence.json")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    name = getattr(item, "callspec", None) and item.callspec.params.get("impl_name")
    if name and "gpu" in item.keywords and (rep.when == "call" or rep.failed):
        passed, total = item.config._impl_outcomes.get(name, (0, 0))
        ok = rep.passed and rep.when == "call"
        item.config._impl_outcomes[name] = (passed + ok, total + (rep.when == "call" or rep.failed))


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--write-evidence")
    if path and HAS_GPU and session.config._impl_outcomes:
        from study import evidence
        evidence.record(path, session.config._impl_outcomes)
