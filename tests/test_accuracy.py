"""Stage 14's accuracy study on the CPU: the input generators, the error metrics, the Pareto front, how rows
are assembled (a raising method is a row, not a crash), and the report's TCEC section from the fixture."""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

import study
from study.core.stages import stage
from study.measure import accuracy
from study.measure.accuracy import ACCURACY_COLUMNS, FP16_METHOD, ErrorTally, Method, errors, sample
from study.measure.frame import load_json, load_results
from study.present import figures, tcec
from study.present.report import render
from study.present.tcec_figures import pareto_front

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reports"
CPU = torch.device("cpu")


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# --- generators ---------------------------------------------------------------------------------------

def test_randn_is_standard_normal_with_both_signs():
    x = sample("randn", (512, 512), gen())
    assert x.dtype == torch.float32
    assert abs(float(x.mean())) < 0.01 and abs(float(x.std()) - 1) < 0.01
    assert 0.45 < float((x < 0).float().mean()) < 0.55


def test_uniform_is_in_zero_one():
    x = sample("uniform", (512, 512), gen())
    assert float(x.min()) >= 0.0 and float(x.max()) < 1.0
    assert abs(float(x.mean()) - 0.5) < 0.01


def test_wide_spans_2_to_the_plus_minus_24_with_random_signs_and_no_zeros():
    x = sample("wide", (1024, 1024), gen())
    mag = x.abs()
    assert x.dtype == torch.float32 and not (x == 0).any() and torch.isfinite(x).all()
    assert float(mag.min()) >= 2.0**-24 and float(mag.max()) <= 2.0**24
    assert 0.45 < float((x < 0).float().mean()) < 0.55
    # log2|x| uniform on [-24, 24): a sixth of the values overflow fp16 (> 65504), about 5/24 are below its
    # smallest normal (2^-14), and a tf32 split (fp32's exponent) keeps every one of them finite.
    assert abs(float((mag > 65504).float().mean()) - 1 / 6) < 0.01
    assert abs(float((mag < 2.0**-14).float().mean()) - 10 / 48) < 0.01
    assert torch.isinf(x.half()).any() and torch.isfinite(x.half().float()[mag < 65504]).all()
    e = torch.log2(mag)
    assert abs(float(e.mean())) < 0.1 and float(e.std()) == pytest.approx(48 / math.sqrt(12), rel=0.01)


def test_unknown_distribution_is_refused():
    with pytest.raises(ValueError, match="unknown distribution"):
        sample("lognormal", (2, 2), gen())


# --- metrics -------------------------------------------------------------------------------------------

def test_max_relerr_is_the_largest_elementwise_ratio():
    d = torch.tensor([[1.5, 2.0], [3.0, -4.0]])
    ref = torch.tensor([[1.0, 2.5], [3.0, -4.0]], dtype=torch.float64)
    e = errors(d, ref)
    # per element: 0.5 / 1 and 0.5 / 2.5, so 0.5 (normalising by the largest |R| would give 0.125)
    assert e["max_relerr"] == pytest.approx(0.5)
    assert e["relerr"] == pytest.approx(math.sqrt(0.25 + 0.25) / math.sqrt(1 + 6.25 + 9 + 16))
    assert e["nonfinite"] == 0


def test_max_relerr_skips_zero_reference_elements():
    e = errors(torch.tensor([[5.0, 1.1]]), torch.tensor([[0.0, 1.0]], dtype=torch.float64))
    assert e["max_relerr"] == pytest.approx(0.1)
    assert e["relerr"] == pytest.approx(math.sqrt(25 + 0.01))


def test_nonfinite_results_have_infinite_error_and_are_counted():
    d = torch.tensor([[1.0, float("inf")], [float("nan"), 4.0]])
    e = errors(d, torch.ones(2, 2, dtype=torch.float64))
    assert e == {"relerr": math.inf, "max_relerr": math.inf, "nonfinite": 2}


def test_chunked_tally_equals_the_whole():
    d, ref = torch.randn(6, 5, 7, generator=gen(1)), torch.randn(6, 5, 7, generator=gen(2)).double()
    t = ErrorTally()
    for i in range(0, 6, 4):
        t.add(d[i:i + 4], ref[i:i + 4])
    whole = errors(d, ref)
    assert t.result()["relerr"] == pytest.approx(whole["relerr"])
    assert t.result()["max_relerr"] == pytest.approx(whole["max_relerr"])


# --- Pareto front --------------------------------------------------------------------------------------

