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
from study.measure.frame import load_table
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
    """Relative Frobenius error against K, log-log: a line per implementation, the bf16 floor of each scaling
    mode dashed grey; hover: the method, its precision, K, both errors."""
    ok = acc[(acc["error"] == "") & (acc["relerr"] > 0) & (acc["K"] > 0)]
    if ok.empty:
        return None
    fig = go.Figure()
    for (method, scaling), g in ok.groupby(["method", "scaling"], sort=False):
        g = g.sort_values("K")
        floor = method == FLOOR_METHOD
        backend = g["backend"].iloc[0]
        fig.add_trace(go.Scatter(
            x=g["K"], y=g["relerr"], mode="lines+markers",
            name=f"bf16 rounding of the reference ({scaling})" if floor else f"{method} ({g['precision'].iloc[0]})",
            line=dict(color=FLOOR_COLOUR if floor else interactive.backend_colour(backend),
                      dash="dash" if floor else DASH.get(scaling, "solid"), width=1.2 if floor else 1.8),
            marker=dict(size=5), meta={"method": method, "scaling": scaling},
            customdata=list(zip(g["precision"], g["max_relerr"].map(_e))),
            hovertemplate=f"{method}<br>%{{customdata[0]}}<br>K = %{{x}}<br>relerr %{{y:.2e}}"
                          "<br>max elementwise %{customdata[1]}<extra></extra>"))
    fig.update_xaxes(type="log", title_text=f"K (M = N = {fmt_num(ok['M'].iloc[0])})")
    fig.update_yaxes(type="log", title_text="relative Frobenius error of D (bf16) against float64")
    fig.update_layout(template="plotly_white", height=460, margin=dict(l=70, r=10, t=10, b=50), font=dict(size=11),
                      legend=dict(font=dict(size=10)))
    return fig


def floor_text(acc: pd.DataFrame) -> str:
    """The measured floor in words: the range of the bf16-rounded reference's error over the file's K values."""
    f = acc[(acc["method"] == FLOOR_METHOD) & (acc["relerr"] > 0)]
    if f.empty:
        return "the file holds no floor row"
    lo, hi = f["relerr"].min(), f["relerr"].max()
    return f"{_e(lo)}" + (f" to {_e(hi)}" if _e(hi) != _e(lo) else "") + \
        f" over K = {fmt_num(f['K'].min())} to {fmt_num(f['K'].max())}"


def extra(report_dir: Path) -> dict:
    """The page's part: {"id", "title", "html", "caption"}, the figure's html None when not yet measured."""
    acc = load(report_dir)
    title = "Promotion's accuracy effect: error against K"
    if acc is None:
        return {"id": ID, "title": title, "html": None, "file": FILE,
                "caption": f"Not yet measured: no {FILE} here (python -m study.accuracy writes it on a GPU, "
                           f"M = N = {SIZE}, K from 256 to 65536, all-positive uniform inputs)."}
    where = ", ".join(sorted({f"{g}, commit {c}" for g, c in zip(acc["gpu"], acc["commit"]) if g}))
    raised = sorted(set(acc.loc[acc["error"] != "", "method"]))
    caption = (f"{FILE} ({where}): each implementation's D against the float64 product of its dequantized "
               f"operands, uniform [0, 1) inputs (no cancellation, so an accumulator that truncates loses in one "
               f"direction and its error grows with K).  D is bf16: the grey dashed lines are the floor, the "
               f"error of the float64 reference itself rounded to bf16 on the same inputs, measured at "
               f"{floor_text(acc)}; no bf16 D can do better.  Solid, dotted and dash-dotted: per-tensor, "
               f"row-wise and block scales.")
    if raised:
        caption += f"  Raised (no point drawn): {', '.join(raised)}."
    return {"id": ID, "title": title, "file": FILE, "caption": caption,
            "html": interactive.fragment(figure(acc), "fig-fp8-accuracy")}
