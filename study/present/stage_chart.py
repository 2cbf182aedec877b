"""A stage against the one before it, for its page (study/present/stage_pages.py): one small plotly figure per
dtype, its rows at the headline shape (4096^3) as horizontal bars, panel by panel: TFLOP/s with its p20-p80
spread (study/present/spread.py), then the ncu counters that explain the step (profile.csv, a call's kernels
summed by hierarchy.per_call): tensor-pipe %, DRAM and L2 bytes, shared-memory bank conflicts and, where the
profile has them, the top stall reasons.

"The stage before" is, per dtype, the nearest earlier stage whose main form computes in the same precision family
(interactive.family_of): fp32-accurate tensor-core splits are set against the last SIMT fp32 stage, and an fp16
stage that follows an fp32 one against the fp16 stage before that.  Each bar group is a backend's form in that
stage, its variants, and the baseline the rows are a percentage of (cuBLAS); a stage with no such earlier stage
shows its own bars and the baseline.  Profiled calls
that study.measure.audit finds implausible are left out of the counters and named.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from markupsafe import Markup
from plotly.subplots import make_subplots

from study.core.stages import STAGES, Stage
from study.measure import audit
from study.measure.frame import call_key, dtype_order, prepare
from study.present import hierarchy, interactive
from study.present.formatting import fmt_num
from study.present.spread import compare_word, fmt_measure, throughput_range

HEADLINE = 4096                  # the shape the step is shown at: HEADLINE^3
BACKENDS = ("cuda", "triton", "gluon")
ROLES = {"previous": ("#a5b8cc", "stage {prev}"), "this": ("#0a58ca", "stage {this}"),
         "baseline": ("#59636e", "baseline")}
STALL_COLOURS = ("#d1495b", "#edae49", "#66a182")
TOP_STALLS = 3
# (column of the counter frame, panel title, scale, floor): what each counter panel shows; a panel is drawn where
# some bar's value (scaled) is above its floor (an fp32 SIMT stage's tensor pipe is idle: no panel).
COUNTERS = (("tensor_pct", "tensor pipe %", 1.0, 1.0), ("dram_bytes", "DRAM MB", 1e-6, 0.0),
            ("l2_bytes", "L2 MB", 1e-6, 0.0), ("conflicts", "bank conflicts (millions)", 1e-6, 0.0))
ORDER = {s.number: i for i, s in enumerate(STAGES)}


def _main(impl: str, s: Stage) -> bool:
    return impl.split(":", 1)[-1] == s.key


def _headline(df: pd.DataFrame) -> pd.DataFrame:
    d = prepare(df)
    d = d[(d["M"] == HEADLINE) & (d["N"] == HEADLINE) & (d["K"] == HEADLINE) & d["passed"]]
    return d.assign(family=interactive.family_of(d)).drop_duplicates(["impl", "dtype"], keep="last")


def previous(rows: pd.DataFrame, s: Stage, dtype: str) -> Stage | None:
    """The nearest earlier stage whose main form computes `dtype` in the family of stage s's main form."""
    mine = rows[(rows["stage"] == s.number) & (rows["dtype"] == dtype)]
    main = mine[[_main(i, s) for i in mine["impl"]]]
    families = set((main if len(main) else mine)["family"])
    for p in reversed(STAGES[:ORDER[s.number]]):
        theirs = rows[(rows["stage"] == p.number) & (rows["dtype"] == dtype) & rows["family"].isin(families)]
        if any(_main(i, p) for i in theirs["impl"]):
            return p
    return None


def _rank(impl: str, s: Stage) -> tuple:
    backend = impl.split(":", 1)[0]
    return BACKENDS.index(backend) if backend in BACKENDS else len(BACKENDS), not _main(impl, s), impl


