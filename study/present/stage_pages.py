"""One page per stage, <report dir>/stage-<number>.html: what the stage adds, its step over the stage before, its
CUDA, Triton and Gluon sources and their diffs, highlighted, with what the study knows of it.

A page holds, in order: the stage's title, seed citation, the CUDA file's header comment as prose, its summary and
each backend's note (study/core/stages.py); a chart of this stage against the one before at 4096^3, TFLOP/s with
its spread and the ncu counters that explain the step (study/present/stage_chart.py); where a backend has several
forms of the stage, their measured ladder, form by form, with the counter the stage declares for each step
(study/present/stage_forms.py); what each of those forms adds, its code against the form before's
(study/present/form_diffs.py); the three forms, a tab each at full width; each form's diff against the previous
stage's file of the same backend; its rows of results.csv (the headline sizes, the rest folded); its ncu counters
(profile.csv) and its claims against them (study/present/hierarchy.py); its compute-sanitizer records
(gpu-evidence.json, as recorded: whether a record's key is current needs torch and Triton, which the report never
imports; tests/test_evidence.py checks that); and what Triton emitted for its Triton and Gluon forms (ptx.json,
written by python -m study.ptx).  gpu-evidence.json and ptx.json are repository-wide: they are read from the
report's folder, its parent, or the repository's reports/, whichever has them first.  Sources and diffs sit in
fixed-height scrolling panes, so a page's height does not grow with its files.

study.registry imports torch, so this module does not read it: a stage's forms are found by the registry's own
naming rule (cuda_kernels/<key>.cu, triton_kernels/<key>.py, triton_kernels/gluon/<key>.py) and its
implementations by their names (<backend>:<key>[-<variant>]) and the results' stage column.
"""
from __future__ import annotations

import re
from itertools import takewhile
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup
from pygments import highlight
from pygments.lexers import CudaLexer, PythonLexer

from study.core.paths import CUDA_DIR, ROOT, TRITON_DIR
from study.core.stages import STAGES, Stage, stage
from study.measure.frame import call_key, load_json
from study.present import form_diffs, hierarchy, interactive, spread, stage_chart, stage_forms
from study.present.form_diffs import FORMATTER
from study.present.formatting import fmt_num
from study.present.spread import fmt_measure, tie

TEMPLATES = Path(__file__).resolve().parent / "templates"
BACKENDS = {"cuda": "CUDA", "triton": "Triton", "gluon": "Gluon"}
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
HEADLINE_SIZES = (4096, 8192)      # the square sizes a stage page's results table shows unfolded


def page_name(s: Stage) -> str:
    return f"stage-{s.number}.html"


def form_path(s: Stage, backend: str) -> Path:
    return {"cuda": CUDA_DIR / f"{s.key}.cu", "triton": TRITON_DIR / f"{s.key}.py",
            "gluon": TRITON_DIR / "gluon" / f"{s.key}.py"}[backend]


def of_stage(s: Stage, impl: str) -> bool:
    """Whether implementation `impl` ("<backend>:<key>[-<variant>]") is one of stage s's."""
    body = impl.split(":", 1)[-1]
    return body == s.key or body.startswith(f"{s.key}-")


def repo_file(report_dir: Path, name: str) -> dict | None:
    """A repository-wide JSON file: beside the results, one folder up (reports/<gpu>/), or the repository's."""
    for d in (report_dir, report_dir.parent, ROOT / "reports"):
        data = load_json(d / name)
        if data is not None:
            return data
    return None


# --- the page's parts ----------------------------------------------------------------------------------------

def header(path: Path) -> dict:
    """A .cu file's opening // comment: its first line, and its paragraphs ("Label:  text" or unlabelled)."""
    lines = [ln[2:].removeprefix(" ") for ln in takewhile(lambda ln: ln.startswith("//"),
                                                           path.read_text().splitlines())]
    paras, new = [], True
    for ln in lines[1:]:
        m = re.match(r"([A-Z][\w ]*):\s+(.*)", ln)
        if m or (new and ln.strip()):
            paras.append({"label": m[1] if m else "", "text": (m[2] if m else ln).strip()})
        elif ln.strip():
            paras[-1]["text"] += " " + ln.strip()
        new = not ln.strip()
    return {"title": lines[0] if lines else "", "paras": paras}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def diff(before: Stage | None, s: Stage, backend: str) -> dict | None:
    """The form's unified diff against the previous stage's file of the same backend, highlighted; "new" where
    that stage has no such form (or there is none before); None where stage s has no such form."""
    path = form_path(s, backend)
    if not path.exists():
        return None
    old = form_path(before, backend) if before else None
    if old is None or not old.exists():
        return {"new": True, "against": _rel(old) if old else "", "html": None, "added": 0, "removed": 0}
    texts = [p.read_text(encoding="utf-8").splitlines() for p in (old, path)]
    return {"new": False, "against": _rel(old), **form_diffs.unified(*texts, _rel(old), _rel(path))}


