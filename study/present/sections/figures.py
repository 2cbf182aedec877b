"""Rooflines (compulsory traffic) per precision family, and TFLOP/s against size, one facet per family."""
from __future__ import annotations

from study.present import interactive

ID, NAV, TEMPLATE = "figures", "Rooflines and sizes", "sections/figures.html.j2"


def build(ctx) -> dict | None:
    if ctx.df.empty:
        return None
    roofs = [(title, interactive.roofline(ctx.df, ctx.ceilings, key)) for key, title in interactive.families(ctx.df)]
    sizes = [(s, interactive.size_sweep(ctx.df, s)) for s in dict.fromkeys(ctx.df["shape_set"]) if s]
    return {"rooflines": [(t, f) for t, f in roofs if f], "sizes": [(s, f) for s, f in sizes if f]}
