"""TFLOP/s against size, one facet per family: the best form of each backend and cuBLAS drawn, the rest behind
the figure's "every form" button."""
from __future__ import annotations

from study.present import interactive

ID, NAV, TEMPLATE = "sizes", "Sizes", "sections/sizes.html.j2"


def build(ctx) -> dict | None:
    if ctx.df.empty:
        return None
    sets = [s for s in dict.fromkeys(ctx.df["shape_set"]) if s]
    sizes = [f for s in sets if (f := interactive.size_sweep(ctx.df, s, max_clock=ctx.max_clock))]
    return {"sizes": sizes} if sizes else None
