"""Every page of the report (the landing page, each GPU's pages and its stage pages), rendered from the committed
H100 and H200 data, stays under twelve screens of 1400 x 900 px in Chromium; the tree holds one plotly.min.js, which every page loads by a relative path; every
link of every page resolves."""
from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

pytest.importorskip("plotly", reason="the report's figures need plotly")

from study.present.report import render
from study.present.sections import PAGES
from tests.rendered_reports import rendered_reports
from tests.test_report import chrome_driver, is_external, parse

REPO = Path(__file__).resolve().parents[1]
GPUS = ("h100", "h200")
MAX_HEIGHT = 12 * 900             # twelve screens of a 1400 x 900 window


@pytest.fixture(scope="module")
def reports() -> Path:
    """reports/ rendered afresh from both GPUs' data, with a stale plotly.min.js left in each GPU folder first
    (tests/rendered_reports.py)."""
    return rendered_reports()


def report_pages(d: Path) -> list[Path]:
    """The GPU report's own pages (PAGES, and a stage's section page such as tcec.html); stage-NN.html aside."""
    own = [d / p.file for p in PAGES if (d / p.file).exists()]
    return own + sorted(p for p in d.glob("*.html") if p not in own and not p.name.startswith("stage-"))


def test_every_part_has_its_page(reports):
    for gpu in GPUS:
        names = {p.name for p in report_pages(reports / gpu)}
        assert {"index.html", "rooflines.html", "sizes.html", "profile.html", "results.html", "environment.html",
                "tcec.html"} <= names, (gpu, names)


def test_one_plotly_js_in_the_tree(reports):
    copies = sorted(p.relative_to(reports).as_posix() for p in reports.rglob("plotly.min.js"))
    assert copies == ["plotly.min.js"], copies
    for gpu in GPUS:
        for page in report_pages(reports / gpu):
            scripts = [r for r in parse(page).resources if r.endswith("plotly.min.js")]
            assert scripts == ["../plotly.min.js"], (page.name, scripts)


def test_every_page_links_every_other_and_its_links_resolve(reports):
    for gpu in GPUS:
        pages = report_pages(reports / gpu)
        for page in pages:
            refs = parse(page)
            assert {p.name for p in pages} - {page.name} <= set(refs.hrefs), page.name
            assert "../index.html" in refs.hrefs and "stage-01.html" in refs.hrefs, page.name
            for href in refs.hrefs:
                if is_external(href):
                    continue
                path, _, fragment = href.partition("#")
                target = (page.parent / unquote(path)) if path else page
                assert target.is_file(), (page.name, href)
                if fragment:
                    assert fragment in parse(target).ids, (page.name, href)


def test_single_gpu_folder_renders_with_its_plotly_beside_it(tmp_path):
    """A GPU folder rendered alone (outside reports/) writes the one copy into its parent folder."""
    d = tmp_path / "gpu"
    shutil.copytree(REPO / "tests" / "fixtures" / "reports", d)
    render(d)
    assert (tmp_path / "plotly.min.js").is_file() and not (d / "plotly.min.js").exists()
    assert '<script src="../plotly.min.js"></script>' in (d / "rooflines.html").read_text(encoding="utf-8")


@pytest.mark.browser
def test_every_page_is_at_most_twelve_screens(reports, tmp_path):
    driver = chrome_driver(tmp_path / "profile")
    heights = {}
    try:
        driver.set_window_size(1400, 900)
        driver.set_page_load_timeout(60)
        every = [reports / "index.html"] + [p for gpu in GPUS for p in sorted((reports / gpu).glob("*.html"))]
        for page in every:
            driver.get(page.as_uri())
            drawn = driver.execute_script(
                "return Array.from(document.querySelectorAll('.plotly-graph-div')).every(e => !!e._fullLayout)")
            name = page.relative_to(reports).as_posix()
            assert drawn, f"{name}: a figure did not draw"
            heights[name] = driver.execute_script("return document.documentElement.scrollHeight")
    finally:
        driver.quit()
    tall = {k: h for k, h in heights.items() if h > MAX_HEIGHT}
    assert not tall, f"pages over {MAX_HEIGHT} px at 1400 x 900: {tall}"
