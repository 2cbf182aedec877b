"""reports/gpu-evidence.json: proof, for CI (which has no GPU), that each implementation, exactly as it runs now,
passed on one.

Written only by a GPU run (`pytest -m gpu --write-evidence reports/gpu-evidence.json`, and `python -m
study.measure.sanitize` for compute-sanitizer's counts), never by hand.  Each record carries its implementation's
**key**: a SHA-256 over what runs and how it is judged, computable on a CPU machine that has nvcc and Triton.

    part          CUDA                                  Triton / Gluon                    cuBLAS
    compiled      per-entry digest of the cubin (every  every compile unit the launcher   study/cublas*.py
                  entry any dispatch can pick: nvcc's    can launch (study/measure/offline.py):    (normalised)
                  flags, nvcc's version, study/         PTX digest, specialisation,
                  cubin_key.py), sm_90a                 options; Triton's version
    host          -                                     the stage files' Python outside   -
                                                        the kernels (normalised)
    launch        the launch declaration, every field, nested launches included
    launch_code   the launch classes and Impl, and what they call in the study's modules (driver.py and launchers.py:
                  functions, the registry's helpers) with the constants they read, normalised
    (the "code key" is all of the above and below but the harness: what a sanitizer record and a row of
    results.csv carry, since a tolerance or a test judges results, not memory accesses or timings)
    labels        precision labels, output dtypes, layouts, and the tolerances of those labels
    harness       the GPU suite (tests/test_gpu_equivalence.py, helpers, conftest), study/core/verify.py,
                  study/core/contract.py, study/core/schema.py's tolerance tables (normalised)
    target        compute capability 9.0 (sm_90a), the only one the records may come from

"Normalised" Python is its AST with docstrings dropped, so a comment or docstring keeps every record and
any change to code voids it.  A cubin digest ignores line tables, so a comment in a kernel or a header keeps
it too (study/launch/cubin_key.py).  A record stores the digest of each part, and tests/test_evidence.py says which
parts moved when a key no longer matches.  The sanitizer records also key on study/measure/sanitize.py.

    python -m study.evidence --keys            # every implementation's current key and parts
    python -m study.evidence --stale [CSV ...] # rows of reports/**/results.csv not measured on the current key
"""
from __future__ import annotations

import ast
import dataclasses
import datetime as dt
import functools
import hashlib
import inspect
import json
import sys
import textwrap
from pathlib import Path

from study.core import cli
from study import registry
from study.core.paths import ROOT

KEY_FORMAT = 2
CAPABILITY = "9.0"
HARNESS_FILES = ("tests/test_gpu_equivalence.py", "tests/helpers.py", "tests/conftest.py", "study/core/verify.py",
                 "study/core/contract.py")
SANITIZER_FILES = ("study/measure/sanitize.py",)
EVIDENCE = ROOT / "reports" / "gpu-evidence.json"


def _sha(obj) -> str:
    data = obj if isinstance(obj, bytes) else json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()


# --- normalised Python ---------------------------------------------------------------------------------------

_KERNEL_DECORATORS = ("jit", "autotune", "heuristics", "constexpr_function")


def _is_kernel(node) -> bool:
    return any(any(word in ast.unparse(d) for word in _KERNEL_DECORATORS) for d in node.decorator_list)


class _Normalise(ast.NodeTransformer):
    """Drops docstrings (and, with `drop_kernels`, Triton/Gluon device functions, which the compiled units
    cover) so that only code remains."""

    def __init__(self, drop_kernels: bool):
        self.drop_kernels = drop_kernels

    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:] or [ast.Pass()]
        node.body = body
        return node

    def visit_Module(self, node):
        self.generic_visit(node)
        if self.drop_kernels:
            node.body = [n for n in node.body if not (isinstance(n, ast.FunctionDef) and _is_kernel(n))]
        return self._body(node)

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        return self._body(node)


