"""Shared test setup.

* Without a CUDA GPU, Triton runs under its interpreter (TRITON_INTERPRET=1 must be set before any
  triton_kernels module is imported, which is why it is set here, at collection).
* `@pytest.mark.gpu` tests are skipped without a GPU; with `--write-evidence PATH` a GPU run records, per
  implementation, its key (what runs and how it is judged) and whether every one of its tests passed (see
  study/measure/evidence.py).
  The tally is kept from the test reports (`pytest_runtest_logreport`), so it also works under pytest-xdist,
  where the reports of every worker reach the controller.
* `--stale-only` (with `--write-evidence`) runs the GPU tests of only those implementations whose current
  key has no passing record yet: the others are deselected.
"""
from __future__ import annotations

import collections
import json
import os

import pytest
import torch

HAS_GPU = torch.cuda.is_available()
_CONFIG = None
if not HAS_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_addoption(parser):
    parser.addoption("--write-evidence", default=None, metavar="PATH",
                     help="after a GPU run, write per-implementation pass/fail records to PATH")
    parser.addoption("--stale-only", action="store_true",
                     help="GPU tests only for implementations without a passing record for their current source")
    parser.addoption("--gpu-test-counts", default=None, metavar="PATH",
                     help="write {implementation: number of GPU tests collected} to PATH (see expected_gpu_tests)")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU; skipped without one")
    config.addinivalue_line("markers", "browser: needs headless Chromium")
    config._impl_outcomes = {}
    global _CONFIG
    _CONFIG = config


def _impl_of(item) -> str | None:
    return getattr(item, "callspec", None) and item.callspec.params.get("impl_name")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: counted before -k or --stale-only deselects anything, so this is the full suite per implementation.
    full = collections.Counter(_impl_of(it) for it in items if "gpu" in it.keywords and _impl_of(it))
    counts_path = config.getoption("--gpu-test-counts")
    if counts_path:
        with open(counts_path, "w") as f:
            json.dump(dict(full), f)
    if HAS_GPU:
        path = config.getoption("--write-evidence")
        if config.getoption("--stale-only") and path:
            from study.measure import evidence
            from study import registry
            keys = evidence.Keys()
            fresh = {i.name for i in registry.implementations()
                     if evidence.passing(path, i.name, keys.key(i.name), full[i.name])}
            keep = [it for it in items if _impl_of(it) not in fresh]
            config.hook.pytest_deselected(items=[it for it in items if _impl_of(it) in fresh])
            items[:] = keep
        return
    skip = pytest.mark.skip(reason="no CUDA GPU here; GPU results are proven by reports/gpu-evidence.json")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    name = _impl_of(item)
    if name and "gpu" in item.keywords:
        rep.user_properties.append(("impl", name))   # travels with the report to an xdist controller


def pytest_runtest_logreport(report):
    name = dict(report.user_properties).get("impl")
    if name and HAS_GPU and (report.when == "call" or report.failed):
        outcomes = _CONFIG._impl_outcomes
        passed, total = outcomes.get(name, (0, 0))
        ok = report.passed and report.when == "call"
        outcomes[name] = (passed + ok, total + 1)


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--write-evidence")
    if hasattr(session.config, "workerinput"):   # an xdist worker: the controller writes the evidence
        return
    if path and HAS_GPU and session.config._impl_outcomes:
        from study.measure import evidence
        from tests.helpers import expected_gpu_tests
        evidence.record(path, session.config._impl_outcomes, expected_gpu_tests())
