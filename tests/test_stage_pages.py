"""The stage pages (study/present/stage_pages.py): one per stage, rendered from the fixture and from the committed
H100 sweep into a temporary folder: its step chart against the stage before, what each form of a stage adds
against the form before, its three forms in full-width tabs, each form's diff, its headline rows with their
spread and clock, offline, with every link resolving, and at most 12 screens tall at 1400x900 in Chromium."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest

pytest.importorskip("plotly", reason="the report's figures need plotly (the GPU image lacks it)")

from study.core.stages import STAGES
from study.measure.frame import load_results
from study.measure import audit
from study.present import stage_chart, stage_forms
from study.present.formatting import fmt_num
from study.present.stage_pages import form_path, render_stage_pages, result_rows
from tests.test_report import FIXTURE, REPO, chrome_driver, is_external, parse

SOURCES = {"fixture": FIXTURE, "h100": REPO / "reports" / "h100"}
H100 = SOURCES["h100"]
MAX_HEIGHT = 12 * 900        # twelve screens of a 1400x900 window
BY_NUMBER = {s.number: s for s in STAGES}


def panels(html: str, kind: str) -> dict[str, str]:
    """backend -> the body of the page's <section class="tabpanel {kind}"> of that backend, its white space
    collapsed."""
    found = re.findall(rf'<section class="tabpanel {kind}"[^>]*data-backend="(\w+)"[^>]*>(.*?)</section>', html, re.S)
    return {backend: re.sub(r"\s+", " ", body) for backend, body in found}


def headline_rows(df: pd.DataFrame, number: str) -> pd.DataFrame:
    d = df[(df["stage"] == number) & df["passed"]]
    return d[(d["M"] == 4096) & (d["N"] == 4096) & (d["K"] == 4096)]


@pytest.fixture(scope="module", params=sorted(SOURCES))
def rendered(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    shutil.copytree(SOURCES[request.param], out, dirs_exist_ok=True)
    (out / "index.html").write_text("<!DOCTYPE html><title>index</title>")   # the report's, linked back to
    df, _ = load_results(out / "results.csv")
    return out, df, render_stage_pages(out, df)


def test_one_page_per_stage(rendered):
    out, _, nav = rendered
    assert [p["href"] for p in nav] == [f"stage-{s.number}.html" for s in STAGES]
    assert [(p["number"], p["title"]) for p in nav] == [(s.number, s.title) for s in STAGES]
    for s, p in zip(STAGES, nav):
        assert parse(out / p["href"]).title.strip() == f"Stage {s.number}: {s.title}"


def test_sections_come_in_order(rendered):
    out, _, nav = rendered
    for p in nav:
        html = (out / p["href"]).read_text(encoding="utf-8")
        at = [html.index(f'id="{i}"') for i in ("step", "forms", "diffs", "rows", "counters")]
        assert at == sorted(at), p["href"]
        assert html.index("<h1>") < at[0]


def test_three_forms_in_full_width_tabs_and_highlighted(rendered):
    out, _, nav = rendered
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        assert re.findall(r'role="tab" id="tab-form-(\w+)"', html) == ["cuda", "triton", "gluon"]
        forms = panels(html, "form")
        assert list(forms) == ["cuda", "triton", "gluon"], s.key
        for backend, body in forms.items():
            name = form_path(s, backend).relative_to(REPO).as_posix()
            assert f"<code>{name}</code>" in body
            if form_path(s, backend).exists():
                assert '<div class="pane source"><div class="hl"><pre>' in body, name
                assert re.search(r'<span class="(k|kn|kd|kt)">', body), name
            else:
                assert f"No {backend.capitalize() if backend != 'cuda' else 'CUDA'} form of this stage" in body
                assert "does not exist" in body and "<pre>" not in body, name
    stage01 = panels((out / "stage-01.html").read_text(encoding="utf-8"), "form")["gluon"]
    assert "The Gluon forms start at stage 03" in stage01


def test_a_diff_per_existing_form(rendered):
    """Every form that exists has its diff against the stage the chart compares with, highlighted, or is marked
    a new file; a form that does not exist says so."""
    out, _, nav = rendered
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        diffs = panels(html, "diff")
        assert list(diffs) == ["cuda", "triton", "gluon"], s.key
        for backend, body in diffs.items():
            if not form_path(s, backend).exists():
                assert "no diff" in body, (s.key, backend)
            elif '<div class="pane diff">' in body:
                assert re.search(r'<span class="gi">\+', body) and re.search(r'<span class="gd">-', body), s.key
                assert re.search(r"\+\d+ −\d+ lines", body), s.key
            else:
                assert "New file" in body, (s.key, backend)
    first = panels((out / "stage-01.html").read_text(encoding="utf-8"), "diff")
    assert all("New file" in first[b] for b in ("cuda", "triton"))
    gluon03 = panels((out / "stage-03.html").read_text(encoding="utf-8"), "diff")["gluon"]
    assert "New file" in gluon03 and "gluon/02_coalesced.py</code> does not exist" in gluon03
    cuda02 = panels((out / "stage-02.html").read_text(encoding="utf-8"), "diff")["cuda"]
    assert "cuda_kernels/01_naive.cu</code> → <code>cuda_kernels/02_coalesced.cu" in cuda02


def test_each_page_has_its_comparison_chart(rendered):
    """A page whose stage has passing rows at 4096^3 draws one figure per dtype: this stage's forms, the main
    forms of the stage before (in the same precision family), the baseline, each bar with its p20-p80 spread and
    its clock in the hover."""
    out, df, nav = rendered
    charted = 0
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        mine = headline_rows(df, s.number)
        if mine.empty:
            assert "nothing to compare" in html and "fig-step" not in html
            continue
        charted += 1
        src = next(r for r in parse(out / p["href"]).resources if r.endswith("plotly.min.js"))
        assert (out / unquote(src)).is_file()
        for dtype in set(mine["dtype"]):
            fig = figure_json(html, f"fig-step-{s.number}-{dtype}")
            names = {y for trace in fig for y in trace.get("y", [])}
            assert set(mine.loc[mine["dtype"] == dtype, "impl"]) <= names, (s.key, dtype)
            tflops = fig[0]
            assert tflops["error_x"]["array"] and tflops["error_x"]["arrayminus"], (s.key, dtype)
            assert all("MHz" in h and ("±" in h or "/+" in h) for h in tflops["hovertext"]), (s.key, dtype)
    assert charted, "some stage should have rows at 4096^3"


def figure_json(html: str, div: str) -> list[dict]:
    """The traces a page's Plotly.newPlot call draws into `div`."""
    m = re.search(rf'Plotly\.newPlot\(\s*"{div}",\s*(\[.*?\]),\s*\{{', html, re.S)
    assert m, f"no figure {div}"
    return json.loads(m.group(1))


