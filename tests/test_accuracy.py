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
from study.measure.accuracy import ACCURACY_COLUMNS, FP16_METHOD, Method, errors, products, sample
from study.measure.frame import load_json, load_results
from study.present import figures, tcec
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

def test_an_exact_result_has_no_error():
    a, b = sample("randn", (8, 32), gen(1)), sample("randn", (32, 8), gen(2))
    ref, absprod = products(a, b)
    assert errors(ref.clone(), ref, absprod) == {"relerr": 0.0, "median_relerr": 0.0, "componentwise": 0.0,
                                                 "seed002_max_relerr": 0.0, "nonfinite": 0}


def test_products_are_float64_and_absprod_bounds_the_reference():
    a, b = sample("randn", (6, 5, 9), gen(1)), sample("randn", (6, 9, 4), gen(2))
    ref, absprod = products(a, b, chunk=4)
    assert ref.dtype == absprod.dtype == torch.float64
    assert torch.equal(ref, a.double() @ b.double()) and torch.equal(absprod, a.double().abs() @ b.double().abs())
    assert (absprod >= ref.abs()).all() and (absprod > ref.abs()).any()
    ref2, absprod2 = products(a[0], b[0])
    assert torch.equal(ref2, ref[0]) and torch.equal(absprod2, absprod[0])


def test_an_error_at_a_cancelled_element_is_huge_elementwise_but_small_componentwise():
    # R[0, 0] = 1 - (1 - 2^-20) = 2^-20 by cancellation, while its terms are of size 1: (|A||B|)[0, 0] ~ 2.
    a = torch.tensor([[1.0, 1.0], [1.0, 2.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 3.0], [-(1 - 2.0**-20), 1.0]], dtype=torch.float64)
    ref, absprod = products(a, b)
    assert float(ref[0, 0]) == 2.0**-20
    d = ref.clone()
    d[0, 0] += 2.0**-30
    e = errors(d, ref, absprod)
    assert e["seed002_max_relerr"] == pytest.approx(2.0**-10)                    # |delta| / |R|: ~1e-3
    assert e["componentwise"] == pytest.approx(2.0**-30 / (2 - 2.0**-20))       # |delta| / (|A||B|): ~5e-10
    assert e["median_relerr"] == 0.0                                            # three of four elements exact
    assert e["relerr"] == pytest.approx(2.0**-30 / float(ref.norm()))


def test_median_is_over_nonzero_reference_elements():
    ref = torch.tensor([[1.0, 2.0, 4.0, 0.0]], dtype=torch.float64)
    d = torch.tensor([[1.5, 2.2, 4.0, 5.0]], dtype=torch.float64)       # ratios 0.5, 0.1, 0; R = 0 skipped
    e = errors(d, ref, torch.full_like(ref, 10.0))
    assert e["median_relerr"] == pytest.approx(0.1)
    assert e["seed002_max_relerr"] == pytest.approx(0.5)
    assert e["componentwise"] == pytest.approx(0.5)                   # the R = 0 element: 5 / 10
    assert accuracy.median([torch.tensor([3.0, 1.0]), torch.tensor([10.0, 2.0])]) == 2.5   # even: the mean of 2, 3
    assert accuracy.median([torch.tensor([7.0, 1.0, 3.0])]) == 3.0
    assert math.isnan(accuracy.median([]))
    assert math.isnan(errors(torch.ones(1, 2), torch.zeros(1, 2, dtype=torch.float64),
                             torch.ones(1, 2, dtype=torch.float64))["median_relerr"])


def test_componentwise_counts_zero_over_zero_as_exact_and_x_over_zero_as_infinite():
    ref, absprod = torch.zeros(1, 2, dtype=torch.float64), torch.tensor([[0.0, 1.0]], dtype=torch.float64)
    assert errors(torch.tensor([[0.0, 0.5]]), ref, absprod)["componentwise"] == pytest.approx(0.5)
    assert errors(torch.tensor([[1e-30, 0.5]]), ref, absprod)["componentwise"] == math.inf


