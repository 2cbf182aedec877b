"""What Triton emitted for each Triton and Gluon implementation: the PTX of every compile unit its launcher can
launch, compiled for sm_90a on a machine without a GPU, summarised for the stage pages.

    python -m study.ptx [--impls NAME,...] [--out reports/ptx.json]

The compile units are study/measure/offline.py's (its probes and recorder, in a subprocess that compiles each
unit again with `triton.compile`: a hit in Triton's own cache once offline.py has compiled it).  Per
implementation, over all its units and dtypes (`summarise`, `merge`):

    mma             distinct MMA instructions, "wgmma.mma_async m64n128k16 f16 -> f32", "mma.sync m16n8k8 tf32 -> f32"
    fma, tf32_cvt   fp32 FMAs (fma.rn.f32); operands rounded to TF32 (cvt.rna.tf32)
    ldmatrix, stmatrix  their distinct forms ("x4", "x4.trans")
    cp_async        byte sizes of the cp.async copies (4, 8, 16)
    tma             "load" / "store": cp.async.bulk.tensor (the copy engine)
    mbarrier, setmaxnreg  whether the PTX uses them
    global_loads, global_stores  byte widths of ld.global / st.global (16 = ld.global.v4.b32)
    warps, shared_bytes  from the compiled kernel's metadata (registers are known only after ptxas on a GPU)

reports/ptx.json maps each implementation to {"key", "units", "summary", "sentence"}.  "key" is the "compiled"
part of its evidence key (study/measure/evidence.py): the digest of every unit's PTX, specialisation and options
and of Triton's version, which the GPU evidence records carry too.  The file is current when every key equals
the one computed now (tests/test_ptx_summary.py).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from study.core import cli
from study.core.paths import ROOT
from study.measure import offline

PTX_JSON = ROOT / "reports" / "ptx.json"
BACKENDS = ("triton", "gluon")


# --- one unit's PTX ------------------------------------------------------------------------------------------

def _widths(ptx: str, op: str) -> list[int]:
    """Byte widths of `op` (ld.global, st.global): a .v2/.v4 vector of .b32 is 8/16 bytes."""
    out = set()
    for mods in re.findall(rf"\b{re.escape(op)}((?:\.[\w:]+)*)", ptx):
        vec = re.search(r"\.v(\d)\b", mods)
        bits = re.search(r"\.[bfsu](\d+)\b", mods)
        if bits:
            out.add((int(vec[1]) if vec else 1) * int(bits[1]) // 8)
    return sorted(out)


def _mma(kind: str, shape: str, types: str) -> str:
    """'wgmma.mma_async m64n128k16 f16 -> f32' from an opcode's shape and its .D.A.B(.C) types."""
    t = re.findall(r"(f64|f32|f16|bf16|tf32|s32|s8|u8|e4m3|e5m2)", types)
    return f"{kind} {shape} {t[1]} -> {t[0]}" if len(t) > 1 else f"{kind} {shape}"


def summarise(ptx: str, num_warps: int | None = None, shared: int | None = None) -> dict:
    """The instruction kinds of one unit's PTX (see the module docstring)."""
    code = ptx.split(".section\t.debug")[0]
    mma = {_mma(kind, shape, types) for kind in ("wgmma.mma_async", "mma.sync") for shape, types in
           re.findall(rf"\b{re.escape(kind)}(?:\.\w+)*?\.(m\d+n\d+k\d+)((?:\.\w+)+)", code)}
    tma = {"load" if dst == "shared" else "store" for dst in re.findall(r"\bcp\.async\.bulk\.tensor\.\dd\.(\w+)", code)}
    return {
        "mma": sorted(mma),
        "fma": "fma.rn.f32" in code,
        "tf32_cvt": bool(re.search(r"\bcvt\.rna?\.tf32", code)),
        "ldmatrix": sorted(set(re.findall(r"\bldmatrix\.sync\.aligned\.m8n8\.([\w.]+?)\.shared", code))),
        "stmatrix": sorted(set(re.findall(r"\bstmatrix\.sync\.aligned\.m8n8\.([\w.]+?)\.shared", code))),
        "cp_async": sorted({int(n, 0) for n in re.findall(
            r"\bcp\.async\.c[ag]\.shared\.global\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)", code)}),
        "tma": sorted(tma),
        "mbarrier": bool(re.search(r"\bmbarrier\.", code)),
        "setmaxnreg": "setmaxnreg." in code,
        "global_loads": _widths(code, "ld.global"),
        "global_stores": _widths(code, "st.global"),
        "warps": [num_warps] if num_warps else [],
        "shared_bytes": [shared] if shared is not None else [],
    }


