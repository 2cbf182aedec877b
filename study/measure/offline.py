"""What each Triton and Gluon implementation can launch, compiled for sm_90a on a machine without a GPU.

    python -m study.measure.offline [--impls NAME,...] [--jobs N]      # JSON on stdout, one entry per implementation

No kernel runs.  Each implementation's own launcher is called on CPU tensors (`PROBES`: every dtype and
operand layout it declares; aligned and misaligned operands; 1x1x1, a ragged size and sizes large enough
for every shape class; with and without C) while Triton's launch is replaced by a recorder.  The recorder
binds the arguments exactly as the JIT would on an sm_90a device (the same specialisation: 16-byte
alignment, integers equal to 1, constexprs) and, for an autotuned kernel, records every config it may pick.
Each distinct compile unit is then compiled with `triton.compile` for sm_90a, in the environment its launcher
compiled it in (a launcher may set a compiler switch around its launch, as stage 12 sets DISABLE_MMA_V3: every
variable that differs from the environment at the recorder's start is recorded with the unit, is part of its
identity, and is set again around its compile), and its PTX read:

* `ptx`: SHA-256 of the PTX's code (debug sections, comments, .file and .loc lines dropped), what the
  evidence key (study/measure/evidence.py) holds for this implementation;
* `mmas`, `dots`, `tf32_cvt`, `fp32_fma`: what tests/test_triton_precision.py holds its precision label to.

This runs in a subprocess (`compile_units`): the recorder patches Triton, and the test session interprets
kernels.  Compiled units are cached on disk by Triton's own hash of the kernel's source and dependencies, the
specialisation and the options, so only changed kernels are compiled again.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from study.core import cli
from study.core.paths import ROOT

TARGET = ("cuda", 90, 32)
SMS = 132                       # H100 SXM and H200: what a launcher that sizes its grid by SM count sees
# (M, N, K, aligned, with C): aligned sizes of every shape class (a launcher may pick tiles by grid size),
# a ragged size at a misaligned offset without C, and 1x1x1 (the JIT turns arguments equal to 1 into constants).
PROBES = ((64, 128, 96, True, True), (2048, 2048, 32, True, True), (4096, 4096, 32, True, True),
          (33, 45, 70, False, False), (1, 1, 1, True, True))
OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def cache_dir() -> Path:
    root = os.environ.get("GEMM_STUDY_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    d = Path(root) / "gemm-study" / "offline"
    d.mkdir(parents=True, exist_ok=True)
    return d


def code_hash(ptx: str) -> str:
    """The PTX's code only: debug sections, comments, .file and .loc lines dropped."""
    code = ptx.split(".section\t.debug")[0]
    lines = [re.sub(r"//.*$", "", ln).rstrip() for ln in code.splitlines()
             if not ln.strip().startswith((".file", ".loc"))]
    return hashlib.sha256("\n".join(ln for ln in lines if ln).encode()).hexdigest()


def facts(ptx: str, ttir: str) -> dict:
    return {"mmas": sorted(set(re.findall(r"\b(?:wgmma|mma)[\w.]*", ptx))),
            "dots": sorted({ln.strip()[:160] for ln in ttir.splitlines() if "tt.dot" in ln}),
            "tf32_cvt": "cvt.rna.tf32" in ptx or "cvt.rn.tf32" in ptx,
            "fp32_fma": "fma.rn.f32" in ptx}


# --- the recorder (runs only inside the subprocess) ---------------------------------------------------------