def _dump(node) -> str:
    """ast.dump, but the same on every Python from 3.10 on: fields that are None or empty (3.12 added
    `type_params` to every def) and expression contexts are left out."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={_dump(v)}" for name in node._fields
                  if (v := getattr(node, name, None)) not in (None, []) and name not in ("ctx", "kind", "type_comment")]
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_dump(x) for x in node) + "]"
    return repr(node)


def normalised(source: str, drop_kernels: bool = False) -> str:
    """Python code without its comments and docstrings, as a version-independent dump of its AST."""
    return _dump(_Normalise(drop_kernels).visit(ast.parse(textwrap.dedent(source))))


@functools.lru_cache(maxsize=None)
def file_digest(path: Path, drop_kernels: bool = False) -> str:
    return _sha(normalised(Path(path).read_text(), drop_kernels).encode())


def _files_digest(files) -> dict[str, str]:
    return {f: file_digest(ROOT / f) for f in files}


# --- the parts -----------------------------------------------------------------------------------------------

def declaration(obj):
    """A launch declaration as plain data, every dataclass field included (nested launches too)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"class": type(obj).__name__,
                **{f.name: declaration(getattr(obj, f.name)) for f in dataclasses.fields(obj)}}
    if isinstance(obj, (list, tuple)):
        return [declaration(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): declaration(v) for k, v in obj.items()}
    if isinstance(obj, Path):
        return str(obj.relative_to(ROOT)) if obj.is_relative_to(ROOT) else str(obj)
    return obj


def _launch_objects(obj) -> list:
    out = [obj]
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if dataclasses.is_dataclass(x) and not isinstance(x, type):
                    out += _launch_objects(x)
    return out


def _simple(v) -> bool:
    if isinstance(v, (bool, int, float, str, type(None))):
        return True
    if isinstance(v, (tuple, list, frozenset)):
        return all(_simple(x) for x in v)
    return isinstance(v, dict) and all(_simple(k) and _simple(x) for k, x in v.items())


def _names_read(tree) -> list[ast.AST]:
    """Name and module-attribute nodes of a def, annotations left out (a type named in a signature is not run)."""
    out, stack = [], [tree]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load):
            out.append(n)
        for field, value in ast.iter_fields(n):
            if field in ("annotation", "returns"):
                continue
            stack += [x for x in (value if isinstance(value, list) else [value]) if isinstance(x, ast.AST)]
    return out


def _study_module(importer: str, name: str):
    """The sibling module `name` of module `importer` (what `from . import name` inside a function binds)."""
    import importlib
    import importlib.util
    full = f"{importer.rpartition('.')[0]}.{name}"
    return importlib.import_module(full) if importlib.util.find_spec(full) else None


def _code_of(objs) -> dict[str, str]:
    """Normalised source of the given classes and functions and, transitively, of every function or class of
    the study's own modules that they call or name (directly, or as `module.name` of a study module), with the
    values of the plain module-level constants they read.  Keyed by qualified name without the module, so that
    moving code between modules keeps it."""
    seen: dict[str, str] = {}
    todo = list(objs)
    while todo:
        o = todo.pop()
        if o.__qualname__ in seen or not o.__module__.startswith(("study", "triton_kernels")):
            continue
        mod = sys.modules.get(o.__module__)
        src = inspect.getsource(o)
        seen[o.__qualname__] = _sha(normalised(src).encode())
        for n in _names_read(ast.parse(textwrap.dedent(src))):
            if isinstance(n, ast.Name):
                if not hasattr(mod, n.id):
                    continue
                ref = getattr(mod, n.id)
            elif isinstance(n.value, ast.Name):           # cuda_launch.kernel, after `from . import cuda_launch`
                base = getattr(mod, n.value.id, None) or _study_module(o.__module__, n.value.id)
                ref = getattr(base, n.attr, None) if inspect.ismodule(base) else None
            else:
                continue
            if hasattr(ref, "__wrapped__"):                 # functools.lru_cache and the like
                ref = inspect.unwrap(ref)
            if (inspect.isfunction(ref) or inspect.isclass(ref)) and getattr(ref, "__module__", "").startswith("study"):
                todo.append(ref)
            elif isinstance(n, ast.Name) and n.id.isupper() and _simple(ref):
                seen[f"{o.__qualname__}:{n.id}"] = _sha(ref)
    return seen


def _labels(impl) -> dict:
    from study.core.schema import TOLERANCE
    return {"dtypes": impl.dtypes, "out_dtypes": impl.out_dtypes, "layouts": list(impl.layouts),
            "tolerance": {p: TOLERANCE[p] for p in impl.dtypes.values()}}