def forms(s: Stage, before: Stage | None = None) -> list[dict]:
    out = []
    for backend, title in BACKENDS.items():
        path = form_path(s, backend)
        form = {"backend": backend, "title": title, "file": _rel(path), "html": None, "lines": 0,
                "diff": diff(before, s, backend),
                "first": next((x.number for x in STAGES if form_path(x, backend).exists()), None)}
        if path.exists():
            text = path.read_text(encoding="utf-8")
            lexer = CudaLexer() if path.suffix == ".cu" else PythonLexer()
            form.update(html=Markup(highlight(text, lexer, FORMATTER)), lines=text.count("\n"))
        out.append(form)
    return out


def result_rows(df: pd.DataFrame, s: Stage, stale: set = frozenset(), max_clock=None) -> list[dict]:
    """The stage's rows at every size: backends in the study's order, then implementation, dtype and size; each
    with its throughput as spread.fmt_measure states it, its share of its baseline and whether the two tie, and
    `headline` for the square HEADLINE_SIZES.  stale: keys (impl, dtype, M, N, K) of rows measured on code that
    has changed since; they are marked."""
    d = df[df["stage"] == s.number]
    d = d.assign(_b=d["backend"].map({b: i for i, b in enumerate(BACKENDS)}), _s=d["shape_set"] != "square",
                 _f=d["M"] * d["N"] * d["K"])
    base = {call_key(r): r for r in df[df["impl"].isin(set(d["baseline_impl"].dropna()))].to_dict("records")}
    rows = []
    for r in d.sort_values(["_b", "impl", "dtype", "_s", "_f"]).to_dict("records"):
        pct, b = fmt_num(r["pct_cublas"]), base.get((r["baseline_impl"], *call_key(r)[1:]))
        pct = f"{pct}% of {r['baseline_impl']}{' (a tie)' if b is not None and tie(r, b) else ''}" if pct else ""
        square = r["shape_set"] == "square" and r["M"] == r["N"] == r["K"]
        rows.append({"impl": r["impl"], "dtype": r["dtype"], "precision": r["precision"],
                     "shape": f"{fmt_num(r['M'])}x{fmt_num(r['N'])}x{fmt_num(r['K'])}", "set": r["shape_set"],
                     "tflops": fmt_measure(r, max_clock), "pct": pct, "relerr": fmt_num(r["relerr"]),
                     "passed": bool(r["passed"]), "commit": r.get("commit", ""), "stale": call_key(r) in stale,
                     "headline": bool(square and r["M"] in HEADLINE_SIZES), "reps": r.get("reps")})
    return rows


def counters(report_dir: Path, s: Stage) -> dict:
    """The stage's ncu calls (profile.csv) and its claims against them."""
    df = hierarchy.load(report_dir / "profile.csv")
    if df is None:
        claims = [{"backend": b, "impl": f"{b}:{s.key}", "claim": text, "measured": "no profile.csv here",
                   "verdict": ""} for b, (text, _) in s.claims.items()]
        return {"where": "", "rows": [], "claims": claims}
    agg = hierarchy.per_call(df)
    mine = set(agg.loc[agg["stage"] == s.number, "impl"])
    shown = df[df["impl"].isin(mine)] if mine else df
    commits = sorted(set(shown["commit"].astype(str)))   # the stage's own rows', not the file's first row's
    where = f"{shown.iloc[0]['gpu']}, commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}"
    return {"where": where,
            "rows": [r for r in hierarchy.table(agg) if r["impl"] in mine],
            "claims": [c for c in hierarchy.claims(agg) if c["stage"] == s.number]}


def _measured_keys(df: pd.DataFrame) -> dict[str, set[str]]:
    keys = df["impl_key"].fillna("").astype(str) if "impl_key" in df else pd.Series("", index=df.index)
    return {impl: set(k) - {""} for impl, k in keys.groupby(df["impl"])}


def sanitizer(evidence: dict | None, df: pd.DataFrame, s: Stage) -> list[dict]:
    """The stage's CUDA implementations' compute-sanitizer records, as recorded, and whether each ran the code
    that results.csv measured (its code key against the rows' impl_key)."""
    records = {r["impl"]: r for r in (evidence or {}).get("sanitizer", []) if of_stage(s, r["impl"])}
    names = set(df.loc[(df["stage"] == s.number) & (df["backend"] == "cuda"), "impl"]) | set(records)
    measured = _measured_keys(df)
    out = []
    for name in sorted(names):
        r = records.get(name)
        if r is None:
            out.append({"impl": name, "outcome": "no record", "tools": [], "recorded": "", "measured": ""})
            continue
        errors = r.get("errors", {})
        tools = [(t, "not run" if t not in errors else "not reached" if errors[t] is None else f"{errors[t]} errors")
                 for t in TOOLS]
        same = measured.get(name)
        out.append({"impl": name, "outcome": r.get("outcome", ""), "tools": tools,
                    "recorded": f"{r.get('gpu', '')}, commit {r.get('commit', '?')}, {r.get('date', '')}",
                    "measured": "" if not same else "yes" if same == {r.get("code_key")} else "no"})
    return out