def test_the_stage_before_is_the_nearest_in_the_same_precision():
    df, _ = load_results(H100 / "results.csv")
    rows = stage_chart._headline(df)
    before = {(n, d): stage_chart.previous(rows, BY_NUMBER[n], d) for n, d in
              (("01", "fp32"), ("02", "fp32"), ("10", "fp16"), ("11", "fp16"), ("14", "fp16"), ("15", "fp32"))}
    assert {k: v.number if v else None for k, v in before.items()} == {
        ("01", "fp32"): None, ("02", "fp32"): "01", ("10", "fp16"): None, ("11", "fp16"): "10",
        ("14", "fp16"): "13", ("15", "fp32"): "09"}
    prev, bars = stage_chart.bars(rows, BY_NUMBER["14"], "fp16")
    assert [b["impl"] for b in bars if b["role"] != "this"] == [
        "cuda:13_swizzle", "triton:13_swizzle", "gluon:13_swizzle", "cublas"]
    assert bars[0]["role"] == "previous" and bars[1]["impl"] == "cuda:14_wgmma"


def test_counters_leave_out_implausible_calls(monkeypatch):
    """A call the audit flags is kept out of the counters and named, with its reason."""
    df, _ = load_results(H100 / "results.csv")
    flagged = ("cuda:14_wgmma", "fp16", 4096, 4096, 4096)
    monkeypatch.setattr(audit, "implausible_calls", lambda report_dir: {flagged: "implied 4772 TFLOP/s"})
    step = stage_chart.step(H100, df, BY_NUMBER["14"], 1980)
    assert ("cuda:14_wgmma fp16 4096x4096x4096", "implied 4772 TFLOP/s") in step["left_out"]
    fig = figure_json(str(step["tabs"][0]["html"]), "fig-step-14-fp16")
    tensor = next(t for t in fig if t.get("xaxis") == "x2" and t.get("legendgroup") == "this")
    assert tensor["x"][tensor["y"].index("cuda:14_wgmma")] is None
    assert tensor["x"][tensor["y"].index("triton:14_wgmma")] is not None


