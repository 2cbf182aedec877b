"""The report renders from a recorded fixture with no GPU, offline, with every image and link resolving."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest

pytest.importorskip("plotly", reason="the report's figures need plotly (the GPU image lacks it; the report renders elsewhere)")

from study.measure.frame import load_results, prepare, series_key, variant_of
from study.present import figures as roofline
from study.present.report import render
from study.present.sections.stages import stage_tables
from study.measure.accuracy import ACCURACY_COLUMNS, FIG8_COLUMNS
from study.core.schema import RESULT_COLUMNS
from study.core.stages import STAGES

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "reports"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


class Refs(HTMLParser):
    """Every resource and link a page refers to, plus its title and element ids."""

    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[dict] = []
        self.hrefs: list[str] = []
        self.resources: list[str] = []
        self.ids: set[str] = set()
        self.title, self._in_title = "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.imgs.append(a)
            self.resources.append(a.get("src") or "")
        elif tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        elif tag in ("link", "script", "iframe", "source") and (a.get("href") or a.get("src")):
            self.resources.append(a.get("href") or a.get("src"))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def parse(index: Path) -> Refs:
    refs = Refs()
    refs.feed(index.read_text(encoding="utf-8"))
    return refs


def is_external(url: str) -> bool:
    return url.startswith("//") or urlparse(url).scheme not in ("", "file")


def pages(d: Path) -> list[Path]:
    """A GPU report's own pages (index.html, rooflines.html, ...; stage-NN.html aside)."""
    return sorted(p for p in d.glob("*.html") if not p.name.startswith("stage-"))


def site(d: Path) -> str:
    """The text of every page of a GPU report, as one string."""
    return "".join(p.read_text(encoding="utf-8") for p in pages(d))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    shutil.copytree(FIXTURE, out, dirs_exist_ok=True)
    render(out)
    return out


def write_results(directory: Path, rows: list[dict]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).to_csv(directory / "results.csv", index=False)


def fixture_rows() -> pd.DataFrame:
    return pd.read_csv(FIXTURE / "results.csv", dtype=str, keep_default_na=False)


# --- fixture conformance ----------------------------------------------------------------------------

def test_fixture_matches_schema():
    df = fixture_rows()
    assert tuple(df.columns) == RESULT_COLUMNS
    assert json.loads((FIXTURE / "environment.json").read_text())["fixture"] is True
    for name, columns in (("accuracy.csv", ACCURACY_COLUMNS), ("fig8.csv", FIG8_COLUMNS)):
        assert tuple(pd.read_csv(FIXTURE / name, dtype=str).columns) == columns


# --- the page ---------------------------------------------------------------------------------------

def test_page_names_every_stage(rendered):
    html = (rendered / "index.html").read_text(encoding="utf-8")
    df = fixture_rows()
    numbers = set(df["stage"]) - {"baseline"}
    titles = {s.number: s.title for s in STAGES}
    assert numbers, "the fixture should hold ladder stages"
    for num in numbers:
        assert titles[num] in html
    for title in set(df["stage_title"]) - {""}:
        assert title in html
    for impl in set(df.loc[df["stage"] == "baseline", "impl"]):
        assert impl in html


def test_images_and_links_resolve(rendered):
    assert any(parse(page).imgs for page in pages(rendered)), "the pages should show the figures"
    assert "results.csv" in parse(rendered / "index.html").hrefs
    for page in pages(rendered):
        refs = parse(page)
        for img in refs.imgs:
            assert (img.get("alt") or "").strip(), f"<img src={img.get('src')}> has no alt text"
            assert (rendered / img["src"]).is_file(), img["src"]
        for href in [h for h in refs.hrefs if not is_external(h)]:
            path, _, fragment = href.partition("#")
            if path:
                assert (rendered / unquote(path)).is_file(), href
            if fragment:
                assert fragment in parse(rendered / unquote(path) if path else page).ids, f"{href} has no target"


def test_no_external_resources(rendered):
    for page in pages(rendered):
        html = page.read_text(encoding="utf-8")
        assert not [r for r in parse(page).resources if is_external(r)]
        assert "@import" not in html and "url(http" not in html


def test_failures_and_fixture_flag_are_prominent(rendered):
    html = (rendered / "index.html").read_text(encoding="utf-8")
    assert "1 row failed the correctness check" in html
    assert "Fixture data" in html


