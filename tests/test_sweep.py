"""The sweep's CPU-side behaviour: no GPU means a plain message and a non-zero exit; presets, grouping and
--resume do what they say."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import study
from study.measure import sweep
from study.core.schema import RESULT_COLUMNS


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_without_a_gpu_it_says_so_and_points_to_the_report(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "study.sweep", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "no CUDA GPU" in proc.stderr and "python -m study.report" in proc.stderr
    assert not (tmp_path / "results.csv").exists()


def test_shape_presets():
    square = sweep.parse_shapes("square", quick=False)
    assert [s[0] for s in square] == [128, 256, 512, 1024, 2048, 4096, 8192]
    assert all(m == n == k and tag == "square" for m, n, k, tag in square)
    llama = sweep.parse_shapes("llama3", quick=False)
    assert (4096, 4096, 14336, "llama3") in llama and any(m <= 16 for m, _, _, _ in llama)
    assert not any(m == n == k for m, n, k, _ in llama), "a model shape equal to a square would be measured twice"
    assert sweep.parse_shapes("7x9x1000", quick=False) == [(7, 9, 1000, "custom")]
    with pytest.raises(SystemExit, match="not a preset"):
        sweep.parse_shapes("big", quick=False)


def test_each_group_times_its_cublas_baseline_first():
    impls = sweep.select("all", "cuda,triton,cublas")
    groups = list(sweep.plan(impls, [(64, 64, 64, "square")], ["fp32", "bf16"]))
    fp32 = next(g for g in groups if g[4] == "fp32")[-1]
    cublas = [i.name for i in fp32 if i.backend == "cublas"]
    assert [i.name for i in fp32[:len(cublas)]] == cublas and cublas[0] == "cublas" and "cublas:tf32" in cublas
    assert {i.name for i in fp32} >= {"cuda:01_naive", "triton:03_smem_tiling", "triton:tuned-tf32"}
    bf16 = next(g for g in groups if g[4] == "bf16")[-1]
    assert bf16[0].name == "cublas" and all("bf16" in i.dtypes for i in bf16)


def test_select_filters_by_stage_and_backend():
    chosen = sweep.select("03", "triton")
    assert [i.name for i in chosen] == ["triton:03_smem_tiling"]
    with pytest.raises(SystemExit):
        sweep.select("99", "cuda")


def test_resume_keeps_rows_and_appends(tmp_path):
    path = tmp_path / "results.csv"
    row = dict.fromkeys(RESULT_COLUMNS, "")
    row.update(impl="cuda:01_naive", dtype="fp32", M=8, N=8, K=8, alpha=1.0, beta=0.0, passed=True)
    first = sweep.ResultsFile(path, resume=False)
    first.write(row)
    first.f.close()
    again = sweep.ResultsFile(path, resume=True)
    assert ("cuda:01_naive", "fp32", 8, 8, 8, 1.0, 0.0) in again.done
    again.write({**row, "impl": "cublas"})
    again.f.close()
    rows = list(csv.DictReader(path.open()))
    assert [r["impl"] for r in rows] == ["cuda:01_naive", "cublas"]
    fresh = sweep.ResultsFile(path, resume=False)
    fresh.f.close()
    assert list(csv.DictReader(path.open())) == [], "without --resume the file starts over"
    assert study.get("cublas")


def test_refresh_stale_drops_only_stale_rows(tmp_path):
    """--refresh-stale re-measures rows whose code has changed: drop_stale removes exactly those (then --resume
    measures them, and any missing ones, again)."""
    import csv
    import shutil

    from study.measure.sweep import drop_stale
    path = tmp_path / "results.csv"
    shutil.copy(Path(__file__).resolve().parents[1] / "reports" / "h100" / "results.csv", path)
    drop_stale(path)                   # the committed report may hold stale rows of its own: start from none
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    rows[5]["impl_key"] = "0" * 12
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert drop_stale(path) == 1
    with path.open(newline="") as f:
        kept = list(csv.DictReader(f))
    assert len(kept) == len(rows) - 1 and all(r["impl_key"] != "0" * 12 for r in kept)
    assert drop_stale(path) == 0


def test_redo_drops_the_selection_and_its_baselines(tmp_path):
    """--redo times a selection again side by side: drop_calls removes exactly the rows plan() measures for it,
    its cuBLAS baselines included, at the sweep's alpha and beta, and no other row."""
    import csv
    import random

    from study.measure import sweep
    from study.measure.shard import row_key
    path = tmp_path / "results.csv"
    groups = list(sweep.plan(sweep.select("16", "cuda,cublas"), [(4096, 4096, 4096, "square")], ["fp8e4m3"]))
    want = sweep.selected(groups, 1.0, 0.0)
    assert {k[0] for k in want} >= {"cuda:16_fp8", "cuda:16_fp8-block", "cublas:fp8", "cublas:fp8-block"}
    assert not {k[0] for k in want} & {"triton:16_fp8", "gluon:16_fp8", "cublas"}
    template = dict.fromkeys(["impl", "dtype", "M", "N", "K", "alpha", "beta", "passed"])
    rows = [dict(template, impl=name, dtype=dtype, M=M, N=N, K=K, alpha=a, beta=b, passed="True")
            for name, dtype, M, N, K, a, b in sorted(want)]
    others = [dict(r, M=8192, N=8192, K=8192) for r in rows[:3]] + [dict(rows[0], beta=0.5),
                                                                     dict(rows[1], impl="triton:16_fp8"),
                                                                     dict(rows[2], dtype="bf16")]
    mixed = rows + others
    random.shuffle(mixed)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, list(template))
        w.writeheader()
        w.writerows(mixed)
    assert sweep.drop_calls(path, want) == len(rows)
    with path.open(newline="") as f:
        kept = list(csv.DictReader(f))
    assert sorted(map(row_key, kept)) == sorted(map(row_key, others))
    assert sweep.drop_calls(path, want) == 0