def test_rows_show_the_headline_sizes_and_fold_the_rest(rendered):
    out, df, nav = rendered
    seen = set()
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        impls = set(df.loc[df["stage"] == s.number, "impl"])
        if not impls:
            assert "No rows for this stage" in html
            continue
        seen.add(s.number)
        rows = html.split('id="rows"', 1)[1].split('id="counters"', 1)[0]
        shown, _, folded = rows.partition('<details id="rows-all"')
        assert all(f"<code>{i}</code>" in rows for i in impls), s.key
        assert "% of cublas" in rows and "MHz" in rows and "±" in rows
        if len(headline_rows(df, s.number)):
            assert "4096x4096x4096" in shown and "x1024x" not in shown, s.key
        assert "back-to-back calls, the L2 flushed before each" in rows
    assert seen, "the results should hold rows of some stage"


def test_a_difference_inside_the_spread_is_called_a_tie():
    df, _ = load_results(H100 / "results.csv")
    cublas = df[(df["impl"] == "cublas") & (df["dtype"] == "fp16") & (df["M"] == 4096) & (df["N"] == 4096)
                & (df["K"] == 4096)].iloc[[-1]]
    twin = cublas.assign(impl="cuda:14_wgmma", stage="14", backend="cuda", baseline_impl="cublas", pct_cublas=100.4,
                         tflops=cublas["tflops"] * 1.001)
    far = twin.assign(impl="cuda:14_wgmma-1wg", tflops=cublas["tflops"] * 0.7, ms_p20=cublas["ms"] / 0.7 * 0.999,
                      ms_p80=cublas["ms"] / 0.7 * 1.001, ms=cublas["ms"] / 0.7)
    rows = {r["impl"]: r for r in result_rows(pd.concat([cublas, twin, far]), BY_NUMBER["14"], max_clock=1980)}
    assert rows["cuda:14_wgmma"]["pct"].endswith("(a tie)")
    assert "tie" not in rows["cuda:14_wgmma-1wg"]["pct"]


def test_links_resolve_and_nothing_is_external(rendered):
    out, _, nav = rendered
    for p in nav:
        refs = parse(out / p["href"])
        html = (out / p["href"]).read_text(encoding="utf-8")
        assert not [r for r in refs.resources if is_external(r)], p["href"]
        assert all((out / unquote(r)).is_file() for r in refs.resources), p["href"]
        assert "@import" not in html and "url(" not in html
        assert "index.html" in refs.hrefs
        for href in refs.hrefs:
            assert not is_external(href), href
            path, _, fragment = href.partition("#")
            assert (out / unquote(path)).is_file(), href
            assert not fragment or fragment in refs.ids, href


