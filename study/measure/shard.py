"""The sweep on every GPU of a host, or of several hosts, through torchrun: one rank per GPU.

    torchrun --nproc-per-node 4 -m study.sweep                # or: python -m study.sweep --gpus all
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST:29500 -m study.sweep

Who runs what.  Every rank plans the same (shape, dtype) groups (study/measure/sweep.py plan()); a group, its
cuBLAS baselines first, runs on one GPU, adjacently, as on one.  Rank 0 orders the groups by estimated cost,
costliest first; the ranks take them from that queue one at a time (a counter in torchrun's rendezvous store), so
the split follows cost, not count, and the ranks finish within about one group of each other however wrong the
estimate.  A group's estimate is its rows' measured time in the results already there (a row's reps and warm-up
calls, its idle-gap timing, and the per-row setup), else a model of its FLOPs.

Where rows go.  Each rank appends its rows to its own part file, `parts/<host>.<rank>.<pid>.csv` beside
results.csv, flushed row by row: a killed rank loses no finished row.  At the end the rows travel to rank 0
through torch.distributed (gloo, on the CPU: no shared filesystem needed), which rewrites results.csv with them,
in the plan's order (rows outside the plan after); then each rank deletes its part file.  Every run starts by
gathering the part files a killed run left on each host (read by the host's local rank 0): --resume merges their
rows, a fresh sweep discards them.
Rank 0 then hands every rank the rows already measured, so `--resume` on any number of ranks measures only what
is missing, and none twice.

Each row names its GPU (gpu_index, gpu_uuid); ranks on GPUs of different models stop before measuring anything,
so one report never mixes two models.  Only rank 0 prints a progress bar, fed by the others' counts in the store.
Kernels compile once per host: the CUDA builds by each host's first rank, nvcc processes side by side, and the
offline Triton compiles shared out among the host's ranks, all before any row (sweep.py _warm); the Triton kernels
the rows launch through CompileOnce, a lock per kernel around Triton's own compile cache.
"""
from __future__ import annotations

import csv
import datetime as dt
import functools
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from study.core.schema import RESULT_COLUMNS

PARTS = "parts"
TIMEOUT = dt.timedelta(hours=24)     # a rank waits this long for the slowest one at the end (gloo's collectives)
ROW_SETUP_S = 0.4                    # a row's time beyond its timed calls: inputs, the float64 judge, the launch
LOCK_WAIT_S = 900.0                  # the longest a rank waits for another's compile of the same Triton kernel


@dataclass(frozen=True)
class World:
    """This process's place among torchrun's ranks: one rank (size 1) without torchrun."""
    rank: int = 0
    size: int = 1
    local_rank: int = 0
    host: str = ""
    local_size: int = 1              # the ranks on this host

    @property
    def distributed(self) -> bool:
        return self.size > 1


def world() -> World:
    env = os.environ
    return World(int(env.get("RANK", 0)), int(env.get("WORLD_SIZE", 1)), int(env.get("LOCAL_RANK", 0)),
                 socket.gethostname(), int(env.get("LOCAL_WORLD_SIZE", 1)))


def init(w: World):
    """The process group (gloo: rows and counts travel on the CPU) and the rendezvous store; the store's keys carry
    torchrun's restart count, so a restarted job starts from fresh counters."""
    import torch.distributed as dist
    dist.init_process_group("gloo", timeout=TIMEOUT)
    from torch.distributed import distributed_c10d
    prefix = f"study-sweep/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/"
    return dist.PrefixStore(prefix, distributed_c10d._get_default_store())


def compile_once_per_host():
    """Route Triton's compile cache through CompileOnce (below), for this process and the ranks it starts."""
    os.environ.setdefault("TRITON_CACHE_MANAGER", f"{__name__}:CompileOnce")


@functools.lru_cache(maxsize=None)
def _compile_once():
    """Triton's file cache, with one compile per host of each kernel (TRITON_CACHE_MANAGER names it; defined in a
    function so that importing this module never imports Triton).  A compile that misses the cache holds an
    exclusive lock on a file of its kernel's cache directory until it stores the kernel there (put_group: the
    last step of triton.compile), so a second rank that asks for the same kernel meanwhile waits, then finds it
    stored.  The lock goes with the manager (its compile failed) or after LOCK_WAIT_S, then the waiter compiles."""
    import fcntl

    from triton.runtime.cache import FileCacheManager

    class CompileOnce(FileCacheManager):
        fd: int | None = None

        def get_group(self, filename):
            group = super().get_group(filename)
            if group is not None or not self.cache_dir:
                return group
            fd = os.open(os.path.join(self.cache_dir, ".compiling"), os.O_CREAT | os.O_RDWR)
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        os.close(fd)
                        return None
                    time.sleep(0.05)
            group = super().get_group(filename)   # stored while this one waited: a hit
            if group is not None:
                os.close(fd)
            else:
                self.fd = fd
            return group

        def put_group(self, filename, group):
            path = super().put_group(filename, group)
            self._release()
            return path

        def _release(self):
            if self.fd is not None:
                os.close(self.fd)          # closing the file drops the lock
                self.fd = None

        def __del__(self):
            self._release()

    return CompileOnce