def bars(rows: pd.DataFrame, s: Stage, dtype: str) -> tuple[Stage | None, list[dict]]:
    """(the stage before, [{impl, role, row}]): per backend its previous main form then this stage's forms, then
    the baselines this stage's rows are measured against; top to bottom."""
    prev = previous(rows, s, dtype)
    d = rows[rows["dtype"] == dtype]
    mine = sorted(d[d["stage"] == s.number].to_dict("records"), key=lambda r: _rank(r["impl"], s))
    before = {r["impl"].split(":")[0]: r for r in d[d["stage"] == (prev.number if prev else None)].to_dict("records")
              if _main(r["impl"], prev)}
    out = []
    for backend in BACKENDS:
        if backend in before:
            out.append({"impl": before[backend]["impl"], "role": "previous", "row": before[backend]})
        out += [{"impl": r["impl"], "role": "this", "row": r} for r in mine if r["impl"].startswith(f"{backend}:")]
    out += [{"impl": r["impl"], "role": "this", "row": r} for r in mine if r["backend"] not in BACKENDS]
    base = list(dict.fromkeys(b for b in (r["baseline_impl"] for r in mine) if isinstance(b, str) and b))
    out += [{"impl": r["impl"], "role": "baseline", "row": r}
            for b in base for r in d[d["impl"] == b].to_dict("records")]
    return prev, out


def counters(report_dir: Path) -> tuple[pd.DataFrame | None, dict]:
    """The profiled calls, kernels summed (hierarchy.per_call: tensor_pct, issue_pct, the stall_* columns and
    every other percentage averaged over the call's kernels by their time); and {call_key: why} of the calls left
    out."""
    prof = hierarchy.load(Path(report_dir) / "profile.csv")
    if prof is None:
        return None, {}
    left_out = audit.implausible_calls(report_dir)
    keep = [call_key(r) not in left_out for r in prof.to_dict("records")]
    prof = prof[keep]
    if prof.empty:
        return None, left_out
    agg = hierarchy.per_call(prof)
    agg["dram_bytes"] = agg["dram_read_bytes"] + agg["dram_write_bytes"]
    agg["conflicts"] = agg["smem_ld_conflicts"] + agg["smem_st_conflicts"]
    return agg, left_out


def _unit(r) -> str:
    return "TOP/s" if str(r["dtype"]).startswith(("int", "uint")) else "TFLOP/s"


def _hover(b: dict, bars_: list[dict], max_clock) -> str:
    r = b["row"]
    lines = [f"<b>{r['impl']}</b> {r['dtype']} ({r['precision']}) {HEADLINE}³", fmt_measure(r, max_clock, _unit(r))]
    base = next((x["row"] for x in bars_ if x["impl"] == r.get("baseline_impl")), None)
    if base is not None and base is not r:
        lines.append(f"{fmt_num(r['pct_cublas'])}% of {base['impl']} ({compare_word(r, base)} it)")
    prev = next((x["row"] for x in bars_ if x["role"] == "previous" and x["impl"].split(":")[0] == r["backend"]), None)
    if prev is not None and b["role"] == "this":
        lines.append(f"{compare_word(r, prev)} {prev['impl']}")
    return "<br>".join(lines)


