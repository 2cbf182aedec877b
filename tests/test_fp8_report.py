"""The report's fp8 e4m3 rows (the fp8 stage and its cuBLASLt baselines), on synthetic rows: dtype order, the fp8
roofline family and its ceiling, the size facets, the fp8 ladder (each form against its own scaling mode), the
stage page with its accuracy figure, and the report of a ceilings.json or an accuracy file that is not there yet.
No GPU: the rows are made here, from the committed H100 rows' columns."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from study.core.stages import stage
from study.measure.frame import dtype_order, load_results
from study.present import interactive, ladder
from study.present.formatting import fmt_num

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reports"
FP8 = stage("fp8")
# Synthetic TFLOP/s at 4096^3 (not measurements): per form suffix, (own form per backend, its baseline).
FORMS = {"": ("fp8e4m3-tensor/fp32acc", "cublas:fp8", 1200.0),
         "-row": ("fp8e4m3-row/fp32acc", "cublas:fp8-row", 1150.0),
         "-block": ("fp8e4m3-block/fp32acc", "cublas:fp8-block", 1000.0),
         "-tcacc": ("fp8e4m3-tensor/tcacc", "cublas:fp8-fastacc", 1300.0)}
BACKEND_SHARE = {"cuda": 0.9, "triton": 0.8, "gluon": 0.95}


def fp8_rows(template: pd.DataFrame, sides=(1024, 4096, 8192)) -> pd.DataFrame:
    """Rows of every fp8 form and baseline at the square `sides`, each a copy of one of template's rows with the
    fp8 fields set; TFLOP/s scaled with the size so the size sweep has a slope."""
    base = template.iloc[0].to_dict()
    rows = []
    for n in sides:
        scale = min(1.0, n / 4096)
        flops = 2.0 * n ** 3
        for suffix, (precision, baseline, peak) in FORMS.items():
            cands = [(baseline, "cublas", "baseline", 1.0)]
            cands += [(f"{b}:{FP8.key}{suffix}", b, FP8.number, share) for b, share in BACKEND_SHARE.items()]
            for impl, backend, st, share in cands:
                tflops = peak * share * scale
                ms = flops / (tflops * 1e9)
                rows.append({**base, "impl": impl, "stage": st, "stage_title": FP8.title if st != "baseline" else impl,
                             "backend": backend, "dtype": "fp8e4m3", "precision": precision, "M": n, "N": n, "K": n,
                             "shape_set": "square", "alpha": 1.0, "beta": 0.0, "ms": ms, "ms_p20": ms * 0.99,
                             "ms_p80": ms * 1.01, "reps": 100, "tflops": tflops,
                             "gbps": (2 * n * n + 2 * n * n) / (ms * 1e6), "intensity": flops / (2 * n * n + 2 * n * n),
                             "baseline_impl": baseline, "pct_cublas": 100.0 * share, "relerr": 2e-3, "tol": 5e-2,
                             "passed": True, "error": "", "sm_clock_mhz": 1980.0})
    return pd.DataFrame(rows, columns=list(template.columns)).astype(str)


def fp8_accuracy_rows() -> pd.DataFrame:
    from study.measure.fp8_accuracy import COLUMNS, methods_of, FLOOR_METHOD
    out = []
    for K in (256, 4096, 65536):
        for name, backend, st, scaling, precision in methods_of(_names()):
            err = 2e-3 * (1 + K / 4096 if precision.endswith("tcacc") else 1)
            out.append({"scaling": scaling, "M": 256, "N": 256, "K": K, "method": name, "backend": backend,
                        "stage": st, "precision": precision, "relerr": err, "max_relerr": 2 * err, "nonfinite": 0,
                        "seed": 1, "error": "", "gpu": "NVIDIA H100 80GB HBM3", "commit": "abc1234",
                        "date": "2026-12-01"})
        out.append({"scaling": "tensor", "M": 256, "N": 256, "K": K, "method": FLOOR_METHOD, "backend": "reference",
                    "stage": "baseline", "precision": "bf16", "relerr": 1.5e-3, "max_relerr": 3.9e-3,
                    "nonfinite": 0, "seed": 1, "error": "", "gpu": "", "commit": "", "date": ""})
    return pd.DataFrame(out, columns=list(COLUMNS))


def _names() -> list[tuple[str, str, str]]:
    """(name, backend, precision) of the fp8 implementations, as the registry names them (not imported: torch)."""
    out = [(f"{b}:{FP8.key}{s}", b, p) for s, (p, _, _) in FORMS.items() for b in BACKEND_SHARE]
    return out + [(baseline, "cublas", p) for p, baseline, _ in FORMS.values()]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The test fixture's report with fp8 rows added, its ceilings.json without fp8, rendered."""
    from study.present.report import render
    out = tmp_path_factory.mktemp("fp8") / "gpu"
    shutil.copytree(FIXTURE, out)
    df = pd.read_csv(out / "results.csv", dtype=str, keep_default_na=False)
    pd.concat([df, fp8_rows(df)]).to_csv(out / "results.csv", index=False)
    ceilings = json.loads((out / "ceilings.json").read_text())
    for part in ("measured", "datasheet"):
        (ceilings.get(part) or {}).pop("fp8_tc_tflops", None)
    (out / "ceilings.json").write_text(json.dumps(ceilings))
    render(out)
    return out


