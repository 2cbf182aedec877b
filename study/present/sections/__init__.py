"""The pages of a GPU's report, and the sections each page shows, one module per section.

A section module gives ID and NAV (its anchor and its name in a page's table of contents), TEMPLATE (its part of
the page, in templates/sections/) and `build(ctx)`: the data its template reads as `section.data`, or None when
it has nothing to show.  PAGES lists the report's pages (index.html first: the overview) and the sections each
holds, in order; a stage with a section of its own (present/pages.py) gets a page of its own after these.  Every
page is kept under twelve screens of 1400 x 900 px (tests/test_page_size.py), so a section that grows is moved
to a page of its own or collapsed, never appended.  A new stage or backend adds rows, not report code.
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
    implausible: dict = field(default_factory=dict)   # call key -> why its profile is kept out of every figure

    @property
    def max_clock(self) -> float | None:
        """The GPU's highest SM clock (environment.json): a row measured well below it ran power-limited."""
        return (self.env or {}).get("sm_clock_max_mhz")


@dataclass(frozen=True)
class Page:
    file: str            # its file name in the report folder
    nav: str             # its name in every page's navigation
    title: str           # its heading
    sections: tuple      # its section modules, in order


# The pages' order.  Imported last: the section modules read Context's fields, never this module.
from study.present.sections import (environment, findings, profile, results, rooflines, sizes,  # noqa: E402
                                    stages)

PAGES = (
    Page("index.html", "Overview", "Ladders and stages", (findings, stages)),
    Page("rooflines.html", "Rooflines", "Rooflines", (rooflines,)),
    Page("sizes.html", "Sizes", "TFLOP/s against size", (sizes,)),
    Page("profile.html", "Profile (ncu)", "What Nsight Compute counted", (profile,)),
    Page("results.html", "All results", "Every measurement", (results,)),
    Page("environment.html", "Environment", "Machine and ceilings", (environment,)),
)
SECTIONS = tuple(m for p in PAGES for m in p.sections)
