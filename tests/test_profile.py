"""study.measure.ncu's parsing of ncu output and study.present.hierarchy's reading of it, on synthetic ncu text (no GPU)."""
from __future__ import annotations

import json

import pandas as pd

import pytest

pytest.importorskip("plotly", reason="the report's sections need plotly (the GPU image lacks it)")

from study.present import hierarchy

from study.measure import ncu as profile
from study.present.sections.profile import profile_section  # noqa: E402
from study.measure.sanitize import attribute

HEADER = ['"ID"', '"Kernel Name"'] + [f'"{m}"' for m in profile.METRICS.values()]
UNITS = ['""', '""', '"nsecond"'] + ['""'] * (len(profile.METRICS) - 1)


def _row(i: int, kernel: str, ns: float, dram: float, ld_conf: float = 0, ld_waves: float = 1000) -> str:
    vals = {"gpu__time_duration.sum": ns, "dram__bytes_read.sum": dram, "dram__bytes_write.sum": dram / 4,
            "lts__t_bytes.sum": 4 * dram, "l1tex__t_bytes.sum": 5 * dram,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": ld_waves,
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 100,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": ld_conf,
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": 3,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 50, "launch__registers_per_thread": 128}
    return ",".join([f'"{i}"', f'"{kernel}"'] + [f'"{vals.get(m, 1):,}"' for m in profile.METRICS.values()])


def _ncu_text() -> str:
    lines = ["PROFILED " + json.dumps(["cuda:03_smem_tiling", "fp32", 64, 64, 64]),
             "SKIPPED " + json.dumps(["cuda:01_naive", "fp32", 64, 64, 64, "ValueError: no"]),
             "PROFILED " + json.dumps(["cublas", "fp32", 64, 64, 64]),
             ",".join(HEADER), ",".join(UNITS),
             _row(0, "profile_marker", 1000, 0),
             _row(1, "sgemm_smem_tiling", 2_000_000, 1e6, ld_conf=5, ld_waves=1000),
             _row(2, "profile_marker", 1000, 0),
             _row(3, "cutlass_splitk", 1_000_000, 2e6),
             _row(4, "splitk_reduce", 500_000, 1e5)]
    return "\n".join(lines)


def test_marker_kernels_attribute_every_kernel_to_its_call():
    rows, notes = profile.parse(_ncu_text())
    assert [(r["impl"], r["kernel"]) for r in rows] == [
        ("cuda:03_smem_tiling", "sgemm_smem_tiling"), ("cublas", "cutlass_splitk"), ("cublas", "splitk_reduce")]
    assert rows[0]["time_ms"] == 2.0 and rows[0]["smem_bytes"] == 128 * 1100
    assert any("skipped cuda:01_naive" in n for n in notes)


def test_a_missing_marker_is_reported_not_guessed():
    text = _ncu_text().replace(_row(2, "profile_marker", 1000, 0) + "\n", "")
    _, notes = profile.parse(text)
    assert any("1 marker kernels for 2 profiled calls" in n for n in notes)



def test_range_replay_gives_each_call_one_row_in_order():
    """A chain of library calls is profiled as one range: record i is call i, kernel "range"; a range short is
    named in the notes."""
    lines = ["PROFILED " + json.dumps(["cublas:bf16x6", "fp32", 64, 64, 64]),
             "PROFILED " + json.dumps(["cublas:bf16x9", "fp32", 64, 64, 64]),
             ",".join(HEADER), ",".join(UNITS), _row(0, "range", 2_000_000, 1e6), _row(1, "range", 3_000_000, 2e6)]
    rows, notes = profile.parse("\n".join(lines), ranges=True)
    assert [(r["impl"], r["kernel"], r["time_ms"]) for r in rows] == [
        ("cublas:bf16x6", "range", 2.0), ("cublas:bf16x9", "range", 3.0)] and not notes
    _, notes = profile.parse("\n".join(lines[:-1]), ranges=True)
    assert any("1 ranges for 2 profiled calls" in n for n in notes)
    # The chains named are registered implementations.
    assert set(profile.RANGE_PROFILED) <= {i.name for i in __import__("study").implementations()}

def _profile_frame() -> pd.DataFrame:
    rows, _ = profile.parse(_ncu_text())
    df = pd.DataFrame(rows)
    df["backend"] = ["cuda", "cublas", "cublas"]
    df["stage"] = ["03", "baseline", "baseline"]
    df["precision"] = "fp32"
    df["gpu"], df["commit"] = "NVIDIA H100 80GB HBM3", "abc1234"
    return df


def test_calls_sum_their_kernels_and_claims_are_judged():
    agg = hierarchy.per_call(_profile_frame())
    cublas = agg[agg["impl"] == "cublas"].iloc[0]
    assert cublas["time_ms"] == 1.5 and cublas["n_kernels"] == 2
    assert abs(cublas["tflops"] - 2 * 64**3 / 1.5e9) < 1e-12
    claim = next(c for c in hierarchy.claims(agg) if c["impl"] == "cuda:03_smem_tiling")
    assert claim["verdict"] == "holds"            # 5 conflicts on 1000 load wavefronts <= 1%
    bad = agg.assign(smem_ld_conflicts=agg["smem_ld_conflicts"] * 10)
    assert next(c for c in hierarchy.claims(bad) if c["impl"] == "cuda:03_smem_tiling")["verdict"] == "contradicted"


def test_report_section_renders_figures(tmp_path):
    _profile_frame().to_csv(tmp_path / "profile.csv", index=False)
    ceilings = {"measured": {"dram_gbps": 3000, "l2_gbps": 9000, "smem_gbps": 30000, "fp32_fma_tflops": 60}}
    sec = profile_section(tmp_path, ceilings)
    assert sec["figures"] and (tmp_path / sec["figures"][0]["src"]).stat().st_size > 10_000
    assert len(sec["rows"]) == 2 and sec["where"].startswith("NVIDIA H100")
    assert not sec["excluded"]


def test_implausible_calls_are_kept_out_of_the_figures_and_named(tmp_path):
    """A call the profile audit rejects is drawn nowhere: not in the hierarchical roofline, not in the traffic
    the rooflines place calls by; the note under the figures names it and why."""
    frame = _profile_frame()
    frame.to_csv(tmp_path / "profile.csv", index=False)
    agg = hierarchy.per_call(frame)
    keys = [(r["impl"], r["dtype"], int(r["M"]), int(r["N"]), int(r["K"])) for _, r in agg.iterrows()]
    bad = {keys[0]: "profiled time 3.9x the sweep's"}
    assert len(hierarchy.plausible(agg, bad)) == len(agg) - 1
    traffic = hierarchy.achieved_traffic(tmp_path, bad)
    assert keys[0][0] not in set(traffic["impl"]) and keys[1][0] in set(traffic["impl"])
    ceilings = {"measured": {"dram_gbps": 3000, "l2_gbps": 9000, "smem_gbps": 30000, "fp32_fma_tflops": 60}}
    sec = profile_section(tmp_path, ceilings, bad)
    assert keys[0][0] in sec["excluded"] and "3.9x" in sec["excluded"]


def test_sanitizer_reports_are_attributed_to_the_implementation_running():
    # Shaped like real reports (H100, CUDA 13): frames name device functions and template instances, and
    # racecheck names no entry point at all, so the child's marker after each implementation decides.
    out = "\n".join([
        "========= COMPUTE-SANITIZER",
        "SANITIZED cuda:01_naive",
        "========= Uninitialized __global__ memory read of size 16 bytes",
        "=========     at async_copy::cp16(float *, const float *, int)+0x8b0 in async_copy.cuh:28",
        "=========         Device Frame: sgemm_cp_async+0x10 in 07_cp_async.cu:187",
        "=========",
        "========= Uninitialized __global__ memory read of size 4 bytes",
        "=========     at void at::native::fill<float>(float*)+0x10",
        "SANITIZED cuda:07_cp_async",
        "========= Error: Race reported between Read access at void <unnamed>::impl<(bool)0>(int)+0x910 in "
        "08_warp_specialized.cu:185",
        "=========     and Write access at async_copy::cp4(float *, const float *, bool)+0xa720 in async_copy.cuh:21",
        "========= Invalid __global__ read of size 4 bytes",
        "=========     at wmma_f16f32_rr+0x100",
        "SANITIZED cuda:08_warp_specialized",
        "========= Invalid __global__ read of size 4 bytes",
        "=========     at sgemm_naive+0x1b0 in /x/01_naive.cu:30",
        "========= ERROR SUMMARY: 5 errors"])
    total, per = attribute(out, {"sgemm_naive": "cuda:01_naive", "wmma_f16f32_rr": "cuda:10_wmma"})
    # The last one comes after every marker: its implementation never finished, so it is nobody's pass.
    assert total == 5 and per == {"cuda:07_cp_async": 1, "other": 2, "cuda:08_warp_specialized": 2}
    assert attribute("========= ERROR SUMMARY: 0 errors", {}) == (0, {})


def test_kept_rows_keep_their_own_provenance(tmp_path):
    """--keep: rows of calls not profiled now are written back unchanged, commit and all (an implementation this
    run names but has not reached keeps its old rows too); a call profiled now replaces its old row."""
    path = tmp_path / "profile.csv"
    shape = {"M": "4096", "N": "4096", "K": "4096"}
    blank = {c: "" for c in profile.PROFILE_COLUMNS} | shape | {"gpu": "H200", "commit": "aaaaaaa"}
    old = [blank | {"impl": "cuda:01_naive", "dtype": "fp32", "kernel": "sgemm_naive"},
           blank | {"impl": "cuda:15_tcec", "dtype": "fp32", "kernel": "tcec_old"},
           blank | {"impl": "cuda:15_tcec", "dtype": "fp32", "M": "3001", "N": "2999", "K": "1001",
                    "kernel": "tcec_ragged"}]
    new = shape | {"impl": "cuda:15_tcec", "dtype": "fp32", "kernel": "tcec_fp16"}
    profile._write(path, [new], "H100", "bbbbbbb", old)
    rows = pd.read_csv(path, dtype=str).set_index("kernel")
    assert list(rows.index) == ["sgemm_naive", "tcec_ragged", "tcec_fp16"]
    assert rows.loc["sgemm_naive", "commit"] == "aaaaaaa" and rows.loc["sgemm_naive", "gpu"] == "H200"
    assert rows.loc["tcec_ragged", "commit"] == "aaaaaaa"
    assert rows.loc["tcec_fp16", "commit"] == "bbbbbbb" and rows.loc["tcec_fp16", "gpu"] == "H100"
