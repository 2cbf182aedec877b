"""The report's interactive figures (study/present/interactive.py): built from the recorded fixture and from the
committed H100 sweep, every figure has its div id, names every hover field, keeps its family's precisions apart
and draws a backend in one colour everywhere."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("plotly", reason="the report's figures need plotly (the GPU image lacks it)")

from study.core.schema import RESULT_COLUMNS
from study.core.stages import STAGES, stage
from study.measure.accuracy import ACCURACY_COLUMNS
from study.measure.frame import load_json, load_results, load_table, prepare
from study.present import hierarchy
from study.present import interactive as ia
from study.present.spread import fmt_measure
from study.present.tcec import ACC_NUMERIC, pareto_panels, pareto_points

REPO = Path(__file__).resolve().parents[1]
SOURCES = {"fixture": REPO / "tests" / "fixtures" / "reports", "h100": REPO / "reports" / "h100"}
SPLIT = stage("tcec").number


@pytest.fixture(scope="module", params=list(SOURCES))
def data(request):
    src = SOURCES[request.param]
    df, _ = load_results(src / "results.csv")
    return request.param, df, load_json(src / "ceilings.json")


@pytest.fixture(scope="module")
def h100():
    df, _ = load_results(SOURCES["h100"] / "results.csv")
    return df, load_json(SOURCES["h100"] / "ceilings.json")


@pytest.fixture(scope="module")
def fixture_rows():
    df, _ = load_results(SOURCES["fixture"] / "results.csv")
    return df, load_json(SOURCES["fixture"] / "ceilings.json")


def panels_of(source: str, df) -> list[tuple[str, pd.DataFrame]]:
    """The report's Pareto panels (one per distribution of the source's accuracy.csv), as pareto_menu() takes them."""
    acc, _ = load_table(SOURCES[source] / "accuracy.csv", ACCURACY_COLUMNS, ACC_NUMERIC)
    return [(p["label"], p["points"]) for p in pareto_panels(pareto_points(df)[0], acc)]


def all_figures(df, ceilings, source: str | None = None):
    """Every figure the data calls for, by the div id its fragment gets (and the per-distribution Pareto menu of
    a source's accuracy.csv, as fig-pareto-menu)."""
    figs = {}
    for key, _ in ia.families(df):
        figs[ia.div_id("roofline", key)] = ia.roofline_figure(df, ceilings, key)
        if ia.ladder_figure(df, key) is not None:
            figs[ia.div_id("ladder", key)] = ia.ladder_figure(df, key)
    for shape_set in sorted(set(df["shape_set"])):
        figs[ia.div_id("size", shape_set)] = ia.size_sweep_figure(df, shape_set)
    figs["fig-pareto"] = ia.pareto_figure(ia.error_points(pareto_points(df)[0]))
    if source:
        figs["fig-pareto-menu"] = ia.pareto_menu_figure(panels_of(source, df))
    return figs


def point_traces(fig):
    return [t for t in fig.data if t.customdata is not None and len(t.customdata)]


# --- every figure, with its div id ---------------------------------------------------------------------

def test_every_figure_is_built_and_its_fragment_carries_its_div_id(data):
    name, df, ceilings = data
    fragments = {ia.div_id("roofline", k): ia.roofline(df, ceilings, k) for k, _ in ia.families(df)}
    fragments |= {ia.div_id("ladder", k): ia.ladder(df, k) for k, _ in ia.families(df)}
    fragments |= {ia.div_id("size", s): ia.size_sweep(df, s) for s in sorted(set(df["shape_set"]))}
    fragments["fig-pareto"] = ia.pareto(ia.error_points(pareto_points(df)[0]))
    expected = {"fig-roofline-fp32", "fig-roofline-tf32", "fig-roofline-fp32-reduced", "fig-roofline-fp16-bf16",
                "fig-ladder-fp32", "fig-size-square", "fig-size-llama3", "fig-pareto"}
    if name == "h100":
        expected |= {"fig-roofline-int8", "fig-roofline-fp64", "fig-ladder-fp16-bf16", "fig-ladder-int8"}
    assert expected <= set(fragments)
    # A ladder has bars only where the family has rows other than cuBLAS's (the fixture's tf32 has none).
    bars = {ia.div_id("ladder", k) for k in set(ia.family_of(prepare(df[df["backend"] != "cublas"])))}
    for element_id, html in fragments.items():
        if element_id.startswith("fig-ladder-") and element_id not in bars:
            assert html is None, element_id
            continue
        assert html is not None, f"{name}: no figure for {element_id}"
        assert f'id="{element_id}"' in html, element_id
        assert "Plotly.newPlot" in html
        # The page loads plotly.min.js once; a fragment fetches nothing.
        assert "<script src" not in html and "cdn.plot.ly" not in html and "http" not in html.split("<script")[0]


def test_div_ids_are_stable_and_plain():
    assert ia.div_id("roofline", "fp32") == "fig-roofline-fp32"
    assert ia.div_id("roofline", "fp16_bf16") == "fig-roofline-fp16-bf16"
    assert ia.div_id("size", "llama3") == "fig-size-llama3"
    assert ia.div_id("cross", "gpu") == "fig-cross-gpu"


def test_families_are_named_in_table_order(h100):
    df, _ = h100
    assert [k for k, _ in ia.families(df)] == ["fp32", "tf32", "fp32_reduced", "fp16_bf16", "fp8", "int8", "fp64"]


# --- hover ---------------------------------------------------------------------------------------------

def test_hover_names_every_field_on_every_point(data):
    name, df, ceilings = data
    seen_pct = False
    for element_id, fig in all_figures(df, ceilings, name).items():
        assert fig is not None, element_id
        traces = point_traces(fig)
        assert traces, f"{name} {element_id}: no points"
        for t in traces:
            unit = "TOP/s" if str(t.customdata[-1][1]).startswith(("int", "uint")) else "TFLOP/s"
            for field in ia.HOVER_FIELDS:
                field = unit if field == "TFLOP/s" else field
                if element_id.startswith("fig-pareto") and field == "relerr":
                    field = "relative Frobenius error"
                assert field in t.hovertemplate, f"{element_id} {t.name}: hover lacks {field!r}"
            n = max(int(i) for i in re.findall(r"customdata\[(\d+)\]", t.hovertemplate))
            assert np.asarray(t.customdata).shape[1] > n
            seen_pct |= any(re.fullmatch(r"\d+\.\d% of cublas(:\w+)?", str(row[4])) for row in t.customdata)
    assert seen_pct, "no point says what percentage of its baseline it reaches"


def test_hover_text_of_one_row(h100):
    df, ceilings = h100
    fig = ia.roofline_figure(df, ceilings, "fp32")
    row = df[(df["impl"] == "cuda:09_best_simt") & (df["M"] == 4096) & (df["N"] == 4096) & (df["K"] == 4096)].iloc[0]
    trace = next(t for t in fig.data if t.meta and t.meta.get("impl") == "cuda:09_best_simt")
    texts = [list(r) for r in trace.customdata if r[2].startswith("4096x4096x4096")]
    assert len(texts) == 1
    impl, precision, shape, tflops, pct, relerr, clock, commit, failed, intensity, achieved = texts[0]
    assert (impl, precision, shape, failed) == ("cuda:09_best_simt", "fp32", "4096x4096x4096 (square)", "")
    assert tflops == fmt_measure(row) and "±" in tflops and "MHz" in tflops
    assert float(tflops.split()[0]) == pytest.approx(row["tflops"], rel=5e-3)
    assert pct == f"{row['pct_cublas']:.1f}% of cublas"
    assert float(relerr) == pytest.approx(row["relerr"], rel=1e-2)
    assert clock == f"{row['sm_clock_mhz']:.0f} MHz" and commit == row["commit"]
    assert float(intensity) == pytest.approx(row["intensity"], rel=1e-2)


def drawn_points(fig):
    """(symbol, hover status) of every point a figure draws (not a trace's empty leading point)."""
    return [(sym, row[8]) for t in point_traces(fig) for sym, row, y in zip(t.marker.symbol, t.customdata, t.y)
            if y is not None and np.isfinite(y)]


def test_a_failed_row_is_hollow_and_says_failed(fixture_rows):
    df, ceilings = fixture_rows
    assert (~df["passed"]).sum() == 1
    fig = ia.roofline_figure(df, ceilings, "fp32")
    failed = [sym for sym, status in drawn_points(fig) if "FAILED" in status]
    passed = [sym for sym, status in drawn_points(fig) if "FAILED" not in status]
    assert len(failed) == 1 and failed[0].endswith("-open")
    assert passed and not any("open" in sym for sym in passed)
    # The trace's legend symbol (its first) is the passed look, and the legend says what hollow means.
    trace = next(t for t in fig.data if t.meta and t.meta.get("impl") == "triton:02_coalesced")
    assert not trace.marker.symbol[0].endswith("open")
    assert any(t.name == "hollow: failed check (1)" for t in fig.data)


# --- families never mix precisions -----------------------------------------------------------------------

ALLOWED = {"fp32": {"fp32", "fp16x3-tcec", "tf32x3", "bf16x6", "bf16x9"}, "tf32": {"tf32"},
           "fp32_reduced": {"fp16-inputs", "fp16x3-markidis", "bf16x6-tcacc", "bf16x9-tcacc", "tf32x3-tcacc"},
           "fp16_bf16": {"fp16/fp32acc", "bf16/fp32acc", "fp16/fp16acc"},
           "int8": {"int8/int32acc", "uint8/int32acc"}, "fp64": {"fp64"},
           "fp8": {"fp8e4m3-tensor/fp32acc", "fp8e4m3-row/fp32acc", "fp8e4m3-block/fp32acc",
                   "fp8e4m3-tensor/tcacc"}}


def test_every_row_has_exactly_one_family(h100):
    df, _ = h100
    d = prepare(df)
    kept = sum(fam.keep(d).astype(int) for fam in ia.FAMILIES.values())
    assert (kept == 1).all(), d.loc[kept != 1, ["impl", "dtype", "precision"]].drop_duplicates()


def test_no_family_mixes_precisions(data):
    name, df, ceilings = data
    for key, _ in ia.families(df):
        for fig in (ia.roofline_figure(df, ceilings, key), ia.ladder_figure(df, key)):
            if fig is None:
                continue
            precisions = {row[1] for t in point_traces(fig) for row in t.customdata}
            assert precisions and precisions <= ALLOWED[key], f"{name} {key}: {precisions - ALLOWED[key]}"
    fp32 = ia.roofline_figure(df, ceilings, "fp32")
    impls = {row[0] for t in point_traces(fp32) for row in t.customdata}
    assert not {"cublas:tf32", "cuda:15_tcec-nocorr", "cuda:15_tcec-markidis"} & impls
    assert {"cublas", "cuda:15_tcec"} <= impls


def test_a_new_precision_gets_a_family_of_its_own(fixture_rows):
    df, ceilings = fixture_rows
    extra = df[df["impl"] == "cublas"].assign(impl="cublas:fp8", dtype="fp8", precision="fp8/fp32acc")
    both = pd.concat([df, extra], ignore_index=True)
    keys = dict(ia.families(both))
    assert "other_fp8_fp8_fp32acc" in keys
    fig = ia.roofline_figure(both, ceilings, "other_fp8_fp8_fp32acc")
    assert {row[1] for t in point_traces(fig) for row in t.customdata} == {"fp8/fp32acc"}
    assert not any(t.meta and "ceiling" in t.meta for t in fig.data)


def test_size_sweep_has_one_facet_per_family(h100):
    df, _ = h100
    fig = ia.size_sweep_figure(df, "square")
    axes: dict[str, set] = {}
    for t in point_traces(fig):
        axes.setdefault(t.xaxis or "x", set()).add(ia.family_of(prepare(pd.DataFrame(
            [{"dtype": t.meta["dtype"], "precision": t.meta["precision"]}]))).iloc[0])
    assert all(len(f) == 1 for f in axes.values()), axes
    assert sorted(f.pop() for f in axes.values()) == sorted(k for k, _ in ia.families(df))
    titles = {a.text for a in fig.layout.annotations}
    assert {ia.FAMILIES[k].short for k, _ in ia.families(df)} <= titles


def test_other_shape_sets_are_ordered_by_flops(h100):
    df, _ = h100
    fig = ia.size_sweep_figure(df, "llama3")
    order = list(fig.layout.xaxis.categoryarray)
    flops = [np.prod([int(v) for v in label.split("x")]) for label in order]
    from study.core.shapes import LLAMA3
    assert flops == sorted(flops) and len(order) == len(LLAMA3)
    assert fig.layout.xaxis.type == "category"
    assert ia.size_sweep_figure(df, "no such set") is None


# --- one look everywhere -----------------------------------------------------------------------------------

def backend_colours(fig) -> dict[str, set]:
    seen: dict[str, set] = {}
    for t in fig.data:
        if t.meta and "backend" in t.meta:
            seen.setdefault(t.meta["backend"], set()).add(t.marker.color)
    return seen


def test_a_backend_has_one_colour_on_every_figure(h100):
    df, ceilings = h100
    figs = [ia.roofline_figure(df, ceilings, "fp32"), ia.roofline_figure(df, ceilings, "fp16_bf16"),
            ia.size_sweep_figure(df), ia.ladder_figure(df, "fp32"), ia.pareto_figure(ia.error_points(pareto_points(df)[0]))]
    merged: dict[str, set] = {}
    for fig in figs:
        for backend, colours in backend_colours(fig).items():
            merged.setdefault(backend, set()).update(colours)
    assert {"cuda", "triton", "gluon", "cublas"} <= set(merged)
    assert all(len(c) == 1 for c in merged.values()), merged
    assert {b: c.pop() for b, c in merged.items()} == {b: ia.backend_colour(b) for b in merged}
    assert len({ia.backend_colour(b) for b in ("cuda", "triton", "gluon", "cublas")}) == 4


def test_a_stage_has_one_symbol_and_its_variants_are_marked():
    symbols = [ia.stage_symbol(s.number) for s in STAGES]
    assert len(set(symbols)) == len(STAGES)
    assert ia.stage_symbol(f"{SPLIT}-markidis") == f"{ia.stage_symbol(SPLIT)}-dot"
    assert ia.marker_symbol(f"{SPLIT}-markidis", False) == f"{ia.stage_symbol(SPLIT)}-open-dot"
    assert ia.marker_symbol(SPLIT, False) == f"{ia.stage_symbol(SPLIT)}-open"
    baselines = {ia.stage_symbol(b) for b in ("cublas", "cublas:tf32", "cublas:fp64", "cublas:int8", "triton:tuned")}
    assert len(baselines) == 5 and not baselines & set(symbols)
    assert ia.stage_symbol("triton:tuned-tf32") == "hexagram-dot"
    # A stage beyond the table still gets a symbol of its own.
    assert ia.stage_symbol(f"{len(STAGES) + 1:02d}") not in symbols


def test_traces_use_their_stage_symbol(h100):
    df, ceilings = h100
    for t in point_traces(ia.roofline_figure(df, ceilings, "fp32_reduced")):
        if not t.meta["impl"].split(":", 1)[1].startswith(SPLIT):
            continue   # the baselines of the family (cuBLAS's and Triton's tensor-core sums) have their own
        variant = t.meta["impl"].split("-", 1)[1]
        assert set(t.marker.symbol) == {ia.stage_symbol(f"{SPLIT}-{variant}")}


# --- what each figure draws ----------------------------------------------------------------------------

def test_roofline_draws_only_its_familys_ceilings(h100):
    df, ceilings = h100
    drawn = {}
    for key, _ in ia.families(df):
        fig = ia.roofline_figure(df, ceilings, key)
        drawn[key] = {t.meta["ceiling"] for t in fig.data if t.meta and "ceiling" in t.meta}
        # a family's ceilings, where ceilings.json has them (a sweep refreshed after a family was added keeps the
        # older file, and the roofline says its ceiling is not yet measured)
        known = set(ceilings["measured"]) | set(ceilings["datasheet"])
        assert drawn[key] <= ia.FAMILIES[key].ceilings, key
        assert bool(drawn[key]) == bool(ia.FAMILIES[key].ceilings & known), key
        assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
        assert "compulsory" in fig.layout.xaxis.title.text and fig.layout.yaxis.title.text in ("TFLOP/s", "TOP/s")
    assert {"fp32_fma_tflops", "fp16_tc_over3_tflops", "tf32_tc_over3_tflops"} <= drawn["fp32"]
    assert "tf32_tc_tflops" in drawn["tf32"] and "fp32_fma_tflops" not in drawn["tf32"]
    assert not drawn["fp16_bf16"] & {"tf32_tc_tflops", "int8_tc_tops", "fp32_fma_tflops"}
    fig = ia.roofline_figure(df, ceilings, "fp32")
    dashes = {t.name: t.line.dash for t in fig.data if t.meta and "ceiling" in t.meta}
    assert dashes["FP32 FMA 65"] == "solid" and dashes["FP32 FMA 67 datasheet"] == "dash"
    assert any(t.name.startswith("DRAM ") and " GB/s" in t.name for t in fig.data)


def test_ladder_names_the_familys_cublas_line(h100):
    df, _ = h100
    cublas = df[(df["impl"] == "cublas") & (df["dtype"] == "fp32") & (df["M"] == 4096) & (df["N"] == 4096)
                & (df["K"] == 4096)]   # the square row: a Llama 3 shape may share M and N
    fig = ia.ladder_figure(df, "fp32")
    lines = {s.name: s.y0 for s in fig.layout.shapes}
    name = f"cuBLAS SGEMM (TF32 off) {cublas['tflops'].iloc[0]:.3g} at 4096"
    assert lines[name] == pytest.approx(cublas["tflops"].iloc[0])
    assert any(n.startswith("cuBLAS SGEMM (TF32 on)") for n in {s.name for s in ia.ladder_figure(df, "tf32").layout.shapes})
    assert not any("cublas" == row[0] for t in point_traces(fig) for row in t.customdata), "cuBLAS is a line, not a bar"
    stages = list(fig.layout.xaxis.categoryarray)
    assert stages[0].startswith(STAGES[0].number) and stages[-1].startswith("triton:tuned")
    assert {t.meta["size"] for t in fig.data if t.meta and "size" in t.meta} == {4096, 8192}


def test_ladder_falls_back_to_the_largest_square(fixture_rows):
    df, _ = fixture_rows
    fig = ia.ladder_figure(df, "fp32", sizes=(8192,))
    assert {t.meta["size"] for t in fig.data if t.meta and "size" in t.meta} == {4096}


def test_pareto_front_and_axes(h100):
    df, _ = h100
    points = ia.error_points(pareto_points(df)[0])
    fig = ia.pareto_figure(points)
    front = next(t for t in fig.data if t.name == "Pareto front")
    xs, ys = np.array(front.x, float), np.array(front.y, float)
    assert list(xs) == sorted(xs) and len(xs) >= 2
    for x, y in zip(points["tflops"], points["error"]):
        assert not ((x > xs) & (y < ys)).any(), "a point beats the front on both counts"
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis.title.text == "relative Frobenius error"
    assert ia.pareto_figure(points.drop(columns=["error"])) is None


def test_pareto_takes_minimal_points():
    points = pd.DataFrame({"impl": ["cuda:x", "cublas"], "tflops": [10.0, 20.0], "error": [1e-6, 1e-3],
                           "metric": ["max elementwise relative error"] * 2})
    fig = ia.pareto_figure(points)
    assert fig is not None and fig.layout.yaxis.title.text == "max elementwise relative error"
    assert "max elementwise relative error" in point_traces(fig)[0].hovertemplate


def test_pareto_menu_has_a_panel_per_distribution(data):
    name, df, _ = data
    panels = panels_of(name, df)
    acc = pd.read_csv(SOURCES[name] / "accuracy.csv")
    assert len(panels) == acc["distribution"].nunique() >= 3
    fig = ia.pareto_menu_figure(panels)
    menu = fig.layout.updatemenus[0]
    assert [b.label for b in menu.buttons] == [label for label, _ in panels] and menu.active == 0
    # Each button shows its own panel's traces and the legend's key, and nothing of another panel.
    for button, (label, points) in zip(menu.buttons, panels):
        visible = button.args[0]["visible"]
        assert len(visible) == len(fig.data)
        for shown, t in zip(visible, fig.data):
            panel = (t.meta or {}).get("panel")
            assert shown == (panel == label or panel is None), (label, t.name, panel)
        drawn = {row[0] for t, shown in zip(fig.data, visible) if shown and t.customdata is not None
                 for row in t.customdata}
        finite = points[np.isfinite(points["error"].astype(float)) & (points["error"].astype(float) > 0)]
        assert drawn == set(finite["impl"]), label
        assert label in button.args[1]["title.text"] and label in button.args[1]["yaxis.title.text"]
        lost = set(points["impl"]) - set(finite["impl"])
        notes = " ".join(a["text"] for a in button.args[1]["annotations"])
        assert all(i in notes for i in lost) and ("not drawn" in notes) == bool(lost), (label, lost)
    # At first only the first panel shows (plotly draws a trace with visible unset).
    first = [t.visible is not False for t in fig.data]
    assert first == list(menu.buttons[0].args[0]["visible"])
    # The hover says where the error was measured, and the other two errors.
    t = next(t for t in fig.data if t.customdata is not None and len(t.customdata))
    for field in ("median elementwise error", "componentwise error", "error measured at"):
        assert field in t.hovertemplate
    assert "accuracy.csv" in t.customdata[0][-1] and "x4096" in t.customdata[0][-1]
    html = ia.pareto_menu(panels)
    assert 'id="fig-pareto"' in html and "updatemenus" in html


def test_a_single_pareto_panel_has_no_menu_and_names_what_it_cannot_draw():
    points = pd.DataFrame({"impl": ["cuda:15_tcec", "cublas", "cuda:15_tcec-bf16x6"], "tflops": [160.0, 50.0, 120.0],
                           "error": [float("inf"), 1e-6, 5e-7], "metric": ["relative Frobenius error, tiny"] * 3})
    fig = ia.pareto_menu_figure([("tiny", points)])
    assert not fig.layout.updatemenus
    assert {row[0] for t in point_traces(fig) for row in t.customdata} == {"cublas", "cuda:15_tcec-bf16x6"}
    assert any("not drawn" in a.text and "cuda:15_tcec" in a.text for a in fig.layout.annotations)
    assert ia.pareto_menu_figure([("a", points.assign(error=float("nan")))]) is None
    # A panel with nothing to draw is left out of the menu; the others keep their buttons.
    two = ia.pareto_menu_figure([("a", points.assign(error=float("nan"))), ("b", points), ("c", points)])
    assert [b.label for b in two.layout.updatemenus[0].buttons] == ["b", "c"]


def test_cross_gpu_needs_two_gpus(h100, fixture_rows):
    df, _ = h100
    other, _ = fixture_rows
    assert ia.cross_gpu_figure({"H100": df}) is None
    assert ia.cross_gpu({"H100": df, "none": pd.DataFrame()}) is None
    fig = ia.cross_gpu_figure({"H100": df, "other": other})
    assert "4096x4096x4096" in fig.layout.title.text
    gpus = {t.meta["gpu"] for t in fig.data}
    assert gpus == {"H100", "other"}
    by_gpu = {g: {row[0] for t in fig.data if t.meta["gpu"] == g for row in t.customdata} for g in gpus}
    assert by_gpu["H100"] == by_gpu["other"]
    assert 'id="fig-cross-gpu"' in ia.cross_gpu({"H100": df, "other": other})
    assert all("GPU" in t.hovertemplate for t in fig.data)


# --- nothing to draw -------------------------------------------------------------------------------------

@pytest.mark.parametrize("empty", [None, pd.DataFrame(), pd.DataFrame(columns=list(RESULT_COLUMNS))],
                         ids=["none", "no-columns", "no-rows"])
def test_empty_frames_give_none(empty, fixture_rows):
    _, ceilings = fixture_rows
    assert ia.families(empty) == []
    assert ia.roofline(empty, ceilings, "fp32") is None
    assert ia.ladder(empty, "fp32") is None
    assert ia.size_sweep(empty) is None
    assert ia.pareto(empty) is None
    assert ia.cross_gpu({"a": empty, "b": empty}) is None


def test_a_family_without_rows_gives_none(fixture_rows):
    df, ceilings = fixture_rows
    assert ia.roofline(df, ceilings, "int8") is None and ia.ladder(df, "int8") is None


def test_missing_ceilings_still_draw_the_points(fixture_rows):
    df, _ = fixture_rows
    fig = ia.roofline_figure(df, None, "fp32")
    assert point_traces(fig) and not any(t.meta and "ceiling" in t.meta for t in fig.data)
    assert any(a.text == "no ceilings measured" for a in fig.layout.annotations)


# --- legends, the achieved-traffic roofline, the best forms ---------------------------------------------------

def test_every_legend_has_at_most_20_entries(data):
    """A backend's series share one legend entry (a click hides the backend), a baseline has its own, the
    ceilings share one: no figure's legend runs past 20 entries."""
    name, df, ceilings = data
    figs = all_figures(df, ceilings, name)
    traffic = hierarchy.achieved_traffic(SOURCES[name], {})
    figs |= {f"achieved-{k}": ia.roofline_figure(df, ceilings, k, traffic) for k, _ in ia.families(df)}
    for element_id, fig in figs.items():
        if fig is not None:
            assert ia.legend_entries(fig) <= 20, (element_id, ia.legend_entries(fig))


def _x_at(fig, impl: str, dtype: str, n: int):
    """The x of an implementation's n^3 point, as drawn."""
    for t in fig.data:
        if t.meta and t.meta.get("impl") == impl and t.meta.get("dtype") == dtype:
            return next((x for x, row in zip(t.x, t.customdata) if row[2].startswith(f"{n}x{n}x{n}")), None)
    raise AssertionError(f"no trace of {impl} {dtype}")


def test_roofline_places_calls_by_ncu_traffic_and_leaves_out_implausible_ones(h100):
    """At 4096^3 the fp16 implementations share one compulsory intensity but sit apart at the FLOPs per DRAM
    byte ncu counted; a call the audit rejects is not drawn there, and the menu's compulsory view draws it."""
    df, ceilings = h100
    traffic = hierarchy.achieved_traffic(SOURCES["h100"], {})
    fig = ia.roofline_figure(df, ceilings, "fp16_bf16", traffic)
    impls = ["cuda:14_wgmma", "triton:14_wgmma", "gluon:14_wgmma", "cuda:10_wmma"]
    xs = {i: _x_at(fig, i, "fp16", 4096) for i in impls}
    assert len(set(xs.values())) == len(impls), xs
    t = traffic[(traffic["impl"] == "cuda:14_wgmma") & (traffic["dtype"] == "fp16") & (traffic["M"] == 4096)]
    assert xs["cuda:14_wgmma"] == pytest.approx(2 * 4096**3 / t["dram_bytes"].iloc[0])
    assert "ncu" in fig.layout.xaxis.title.text
    key = ("cuda:14_wgmma", "fp16", 4096, 4096, 4096)
    gone = ia.roofline_figure(df, ceilings, "fp16_bf16", hierarchy.achieved_traffic(SOURCES["h100"], {key: "test"}))
    assert _x_at(gone, "cuda:14_wgmma", "fp16", 4096) is None
    assert _x_at(gone, "triton:14_wgmma", "fp16", 4096) == pytest.approx(xs["triton:14_wgmma"])
    views = {b.label: b.args[0]["x"] for b in gone.layout.updatemenus[0].buttons}
    assert set(views) == {"achieved traffic (ncu)", "compulsory traffic"}
    i = next(j for j, t in enumerate(gone.data) if t.meta and t.meta.get("impl") == "cuda:14_wgmma"
             and t.meta.get("dtype") == "fp16")
    assert sum(x is not None for x in views["compulsory traffic"][i]) > sum(x is not None for x in views[
        "achieved traffic (ncu)"][i])
    assert "Left out of the figures" in hierarchy.excluded_note({key: "test"}) and "cuda:14_wgmma" in \
        hierarchy.excluded_note({key: "test"})


def test_roofline_stage_menu_keeps_one_stage_and_the_baselines(h100):
    df, ceilings = h100
    fig = ia.roofline_figure(df, ceilings, "fp16_bf16")
    menu = fig.layout.updatemenus[-1]
    button = next(b for b in menu.buttons if b.label == "stage 14")
    for t, on in zip(fig.data, button.args[0]["visible"]):
        if t.meta and "impl" in t.meta:
            assert on == (t.meta["stage"] in ("14", "baseline")), t.meta
        else:
            assert on, t.name


def test_size_sweep_draws_the_best_form_per_backend(h100):
    df, _ = h100
    fig = ia.size_sweep_figure(df, "square")
    shown = [t.meta for t in fig.data if t.meta and "impl" in t.meta and t.visible is not False]
    hidden = [t.meta for t in fig.data if t.meta and "impl" in t.meta and t.visible is False]
    assert hidden, "every form drawn"
    forms = [(m["family"], m["backend"], m["dtype"]) for m in shown if m["stage"] != "baseline"]
    assert len(forms) == len(set(forms)), "more than one form of a backend drawn per family and dtype"
    fp16 = [m["impl"] for m in shown if m["family"] == "fp16_bf16" and m["dtype"] == "fp16"]
    assert "cublas" in fp16 and any(i.startswith("cuda:14_wgmma") for i in fp16), fp16
    every = next(b for b in fig.layout.updatemenus[0].buttons if b.label == "every form")
    assert all(every.args[0]["visible"])


def test_a_lopsided_spread_shows_both_sides():
    """A spread reads ± only where its throughput range is near symmetric: a slow tail (p80 time 8.5% above the
    median, p20 0.3% below) shows both sides, so that no one reads the lower side as 4.4%."""
    from study.present.spread import spread_text
    row = {"ms": 1.0, "tflops": 1000.0}
    assert spread_text({**row, "ms_p20": 0.997, "ms_p80": 1.085}) == " \u22127.8/+0.3%"
    assert spread_text({**row, "ms_p20": 0.997, "ms_p80": 1.003}) == " ±0.3%"
    assert spread_text({**row, "ms_p20": 0.9996, "ms_p80": 1.0004}) == " ±<0.1%"
    assert spread_text({**row, "ms_p20": 0.999, "ms_p80": 1.006}) == " ±0.4%"    # lopsided, but under 1%
    assert spread_text({"tflops": 1000.0}) == ""


def test_hover_states_spread_clock_and_power_limit(h100):
    """A row timed well below the GPU's highest clock says power-limited in its hover."""
    df, _ = h100
    fig = ia.size_sweep_figure(df, "square", max_clock=1980)
    texts = [row[3] for t in fig.data if t.customdata is not None for row in t.customdata]
    spread = re.compile(r"±|\u2212\d+\.\d/\+\d+\.\d%")      # symmetric, or a lopsided spread's two sides
    assert all(spread.search(x) and "MHz" in x for x in texts if x)
    limited = df[df["sm_clock_mhz"] < 0.95 * 1980]
    assert len(limited) and any("power-limited" in x for x in texts)


# --- plotly.min.js -----------------------------------------------------------------------------------------

def test_write_plotly_js_writes_once(tmp_path):
    name = ia.write_plotly_js(tmp_path)
    path = tmp_path / name
    assert name == "plotly.min.js" and "Plotly" in path.read_text(encoding="utf-8")[:5000]
    os.utime(path, ns=(10**18, 10**18))
    assert ia.write_plotly_js(tmp_path) == name and path.stat().st_mtime_ns == 10**18, "rewrote an identical file"
    path.write_text("stale")
    ia.write_plotly_js(tmp_path)
    assert path.stat().st_size > 10**6


def test_plotly_src_is_the_one_copy_relative_to_the_page(tmp_path):
    (tmp_path / "h100").mkdir()
    assert ia.plotly_src(tmp_path / "h100", tmp_path) == "../plotly.min.js"
    assert ia.plotly_src(tmp_path, tmp_path) == "plotly.min.js"
    assert [p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("plotly.min.js")] == ["plotly.min.js"]


# --- a real browser ---------------------------------------------------------------------------------------

@pytest.mark.browser
def test_figures_draw_in_headless_chromium(h100, tmp_path):
    from tests.test_report import chrome_driver
    df, ceilings = h100
    fragments = [ia.roofline(df, ceilings, "fp32"), ia.ladder(df, "fp16_bf16"), ia.size_sweep(df),
                 ia.pareto(ia.error_points(pareto_points(df)[0])),
                 ia.pareto_menu(panels_of("h100", df), "fig-pareto-menu")]
    js = ia.write_plotly_js(tmp_path)
    page = tmp_path / "page.html"
    page.write_text(f'<!doctype html><html><head><meta charset="utf-8"><title>t</title><script src="{js}"></script>'
                    f'</head><body>{"".join(fragments)}</body></html>', encoding="utf-8")
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.set_page_load_timeout(30)
        driver.get(page.as_uri())
        drawn = driver.execute_script(
            "return Array.from(document.querySelectorAll('.plotly-graph-div'))"
            ".map(e => [e.id, !!e._fullLayout, e.querySelectorAll('.point, .legendtoggle').length])")
        assert [d[0] for d in drawn] == ["fig-roofline-fp32", "fig-ladder-fp16-bf16", "fig-size-square", "fig-pareto",
                                         "fig-pareto-menu"]
        assert all(ok and marks > 0 for _, ok, marks in drawn), drawn
        # The menu switches the Pareto plot to another distribution: a click on its header, then on an item.
        menu = driver.find_element("css selector", "#fig-pareto-menu .updatemenu-header")
        driver.execute_script("arguments[0].scrollIntoView()", menu)
        menu.click()
        items = driver.find_elements("css selector", "#fig-pareto-menu .updatemenu-dropdown-button")
        assert len(items) == len(panels_of("h100", h100[0])), len(items)
        items[1].click()
        shown = driver.execute_script(
            "const gd = document.getElementById('fig-pareto-menu');"
            "const on = gd._fullData.filter(t => t.visible === true && t.meta && t.meta.panel);"
            "return [gd.layout.title.text, new Set(on.map(t => t.meta.panel)).size, on[0].meta.panel]")
        second = panels_of("h100", h100[0])[1][0]
        assert second in shown[0] and shown[1] == 1 and shown[2] == second, shown
        # The legend sits below the plot area, never over it.
        overlap = driver.execute_script(
            "return Array.from(document.querySelectorAll('.plotly-graph-div')).map(e => {"
            " const p = e.querySelector('.cartesianlayer .bg, rect.nsewdrag').getBoundingClientRect();"
            " const l = e.querySelector('g.legend').getBoundingClientRect(); return l.top >= p.bottom; })")
        assert all(overlap), overlap
    finally:
        driver.quit()
