"""Nsight Compute: the one profiler and the one parser of its output.

Profiling: hardware counters of implementations, measured with ncu on exactly the call the sweep times.

    python -m study.profile [--n 4096] [--ragged 3001x2999x1001] [--out reports]     (on a GPU machine, as root)
    python -m study.profile --stages 03,04,05 --dtypes fp32 --stalls --out reports/ladder   (the ladder's stalls)
    python -m study.sweep --profile                                                   (the same as the first)

For every implementation and every dtype it declares, at n^3 and at one ragged shape, a child process builds
the call with `Impl.prepare` (the runner's launch closure), runs it twice outside the profiled range (Triton
compiles and autotunes there), then profiles one call.  Each profiled range opens with an empty
`profile_marker` kernel, so a call that launches several kernels (cuBLAS, split-K) keeps every kernel, by
name, attributed to its implementation.  ncu runs with `--clock-control none` (the clocks the sweep sees) and
its default cache control (caches flushed before each replay pass: DRAM bytes are cold-cache bytes).

A chain of library calls (RANGE_PROFILED) is profiled as one range instead (`--replay-mode range`): one
row, kernel "range", whose counters are those of the whole chain as it runs, the write-back of each kernel's
output by the next included (timed alone on flushed caches, each kernel leaves its dirty lines uncounted).  Its
time also holds the GPU's idle gaps between the chain's launches.

reports/profile.csv, one row per kernel (PROFILE_COLUMNS).  Shared-memory bytes are LSU wavefronts x 128 B:
the load/store path only, an upper bound per wavefront; wgmma's operand reads from shared memory and TMA's
writes into it do not pass through the LSU and are not counted.  `--stalls` adds the issue-stall reasons and
pipe counters of STALL_METRICS (more replay passes, so it is off by default).

Reading: `parse` reads the profiler's output (kernels attributed by marker kernels) into profile.csv, a plain
CSV that pandas reads.  Reading needs no GPU and imports neither torch nor Triton.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from study.core import cli
from study.core.paths import BENCH_DIR, ROOT

MARKER = "profile_marker"
DEFAULT_N, DEFAULT_RAGGED = 4096, (3001, 2999, 1001)     # the default profile: n^3 and one ragged shape
# Column -> ncu metric (scaled by `SCALE`).  Every one is checked against `ncu --query-metrics` first, so a
# metric this ncu lacks becomes an empty column rather than a failed run.
METRICS = {
    "time_ms": "gpu__time_duration.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
    "l2_bytes": "lts__t_bytes.sum",
    "l1_bytes": "l1tex__t_bytes.sum",
    "smem_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "smem_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "smem_ld_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smem_st_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm_throughput_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "tensor_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "registers": "launch__registers_per_thread",
    "instructions": "smsp__inst_executed.sum",
}
PROFILE_COLUMNS = ("impl", "backend", "stage", "dtype", "precision", "M", "N", "K", "kernel", *METRICS,
                   "smem_bytes", "gpu", "commit")
# --stalls: why warps wait, and how busy each pipe is (what the SIMT ladder's notes read).
STALL_METRICS = {
    "warps_active": "smsp__warps_active.avg.per_cycle_active",
    "fma_instructions": "smsp__inst_executed_pipe_fma.sum",
    "tensor_instructions": "smsp__inst_executed_pipe_tensor.sum",
    "issue_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "shared_ld_instructions": "smsp__inst_executed_op_shared_ld.sum",
    "shared_st_instructions": "smsp__inst_executed_op_shared_st.sum",
    "l2_throughput_pct": "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1_throughput_pct": "l1tex__throughput.avg.pct_of_peak_sustained_active",
    **{f"stall_{r}": f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
       for r in ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "dispatch_stall", "wait",
                 "math_pipe_throttle", "lg_throttle", "not_selected", "no_instruction")},
}
PROFILE_COLUMNS = (*PROFILE_COLUMNS[:-2], *STALL_METRICS, *PROFILE_COLUMNS[-2:])
TIME_METRIC = METRICS["time_ms"]
# Issue-slot use, one of the stall counters, is in every profile: the Hopper rung's forms are told apart by it.
ALWAYS = ("issue_pct",)
# Profiled as one range: cuBLAS's composed recipes, 21 and 24 kernels, most of them memory-bound elementwise
# splits and sums.  Timed one by one on flushed caches they summed to 0.84x and 0.82x of their sweep rows at
# 4096^3 on an H100; as one range, 1.12x and 1.05x, with 1.58 GB of DRAM writes for bf16x6 against 0.81 GB
# summed over its kernels (docs/method.md, "cuBLAS's composed bf16 recipes").
RANGE_PROFILED = ("cublas:bf16x6", "cublas:bf16x9")
TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3, "second": 1e3}


def cases(n: int, ragged: tuple[int, int, int] | None, impls=None, stages=None, dtypes=None,
          backends=None) -> list[tuple[str, str, int, int, int]]:
    """(implementation, dtype, M, N, K) of every call to profile: each implementation (of `impls`, or of `stages`
    and `backends`, with the cuBLAS baseline) and each dtype it declares (of `dtypes`), at n^3 and at `ragged`."""
    from study import registry
    out = []
    for impl in registry.implementations():
        stage = impl.stage_label
        if impls and impl.name not in impls or stages and stage not in stages and stage != "baseline" \
                or backends and impl.backend not in backends and impl.backend != "cublas":
            continue
        for dtype in impl.dtypes:
            if not dtypes or dtype in dtypes:
                out += [(impl.name, dtype, n, n, n)] + ([(impl.name, dtype, *ragged)] if ragged else [])
    return out


def unprofiled(profile: Path) -> tuple[list[tuple[str, str, int, int, int]], int]:
    """The calls of the default profile (cases(DEFAULT_N, DEFAULT_RAGGED)) that `profile` (a profile.csv, which
    must exist) lacks, and how many calls the default profile has."""
    from study.measure.frame import call_key
    with Path(profile).open(newline="") as f:
        have = {call_key(r) for r in csv.DictReader(f)}
    wanted = cases(DEFAULT_N, DEFAULT_RAGGED)
    return [c for c in wanted if tuple(c) not in have], len(wanted)


# --- the profiled child ---------------------------------------------------------------------------

def child(case_list: list[tuple[str, str, int, int, int]]) -> None:
    import torch

    from study.launch import driver as cuda_launch

    from study import registry
    from study.core.verify import make_inputs
    dev = torch.device("cuda", 0)
    marker = cuda_launch.kernel(BENCH_DIR / "profile_marker.cu", MARKER, dev, cuda_launch.params("unused:int"))
    for name, dtype, M, N, K in case_list:
        impl = registry.get(name)
        try:
            x = make_inputs(M, N, K, dtype, dev, out_dtype=impl.out_dtypes.get(dtype))
            run, _ = impl.prepare(x.a, x.b, None, 1.0, 0.0, x.out, **x.scale_args(impl))
            run(), run()
            torch.cuda.synchronize()
        except Exception as e:       # refused or failed: recorded as such, the others go on
            print("SKIPPED", json.dumps([name, dtype, M, N, K, f"{type(e).__name__}: {e}"[:300]]), flush=True)
            continue
        print("PROFILED", json.dumps([name, dtype, M, N, K]), flush=True)
        torch.cuda.profiler.start()
        cuda_launch.launch(marker, (1, 1, 1), (32, 1, 1), 0, dict(unused=0), dev)
        run()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        del x


# --- parsing ncu's raw CSV ------------------------------------------------------------------------

def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except (ValueError, AttributeError):
        return None


def _lines(text: str, tag: str) -> list[str]:
    return [line[len(tag) + 1:].strip() for line in text.splitlines() if line.startswith(tag + " ")]


def _kernels(text: str) -> list[dict] | None:
    """ncu's raw CSV page inside a program's output (its lines start with a quote): one record per kernel,
    metric -> value, with times in milliseconds (scaled by the unit row); None if there is no table."""
    parsed = list(csv.reader(io.StringIO("\n".join(l for l in text.splitlines() if l.startswith('"')))))
    if len(parsed) < 2:
        return None
    header, units = parsed[0], dict(zip(parsed[0], parsed[1]))
    out = []
    for values in parsed[2:]:
        rec = {k: _number(v) for k, v in zip(header, values)}
        rec["Kernel Name"] = dict(zip(header, values)).get("Kernel Name", "")
        if rec.get(TIME_METRIC) is not None:
            scale = TO_MS.get(units.get(TIME_METRIC, ""))
            rec[TIME_METRIC] = rec[TIME_METRIC] * scale if scale else None
        out.append(rec)
    return out


def parse(text: str, ranges: bool = False) -> tuple[list[dict], list[str]]:
    """(kernel rows, notes) from the child's stdout under ncu: PROFILED lines in launch order, then ncu's raw
    CSV page (header, units, one row per kernel); rows are attributed by the marker kernels.  ranges: ncu ran
    in range replay, one record per profiled call, in order."""
    names = [json.loads(x) for x in _lines(text, "PROFILED")]
    notes = ["skipped " + " ".join(map(str, json.loads(x))) for x in _lines(text, "SKIPPED")]
    kernels = _kernels(text)
    if kernels is None:
        return [], notes + ["no ncu table in the output"]
    rows, case = [], -1
    for rec in kernels:
        kernel = rec["Kernel Name"]
        if ranges:
            case += 1
        elif kernel.startswith(MARKER):
            case += 1
            continue
        if not 0 <= case < len(names):
            notes.append(f"kernel {kernel!r} outside any profiled range")
            continue
        name, dtype, M, N, K = names[case]
        row = {"impl": name, "dtype": dtype, "M": M, "N": N, "K": K, "kernel": kernel}
        row.update({col: rec.get(metric) for col, metric in {**METRICS, **STALL_METRICS}.items()})
        ld, st = row["smem_ld_wavefronts"], row["smem_st_wavefronts"]
        row["smem_bytes"] = 128 * ((ld or 0) + (st or 0)) if ld is not None or st is not None else None
        rows.append(row)
    if case + 1 != len(names):
        notes.append(f"{case + 1} {'ranges' if ranges else 'marker kernels'} for {len(names)} profiled calls")
    return rows, notes


# --- the parent: ncu over the child, a chunk at a time ----------------------------------------------

def available_metrics(ncu: str) -> set[str]:
    out = subprocess.run([ncu, "--query-metrics", "--csv"], capture_output=True, text=True).stdout
    return {line.split(",")[0].strip('"') for line in out.splitlines()[1:] if line}


def run(n: int, ragged: tuple[int, int, int] | None, out_dir: Path, impls=None, ncu: str = "ncu", keep: bool = False,
        stalls: bool = False, **only) -> Path:
    """keep: the rows of calls this run has not profiled (yet: a run cut short keeps the old rows of the calls it
    did not reach) stay in profile.csv as they were (their own gpu and commit columns say where they were
    measured), unless the registry no longer has them; otherwise the file holds this run alone.  only: `stages`,
    `dtypes`, `backends` filters (see cases)."""
    from study import registry
    from study.measure.environment import git_commit
    import torch
    have = available_metrics(ncu)
    # launch__* are launch attributes, not counters: --query-metrics does not list them, the raw page has them.
    wanted = [*METRICS.values(), *(STALL_METRICS[c] for c in STALL_METRICS if stalls or c in ALWAYS)]
    metrics = [m for m in wanted if not have or m.startswith("launch__") or m.split(".")[0] in have]
    missing = sorted(set(wanted) - set(metrics))
    all_cases = cases(n, ragged, impls, **only)
    rows, notes = [], [f"metrics this ncu lacks: {missing}"] if missing else []
    gpu, commit = torch.cuda.get_device_name(0), git_commit()
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    path = Path(out_dir) / "profile.csv"
    registered = {i.name for i in registry.implementations()}
    kept = []
    if keep and path.exists():
        with path.open() as f:
            kept = [r for r in csv.DictReader(f) if r["impl"] in registered]
    # One ncu process per (shape, backend), the n^3 calls first, and the file rewritten after each: a child
    # stays short, a failure stays local, and a run cut short by a time limit keeps what it measured.
    chunks = [[c for c in all_cases if (c[2:] == (n, n, n)) == square and registry.get(c[0]).backend == b
               and c[0] not in RANGE_PROFILED]
              for square in (True, False) for b in sorted({registry.get(c[0]).backend for c in all_cases})]
    chunks.append([c for c in all_cases if c[0] in RANGE_PROFILED])
    # Autotuned kernels pick their config outside the profiler: its interception slows every launch, which skews
    # the autotuner's timings (seen: triton:tuned fp16 picked a config 1.27x slower than the sweep's under ncu).
    # A first pass without ncu tunes and caches the choice (Triton's autotuning cache), the profiled pass reuses it.
    env = {**os.environ, "TRITON_CACHE_AUTOTUNING": "1"}
    for chunk in [c for c in chunks if c]:
        child_cmd = [sys.executable, "-m", "study.profile", "--child", json.dumps(chunk)]
        subprocess.run(child_cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        ranges = chunk[0][0] in RANGE_PROFILED   # range replay defines its ranges by the profiler's start/stop
        replay = ["--replay-mode", "range"] if ranges else ["--profile-from-start", "off"]
        cmd = [ncu, "--clock-control", "none", *replay, "--csv", "--page", "raw",
               "--metrics", ",".join(m for m in metrics if not (ranges and m.startswith("launch__"))), *child_cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
        got, more = parse(proc.stdout, ranges)
        what = "the ranges" if ranges else f"{registry.get(chunk[0][0]).backend} at {'x'.join(map(str, chunk[0][2:]))}"
        if proc.returncode:
            more.append(f"ncu over the {what} chunk exited {proc.returncode}: {proc.stderr[-500:]}")
        rows += got
        notes += more
        _write(path, rows, gpu, commit, kept)
        (Path(out_dir) / "profile_notes.json").write_text(json.dumps({"n": n, "ragged": ragged, "notes": notes},
                                                                     indent=1))
        print(f"study.profile: {what}: {len(chunk)} calls, {len(got)} kernels", flush=True)
    for note in notes:
        print("  note:", note)
    return path


def _write(path: Path, rows: list[dict], gpu: str, commit: str, kept: list[dict] = ()) -> None:
    """This run's rows, after the kept rows of every call it has not profiled."""
    from study import registry
    from study.measure.frame import call_key
    now = {call_key(r) for r in rows}
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=PROFILE_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(r for r in kept if call_key(r) not in now)
        for r in rows:
            impl = registry.get(r["impl"])
            w.writerow({**r, "backend": impl.backend, "stage": impl.stage_label,
                        "precision": impl.precision(r["dtype"]), "gpu": gpu, "commit": commit})


def _shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def _list(text: str) -> list[str] | None:
    return [x for x in text.split(",") if x] or None


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("profile", __doc__)
    ap.add_argument("--n", type=int, default=DEFAULT_N)
    ap.add_argument("--ragged", type=lambda t: None if t == "none" else _shape(t), default=DEFAULT_RAGGED,
                    help="MxNxK of the ragged call, or 'none' (default 3001x2999x1001)")
    ap.add_argument("--impls", default="", help="comma list of implementations (default: all)")
    ap.add_argument("--stages", default="", help="comma list of stage numbers (with the cuBLAS baselines)")
    ap.add_argument("--dtypes", default="", help="comma list of input dtypes")
    ap.add_argument("--backends", default="", help="comma list of backends (cuda, triton, gluon)")
    ap.add_argument("--stalls", action="store_true", help="also the stall reasons and pipe counters")
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of implementations not profiled now (with --impls)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        child([tuple(c) for c in json.loads(args.child)])
        return 0
    print(run(args.n, args.ragged, args.out, _list(args.impls), os.environ.get("NCU", "ncu"), args.keep, args.stalls,
              stages=_list(args.stages), dtypes=_list(args.dtypes), backends=_list(args.backends)))
    return 0
