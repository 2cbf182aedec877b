"""What Triton emitted, summarised (study/measure/ptx_summary.py): the summariser names the instructions a PTX
listing holds, and the committed reports/ptx.json covers every Triton and Gluon implementation at its current
compiled code (the "compiled" part of its evidence key)."""
from __future__ import annotations

import copy
import json

import pytest

from study.measure import audit, ptx_summary

LISTING = """
	@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
	ld.global.b16 { %rs1 }, [ %rd2 + 0 ];
	cp.async.cg.shared.global [ %r5 + 0 ], [ %rd3 + 0 ], 0x10, %r6;
	@%p2 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r7], [%rd4, {%r8, %r9}], [%r10];
	mbarrier.try_wait.parity.shared.b64 %p3, [%r10], %r11;
	ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 { %r12, %r13, %r14, %r15 }, [ %r16 + 0 ];
	wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1}, %rd5, %rd6, %p4, 1, 1, 0, 1;
	mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 { %r17 }, { %r18 }, { %r19 }, { %r20 };
"""


def test_summarise_names_each_instruction_kind():
    s = ptx_summary.summarise(LISTING, num_warps=8, shared=65536)
    assert s["mma"] == ["mma.sync m16n8k32 s8 -> s32", "wgmma.mma_async m64n128k16 bf16 -> f32"]
    assert s["ldmatrix"] == ["x4.trans"] and s["stmatrix"] == []
    assert s["cp_async"] == [16] and s["tma"] == ["load"] and s["mbarrier"]
    assert s["global_loads"] == [2, 16] and s["global_stores"] == []
    assert not s["fma"] and not s["tf32_cvt"] and not s["setmaxnreg"]
    merged = ptx_summary.merge([s, ptx_summary.summarise("fma.rn.f32 %f1, %f2, %f3, %f4;", 4, 0)])
    assert merged["warps"] == [4, 8] and merged["shared_bytes"] == [0, 65536] and merged["fma"]
    assert ptx_summary.sentence(merged).startswith("mma.sync m16n8k32 s8 -> s32; wgmma.mma_async m64n128k16")


def test_compiled_ptx_of_a_tf32_and_an_fp32_simt_form():
    """Compiled for sm_90a on the CPU: the TF32 split of stage 15 multiplies TF32 on the tensor cores and rounds
    its operands to TF32; the naive fp32 stage has no MMA at all, only fp32 FMAs."""
    tf32, simt = "gluon:15_tcec-tf32", "triton:01_naive"
    got = ptx_summary.build([tf32, simt])
    assert got[tf32]["summary"]["mma"] and all("tf32 -> f32" in m for m in got[tf32]["summary"]["mma"])
    assert got[tf32]["summary"]["tf32_cvt"]
    assert got[simt]["summary"]["mma"] == [] and got[simt]["summary"]["fma"]
    assert got[simt]["sentence"].startswith("no MMA: fp32 FMA")
    assert all(e["units"] > 0 and len(e["key"]) == 64 for e in got.values())


def test_committed_ptx_json_is_current():
    """Every Triton and Gluon implementation has an entry, made of the compile units it has now."""
    committed = json.loads(ptx_summary.PTX_JSON.read_text())
    names = ptx_summary.impl_names()
    assert sorted(committed) == sorted(names), "reports/ptx.json does not list the registry's implementations"
    keys, units = ptx_summary.current_keys(names)
    stale = [n for n in names if committed[n]["key"] != keys[n] or committed[n]["units"] != len(units[n])]
    assert not stale, f"reports/ptx.json is stale for {stale}: run python -m study.ptx and commit it"


@pytest.fixture(scope="module")
def derived():
    """Every Triton and Gluon implementation's entry, compiled now (Triton's cache makes a second run quick)."""
    return ptx_summary.build(ptx_summary.impl_names())


def test_committed_summaries_and_sentences_are_what_the_units_give(derived):
    """The summary and the sentence that the stage pages and findings publish, re-derived from the compiled
    units: ptx.json cannot say what the code does not emit."""
    problems = audit.ptx_problems(json.loads(ptx_summary.PTX_JSON.read_text()), derived)
    assert not problems, "reports/ptx.json: python -m study.ptx and commit it:\n" + "\n".join(problems[:10])


def test_a_summary_copied_onto_another_implementation_fails(derived):
    """Mutation c: triton:01's summary ("no MMA: fp32 FMA ...") copied onto triton:11_wmma_async."""
    committed = copy.deepcopy(json.loads(ptx_summary.PTX_JSON.read_text()))
    for field in ("summary", "sentence"):
        committed["triton:11_wmma_async"][field] = committed["triton:01_naive"][field]
    problems = audit.ptx_problems(committed, derived)
    assert any(p.startswith("triton:11_wmma_async: ptx.json's summary") for p in problems), problems
    assert any(p.startswith("triton:11_wmma_async: ptx.json's sentence") for p in problems), problems