def merge(summaries: list[dict]) -> dict:
    """The union of several units' summaries: lists merged (shared_bytes as [min, max]), flags or-ed."""
    out: dict = {}
    for s in summaries:
        for k, v in s.items():
            out[k] = sorted(set(out.get(k, [])) | set(v)) if isinstance(v, list) else out.get(k, False) or v
    if out.get("shared_bytes"):
        out["shared_bytes"] = [out["shared_bytes"][0], out["shared_bytes"][-1]]
    return out


def _sizes(xs: list[int]) -> str:
    return "/".join(map(str, xs)) + "-byte"


def sentence(s: dict) -> str:
    """One line a reader can take in: the MMA (or FMA), then how operands move, then the launch shape."""
    parts = ["; ".join(s["mma"]) if s["mma"] else ("no MMA: fp32 FMA (fma.rn.f32)" if s["fma"] else "no MMA")]
    if s["tf32_cvt"]:
        parts.append("operands rounded to TF32 (cvt.rna.tf32)")
    parts += [f"{op} ({', '.join(s[op])})" for op in ("ldmatrix", "stmatrix") if s[op]]
    if s["cp_async"]:
        parts.append(f"cp.async ({_sizes(s['cp_async'])})")
    if s["tma"]:
        parts.append(f"TMA {' and '.join(t + 's' for t in s['tma'])} (cp.async.bulk.tensor)")
    if s["mbarrier"]:
        parts.append("mbarriers")
    if s["setmaxnreg"]:
        parts.append("setmaxnreg (warp-specialised register split)")
    if s["global_loads"]:
        parts.append(f"global loads {_sizes(s['global_loads'])}")
    if s["warps"]:
        parts.append(f"{'/'.join(map(str, s['warps']))} warp{'s' if s['warps'] != [1] else ''}")
    if s["shared_bytes"]:
        top = s["shared_bytes"][-1]
        parts.append(f"shared memory up to {top / 1024:g} KiB" if top else "no shared memory")
    return ", ".join(parts)


# --- the worker: every unit of the named implementations, compiled and summarised ------------------------------

_UNITS: dict = {}


def _compile_summary(uid: str) -> tuple[str, dict]:
    k = offline.compile_unit(_UNITS[uid])
    return uid, summarise(k.asm["ptx"], k.metadata.num_warps, k.metadata.shared)


def _worker(names: list[str], jobs: int) -> dict[str, dict]:
    """{unit id: summary} for every unit the named implementations' launchers can launch."""
    from study import registry
    rec = offline._Recorder()
    rec.install()
    for name in names:
        offline.probe(registry.get(name), rec)
    _UNITS.update(rec.units)
    if jobs > 1 and len(_UNITS) > 1:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(min(jobs, len(_UNITS))) as pool:
            return dict(pool.imap_unordered(_compile_summary, sorted(_UNITS)))
    return dict(map(_compile_summary, sorted(_UNITS)))


def unit_summaries(names: list[str], jobs: int = os.cpu_count() or 1) -> dict[str, dict]:
    """_worker in a subprocess (the recorder patches Triton)."""
    env = {**os.environ, "TRITON_INTERPRET": "0",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "study.measure.ptx_summary", "--worker", "--impls", ",".join(names),
           "--jobs", str(jobs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"offline Triton compilation failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --- reports/ptx.json ----------------------------------------------------------------------------------------

def impl_names() -> list[str]:
    from study import registry
    return [i.name for i in registry.implementations() if i.backend in BACKENDS]


def current_keys(names: list[str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """({implementation: the "compiled" part of its evidence key}, {implementation: its unit ids})."""
    from study import registry
    from study.measure.evidence import Keys
    keys = Keys([registry.get(n) for n in names])
    units = {n: sorted({u["unit"] for us in keys.units()[n].values() for u in us}) for n in names}
    return {n: keys.parts(n)["compiled"] for n in names}, units


def build(names: list[str], jobs: int = os.cpu_count() or 1) -> dict[str, dict]:
    keys, units = current_keys(names)
    summaries = unit_summaries(names, jobs)
    out = {}
    for n in names:
        s = merge([summaries[u] for u in units[n]])
        out[n] = {"key": keys[n], "units": len(units[n]), "summary": s, "sentence": sentence(s)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("ptx", __doc__)
    ap.add_argument("--impls", default="", help="comma list (default: every Triton and Gluon implementation)")
    ap.add_argument("--out", type=Path, default=PTX_JSON, help="where to write (default: reports/ptx.json); "
                    "with --impls, its other entries are kept")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    names = [n for n in args.impls.split(",") if n] or impl_names()
    if args.worker:
        os.environ["TRITON_INTERPRET"] = "0"
        print(json.dumps(_worker(names, args.jobs)))
        return 0
    t0 = time.monotonic()
    out = json.loads(args.out.read_text()) if args.impls and args.out.exists() else {}
    out.update(build(names, args.jobs))
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{args.out}: {len(names)} implementation(s) in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
