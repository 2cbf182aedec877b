"""The registry is the public API: stages pair up across backends, precisions are named, files open with
the stage header the study promises."""
from __future__ import annotations

import re

import pytest

import study
from study import registry
from study.core.schema import TOLERANCE

CUDA = sorted(p.stem for p in registry.CUDA_DIR.glob("[0-9][0-9]_*.cu"))
TRITON = sorted(p.stem for p in registry.TRITON_DIR.glob("[0-9][0-9]_*.py"))
GLUON = sorted(p.stem for p in (registry.TRITON_DIR / "gluon").glob("[0-9][0-9]_*.py"))
GLUON_FROM = "03"   # the Gluon column starts where shared memory starts


def test_every_cuda_stage_has_a_triton_counterpart():
    assert CUDA, "no CUDA stages found"
    assert CUDA == TRITON, f"unpaired stage files: cuda-only {set(CUDA) - set(TRITON)}, triton-only {set(TRITON) - set(CUDA)}"


def test_every_stage_from_03_has_a_gluon_twin():
    assert GLUON == [k for k in CUDA if k >= GLUON_FROM], \
        f"Gluon stages {GLUON} should be exactly the CUDA stages from {GLUON_FROM} on"


def test_every_stage_file_is_registered_for_every_backend():
    names = {i.name for i in study.implementations()}
    for key in CUDA:
        assert f"cuda:{key}" in names and f"triton:{key}" in names, key
    for key in GLUON:
        assert f"gluon:{key}" in names, key
    assert [s.key for s in study.stages()] == CUDA


@pytest.mark.parametrize("path", [registry.CUDA_DIR / f"{k}.cu" for k in CUDA] + [registry.TRITON_DIR / f"{k}.py" for k in TRITON]
                         + [registry.TRITON_DIR / "gluon" / f"{k}.py" for k in GLUON],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_stage_file_opens_with_its_story(path):
    head = path.read_text()[:2500]
    for word in ("Technique", "Reproduces", "Changed", "faster|slow"):
        assert re.search(word, head), f"{path.name} header lacks '{word}'"
    assert re.search(r"seed 00\d", head), f"{path.name} does not cite its seed"


def test_baselines_are_declared():
    assert {"cublas", "cublas:tf32", "triton:tuned", "triton:tuned-tf32"} <= {i.name for i in study.implementations()}
    assert study.baseline_for("fp32", "fp32").name == "cublas"
    assert study.baseline_for("fp32", "tf32").name == "cublas:tf32"
    assert study.baseline_for("bf16", "bf16/fp32acc").name == "cublas"


def test_precisions_are_named_and_have_tolerances():
    for impl in study.implementations():
        for dtype, precision in impl.dtypes.items():
            assert precision in TOLERANCE, (impl.name, precision)
            if "tf32" in impl.name:
                assert precision.startswith("tf32"), f"{impl.name} computes in TF32 and must say so"


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="cuda:01_naive"):
        study.get("nope")


def test_vector_kernels_fall_back_on_unaligned_operands():
    """A 16-byte path runs only when every operand's start and row pitch are 16-byte multiples."""
    import torch

    from study.core.contract import validate
    launch = study.get("cuda:09_best_simt").launch.choices[0]
    assert launch.unaligned_entry
    a, b = torch.randn(64, 32), torch.randn(32, 48)
    aligned = validate("t", {"fp32": "fp32"}, {}, a, b, allow_cpu=True)
    assert launch.entry_for(aligned) == launch.entry
    odd_rows = torch.randn(64, 33)[:, :32]                          # row pitch 132 bytes
    shifted = torch.randn(64 * 32 + 1)[1:].view(64, 32)             # starts 4 bytes in
    for bad_a in (odd_rows, shifted):
        p = validate("t", {"fp32": "fp32"}, {}, bad_a, b, allow_cpu=True)
        assert launch.entry_for(p) == launch.unaligned_entry


def test_best_simt_picks_the_largest_tile_that_fills_the_gpu():
    d = study.get("cuda:09_best_simt").launch
    tiles = [c.tile for c in d.choices]
    assert tiles == sorted(tiles, reverse=True), "choices must run largest first"
    assert d.pick(4096, 4096, 132).tile == tiles[0]
    assert d.pick(2048, 2048, 132).tile == tiles[1]      # 128 blocks of 128x256 would leave 4 SMs idle
    assert d.pick(7, 5, 132).tile == tiles[-1]           # nothing fills the GPU: the smallest tile


def test_a_stage_that_imports_another_counts_its_file_among_its_sources():
    """The evidence key holds the host code of an implementation's sources: a Triton or Gluon stage that runs
    code from another stage's file must list that file, or a change to its launcher would keep old evidence."""
    import re

    from study.registry import ROOT
    for impl in study.implementations():
        if impl.backend not in ("triton", "gluon"):
            continue
        text = impl.sources[0].read_text()
        for module in re.findall(r'import_module\("triton_kernels\.([\w.]+)"\)', text):
            path = ROOT / "triton_kernels" / (module.replace(".", "/") + ".py")
            assert path in impl.sources, f"{impl.name} imports {module} but its sources omit {path.name}"