def test_fp8_sorts_after_bf16():
    assert dtype_order(["int8", "fp8e4m3", "fp32", "bf16", "fp16"]) == ["fp32", "fp16", "bf16", "fp8e4m3", "int8"]


def test_fp8_rows_are_a_family_of_their_own_with_their_own_ceiling():
    df = fp8_rows(pd.read_csv(FIXTURE / "results.csv", dtype=str, keep_default_na=False))
    fams = interactive.family_of(interactive.prepare(df))
    assert set(fams) == {"fp8"}
    assert interactive.FAMILIES["fp8"].ceilings == {"fp8_tc_tflops"}
    assert "fp8_tc_tflops" not in interactive.FAMILIES["fp16_bf16"].ceilings
    ceilings = {"measured": {"fp8_tc_tflops": 1300.0, "fp16_tc_tflops": 700.0, "dram_gbps": 3000.0},
                "datasheet": {"fp8_tc_tflops": 1979.0}}
    fig = interactive.roofline_figure(df, ceilings, "fp8")
    roofs = {t.meta["ceiling"] for t in fig.data if isinstance(t.meta, dict) and "ceiling" in t.meta}
    assert roofs == {"fp8_tc_tflops"}
    assert any(t.name == "FP8 TC 1,979 datasheet" for t in fig.data)


def test_the_size_sweep_has_an_fp8_facet():
    df = fp8_rows(pd.read_csv(FIXTURE / "results.csv", dtype=str, keep_default_na=False))
    fig = interactive.size_sweep_figure(df)
    assert [a.text for a in fig.layout.annotations][:1] == ["fp8 e4m3"]


def test_the_fp8_ladder_sets_each_form_against_its_own_scaling_mode():
    df, _ = load_results_of(fp8_rows(pd.read_csv(FIXTURE / "results.csv", dtype=str, keep_default_na=False)))
    lad = next(t for t in ladder.table(df, 1980) if t["key"] == "fp8")
    assert [r["precision"] for r in lad["rows"]] == [p for p, _, _ in FORMS.values()]
    for r, (suffix, (precision, baseline, _)) in zip(lad["rows"], FORMS.items()):
        assert baseline in r["adds"] and precision in r["adds"]
        assert r["pct"] == " / ".join(f"{100 * BACKEND_SHARE[b]:.0f}" for b in ("cuda", "triton", "gluon"))
    # The headline names each form's best backend, its share of its own baseline, the baseline and the precision.
    for precision, baseline, peak in FORMS.values():
        assert f"({precision}) {fmt_num(peak * 0.95)} TFLOP/s (Gluon; 95% of {baseline} at {fmt_num(peak)})" \
            in lad["headline"]


