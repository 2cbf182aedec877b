"""ncu's counters as the report reads them (study/measure/ncu.py): kernels attributed to implementations in
launch order, units converted, and nothing guessed when the file does not add up."""
from __future__ import annotations

import shutil

import pytest

from study.measure import ncu as counters

from study.present import report
from study.registry import ROOT

TCEC = ROOT / "reports" / "ncu_tcec.csv"


def test_committed_profile_maps_each_kernel_to_its_implementation():
    prof = counters.load(TCEC)
    assert not prof.notes, prof.notes
    assert prof.machine["gpu"].startswith("NVIDIA ") and prof.machine["n"] == 4096
    by_impl = {r["impl"]: r for r in prof.rows}
    assert by_impl["cuda:14_tcec"]["kernel"] == "tcec_fp16"
    assert by_impl["cuda:14_tcec-markidis"]["kernel"] == "tcec_markidis"
    assert by_impl["cublas"]["kernel"] != "tcec_fp16"
    row = by_impl["cuda:14_tcec"]
    assert row["registers"] == 255
    assert 0.1 < row["ms"] < 10, "ns in the file must come out as milliseconds"
    assert 0 < row["tensor_pct"] <= 100 and 0 < row["issue_pct"] <= 100


def _write(tmp_path, names, kernels):
    header = '"ID","Kernel Name","gpu__time_duration.sum","launch__registers_per_thread"'
    units = '"","","usecond",""'
    lines = ["MACHINE {\"gpu\": \"NVIDIA test\", \"commit\": \"abc\", \"n\": 64}"]
    lines += [f"PROFILED {n}" for n in names] + [header, units]
    lines += [f'"{i}","{k}","1,500","40"' for i, k in enumerate(kernels)]
    path = tmp_path / "ncu_test.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_units_and_thousands_separators(tmp_path):
    prof = counters.load(_write(tmp_path, ["a"], ["k_a"]))
    assert prof.rows == [{"impl": "a", "kernel": "k_a", "ms": pytest.approx(1.5), "registers": 40.0,
                          **{c: None for c in counters.COUNTER_COLUMNS if c != "registers"}}]


def test_mismatched_counts_are_not_attributed(tmp_path):
    prof = counters.load(_write(tmp_path, ["a", "b"], ["k1", "k2", "k3"]))
    assert [r["impl"] for r in prof.rows] == ["", "", ""]
    assert prof.notes and "not attributed" in prof.notes[0]


def test_report_shows_the_counters(tmp_path):
    shutil.copytree(ROOT / "tests" / "fixtures" / "reports", tmp_path, dirs_exist_ok=True)
    shutil.copy(TCEC, tmp_path / "ncu_tcec.csv")
    page = report.render(tmp_path).read_text()
    assert 'id="counters"' in page and "tcec_markidis" in page and "Tensor pipe busy" in page
