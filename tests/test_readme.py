"""The README and the landing page tell the study first: the README opens with the ladder figure and the generated
headline tables, short and free of the study's building history; the landing page's first screen at 1400 px shows
each ladder's headline and table; every finding is at most 50 words; and rendering is the same whatever the flags."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytest.importorskip("plotly", reason="the report's figures need plotly (the GPU image lacks it)")

from study.core.shapes import QUICK_SQUARE
from study.measure.frame import load_results
from study.present import report
from study.present.findings import findings, ptx_facts
from tests.test_report import chrome_driver

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8").splitlines()


def test_readme_is_short_and_opens_with_the_figure_and_the_headline_table():
    assert len(README) <= 200, f"README.md has {len(README)} lines"
    figure = next(i for i, line in enumerate(README, 1) if f"](reports/{report.LADDER_PNG})" in line)
    table = next(i for i, line in enumerate(README, 1) if line.startswith("| stage | what it adds |"))
    assert figure < 60 and table < 60
    start = next(i for i, line in enumerate(README) if line.startswith("<!-- results:"))
    end = README.index(report.END)
    rows = [line for line in README[start:end] if line.startswith("| ") and not line.startswith("| stage")]
    assert 0 < len(rows) <= 20


def test_readme_has_no_building_history_or_contradictions():
    text = "\n".join(README)
    for pattern in (r"\bissue \d", r"\bsession\b", r"stale `?\.git", r"hand-over", r"written by hand twice",
                    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\b [a-z ]*session"):
        assert not re.search(pattern, text, re.I), pattern
    assert "three" in text.split("## Setup")[0]


def test_readme_quick_sweep_says_what_the_preset_holds():
    line = next(x for x in README if "study.sweep --quick" in x)
    assert all(str(n) in line for n in QUICK_SQUARE), line
    assert "128" not in line and "llama" not in line.lower().split("#")[1].replace("only", "")


@pytest.mark.parametrize("gpu", ["h100", "h200"])
def test_every_finding_is_at_most_50_words(gpu):
    d = REPO / "reports" / gpu
    df, _ = load_results(d / "results.csv")
    found = findings(df, d, ptx_facts(d))
    assert found
    for f in found:
        words = len(f"{f.topic}. {f.text}".split())
        assert words <= 50, f"{words} words: {f.topic}. {f.text}"


@pytest.fixture(scope="module")
def reports_copy(tmp_path_factory) -> Path:
    """The committed GPU data in a temporary reports/ folder, its landing page rendered."""
    root = tmp_path_factory.mktemp("reports")
    for name in ("h100", "h200"):
        shutil.copytree(REPO / "reports" / name, root / name)
    shutil.copy(REPO / "reports" / "ptx.json", root / "ptx.json")
    report.render_landing(root)
    return root


def test_landing_renders_the_same_twice_and_whatever_the_flags(reports_copy, monkeypatch):
    """Rendering twice gives the same bytes, and --stale (rows marked on the GPU pages) leaves the landing page and
    the README's figure as they were."""
    first = {n: (reports_copy / n).read_bytes() for n in ("index.html", report.LADDER_PNG)}
    report.render_landing(reports_copy)
    assert {n: (reports_copy / n).read_bytes() for n in first} == first
    monkeypatch.setattr(report, "stale_keys", lambda d: {("cuda:01_naive", "fp32", 4096, 4096, 4096)})
    monkeypatch.setattr(report, "render", lambda d, stale=None: d / "index.html")
    assert report.main(["--dir", str(reports_copy), "--stale"]) == 0
    assert {n: (reports_copy / n).read_bytes() for n in first} == first


@pytest.mark.browser
def test_landing_first_screen_shows_each_ladder_headline_and_table(reports_copy, tmp_path):
    df, _ = load_results(reports_copy / "h100" / "results.csv")
    env = report.load_json(reports_copy / "h100" / "environment.json")
    ladders = report.ladder.table(df, env["sm_clock_max_mhz"], charts=False)
    assert [x["key"] for x in ladders] == ["fp32", "tensor", "fp8"]
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.set_window_size(1400, 900)
        driver.get((reports_copy / "index.html").as_uri())
        height = driver.execute_script("return window.innerHeight")
        for lad in ladders:
            box = driver.execute_script(
                "const d = document.getElementById(arguments[0]); const r = d.getBoundingClientRect();"
                "return [d.querySelector('p.headline').textContent, r.bottom,"
                " d.querySelectorAll('table.ladder-table tr').length, d.querySelectorAll('.js-plotly-plot').length]",
                f"ladder-{lad['key']}")
            assert box[0] == lad["headline"]
            if lad["key"] != "fp8":     # the two stage ladders; stage 16's fp8 forms follow below them
                assert box[1] <= height, f"the {lad['key']} ladder ends at {box[1]} px, below the first screen"
            assert box[2] == len(lad["rows"]) + 1 and box[3] == 1
        driver.save_screenshot(str(tmp_path / "landing.png"))
    finally:
        driver.quit()
