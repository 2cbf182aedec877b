"""The decode stage's part of its own page (stage-NN.html): its GEMMs as weight reads, shape by shape.

At 1 to 64 tokens a GEMM's time is reading W (K x N) once, so its rows are read in GB/s of compulsory traffic and in
% of the DRAM copy ceiling (ceilings.json's dram_gbps, a device-to-device copy, bytes read + written), beside each
form's time against cuBLAS.  The table holds the results.csv rows of the decode family (the `decode` preset and the
16-token `llama3` projections, study/core/shapes.py) in their first dtype measured; the lead sentence says what they
show.  Without rows the page says the family is not yet measured here.

The report reaches it through study/present/pages.py (STAGE_EXTRAS): `NUMBER`, `FILES` and `extra(report_dir)`.
"""
from __future__ import annotations

import html
import math
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from study.core import stages
from study.core.shapes import DECODE, LLAMA3
from study.measure.frame import call_key, load_json, load_results
from study.present import interactive, spread
from study.present.figures import BACKEND_NAMES
from study.present.formatting import fmt_num

NUMBER, KEY = stages.stage("split_k").number, stages.stage("split_k").key
ID = "decode-family"
FILES = ()
FAMILY = {(m, n, k) for _, m, n, k in DECODE} | {(m, n, k) for _, m, n, k in LLAMA3 if m == 16}
BIG_W = 100e6          # bytes of W from which the copy's rate is the mark
RATE_TIE = 0.05        # fitted streaming rates this close to cuBLAS's read as level with it
LADDER = ("-tiles", "-splitk", "-streamk", "")   # the CUDA forms, one technique a step; the main form last


def _rows(df: pd.DataFrame, stale: set = frozenset()) -> tuple[pd.DataFrame, str | None]:
    """The passing rows of the family (this stage's and cuBLAS's) in the first dtype that has this stage's rows,
    stale rows (their keys in `stale`: measured on code that has changed since) left out."""
    if df.empty:
        return df, None
    family = pd.Series([(m, n, k) in FAMILY for m, n, k in zip(df["M"], df["N"], df["K"])], index=df.index)
    fresh = pd.Series([call_key(r) not in stale for r in df.to_dict("records")], index=df.index)
    df = df[family & fresh & df["passed"].astype(bool)]
    mine = df[df["stage"].astype(str).str.zfill(2) == NUMBER]
    if mine.empty:
        return mine, None
    dtype = sorted(mine["dtype"].unique(), key=lambda d: d != "bf16")[0]
    return df[(df["dtype"] == dtype) & ((df["stage"].astype(str).str.zfill(2) == NUMBER)
                                        | (df["impl"] == "cublas"))], dtype


def _apart(rows: pd.DataFrame) -> set[tuple[int, int, int]]:
    """The shapes whose cuBLAS row comes from another sweep than the stage's rows there: not timed beside them."""
    mine = rows[rows["impl"] != "cublas"]
    ours = mine.groupby(["M", "N", "K"])["commit"].agg(set)
    return {(m, n, k) for m, n, k, c in zip(*(rows.loc[rows["impl"] == "cublas", x] for x in ("M", "N", "K", "commit")))
            if c not in ours.get((m, n, k), set())}


def _forms(rows: pd.DataFrame) -> list[str]:
    """The stage's forms in the table's order: CUDA, Triton, Gluon, each backend's in ladder order (LADDER)."""
    order = {"cuda": 0, "triton": 1, "gluon": 2}
    names = rows.loc[rows["impl"] != "cublas", ["impl", "backend"]].drop_duplicates()

    def rung(name: str) -> int:
        suffix = name.split(":", 1)[1][len(KEY):]
        return LADDER.index(suffix) if suffix in LADDER else len(LADDER)
    return [n for n, _ in sorted(zip(names["impl"], names["backend"]), key=lambda p: (order.get(p[1], 3), rung(p[0])))]


def _geomean(xs) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def _copy(report_dir: Path) -> float | None:
    """The DRAM copy ceiling of ceilings.json (GB/s, bytes read + written), if measured."""
    return ((load_json(Path(report_dir) / "ceilings.json") or {}).get("measured") or {}).get("dram_gbps")