def test_duplicate_rows_keep_the_last(rendered):
    df, notes = load_results(rendered / "results.csv")
    assert any("superseded" in n for n in notes)
    fp32 = next(t for t in stage_tables(df) if t["dtype"] == "fp32")
    assert fp32["shape"] == "4096x4096x4096"
    smem = next(r for r in fp32["rows"] if r["number"] == "03")
    assert smem["cells"]["cuda"]["tflops"].startswith("9.9 ±")   # the re-run, not the first 9.6, with its spread


def test_stage_variants_get_a_row_each(rendered):
    """Stage 15 registers four variants per backend: the stage table shows each in its own row, named, and
    never one cell holding whichever variant came last."""
    df, _ = load_results(rendered / "results.csv")
    fp32 = next(t for t in stage_tables(df) if t["dtype"] == "fp32")
    rows = [r for r in fp32["rows"] if r["number"] == "15"]
    assert [r["variant"] for r in rows] == ["tcec", "markidis", "nocorr", "tf32"]
    assert [r["cells"]["cuda"]["impl"] for r in rows] == \
        ["cuda:15_tcec", "cuda:15_tcec-markidis", "cuda:15_tcec-nocorr", "cuda:15_tcec-tf32"]
    assert rows[0]["cells"]["triton"]["impl"] == "triton:15_tcec" and rows[1]["cells"]["triton"] is None
    assert "(fp16x3-markidis)" in rows[1]["title"] and rows[0]["bought"] and not rows[1]["bought"]
    assert all(r["variant"] == "" for r in fp32["rows"] if r["number"] not in ("15",))


def test_variants_have_their_own_series():
    assert variant_of("15", "cuda:15_tcec-markidis") == "markidis"
    assert variant_of("15", "gluon:15_tcec") == ""
    assert series_key("15", "triton:15_tcec-tf32") == "15-tf32"
    assert series_key("03", "cuda:03_smem_tiling") == "03"
    assert series_key("baseline", "triton:tuned-tf32x3") == "triton:tuned-tf32x3"
    styles = roofline.series_styles(prepare(fixture_rows()))
    looks = [(styles[k].colour, styles[k].marker) for k in styles]
    assert len(set(looks)) == len(looks), "two series would look the same on a figure"
    assert [k for k in sorted(styles, key=lambda k: styles[k].order) if k.startswith("15")] == \
        ["15", "15-markidis", "15-nocorr", "15-tf32"]


def test_one_interactive_roofline_per_precision_family(rendered):
    """Each family present gets its own roofline, and no PNG roofline of an older renderer lingers."""
    from study.present import interactive
    df, _ = load_results(rendered / "results.csv")
    html = (rendered / "rooflines.html").read_text(encoding="utf-8")
    keys = [k for k, _ in interactive.families(df)]
    assert len(keys) >= 3
    for key in keys:
        assert f'id="{interactive.div_id("roofline", key)}"' in html, key
    assert not list(rendered.glob("roofline_*.png"))
    assert (rendered.parent / "plotly.min.js").is_file() and '<script src="../plotly.min.js"></script>' in html


def test_every_percentage_names_its_baseline(rendered):
    """A stage table's percentage says what it is of, and the baseline's precision where it is another."""
    df, _ = load_results(rendered / "results.csv")
    for t in stage_tables(df):
        for r in t["rows"]:
            for c in r["cells"].values():
                if c and c["pct"]:
                    assert c["baseline"], (t["dtype"], r["title"])
    html = (rendered / "index.html").read_text(encoding="utf-8")
    assert "% <span class=\"of\">of cublas" in html
    assert "another precision" in html          # the fixture's TF32 and fp16-input rows against SGEMM


# --- degenerate inputs -----------------------------------------------------------------------------

def test_empty_directory_renders(tmp_path):
    render(tmp_path)
    assert "No ceilings measured" in site(tmp_path)
    assert not list(tmp_path.glob("*.png"))
    assert not [h for h in parse(tmp_path / "index.html").hrefs if not h.startswith("#") and h not in
                {p.name for p in pages(tmp_path)}]


def test_partial_ceilings_and_nan_rows(tmp_path):
    rows = fixture_rows().to_dict("records")
    rows[0]["tflops"] = "nan"
    write_results(tmp_path, rows)
    (tmp_path / "ceilings.json").write_text(json.dumps(
        {"gpu": "Unknown GPU", "measured": {"dram_gbps": None, "fp32_fma_tflops": 50.0}, "datasheet": {}}))
    render(tmp_path)
    html = site(tmp_path)
    assert "FP32 FMA" in html and "not measured" in html
    assert 'id="fig-roofline-fp32"' in html