def __getattr__(name):   # CompileOnce, built on first use
    if name == "CompileOnce":
        return _compile_once()
    raise AttributeError(name)


def one_model(names: list[str], slug) -> str | None:
    """None if every rank's GPU (`names`) is of one model (`slug`: a name's reports/ directory); else the error that
    stops the sweep."""
    if len({slug(n) for n in names}) <= 1:
        return None
    return ("study.sweep: the ranks' GPUs are of different models (" + ", ".join(sorted(set(names))) + "); one report "
            "holds one model: run one sweep per model (CUDA_VISIBLE_DEVICES selects the GPUs)")


def row_key(row) -> tuple:
    return (row["impl"], row["dtype"], int(row["M"]), int(row["N"]), int(row["K"]),
            float(row["alpha"]), float(row["beta"]))


def unique(rows, have: set) -> list[dict]:
    """`rows` whose key is not in `have` yet, each once (`have` grows)."""
    out = []
    for r in rows:
        if (k := row_key(r)) not in have:
            have.add(k)
            out.append(r)
    return out


def sweep_group(group, done: dict, measure, write, alpha: float, beta: float):
    """One (shape, dtype) group of plan(), its cuBLAS baselines first: each row measured (`measure`) and written
    (`write`) unless `done` holds it, a baseline's figure handed to the rows it normalises.  Yields each
    implementation once its row is settled (the progress bar's step)."""
    from study import registry
    M, N, K, shape_set, dtype, ordered = group
    base_rows: dict[str, dict] = {}
    for impl in ordered:
        base_impl = registry.baseline_for(dtype, impl.precision(dtype))
        base = base_rows.get(base_impl.name) if base_impl and base_impl is not impl else None
        row = done.get((impl.name, dtype, M, N, K, alpha, beta))
        if row is None:
            row = measure(impl, dtype, M, N, K, alpha, beta, shape_set, base)
            write(row)
        if impl is base_impl:
            base_rows[impl.name] = {"impl": row["impl"], "tflops": _num(row["tflops"]) or None}
        yield impl


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def write_rows(path: Path, rows: list[dict], append: bool = False):
    """Rows in RESULT_COLUMNS order.  A rewrite goes through a temporary file and a rename, so a kill leaves the
    old file or the new one, whole; appending to a file of an older header rewrites it in the current one."""
    append = append and path.exists() and path.stat().st_size > 0
    if append:
        with path.open(newline="") as f:
            header = next(csv.reader(f), None)
        if header != list(RESULT_COLUMNS):
            rows, append = read_rows(path) + list(rows), False
    target = path if append else path.with_name(f".{path.name}.{os.getpid()}")
    with target.open("a" if append else "w", newline="") as f:
        w = csv.DictWriter(f, RESULT_COLUMNS, extrasaction="ignore", restval="")
        if not append:
            w.writeheader()
        w.writerows(rows)
    if not append:
        os.replace(target, path)


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return 0.0


def row_seconds(row: dict) -> float:
    """What a row cost when it was measured: its timed and warm-up calls (L2 flush and ~0.1 ms spin each), the
    idle-gap calls if any, and the setup."""
    ms, reps = _num(row.get("ms")), _num(row.get("reps"))
    idle = (2 * _num(row.get("ms_idle")) + 1.5) * reps if _num(row.get("ms_idle")) else 0.0   # a sleep, a call
    return ROW_SETUP_S + ((ms + 0.15) * (reps + 3) + idle) / 1e3


def model_seconds(M: int, N: int, K: int, dtype: str, budget_ms: float) -> float:
    """A row never measured: the timing budget, or at least 5 calls at a rough throughput (fp32 and wider run on
    the CUDA cores and the ladder's early stages are slow), and the float64 judge."""
    flops = 2.0 * M * N * K
    call = flops / (2e12 if dtype in ("fp32", "fp64") else 1e14)
    return ROW_SETUP_S + max(budget_ms / 1e3, 5 * call) + flops / 3e13


