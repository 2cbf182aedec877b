"""Stage 15's accuracy study on the CPU: the input generators, the error metrics, the Pareto front, how rows
are assembled (a raising method is a row, not a crash), and the report's TCEC section from the fixture."""
from __future__ import annotations

import math
import shutil
from html import unescape
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
from study.core.schema import RESULT_COLUMNS
from study.measure.accuracy import (ACCURACY_COLUMNS, DISTRIBUTION, DISTRIBUTIONS, FP16_METHOD, Method, errors, products,
                                    sample, sample_pair)
from study.measure.frame import load_json, load_results, load_table

pytest.importorskip("plotly", reason="the report's figures need plotly (the GPU image lacks it)")
from study.present import figures, tcec  # noqa: E402
from study.present.tcec_figures import pareto_front  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reports"
REPO = Path(__file__).resolve().parents[1]
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


def test_negative_is_in_minus_one_zero():
    x = sample("negative", (512, 512), gen())
    assert float(x.max()) <= 0.0 and float(x.min()) > -1.0
    assert abs(float(x.mean()) + 0.5) < 0.01
    assert torch.equal(x, -sample("uniform", (512, 512), gen()))


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
    with pytest.raises(ValueError, match="unknown distribution"):
        sample_pair("lognormal", 2, 2, 2, gen())


def test_every_distribution_draws_fp32_pairs_of_the_asked_shapes_deterministically():
    assert DISTRIBUTIONS[:3] == ("randn", "uniform", "wide")
    assert {"tiny", "huge", "spread", "cancel"} <= set(DISTRIBUTIONS)
    for dist in DISTRIBUTIONS:
        a, b = sample_pair(dist, 6, 10, 4, gen(5))
        assert a.shape == (6, 10) and b.shape == (10, 4) and a.dtype == b.dtype == torch.float32, dist
        assert torch.isfinite(a).all() and torch.isfinite(b).all(), dist
        again = sample_pair(dist, 6, 10, 4, gen(5))
        assert torch.equal(a, again[0]) and torch.equal(b, again[1]), f"{dist} is not deterministic by seed"
        other = sample_pair(dist, 6, 10, 4, gen(6))
        assert not torch.equal(a, other[0]), f"{dist} ignores its seed"
        a3, b3 = sample_pair(dist, 6, 10, 4, gen(5), batch=(3,))
        assert a3.shape == (3, 6, 10) and b3.shape == (3, 10, 4), dist


def test_independent_pairs_are_what_two_sample_calls_draw():
    """sample_pair() of an independent distribution draws A then B from one generator, as accuracy_rows() drew
    them before: a recorded seed still gives the same inputs."""
    g = gen(11)
    a, b = sample("wide", (5, 7), g), sample("wide", (7, 3), g)
    a2, b2 = sample_pair("wide", 5, 7, 3, gen(11))
    assert torch.equal(a, a2) and torch.equal(b, b2)


def test_joint_distributions_need_both_operands():
    for dist in ("spread", "cancel"):
        assert DISTRIBUTION[dist].joint
        with pytest.raises(ValueError, match="sample_pair"):
            sample(dist, (4, 4), gen())
    assert not any(DISTRIBUTION[d].joint for d in ("randn", "uniform", "wide", "tiny", "huge", "negative"))


def test_tiny_and_huge_are_randn_at_the_ends_of_fp32s_range():
    base = sample("randn", (256, 256), gen(3))
    tiny, huge = sample("tiny", (256, 256), gen(3)), sample("huge", (256, 256), gen(3))
    # The same mantissas, scaled exactly by a power of two.
    assert torch.equal(tiny, base * 2.0**accuracy.TINY_EXPONENT)
    assert torch.equal(huge, base * 2.0**accuracy.HUGE_EXPONENT)
    assert accuracy.TINY_EXPONENT <= -60 and accuracy.HUGE_EXPONENT >= 56
    assert 2.0**-66 < float(tiny.abs().median()) < 2.0**-60 and 2.0**54 < float(huge.abs().median()) < 2.0**58
    # fp16 holds none of either (underflow to 0, overflow to inf); bf16 keeps fp32's exponent, so it holds both.
    assert (tiny.half() == 0).all() and torch.isinf(huge.half()).any()
    assert ((tiny.bfloat16().float() - tiny).abs() <= tiny.abs() * 2.0**-8).all()
    assert torch.isfinite(huge.bfloat16()).all()