def test_each_page_links_to_its_neighbours(rendered):
    out, _, nav = rendered
    for i, p in enumerate(nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        for rel, j in (("prev", i - 1), ("next", i + 1)):
            link = f'rel="{rel}"'
            if 0 <= j < len(nav):
                assert f'<a href="{nav[j]["href"]}" {link}>' in html, (p["href"], rel)
            else:
                assert link not in html, (p["href"], rel)


def test_one_plotly_copy_above_a_gpu_folder(tmp_path):
    """Under reports/<gpu>/, the pages load reports/plotly.min.js, and no copy is written beside them."""
    gpu = tmp_path / "reports" / "fixture"
    shutil.copytree(FIXTURE, gpu)
    render_stage_pages(gpu, load_results(gpu / "results.csv")[0])
    assert (tmp_path / "reports" / "plotly.min.js").is_file() and not (gpu / "plotly.min.js").exists()
    assert '<script src="../plotly.min.js">' in (gpu / "stage-01.html").read_text(encoding="utf-8")


def test_renders_without_torch_or_triton(tmp_path):
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    probe = ("import sys; from pathlib import Path; from study.measure.frame import load_results; "
             "from study.present.stage_pages import render_stage_pages; d = Path(sys.argv[1]); "
             "render_stage_pages(d, load_results(d / 'results.csv')[0]); "
             "heavy = [m for m in ('torch', 'triton') if m in sys.modules]; "
             "sys.exit(f'imported {heavy}' if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("stage-*.html"))) == len(STAGES)


PANES = """return Array.from(document.querySelectorAll('.pane')).filter(e => e.offsetParent !== null).map(e => {
  const s = getComputedStyle(e), pre = e.querySelector('pre');
  return {cls: e.className, width: e.clientWidth, scroll: e.scrollWidth, height: e.clientHeight,
          x: s.overflowX, y: s.overflowY, wrap: pre ? getComputedStyle(pre).whiteSpace : ''};
})"""


@pytest.mark.browser
def test_pages_fit_twelve_screens_and_sources_are_never_clipped(rendered, tmp_path):
    """At 1400x900 in Chromium every stage page is at most 12 screens tall; the source and diff panes span the
    page's width, scroll (both ways) rather than cut a line, and the step chart draws in each dtype's tab."""
    out, df, nav = rendered
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.set_window_size(1400, 900)
        for s, p in zip(STAGES, nav):
            driver.get((out / p["href"]).as_uri())
            height = driver.execute_script("return document.documentElement.scrollHeight")
            assert height <= MAX_HEIGHT, f"{p['href']} is {height} px tall"
            body = driver.execute_script("return document.querySelector('h1').getBoundingClientRect().width")
            for backend in ("cuda", "triton", "gluon"):
                for kind in ("form", "diff"):
                    driver.execute_script(f"document.getElementById('tab-{kind}-{backend}').click()")
                for pane in driver.execute_script(PANES):
                    assert pane["width"] >= 0.9 * body, (p["href"], backend, pane)
                    assert pane["x"] in ("auto", "scroll") and pane["y"] in ("auto", "scroll"), (p["href"], pane)
                    assert pane["wrap"] in ("pre", "pre-wrap"), (p["href"], pane)
            if not headline_rows(df, s.number).empty:
                drawn = driver.execute_script(
                    "return Array.from(document.querySelectorAll('.step .plotly-graph-div'))"
                    ".map(e => [e.id, e.querySelectorAll('.main-svg').length > 0])")
                assert drawn and all(ok for _, ok in drawn), (p["href"], drawn)
            if s.number == "14" and out.name.startswith("h100"):
                driver.save_screenshot(str(tmp_path / "stage-14.png"))
    finally:
        driver.quit()


# --- The measured ladder of a stage's forms (study/present/stage_forms.py) -------------------------------------

LADDER = BY_NUMBER["14"]          # the stage whose forms each add one technique, with a counter declared per step


def ladder_rows(page: str) -> dict[str, list[dict]]:
    """dtype -> the page's ladder rows, in order: {impl, cells: {data-cell: text}, column: the counter's
    profile.csv column}."""
    import html as html_text
    section = page.split('<h2 id="ladder"', 1)[1].split('<h2 id="forms"', 1)[0]
    out = {}
    for dtype, panel in re.findall(r'data-dtype="(\w+)">(.*?)</table>', section, re.S):
        out[dtype] = []
        for impl, tr in re.findall(r'<tr data-impl="([^"]+)">(.*?)</tr>', panel, re.S):
            cells = {k: html_text.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", v))).strip()
                     for k, v in re.findall(r'data-cell="([\w-]+)"[^>]*>(.*?)</td>', tr, re.S)}
            column = re.search(r'data-column="(\w+)"', tr)
            out[dtype].append({"impl": impl, "cells": cells, "column": column[1] if column else None})
    return out


def _render_ladder_stage(tmp: Path, edit=None) -> tuple[str, pd.DataFrame]:
    """The H100 folder copied to `tmp`, its CSVs replaced by `edit(results, profile)` (read and written as text, so
    nothing else changes), and the ladder stage's page rendered: (its HTML, its results)."""
    shutil.copytree(H100, tmp, ignore=shutil.ignore_patterns("*.html", "*.png"))
    if edit is not None:
        results = pd.read_csv(tmp / "results.csv", dtype=str, keep_default_na=False)
        profile = pd.read_csv(tmp / "profile.csv", dtype=str, keep_default_na=False)
        results, profile = edit(results, profile)
        results.to_csv(tmp / "results.csv", index=False)
        profile.to_csv(tmp / "profile.csv", index=False)
    df, _ = load_results(tmp / "results.csv")
    render_stage_pages(tmp, df, reports_root=H100.parent, only=(LADDER.number,))
    return (tmp / f"stage-{LADDER.number}.html").read_text(encoding="utf-8"), df


@pytest.fixture(scope="module")
def ladder_page(tmp_path_factory):
    return _render_ladder_stage(tmp_path_factory.mktemp("ladder") / "h100")


def _at(df: pd.DataFrame, impl: str, dtype: str, n: int) -> dict | None:
    rows = df[(df["impl"] == impl) & (df["dtype"] == dtype) & (df["M"] == n) & (df["N"] == n) & (df["K"] == n)]
    return rows.iloc[-1].to_dict() if len(rows) else None


def test_the_ladder_lists_each_backends_registered_forms_in_registry_order(ladder_page):
    """One row per registered form of the stage, backend by backend (CUDA, Triton, Gluon), in the registry's order,
    in a table per dtype the stage runs.  (A registered form the page cannot know of, with no row, GPU record or
    PTX summary anywhere, is what tests/test_evidence.py fails on.)"""
    from study import registry
    page, df = ladder_page
    evidence = json.loads((REPO / "reports" / "gpu-evidence.json").read_text())
    ptx = json.loads((REPO / "reports" / "ptx.json").read_text())
    knowable = set(df["impl"]) | {r["impl"] for r in evidence["records"] + evidence["sanitizer"]} | set(ptx)
    registered = [i.name for b in ("cuda", "triton", "gluon") for i in registry.implementations(b)
                  if i.stage is not None and i.stage.number == LADDER.number]
    assert sum(n.startswith("cuda:") for n in registered) > 1
    ladder = ladder_rows(page)
    assert list(ladder) == ["fp16", "bf16"]
    for dtype, rows in ladder.items():
        assert [r["impl"] for r in rows] == [n for n in registered if n in knowable], dtype


def test_the_declared_order_is_the_registrys():
    """Every stage that declares its steps' counters declares every registered form's suffix, in the order the
    registry holds each backend's forms; each counter is a profile.csv column."""
    from study import registry
    from study.measure.ncu import PROFILE_COLUMNS
    declared = [s for s in STAGES if s.step_counters]
    assert LADDER in declared
    for s in declared:
        assert set(s.step_counters.values()) <= set(PROFILE_COLUMNS), s.key
        for backend in ("cuda", "triton", "gluon"):
            names = [i.name for i in registry.implementations(backend) if i.stage and i.stage.number == s.number]
            suffixes = [stage_forms.suffix(s, n) for n in names]
            assert set(suffixes) <= set(s.step_counters), (s.key, backend, suffixes)
            assert suffixes == sorted(suffixes, key=list(s.step_counters).index), (s.key, backend)


def test_ladder_cells_are_the_results_rows(ladder_page):
    """Each cell states its results.csv row as the study does everywhere (spread.fmt_measure: TFLOP/s, p20-p80
    spread, SM clock), its % of cuBLAS, and its step from the form above: "tie" inside the spreads."""
    from study.present.spread import fmt_measure, tie
    page, df = ladder_page
    max_clock = json.loads((H100 / "environment.json").read_text())["sm_clock_max_mhz"]
    checked = 0
    for dtype, rows in ladder_rows(page).items():
        backend = lambda r: r["impl"].split(":")[0]
        first = {"impl": f"{backend(rows[0])}:{BY_NUMBER['13'].key}"}      # the stage the chart compares with
        for above, row in zip([first, *rows], rows):
            if backend(above) != backend(row):
                above = {"impl": f"{backend(row)}:{BY_NUMBER['13'].key}"}
            for n in (4096, 8192):
                r = _at(df, row["impl"], dtype, n)
                if r is None:
                    assert row["cells"][f"tflops-{n}"] == "—" and row["cells"][f"pct-{n}"] == "—"
                    continue
                checked += 1
                assert row["cells"][f"tflops-{n}"] == fmt_measure(r, max_clock), (row["impl"], dtype, n)
                assert f"@{r['sm_clock_mhz']:.0f} MHz" in row["cells"][f"tflops-{n}"]
                assert row["cells"][f"pct-{n}"].split()[0] == fmt_num(r["pct_cublas"])
                b = _at(df, above["impl"], dtype, n)
                if b is not None:
                    assert (row["cells"][f"step-{n}"] == "tie") == tie(r, b), (row["impl"], dtype, n)
    assert checked >= 2 * 2 * 5


def test_a_changed_row_changes_its_cell_and_a_missing_one_reads_not_measured(tmp_path):
    """In a copy of results.csv: one form's throughput and clock changed, another's row removed."""
    def edit(results, _profile):
        at = lambda impl, dtype, n: ((results["impl"] == impl) & (results["dtype"] == dtype)
                                     & (results["M"] == str(n)) & (results["N"] == str(n)) & (results["K"] == str(n)))
        results.loc[at("cuda:14_wgmma-ws", "fp16", 4096), ["tflops", "sm_clock_mhz"]] = ["612.345", "1777.0"]
        return results[~at("cuda:14_wgmma-persistent", "bf16", 8192)], _profile
    page, _ = _render_ladder_stage(tmp_path / "h100", edit)
    ladder = ladder_rows(page)
    ws = next(r for r in ladder["fp16"] if r["impl"] == "cuda:14_wgmma-ws")["cells"]
    assert ws["tflops-4096"].startswith("612.3 ±") and "@1777 MHz" in ws["tflops-4096"]
    persistent = next(r for r in ladder["bf16"] if r["impl"] == "cuda:14_wgmma-persistent")["cells"]
    assert persistent["tflops-8192"] == persistent["pct-8192"] == "—" and persistent["step-8192"] == ""
    assert persistent["tflops-4096"] != "—"


def test_the_counter_is_the_declared_profile_column(ladder_page, tmp_path):
    """Each row's counter is the column Stage.step_counters declares for its suffix, read from profile.csv at
    4096^3 (the call's kernels summed), the form above's value beside it; a changed profile value changes the cell."""
    page, _ = ladder_page
    prof, _ = stage_chart.counters(H100)
    at = prof[(prof["M"] == 4096) & (prof["N"] == 4096) & (prof["K"] == 4096)]
    value = lambda impl, dtype, col: at.loc[(at["impl"] == impl) & (at["dtype"] == dtype), col].iloc[0]
    for dtype, rows in ladder_rows(page).items():
        for row in rows:
            column = LADDER.step_counters[stage_forms.suffix(LADDER, row["impl"])]
            assert row["column"] == column, row["impl"]
            shown = row["cells"]["counter-value"].split(" → ")[-1]
            assert shown == stage_forms.fmt_counter(column, value(row["impl"], dtype, column)), (row["impl"], dtype)
    ws = next(r for r in ladder_rows(page)["fp16"] if r["impl"] == "cuda:14_wgmma-ws")
    assert ws["column"] == "tensor_pct"
    was, now = (stage_forms.fmt_counter("tensor_pct", value(f"cuda:14_wgmma{x}", "fp16", "tensor_pct"))
                for x in ("-1wg", "-ws"))
    assert ws["cells"]["counter-value"] == f"{was} → {now}"

    def edit(_results, profile):
        mine = (profile["impl"] == "cuda:14_wgmma-ws") & (profile["dtype"] == "fp16") & (profile["M"] == "4096")
        profile.loc[mine, "tensor_pct"] = "12.34"
        return _results, profile
    edited, _ = _render_ladder_stage(tmp_path / "h100", edit)
    ws = next(r for r in ladder_rows(edited)["fp16"] if r["impl"] == "cuda:14_wgmma-ws")
    assert ws["cells"]["counter-value"].endswith("→ 12.3")


def test_an_empty_counter_and_an_unmeasured_form_read_not_measured():
    """A declared column the profile leaves empty (issue_pct, before ncu records it as a column of its own) and a
    form known only from the evidence (no row anywhere) show "—", in their declared place."""
    import dataclasses
    df, _ = load_results(H100 / "results.csv")
    prof, _ = stage_chart.counters(H100)
    unmeasured = f"cuda:{LADDER.key}-tma-store"                 # its rows and profile taken away
    df, prof = df[df["impl"] != unmeasured], prof[prof["impl"] != unmeasured].copy()
    prof.loc[prof["impl"] == f"cuda:{LADDER.key}-persistent", "issue_pct"] = float("nan")
    s = dataclasses.replace(LADDER, step_counters={**LADDER.step_counters, "-persistent": "issue_pct"})
    before = {d: BY_NUMBER["13"] for d in ("fp16", "bf16")}
    got = stage_forms.table(df, s, before, (4096, 8192), prof, known=[f"cuda:{s.key}-tma-store"], max_clock=1980)
    cuda = next(b for b in got["tabs"][0]["backends"] if b["backend"] == "cuda")["rows"]
    names = [r["impl"] for r in cuda]
    assert names[-3:] == [f"cuda:{s.key}-cluster", f"cuda:{s.key}-tma-store", f"cuda:{s.key}"]
    persistent = next(r for r in cuda if r["impl"] == f"cuda:{s.key}-persistent")
    assert persistent["counter"]["column"] == "issue_pct" and persistent["counter"]["value"] == "—"
    new = next(r for r in cuda if r["impl"] == f"cuda:{s.key}-tma-store")
    assert all(c["tflops"] == "—" and c["pct"] == "—" for c in new["cells"])
    assert new["counter"]["value"] == "—"
    after = next(r for r in cuda if r["impl"] == f"cuda:{s.key}")
    assert all(c["step"] == "" for c in after["cells"])          # nothing measured above it to step from


def test_a_stage_with_several_forms_a_backend_has_the_ladder(rendered):
    """Any stage of which a backend measured several forms has the table (the fixture's split stage, every
    stage of the H100's with variants); a stage with no row here has none."""
    out, df, nav = rendered
    laddered = 0
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        mine = df[df["stage"] == s.number]
        if mine.empty:
            assert 'id="ladder"' not in html, s.key
        elif mine.groupby("backend")["impl"].nunique().max() > 1:
            laddered += 1
            assert 'id="ladder"' in html and ladder_rows(html), s.key
            assert ('data-cell="counter"' in html) == bool(s.step_counters), s.key
    assert laddered


# --- What each form adds (study/present/form_diffs.py) ----------------------------------------------------------

def adds_forms(page: str) -> dict[str, dict[str, str]]:
    """backend -> impl -> the HTML of that form's entry in the page's "What each form adds" section, in order."""
    section = page.split('<h2 id="adds"', 1)[1].split('<h2 id="forms"', 1)[0]
    out = {}
    for backend, body in re.findall(r'<section class="tabpanel adds"[^>]*data-backend="(\w+)"[^>]*>(.*?)</section>',
                                    section, re.S):
        out[backend] = dict(re.findall(r'class="adds" data-impl="([^"]+)">(.*?)(?=<(?:details|p) class="adds"|$)',
                                       body, re.S))
    return out


def text(html: str) -> str:
    import html as html_text
    return html_text.unescape(re.sub(r"<[^>]+>", "", html))


def test_form_symbols_are_the_registrys():
    """Stage.form_symbols declares every registered form of each backend, in the registry's order; a CUDA form's
    shapes are those its entries are instantiated from (entry wgmma_ws_{pair} from the line
    `WGMMA_PAIR(..., wgmma_ws, Cfg<SPECIALIZED>, ...)`), several only for a CudaModelDispatch, in its order; a
    Triton or Gluon form's first name is the function its TritonLaunch calls, in the stage's file."""
    from study import registry
    from study.launch.launchers import CudaModelDispatch
    declared = [s for s in STAGES if s.form_symbols]
    assert LADDER in declared
    for s in declared:
        for backend, forms in s.form_symbols.items():
            impls = [i for i in registry.implementations(backend) if i.stage and i.stage.number == s.number]
            assert list(forms) == [stage_forms.suffix(s, i.name) for i in impls], (s.key, backend)
            for impl in impls:
                names = forms[stage_forms.suffix(s, impl.name)]
                if backend != "cuda":
                    assert impl.launch.fn == names[0], impl.name
                    assert form_path(s, backend).stem == impl.launch.module.split(".")[-1], impl.name
                    continue
                source = form_path(s, backend)
                made = dict(re.findall(r"\(\s*\w+,\s*(\w+),\s*Cfg<(\w+)>", source.read_text()))
                entries = [c.entry for c in registry.cuda_launches(impl) if c.source == source.name]
                assert tuple(made[e.removesuffix("_{pair}")] for e in entries) == names, impl.name
                assert (len(names) > 1) == isinstance(impl.launch, CudaModelDispatch), impl.name


def test_the_page_shows_what_each_form_adds(ladder_page):
    """Between the ladder and the sources, each backend's declared forms in order; a CUDA step is its shape lines
    diffed and the kernel's lines that read the changed field, marked, with their line numbers; a Gluon or Triton
    step the diff of the launcher and the kernel functions it runs."""
    page, _ = ladder_page
    assert page.index('id="ladder"') < page.index('id="adds"') < page.index('id="forms"')
    shown = adds_forms(page)
    assert {b: list(f) for b, f in shown.items()} == {
        b: [f"{b}:{LADDER.key}{x}" for x in forms] for b, forms in LADDER.form_symbols.items()}
    key = LADDER.key

    persistent = shown["cuda"][f"cuda:{key}-persistent"]
    assert f"against <code>cuda:{key}-ws</code>" in persistent and ".persistent false → true" in text(persistent)
    added = [text(x) for x in re.findall(r'<span class="gi">(.*?)</span>', persistent)]
    removed = [text(x) for x in re.findall(r'<span class="gd">(.*?)</span>', persistent)]
    assert any(x.startswith("+constexpr Shape SCHEDULED{") and ".persistent = true" in x for x in added), added
    assert any(x.startswith("-constexpr Shape SPECIALIZED{") and ".persistent" not in x for x in removed), removed
    cu = form_path(LADDER, "cuda").read_text().splitlines()
    reading = [n for n, line in enumerate(cu, 1) if "C::PERSISTENT" in line]
    marked = [text(x) for x in re.findall(r'<span class="hll">(.*?)\n</span>', persistent, re.S)]
    assert reading and [int(m.split()[0]) for m in marked] == reading, marked
    assert all(cu[int(m.split()[0]) - 1].strip() in m for m in marked)

    best = text(shown["cuda"][f"cuda:{key}"])
    assert "CudaModelDispatch" in best and "WIDE: .stages 4 → 3" in best and "TMA_STORED: .cluster 2 → 1" in best

    ws = shown["gluon"][f"gluon:{key}-ws"]
    assert re.search(r'<span class="gi">\+def _loader_ws', ws) and re.search(r'<span class="gd">-def wgmma_1wg', ws)
    assert re.search(r"\+\d+ −\d+ lines", ws)
    triton = text(shown["triton"][f"triton:{key}"])
    assert f"+# triton_kernels/{BY_NUMBER['13'].key}.py:" in triton and "+def tma_persistent_kernel(" in triton
    for backend, forms in shown.items():                    # the first form has its code, no step
        first = next(iter(forms.values()))
        assert "the first form" in first and "<details" not in first, backend


def test_a_missing_or_unreached_symbol_fails_loudly():
    """A declared name the files do not define, or a kernel function the launcher does not reach, is an error that
    names it, not an empty step."""
    import dataclasses
    from study.present import form_diffs
    paths = {b: form_path(LADDER, b) for b in ("cuda", "triton", "gluon")}
    declared = LADDER.form_symbols
    for backend, suffix, names, error in (
            ("cuda", "-persistent", ("NO_SUCH_SHAPE",), KeyError),
            ("gluon", "-ws", ("gemm_ws", "wgmma_ws_kernel", "_no_such_partition"), KeyError),
            ("gluon", "-ws", ("gemm_no_such_launcher", "wgmma_ws_kernel"), KeyError),
            ("gluon", "-1wg", ("gemm_1wg", "wgmma_ws_kernel"), ValueError),
            ("triton", "", ("gemm", "tma_tile_kernel"), ValueError)):
        s = dataclasses.replace(LADDER, form_symbols={**declared, backend: {**declared[backend], suffix: names}})
        wrong = next(n for n in names if n not in declared[backend][suffix])
        with pytest.raises(error, match=wrong):
            form_diffs.steps(s, paths)


def test_only_a_stage_that_declares_several_forms_has_the_section(rendered):
    out, _, nav = rendered
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        assert ('id="adds"' in html) == any(len(f) > 1 for f in s.form_symbols.values()), s.key