def load_results_of(rows: pd.DataFrame, tmp: Path | None = None):
    import tempfile
    d = Path(tmp or tempfile.mkdtemp())
    rows.to_csv(d / "results.csv", index=False)
    return load_results(d / "results.csv")


def test_the_report_renders_fp8_rows(report):
    site = "".join(p.read_text(encoding="utf-8") for p in report.glob("*.html") if not p.name.startswith("stage-"))
    assert "fig-roofline-fp8" in site and "Roofline: fp8 e4m3 tensor cores" in site
    assert "fig-ladder-step-fp8" in site
    env = (report / "environment.html").read_text(encoding="utf-8")
    assert "FP8 TC" in env and "not yet measured" in env


def test_the_fp8_stage_page_shows_its_forms_and_awaits_its_accuracy(report):
    page = (report / f"stage-{FP8.number}.html").read_text(encoding="utf-8")
    for suffix in FORMS:
        for b in BACKEND_SHARE:
            assert f"<code>{b}:{FP8.key}{suffix}</code>" in page
    assert 'id="fp8-accuracy"' in page
    assert "not yet measured" in page.lower() and "fp8_accuracy.csv" in page


def test_the_fp8_stage_page_draws_error_against_k(report, tmp_path):
    from study.present.report import render
    d = tmp_path / "gpu"
    shutil.copytree(report, d)
    fp8_accuracy_rows().to_csv(d / "fp8_accuracy.csv", index=False)
    render(d)
    page = (d / f"stage-{FP8.number}.html").read_text(encoding="utf-8")
    assert "fig-fp8-accuracy" in page and "not yet measured" not in page.split('id="fp8-accuracy"')[1][:2000].lower()
    # The bf16 floor is the measured error of the reference itself rounded to bf16, named in the caption.
    assert "1.5e-03" in page and "bf16" in page
    for name, _, _ in _names():
        assert name in page


def test_the_fp8_ceiling_carries_the_datasheet_figure():
    pytest.importorskip("torch")
    from study.measure import ceilings
    for gpu in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
        assert ceilings.datasheet(gpu)["fp8_tc_tflops"] == 1979
    assert ceilings.datasheet("NVIDIA H100 PCIe")["fp8_tc_tflops"] == 1513


def test_the_fp8_lesson_names_its_runs_and_what_block_scales_cost():
    """The lesson's points come from the rows: fp8 over bf16 names the other sweep when the bf16 rows come from
    one (another commit, another card), and block scaling's cost is each backend's block row against its own
    per-tensor row at 4096^3, with the percentage those two rows give."""
    from study.present import fp8
    df, _ = load_results(REPO / "reports" / "h100" / "results.csv")
    df = df[df["passed"].astype(bool)]
    points = fp8.lesson(df, None)
    assert points and len(points) >= 3
    text = " ".join(points)
    pairs = fp8._fp8_and_bf16_rows(df)
    assert pairs, "the committed H100 rows pair fp8 with bf16"
    other = {str(b["commit"]) for _, _, b in pairs} != {str(f["commit"]) for _, f, _ in pairs}
    assert ("another sweep" in text) == other
    for backend, blk, ten in fp8._block_cost(df):
        at = df[(df["M"] == 4096) & (df["N"] == 4096) & (df["K"] == 4096) & (df["backend"] == backend)]
        want = at[at["precision"] == "fp8e4m3-block/fp32acc"]["tflops"].iloc[0]
        assert blk == want and f"{100 * (1 - blk / ten):.0f}% slower" in text
    # A synthetic pair on one commit and card: no such clause.
    same = df.copy()
    same["commit"], same["gpu_uuid"] = "x", "y"
    assert "another sweep" not in " ".join(fp8.lesson(same, None))