class _Recorder:
    def __init__(self):
        self.units: dict[str, dict] = {}      # unit id -> what to compile
        self.calls: list[str] = []            # unit ids recorded since the last reset
        self.base_env = dict(os.environ)      # what a launcher's own switches are told apart from

    def install(self):
        import types

        import torch
        from triton.backends.compiler import GPUTarget
        from triton.compiler import make_backend
        from triton.runtime import autotuner, jit
        rec = self
        target = GPUTarget(*TARGET)
        backend = make_backend(target)

        def run(fn, *args, grid, warmup, **kwargs):
            from triton import knobs
            kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
            kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
            binder = jit.create_function_from_signature(fn.signature, fn.params, backend)
            bound, spec, options = binder(*args, **kwargs)
            options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, spec, options)
            desc = {"kernel": fn.fn.__qualname__, "module": fn.fn.__module__, "signature": signature,
                    "constexprs": {str(k): repr(v) for k, v in constexprs.items()},
                    "attrs": {str(k): repr(v) for k, v in attrs.items()},
                    "options": {k: getattr(options, k, None) for k in OPTION_KEYS},
                    "env": launch_env(rec.base_env)}
            uid = hashlib.sha256(json.dumps([fn.cache_key, desc], sort_keys=True, default=str).encode()).hexdigest()
            rec.units.setdefault(uid, {**desc, "_src": (fn, signature, constexprs, attrs, options)})
            rec.calls.append(uid)

        def tuned_run(self, *args, **kwargs):
            kwargs.pop("warmup", None)
            grid = kwargs.pop("grid", None)
            for config in self.configs:      # every config the autotuner may pick
                self.fn.run(*args, grid=grid, warmup=False, **{**kwargs, **config.all_kwargs()})

        jit.JITFunction.run = run
        autotuner.Autotuner.run = tuned_run
        props = types.SimpleNamespace(multi_processor_count=SMS, name="offline sm_90a", major=9, minor=0)
        torch.cuda.get_device_properties = lambda *a, **k: props
        torch.cuda.current_device = lambda: 0


def launch_env(base: dict) -> dict[str, str | None]:
    """The environment variables a launcher changed around its launch (the JIT compiles then, and Triton's
    compiler reads switches such as DISABLE_MMA_V3 from the environment): name -> value, None if unset."""
    now = os.environ
    return {k: now.get(k) for k in sorted(set(base) | set(now)) if base.get(k) != now.get(k)}


@contextmanager
def environment(env: dict[str, str | None]):
    """os.environ with `env` applied (None unsets), restored afterwards."""
    old = {k: os.environ.get(k) for k in env}
    try:
        for k, v in env.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)


def _operand(rows: int, cols: int, dtype, col_major: bool, aligned: bool):
    """A rows x cols CPU tensor (never filled: nothing runs), row- or column-major, at a 16-byte boundary with
    an aligned pitch, or one element into its storage with an odd pitch."""
    import torch
    lines, width = (cols, rows) if col_major else (rows, cols)
    pitch = width if aligned else width + 1 + (width % 2 == 0)
    buf = torch.empty(lines * pitch + 16, dtype=dtype)
    view = buf[0 if aligned else 1:][:lines * pitch].view(lines, pitch)[:, :width]
    return view.t() if col_major else view


def probe(impl, rec: _Recorder) -> dict[str, list[str]]:
    """Call impl's launcher on every probe; return {dtype: unit ids}."""
    from study.core import fp8
    from study.core.contract import DTYPES, validate
    from study.registry import ALL_AB
    scaling = getattr(impl, "scaling", None)        # an fp8 GEMM: K-major operands and scales of its mode
    layouts = ALL_AB if "col-major" in impl.layouts else ("rc",) if scaling else ("rr",)
    out: dict[str, list[str]] = {}
    for dtype in impl.dtypes:
        it, ot = DTYPES[dtype], DTYPES[impl.out_dtypes.get(dtype, dtype)]
        rec.calls = []
        for M, N, K, aligned, with_c in PROBES:
            for ab in layouts:
                a = _operand(M, K, it, ab[0] == "c", aligned)
                b = _operand(K, N, it, ab[1] == "c", aligned)
                c = _operand(M, N, ot, False, aligned)
                d = _operand(M, N, ot, False, aligned)
                if scaling:
                    sa, sb = fp8.unit_scales(scaling, M, N, K)
                    p = fp8.validate_scaled(impl.name, scaling, impl.dtypes, impl.out_dtypes, a, b, c, 2.0,
                                            3.0 if with_c else 0.0, d, sa, sb, allow_cpu=True)
                else:
                    p = validate(impl.name, impl.dtypes, impl.out_dtypes, a, b, c, 2.0, 3.0 if with_c else 0.0, d,
                                 allow_cpu=True, layouts=impl.layouts)
                impl.launch.bind(impl.name, p)()
        out[dtype] = sorted(set(rec.calls))
    return out