def emitted(ptx: dict | None, evidence: dict | None, s: Stage) -> list[dict]:
    """ptx.json's summaries of the stage's Triton and Gluon implementations, and whether each summarised the
    compile units its GPU evidence record proved (the "compiled" part of that record's key)."""
    proved = {r["impl"]: r for r in (evidence or {}).get("records", [])}
    out = []
    for name, e in sorted((ptx or {}).items()):
        if of_stage(s, name):
            rec = proved.get(name, {})
            same = rec.get("parts", {}).get("compiled")
            out.append({"impl": name, "sentence": e.get("sentence", ""), "units": e.get("units", ""),
                        "key": str(e.get("key", ""))[:12],
                        "proved": "" if same is None else f"{'yes' if same == e.get('key') else 'no'} "
                                                          f"(commit {rec.get('commit', '?')})"})
    return out


# --- the pages -----------------------------------------------------------------------------------------------

def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def render_stage_pages(report_dir: Path, df: pd.DataFrame, *, env: jinja2.Environment | None = None,
                       stale: set = frozenset(), reports_root: Path | None = None,
                       only: tuple[str, ...] | None = None, extras: dict | None = None) -> list[dict]:
    """Write report_dir/stage-NN.html for every stage of STAGES; return [{number, title, href}] for the index.

    df: the results (study.measure.frame.load_results(report_dir / "results.csv")[0]).  env: a jinja2
    Environment whose loader finds templates/stage.html.j2 (default: one like the report's).  stale: the keys of
    rows measured on code that has changed since (study.present.report.stale_keys), marked in each page's table.
    reports_root: where the tree's one plotly.min.js lies (default: the folder above, as for the GPU's pages).
    only: the numbers of the stages whose pages to write (default: every stage's); the navigation names all.
    extras: stage number -> a part of that stage's own (study/present/pages.py, STAGE_EXTRAS), shown after the
    ladder of forms."""
    report_dir = Path(report_dir)
    template = (env or _environment()).get_template("stage.html.j2")
    evidence, ptx = repo_file(report_dir, "gpu-evidence.json"), repo_file(report_dir, "ptx.json")
    max_clock = (load_json(report_dir / "environment.json") or {}).get("sm_clock_max_mhz")
    plotly_js = interactive.plotly_src(report_dir, reports_root or report_dir.parent)
    prof = stage_chart.counters(report_dir)[0]
    # Implementations the repository's evidence names: the forms a stage has beyond those results.csv measured.
    known = [r.get("impl") for part in ("records", "sanitizer") for r in (evidence or {}).get(part, [])]
    known += list(ptx or {})
    nav = [{"number": s.number, "title": s.title, "href": page_name(s)} for s in STAGES]
    for i, s in enumerate(STAGES):
        if only is not None and s.number not in only:
            continue
        cuda = form_path(s, "cuda")
        rows, step = result_rows(df, s, stale, max_clock), stage_chart.step(report_dir, df, s, max_clock)
        # The diffs are taken against the stage the chart compares with (the nearest earlier stage of the same
        # precision, past a stage of another one), else the stage it declares it builds on, else the one before.
        before = next((t["previous"] for t in step["tabs"][:1] if t["previous"]),
                      stage(s.builds_on) if s.builds_on else STAGES[i - 1] if i else None)
        # The ladder of forms: each dtype's first form against the main form of the stage its chart compares with.
        ladder = stage_forms.table(df, s, {t["dtype"]: t["previous"] for t in step["tabs"]}, HEADLINE_SIZES, prof,
                                   known, max_clock, stale)
        html = template.render(
            stage=s, nav=nav, prev=nav[i - 1] if i else None, next=nav[i + 1] if i + 1 < len(nav) else None,
            before=before, header=header(cuda) if cuda.exists() else None, forms=forms(s, before), step=step,
            ladder=ladder, extra=(extras or {}).get(s.number), adds=form_diffs.steps(s, {b: form_path(s, b) for b in BACKENDS}), plotly_js=plotly_js,
            notes=[(BACKENDS.get(b, b), text) for b, text in s.notes.items()],
            rows=rows, protocol=spread.protocol([r["reps"] for r in rows], max_clock), counters=counters(report_dir, s),
            sanitizer=sanitizer(evidence, df, s), emitted=emitted(ptx, evidence, s), ptx_found=ptx is not None,
            evidence_found=evidence is not None, tools=TOOLS, style=Markup(FORMATTER.get_style_defs(".hl")))
        (report_dir / page_name(s)).write_text(html, encoding="utf-8")
    return nav
