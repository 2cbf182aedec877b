"""What each form of a stage adds, for its page (study/present/stage_pages.py): where a backend has several forms
of a stage, each adding one technique to the one before, each form's code against the previous form's, so that
the diff shows the technique and not the rest of the file.  Stage.form_symbols names each form's code.

CUDA: a form is an entry instantiated from one `constexpr Shape NAME{.field = value, ...}` of the stage's .cu
file, or a dispatch between several (a launch of the registry's picks one a call); the kernel template reads a
shape through `struct Cfg` (`CONST = S.field`) as `C::CONST`.  A step is the shapes' declarations and the lines
that instantiate them, diffed, then the kernel's lines that read a changed field's constant, a few lines of
context around each, with their line numbers.  Triton and Gluon: a form is its launcher (the registry's
TritonLaunch function) and the kernel functions it runs, each found with `ast` in the form's file or a stage file
it imports by importlib, and each checked to be reached from the launcher; a step is the unified diff of their
sources.  A declared name that the files do not define, or that the launcher does not reach, raises an error
naming it: a form's step is never silently empty.
"""
from __future__ import annotations

import ast
import difflib
import re
from functools import lru_cache
from pathlib import Path

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, DiffLexer

from study.core.paths import ROOT
from study.core.stages import Stage
from study.present.stage_forms import BACKENDS

FORMATTER = HtmlFormatter(cssclass="hl")
CONTEXT = 2                    # lines shown each side of a kernel line that reads a changed field
DISPATCH = ("study/launch/launchers.py", "CudaModelDispatch")   # where a form of several shapes picks one a call


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def unified(old: list[str], new: list[str], fromfile: str, tofile: str, context: int = 3) -> dict:
    """difflib's unified diff of two lists of lines: {"html": highlighted (None where they are the same),
    "added", "removed"}."""
    lines = list(difflib.unified_diff(old, new, fromfile=fromfile, tofile=tofile, lineterm="", n=context))
    return {"html": Markup(highlight("\n".join(lines) + "\n", DiffLexer(), FORMATTER)) if lines else None,
            "added": sum(ln.startswith("+") and not ln.startswith("+++") for ln in lines),
            "removed": sum(ln.startswith("-") and not ln.startswith("---") for ln in lines)}


# --- CUDA: shapes ------------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _cuda(path: Path) -> dict:
    """A .cu file's forms: its lines, Cfg's constant for each field of Shape, and each `constexpr Shape` as
    {start, end (line indices), values (every field, defaults filled in), note (the // lines above it)}."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    struct = re.search(r"^struct Shape \{(.*?)^\};", text, re.M | re.S)
    cfg = re.search(r"^struct Cfg \{(.*?)^\};", text, re.M | re.S)
    if not struct or not cfg:
        raise ValueError(f"{_rel(path)}: no `struct Shape` and `struct Cfg` to read forms from")
    defaults = dict(re.findall(r"\w+\s+(\w+)\s*=\s*([^;]+);", struct[1]))
    shapes = {}
    for m in re.finditer(r"^constexpr Shape (\w+)\{(.*?)\};", text, re.M | re.S):
        start, end = text.count("\n", 0, m.start()), text.count("\n", 0, m.end())
        note = []
        while start - len(note) > 0 and lines[start - len(note) - 1].startswith("//"):
            note.insert(0, lines[start - len(note) - 1][2:].strip())
        values = {**defaults, **{f: v.strip() for f, v in re.findall(r"\.(\w+)\s*=\s*([^,]+)", m[2])}}
        shapes[m[1]] = {"start": start, "end": end, "values": values, "note": " ".join(note)}
    return {"lines": lines, "shapes": shapes,
            "constants": {f: c for c, f in re.findall(r"\b([A-Z][A-Z_]*)\s*=\s*S\.(\w+)\b", cfg[1])}}


def _shape(path: Path, impl: str, name: str) -> dict:
    found = _cuda(path)["shapes"].get(name)
    if found is None:
        raise KeyError(f"{impl}: Stage.form_symbols names Shape {name!r}, which {_rel(path)} does not declare")
    return found


def _declaration(path: Path, name: str) -> list[str]:
    """A shape's declaration, then the lines that instantiate entries from it (`Cfg<NAME>`)."""
    f, s = _cuda(path), _cuda(path)["shapes"][name]
    return f["lines"][s["start"]:s["end"] + 1] + [ln for ln in f["lines"] if f"Cfg<{name}>" in ln]