@functools.lru_cache(maxsize=None)
def harness_digest() -> str:
    from study.core import schema
    tables = {k: v for k, v in vars(schema).items() if k.isupper() and k not in ("RESULT_COLUMNS", "NEWER_COLUMNS")}
    return _sha({"files": _files_digest(HARNESS_FILES), "tables": tables})


@functools.lru_cache(maxsize=None)
def sanitizer_digest() -> str:
    return _sha(_files_digest(SANITIZER_FILES))


@functools.lru_cache(maxsize=None)
def _cuda_entry_digests(source: str) -> dict[str, str]:
    from study.launch.cubin_key import entry_digests
    from study.launch.build import build
    from study.core.paths import CUDA_DIR
    cubin = build(CUDA_DIR / source)
    return entry_digests(cubin.path, list(cubin.resources))


class Keys:
    """The current key of each implementation.  Triton and Gluon keys need the offline compilation of every
    unit they can launch (study/measure/offline.py), done once for all the implementations asked for."""

    def __init__(self, impls=None):
        self.impls = list(impls if impls is not None else registry.implementations())
        self._units: dict | None = None

    def units(self) -> dict:
        if self._units is None:
            from study.measure.offline import compile_units
            names = [i.name for i in self.impls if i.backend in ("triton", "gluon")]
            self._units = compile_units(names) if names else {}
        return self._units

    @functools.lru_cache(maxsize=None)
    def parts(self, name: str) -> dict[str, str]:
        impl = registry.get(name)
        launches = _launch_objects(impl.launch)
        code = _code_of([type(x) for x in launches] + [type(impl)])
        parts = {"labels": _sha(_labels(impl)), "harness": harness_digest(), "target": _sha(CAPABILITY),
                 "launch": _sha(declaration(impl.launch)), "format": str(KEY_FORMAT)}
        if impl.backend == "cuda":
            from study.launch.build import DEFAULT_ARCH, NVCC_FLAGS, nvcc_version
            source_of = {e: c.source for c in registry.cuda_launches(impl) for e in c.entries()}
            entries = {f"{source_of[e]}:{e}": _cuda_entry_digests(source_of[e])[e]
                       for e in sorted(registry.reachable_entries(impl))}
            parts["compiled"] = _sha({"entries": entries, "flags": NVCC_FLAGS, "arch": DEFAULT_ARCH,
                                      "nvcc": nvcc_version()})
        elif impl.backend in ("triton", "gluon"):
            import triton
            units = self.units().get(name)
            if units is None or "error" in units:
                raise RuntimeError(f"{name}: offline compilation failed: {units and units.get('error')}")
            parts["compiled"] = _sha({"units": {d: sorted((u.get("ptx") or u.get("error"), json.dumps(
                {k: u.get(k) for k in ("kernel", "signature", "constexprs", "attrs", "options")}, sort_keys=True))
                for u in us) for d, us in units.items()}, "triton": triton.__version__})
            parts["host"] = _sha({str(p.relative_to(ROOT)): file_digest(p, drop_kernels=True) for p in impl.sources})
        else:
            parts["compiled"] = _sha({str(p.relative_to(ROOT)): file_digest(p) for p in impl.sources})
        parts["launch_code"] = _sha(code)
        return parts

    def key(self, name: str) -> str:
        """What a GPU test record must carry: every part."""
        return _sha(self.parts(name))

    def code_key(self, name: str) -> str:
        """What runs, without how it is judged (the harness): what a sanitizer record and a measured row carry,
        so that a change to a tolerance or a test re-runs the GPU suite but leaves them current."""
        return _sha(code_parts(self.parts(name)))


def code_parts(parts: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in parts.items() if k != "harness"}


def toolchain() -> dict:
    import triton

    from study.launch.build import nvcc_version
    return {"triton": triton.__version__, "nvcc": nvcc_version()}


# --- the records ---------------------------------------------------------------------------------------------

def _doc(path: Path | str) -> dict:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else {}


def load(path: Path | str) -> list[dict]:
    return _doc(path).get("records", [])


