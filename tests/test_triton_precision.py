"""Name the precision: every Triton and Gluon implementation, every dtype, every compile unit its launcher can
launch (every autotuner config, aligned and misaligned operands, 1x1x1), compiled for sm_90a on the CPU, and
held to its label by what the PTX does.

The first GPU run of this study caught triton:03_smem_tiling, then written with no tl.dot at all, at relerr
7.7e-4: Triton's combine pass had turned its broadcast-multiply-reduce into tt.dot, and that dot took the
default fp32 input precision, TF32 (mma.sync ... .tf32 in the PTX).  These tests make that visible without a
GPU.  The units come from study/measure/offline.py (one subprocess; the same compilation the evidence key holds).
"""
from __future__ import annotations

import json
import re

import pytest

import study
from study.measure.offline import compile_units


@pytest.fixture(scope="module")
def units() -> dict:
    return compile_units()


def _cases():
    return [pytest.param(i.name, d, id=f"{i.name}-{d}") for i in study.implementations()
            if i.backend in ("triton", "gluon") for d in i.dtypes]


def _mma_types(m: str) -> tuple[str, list[str]]:
    """(accumulator type, operand types) of an mma.sync (.D.A.B.C) or wgmma.mma_async (.D.A.B) mnemonic; a C
    type other than D's counts as a wrong operand."""
    types = re.findall(r"\.(f64|f32|f16|bf16|tf32|s32|s8|u8|e4m3|e5m2)\b", m)
    if not types:
        return "", []
    return types[0], types[1:3] + [t for t in types[3:] if t != types[0]]


# Stage 15's fp16 splits of fp32 inputs: their PTX must multiply fp16, never TF32.
FP16_SPLITS = ("fp16x3-tcec", "fp16x3-markidis", "fp16-inputs")
# Half-precision labels: the operand type every MMA must take, and its accumulator.
HALF = {"fp16/fp32acc": ("f16", "f32"), "bf16/fp32acc": ("bf16", "f32"), "fp16/fp16acc": ("f16", "f16"),
        "int8/int32acc": ("s8", "s32"), "uint8/int32acc": ("u8", "s32"), "fp64": ("f64", "f64"),
        # stage 16: e4m3 wgmma into f32 (whether each chunk is promoted: test_fp8_promotion, on the GPU)
        **{f"fp8e4m3-{s}/fp32acc": ("e4m3", "f32") for s in ("tensor", "row", "block")},
        "fp8e4m3-tensor/tcacc": ("e4m3", "f32")}


def judge_unit(precision: str, u: dict) -> str:
    """'' if the unit's instructions match `precision`, else what is wrong."""
    mmas = [m for m in u["mmas"] if ".mma" in m or m.startswith("mma.")]
    kinds = [_mma_types(m) for m in mmas]
    if precision == "fp32":
        if any("tf32" in d for d in u["dots"]):
            return f"Triton emitted a TF32 dot: {u['dots']}"
        if mmas:
            return f"tensor-core ops {mmas[:3]}"
        if u["tf32_cvt"]:
            return "operands rounded to TF32"
        if not u["fp32_fma"]:
            return "no fp32 FMA in the PTX"
    elif precision in ("tf32", "tf32x3", "tf32x3-tcacc"):
        if not any("tf32" in ops for _, ops in kinds):
            return f"no TF32 MMA: {mmas}"
    elif precision in FP16_SPLITS:
        if not any("f16" in ops for _, ops in kinds) or any("tf32" in ops for _, ops in kinds):
            return f"not fp16 MMAs: {mmas}"
    elif precision in HALF:
        operand, acc = HALF[precision]
        if not kinds:
            return f"no MMA for {precision}"
        wrong = [m for m, (a, ops) in zip(mmas, kinds) if a != acc or any(o != operand for o in ops)]
        if wrong:
            return f"MMAs {wrong[:2]} are not {operand} operands into {acc}"
    else:
        return f"no rule for precision {precision!r}"
    return ""


@pytest.mark.parametrize("impl_name,dtype", _cases())
def test_every_unit_compiles_and_matches_its_label(impl_name, dtype, units):
    per = units.get(impl_name)
    assert per is not None and "error" not in per, f"{impl_name}: probing its launcher failed: {per}"
    us = per.get(dtype)
    assert us, f"{impl_name} {dtype}: the launcher launched nothing"
    precision = study.get(impl_name).precision(dtype)
    products = 0
    for u in us:
        assert not u.get("error"), f"{impl_name} {dtype} {u['kernel']} {u['constexprs']}: does not compile: {u['error']}"
        if precision != "fp32" and not u["dots"] and not u["mmas"]:
            continue   # a pass that multiplies nothing (stage 15's line maxima): the label is about the products
        products += 1
        why = judge_unit(precision, u)
        assert not why, f"{impl_name} {dtype} is labelled {precision}, but {u['kernel']} {u['constexprs']}: {why}"
    assert products, f"{impl_name} {dtype}: no unit computes the product"


def test_units_cover_every_autotuner_config_and_both_alignments(units):
    """triton:tuned autotunes 7 configs; each must be compiled, for aligned and misaligned operands."""
    from importlib import import_module
    configs = import_module("triton_kernels.baseline_tuned").CONFIGS
    us = units["triton:tuned"]["fp16"]
    aligned = ["tt.divisibility" in str(u["attrs"]) for u in us]
    assert set(aligned) == {True, False}, "both aligned and misaligned specialisations must be compiled"
    misaligned = {json.dumps([u["constexprs"], u["options"]], sort_keys=True) for u, al in zip(us, aligned) if not al}
    assert len(misaligned) == len(configs), f"{len(misaligned)} configs compiled misaligned, {len(configs)} declared"


def test_the_check_catches_tf32_posing_as_fp32():
    unit = {"mmas": ["wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"], "dots": [], "tf32_cvt": True,
            "fp32_fma": True}
    assert judge_unit("fp32", unit)
    assert not judge_unit("tf32", unit)
    f16acc = {"mmas": ["mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"], "dots": [], "tf32_cvt": False,
              "fp32_fma": False}
    assert judge_unit("fp16/fp32acc", f16acc) and not judge_unit("fp16/fp16acc", f16acc)
