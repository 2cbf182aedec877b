"""The sweep over several GPUs (study/measure/shard.py), run on CPU ranks under torchrun with the gloo backend and
a fake measurement (tests/fixtures/shard_worker.py): every planned row lands in results.csv once, in the plan's
order, whatever the number of ranks, a killed rank, a resume on fewer ranks, or hosts that share no filesystem."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from study.core.schema import RESULT_COLUMNS
from study.measure import shard, sweep

ROOT = Path(__file__).resolve().parents[1]
WORKER = ROOT / "tests" / "fixtures" / "shard_worker.py"
sys.path.insert(0, str(WORKER.parent))
import shard_worker  # noqa: E402

pytestmark = pytest.mark.skipif(not __import__("torch").distributed.is_gloo_available(), reason="needs gloo")


def torchrun(ranks: int, out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}",
                           "--max-restarts=0", str(WORKER), "--out", str(out), *args],
                          env=env, capture_output=True, text=True, timeout=300)


def planned() -> list[tuple]:
    return [(i.name, dtype, M, N, K) for M, N, K, _, dtype, members in shard_worker.groups() for i in members]


def rows_of(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def keys(rows) -> list[tuple]:
    return [shard.row_key(r)[:5] for r in rows]


def assert_complete(path: Path):
    """Every planned row once, in the plan's order, and no part file left beside it."""
    rows = rows_of(path)
    assert keys(rows) == planned(), "rows missing, duplicated or out of the plan's order"
    assert list(rows[0]) == list(RESULT_COLUMNS)
    assert not list((path.parent / shard.PARTS).glob("*.csv")), "part files left after the merge"
    return rows


def test_every_row_once_and_each_group_on_one_rank(tmp_path, ranks=4):
    proc = torchrun(ranks, tmp_path, "--sleep", "0.02")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = assert_complete(tmp_path / "results.csv")
    by_group = {}
    for r in rows:
        by_group.setdefault((r["M"], r["N"], r["K"], r["dtype"]), set()).add(r["gpu_index"])
    assert all(len(v) == 1 for v in by_group.values()), "a group's rows ran on more than one rank"
    assert len({r["gpu_index"] for r in rows}) == ranks, "a rank took no group"
    assert all(r["baseline_impl"] == "cublas" for r in rows), "a row lost its adjacent baseline"