def _write(path: Path | str, doc: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def _gpu() -> tuple[str, str]:
    import torch
    major, minor = torch.cuda.get_device_capability()
    return torch.cuda.get_device_name(), f"{major}.{minor}"


def _replace(path, section: str, fresh: list[dict]) -> None:
    doc = _doc(path)
    names = {r["impl"] for r in fresh}
    doc["format"] = KEY_FORMAT
    doc[section] = [r for r in doc.get(section, []) if r["impl"] not in names] + fresh
    _write(path, doc)


def record(path: Path | str, outcomes: dict[str, tuple[int, int]], expected: dict[str, int]) -> None:
    """outcomes: impl name -> (tests passed, tests run); expected: impl name -> how many GPU tests the full
    suite has for it (a filtered run writes a record that does not count).  Replaces the implementation's
    older records: the file holds the newest record of each."""
    import torch
    from study.measure.environment import git_commit
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    gpu, cc = _gpu()
    keys = Keys([registry.get(n) for n in outcomes])
    fresh = []
    for name, (passed, total) in sorted(outcomes.items()):
        fresh.append({"impl": name, "key": keys.key(name), "parts": keys.parts(name),
                      "outcome": "passed" if total and passed == total else "failed",
                      "tests_passed": passed, "tests_run": total, "tests_expected": expected.get(name),
                      "gpu": gpu, "capability": cc, "date": now, "commit": git_commit(),
                      "torch": torch.__version__, **toolchain()})
    _replace(path, "records", fresh)


def record_sanitizer(path: Path | str, counts: dict[str, dict[str, int | None]], totals: dict[str, dict],
                     commit: str, calls) -> None:
    """counts: CUDA implementation -> {tool: errors attributed to it, or None if the tool did not reach it};
    totals: tool -> {"errors": the tool's own total, "other": errors outside the study's kernels, "exit":
    its exit status}.  An implementation is clean only if every tool reached it, found nothing in it, and
    found nothing anywhere else either."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    gpu, cc = _gpu()
    keys = Keys([registry.get(n) for n in counts])
    everywhere_clean = bool(totals) and all(t.get("errors") == 0 and not t.get("other") and t.get("exit") == 0
                                            for t in totals.values())
    fresh = []
    for name, tools in sorted(counts.items()):
        clean = everywhere_clean and bool(tools) and all(v == 0 for v in tools.values())
        fresh.append({"impl": name, "key": keys.key(name), "code_key": keys.code_key(name), "parts": keys.parts(name),
                      "sanitizer_harness": sanitizer_digest(),
                      "errors": tools, "totals": totals, "outcome": "clean" if clean else "errors",
                      "calls": calls.get(name, []), "gpu": gpu, "capability": cc, "date": now, "commit": commit,
                      **toolchain()})
    _replace(path, "sanitizer", fresh)


def passing(path: Path | str, name: str, key: str, expected: int) -> dict | None:
    """The record that proves implementation `name` at `key`: its tests all passed, and there were as many as
    the full GPU suite now has for it (`expected`), so neither a filtered run nor an older suite counts."""
    for r in load(path):
        if (r["impl"] == name and r.get("key") == key and r["outcome"] == "passed" and r["tests_run"] == expected
                and r.get("capability") == CAPABILITY):
            return r
    return None


def sanitizer_clean(path: Path | str, name: str, parts: dict[str, str]) -> dict | None:
    """The clean sanitizer record of what runs now: its parts, but for the GPU suite's harness (which judges
    results, not memory accesses), equal the current ones, and study/measure/sanitize.py is the same."""
    want = code_parts(parts)
    for r in _doc(path).get("sanitizer", []):
        if (r["impl"] == name and code_parts(r.get("parts", {})) == want
                and r.get("sanitizer_harness") == sanitizer_digest() and r["outcome"] == "clean"
                and r.get("capability") == CAPABILITY):
            return r
    return None


def why_not(path: Path | str, name: str, parts: dict[str, str], section: str = "records") -> str:
    """Which parts of the key moved since the implementation's newest record (for a failure message)."""
    recs = [r for r in _doc(path).get(section, []) if r["impl"] == name and "parts" in r]
    if not recs:
        return "no record of it under the current key format"
    old = recs[-1]["parts"] if section == "records" else code_parts(recs[-1]["parts"])
    moved = sorted(k for k in set(old) | set(parts) if old.get(k) != parts.get(k))
    return f"since its record of {recs[-1].get('commit', '?')}, changed: {', '.join(moved) or 'nothing (?)'}"


