"""Every CUDA kernel compiles for sm_90a (no GPU needed), without register spills unless it declares them,
and the cubin cache keys on what changes the binary."""
from __future__ import annotations

import os
import shutil

import pytest

from study.launch import build as cuda_build

from study import registry
from study.core.paths import BENCH_DIR, CUDA_DIR

if not shutil.which("nvcc") and not os.environ.get("NVCC"):
    if os.environ.get("CI"):
        raise RuntimeError("CI must compile the kernels, but nvcc is not on PATH")
    pytest.skip("nvcc not installed", allow_module_level=True)

SOURCES = registry.cuda_sources()


@pytest.mark.parametrize("source,entry,spills_ok", SOURCES, ids=[f"{s.name}:{e}" for s, e, _ in SOURCES])
def test_compiles_for_sm90a_without_spills(source, entry, spills_ok):
    cubin = cuda_build.build(source, "90a")
    assert cubin.path.stat().st_size > 0
    r = cubin.resources[entry]
    assert 0 < r.registers <= 255
    assert spills_ok or r.spills == 0, f"{entry} spills {r.spills} bytes; declare spills_ok=True if deliberate"
    assert r.stack_bytes == 0 or spills_ok, f"{entry} uses a {r.stack_bytes}-byte stack frame (local memory)"


def test_cache_hits_and_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMM_STUDY_CACHE", str(tmp_path))
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n')
    first = cuda_build.build(src)
    mtime = first.path.stat().st_mtime_ns
    assert cuda_build.build(src).path == first.path and first.path.stat().st_mtime_ns == mtime
    src.write_text('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 2.0f; }\n')
    assert cuda_build.build(src).path != first.path, "a changed source must not hit the old cubin"
    assert cuda_build.build(src, "80").path != cuda_build.build(src, "90a").path


def test_parse_ptxas():
    log = """ptxas info    : Compiling entry function 'foo' for 'sm_90a'
ptxas info    : Function properties for foo
    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, 400 bytes cmem[0]
ptxas info    : Compiling entry function 'bar' for 'sm_90a'
ptxas info    : Function properties for bar
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 0 barriers, 380 bytes cmem[0]
"""
    r = cuda_build.parse_ptxas(log)
    assert (r["foo"].registers, r["foo"].smem_bytes, r["foo"].spills, r["foo"].stack_bytes) == (255, 8192, 20, 16)
    assert (r["bar"].registers, r["bar"].smem_bytes, r["bar"].spills) == (40, 0, 0)


LAUNCHES = sorted({(c.source, e, c) for i in registry.implementations("cuda") for c in registry.cuda_launches(i)
                   for e in c.entries()}, key=lambda x: (x[0], x[1], repr(x[2])))


@pytest.mark.parametrize("source,entry,launch", LAUNCHES, ids=[f"{s}:{e}" for s, e, _ in LAUNCHES])
def test_launch_records_declare_each_entrys_parameters(source, entry, launch):
    """What a launcher passes, by name and C type, is what the compiled entry takes: count and size of every
    parameter, from the cubin (on a GPU the driver checks the same again when it loads the kernel)."""
    from study.launch import driver
    from study.launch.cubin_key import param_sizes
    driver.check_params(source, entry, launch.params(entry), param_sizes(cuda_build.build(CUDA_DIR / source, flags=launch.flags()).path, entry))


def test_a_wrong_parameter_list_is_refused_before_launch():
    from study.launch import driver
    from study.launch.cubin_key import param_sizes
    launch = registry.get("cuda:01_naive").launch
    sizes = param_sizes(cuda_build.build(CUDA_DIR / launch.source).path, launch.entry)
    driver.check_params(launch.source, launch.entry, launch.params(), sizes)
    for wrong in (launch.params()[:-1], launch.params()[:3] + driver.params("alpha:double") + launch.params()[4:]):
        with pytest.raises(driver.CudaLaunchError, match="parameters"):
            driver.check_params(launch.source, launch.entry, wrong, sizes)


@pytest.mark.parametrize("source,entry,launch", LAUNCHES, ids=[f"{s}:{e}" for s, e, _ in LAUNCHES])
def test_launch_geometry_is_what_the_kernel_exports(source, entry, launch):
    """Tile, block size and dynamic shared memory come from the kernel (STUDY_ENTRY_FACTS): the record's tile
    and block must equal what the entry exports, and its shared-memory size is read, never restated."""
    from study.launch import driver
    exports = cuda_build.build(CUDA_DIR / source, flags=launch.flags()).exports
    driver.check_exports(source, exports, launch.expected_facts(entry))
    assert 0 <= launch.dynamic_smem(entry) == exports[f"{entry}_smem"] <= 227 * 1024


def test_bench_kernels_declare_their_parameters():
    from study.launch import driver
    from study.launch.cubin_key import param_sizes
    from study.measure.ceilings import BENCH_PARAMS
    bench = {entry: source for source, entry, _ in SOURCES if source.parent == BENCH_DIR}
    assert set(BENCH_PARAMS) <= set(bench), "a micro-benchmark entry the build does not compile"
    for entry, spec in BENCH_PARAMS.items():
        driver.check_params(bench[entry], entry, driver.params(spec), param_sizes(cuda_build.build(bench[entry]).path, entry))


def test_build_many_builds_side_by_side_and_can_return_a_failure(tmp_path):
    """The sweep's warm-up builds every kernel at once; one that fails to build is returned, not raised, so it fails
    its own rows only (strict=False), while study.build raises it (strict=True)."""
    good, bad = tmp_path / "good.cu", tmp_path / "bad.cu"
    good.write_text('extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }\n')
    bad.write_text('extern "C" __global__ void k(float* x) { x[threadIdx.x] = ; }\n')
    jobs = [(good, cuda_build.NVCC_FLAGS), (bad, cuda_build.NVCC_FLAGS)]
    ok, failed = cuda_build.build_many(jobs, "90a", strict=False)
    assert isinstance(ok, cuda_build.Cubin) and "k" in ok.resources
    assert isinstance(failed, cuda_build.BuildError) and "bad.cu" in str(failed)
    with pytest.raises(cuda_build.BuildError, match="bad.cu"):
        cuda_build.build_many(jobs, "90a")