def test_resumed_ceilings_measure_only_what_is_missing(monkeypatch):
    """A resumed sweep keeps the ceilings a report holds and measures only those it lacks (a ceiling added later,
    as fp8's was); a kept value is never re-measured or dropped."""
    from study.measure import ceilings
    called = []

    def probe(name, value):
        def fn(*a, **k):
            called.append(name)
            return value, 1755.0
        return fn

    for fn in ("dram_gbps", "smem_gbps", "l2_gbps", "fp32_fma_tflops", "gemm_tflops", "fp8_tflops"):
        monkeypatch.setattr(ceilings, fn, probe(fn, 123.0))
    monkeypatch.setattr(ceilings, "mma_sync_peak", lambda *a: called.append("mma") or {})
    monkeypatch.setattr(ceilings, "tcec_probe", lambda *a: {"fresh": True})
    monkeypatch.setattr(ceilings.torch.cuda, "get_device_name", lambda d: "NVIDIA H100 80GB HBM3")
    keys = ["dram_gbps", "smem_gbps", "l2_gbps", "fp32_fma_tflops", "tf32_tc_tflops", "fp16_tc_tflops",
            "bf16_tc_tflops", "int8_tc_tops", "fp64_tc_tflops"]
    keys += [name for name, _, _ in ceilings.MMA_PEAK.values()]
    kept = {"measured": {k: 7.0 for k in keys}, "sm_clock_mhz": {k: 1980.0 for k in keys},
            "method": {k: "kept" for k in keys}}
    out = ceilings.measure("cuda:0", None, kept=kept)
    assert called == ["fp8_tflops"]
    assert out["measured"]["fp8_tc_tflops"] == 123.0 and out["sm_clock_mhz"]["fp8_tc_tflops"] == 1755.0
    assert all(out["measured"][k] == 7.0 and out["method"][k] == "kept" for k in keys)
    assert out["tcec"] == {"fresh": True}
    called.clear()
    fresh = ceilings.measure("cuda:0", None)
    assert "fp8_tflops" in called and "mma" in called and fresh["measured"]["dram_gbps"] == 123.0
