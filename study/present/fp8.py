"""The fp8 stage's part of its own page (stage-NN.html): what promotion buys, as error against K.

fp8_accuracy.csv (python -m study.accuracy, study/measure/fp8_accuracy.py) holds, per K, each fp8
implementation's relative error against the float64 product of its dequantized operands, on all-positive inputs,
and the floor: the same reference rounded to bf16 (D's own type), measured on the same inputs.  The figure draws
error against K, log-log, a line per implementation (the colour its backend's, the dash its scaling mode's), the
floor dashed grey; the caption says what the floor is, from the file.  Without the file the page says the study
is not yet measured.

The report reaches it through study/present/pages.py (STAGE_EXTRAS): `NUMBER`, `FILES` and `extra(report_dir)`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from study.core import stages
from study.measure.fp8_accuracy import COLUMNS, FILE, FLOOR_METHOD, SIZE
from study.measure.frame import load_results, load_table
from study.present import interactive
from study.present.formatting import fmt_num

NUMBER = stages.stage("fp8").number
ID = "fp8-accuracy"
FILES = (FILE,)
NUMERIC = ("M", "N", "K", "relerr", "max_relerr", "nonfinite")
DASH = {"tensor": "solid", "row": "dot", "block": "dashdot"}
FLOOR_COLOUR = "#9a9a9a"


def load(report_dir: Path) -> pd.DataFrame | None:
    acc, _ = load_table(Path(report_dir) / FILE, COLUMNS, NUMERIC)
    return acc if acc is not None and len(acc) else None


def _e(v: float) -> str:
    return f"{v:.1e}"


def figure(acc: pd.DataFrame) -> go.Figure | None:
    """Relative Frobenius error against K, log-log: a line per implementation (its dash the scaling mode, its
    marker the accumulation: circles promoted, crosses unpromoted), the bf16 floor of each scaling mode dashed
    grey; drawn floor first, then cuBLAS, CUDA, Triton and Gluon; hover: the method, its precision, K, both
    errors."""
    ok = acc[(acc["error"] == "") & (acc["relerr"] > 0) & (acc["K"] > 0)]
    if ok.empty:
        return None
    fig = go.Figure()
    order = ["cublas", *interactive.BACKEND_NAMES]
    groups = sorted(ok.groupby(["method", "scaling"], sort=False),
                    key=lambda kv: (kv[0][0] != FLOOR_METHOD, order.index(kv[1]["backend"].iloc[0])
                                    if kv[1]["backend"].iloc[0] in order else len(order)))
    for (method, scaling), g in groups:
        g = g.sort_values("K")
        floor = method == FLOOR_METHOD
        backend = g["backend"].iloc[0]
        unpromoted = str(g["precision"].iloc[0]).endswith("tcacc")
        fig.add_trace(go.Scatter(
            x=g["K"], y=g["relerr"], mode="lines+markers",
            name=f"bf16 rounding of the reference ({scaling})" if floor else f"{method} ({g['precision'].iloc[0]})",
            line=dict(color=FLOOR_COLOUR if floor else interactive.backend_colour(backend),
                      dash="dash" if floor else DASH.get(scaling, "solid"), width=1.2 if floor else 1.8),
            marker=dict(size=7 if unpromoted else 5, symbol="x-thin-open" if unpromoted else "circle",
                        line=dict(width=1.5, color=FLOOR_COLOUR if floor else interactive.backend_colour(backend))),
            meta={"method": method, "scaling": scaling},
            customdata=list(zip(g["precision"], g["max_relerr"].map(_e))),
            hovertemplate=f"{method}<br>%{{customdata[0]}}<br>K = %{{x}}<br>relerr %{{y:.2e}}"
                          "<br>max elementwise %{customdata[1]}<extra></extra>"))
    fig.update_xaxes(type="log", title_text=f"K (M = N = {fmt_num(ok['M'].iloc[0])})")
    fig.update_yaxes(type="log", title_text="relative Frobenius error of D (bf16) against float64")
    # The legend below the plot, in columns (at the right it ran under the mode bar and squeezed the plot).
    fig.update_layout(template="plotly_white", height=640, margin=dict(l=70, r=10, t=30, b=60), font=dict(size=11),
                      legend=dict(font=dict(size=10), orientation="h", x=0, xanchor="left", y=-0.16,
                                  yanchor="top", entrywidth=330))
    return fig


PROMOTED, UNPROMOTED = "fp8e4m3-tensor/fp32acc", "fp8e4m3-tensor/tcacc"
BLOCK_PROMOTED = "fp8e4m3-block/fp32acc"
LESSON_SIZE = 4096


def _at_lesson_size(df: pd.DataFrame) -> pd.DataFrame:
    """The passing rows at LESSON_SIZE^3."""
    n = LESSON_SIZE
    return df[(df["M"] == n) & (df["N"] == n) & (df["K"] == n) & df["passed"].astype(bool)]


def _pairs(df: pd.DataFrame, first: str, second: str) -> list[tuple[str, float, float]]:
    """(backend, TFLOP/s of precision `first`, TFLOP/s of precision `second`) at LESSON_SIZE^3, passing rows, for
    each backend (cuBLASLt last) that has both."""
    at = _at_lesson_size(df)
    out = []
    for backend in (*interactive.BACKEND_NAMES, "cublas"):
        g = at[at["backend"] == backend]
        x, y = g[g["precision"] == first]["tflops"], g[g["precision"] == second]["tflops"]
        if len(x) and len(y):
            out.append((backend, float(x.iloc[0]), float(y.iloc[0])))
    return out


def _speed(df: pd.DataFrame) -> list[tuple[str, float, float]]:
    """(backend, promoted TFLOP/s, unpromoted TFLOP/s) of the per-tensor forms at LESSON_SIZE^3, passing rows."""
    return _pairs(df, PROMOTED, UNPROMOTED)


def _fp8_and_bf16_rows(df: pd.DataFrame) -> list[tuple[str, pd.Series, pd.Series]]:
    """(backend, its fp8 per-tensor promoted row, its bf16 row: the main form of the stage fp8 builds on (the
    Hopper rung), or cuBLAS's bf16 GEMM) at LESSON_SIZE^3, passing rows, for each backend with both per-tensor
    forms (_speed): what fp8 buys over 16-bit operands."""
    at, rung = _at_lesson_size(df), stages.stage(stages.stage(NUMBER).builds_on).key
    out = []
    for backend, _, _ in _speed(df):
        fp8 = at[(at["backend"] == backend) & (at["precision"] == PROMOTED)]
        name = "cublas" if backend == "cublas" else f"{backend}:{rung}"
        bf16 = at[(at["impl"] == name) & (at["dtype"] == "bf16")]
        if len(bf16):
            out.append((backend, fp8.iloc[0], bf16.iloc[0]))
    return out


def _two_runs(rows: list[tuple[str, pd.Series, pd.Series]]) -> str:
    """A clause naming the runs when the fp8 and bf16 rows paired come from different commits or cards, else ''."""
    def runs(i):
        return {(str(r[i].get("commit", "")), str(r[i].get("gpu_uuid", ""))) for r in rows}
    fp8, bf16 = runs(1), runs(2)
    if fp8 == bf16:
        return ""
    other_card = {u for _, u in fp8} != {u for _, u in bf16}
    return (f"; the bf16 rows from another sweep, commit {', '.join(sorted({c for c, _ in bf16}))}"
            + (", on another card of the same model" if other_card else ""))


def _block_cost(df: pd.DataFrame) -> list[tuple[str, float, float]]:
    """(backend, block-scaled promoted TFLOP/s, per-tensor promoted TFLOP/s) at LESSON_SIZE^3, passing rows: what
    block scales cost each backend's promoted form (cuBLASLt: its block mode against its per-tensor one)."""
    return _pairs(df, BLOCK_PROMOTED, PROMOTED)


def _largest_k(acc: pd.DataFrame):
    """(the largest K measured, and there the relative errors of the promoted forms, the unpromoted forms, cuBLASLt's
    fast accumulation and the bf16 floor), from fp8_accuracy.csv's rows that measured."""
    ok = acc[(acc["error"] == "") & (acc["relerr"] > 0)]
    k = ok["K"].max()
    at = ok[ok["K"] == k]
    ours = at["backend"] != "cublas"
    return (k, at[(at["precision"] == PROMOTED) & ours]["relerr"], at[(at["precision"] == UNPROMOTED) & ours]["relerr"],
            at[(at["precision"] == UNPROMOTED) & ~ours]["relerr"], at[at["method"] == FLOOR_METHOD]["relerr"])


def lesson(df: pd.DataFrame, acc: pd.DataFrame | None) -> list[str] | None:
    """The stage's lesson as a few points, from the results (df) and fp8_accuracy.csv (acc): what fp8 buys over
    bf16 on the Hopper rung, what promotion costs in speed (per-tensor promoted against unpromoted, each backend,
    at LESSON_SIZE^3), what block scales cost (block against per-tensor), and what promotion buys in accuracy
    (the error at the largest K)."""
    speed, rows, block = _speed(df), _fp8_and_bf16_rows(df), _block_cost(df)
    over = [(b, float(f["tflops"]), float(h["tflops"])) for b, f, h in rows]
    parts = []
    if over:
        pairs = ", ".join(f"{fmt_num(p)} against {fmt_num(h)} TFLOP/s "
                          f"({interactive.BACKEND_NAMES.get(b, 'cuBLASLt')}, {p / h:.2f}x)" for b, p, h in over)
        parts.append(f"cuBLASLt is called through torch._scaled_mm. "
                     f"Hopper's fp8 wgmma has twice bf16's peak rate (datasheet); at {LESSON_SIZE}³ the per-tensor "
                     f"promoted form runs at {pairs} against bf16 (stage {stages.stage(NUMBER).builds_on}'s main "
                     f"form; for cuBLASLt, cuBLAS's bf16 GEMM{_two_runs(rows)}). Every form is "
                     "judged against float64 of its dequantized operands, so the errors shown leave out the "
                     "rounding of the inputs to fp8, which the caller's quantization decides.")
    if speed:
        parts.append("Promotion adds the tensor core's partial sum into fp32 registers every 128 k (fp32acc); "
                     "without it (tcacc) the whole K is summed inside the tensor core. "
                     f"Promotion costs speed: at {LESSON_SIZE}³ the per-tensor promoted form runs at "
                     + ", ".join(f"{fmt_num(p)} against {fmt_num(u)} TFLOP/s unpromoted "
                                 f"({interactive.BACKEND_NAMES.get(b, 'cuBLASLt')}, {100 * (1 - p / u):.0f}% slower)"
                                 for b, p, u in speed)
                     + "; our unpromoted forms also run larger tiles (128x256 against 128x128)"
                     + (", and Triton's promoted form waits for each chunk's dot before adding it (its pipeliner keeps "
                        "no other dot in flight), so its gap is not promotion's alone" if any(b == "triton" for b, _, _
                                                                                             in speed) else "") + ".")
    if block:
        parts.append("Block scales (1x128 of A, 128x128 of B, applied at each promotion) cost speed against "
                     "per-tensor ones: at "
                     f"{LESSON_SIZE}³ the block-scaled promoted form runs at "
                     + ", ".join(f"{fmt_num(k)} against {fmt_num(t)} TFLOP/s per-tensor "
                                 f"({interactive.BACKEND_NAMES.get(b, 'cuBLASLt')}, {100 * (1 - k / t):.0f}% slower)"
                                 for b, k, t in block) + ".")
    if acc is not None:
        k, pro, unp, fast, floor = _largest_k(acc)
        if len(pro) and len(unp):
            parts.append(f"It buys accuracy: at K = {fmt_num(k)} on all-positive inputs the promoted forms' error "
                         f"stays at {pro.max():.2e}"
                         + (f", within {100 * (pro.max() / floor.min() - 1):.0f}% of the bf16 floor "
                            f"({floor.min():.2e}: the float64 product rounded to bf16)" if len(floor) else "")
                         + f", while the unpromoted forms' grows to {_e(unp.max())}"
                         + (f" (cuBLASLt's fast accumulation: {_e(fast.max())})" if len(fast) else "") + ".")
    return parts or None


def findings(df: pd.DataFrame, report_dir: Path, n: int) -> list[tuple[str, str, str]]:
    """The stage's finding for the front page, as (topic, text, chart family): its lesson (promotion's cost and
    gain), from the results given (stale rows left out by the caller) and fp8_accuracy.csv."""
    speed, acc = _speed(df), load(report_dir)
    if not speed:
        return []
    text = (f"At {LESSON_SIZE}³ promotion into fp32 every 128 k costs the per-tensor forms "
            + ", ".join(f"{100 * (1 - p / u):.0f}% ({interactive.BACKEND_NAMES.get(b, 'cuBLASLt')})"
                        for b, p, u in speed) + " of unpromoted speed (our tiles: 128x128 against 128x256)")
    if acc is not None:
        k, pro, unp, _, _ = _largest_k(acc)
        if len(pro) and len(unp):
            text += (f"; at K = {fmt_num(k)} (all-positive inputs) it holds the error at {_e(pro.max())}, against "
                     f"{_e(unp.max())} unpromoted")
    return [("fp8: what promotion costs and buys", text + ".", "fp8")]


def floor_text(acc: pd.DataFrame) -> str:
    """The measured floor in words: the range of the bf16-rounded reference's error over the file's K values."""
    f = acc[(acc["method"] == FLOOR_METHOD) & (acc["relerr"] > 0)]
    if f.empty:
        return "the file holds no floor row"
    lo, hi = f["relerr"].min(), f["relerr"].max()
    return f"{_e(lo)}" + (f" to {_e(hi)}" if _e(hi) != _e(lo) else "") + \
        f" over K = {fmt_num(f['K'].min())} to {fmt_num(f['K'].max())}"


def extra(report_dir: Path, stale: set = frozenset()) -> dict:
    """The page's part: {"id", "title", "html", "caption"}, the figure's html None when not yet measured (stale:
    accepted as every stage extra's is; the accuracy table reads fp8_accuracy.csv, not results.csv)."""
    acc = load(report_dir)
    df, _ = load_results(Path(report_dir) / "results.csv")
    title = "Promotion's accuracy effect: error against K"
    if acc is None:
        return {"id": ID, "title": title, "html": None, "file": FILE, "lead": lesson(df, None),
                "caption": f"Not yet measured: no {FILE} here (python -m study.accuracy writes it on a GPU, "
                           f"M = N = {SIZE}, K from 256 to 65536, all-positive uniform inputs)."}
    lead = lesson(df, acc)
    where = ", ".join(sorted({f"{g}, commit {c}" for g, c in zip(acc["gpu"], acc["commit"]) if g}))
    raised = sorted(set(acc.loc[acc["error"] != "", "method"]))
    caption = (f"{FILE} ({where}): each implementation's D against the float64 product of its dequantized "
               f"operands, uniform [0, 1) inputs (no cancellation, so an accumulator that truncates loses in one "
               f"direction and its error grows with K).  D is bf16: the grey dashed lines are the floor, the "
               f"error of the float64 reference itself rounded to bf16 on the same inputs, measured at "
               f"{floor_text(acc)}; no bf16 D can do better.  Solid, dotted and dash-dotted: per-tensor, "
               f"row-wise and block scales; circles: promoted every 128 k (fp32acc), crosses: the whole K in the "
               f"tensor core (tcacc).  Drawn cuBLAS first, then CUDA, Triton and Gluon.")
    same = _coinciding(acc)
    if same:
        caption += f"  {same}"
    k, _, unp, fast, _ = _largest_k(acc)
    if len(fast) and len(unp) and fast.max() < 0.75 * unp.max():
        caption += (f"  cuBLASLt's fast accumulation is labelled tcacc, as it asks for no promotion, yet at K = "
                    f"{fmt_num(k)} its error ({_e(fast.max())}) stays below our unpromoted forms' ({_e(unp.max())}): "
                    f"how its kernel accumulates is not documented.")
    if raised:
        caption += f"  Raised (no point drawn): {', '.join(raised)}."
    return {"id": ID, "title": title, "file": FILE, "caption": caption, "lead": lead,
            "html": interactive.fragment(figure(acc), "fig-fp8-accuracy")}


def _coinciding(acc: pd.DataFrame) -> str:
    """A sentence when the CUDA, Triton and Gluon forms of a precision have the same error at every K (their lines
    lie on one another, the last drawn on top), else ''."""
    ok = acc[(acc["error"] == "") & acc["backend"].isin(list(interactive.BACKEND_NAMES))]
    same = [p for p, g in ok.groupby("precision")
            if g["backend"].nunique() > 1 and (g.groupby("K")["relerr"].nunique() == 1).all()]
    return (f"The CUDA, Triton and Gluon forms give the same error at every K in {', '.join(sorted(same))}: "
            f"their lines coincide (the Gluon line, drawn last of the three, covers the others).") if same else ""
