"""The instructions each tensor-core stage claims, read from its PTX, compiled for sm_90a on the CPU.

Each stage file names what Triton made of it (wgmma or mma.sync, ldmatrix, cp.async); these tests hold the
fp16 build (bf16 for Gluon 13) of Triton 11-12 and Gluon 10-13 to it without a GPU, at 4096^3-like alignment.  Stage 12's Triton form is
the sharpest case: it reaches mma.sync only through DISABLE_MMA_V3, set around its own compile by the module's
`mma_v2_only()`; without it the same source is stage 11's wgmma.  (Triton 13 takes TMA descriptors, which
this harness does not build.)  Compilation runs in a subprocess with TRITON_INTERPRET=0, as in
tests/test_triton_precision.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OPTIONS = ("num_warps", "num_stages")
PATTERNS = {"wgmma": "wgmma.mma_async", "mma.sync": "mma.sync.aligned", "ldmatrix": "ldmatrix.sync",
            "cp.async": "cp.async.cg", "tf32": ".tf32", "bf16": ".bf16"}
# module -> (dtype, extra constexprs) of the build to inspect, instructions that must and must not appear
EXPECT = {
    "triton_kernels.11_wmma_async": ("fp16", {}, {"wgmma", "cp.async"}, {"mma.sync"}),
    "triton_kernels.12_mma_ldmatrix": ("fp16", {}, {"mma.sync", "ldmatrix", "cp.async"}, {"wgmma"}),
    "triton_kernels.gluon.10_wmma": ("fp16", {}, {"mma.sync"}, {"wgmma", "cp.async"}),
    "triton_kernels.gluon.11_wmma_async": ("fp16", {}, {"mma.sync", "ldmatrix", "cp.async"}, {"wgmma"}),
    "triton_kernels.gluon.12_mma_ldmatrix": ("fp16", {}, {"mma.sync", "ldmatrix", "cp.async"}, {"wgmma"}),
    "triton_kernels.gluon.13_swizzle": ("bf16", {}, {"mma.sync", "ldmatrix", "cp.async", "bf16"}, {"wgmma"}),
}


def compile_all() -> dict[str, dict[str, bool]]:
    import contextlib
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    from triton_kernels._common import signature
    out = {}
    for name, (dtype, extra, _, _) in EXPECT.items():
        mod = importlib.import_module(name)
        consts = {k: v for k, v in {**mod.META, **extra}.items() if k not in OPTIONS}
        source_type = GluonASTSource if ".gluon." in name else ASTSource
        # What the JIT proves at 4096^3 on aligned tensors: pointers and (plain Triton, which specialises them)
        # the sizes and leading dimensions divisible by 16.
        aligned = {(i,): [["tt.divisibility", 16]] for i in range(4 if ".gluon." in name else 11)}
        src = source_type(mod.KERNEL, {**signature(dtype), **{k: "constexpr" for k in consts}},
                          constexprs={"HAS_C": True, **consts}, attrs=aligned)
        ctx = mod.mma_v2_only() if hasattr(mod, "mma_v2_only") else contextlib.nullcontext()
        with ctx:
            ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                 options={o: mod.META[o] for o in OPTIONS if o in mod.META}).asm["ptx"]
        out[name] = {k: p in ptx for k, p in PATTERNS.items()}
    return out


@pytest.fixture(scope="module")
def found() -> dict[str, dict[str, bool]]:
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, f"offline compilation failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", list(EXPECT))
def test_stage_emits_the_instructions_it_names(module, found):
    _, _, must, must_not = EXPECT[module]
    got = found[module]
    assert all(got[i] for i in must), f"{module}: expected {sorted(must)} in the PTX, found {got}"
    assert not any(got[i] for i in must_not), f"{module}: {sorted(must_not)} must not appear, found {got}"


def test_the_mma_v2_switch_is_scoped_to_its_launch():
    import importlib
    mod = importlib.import_module("triton_kernels.12_mma_ldmatrix")
    before = os.environ.get("DISABLE_MMA_V3")
    with mod.mma_v2_only():
        assert os.environ["DISABLE_MMA_V3"] == "1"
    assert os.environ.get("DISABLE_MMA_V3") == before


if __name__ == "__main__":
    print(json.dumps(compile_all()))
