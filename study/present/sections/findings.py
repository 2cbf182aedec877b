"""What the study found on this GPU: generated sentences, each with the chart of its family (findings first)."""
from __future__ import annotations

from study.present import interactive
from study.present.findings import findings

ID, NAV, TEMPLATE = "findings", "Findings", "sections/findings.html.j2"
CHARTS = ("fp32", "fp16_bf16", "int8")     # one ladder per family, in this order, where measured


def build(ctx) -> dict | None:
    found = findings(ctx.fresh, ctx.report_dir, ctx.ptx)
    if not found:
        return None
    charts = [(key, interactive.ladder(ctx.fresh, key, max_clock=ctx.max_clock)) for key in CHARTS]
    return {"findings": found, "charts": [c for _, c in charts if c], "stale": len(ctx.stale)}