# --- the check CI runs ------------------------------------------------------------------------------------

def expected_tests() -> dict[str, int]:
    """How many GPU tests the full suite has for each implementation, from a collection in a fresh process
    (no -k, no deselection): a record counts only if it ran them all."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "counts.json"
        proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                               "-o", "addopts=-ra", "-p", "no:xdist", "-m", "gpu", "--gpu-test-counts", str(out),
                               "tests/test_gpu_equivalence.py"], cwd=ROOT, capture_output=True, text=True)
        if not out.exists():
            raise RuntimeError(f"collecting the GPU tests failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())


def check(names: list[str] | None = None, path: Path | str = EVIDENCE, keys: Keys | None = None,
          expected: dict[str, int] | None = None) -> dict[str, str]:
    """{implementation: why its current key has no passing GPU record (or, for CUDA, no clean sanitizer
    record)} for the named implementations (default all); empty when every one is proven."""
    impls = [registry.get(n) for n in names] if names else registry.implementations()
    keys = keys or Keys(impls)
    expected = expected if expected is not None else expected_tests()
    bad = {}
    for impl in impls:
        key, parts = keys.key(impl.name), keys.parts(impl.name)
        why = []
        if passing(path, impl.name, key, expected.get(impl.name, -1)) is None:
            why.append(f"no passing GPU record of all {expected.get(impl.name)} of its tests for key {key[:12]} "
                       f"({why_not(path, impl.name, parts)})")
        if impl.backend == "cuda" and sanitizer_clean(path, impl.name, parts) is None:
            why.append(f"no clean compute-sanitizer record for code key {keys.code_key(impl.name)[:12]} "
                       f"({why_not(path, impl.name, code_parts(parts), 'sanitizer')})")
        if why:
            bad[impl.name] = "; ".join(why)
    return bad


# --- staleness of measured rows ------------------------------------------------------------------------------

def stale_rows(csv_path: Path | str, keys: Keys | None = None) -> list[dict]:
    """Rows of a results.csv whose implementation's code key (what runs) is not the current one, or that carry
    none."""
    import csv
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    known = {i.name for i in registry.implementations()}
    keys = keys or Keys([registry.get(n) for n in sorted({r["impl"] for r in rows} & known)])
    out = []
    for r in rows:
        if r["impl"] not in known:
            why = "no such implementation now"
        elif not r.get("impl_key"):
            why = "row carries no key (measured before keys were recorded)"
        elif r["impl_key"] != keys.code_key(r["impl"]):
            why = "key changed since"
        else:
            continue
        out.append({**r, "stale_because": why})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("evidence", __doc__)
    ap.add_argument("--keys", action="store_true", help="print every implementation's current key and parts")
    ap.add_argument("--stale", nargs="*", metavar="CSV", default=None,
                    help="list stale rows of these results.csv files (default: every reports/**/results.csv)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1, naming each implementation whose current key has no passing record")
    ap.add_argument("--impls", default="", help="comma list of implementations (with --keys or --check)")
    args = ap.parse_args(argv)
    if args.check:
        bad = check([n for n in args.impls.split(",") if n] or None)
        for name, why in sorted(bad.items()):
            print(f"NOT PROVEN {name}: {why}")
        print(f"{len(bad)} implementation(s) without current GPU evidence" if bad else "every implementation proven")
        return 1 if bad else 0
    if args.keys:
        names = [n for n in args.impls.split(",") if n] or [i.name for i in registry.implementations()]
        keys = Keys([registry.get(n) for n in names])
        json.dump({n: {"key": keys.key(n), "parts": keys.parts(n)} for n in names}, sys.stdout, indent=1)
        print()
    if args.stale is not None:
        paths = [Path(p) for p in args.stale] or sorted((ROOT / "reports").rglob("results.csv"))
        keys = Keys()
        total = 0
        for p in paths:
            rows = stale_rows(p, keys)
            total += len(rows)
            by_impl: dict[str, int] = {}
            for r in rows:
                by_impl[r["impl"]] = by_impl.get(r["impl"], 0) + 1
            print(f"{p}: {len(rows)} stale rows" + "".join(f"\n  {n}: {c}" for n, c in sorted(by_impl.items())))
        return 1 if total else 0
    return 0