def _summary(rows: pd.DataFrame, copy: float | None) -> tuple[str, list[tuple[str, pd.Series]], int] | None:
    """(cuBLAS's read rate as "a-b% of the copy's rate" and where it is least, or "" without a copy ceiling; each
    main form's times against cuBLAS; the number of shapes), or None without cuBLAS rows or main forms."""
    base = rows[rows["impl"] == "cublas"]
    apart = _apart(rows)
    beside = base[[(m, n, k) not in apart for m, n, k in zip(base["M"], base["N"], base["K"])]]
    base = beside if len(beside) else base
    mains = [(f, rows[rows["impl"] == f]["pct_cublas"].dropna() / 100) for f in _forms(rows)
             if "-" not in f.split(":", 1)[1]]
    mains = [(f, r) for f, r in mains if len(r)]
    if base.empty or not mains:
        return None
    slowest = base.loc[base["gbps"].idxmin()]
    rate = (f"{100 * base['gbps'].min() / copy:.0f}-{100 * base['gbps'].max() / copy:.0f}% of the copy's rate (the "
            f"least at {slowest['N'] * slowest['K'] * 2 / 1e6:.0f} MB of W)" if copy else "")
    return rate, mains, rows[["M", "N", "K"]].drop_duplicates().shape[0]


def findings(df: pd.DataFrame, report_dir: Path, n: int) -> list[tuple[str, str, str]]:
    """The stage's finding for the front page, as (topic, text, chart family), from the results given (stale rows
    left out by the caller): cuBLAS's read rate, each main form's geometric mean against it."""
    rows, dtype = _rows(df)
    summary = _summary(rows, _copy(report_dir))
    if summary is None:
        return []
    rate, mains, shapes = summary
    means = ", ".join(f"{_geomean(r):.2f}x ({BACKEND_NAMES.get(f.split(':')[0], f)})" for f, r in mains)
    text = ((f"At 1 to 64 tokens ({dtype}) cuBLAS reads the weights at {rate}; " if rate
             else f"At 1 to 64 tokens ({dtype}), ")
            + f"stage {NUMBER}'s forms run at {means} of its speed, geometric means over {shapes} shapes.")
    return [("Decode GEMMs: a read of the weights", text, "")]


def fit(rows: pd.DataFrame, impl: str) -> tuple[float, float] | None:
    """A line through an implementation's times against its compulsory bytes (least squares over the family's
    shapes): (the fixed cost of a call in us, the rate in GB/s at which each further byte moves), or None with
    fewer than three shapes."""
    mine = rows[rows["impl"] == impl]
    if len(mine) < 3:
        return None
    slope, fixed = np.polyfit(mine["gbps"] * mine["ms"] * 1e-3, mine["ms"] * 1e3, 1)   # GB against us
    return (float(fixed), 1e6 / float(slope)) if slope > 0 else None


def lesson(rows: pd.DataFrame, copy: float | None, dtype: str = "") -> str | None:
    """One paragraph from the rows: cuBLAS's read rate against the copy, each main form against cuBLAS, and what
    a line through time against bytes says of each: the fixed cost of a call, and the rate beyond it."""
    summary = _summary(rows, copy)
    if summary is None:
        return None
    rate, mains, shapes = summary
    lines = dict((f, ln) for f in ["cublas"] + [f for f, _ in mains] if (ln := fit(rows, f)))
    text = ((f"At 1 to 64 tokens these GEMMs read the weights once: cuBLAS moves its bytes at {rate}.  "
             if rate else "")
            + f"Against cuBLAS ({dtype}, W row-major; its time over the form's), over the {shapes} shapes: "
            + "; ".join(f"{f} {r.min():.2f}-{r.max():.2f}x (geometric mean {_geomean(r):.2f}x)" for f, r in mains)
            + ".")
    if "cublas" not in lines or len(lines) < 2:
        return text
    text += ("  A line through each one's times against its bytes: " + "; ".join(
        f"{f} {fixed:.1f} us a call, then {gbps:.0f} GB/s" for f, (fixed, gbps) in lines.items()) + ".")
    level = [f for f, (_, gbps) in lines.items() if f != "cublas" and abs(gbps / lines["cublas"][1] - 1) <= RATE_TIE]
    if level:
        many = len(level) > 1
        text += (f"  Past a call's fixed cost {' and '.join(level)} stream{'' if many else 's'} W within "
                 f"{100 * RATE_TIE:.0f}% of cuBLAS's rate: at the small layers it is the fixed cost that separates "
                 f"{'them' if many else 'it'} from cuBLAS.")
    return text