def figure(s: Stage, prev: Stage | None, bars_: list[dict], prof: pd.DataFrame | None, max_clock) -> go.Figure:
    """The step's figure: the TFLOP/s panel and one panel per counter that any of the bars' calls has."""
    labels = [b["impl"] for b in bars_]
    calls = {}
    if prof is not None:
        calls = {call_key(r): r for r in prof.to_dict("records")}
    got = [calls.get(call_key(b["row"])) for b in bars_]
    panels = [(c, title, k) for c, title, k, floor in COUNTERS
              if any(g is not None and pd.notna(g.get(c)) and g[c] * k > floor for g in got)]
    stalls = [c for c in (prof.columns if prof is not None else []) if c.startswith("stall_")]
    totals = {c: sum(g[c] for g in got if g is not None and pd.notna(g.get(c))) for c in stalls}
    top = [c for c in sorted(totals, key=totals.get, reverse=True) if totals[c] > 0][:TOP_STALLS]
    titles = [f"{_unit(bars_[0]['row'])} (p20–p80)", *(t for _, t, _ in panels)]
    titles += ["top stalls (warps per issue)"] if top else []
    widths = [2.2] + [1.0] * (len(titles) - 1)
    fig = make_subplots(rows=1, cols=len(titles), shared_yaxes=True, horizontal_spacing=0.015,
                        column_widths=widths, subplot_titles=titles)
    names = {"previous": f"stage {prev.number}" if prev else "", "this": f"stage {s.number}", "baseline": "baseline"}
    for role, (colour, _) in ROLES.items():
        idx = [i for i, b in enumerate(bars_) if b["role"] == role]
        if not idx:
            continue
        rows = [bars_[i]["row"] for i in idx]
        lo_hi = [throughput_range(r) or (r["tflops"], r["tflops"]) for r in rows]
        fig.add_trace(go.Bar(
            y=[labels[i] for i in idx], x=[r["tflops"] for r in rows], orientation="h", name=names[role],
            marker_color=colour, legendgroup=role, text=[fmt_num(r["tflops"], 3) for r in rows],
            textposition="auto", hovertext=[_hover(bars_[i], bars_, max_clock) for i in idx],
            hoverinfo="text", error_x=dict(type="data", symmetric=False, color="#222", thickness=1,
                                           array=[hi - r["tflops"] for r, (_, hi) in zip(rows, lo_hi)],
                                           arrayminus=[r["tflops"] - lo for r, (lo, _) in zip(rows, lo_hi)])),
            row=1, col=1)
        for col, (c, title, k) in enumerate(panels, start=2):
            vals = [got[i][c] * k if got[i] is not None and pd.notna(got[i].get(c)) else None for i in idx]
            fig.add_trace(go.Bar(
                y=[labels[i] for i in idx], x=vals, orientation="h", marker_color=colour, legendgroup=role,
                showlegend=False, hovertext=[f"{labels[i]}: {title} {fmt_num(v, 3)}" if v is not None
                                             else f"{labels[i]}: not profiled" for i, v in zip(idx, vals)],
                hoverinfo="text"), row=1, col=col)
    for colour, c in zip(STALL_COLOURS, top):
        vals = [g[c] if g is not None and pd.notna(g.get(c)) else None for g in got]
        name = c.removeprefix("stall_").replace("_", " ")
        fig.add_trace(go.Bar(y=labels, x=vals, orientation="h", name=name, marker_color=colour,
                             hovertext=[f"{lab}: {name} {fmt_num(v, 3)}" for lab, v in zip(labels, vals)],
                             hoverinfo="text"), row=1, col=len(titles))
    values = [b["row"]["tflops"] for b in bars_]
    if max(values) > 20 * min(values):
        fig.update_xaxes(type="log", row=1, col=1)
    fig.update_yaxes(categoryorder="array", categoryarray=labels[::-1], tickfont=dict(family="monospace", size=11))
    height, top_margin, bottom = 150 + 24 * len(labels), 55, 75        # the legend goes below the x ticks
    fig.update_layout(barmode="stack", height=height, margin=dict(l=10, r=10, t=top_margin, b=bottom),
                      legend=dict(orientation="h", y=-40 / (height - top_margin - bottom), yanchor="top", x=0),
                      plot_bgcolor="white", font=dict(size=11), bargap=0.25)
    fig.update_xaxes(gridcolor="#e5e9ee", zeroline=False)
    fig.update_annotations(font_size=11)
    return fig


def step(report_dir: Path, df: pd.DataFrame, s: Stage, max_clock=None) -> dict:
    """The stage's comparison, for its page: {"tabs": [{dtype, previous, html}], "left_out": [(call, why)],
    "profiled": whether profile.csv is there}."""
    rows = _headline(df) if len(df) else pd.DataFrame(columns=["stage", "dtype"])
    prof, left_out = counters(report_dir)
    tabs = []
    mine = rows.loc[rows["stage"] == s.number, "dtype"]
    for dtype in sorted(dtype_order(mine), key=lambda d: -(mine == d).sum()):     # the most forms first
        prev, bars_ = bars(rows, s, dtype)
        fig = figure(s, prev, bars_, prof, max_clock)
        tabs.append({"dtype": dtype, "previous": prev, "impls": [b["impl"] for b in bars_],
                     "html": Markup(interactive.fragment(fig, interactive.div_id("step", f"{s.number}-{dtype}")))})
    shown = {(b, t["dtype"]) for t in tabs for b in t["impls"]}
    named = [(f"{k[0]} {k[1]} {k[2]}x{k[3]}x{k[4]}", why) for k, why in left_out.items() if (k[0], k[1]) in shown
             and k[2:] == (HEADLINE,) * 3]
    return {"tabs": tabs, "left_out": named, "profiled": prof is not None or bool(left_out)}