# --- command line ----------------------------------------------------------------------------------

def test_cli_renders_without_torch_or_triton(tmp_path):
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    # The report must render on machines with neither GPU stack, so importing it may not pull them in.
    probe = ("import sys; from study.present.report import main; rc = main(['--dir', sys.argv[1]]); "
             "heavy = [m for m in ('torch', 'triton') if m in sys.modules]; "
             "sys.exit(f'imported {heavy}' if heavy else rc)")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (tmp_path / "index.html").unlink()
    done = subprocess.run([sys.executable, "-m", "study.report", "--dir", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "index.html").is_file()


# --- a real browser ---------------------------------------------------------------------------------

def chrome_driver(profile: Path):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("the selenium package")
    if missing:
        reason = f"headless browser check needs {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI is set, so this check may not be skipped")
        pytest.skip(reason)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)


@pytest.mark.browser
def test_page_loads_in_headless_chromium(rendered, tmp_path):
    index = rendered / "index.html"
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.set_page_load_timeout(20)
        driver.get(index.as_uri())
        assert driver.execute_script("return document.readyState") == "complete"
        assert driver.title == parse(index).title.strip()
        assert "GEMM" in driver.title and "H100" in driver.title
        driver.get((rendered / "tcec.html").as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        assert images, "no images on the page"
        driver.get(index.as_uri())
        broken = [src for src, complete, width in images if not (complete and width > 0)]
        assert not broken, f"images that did not load: {broken}"
        hrefs = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
        for href in hrefs:
            url = urlparse(href)
            assert url.scheme == "file", f"link leaves the page's folder: {href}"
            assert Path(unquote(url.path)).is_file(), href
            if url.fragment:
                assert driver.execute_script("return document.getElementById(arguments[0]) !== null",
                                             url.fragment), href
        driver.save_screenshot(str(tmp_path / "index.png"))
    finally:
        driver.quit()


HOVER_FIELDS = ("implementation", "shape", "TFLOP/s", "% of", "MHz", "commit")


@pytest.mark.browser
def test_every_figure_renders_and_shows_its_hover_fields(rendered, tmp_path):
    """Every Plotly figure on every page draws, and hovering a point of each shows the implementation, shape,
    TFLOP/s, the percentage of its named baseline, relerr, SM clock and commit."""
    driver = chrome_driver(tmp_path / "profile")
    seen = []
    try:
        for page in pages(rendered):
            driver.get(page.as_uri())
            figures = driver.execute_script(
                "return Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => g.id)")
            seen += figures
            for fig in figures:
                hover = driver.execute_script("""
                    const gd = document.getElementById(arguments[0]);
                    if (!gd.querySelector('svg.main-svg')) return null;
                    const i = gd.data.findIndex(t => t.customdata && t.customdata.length && t.hovertemplate
                                                     && t.visible !== false);
                    if (i < 0) return '';
                    Plotly.Fx.hover(gd, [{curveNumber: i, pointNumber: 0}]);
                    return gd.querySelector('.hoverlayer').textContent;""", fig)
                assert hover is not None, f"{fig} did not render"
                assert hover, f"{fig} has no hover text"
                for field in HOVER_FIELDS:
                    assert field in hover, (fig, field, hover)
                assert "relerr" in hover or "relative Frobenius error" in hover, (fig, hover)
    finally:
        driver.quit()
    assert len(seen) >= 5, seen


@pytest.mark.browser
def test_results_table_sorts_and_filters(rendered, tmp_path):
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.get((rendered / "results.html").as_uri())
        column = driver.execute_script(
            "return Array.from(document.querySelectorAll('#results-table th')).findIndex(th => th.textContent === 'tflops')")
        assert column >= 0

        def values():
            return driver.execute_script(
                "return Array.from(document.querySelectorAll('#results-table tbody tr')).filter(tr => !tr.hidden)"
                ".map(tr => tr.cells[arguments[0]].textContent.trim())", column)

        before = values()
        header = driver.find_elements("css selector", "#results-table th")[column]
        driver.execute_script("arguments[0].scrollIntoView()", header)
        header.click()
        up = [float(v) for v in values() if v]
        assert up == sorted(up) and up != [float(v) for v in before if v]
        header.click()
        down = [float(v) for v in values() if v]
        assert down == sorted(down, reverse=True)
        box = driver.find_element("id", "results-filter")
        box.send_keys("bf16 triton")
        shown = driver.execute_script(
            "return Array.from(document.querySelectorAll('#results-table tbody tr')).filter(tr => !tr.hidden)"
            ".map(tr => tr.textContent)")
        assert shown and len(shown) < len(before) and all("bf16" in r and "triton" in r for r in shown)
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def landing(tmp_path_factory) -> Path:
    """A reports/ folder of two GPUs (the fixture, and the fixture relabelled as an H200), rendered."""
    from study.present.report import render_landing
    root = tmp_path_factory.mktemp("landing")
    for name, gpu in (("h100", "NVIDIA H100 80GB HBM3"), ("h200", "NVIDIA H200")):
        shutil.copytree(FIXTURE, root / name)
        rows = fixture_rows().assign(gpu=gpu)
        rows.to_csv(root / name / "results.csv", index=False)
        env = json.loads((FIXTURE / "environment.json").read_text())
        (root / name / "environment.json").write_text(json.dumps({**env, "gpu": gpu}))
        render(root / name)
    render_landing(root)
    return root


def test_landing_lists_every_gpu_and_compares_them(landing):
    html = (landing / "index.html").read_text(encoding="utf-8")
    refs = parse(landing / "index.html")
    assert "h100/index.html" in refs.hrefs and "h200/index.html" in refs.hrefs
    assert 'id="fig-cross-gpu"' in html
    assert html.index('id="findings"') < html.index('id="gpus"')
    for href in refs.hrefs:
        if not is_external(href) and not href.startswith("#"):
            assert (landing / unquote(href.partition("#")[0])).is_file(), href


@pytest.mark.browser
def test_landing_shows_generated_findings(landing, tmp_path):
    """The landing page's findings are the ones the data generates, right after the ladders (whose first screen
    tests/test_readme.py reads)."""
    from study.present.findings import findings, ptx_facts
    df, _ = load_results(landing / "h100" / "results.csv")
    expected = findings(df, landing / "h100", ptx_facts(landing / "h100"))
    assert expected
    driver = chrome_driver(tmp_path / "profile")
    try:
        driver.get((landing / "index.html").as_uri())
        items = driver.execute_script(
            "return Array.from(document.querySelectorAll('#findings li')).map(li => "
            "[li.textContent, li.getBoundingClientRect().top])")
        assert [t for t, _ in items] == [f"{f.topic}. {f.text}" for f in expected]
        driver.save_screenshot(str(tmp_path / "landing.png"))
    finally:
        driver.quit()


def test_readme_results_block_is_what_the_data_renders():
    """The README's results block is generated from reports/h100 (python -m study.report --readme)."""
    from study.present.report import PRIMARY, README, readme_block, readme_with_block, stale_keys
    text = README.read_text(encoding="utf-8")
    primary = REPO / "reports" / PRIMARY
    assert readme_with_block(text, readme_block(primary, stale_keys(primary))) == text, \
        "README.md's results block is stale: run python -m study.report --readme"


# --- a complete sweep per GPU, current or marked stale ---------------------------------------------------------

# Forms whose rows the committed H100 sweep lacks, named here explicitly (python -m study.report --check still counts
# them): stage 17 (decode GEMMs), registered and first measured on an H200 (reports/h200) when no H100 was lent.
STAGE_17 = ("cuda:17_split_k-tiles", "cuda:17_split_k-splitk", "cuda:17_split_k-streamk", "cuda:17_split_k",
            "triton:17_split_k", "gluon:17_split_k")
AWAITING_SWEEP: set[str] = set()
# Calls of the default ncu profile that the committed H100 profile lacks (e.g. cut off by a profile run's time limit),
# named here explicitly until a profile run measures them.
AWAITING_PROFILE: set[str] = set()


def test_the_h100_report_is_complete_and_marks_its_stale_rows():
    """CI fails on any missing or failed row of the committed H100 sweep, rows of another GPU, or a missing profile
    call.  A stale row (measured on code that has changed since: a fix whose sweep has not run yet) fails it unless
    the committed report marks it: the findings banner counts it and its stage page flags it (the README's marking
    is test_readme_results_block_is_what_the_data_renders).  The correctness of the code as it is now is
    test_evidence's.  The stricter gate, one current sweep with no stale row, is python -m study.report --check,
    which an issue that asks for current reports must pass before it is resolved."""
    from study.core.stages import STAGES
    from study.measure.sweep import check
    from study.present.report import stale_keys
    from study.present.stage_pages import of_stage, page_name
    d = REPO / "reports" / "h100"
    problems = check(d, current=False)
    awaiting = [p for p in problems if p.startswith("missing: ") and p.split()[1] in AWAITING_SWEEP]
    unprofiled = [p for p in problems
                  if p.startswith("not profiled: ") and p[len("not profiled: "):] in AWAITING_PROFILE]
    other = [p for p in problems if p not in awaiting + unprofiled]
    assert not other, f"{len(other)} problem(s) in reports/h100, e.g. {other[:5]}"
    assert {p.split()[1] for p in awaiting} == AWAITING_SWEEP, "measured now: drop them from AWAITING_SWEEP"
    assert {p[len("not profiled: "):] for p in unprofiled} == AWAITING_PROFILE, \
        "profiled now: drop them from AWAITING_PROFILE"
    stale = stale_keys(d)
    html = (d / "index.html").read_text(encoding="utf-8")
    if not stale:
        assert "measured on code that has changed since: they are marked" not in html, \
            "reports/h100 marks stale rows it no longer has: python -m study.report --stale"
        return
    n = len(stale)
    assert f"{n} row{'' if n == 1 else 's'} of this report were measured on code that has changed since" in html, \
        "reports/h100/index.html does not mark its stale rows: python -m study.report --stale"
    for s in STAGES:
        mine = sum(1 for k in stale if of_stage(s, k[0]))
        if mine:
            page = (d / page_name(s)).read_text(encoding="utf-8")
            assert page.count("</code> (stale)</td>") == mine, \
                f"{page_name(s)} does not mark its {mine} stale rows: python -m study.report --stale"


def test_check_names_missing_stale_and_mixed_rows(tmp_path):
    import csv
    import shutil

    from study.measure.sweep import check
    shutil.copy(REPO / "reports" / "h100" / "profile.csv", tmp_path / "profile.csv")
    with (REPO / "reports" / "h100" / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    dropped, stale, other = rows[0], rows[1], rows[2]
    stale["impl_key"] = "0" * 12
    other["commit"] = "abc1234"
    with (tmp_path / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, list(rows[0]))
        w.writeheader()
        w.writerows(rows[1:])
    problems = check(tmp_path)
    mixed = f"rows of {len({r['commit'] for r in rows[1:]})} commits"    # one more than the committed data has
    assert f"missing: {dropped['impl']} {dropped['dtype']} {dropped['M']}x{dropped['N']}x{dropped['K']}" in problems
    assert any(p.startswith(f"stale: {stale['impl']} {stale['dtype']}") for p in problems)
    assert any(p.startswith(mixed) for p in problems)
    complete = check(tmp_path, current=False)      # a complete sweep awaiting a re-sweep: missing rows still count
    assert complete == [p for p in problems if not p.startswith(("stale: ", mixed))]
    assert any(p.startswith("missing: ") for p in complete)
    (tmp_path / "profile.csv").unlink()
    assert any("no ncu profile" in p for p in check(tmp_path))


def test_report_refuses_a_directory_without_results(tmp_path):
    (tmp_path / "empty").mkdir()
    done = subprocess.run([sys.executable, "-m", "study.report", "--dir", str(tmp_path / "empty")], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "has no results.csv" in done.stderr
    done = subprocess.run([sys.executable, "-m", "study.report", "--dir", str(tmp_path / "none")], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "has no results.csv" in done.stderr
    assert not (tmp_path / "none").exists()


def test_the_lead_says_how_many_gpus_the_rows_ran_on():
    """A sweep under torchrun spreads its rows over GPUs of one model; the page's first sentence says how many."""
    import re
    for d in sorted(p for p in (REPO / "reports").iterdir() if (p / "results.csv").exists()):
        df = pd.read_csv(d / "results.csv", keep_default_na=False, dtype=str)
        n = len({u for u in df.get("gpu_uuid", pd.Series(dtype=str)) if u}) or 1
        lead = re.search(r"measured against cuBLAS on ([^:]*):", re.sub(r"\s+", " ", (d / "index.html").read_text()))
        assert lead, d.name
        want = "one GPU" if n == 1 else f"{n} GPUs of one model"
        assert lead.group(1).startswith(want), (d.name, lead.group(1), n)