def test_on_nonnegative_inputs_componentwise_is_the_max_elementwise_error():
    a, b = sample("uniform", (16, 64), gen(1)), sample("uniform", (64, 16), gen(2))
    ref, absprod = products(a, b)
    e = errors(a.half().float() @ b.half().float(), ref, absprod)
    assert 1e-5 < e["componentwise"] < 1e-2
    assert e["componentwise"] == pytest.approx(e["seed002_max_relerr"], rel=1e-12)


def test_nonfinite_results_have_infinite_error_and_are_counted():
    d = torch.tensor([[1.0, float("inf")], [float("nan"), 4.0]])
    ones = torch.ones(2, 2, dtype=torch.float64)
    assert errors(d, ones, ones) == {"relerr": math.inf, "median_relerr": math.inf, "componentwise": math.inf,
                                     "seed002_max_relerr": math.inf, "nonfinite": 2}


def test_chunked_tally_equals_the_whole():
    d, ref = torch.randn(6, 5, 7, generator=gen(1)), torch.randn(6, 5, 7, generator=gen(2)).double()
    absprod = ref.abs() + torch.rand(6, 5, 7, generator=gen(3), dtype=torch.float64)
    chunked, whole = errors(d, ref, absprod, chunk=4), errors(d, ref, absprod)
    assert chunked["relerr"] == pytest.approx(whole["relerr"])
    for key in ("median_relerr", "componentwise", "seed002_max_relerr"):
        assert chunked[key] == whole[key] > 0


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
    assert 0 <= rows[0]["median_relerr"] < 1e-6 and 0 <= rows[0]["componentwise"] < 1e-6
    assert rows[2]["nonfinite"] > 0 and rows[2]["relerr"] == math.inf     # wide inputs overflow fp16
    assert rows[2]["median_relerr"] == rows[2]["componentwise"] == math.inf
    assert "seed002_max_relerr" not in ACCURACY_COLUMNS
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
    assert rows[0]["seed002_max_relerr"] < 1e-5 < rows[1]["seed002_max_relerr"] < 1e-2   # fp32 vs fp16-rounded
    assert rows[1]["componentwise"] == pytest.approx(rows[1]["seed002_max_relerr"])      # uniform: R = |A||B|
    assert 0 < rows[1]["median_relerr"] < rows[1]["componentwise"]
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
    html = _render(fixture_dir).read_text(encoding="utf-8")
    assert "Stage 14: TCEC (fp32 on fp16 tensor cores)" in html and 'href="#tcec"' in html
    assert 'id="fig-pareto"' in html           # the Pareto plot is interactive; its PNG stays for static use
    for png in ("tcec_accuracy.png", "tcec_fig8.png"):
        assert (fixture_dir / png).is_file() and f'src="{png}"' in html
    assert "54.2" in html and "Section 4.4.2" in html and "2.78x" in html    # seed 002's A100 beside ours
    assert 'href="accuracy.csv"' in html and 'href="fig8.csv"' in html
    assert "NaN/inf x" in html and "raised" in html       # wide inputs broke the fp16 splits; one method raised
    for d in ("randn", "uniform", "wide"):
        assert f'id="tcec-acc-{d}"' in html
    assert "cuda:14_tcec is 0.46\u20130.92x as accurate as cuBLAS SGEMM" in html and "less accurate than SGEMM at every K" in html
    assert "Max elementwise relative error" not in html and "max relerr" not in html
    assert "median over the elements with R != 0" in html and "|A||B|" in html


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
    raised = next(c for r in t["acc"][0]["rows"] if r["method"] == "gluon:14_tcec" for c in r["cells"]
                  if c["text"] == "raised")
    assert "fixture" in raised["title"]


