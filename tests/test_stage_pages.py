"""The stage pages (study/present/stage_pages.py): one per stage, its CUDA, Triton and Gluon forms side by side,
rendered from the fixture and from the committed H100 sweep, offline, with every link resolving."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from study.core.stages import STAGES
from study.measure.frame import load_results
from study.present.stage_pages import form_path, render_stage_pages
from tests.test_report import FIXTURE, REPO, chrome_driver, is_external, parse

SOURCES = {"fixture": FIXTURE, "h100": REPO / "reports" / "h100"}
SECTION = re.compile(r'<section class="form" data-backend="(\w+)">(.*?)</section>', re.S)


@pytest.fixture(scope="module", params=sorted(SOURCES))
def rendered(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    shutil.copytree(SOURCES[request.param], out, dirs_exist_ok=True)
    (out / "index.html").write_text("<!DOCTYPE html><title>index</title>")   # the report's, linked back to
    df, _ = load_results(out / "results.csv")
    return out, df, render_stage_pages(out, df)


def test_one_page_per_stage(rendered):
    out, _, nav = rendered
    assert [p["href"] for p in nav] == [f"stage-{s.number}.html" for s in STAGES]
    assert [(p["number"], p["title"]) for p in nav] == [(s.number, s.title) for s in STAGES]
    for s, p in zip(STAGES, nav):
        assert parse(out / p["href"]).title.strip() == f"Stage {s.number}: {s.title}"


def test_three_forms_side_by_side_and_highlighted(rendered):
    out, _, nav = rendered
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        forms = html.split('<div class="forms">', 1)[1]
        sections = SECTION.findall(forms)
        assert [b for b, _ in sections] == ["cuda", "triton", "gluon"], s.key
        for backend, body in sections:
            name = form_path(s, backend).relative_to(REPO).as_posix()
            assert f"<code>{name}</code>" in body
            if form_path(s, backend).exists():
                assert '<div class="hl"><pre>' in body and re.search(r'<span class="(k|kn|kd|kt)">', body), name
            else:
                assert "does not exist" in body and "<pre>" not in body, name


def test_rows_name_every_implementation_of_the_stage(rendered):
    out, df, nav = rendered
    seen = set()
    for s, p in zip(STAGES, nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        impls = set(df.loc[df["stage"] == s.number, "impl"])
        if impls:
            seen.add(s.number)
            rows = html.split('id="rows"', 1)[1].split('id="counters"', 1)[0]
            assert all(f"<code>{i}</code>" in rows for i in impls), s.key
            assert "% of cublas" in rows
        else:
            assert "No rows for this stage" in html
    assert seen, "the results should hold rows of some stage"


def test_links_resolve_and_nothing_is_external(rendered):
    out, _, nav = rendered
    for p in nav:
        refs = parse(out / p["href"])
        html = (out / p["href"]).read_text(encoding="utf-8")
        assert not [r for r in refs.resources if is_external(r)], p["href"]
        assert "@import" not in html and "url(" not in html
        assert "index.html" in refs.hrefs
        for href in refs.hrefs:
            assert not is_external(href), href
            path, _, fragment = href.partition("#")
            assert (out / unquote(path)).is_file(), href
            assert not fragment or fragment in refs.ids, href


def test_each_page_links_to_its_neighbours(rendered):
    out, _, nav = rendered
    for i, p in enumerate(nav):
        html = (out / p["href"]).read_text(encoding="utf-8")
        for rel, j in (("prev", i - 1), ("next", i + 1)):
            link = f'rel="{rel}"'
            if 0 <= j < len(nav):
                assert f'<a href="{nav[j]["href"]}" {link}>' in html, (p["href"], rel)
            else:
                assert link not in html, (p["href"], rel)


def test_renders_without_torch_or_triton(tmp_path):
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    probe = ("import sys; from pathlib import Path; from study.measure.frame import load_results; "
             "from study.present.stage_pages import render_stage_pages; d = Path(sys.argv[1]); "
             "render_stage_pages(d, load_results(d / 'results.csv')[0]); "
             "heavy = [m for m in ('torch', 'triton') if m in sys.modules]; "
             "sys.exit(f'imported {heavy}' if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert len(list(tmp_path.glob("stage-*.html"))) == len(STAGES)


@pytest.mark.browser
def test_forms_stand_side_by_side_in_chromium(tmp_path):
    shutil.copytree(REPO / "reports" / "h100", tmp_path / "h100")
    df, _ = load_results(tmp_path / "h100" / "results.csv")
    full = next(s for s in STAGES if all(form_path(s, b).exists() for b in ("cuda", "triton", "gluon")))
    page = next(p for p in render_stage_pages(tmp_path / "h100", df) if p["number"] == full.number)
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.get((tmp_path / "h100" / page["href"]).as_uri())
        boxes = driver.execute_script(
            "return Array.from(document.querySelectorAll('div.forms > section.form')).map(e => {"
            "const r = e.getBoundingClientRect(); return [e.dataset.backend, r.left, r.top, r.right]; })")
        width = driver.execute_script("return document.documentElement.clientWidth")
        assert [b[0] for b in boxes] == ["cuda", "triton", "gluon"]
        assert len({round(b[2]) for b in boxes}) == 1, f"not side by side: {boxes}"
        assert len({round(b[1]) for b in boxes}) == 3 and all(0 <= b[1] < b[3] <= width for b in boxes), boxes
        driver.save_screenshot(str(tmp_path / f"stage-{full.number}.png"))
    finally:
        driver.quit()