def test_huge_products_stay_inside_fp32_at_k_16384():
    """D's elements are 2^(2 HUGE_EXPONENT) times a randn dot product: at K = 16384 (the largest K of the study)
    fp32 SGEMM itself must still return finite values, or no method could be judged against it."""
    a, b = sample_pair("huge", 64, 16384, 64, gen(4))
    ref, _ = products(a, b)
    assert float(ref.abs().max()) < 2.0**127
    assert torch.isfinite(a @ b).all()
    assert errors(a @ b, ref, products(a, b)[1])["relerr"] < 1e-5


def test_tiny_products_sit_just_above_fp32s_normals():
    a, b = sample_pair("tiny", 64, 4096, 64, gen(4))
    ref, absprod = products(a, b)
    assert 2.0**-126 < float(ref.abs().median()) < 2.0**-100
    assert errors(a @ b, ref, absprod)["relerr"] < 1e-5      # fp32 FMA with subnormals keeps them


def test_spread_scales_rows_of_a_and_columns_of_b_by_up_to_2_to_the_40():
    m, k, n = 400, 256, 300
    a, b = sample_pair("spread", m, k, n, gen(8))
    e = accuracy.SPREAD_EXPONENT
    for rows in (a, b.T):                     # the rows of A, the columns of B
        # Each is randn times one power of two 2^s: its root mean square is 2^s to within randn's spread over 256
        # draws (2^+-0.25 at the most), so s is log2 of it, rounded, and the row over 2^s is standard normal.
        s_ = torch.log2(rows.pow(2).mean(dim=1).sqrt())
        scale = s_.round()
        assert float((s_ - scale).abs().max()) < 0.3
        assert int(scale.min()) >= -e and int(scale.max()) <= e
        assert int(scale.min()) <= -e + 3 and int(scale.max()) >= e - 3       # both ends reached: spreads of 2^80
        unit = rows / torch.exp2(scale)[:, None]
        assert float(unit.std()) == pytest.approx(1.0, abs=0.03)
    ref, _ = products(a, b)
    assert float(ref.abs().max() / ref.abs().median()) > 2.0**30


def test_cancel_makes_d_far_smaller_than_its_terms():
    m, k, n = 64, 4096, 48
    a, b = sample_pair("cancel", m, k, n, gen(9))
    h = k // 2
    assert torch.equal(a[:, :h], a[:, h:])                                     # A = [X, X]
    scaled = (b[h:] + b[:h]) * 2.0**-accuracy.CANCEL_EXPONENT                 # 2^-12 Z back from -Y + 2^-12 Z
    assert abs(float(scaled.std()) - 1) < 0.05                                # Z is randn (B's rounding aside)
    ref, absprod = products(a, b)
    x = a[:, :h].double()
    z = (b[h:].double() + b[:h].double())
    assert torch.allclose(ref, x @ z, rtol=0, atol=1e-12 * float(absprod.max()))   # R = X (B_lo + Y) exactly
    ratio = ref.abs() / absprod
    assert float(ratio.median()) < 2.0**-16 and float(ratio.max()) < 2.0**-12    # |R| << |A||B|
    # So an fp32 GEMM's relative error is thousands of times its error on randn inputs; componentwise it is not.
    x, y = sample_pair("randn", m, k, n, gen(9))
    plain = errors(x @ y, *products(x, y))
    cancelled = errors(a @ b, ref, absprod)
    assert cancelled["relerr"] > 1000 * plain["relerr"] and cancelled["componentwise"] < 10 * plain["componentwise"]


def test_cancel_with_an_odd_k_pads_a_zero_term():
    a, b = sample_pair("cancel", 3, 7, 2, gen())
    assert (a[:, 6] == 0).all() and (b[6] == 0).all() and torch.equal(a[:, :3], a[:, 3:6])


