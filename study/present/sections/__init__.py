"""The sections of a GPU's report page, one module each, in the order the page shows them.

A section module gives ID and NAV (its anchor and its link in the page's navigation), TEMPLATE (its part of the
page, in templates/sections/) and `build(ctx)`: the data its template reads as `section.data`, or None when it has
nothing to show.  A stage's own sections live with the stage (present/pages.py) and come after these; a new stage
or backend adds rows, not report code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass
class Context:
    report_dir: Path
    df: pd.DataFrame                      # every row of results.csv (the last of duplicates)
    fresh: pd.DataFrame                   # the rows that are not stale: what findings may say
    env: dict | None
    ceilings: dict | None
    stale: set = field(default_factory=set)   # row keys (impl, dtype, M, N, K) measured on code changed since
    ptx: dict = field(default_factory=dict)
    stage_nav: list = field(default_factory=list)


# The page's order.  Imported last: the section modules read Context's fields, never this module.
from study.present.sections import environment, figures, findings, profile, results, stages  # noqa: E402

SECTIONS = (findings, figures, stages, profile, environment, results)
