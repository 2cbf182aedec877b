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


# Stage 10's type pairs: (module, dtype label, pointer types A/B and C/D, scalar type, constexprs) -> the MMA
# opcode's operand types that must appear.  Triton 10 passes alpha and beta as fp64; the constexprs are what
# its _launch derives from the pair.
def _pairs():
    import triton.language as tl
    t10 = dict(BLOCK_M=64, BLOCK_N=64, A_COL=False, B_COL=False)
    return {
        "triton:10 fp16": ("triton_kernels.10_wmma", ("fp16", "fp32", "fp64"),
                           dict(t10, ACC=tl.float32, PRECISION="ieee", BLOCK_K=32), ("wgmma", ".f32.f16.f16")),
        "triton:10 bf16": ("triton_kernels.10_wmma", ("bf16", "fp32", "fp64"),
                           dict(t10, ACC=tl.float32, PRECISION="ieee", BLOCK_K=32), ("wgmma", ".f32.bf16.bf16")),
        "triton:10 int8": ("triton_kernels.10_wmma", ("i8", "i32", "fp64"),
                           dict(t10, ACC=tl.int32, PRECISION="ieee", BLOCK_K=32), ("wgmma", ".s32.s8.s8")),
        "triton:10 fp64": ("triton_kernels.10_wmma", ("fp64", "fp64", "fp64"),
                           dict(t10, ACC=tl.float64, PRECISION="ieee", BLOCK_K=16), ("mma.sync", ".f64.f64.f64")),
        "triton:10-f16acc": ("triton_kernels.10_wmma", ("fp16", "fp16", "fp64"),
                             dict(t10, ACC=tl.float16, PRECISION="ieee", BLOCK_K=32), ("wgmma", ".f16.f16.f16")),
        "gluon:10 bf16": ("triton_kernels.gluon.10_wmma", ("bf16", "fp32", "fp32"), {}, ("mma.sync", ".f32.bf16.bf16")),
        "gluon:10 tf32": ("triton_kernels.gluon.10_wmma", ("fp32", "fp32", "fp32"), {}, ("mma.sync", ".f32.tf32.tf32")),
        "gluon:10 int8": ("triton_kernels.gluon.10_wmma", ("i8", "i32", "i32"), {}, ("mma.sync", ".s32.s8.s8")),
    }


def _mma_opcodes(ptx: str) -> list[str]:
    """The distinct MMA opcodes (mma.sync..., wgmma.mma_async...) of a PTX listing."""
    return sorted({ln.split()[0] for ln in ptx.splitlines() if ln.split() and "mma." in ln.split()[0]})


def _ptx(name: str, signature: dict, consts: dict, attrs: dict | None = None) -> str:
    """PTX of module `name`'s KERNEL for sm_90a; the module's launch options, and its mma_v2_only() switch
    around the compile if it has one (stage 12), as its launcher does."""
    import contextlib
    import importlib

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource
    mod = importlib.import_module(name)
    consts = {**{k: v for k, v in mod.META.items() if k not in OPTIONS}, **consts}
    source_type = GluonASTSource if ".gluon." in name else ASTSource
    src = source_type(mod.KERNEL, {**signature, **{k: "constexpr" for k in consts}},
                      constexprs={"HAS_C": True, **consts}, attrs=attrs)
    with mod.mma_v2_only() if hasattr(mod, "mma_v2_only") else contextlib.nullcontext():
        return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                              options={o: mod.META[o] for o in OPTIONS if o in mod.META}).asm["ptx"]


def compile_pairs() -> dict[str, list[str]]:
    out = {}
    for label, (name, (ab, cd, scalar), consts, _) in _pairs().items():
        sig = dict(A=f"*{ab}", B=f"*{ab}", C=f"*{cd}", D=f"*{cd}", M="i32", N="i32", K="i32", lda="i32",
                   ldb="i32", ldc="i32", ldd="i32", alpha=scalar, beta=scalar, HAS_C="constexpr")
        out[label] = _mma_opcodes(_ptx(name, sig, consts))
    return out


def compile_all() -> dict[str, dict[str, bool]]:
    from triton_kernels._common import signature
    out = {}
    for name, (dtype, extra, _, _) in EXPECT.items():
        # What the JIT proves at 4096^3 on aligned tensors: pointers and (plain Triton, which specialises them)
        # the sizes and leading dimensions divisible by 16.
        aligned = {(i,): [["tt.divisibility", 16]] for i in range(4 if ".gluon." in name else 11)}
        ptx = _ptx(name, signature(dtype), extra, aligned)
        out[name] = {k: p in ptx for k, p in PATTERNS.items()}
    return out


@pytest.fixture(scope="module")
def compiled() -> dict:
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.run([sys.executable, __file__], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, f"offline compilation failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def found(compiled) -> dict[str, dict[str, bool]]:
    return compiled["stages"]


@pytest.mark.parametrize("label", list(_pairs()))
def test_each_type_pair_multiplies_in_its_own_types(label, compiled):
    """Stage 10's pairs, named by the MMA opcode Triton emitted: the operand and accumulator types of the pair
    (an fp16-accumulated pair must accumulate in fp16; fp64 has no wgmma and takes mma.sync)."""
    family, types = _pairs()[label][3]
    ops = compiled["pairs"][label]
    assert any(op.startswith(family) and types in op for op in ops), f"{label}: MMA opcodes {ops}"


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
    print(json.dumps({"stages": compile_all(), "pairs": compile_pairs()}))
