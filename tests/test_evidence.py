"""CI has no GPU, so every implementation must carry proof that it, exactly as it runs now, passed on one.

reports/gpu-evidence.json is written by `pytest -m gpu --write-evidence ...` and `python -m study.sanitize` on the
GPU (tools/gpu_run.sh), never by hand.  Each record holds its implementation's key (study/measure/evidence.py): the
compiled code (per-entry cubin digests; every Triton and Gluon compile unit the launcher can launch), the launch
declaration and code, the precision labels, the GPU test harness, the toolchain and the compute capability.
Anything that changes what runs or how it is judged changes the key, and this file fails until the GPU run is
repeated; a comment or a docstring changes nothing.  The mutation tests at the end prove both directions on a
copy of the repository.

AWAITING_GPU and AWAITING_SANITIZER name, explicitly, what was committed without that proof.  Their tests are
strict xfails: the day the proof is committed they XPASS, which fails the run until the name is removed here.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import study
from study.measure import audit, evidence
from study import registry
from study.launch.build import NVCC_FLAGS, build, nvcc_version

EVIDENCE = evidence.EVIDENCE
AWAITING_GPU: set[str] = set()
AWAITING_SANITIZER: set[str] = set()


@pytest.fixture(scope="session")
def keys():
    return evidence.Keys()


@pytest.fixture(scope="session")
def expected():
    return evidence.expected_tests()


def _awaiting(awaiting: set[str], names: list[str], what: str) -> list:
    """`names` as pytest params, those in `awaiting` as strict xfails (they must fail until `what` lands)."""
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=f"{what} not committed yet"))
            if n in awaiting else n for n in names]


@pytest.mark.parametrize("name", _awaiting(AWAITING_GPU, [i.name for i in study.implementations()], "GPU evidence"))
def test_current_key_passed_on_a_gpu(name, keys, expected):
    key = keys.key(name)
    rec = evidence.passing(EVIDENCE, name, key, expected[name])
    assert rec is not None, (f"{name}: no passing GPU record of all {expected[name]} of its tests for key {key[:12]} "
                             f"({evidence.why_not(EVIDENCE, name, keys.parts(name))}); run tools/gpu_run.sh on "
                             f"an H100 or H200 and commit its evidence")
    assert rec["tests_run"] > 0 and rec["tests_passed"] == rec["tests_run"]
    assert rec["gpu"].startswith("NVIDIA ") and rec["capability"] == evidence.CAPABILITY, rec


@pytest.mark.parametrize("name", _awaiting(AWAITING_SANITIZER, [i.name for i in study.implementations("cuda")],
                                           "a clean compute-sanitizer record"))
def test_cuda_kernel_is_sanitizer_clean(name, keys):
    """compute-sanitizer memcheck, racecheck, synccheck and initcheck found nothing, in this kernel or anywhere
    else, on every call study.measure.sanitize makes (every entry: tests/test_coverage.py)."""
    rec = evidence.sanitizer_clean(EVIDENCE, name, keys.parts(name))
    assert rec is not None, (f"{name}: no clean compute-sanitizer record for code key {keys.code_key(name)[:12]} "
                             f"({evidence.why_not(EVIDENCE, name, evidence.code_parts(keys.parts(name)), 'sanitizer')}); run "
                             f"STUDY_STEPS=sanitize tools/gpu_run.sh on an H100 or H200")
    problems = audit.sanitizer_problems(rec)      # every tool's count 0, each reached the kernel, calls named
    assert not problems, problems


def test_toolchain_matches_the_evidence():
    """The keys hold nvcc's and Triton's versions: with another one installed, every key differs.  Say so
    plainly rather than through a wall of missing records."""
    now = evidence.toolchain()
    recorded = {(r.get("triton"), r.get("nvcc")) for r in evidence.load(EVIDENCE)}
    assert recorded, f"{EVIDENCE.name} holds no records"
    for triton_v, nvcc_v in recorded:
        assert triton_v == now["triton"], (f"the evidence was recorded with Triton {triton_v}, this machine has "
                                           f"{now['triton']}: install triton=={triton_v} (pyproject.toml pins it)")
        assert nvcc_v == now["nvcc"], (f"the evidence was recorded with nvcc {nvcc_v}, this machine has {now['nvcc']}: "
                                       f"the cubins differ, so no CUDA key can match; use CUDA {nvcc_v}")


def test_keys_differ_between_implementations(keys):
    names = [i.name for i in study.implementations()]
    assert len({keys.key(n) for n in names}) == len(names)


def test_awaiting_lists_name_real_implementations():
    known = {i.name for i in study.implementations()}
    assert AWAITING_GPU <= known and AWAITING_SANITIZER <= known


# --- the key follows what runs -------------------------------------------------------------------------------

MUL = "acc = fmaf(As[ty][k], Bs[k][tx], acc)"


def test_cubin_key_ignores_line_info_and_comments_but_not_code(tmp_path):
    from study.launch.cubin_key import entry_digests
    src = registry.CUDA_DIR / "03_smem_tiling.cu"
    text = src.read_text()
    for name, body in {"same.cu": text, "comment.cu": "// one more line\n// and another\n" + text,
                       "code.cu": text.replace(MUL, MUL.replace(", acc)", ", -acc)"), 1)}.items():
        (tmp_path / name).write_text(body)
    for h in registry.CUDA_DIR.glob("*.cuh"):
        shutil.copy(h, tmp_path / h.name)
    entry = "sgemm_smem_tiling"
    assert MUL in text, "the code mutation needs this line"

    def key(name, flags=NVCC_FLAGS):
        return entry_digests(build(tmp_path / name, flags=flags).path, [entry])[entry]
    base = key("same.cu")
    assert base == key("same.cu", tuple(f for f in NVCC_FLAGS if f != "-lineinfo")), "line info leaks into the key"
    assert base == key("comment.cu"), "a comment that moves every line changed the key"
    assert base != key("code.cu"), "a changed instruction kept the key"


def test_normalised_python_ignores_comments_and_docstrings():
    code = 'def f(x):\n    """Doc."""\n    return x + 1  # note\n'
    assert evidence.normalised(code) == evidence.normalised('# header\ndef f(x):\n\n    return x + 1\n')
    assert evidence.normalised(code) != evidence.normalised('def f(x):\n    return x + 2\n')


# --- mutation tests: each edit that changes what runs or how it is judged fails the check; comments do not ----

# name -> (file, old text, new text, the implementations that must fail).  The check is limited to the named
# implementations to keep CI short; tests/test_evidence.py on a mutated copy names all that it affects.
MUTATIONS = {
    "fast-math": ("study/launch/build.py", '"-lineinfo")', '"-lineinfo", "--use_fast_math")', ["cuda:01_naive"]),
    "relabel-nocorr": ("study/registry.py", '"-nocorr": ("fp16-inputs",', '"-nocorr": ("fp32",',
                       ["cuda:15_tcec-nocorr", "triton:15_tcec-nocorr", "gluon:15_tcec-nocorr"]),
    "tma-swizzle": ("study/launch/driver.py", "TensorMapSwizzle.SWIZZLE_128B", "TensorMapSwizzle.SWIZZLE_64B",
                    ["cuda:13_swizzle-tma"]),
    "scalar-type": ("study/launch/launchers.py", 'scalar: str = field(default="float", repr=False)',
                    'scalar: str = field(default="double", repr=False)', ["cuda:01_naive"]),
    "argument-names": ("study/launch/launchers.py", "C:ptr ldc:i64 D:ptr ldd:i64", "C:ptr ldd:i64 D:ptr ldc:i64",
                       ["cuda:01_naive", "cuda:15_tcec"]),
    "tcec-pass-rows": ("study/launch/launchers.py", "col_k: int = 32", "col_k: int = 64", ["cuda:15_tcec"]),
    "test-shapes": ("tests/helpers.py", "for n in (1, 7, 31, 33, 127, 257, 1000)", "for n in (1, 7, 31, 33, 127, 257)",
                    ["cuda:01_naive", "triton:01_naive", "cublas"]),
    "tolerance": ("study/core/schema.py", '"fp32": 2e-5,', '"fp32": 2e-4,', ["cuda:01_naive", "gluon:03_smem_tiling"]),
}
COMMENTS = {
    "shared-header": ("cuda_kernels/async_copy.cuh", "#pragma once", "#pragma once\n// a comment line",
                      ["cuda:07_cp_async"]),
    "stage-header": ("cuda_kernels/03_smem_tiling.cu", "// Stage 03", "// a comment line\n// Stage 03",
                     ["cuda:03_smem_tiling"]),
    "triton-docstring": ("triton_kernels/05_tiling_2d.py", '"""', '"""A docstring line.\n', ["triton:05_tiling_2d"]),
}


def _copy_of_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for d in ("study", "tests", "cuda_kernels", "triton_kernels"):
        shutil.copytree(registry.ROOT / d, root / d, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "reports").mkdir()
    shutil.copy(EVIDENCE, root / "reports" / EVIDENCE.name)
    shutil.copy(registry.ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def _check_in_copy(tmp_path, edit) -> tuple[int, str]:
    path, old, new, names = edit
    root = _copy_of_repo(tmp_path)
    text = (root / path).read_text()
    assert old in text, f"the mutation's anchor {old!r} is gone from {path}: update MUTATIONS"
    (root / path).write_text(text.replace(old, new, 1))
    env = {"PYTHONPATH": str(root), "PATH": os.environ["PATH"], "HOME": str(Path.home()),
           **{k: v for k, v in os.environ.items() if k.startswith(("GEMM_STUDY", "XDG", "NVCC", "TRITON_C"))}}
    proc = subprocess.run([sys.executable, "-m", "study.evidence", "--check", "--impls", ",".join(names)],
                          cwd=root, capture_output=True, text=True, env=env, timeout=900)
    return proc.returncode, proc.stdout + proc.stderr[-3000:]


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_change_to_what_runs_or_how_it_is_judged_voids_the_evidence(mutation, tmp_path):
    rc, out = _check_in_copy(tmp_path, MUTATIONS[mutation])
    assert rc == 1, f"{mutation}: the evidence check still passes:\n{out}"
    for name in MUTATIONS[mutation][3]:
        assert f"NOT PROVEN {name}:" in out, f"{mutation}: {name} is not named:\n{out}"


@pytest.mark.parametrize("edit", sorted(COMMENTS))
def test_a_comment_keeps_the_evidence(edit, tmp_path):
    rc, out = _check_in_copy(tmp_path, COMMENTS[edit])
    assert rc == 0 and "every implementation proven" in out, f"{edit}: a comment voided the evidence:\n{out}"
