"""The stages with a section of their own in the report, one module each.

A stage page module gives `section(df, ceilings, report_dir)`: its data for the page, or None when it has nothing
to show; the TEMPLATE (in templates/) that renders it, with the data as `section.data`; its page (ID.html) and NAV;
the data FILES it links to; and `findings(df, report_dir, n)`: its findings for the front page, as (topic,
text, chart family) at n^3.  The report iterates STAGE_PAGES, so it never names a stage itself.

A stage whose own page (stage-NN.html, study/present/stage_pages.py) carries a part of its own is in STAGE_EXTRAS:
its module gives NUMBER (the stage's), FILES (the data files it reads, linked from the report),
`extra(report_dir)`: {"id", "title", "html", "caption", "file"}, the part's figure (html, None while its file is
not there) and the words under it, and `findings(df, report_dir, n)` as a stage page module does.
"""
from study.present import decode, fp8, tcec

STAGE_PAGES = (tcec,)
STAGE_EXTRAS = (fp8, decode)
