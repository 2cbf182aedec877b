"""Every GPU's committed data holds to its own arithmetic and to physics (study/measure/audit.py), and each edit
that would make it false makes a check fail: the mutation tests apply the edit to a copy of each reports/<gpu>/
folder and of reports/gpu-evidence.json."""
from __future__ import annotations

import csv
import json
import shutil

import pytest

from study.core.schema import TOLERANCE
from study.measure import audit

GPUS = audit.gpu_dirs()
IDS = [d.name for d in GPUS]


def test_every_gpu_folder_is_found():
    assert {"h100", "h200"} <= set(IDS), IDS


def test_every_precision_has_a_unit():
    assert set(TOLERANCE) <= set(audit.UNIT_OF), set(TOLERANCE) - set(audit.UNIT_OF)


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_results_hold_to_their_arithmetic_and_ceilings(d):
    problems = audit.results_problems(d)
    assert not problems, f"{len(problems)} problem(s) in {d.name}/results.csv:\n" + "\n".join(problems[:20])


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_no_profiled_kernel_has_an_impossible_counter(d):
    problems = [why for _, why in audit._kernel_problems(audit._profile(d))]
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_every_profiled_call_is_within_its_ceiling_and_the_sweep(d):
    flagged = audit.implausible_calls(d)
    known = audit.EXPLAINED_OFF_SWEEP.get(d.name, set())
    assert set(flagged) == known, (f"{d.name}/profile.csv: implausible calls beyond the known ones:\n"
                                   + "\n".join(f"{k}: {v}" for k, v in flagged.items() if k not in known)
                                   + f"\nknown ones no longer flagged: {sorted(known - set(flagged))}")
    assert all("sweep" in flagged[k] for k in known), "a known call is now flagged for another reason"


def test_call_totals_sum_kernels_and_weight_percentages():
    import pandas as pd
    kernels = pd.DataFrame([
        dict(impl="x", dtype="fp32", M=8, N=8, K=8, kernel="a", precision="fp32", time_ms=1.0, l2_bytes=10.0,
             tensor_pct=90.0, registers=40.0),
        dict(impl="x", dtype="fp32", M=8, N=8, K=8, kernel="b", precision="fp32", time_ms=3.0, l2_bytes=5.0,
             tensor_pct=10.0, registers=100.0)])
    t = audit.call_totals(kernels).iloc[0]
    assert (t["time_ms"], t["l2_bytes"], t["kernels"], t["registers"]) == (4.0, 15.0, 2, 100.0)
    assert t["tensor_pct"] == pytest.approx(30.0)


def test_committed_sanitizer_records_are_clean_by_their_counts():
    problems = audit.evidence_problems()
    assert not problems, "\n".join(problems[:20])


# --- mutations ------------------------------------------------------------------------------------------------

def _copy(d, tmp_path):
    out = tmp_path / d.name
    out.mkdir()
    for name in ("results.csv", "ceilings.json", "profile.csv", "environment.json"):
        if (d / name).exists():
            shutil.copy(d / name, out / name)
    return out


