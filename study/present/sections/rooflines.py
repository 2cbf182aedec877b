"""Rooflines per precision family: each call placed by the DRAM traffic ncu counted for it (profile.csv, its
kernels summed), so implementations of one shape separate; the compulsory-traffic view is the figure's other
option.  Calls whose profile the audit rejects are left out and named under the figures."""
from __future__ import annotations

from study.present import hierarchy, interactive

ID, NAV, TEMPLATE = "rooflines", "Rooflines", "sections/rooflines.html.j2"


def build(ctx) -> dict | None:
    if ctx.df.empty:
        return None
    traffic = hierarchy.achieved_traffic(ctx.report_dir, ctx.implausible)
    roofs = [interactive.roofline(ctx.df, ctx.ceilings, key, traffic=traffic, max_clock=ctx.max_clock)
             for key, _ in interactive.families(ctx.df)]
    return {"rooflines": [f for f in roofs if f], "profiled": traffic is not None and not traffic.empty,
            "excluded": hierarchy.excluded_note(ctx.implausible)}