def _reads(path: Path, constants: list[str]) -> dict:
    """The kernel's lines that read any of `constants` (as `C::CONST`), CONTEXT lines around each, highlighted with
    their line numbers, the reading lines marked: {"html", "lines": constant -> its line numbers}."""
    lines = _cuda(path)["lines"]
    hits = {c: [i for i, ln in enumerate(lines) if re.search(rf"\bC::{c}\b", ln)] for c in constants}
    marked = sorted({i for found in hits.values() for i in found})
    hunks = []                                   # [first, last] line indices, overlapping windows merged
    for i in marked:
        if hunks and i - CONTEXT <= hunks[-1][1] + 1:
            hunks[-1][1] = i + CONTEXT
        else:
            hunks.append([max(0, i - CONTEXT), i + CONTEXT])
    html = "".join(highlight("\n".join(lines[a:b + 1]) + "\n", CudaLexer(),
                             HtmlFormatter(cssclass="hl", linenos="inline", linenostart=a + 1,
                                           hl_lines=[i - a + 1 for i in marked if a <= i <= b]))
                   for a, b in hunks)
    return {"html": Markup(html) if html else None, "lines": {c: [i + 1 for i in found] for c, found in hits.items()}}


def _cuda_step(path: Path, impl: str, names: tuple[str, ...], before: tuple[str, ...] | None) -> dict:
    names = tuple(sorted(names, key=lambda n: _shape(path, impl, n)["start"]))       # shown in the file's order
    shapes = [_shape(path, impl, n) for n in names]
    step = {"note": " ".join(s["note"] for s in shapes), "dispatch": None, "code": None, "changes": [], "parts": []}
    if len(names) > 1:
        step["dispatch"] = DISPATCH + (_line_of(ROOT / DISPATCH[0], DISPATCH[1]),)
    if before is None:
        step["code"] = Markup(highlight("\n".join(ln for n in names for ln in _declaration(path, n)) + "\n",
                                        CudaLexer(), FORMATTER))
        return step
    was = _shape(path, impl, before[0])["values"]
    changed = {}
    for n, s in zip(names, shapes):
        delta = {f: v for f, v in s["values"].items() if v != was[f]}
        changed.update(delta)
        step["changes"].append(f"{n}: " + (", ".join(f".{f} {was[f]} → {v}" for f, v in delta.items()) or
                                            f"the same fields as {before[0]}"))
    old = [ln for n in before for ln in _declaration(path, n)]
    new = [ln for n in names for ln in _declaration(path, n)]
    diff = unified(old, new, f"{', '.join(before)} ({_rel(path)})", f"{', '.join(names)} ({_rel(path)})", 0)
    step["parts"].append({"title": "The shapes and the entries instantiated from them", **diff})
    constants = {f: _cuda(path)["constants"].get(f) for f in changed}
    reads = _reads(path, [c for c in constants.values() if c])
    lines = [f".{f} → C::{c}: " + (", ".join(map(str, reads["lines"][c])) or "read nowhere") if c else
             f".{f}: no Cfg constant" for f, c in constants.items()]
    if lines:
        step["parts"].append({"title": "The kernel's lines that read the changed fields (marked), with their line "
                                       "numbers: " + "; ".join(lines), "html": reads["html"]})
    return step