def _edit_csv(path, pick, **values):
    """Set `values` on the first row `pick` accepts; that row."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if pick(r))
    row.update({k: str(v) for k, v in values.items()})
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return row


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_mutation_a_an_impossible_results_row_fails(d, tmp_path):
    out = _copy(d, tmp_path)
    row = _edit_csv(out / "results.csv", lambda r: r["impl"].startswith("cuda:") and r["M"] == "4096",
                    tflops=9999, relerr=0.5, pct_cublas=50000, passed=True)
    name = f"{row['impl']} {row['dtype']} {row['M']}x{row['N']}x{row['K']}"
    problems = [p for p in audit.results_problems(out) if p.startswith(name)]
    for what in ("passed=True but relerr 0.5", "is not 2MNK/ms", "pct_cublas 50000", "ceiling"):
        assert any(what in p for p in problems), f"{what!r} not named: {problems}"
    from study.measure.sweep import check
    assert any(p.startswith(f"audit: {name}") for p in check(out, current=False))


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_mutation_c_a_cublas_row_far_above_the_ceiling_is_no_ceiling(d, tmp_path):
    """The sweep's best cuBLAS row joins its unit's ceilings only from within the measured ones: a cuBLAS row
    timed 10x too fast is reported, not taken as the new ceiling."""
    out = _copy(d, tmp_path)
    fp16_4096 = lambda r: r["impl"] == "cublas" and r["dtype"] == "fp16" and r["M"] == r["N"] == r["K"] == "4096"
    with (d / "results.csv").open(newline="") as f:
        ms = float(next(r["ms"] for r in csv.DictReader(f) if fp16_4096(r))) / 10
    tflops = 2 * 4096**3 / (ms * 1e9)
    _edit_csv(out / "results.csv", fp16_4096, ms=repr(ms), tflops=repr(tflops))
    assert audit._ceilings(out)["measured"]["fp16_cublas_rows"] < tflops / 2
    assert any(p.startswith("cublas fp16 4096x4096x4096") and "ceiling" in p for p in audit.results_problems(out))


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_mutation_b_an_impossible_profile_row_fails(d, tmp_path):
    out = _copy(d, tmp_path)
    row = _edit_csv(out / "profile.csv", lambda r: r["impl"] == "cublas" and r["M"] == "4096",
                    time_ms=1e-6, occupancy_pct=450, dram_read_bytes=-5)
    problems = audit.profile_problems(out)
    name = f"{row['impl']} {row['dtype']} {row['M']}x{row['N']}x{row['K']}"
    mine = [p for p in problems if p.startswith(name)]
    assert any("occupancy_pct 450" in p and "dram_read_bytes -5" in p for p in mine), mine
    assert any("above" in p and "ceiling" in p and "the sweep's" in p for p in mine), mine    # 1 ns for 4096^3
    key = (row["impl"], row["dtype"], int(row["M"]), int(row["N"]), int(row["K"]))
    assert key in audit.implausible_calls(out)


def test_mutation_d_a_dirty_sanitizer_record_marked_clean_fails(tmp_path):
    doc = json.loads((audit.REPORTS / "gpu-evidence.json").read_text())
    rec = next(r for r in doc["sanitizer"] if r["outcome"] == "clean")
    assert not audit.sanitizer_problems(rec)
    rec.update(errors={"memcheck": 7, "synccheck": 3, "initcheck": 12}, calls=[])
    problems = audit.sanitizer_problems(rec)
    for what in ("memcheck errors 7", "synccheck errors 3", "initcheck errors 12", "racecheck errors not run",
                 "names no call"):
        assert any(what in p for p in problems), f"{what!r} not named: {problems}"
    path = tmp_path / "gpu-evidence.json"
    path.write_text(json.dumps(doc))
    assert audit.evidence_problems(path)


# --- the committed HTML is what the committed data renders (mutation g) ---------------------------------------

def _html_differences(committed, rendered) -> list[str]:
    """Each page or image (.html, .png) that differs between two report trees, or is in one only: a render of the
    committed data must leave `git status` clean."""
    mine = {p.relative_to(committed) for ext in ("*.html", "*.png") for p in committed.rglob(ext)}
    theirs = {p.relative_to(rendered) for ext in ("*.html", "*.png") for p in rendered.rglob(ext)}
    out = [f"{p}: in {'the committed tree' if p in mine else 'the render'} only" for p in sorted(mine ^ theirs)]
    return out + [f"{p}: differs" for p in sorted(mine & theirs)
                  if (committed / p).read_bytes() != (rendered / p).read_bytes()]


@pytest.fixture(scope="module")
def rendered():
    """reports/ rendered afresh from its data, as `python -m study.report` renders it (tests/rendered_reports.py)."""
    from tests.rendered_reports import rendered_reports
    return rendered_reports()


def test_committed_html_is_what_the_data_renders(rendered):
    diff = _html_differences(audit.REPORTS, rendered)
    assert not diff, "python -m study.report and commit reports/:\n" + "\n".join(diff[:20])


@pytest.mark.parametrize("d", GPUS, ids=IDS)
def test_mutation_g_an_edited_committed_page_fails(d, rendered, tmp_path):
    import re
    copy = tmp_path / "reports"
    shutil.copytree(rendered, copy)
    pages = [copy / d.name / "index.html", copy / d.name / "stage-14.html"]
    texts = [p.read_text(encoding="utf-8") for p in pages]
    figure = next(f for f in re.findall(r"\d+\.\d", texts[1]) if f in texts[0])
    assert all(figure in t for t in texts), f"{figure} is not on both pages of {d.name}"
    for p, t in zip(pages, texts):
        p.write_text(t.replace(figure, str(round(float(figure) + 200, 1)), 1), encoding="utf-8")
    diff = _html_differences(copy, rendered)
    assert {f"{d.name}/index.html: differs", f"{d.name}/stage-14.html: differs"} <= set(diff), diff