def test_the_other_ranks_start_while_rank_0_measures_the_ceilings(tmp_path):
    """Rank 0's own first step (the ceilings) holds up no other rank: they take groups meanwhile, and rank 0
    takes what is left."""
    proc = torchrun(2, tmp_path, "--first", "1", "--sleep", "0.1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = assert_complete(tmp_path / "results.csv")
    start = {rank: min((float(r["timestamp"]) for r in rows if r["gpu_index"] == rank), default=float("inf"))
             for rank in ("0", "1")}
    assert start["0"] - start["1"] > 0.8, start


def test_hosts_without_a_shared_filesystem(tmp_path):
    """Each rank its own host and directory: the rows reach rank 0's results.csv through gloo alone."""
    proc = torchrun(2, tmp_path, "--nodes", "--sleep", "0.02")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = assert_complete(tmp_path / "node0" / "results.csv")
    assert len({r["gpu_index"] for r in rows}) == 2
    for node in ("node1",):
        assert not (tmp_path / node / "results.csv").exists()
        assert not list((tmp_path / node / shard.PARTS).glob("*.csv"))


def test_a_killed_rank_loses_nothing_and_fewer_ranks_finish(tmp_path):
    killed = torchrun(3, tmp_path, "--tag", "first", "--sleep", "0.1", "--die-rank", "1", "--die-after", "2")
    assert killed.returncode != 0
    parts = list((tmp_path / shard.PARTS).glob("*.csv"))
    finished = [r for p in parts for r in rows_of(p)]
    assert Counter(r["gpu_index"] for r in finished)["1"] == 2, "the killed rank's finished rows are kept"
    proc = torchrun(1, tmp_path, "--tag", "second", "--resume")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = assert_complete(tmp_path / "results.csv")
    first = {k for k, r in zip(keys(rows), rows) if r["commit"] == "first"}
    assert first == set(keys(finished)), "a row finished before the kill was measured again, or lost"
    assert {r["commit"] for r in rows} == {"first", "second"}


def test_a_fresh_sweep_discards_what_a_killed_one_left(tmp_path):
    assert torchrun(2, tmp_path, "--tag", "first", "--sleep", "0.1", "--die-rank", "0", "--die-after", "3").returncode
    assert list((tmp_path / shard.PARTS).glob("*.csv"))
    proc = torchrun(2, tmp_path, "--tag", "second")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {r["commit"] for r in assert_complete(tmp_path / "results.csv")} == {"second"}


def test_the_keys_start_while_local_rank_0_builds(tmp_path, ranks=3):
    """sweep._warm under torchrun: local rank 0 alone builds the CUDA kernels; the other ranks compute the Triton,
    Gluon and cuBLAS keys meanwhile, and rank 0 joins them after its build, each key computed once on the host
    before the barrier; then every rank reads every key."""
    proc = torchrun(ranks, tmp_path, "--warm")
    assert proc.returncode == 0, proc.stderr[-3000:]
    impls = sweep.select("01,02,14", "cuda,cublas,triton,gluon")
    offline = {i.name for i in impls if not sweep.registry.cuda_launches(i)}
    assert offline and len(offline) < len(impls)
    logs = {r: [line.split(" ", 2) for line in (tmp_path / f"warm-{r}.log").read_text().splitlines()]
            for r in range(ranks)}
    assert [e[1:] for e in logs[0] if e[1] == "build"] == [["build", "start"], ["build", "end"]]
    assert all(e[1] != "build" for r in range(1, ranks) for e in logs[r]), "a rank other than local rank 0 built"
    shares = {}
    for r, entries in logs.items():
        named = [e[2] for e in entries if e[1] == "key"]
        assert named[-len(impls):] == [i.name for i in impls], f"rank {r} did not read every key after the barrier"
        shares[r] = named[:-len(impls)]
    before = [n for share in shares.values() for n in share]
    assert sorted(before) == sorted(offline), "a key computed twice, or a CUDA key before the build"
    build_end = next(float(e[0]) for e in logs[0] if e[1:] == ["build", "end"])
    assert any(float(e[0]) < build_end for r in range(1, ranks) for e in logs[r] if e[1] == "key"), \
        "no key was computed while the build ran"


def test_groups_are_queued_costliest_first():
    """The queue follows estimated cost, not count: measured rows' time where known, else the FLOP model (an
    8192^3 fp32 group is not a 128^3 one)."""
    impls = sweep.select("01,03", "cuda,cublas")
    groups = list(sweep.plan(impls, sweep.parse_shapes("128x128x128,8192x8192x8192,1024x1024x1024", False),
                             ["fp32"]))
    assert [groups[i][0] for i in shard.order(groups, {}, 1.0, 0.0, 300.0)] == [8192, 1024, 128]
    # A row measured slow makes its group's estimate: the 128^3 group measured at 5 s a call goes first.
    slow = {("cuda:01_naive", "fp32", 128, 128, 128, 1.0, 0.0): {"ms": 5000.0, "reps": 3}}
    assert groups[shard.order(groups, slow, 1.0, 0.0, 300.0)[0]][0] == 128


def test_one_report_never_mixes_two_models():
    assert shard.one_model(["NVIDIA H100 80GB HBM3"] * 4, sweep.gpu_slug) is None
    error = shard.one_model(["NVIDIA H100 80GB HBM3", "NVIDIA H200"], sweep.gpu_slug)
    assert error and "NVIDIA H200" in error and "one report" in error


def test_resume_rewrites_a_file_of_an_older_header(tmp_path):
    """A results.csv written before a column was added is rewritten in the current header, not appended to
    under the old one (which would shift every field of the new rows)."""
    path = tmp_path / "results.csv"
    old = [c for c in RESULT_COLUMNS if c not in ("gpu_index", "gpu_uuid")]
    row = dict.fromkeys(old, "") | {"impl": "cublas", "dtype": "fp32", "M": 8, "N": 8, "K": 8, "alpha": 1.0,
                                    "beta": 0.0, "gpu": "NVIDIA H100", "commit": "abc"}
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, old)
        w.writeheader()
        w.writerow(row)
    results = sweep.ResultsFile(path, resume=True)
    results.write(row | {"impl": "cuda:01_naive", "gpu_uuid": "GPU-1"})
    results.f.close()
    rows = rows_of(path)
    assert list(rows[0]) == list(RESULT_COLUMNS)
    assert [(r["impl"], r["commit"], r["gpu_uuid"]) for r in rows] == [("cublas", "abc", ""),
                                                                       ("cuda:01_naive", "abc", "GPU-1")]


@pytest.mark.parametrize("once", [False, True])
def test_a_triton_kernel_compiles_once_per_host(tmp_path, once):
    """Three processes compiling one kernel at the same moment: with Triton's cache routed through
    shard.CompileOnce (as the distributed sweep routes it) one compiles and two find it stored; without it, the
    control, every process whose compile began before another's had ended compiles it too.  A loaded machine may
    run the three one after another; the control then tries again, and skips if they never overlap."""
    import json
    import time
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}   # compiled, not interpreted
    if once:
        env["TRITON_CACHE_MANAGER"] = "study.measure.shard:CompileOnce"
    for attempt in range(3):
        env.update(PYTHONPATH=str(ROOT), TRITON_CACHE_DIR=str(tmp_path / f"cache{attempt}"))
        start, log = time.time() + 6, tmp_path / f"log{attempt}"
        procs = [subprocess.Popen([sys.executable, str(WORKER.parent / "compile_once.py"), str(log), str(start)],
                                  env=env) for _ in range(3)]
        assert all(p.wait(timeout=120) == 0 for p in procs)
        runs = [json.loads(line) for line in log.read_text().splitlines()]
        misses = sum(hit is False for r in runs for hit in r["hits"])
        if once:
            assert misses == 1
            return
        first_end = min(r["ended"] for r in runs)
        together = [r for r in runs if r["began"] < first_end]     # began before any compile had ended
        assert all(False in r["hits"] for r in together), runs
        if len(together) >= 2:
            return
    pytest.skip("the three compiles never overlapped on this loaded machine")
