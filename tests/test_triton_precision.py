"""Name the precision: compile every Triton and Gluon kernel for sm_90 on the CPU (no GPU needed) and read what
Triton made of it.

The first GPU run of this study caught triton:03_smem_tiling, then written with no tl.dot at all, at relerr
7.7e-4: Triton's combine pass had turned its broadcast-multiply-reduce into tt.dot, and that dot took the
default fp32 input precision, TF32 (mma.sync ... .tf32 in the PTX).  These tests make that visible without
a GPU: a kernel labelled "fp32" must contain no TF32 dot and no tensor-core instruction, and a kernel
labelled "tf32" must really issue TF32 MMAs.

Triton decides at import whether kernels are interpreted, and the CPU test session interprets them, so the
compilation runs in a subprocess: this file, run as a script with TRITON_INTERPRET=0.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = ("num_warps", "num_stages")
# Stage 14's fp16 splits of fp32 inputs (study/schema.py): their PTX must multiply fp16, never TF32.
FP16_SPLITS = ("fp16x3-tcec", "fp16x3-markidis", "fp16-inputs")


def inspect_all() -> list[dict]:
    """For each Triton implementation's fp32 entry and its first two compile variants: what came out."""
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    import study
    from triton_kernels._common import signature

    out = []
    for impl in _python_impls(study):
        mod = importlib.import_module(f"triton_kernels.{impl.launch.module}")
        metas = mod.variants(impl.launch.fn) if hasattr(mod, "variants") else [mod.META]
        source_type = GluonASTSource if impl.backend == "gluon" else ASTSource
        for meta in metas[:2]:   # precision does not depend on tile shapes; two variants suffice
            consts = {k: v for k, v in meta.items() if k not in OPTIONS}
            src = source_type(mod.KERNEL, {**signature("fp32"), **{k: "constexpr" for k in consts}},
                              constexprs={"HAS_C": True, **consts})
            options = {**{o: v for o, v in meta.items() if o in OPTIONS}, **getattr(mod, "OPTIONS", {})}
            k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
            # Plain Triton's tt.dot carries the input precision it will be lowered with.  Gluon has no TTIR,
            # and its gl.dot_fma prints the default inputPrecision (tf32) although the FMA lowering never
            # reads it, so Gluon is judged on its PTX alone.
            dots = [ln.strip()[:200] for ln in k.asm["ttir"].splitlines() if "tt.dot" in ln] if impl.backend == "triton" else []
            ptx = k.asm["ptx"]
            out.append({"impl": impl.name, "precision": impl.precision("fp32"), "meta": str(meta), "dots": dots,
                        "mmas": sorted(set(re.findall(r"\b\w*mma[\w.]*", ptx))),
                        "tf32_cvt": "cvt.rna.tf32" in ptx,
                        "fp32_fma": "fma.rn.f32" in ptx})
        out[-1]["unit_args"] = _compile_with_unit_args(mod, metas[0], source_type)
    return out


UNIT_ARGS = ("M", "N", "K", "lda", "ldb", "ldc", "ldd")


def _compile_with_unit_args(mod, meta, source_type) -> str:
    """The JIT turns an integer argument equal to 1 into a constexpr (a GEMV shape has N == ldb == 1), and
    a kernel that calls a tensor method on it (ldb.to(...)) then fails to compile, on the GPU only.  Compile
    that specialisation here (sparing the arguments the kernel marks do_not_specialize, as the JIT does);
    return the error, or '' if it compiled."""
    import triton
    from triton.backends.compiler import GPUTarget

    from triton_kernels._common import signature

    consts = {k: v for k, v in meta.items() if k not in OPTIONS}
    if "LD4" in consts:   # Gluon launchers promise ld % 4 == 0 through LD4, and never do so for ld == 1
        consts["LD4"] = False
    ones = [p.name for p in mod.KERNEL.params if p.name in UNIT_ARGS and not p.do_not_specialize]
    sig = {**signature("fp32"), **{k: "constexpr" for k in (*consts, *ones)}}
    src = source_type(mod.KERNEL, sig, constexprs={"HAS_C": True, **consts, **{a: 1 for a in ones}})
    options = {**{o: v for o, v in meta.items() if o in OPTIONS}, **getattr(mod, "OPTIONS", {})}
    try:
        triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    except Exception as e:   # noqa: BLE001 - any compile failure is the finding
        return f"{type(e).__name__}: {str(e)[-300:]}"
    return ""


@pytest.fixture(scope="module")
def inspected() -> dict[str, list[dict]]:
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, f"offline Triton compilation failed:\n{proc.stderr[-4000:]}"
    by_impl: dict[str, list[dict]] = {}
    for rec in json.loads(proc.stdout.strip().splitlines()[-1]):
        by_impl.setdefault(rec["impl"], []).append(rec)
    return by_impl


def _python_impls(study):
    """Every Triton and Gluon implementation that takes fp32 inputs."""
    return [i for i in study.implementations(dtype="fp32") if i.backend in ("triton", "gluon")]


def _fp32_impls():
    import study
    return [i.name for i in _python_impls(study)]


@pytest.mark.parametrize("impl_name", _fp32_impls())
def test_fp32_label_matches_the_instructions(impl_name, inspected):
    recs = inspected.get(impl_name)
    assert recs, f"{impl_name} was not compiled"
    for r in recs:
        if r["precision"] == "fp32":
            assert not any("tf32" in d for d in r["dots"]), f"{impl_name} is labelled fp32 but Triton emitted {r['dots']}"
            assert not r["mmas"], f"{impl_name} is labelled fp32 but its PTX has tensor-core ops {r['mmas'][:3]}"
            assert not r["tf32_cvt"], f"{impl_name} is labelled fp32 but its PTX rounds operands to TF32"
            assert r["fp32_fma"], f"{impl_name}: no fp32 FMA in the PTX"
        elif r["precision"] in ("tf32", "tf32x3"):
            assert any("tf32" in m for m in r["mmas"]), f"{impl_name} is labelled tf32 but issues no TF32 MMA: {r['mmas']}"
        elif r["precision"] in FP16_SPLITS:
            assert any("f16" in m and "bf16" not in m for m in r["mmas"]), \
                f"{impl_name} is labelled {r['precision']} but issues no fp16 MMA: {r['mmas']}"
            assert not any("tf32" in m for m in r["mmas"]), f"{impl_name} issues TF32 MMAs: {r['mmas']}"
        else:
            pytest.fail(f"{impl_name}: unexpected fp32 precision label {r['precision']}")


@pytest.mark.parametrize("impl_name", _fp32_impls())
def test_compiles_when_the_jit_specialises_ones(impl_name, inspected):
    errors = [r["unit_args"] for r in inspected.get(impl_name, []) if r.get("unit_args")]
    assert not errors, f"{impl_name} fails to compile with M = N = K = ld* = 1 (a GEMV): {errors[0]}"


if __name__ == "__main__":
    print(json.dumps(inspect_all()))