def table(rows: pd.DataFrame, copy: float | None) -> str:
    """An HTML table: a row per shape (tokens, then W's size), cuBLAS's time and read rate, each form's x cuBLAS."""
    forms, elsewhere = _forms(rows), _apart(rows)
    head = ["M x N x K", "W MB", "cuBLAS us", "cuBLAS GB/s" + (" (% copy)" if copy else "")]
    head += [html.escape(f.split(":", 1)[0] + f.split(":", 1)[1][len(KEY):]) for f in forms]
    head.append("best GB/s" + (" (% copy)" if copy else ""))
    out = ['<table class="data"><thead><tr><th colspan="4"></th>'
           f'<th colspan="{len(forms)}">x cuBLAS</th><th></th></tr><tr>'
           + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    shapes = sorted(set(zip(rows["M"], rows["N"], rows["K"])), key=lambda s: (s[0], s[1] * s[2]))
    for m, n, k in shapes:
        at = rows[(rows["M"] == m) & (rows["N"] == n) & (rows["K"] == k)]
        b = at[at["impl"] == "cublas"]

        def rate(gbps):
            return fmt_num(gbps, 4) + (f" ({100 * gbps / copy:.0f}%)" if copy else "")
        apart = (m, n, k) in elsewhere
        cells = [f"{m}x{n}x{k}", f"{n * k * 2 / 1e6:.0f}",
                 fmt_num(float(b["ms"].iloc[0]) * 1e3) + (" †" if apart else "") if len(b) else "",
                 rate(float(b["gbps"].iloc[0])) if len(b) else ""]
        for f in forms:
            r = at[at["impl"] == f]
            if not len(r) or pd.isna(r["pct_cublas"].iloc[0]):
                cells.append("")
                continue
            tied = len(b) and spread.tie(r.iloc[0], b.iloc[0])
            cells.append(f"{float(r['pct_cublas'].iloc[0]) / 100:.2f}" + (" =" if tied else ""))
        mine = at[at["impl"] != "cublas"]
        cells.append(rate(float(mine["gbps"].max())) if len(mine) else "")
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "".join(out) + "</tbody></table>"


SYMBOLS = {1: "circle", 16: "square", 64: "diamond"}     # a marker per token count; others: a cross


def figure(rows: pd.DataFrame, copy: float | None) -> go.Figure:
    """Each main form's and cuBLAS's read rate (GB/s of compulsory traffic) against W's size, a marker per token
    count, under the copy ceiling's line: the roofline's bandwidth side, where these GEMMs live."""
    fig = go.Figure()
    for f in ["cublas"] + [f for f in _forms(rows) if "-" not in f.split(":", 1)[1]]:
        mine = rows[rows["impl"] == f].sort_values(["M", "N", "K"])
        for m, at in mine.groupby("M"):
            at = at.assign(mb=at["N"] * at["K"] * 2 / 1e6).sort_values("mb")
            backend = f.split(":", 1)[0]
            fig.add_trace(go.Scatter(
                x=at["mb"], y=at["gbps"], mode="lines+markers", name=f"{f}, M={m}", legendgroup=f,
                line=dict(color=interactive.backend_colour(backend), width=1, dash="dot" if f == "cublas" else None),
                marker=dict(symbol=SYMBOLS.get(int(m), "x"), size=8, color=interactive.backend_colour(backend)),
                customdata=np.stack([at["M"], at["N"], at["K"], at["ms"] * 1e3], axis=-1),
                hovertemplate="%{customdata[0]}x%{customdata[1]}x%{customdata[2]}: %{y:.0f} GB/s, "
                              "%{customdata[3]:.1f} us<extra>" + html.escape(f) + "</extra>"))
    if copy:
        fig.add_hline(y=copy, line=dict(color="#888", dash="dash", width=1),
                      annotation_text=f"copy ceiling {copy:.0f} GB/s", annotation_position="top left")
    fig.update_layout(template="plotly_white", height=420, margin=dict(l=70, r=10, t=20, b=50), font=dict(size=11),
                      xaxis=dict(type="log", title="W (MB, log scale)"), yaxis=dict(title="GB/s of compulsory traffic",
                                                                                  rangemode="tozero"),
                      legend=dict(font=dict(size=10)))
    return fig


def extra(report_dir: Path, stale: set = frozenset()) -> dict:
    """The page's part: {"id", "title", "html", "caption", "lead", "file"}; html None when not yet measured.
    stale: the keys of rows measured on code that has changed since, left out of the table and the lead."""
    df = load_results(Path(report_dir) / "results.csv")[0]
    rows, dtype = _rows(df, stale)
    left_out = len(_rows(df)[0]) - len(rows) if dtype else 0
    title = "The decode family: weight reads against the copy and cuBLAS"
    if dtype is None:
        return {"id": ID, "title": title, "html": None, "file": "results.csv", "lead": None,
                "caption": "Not yet measured here: no row of this stage at the decode shapes (python -m study.sweep "
                           "--shapes decode, and the 16-token llama3 shapes of the default sweep)."}
    copy = _copy(report_dir)
    mine, base = rows[rows["impl"] != "cublas"], rows[rows["impl"] == "cublas"]
    apart = sorted(f"{m}x{n}x{k}" for m, n, k in _apart(rows))
    big = mine[mine["N"] * mine["K"] * 2 >= BIG_W]
    caption = (f"results.csv, {dtype}, W row-major, the stage's rows of commit {', '.join(sorted(set(mine['commit'])))}"
               f": x cuBLAS is the cuBLAS row's time over the form's at the same shape (from pct_cublas; above 1 the "
               f"form is faster; = marks a tie, the two rows' p20-p80 ranges overlapping).  A column per form, named "
               f"backend and suffix"
               + (f": cuda-tiles is cuda:{KEY}-tiles (one block a tile), -splitk (K split over the SMs a tile), "
                  f"-streamk (every SM the same k-slices), cuda the registered form (the grid a cost model picks "
                  f"among the three), all issuing wgmma fed by TMA" if (mine["backend"] == "cuda").any() else "")
               + "; Triton (tl.dot, a cp.async ring) and Gluon (warpgroup_mma, operands through registers) run the "
               f"stream-K grid.  GB/s of compulsory traffic (A, W and D once)"
               + (f", % of the {fmt_num(copy, 4)} GB/s copy ceiling (ceilings.json: a device-to-device copy, bytes "
                  f"read and written; a read alone may pass it)" if copy else "") + ".")
    if apart:
        caption += (f"  The cuBLAS rows of {', '.join(apart)} (marked †) come from another sweep than the forms' "
                    f"(commit {', '.join(sorted(set(base['commit']) - set(mine['commit'])))}), not timed beside "
                    f"them; the lead's read rate of cuBLAS leaves them out.")
    if left_out:
        caption += (f"  {left_out} row{'s' if left_out != 1 else ''} of this family, measured on code that has "
                    f"changed since (stale), {'are' if left_out != 1 else 'is'} left out until a new sweep.")
    host = rows.dropna(subset=["host_ms"]).groupby("backend")["host_ms"]
    if len(host):
        caption += ("  The host's time to issue one call from an idle GPU (host_ms; the timing's events exclude it): "
                    + ", ".join(f"{b} {1e3 * lo:.0f}-{1e3 * hi:.0f} us" for b, (lo, hi)
                                in host.agg(["min", "max"]).iterrows()) + ".")
    if len(big) and copy:
        best = big.groupby(["M", "N", "K"])["gbps"].max() / copy * 100
        caption += (f"  Where W is 100 MB or more, the best form of each shape reads at {best.min():.0f}-"
                    f"{best.max():.0f}% of the copy.")
    caption = ("The figure: each main form's and cuBLAS's GB/s against W's size, a marker per token count (circle 1, "
               "square 16, diamond 64), the copy ceiling dashed.  " + caption)
    return {"id": ID, "title": title, "file": "results.csv", "caption": caption, "lead": lesson(rows, copy, dtype),
            "html": interactive.fragment(figure(rows, copy), "fig-decode") + table(rows, copy)}
