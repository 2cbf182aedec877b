"""What the study found on this GPU: generated sentences, each with the chart of its family (findings first)."""
from __future__ import annotations

from markupsafe import escape

from study.present import interactive, ladder
from study.present.findings import findings

ID, NAV, TEMPLATE = "findings", "Findings", "sections/findings.html.j2"
OTHER_CHARTS = ("int8",)       # families outside the two ladders (study/present/ladder.py), as bars


def build(ctx) -> dict | None:
    found = findings(ctx.fresh, ctx.report_dir, ctx.ptx)
    if not found:
        return None
    charts = [f"<p><strong>{escape(t['headline'])}</strong></p>{t['chart']}" if t["chart"] else None
              for t in ladder.table(ctx.fresh, ctx.max_clock)]
    charts += [interactive.ladder(ctx.fresh, key, max_clock=ctx.max_clock) for key in OTHER_CHARTS]
    return {"findings": found, "charts": [c for c in charts if c], "stale": len(ctx.stale)}