def test_accuracy_is_reported_per_distribution(fixture_dir):
    df, _ = load_results(fixture_dir / "results.csv")
    tables = tcec.section(df, None, fixture_dir)["acc"]
    assert [t["dist"] for t in tables] == ["randn", "uniform", "wide"]
    uniform = tables[1]
    assert uniform["ks"] == [256, 4096]
    row = next(r for r in uniform["rows"] if r["method"] == "cuda:14_tcec")
    # per K: Frobenius, median, componentwise, x SGEMM (SGEMM's relerr / this one's: 1.25e-7 / 2.717e-7)
    assert [c["text"] for c in row["cells"]] == ["2.72e-07", "1.85e-07", "1.22e-06", "0.46x",
                                                 "5.43e-07", "3.70e-07", "2.45e-06", "0.92x"]
    assert row["cells"][3]["bad"] and not next(r for r in uniform["rows"] if r["method"] == "triton:14_tcec")["cells"][3]["bad"]
    sgemm = next(r for r in uniform["rows"] if r["method"] == "cublas")
    assert sgemm["cells"][3]["text"] == ""


def test_sentences_say_the_direction_per_distribution(fixture_dir):
    df, _ = load_results(fixture_dir / "results.csv")
    tables = {t["dist"]: t for t in tcec.section(df, None, fixture_dir)["acc"]}
    said = {d: {s["method"]: s["text"] for s in t["sentences"]} for d, t in tables.items()}
    assert set(said["uniform"]) == {"cuda:14_tcec", "triton:14_tcec", "gluon:14_tcec"}
    cuda_uniform = said["uniform"]["cuda:14_tcec"]
    assert cuda_uniform.startswith("On uniform [0, 1) inputs, cuda:14_tcec is 0.46\u20130.92x as accurate as cuBLAS SGEMM")
    assert "less accurate than SGEMM at every K" in cuda_uniform and "more accurate" not in cuda_uniform
    assert "more accurate than SGEMM at every K" in said["uniform"]["triton:14_tcec"]
    gluon = said["uniform"]["gluon:14_tcec"]     # raised at 4096: "every K" would claim too much
    assert "more accurate than SGEMM at K = 256;" in gluon and "raised at K = 4096" in gluon
    assert "returned NaN/inf at every K measured" in said["wide"]["cuda:14_tcec"]
    assert "more accurate than SGEMM at every K" in said["randn"]["cuda:14_tcec"]


def test_a_sentence_with_both_directions_names_the_ks():
    s = tcec.accuracy_sentence("m", "randn", {256: 2.0, 4096: 0.5}, {256: 1.5, 4096: 0.8}, raised=[16384])
    assert s == ("On randn inputs, m is 0.5\u20132x as accurate as cuBLAS SGEMM by relative Frobenius error (SGEMM's "
                 "error / its error, K = 256, 4096): more accurate than SGEMM at K = 256, less accurate at K = 4096; "
                 "by median elementwise error, 0.8\u20131.5x; it raised at K = 16384.")
    assert "NaN/inf at K = 4096" in tcec.accuracy_sentence("m", "wide", {256: 0.5, 4096: 0.0}, {})


def test_section_says_when_accuracy_csv_is_absent(fixture_dir):
    (fixture_dir / "accuracy.csv").unlink()
    html = _render(fixture_dir).read_text(encoding="utf-8")
    assert "no accuracy.csv in this directory" in html
    assert not (fixture_dir / "tcec_accuracy.png").exists() and (fixture_dir / "tcec_pareto.png").is_file()


def test_no_section_without_any_stage_14_data(fixture_dir):
    for name in ("accuracy.csv", "fig8.csv"):
        (fixture_dir / name).unlink()
    df = pd.read_csv(fixture_dir / "results.csv", dtype=str, keep_default_na=False)
    df[df["stage"] != "14"].to_csv(fixture_dir / "results.csv", index=False)
    html = _render(fixture_dir).read_text(encoding="utf-8")
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


def _render(directory):
    """The report's page (plotly: the GPU image, which collects this module, lacks it)."""
    pytest.importorskip("plotly")
    from study.present.report import render
    return render(directory)