def test_each_distribution_has_its_own_ks_and_quick_and_explicit_ks_override_them():
    ks = accuracy.distribution_ks(DISTRIBUTIONS)
    assert ks["randn"] == ks["uniform"] == ks["wide"] == accuracy.KS
    assert all(ks[d] == (256, 4096) for d in ("tiny", "huge", "spread", "cancel", "negative"))
    assert all(max(ks[d]) <= 16384 for d in ks)
    assert set(accuracy.distribution_ks(DISTRIBUTIONS, quick=True).values()) == {accuracy.QUICK_KS}
    assert accuracy.distribution_ks(["cancel", "randn"], ks=(64,)) == {"cancel": (64,), "randn": (64,)}
    # The default run's budget: no more inputs of M = N = 1024 than the 22 its docstring plans for.
    assert sum(len(v) for v in ks.values()) == 22
    for d in DISTRIBUTION.values():
        assert d.label and d.about, d.name


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

    methods = [Method("exact", "cuda", "15", "fp32", exact), Method("boom", "cuda", "15", "fp32", boom),
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


def test_accuracy_rows_take_each_distributions_own_ks():
    seen = []

    def fp32(a, b):
        seen.append((a.clone(), b.clone()))
        return a @ b

    ks = {"cancel": (16, 32), "randn": (8,)}
    rows = list(accuracy.accuracy_rows([Method("sgemm", "cublas", "baseline", "fp32", fp32)], ["cancel", "randn"], ks,
                                       4, CPU, {"gpu": "cpu", "commit": "x"}, seed=3))
    assert [(r["distribution"], r["K"]) for r in rows] == [("cancel", 16), ("cancel", 32), ("randn", 8)]
    a, b = seen[1]
    assert torch.equal(a, sample_pair("cancel", 4, 32, 4, gen(3))[0])       # drawn jointly, from the row's seed
    assert torch.equal(a[:, :16], a[:, 16:]) and rows[1]["seed"] == 3
    assert rows[1]["relerr"] > 10 * rows[2]["relerr"] > 0               # cancellation magnifies fp32's error


def test_methods_are_stage_14_and_the_baselines_plus_cublas_fp16():
    methods = accuracy.accuracy_methods(study.implementations())
    names = [m.name for m in methods]
    assert names[-1] == FP16_METHOD and "cublas" in names and "cublas:tf32" in names
    assert "cuda:15_tcec" in names and "cuda:09_best_simt" not in names
    assert all(m.stage in ("15", "baseline") for m in methods)
    fig8 = accuracy.fig8_impls(study.implementations(), {"cuda"})
    assert fig8 and all(i.backend == "cuda" and i.stage_label == "15" for i in fig8)


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
        raise ValueError("cuda:15_tcec-markidis: no batched path")

    impls = [SimpleNamespace(name="cuda:15_tcec", backend="cuda", stage_label="15", precision=lambda d: "fp16x3-tcec",
                             launch=SimpleNamespace(batched=None), batched=rounded),
             SimpleNamespace(name="cuda:15_tcec-markidis", backend="cuda", stage_label="15",
                             precision=lambda d: "fp16x3-markidis", launch=SimpleNamespace(), batched=broken)]
    rows = list(accuracy.fig8_rows(impls, [32, 64], CPU, {"gpu": "cpu", "commit": "x"}, 10.0, batch=5, mn=16,
                                   chunk=2, seed=7))
    assert [(r["method"], r["launch"], r["K"]) for r in rows] == [
        ("cublas:bmm", "torch.bmm", 32), ("cuda:15_tcec", "batched", 32), ("cuda:15_tcec-markidis", "loop", 32),
        ("cublas:bmm", "torch.bmm", 64), ("cuda:15_tcec", "batched", 64), ("cuda:15_tcec-markidis", "loop", 64)]
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
    html = unescape(_render(fixture_dir).read_text(encoding="utf-8"))
    assert "Stage 15: TCEC (fp32 on fp16 tensor cores)" in html
    assert 'href="tcec.html"' in (fixture_dir / "index.html").read_text(encoding="utf-8")     # the GPU page's nav
    assert 'id="fig-pareto"' in html           # the Pareto plot is interactive; its PNG stays for static use
    for png in ("tcec_accuracy.png", "tcec_fig8.png"):
        assert (fixture_dir / png).is_file() and f'src="{png}"' in html
    assert "54.2" in html and "Section 4.4.2" in html and "2.78x" in html    # seed 002's A100 beside ours
    index = (fixture_dir / "index.html").read_text(encoding="utf-8")      # the data files, listed on the overview
    assert 'href="accuracy.csv"' in index and 'href="fig8.csv"' in index
    assert "NaN/inf x" in html and "raised" in html       # wide inputs broke the fp16 splits; one method raised
    for d in ("randn", "uniform", "wide"):
        assert f'id="tcec-acc-{d}"' in html and f'id="tcec-claims-{d}"' in html
    assert ("On uniform [0, 1) inputs (K = 256, 4096), cuda:15_tcec against cuBLAS SGEMM (its error / SGEMM's on the "
            "same inputs): ties at K = 4096 (1.09x) and loses at K = 256 (2.17x)") in html
    assert "Max elementwise relative error" not in html and "max relerr" not in html
    assert "median over the elements with R != 0" in html and "|A||B|" in html
    assert DISTRIBUTION["wide"].about.split(":")[0] in html      # each distribution says how it is drawn
    assert 'id="tcec-pareto"' in html and "(front)" in html


def test_tcec_context_numbers(fixture_dir):
    df, _ = load_results(fixture_dir / "results.csv")
    t = tcec.section(df, load_json(fixture_dir / "ceilings.json"), fixture_dir)
    assert t["pareto_shape"] == "4096x4096x4096"
    panels = {p["dist"]: p for p in t["pareto_panels"]}
    assert list(panels) == ["randn", "uniform", "wide"] and {p["k"] for p in panels.values()} == {4096}
    # Speed from results.csv, error from accuracy.csv at K = 4096: SGEMM (1e-6) is beaten by cuda:15_tcec (8e-7).
    assert panels["randn"]["front"] == {"cuda:15_tcec", "cuda:15_tcec-markidis", "cuda:15_tcec-nocorr", "cublas:tf32"}
    assert panels["wide"]["front"] == {"cublas:tf32", "cuda:15_tcec-tf32"}
    assert panels["wide"]["broken"]["cuda:15_tcec"] == "NaN/inf"
    assert panels["randn"]["broken"] == {"gluon:15_tcec": "raised"}
    assert panels["randn"]["missing"] == ["triton:tuned"]            # in results.csv, not in accuracy.csv
    row = next(r for r in t["pareto"] if r["impl"] == "cuda:15_tcec")
    assert [(c["text"], c["front"]) for c in row["cells"]] == \
        [("8.00e-07", True), ("5.43e-07", True), ("NaN/inf", False)]
    assert t["worse_variants"] == ["markidis", "nocorr", "tf32"]
    cuda_randn = next(r for r in t["worse"] if r["backend"] == "CUDA" and r["distribution"] == "randn" and r["K"] == 256)
    assert cuda_randn["cells"] == ["7.5x", "1,400x", "1.1x"]
    ours = t["fig8"]["ours"]
    assert ours["method"] == "cuda:15_tcec" and ours["k"] == "4096" and ours["x_sgemm"].startswith("1.78x")
    raised = next(c for r in t["acc"][0]["rows"] if r["method"] == "gluon:15_tcec" for c in r["cells"]
                  if c["text"] == "raised")
    assert "fixture" in raised["title"]


def test_accuracy_is_reported_per_distribution(fixture_dir):
    df, _ = load_results(fixture_dir / "results.csv")
    tables = tcec.section(df, None, fixture_dir)["acc"]
    assert [t["dist"] for t in tables] == ["randn", "uniform", "wide"]
    uniform = tables[1]
    assert uniform["ks"] == [256, 4096]
    row = next(r for r in uniform["rows"] if r["method"] == "cuda:15_tcec")
    # per K: Frobenius, median, componentwise, / SGEMM (its relerr / SGEMM's: 2.717e-7 / 1.25e-7)
    assert [c["text"] for c in row["cells"]] == ["2.72e-07", "1.85e-07", "1.22e-06", "2.17x",
                                                 "5.43e-07", "3.70e-07", "2.45e-06", "1.09x"]
    assert row["cells"][3]["bad"] and not row["cells"][7]["bad"]          # loses at 256, ties at 4096
    assert not next(r for r in uniform["rows"] if r["method"] == "triton:15_tcec")["cells"][3]["bad"]
    sgemm = next(r for r in uniform["rows"] if r["method"] == "cublas")
    assert sgemm["cells"][3]["text"] == ""


def test_sentences_give_the_verdict_per_distribution(fixture_dir):
    df, _ = load_results(fixture_dir / "results.csv")
    tables = {t["dist"]: t for t in tcec.section(df, None, fixture_dir)["acc"]}
    said = {d: {s["method"]: s["text"] for s in t["sentences"]} for d, t in tables.items()}
    assert set(said["uniform"]) == {"cuda:15_tcec", "triton:15_tcec", "gluon:15_tcec"}
    cuda_uniform = said["uniform"]["cuda:15_tcec"]
    assert cuda_uniform == ("On uniform [0, 1) inputs (K = 256, 4096), cuda:15_tcec against cuBLAS SGEMM (its error / "
                            "SGEMM's on the same inputs): ties at K = 4096 (1.09x) and loses at K = 256 (2.17x) by "
                            "relative Frobenius error, median elementwise error and componentwise error.")
    gluon = said["uniform"]["gluon:15_tcec"]     # raised at 4096: its claim covers K = 256 only, and says so
    assert "(K = 256)" in gluon and "it raised at K = 4096" in gluon
    assert "returned NaN/inf at every K measured (256, 4096), so loses by every metric" in said["wide"]["cuda:15_tcec"]
    # 8e-7 against SGEMM's 1e-6 prints as 0.8x, which ties (beating needs less than 0.8x)
    assert said["randn"]["cuda:15_tcec"].endswith("ties by relative Frobenius error (0.8x), median elementwise error "
                                                  "(0.8x) and componentwise error (0.8x).")


def test_verdicts_use_the_0_8_and_1_25_thresholds():
    assert [tcec.verdict(r) for r in (0.1, 0.79, 0.7999, 0.8, 1.0, 1.25, 1.2501, 1.26, math.inf)] == \
        ["beats", "beats", "ties", "ties", "ties", "ties", "ties", "loses", "loses"]
    row = {"error": "", "nonfinite": 0, "relerr": 2e-6, "median_relerr": 1e-6, "componentwise": 0.0}
    sgemm = {"error": "", "nonfinite": 0, "relerr": 1e-6, "median_relerr": 1e-6, "componentwise": 0.0}
    assert tcec.error_ratio(row, sgemm) == pytest.approx(2.0)
    assert tcec.error_ratio(row, sgemm, "componentwise") == 1.0                       # both exact
    assert tcec.error_ratio({**row, "componentwise": 1e-9}, sgemm, "componentwise") == math.inf
    assert tcec.error_ratio({**row, "nonfinite": 3}, sgemm) == math.inf               # NaN/inf loses
    assert tcec.error_ratio({**row, "error": "RuntimeError"}, sgemm) is None          # raised: no claim
    assert tcec.error_ratio(row, {**sgemm, "nonfinite": 1}) is None                   # no baseline to judge by
    assert tcec.error_ratio(row, None) is None


def test_claims_name_the_ks_where_the_verdict_changes():
    by_k = {256: 0.5, 1024: 0.9, 4096: 2.0, 16384: math.inf}
    assert tcec.claim_text({256: 0.5, 4096: 0.25}) == "beats (0.25\u20130.5x)"
    assert tcec.claim_text(by_k) == ("beats at K = 256 (0.5x), ties at K = 1024 (0.9x) and loses at K = 4096, 16384 "
                                     "(2x, NaN/inf)")
    s = tcec.claim_sentence("m", "cancel", [256, 4096],
                            {"relerr": {256: 0.5, 4096: 0.7}, "median_relerr": {256: 0.6, 4096: 0.6},
                             "componentwise": {256: 1.0, 4096: 3.0}}, raised=[16384])
    assert s == (f"On {DISTRIBUTION['cancel'].label} inputs (K = 256, 4096), m against cuBLAS SGEMM (its error / SGEMM's "
                 "on the same inputs): beats by relative Frobenius error (0.5\u20130.7x) and median elementwise error "
                 "(0.6x); ties at K = 256 (1x) and loses at K = 4096 (3x) by componentwise error; it raised at K = 16384.")
    # Clauses follow the metrics' order, whichever kind of clause comes first.
    assert tcec.claim_clauses({"relerr": {256: 0.5, 4096: 2.0}, "median_relerr": {256: 0.5, 4096: 0.5}}) == \
        "beats at K = 256 (0.5x) and loses at K = 4096 (2x) by relative Frobenius error; beats by median elementwise " \
        "error (0.5x)"


def test_fp32_labelled_precisions_get_claims():
    for p in ("fp32", "fp16x3-tcec", "tf32x3", "bf16x6", "bf16x9"):
        assert tcec.fp32_labelled(p), p
    for p in ("tf32", "fp16-inputs", "fp16x3-markidis", "fp16/fp32acc", "no-such-label"):
        assert not tcec.fp32_labelled(p), p


# --- a synthetic study: the new distributions and methods, from CSV files as the report reads them ---------------

SGEMM_ERR = {"relerr": 1e-6, "median_relerr": 5e-7, "componentwise": 1e-7}
# method -> (backend, stage, precision, TFLOP/s at 4096^3) and, per distribution, its errors as multiples of SGEMM's
# per K: a number for every metric, a (relerr, median, componentwise) triple, "inf" for NaN/inf, "raise".
SYNTHETIC = {
    "cublas": ("cublas", "baseline", "fp32", 50.0, {}),
    "cuda:15_tcec": ("cuda", "15", "fp16x3-tcec", 160.0, {
        "randn": {256: 0.5, 4096: 0.5}, "tiny": {256: "inf", 4096: "inf"},
        "cancel": {256: (1.0, 2.0, 0.5), 1024: (1.0, 2.0, 2.0)}}),
    "cuda:15_tcec-bf16x6": ("cuda", "15", "bf16x6", 120.0, {
        "randn": {256: 1.1, 4096: 1.1}, "tiny": {256: 0.9, 4096: 0.9}, "cancel": {256: 0.7, 1024: 0.7}}),
    "cublas:bf16x9": ("cublas", "baseline", "bf16x9-tcacc", 90.0, {
        "randn": {256: "raise", 4096: 3.0}, "tiny": {256: 3.0, 4096: 3.0}, "cancel": {256: 0.1, 1024: 0.1}}),
    "cuda:15_tcec-markidis": ("cuda", "15", "fp16x3-markidis", 170.0, {
        "randn": {256: 10.0, 4096: 10.0}, "tiny": {256: 10.0, 4096: 10.0}, "cancel": {256: 10.0, 1024: 10.0}}),
}
SYNTHETIC_KS = {"randn": (256, 4096), "tiny": (256, 4096), "cancel": (256, 1024)}


def synthetic_study(directory: Path) -> pd.DataFrame:
    """results.csv (each method at 4096^3) and accuracy.csv (SYNTHETIC) in `directory`; returns the results."""
    acc = []
    for method, (backend, stage, precision, _, errs) in SYNTHETIC.items():
        for dist, ks in SYNTHETIC_KS.items():
            for k in ks:
                row = dict.fromkeys(ACCURACY_COLUMNS, "") | {
                    "distribution": dist, "M": 1024, "N": 1024, "K": k, "method": method, "backend": backend,
                    "stage": stage, "precision": precision, "nonfinite": 0, "seed": 1, "gpu": "synthetic"}
                how = errs.get(dist, {}).get(k, 1.0)
                if how == "raise":
                    row["error"] = "RuntimeError: synthetic"
                elif how == "inf":
                    row.update(dict.fromkeys(SGEMM_ERR, math.inf), nonfinite=12)
                else:
                    times = how if isinstance(how, tuple) else (how,) * 3
                    row.update({m: SGEMM_ERR[m] * t for m, t in zip(SGEMM_ERR, times)})
                acc.append(row)
    pd.DataFrame(acc, columns=list(ACCURACY_COLUMNS)).to_csv(directory / "accuracy.csv", index=False)
    results = [dict.fromkeys(RESULT_COLUMNS, "") | {
        "impl": method, "stage": stage, "backend": backend, "dtype": "fp32", "precision": precision, "M": 4096,
        "N": 4096, "K": 4096, "shape_set": "square", "tflops": tflops, "relerr": 1e-6, "passed": True,
        "baseline_impl": "cublas", "pct_cublas": 100 * tflops / 50, "sm_clock_mhz": 1980, "commit": "synthetic"}
        for method, (backend, stage, precision, tflops, _) in SYNTHETIC.items()]
    pd.DataFrame(results, columns=list(RESULT_COLUMNS)).to_csv(directory / "results.csv", index=False)
    return load_results(directory / "results.csv")[0]


def test_claims_per_distribution_from_a_synthetic_study(tmp_path):
    synthetic_study(tmp_path)
    acc, _ = load_table(tmp_path / "accuracy.csv", ACCURACY_COLUMNS, tcec.ACC_NUMERIC)
    tables = {t["dist"]: t for t in tcec.accuracy_tables(acc)}
    assert list(tables) == ["randn", "tiny", "cancel"]              # DISTRIBUTIONS' order, only those measured
    claims = {d: {c["method"]: c for c in t["claims"]} for d, t in tables.items()}
    # fp32-labelled methods only (markidis is not; SGEMM is the reference): the bf16 split by its label
    assert set(claims["randn"]) == {"cuda:15_tcec", "cuda:15_tcec-bf16x6"} | \
        ({"cublas:bf16x9"} if tcec.fp32_labelled("bf16x9-tcacc") else set())
    texts = {d: {m: [cell["text"] for cell in c["cells"]] for m, c in cs.items()} for d, cs in claims.items()}
    assert texts["randn"]["cuda:15_tcec"] == ["beats (0.5x)"] * 3
    assert texts["randn"]["cuda:15_tcec-bf16x6"] == ["ties (1.1x)"] * 3
    assert texts["tiny"]["cuda:15_tcec"] == ["loses (NaN/inf)"] * 3
    assert texts["tiny"]["cuda:15_tcec-bf16x6"] == ["ties (0.9x)"] * 3
    # per metric: Frobenius ties, median loses, componentwise changes with K
    assert texts["cancel"]["cuda:15_tcec"] == ["ties (1x)", "loses (2x)",
                                               "beats at K = 256 (0.5x) and loses at K = 1024 (2x)"]
    assert claims["cancel"]["cuda:15_tcec"]["verdicts"]["componentwise"] == {256: 0.5, 1024: 2.0}
    assert [c["bad"] for c in claims["cancel"]["cuda:15_tcec"]["cells"]] == [False, True, True]
    said = {d: [s["text"] for s in t["sentences"]] for d, t in tables.items()}
    assert all(len(v) == 1 and "cuda:15_tcec against" in v[0] for v in said.values())   # the stage's method only
    assert "returned NaN/inf at every K measured (256, 4096)" in said["tiny"][0]


def test_findings_say_per_distribution_where_cuda_tcec_beats_ties_or_loses(tmp_path):
    df = synthetic_study(tmp_path)
    found = dict((topic, text) for topic, text, _ in tcec.findings(df, tmp_path, 4096))
    grid = tcec.accuracy_grid(tmp_path)
    assert grid["method"] == "cuda:15_tcec"
    rows = {r["label"]: r for r in grid["rows"]}
    assert [c["text"] for c in rows["randn"]["cells"]] == ["beats (0.5x)"] * 3
    assert [c["verdict"] for c in rows[DISTRIBUTION["cancel"].label]["cells"]] == ["ties", "loses", "loses"]
    text = found["TCEC's accuracy against SGEMM"]
    assert text.startswith(f"Over {len(rows)} input distributions and 3 error metrics, cuda:15_tcec's error")
    assert len(text.split()) <= 50


def test_pareto_panel_per_distribution_from_a_synthetic_study(tmp_path):
    df = synthetic_study(tmp_path)
    acc, _ = load_table(tmp_path / "accuracy.csv", ACCURACY_COLUMNS, tcec.ACC_NUMERIC)
    points, shape = tcec.pareto_points(df)
    assert shape == "4096x4096x4096" and set(points["impl"]) == set(SYNTHETIC)
    panels = {p["dist"]: p for p in tcec.pareto_panels(points, acc)}
    assert list(panels) == ["randn", "tiny", "cancel"]
    assert panels["randn"]["k"] == panels["tiny"]["k"] == 4096 and panels["cancel"]["k"] == 1024   # largest below
    randn = panels["randn"]["points"].set_index("impl")
    assert randn.loc["cuda:15_tcec", "error"] == pytest.approx(0.5e-6)          # accuracy.csv's, not results.csv's
    assert randn.loc["cuda:15_tcec", "tflops"] == 160.0                          # results.csv's speed
    assert randn.loc["cuda:15_tcec", "error_at"] == "1024x1024x4096, randn inputs (accuracy.csv)"
    assert panels["randn"]["front"] == {"cuda:15_tcec", "cuda:15_tcec-markidis"}
    assert panels["tiny"]["broken"] == {"cuda:15_tcec": "NaN/inf"}
    assert panels["tiny"]["front"] == {"cuda:15_tcec-markidis", "cuda:15_tcec-bf16x6"}
    assert panels["cancel"]["front"] == \
        {"cuda:15_tcec-markidis", "cuda:15_tcec", "cuda:15_tcec-bf16x6", "cublas:bf16x9"}
    rows = {r["impl"]: r for r in tcec.pareto_table(points, list(panels.values()))}
    assert [c["text"] for c in rows["cuda:15_tcec"]["cells"]] == ["5.00e-07", "NaN/inf", "1.00e-06"]
    assert [c["front"] for c in rows["cublas:bf16x9"]["cells"]] == [False, False, True]


def test_report_renders_a_synthetic_study_with_the_new_distributions(tmp_path):
    synthetic_study(tmp_path)
    html = _render(tmp_path).read_text(encoding="utf-8")
    for d in SYNTHETIC_KS:
        assert f'id="tcec-acc-{d}"' in html and f'id="tcec-claims-{d}"' in html
        assert DISTRIBUTION[d].about.split(":")[0] in html
    assert 'id="fig-pareto"' in html and '"updatemenus"' in html
    assert "cuda:15_tcec-bf16x6" in html and "cublas:bf16x9" in html


def test_h100_accuracy_csv_renders_every_distribution_it_has(tmp_path):
    """reports/h100's accuracy.csv predates the new distributions and methods: what it has renders, the rest is
    simply absent."""
    shutil.copytree(REPO / "reports" / "h100", tmp_path, dirs_exist_ok=True)
    df, _ = load_results(tmp_path / "results.csv")
    t = tcec.section(df, load_json(tmp_path / "ceilings.json"), tmp_path)
    have = list(dict.fromkeys(pd.read_csv(tmp_path / "accuracy.csv")["distribution"]))
    assert [p["dist"] for p in t["pareto_panels"]] == [x["dist"] for x in t["acc"]] == have
    assert all(x["claims"] for x in t["acc"])
    randn = next(x for x in t["acc"] if x["dist"] == "randn")
    assert any(c["method"] == "cuda:15_tcec" and c["cells"][0]["text"].startswith("beats") for c in randn["claims"])


def test_section_says_when_accuracy_csv_is_absent(fixture_dir):
    (fixture_dir / "accuracy.csv").unlink()
    html = _render(fixture_dir).read_text(encoding="utf-8")
    assert "no accuracy.csv in this directory" in html
    assert not (fixture_dir / "tcec_accuracy.png").exists() and (fixture_dir / "tcec_pareto.png").is_file()


def test_no_section_without_any_stage_14_data(fixture_dir):
    for name in ("accuracy.csv", "fig8.csv"):
        (fixture_dir / name).unlink()
    df = pd.read_csv(fixture_dir / "results.csv", dtype=str, keep_default_na=False)
    df[df["stage"] != "15"].to_csv(fixture_dir / "results.csv", index=False)
    html = _render(fixture_dir).read_text(encoding="utf-8")
    assert 'id="tcec"' not in html and "tcec.html" not in html and not (fixture_dir / "tcec.html").exists()
    assert not list(fixture_dir.glob("tcec_*.png"))


def test_fp32_roofline_gets_a_third_of_the_tensor_core_peaks():
    ceilings = {"measured": {"fp16_tc_tflops": 700.0, "tf32_tc_tflops": 370.0, "fp32_fma_tflops": 60.0},
                "datasheet": {"fp16_tc_tflops": 989.4}}
    tcec_stage = stage("15")
    split = {k: (m, d) for k, _, _, m, d in figures.split_ceilings(ceilings, tcec_stage)}
    labels = [label for _, label, _, _, _ in figures.split_ceilings(ceilings, tcec_stage)]
    assert labels == ["TF32 TC / 3 (3xTF32)", "FP16 TC / 3 (TCEC)"]
    assert split["fp16_tc_over3_tflops"] == pytest.approx((700 / 3, 989.4 / 3))
    assert split["tf32_tc_over3_tflops"][0] == pytest.approx(370 / 3) and split["tf32_tc_over3_tflops"][1] is None
    assert figures.split_ceilings({"measured": {"fp32_fma_tflops": 60.0}}, tcec_stage) == []


def _render(directory):
    """The report's stage-15 page, tcec.html, where it has one, else its index (plotly: the GPU image, which
    collects this module, lacks it)."""
    pytest.importorskip("plotly")
    from study.present.report import render
    index = render(directory)
    return directory / "tcec.html" if (directory / "tcec.html").exists() else index