def compile_unit(unit: dict):
    """triton.compile of a recorded unit for sm_90a, in the environment its launcher compiled it in."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource
    fn, signature, constexprs, attrs, options = unit["_src"]
    source = (GluonASTSource if fn.is_gluon() else ASTSource)(fn, signature, constexprs, attrs)
    with environment(unit.get("env") or {}):
        return triton.compile(source, target=GPUTarget(*TARGET), options=options.__dict__)


def _compile(unit: dict) -> dict:
    try:
        k = compile_unit(unit)
    except Exception as e:  # noqa: BLE001 - a unit that does not compile is itself the finding
        return {"error": f"{type(e).__name__}: {str(e)[-400:]}"}
    return {"ptx": code_hash(k.asm["ptx"]), **facts(k.asm["ptx"], k.asm.get("ttir", "")),
            "registers": getattr(k, "n_regs", None), "spills": getattr(k, "n_spills", None)}


def _compile_cached(uid: str, unit: dict) -> dict:
    path = cache_dir() / f"{uid}.json"
    if path.exists():
        return json.loads(path.read_text())
    res = _compile(unit)
    if "error" not in res:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(res))
        os.replace(tmp, path)
    return res


_FORKED: dict = {}


def _compile_index(uid: str) -> tuple[str, dict]:
    return uid, _compile_cached(uid, _FORKED[uid])


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("measure.offline", __doc__)
    ap.add_argument("--impls", default="", help="comma list (default: every Triton and Gluon implementation)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "0"
    from study import registry
    rec = _Recorder()
    rec.install()
    names = [n for n in args.impls.split(",") if n]
    impls = [i for i in registry.implementations() if i.backend in ("triton", "gluon") and (not names or i.name in names)]
    probed, failures = {}, {}
    for impl in impls:
        try:
            probed[impl.name] = probe(impl, rec)
        except Exception as e:  # noqa: BLE001 - reported per implementation
            failures[impl.name] = f"{type(e).__name__}: {e}"
    wanted = sorted({u for per in probed.values() for ids in per.values() for u in ids})
    results: dict[str, dict] = {}
    todo = [u for u in wanted if not (cache_dir() / f"{u}.json").exists()]
    for u in wanted:
        if u not in todo:
            results[u] = _compile_cached(u, rec.units[u])
    if todo and args.jobs > 1:
        import multiprocessing as mp
        _FORKED.update({u: rec.units[u] for u in todo})
        with mp.get_context("fork").Pool(min(args.jobs, len(todo))) as pool:
            results.update(dict(pool.imap_unordered(_compile_index, todo)))
    else:
        results.update({u: _compile_cached(u, rec.units[u]) for u in todo})
    out = {}
    for name, per in probed.items():
        out[name] = {dtype: [{**{k: v for k, v in rec.units[u].items() if k != "_src"}, **results[u], "unit": u}
                             for u in ids] for dtype, ids in per.items()}
    for name, err in failures.items():
        out[name] = {"error": err}
    json.dump(out, sys.stdout, sort_keys=True)
    print()
    return 0


def compile_units(names: list[str] | None = None, timeout: int = 1800) -> dict[str, dict]:
    """{implementation: {dtype: [compiled unit, ...]} or {"error": ...}} from a subprocess (see main)."""
    env = {**os.environ, "TRITON_INTERPRET": "0",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "study.measure.offline"] + (["--impls", ",".join(names)] if names else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"offline Triton compilation failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())