def test_pareto_front_keeps_only_undominated_points():
    pts = pd.DataFrame({
        "impl": ["sgemm", "tcec", "slow_worse", "markidis", "tf32", "nocorr", "tie", "broken"],
        "tflops": [50.0, 90.0, 40.0, 95.0, 300.0, 240.0, 90.0, 500.0],
        "relerr": [2e-7, 3e-7, 5e-7, 2e-6, 3e-4, 3.1e-4, 3e-7, float("inf")],
    })
    front = pareto_front(pts)
    assert set(pts.loc[front, "impl"]) == {"sgemm", "tcec", "markidis", "tf32", "tie"}
    # an exact tie dominates neither; a faster and no less accurate point dominates; inf is never on the front
    assert not front[pts["impl"] == "nocorr"].any() and not front[pts["impl"] == "broken"].any()


# --- rows -----------------------------------------------------------------------------------------------

def test_accuracy_rows_share_inputs_per_k_and_record_a_raising_method():
    seen = []

    def exact(a, b):
        seen.append((a.clone(), b.clone()))
        return (a.double() @ b.double()).float()

    def boom(a, b):
        raise RuntimeError("kernel exploded")

    methods = [Method("exact", "cuda", "14", "fp32", exact), Method("boom", "cuda", "14", "fp32", boom),
               Method("half", "cublas", "baseline", "fp16", lambda a, b: a.half().float() @ b.half().float())]
    rows = list(accuracy.accuracy_rows(methods, ["wide"], [16, 64], 8, CPU, {"gpu": "cpu", "commit": "x"}))
    assert [r["method"] for r in rows] == ["exact", "boom", "half"] * 2
    assert all(set(r) == set(ACCURACY_COLUMNS) for r in rows)
    assert rows[1]["error"] == "RuntimeError: kernel exploded" and rows[1]["relerr"] == ""
    assert rows[0]["relerr"] < 1e-6 and rows[0]["nonfinite"] == 0
    assert rows[2]["nonfinite"] > 0 and rows[2]["relerr"] == math.inf     # wide inputs overflow fp16
    assert rows[0]["seed"] == rows[2]["seed"] and [r["K"] for r in rows[::3]] == [16, 64]
    assert seen[0][0].shape == (8, 16) and seen[1][0].shape == (8, 64)


def test_methods_are_stage_14_and_the_baselines_plus_cublas_fp16():
    methods = accuracy.accuracy_methods(study.implementations())
    names = [m.name for m in methods]
    assert names[-1] == FP16_METHOD and "cublas" in names and "cublas:tf32" in names
    assert "cuda:14_tcec" in names and "cuda:09_best_simt" not in names
    assert all(m.stage in ("14", "baseline") for m in methods)
    fig8 = accuracy.fig8_impls(study.implementations(), {"cuda"})
    assert fig8 and all(i.backend == "cuda" and i.stage_label == "14" for i in fig8)