# --- Triton and Gluon: functions ---------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _module(path: Path) -> dict:
    """A Python file's lines, its module-level functions and classes (name -> node), and its module aliases of
    other kernel files (`m = importlib.import_module("triton_kernels.x")` -> triton_kernels/x.py)."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    aliases = {}
    for n in tree.body:
        call = n.value if isinstance(n, ast.Assign) and len(n.targets) == 1 else None
        if isinstance(call, ast.Call) and ast.unparse(call.func) == "importlib.import_module" and call.args \
                and isinstance(call.args[0], ast.Constant) and isinstance(n.targets[0], ast.Name):
            aliases[n.targets[0].id] = ROOT / (call.args[0].value.replace(".", "/") + ".py")
    return {"lines": text.splitlines(), "defs": defs, "aliases": aliases}


def _line_of(path: Path, name: str) -> int:
    return _module(path)["defs"][name].lineno


def reached(path: Path, name: str) -> set[tuple[Path, str]]:
    """(file, name) of every module-level function and class that function `name` of `path` leads to, itself
    included: those it names, in its file or through a module alias (`m.f`), and theirs, transitively."""
    todo, seen = [(path, name)], set()
    while todo:
        p, n = todo.pop()
        if (p, n) in seen:
            continue
        seen.add((p, n))
        m = _module(p)
        for x in ast.walk(m["defs"][n]):
            if isinstance(x, ast.Name) and x.id in m["defs"]:
                todo.append((p, x.id))
            elif isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.value.id in m["aliases"]:
                other = m["aliases"][x.value.id]
                if other.exists() and x.attr in _module(other)["defs"]:
                    todo.append((other, x.attr))
    return seen


def _source(path: Path, impl: str, launcher: str, name: str) -> list[str]:
    """Function `name`'s source (decorators included) under a `# file:line` line: from the form's file, else from
    the first file it imports that defines it; it must be reached from the form's launcher."""
    files = [path, *_module(path)["aliases"].values()]
    where = next((p for p in files if p.exists() and name in _module(p)["defs"]), None)
    if where is None:
        raise KeyError(f"{impl}: Stage.form_symbols names {name!r}, which neither {_rel(path)} nor a file it "
                       f"imports defines")
    if (where, name) not in reached(path, launcher):
        raise ValueError(f"{impl}: {launcher} ({_rel(path)}) does not reach {name!r} ({_rel(where)})")
    node = _module(where)["defs"][name]
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return [f"# {_rel(where)}:{start}", *_module(where)["lines"][start - 1:node.end_lineno], ""]


def _python_step(path: Path, impl: str, names: tuple[str, ...], before: tuple[str, ...] | None,
                 was: str | None) -> dict:
    if names[0] not in _module(path)["defs"]:
        raise KeyError(f"{impl}: Stage.form_symbols names launcher {names[0]!r}, which {_rel(path)} does not define")
    new = [ln for n in names for ln in _source(path, impl, names[0], n)]
    step = {"note": "", "dispatch": None, "code": None, "changes": [], "parts": []}
    if before is not None:
        diff = unified([ln for n in before for ln in _source(path, was, before[0], n)], new,
                       f"{was}: {', '.join(before)}", f"{impl}: {', '.join(names)}")
        step["changes"].append(f"{names[0]} runs {', '.join(names[1:])} (+{diff['added']} −{diff['removed']} lines)")
        step["parts"].append({"title": "The launcher and the kernel functions it runs, the form above's → this "
                                       "form's", **diff})
    return step


# --- the page's section ------------------------------------------------------------------------------------------

def steps(s: Stage, paths: dict[str, Path]) -> list[dict]:
    """[{backend, title, forms: [{impl, before, symbols, note, changes, parts: [{title, html}], code, dispatch}]}]:
    for each backend that Stage.form_symbols gives several forms, in its order, each form's step from the one
    before (the first form: its code, no step).  paths: backend -> the stage's file of that backend."""
    out = []
    for backend, declared in s.form_symbols.items():
        if len(declared) < 2:
            continue
        forms, before, was = [], None, None
        for suffix, names in declared.items():
            impl = f"{backend}:{s.key}{suffix}"
            step = (_cuda_step(paths[backend], impl, names, before) if backend == "cuda" else
                    _python_step(paths[backend], impl, names, before, was))
            forms.append({"impl": impl, "before": was, "symbols": names, **step})
            before, was = names, impl
        out.append({"backend": backend, "title": BACKENDS[backend], "forms": forms})
    return out