def order(groups, prior: dict[tuple, dict], alpha: float, beta: float, budget_ms: float) -> list[int]:
    """The groups' indices, costliest first (ties in plan order): a row's cost from `prior` (rows already
    measured, by key) where it has one, else the model."""
    def cost(g):
        M, N, K, _, dtype, members = g
        return sum(row_seconds(prior[k]) if (k := (i.name, dtype, M, N, K, alpha, beta)) in prior and
                   _num(prior[k].get("ms")) else model_seconds(M, N, K, dtype, budget_ms) for i in members)
    costs = [cost(g) for g in groups]
    return sorted(range(len(groups)), key=lambda i: (-costs[i], i))


def plan_position(groups) -> dict[tuple, int]:
    """(impl, dtype, M, N, K) -> its place in the plan: the order a one-GPU sweep writes rows in."""
    pos, n = {}, 0
    for M, N, K, _, dtype, members in groups:
        for impl in members:
            pos.setdefault((impl.name, dtype, M, N, K), n)
            n += 1
    return pos


class PartFile:
    """One rank's rows, appended and flushed one by one."""

    def __init__(self, directory: Path, w: World):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{w.host}.{w.rank}.{os.getpid()}.csv"
        self.f = self.path.open("w", newline="")
        self.w = csv.DictWriter(self.f, RESULT_COLUMNS, extrasaction="ignore", restval="")
        self.w.writeheader()
        self.f.flush()

    def write(self, row: dict):
        self.w.writerow(row)
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self):
        self.f.close()


def leftovers(directory: Path, w: World) -> list[Path]:
    """The part files of this host that an earlier run left (its local rank 0 reads them: one reader a host)."""
    if w.local_rank != 0 or not directory.is_dir():
        return []
    return sorted(directory.glob(f"{w.host}.*.csv"))


def run(groups, out: Path, w: World, store, *, measure, resume: bool, alpha: float, beta: float,
        budget_ms: float, refresh=None, on_row=None, first=None) -> list[dict] | None:
    """The distributed sweep of `groups` (plan()'s) into out/results.csv; collective: every rank calls it.
    measure(impl, dtype, M, N, K, alpha, beta, shape_set, baseline) -> row.  refresh(path): rank 0 drops stale
    rows from results.csv before anything is read (--refresh-stale).  on_row(done, total): rank 0's progress.
    first(): what rank 0 does before it joins the queue (the ceilings), while the other ranks take groups.
    Returns, on rank 0, the rows measured now (every rank's); None on the others."""
    import torch.distributed as dist
    results, parts = out / "results.csv", out / PARTS

    # 1. Rows a killed run left in part files, host by host, to rank 0: kept with --resume, else dropped.
    mine = leftovers(parts, w)
    found = [None] * w.size if w.rank == 0 else None
    dist.gather_object([r for p in mine for r in read_rows(p)], found, dst=0)
    queue_order = done = None
    if w.rank == 0:
        there = read_rows(results)
        prior = {row_key(r): r for r in there}       # the estimates, before a fresh sweep starts over
        kept = there if resume else []
        if resume:
            write_rows(results, unique((r for rows in found for r in rows), {row_key(r) for r in kept}), append=True)
            if refresh is not None:
                refresh(results)
            kept = read_rows(results)
        else:
            write_rows(results, [])
        done = {row_key(r): r for r in kept}
        queue_order = order(groups, prior, alpha, beta, budget_ms)
    dist.barrier()
    for p in mine:
        p.unlink()
    box = [queue_order, done]
    dist.broadcast_object_list(box, src=0)
    queue_order, done = box
    total = sum(len(g[-1]) for g in groups)

    # 2. The queue: a rank takes the next group until none is left; every row it handles counts in the store.
    part, measured = PartFile(parts, w), []
    try:
        if w.rank == 0 and first is not None:
            first()
        while (ticket := store.add("next", 1) - 1) < len(groups):
            group = groups[queue_order[ticket]]

            def write(row):
                part.write(row)
                measured.append(row)

            for _ in sweep_group(group, done, measure, write, alpha, beta):
                counted = store.add("rows", 1)
                if on_row is not None and w.rank == 0:
                    on_row(counted, total)
        part.close()
        if w.rank == 0 and on_row is not None:
            while (counted := store.add("rows", 0)) < total:   # the others' last rows
                on_row(counted, total)
                time.sleep(0.5)
            on_row(counted, total)

        # 3. Every rank's rows to rank 0, into results.csv in the plan's order; then the part files go.
        gathered = [None] * w.size if w.rank == 0 else None
        dist.gather_object(measured, gathered, dst=0)
        if w.rank == 0:
            new = unique((r for rows in gathered for r in rows), set(done))
            pos = plan_position(groups)
            every = list(done.values()) + new      # the plan's rows in its order, then any others as they were
            write_rows(results, sorted(every, key=lambda r: pos.get(row_key(r)[:5], len(pos))))
        dist.barrier()
        part.path.unlink()
    finally:
        part.close()
    return new if w.rank == 0 else None