def test_fig8_rows_time_check_and_label_each_launch(monkeypatch):
    """Figure 8's loop on the CPU, with the CUDA-event timer replaced by a fixed 2 ms: every row is checked
    over the whole batch, says how it was launched, and is normalised by the cuBLAS row timed before it."""
    from study.measure import timing
    monkeypatch.setattr(timing, "L2Flusher", lambda device: (lambda: None))
    monkeypatch.setattr(timing, "ClockSampler", lambda device: None)
    calls = []

    def fixed_bench(fn, flush, clock, budget_ms, min_reps, max_reps):
        calls.append(fn())
        return timing.Timing(2.0, 1.9, 2.1, 3, None)

    monkeypatch.setattr(timing, "bench", fixed_bench)

    def rounded(a, b):
        return torch.bmm(a.half().float(), b.half().float())

    def broken(a, b):
        raise ValueError("cuda:14_tcec-markidis: no batched path")

    impls = [SimpleNamespace(name="cuda:14_tcec", backend="cuda", stage_label="14", precision=lambda d: "fp16x3-tcec",
                             launch=SimpleNamespace(batched=None), batched=rounded),
             SimpleNamespace(name="cuda:14_tcec-markidis", backend="cuda", stage_label="14",
                             precision=lambda d: "fp16x3-markidis", launch=SimpleNamespace(), batched=broken)]
    rows = list(accuracy.fig8_rows(impls, [32, 64], CPU, {"gpu": "cpu", "commit": "x"}, 10.0, batch=5, mn=16,
                                   chunk=2, seed=7))
    assert [(r["method"], r["launch"], r["K"]) for r in rows] == [
        ("cublas:bmm", "torch.bmm", 32), ("cuda:14_tcec", "batched", 32), ("cuda:14_tcec-markidis", "loop", 32),
        ("cublas:bmm", "torch.bmm", 64), ("cuda:14_tcec", "batched", 64), ("cuda:14_tcec-markidis", "loop", 64)]
    assert all(set(r) == set(accuracy.FIG8_COLUMNS) for r in rows)
    assert rows[0]["tflops"] == pytest.approx(5 * 2 * 16 * 16 * 32 / 2e9) and rows[1]["x_sgemm"] == pytest.approx(1.0)
    assert rows[0]["max_relerr"] < 1e-5 < rows[1]["max_relerr"] < 1e-2      # fp32 vs fp16-rounded inputs
    assert rows[2]["error"].startswith("ValueError") and rows[2]["tflops"] == ""
    assert calls[0].shape == (5, 16, 16)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_without_a_gpu_it_says_so(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "study.accuracy", "--quick", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "no CUDA GPU" in proc.stderr
    assert not (tmp_path / "accuracy.csv").exists()


# --- the report ------------------------------------------------------------------------------------------

@pytest.fixture()
def fixture_dir(tmp_path) -> Path:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    return tmp_path


def test_report_renders_the_tcec_section_from_the_fixture(fixture_dir):
    html = render(fixture_dir).read_text(encoding="utf-8")
    assert "Stage 14: TCEC (fp32 on fp16 tensor cores)" in html and 'href="#tcec"' in html
    for png in ("tcec_accuracy.png", "tcec_pareto.png", "tcec_fig8.png"):
        assert (fixture_dir / png).is_file() and f'src="{png}"' in html
    assert "54.2" in html and "Section 4.4.2" in html and "2.78x" in html    # seed 002's A100 beside ours
    assert 'href="accuracy.csv"' in html and 'href="fig8.csv"' in html
    assert "NaN/inf x" in html and "raised" in html       # wide inputs broke the fp16 splits; one method raised


def test_tcec_context_numbers(fixture_dir):
    df, _ = load_results(fixture_dir / "results.csv")
    t = tcec.section(df, load_json(fixture_dir / "ceilings.json"), fixture_dir)
    assert t["pareto_shape"] == "4096x4096x4096"
    front = {p["impl"] for p in t["pareto"] if p["front"]}
    assert front == {"cublas", "cuda:14_tcec", "cuda:14_tcec-markidis", "cublas:tf32"}
    assert t["worse_variants"] == ["markidis", "nocorr", "tf32"]
    cuda_randn = next(r for r in t["worse"] if r["backend"] == "CUDA" and r["distribution"] == "randn" and r["K"] == 256)
    assert cuda_randn["cells"] == ["7.5x", "1,400x", "1.1x"]
    ours = t["fig8"]["ours"]
    assert ours["method"] == "cuda:14_tcec" and ours["k"] == "4096" and ours["x_sgemm"].startswith("1.78x")
    raised = next(c for r in t["acc"]["tables"][0]["rows"] if r["method"] == "gluon:14_tcec" for c in r["cells"]
                  if c["text"] == "raised")
    assert "fixture" in raised["title"]


def test_section_says_when_accuracy_csv_is_absent(fixture_dir):
    (fixture_dir / "accuracy.csv").unlink()
    html = render(fixture_dir).read_text(encoding="utf-8")
    assert "no accuracy.csv in this directory" in html
    assert not (fixture_dir / "tcec_accuracy.png").exists() and (fixture_dir / "tcec_pareto.png").is_file()


def test_no_section_without_any_stage_14_data(fixture_dir):
    for name in ("accuracy.csv", "fig8.csv"):
        (fixture_dir / name).unlink()
    df = pd.read_csv(fixture_dir / "results.csv", dtype=str, keep_default_na=False)
    df[df["stage"] != "14"].to_csv(fixture_dir / "results.csv", index=False)
    html = render(fixture_dir).read_text(encoding="utf-8")
    assert 'id="tcec"' not in html and "#tcec" not in html
    assert not list(fixture_dir.glob("tcec_*.png"))


def test_fp32_roofline_gets_a_third_of_the_tensor_core_peaks():
    ceilings = {"measured": {"fp16_tc_tflops": 700.0, "tf32_tc_tflops": 370.0, "fp32_fma_tflops": 60.0},
                "datasheet": {"fp16_tc_tflops": 989.4}}
    tcec_stage = stage("14")
    split = {k: (m, d) for k, _, _, m, d in figures.split_ceilings(ceilings, tcec_stage)}
    labels = [label for _, label, _, _, _ in figures.split_ceilings(ceilings, tcec_stage)]
    assert labels == ["TF32 TC / 3 (3xTF32)", "FP16 TC / 3 (TCEC)"]
    assert split["fp16_tc_over3_tflops"] == pytest.approx((700 / 3, 989.4 / 3))
    assert split["tf32_tc_over3_tflops"][0] == pytest.approx(370 / 3) and split["tf32_tc_over3_tflops"][1] is None
    assert figures.split_ceilings({"measured": {"fp32_fma_tflops": 60.0}}, tcec_stage) == []
