"""Hardware counters of every implementation, measured with Nsight Compute on exactly the call the sweep times.

    python -m study.profile [--n 4096] [--ragged 3001x2999x1001] [--out reports]     (on a GPU machine, as root)
    python -m study.sweep --profile                                                   (the same)

For every implementation and every dtype it declares, at n^3 and at one ragged shape, a child process builds
the call with `Impl.prepare` (the runner's launch closure), runs it twice outside the profiled range (Triton
compiles and autotunes there), then profiles one call.  Each profiled range opens with an empty
`profile_marker` kernel, so a call that launches several kernels (cuBLAS, split-K) keeps every kernel, by
name, attributed to its implementation.  ncu runs with `--clock-control none` (the clocks the sweep sees) and
its default cache control (caches flushed before each replay pass: DRAM bytes are cold-cache bytes).

reports/profile.csv, one row per kernel (PROFILE_COLUMNS).  Shared-memory bytes are LSU wavefronts x 128 B:
the load/store path only, an upper bound per wavefront; wgmma's operand reads from shared memory and TMA's
writes into it do not pass through the LSU and are not counted.
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

from .paths import ROOT

MARKER = "profile_marker"
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
TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3, "second": 1e3}


def cases(n: int, ragged: tuple[int, int, int], impls=None) -> list[tuple[str, str, int, int, int]]:
    from . import registry
    out = []
    for impl in registry.implementations():
        if impls and impl.name not in impls:
            continue
        for dtype in impl.dtypes:
            out += [(impl.name, dtype, n, n, n), (impl.name, dtype, *ragged)]
    return out


# --- the profiled child ---------------------------------------------------------------------------

def child(case_list: list[tuple[str, str, int, int, int]]) -> None:
    import torch

    from . import cuda_launch, registry
    from .verify import make_inputs
    dev = torch.device("cuda", 0)
    marker = cuda_launch.kernel(ROOT / "study" / "kernels" / "profile_marker.cu", MARKER, dev)
    for name, dtype, M, N, K in case_list:
        impl = registry.get(name)
        try:
            x = make_inputs(M, N, K, dtype, dev, out_dtype=impl.out_dtypes.get(dtype))
            run, _ = impl.prepare(x.a, x.b, None, 1.0, 0.0, x.out)
            run(), run()
            torch.cuda.synchronize()
        except Exception as e:       # refused or failed: recorded as such, the others go on
            print("SKIPPED", json.dumps([name, dtype, M, N, K, f"{type(e).__name__}: {e}"[:300]]), flush=True)
            continue
        print("PROFILED", json.dumps([name, dtype, M, N, K]), flush=True)
        torch.cuda.profiler.start()
        cuda_launch.launch(marker, (1, 1, 1), (32, 1, 1), 0, [("int", 0)], dev)
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


def parse(text: str) -> tuple[list[dict], list[str]]:
    """(kernel rows, notes) from the child's stdout under ncu: PROFILED lines in launch order, then ncu's raw
    CSV page (header, units, one row per kernel); rows are attributed by the marker kernels."""
    names, table, notes = [], [], []
    for line in text.splitlines():
        if line.startswith("PROFILED "):
            names.append(json.loads(line[len("PROFILED "):]))
        elif line.startswith("SKIPPED "):
            notes.append("skipped " + " ".join(map(str, json.loads(line[len("SKIPPED "):]))))
        elif line.startswith('"'):
            table.append(line)
    parsed = list(csv.reader(io.StringIO("\n".join(table))))
    if len(parsed) < 2:
        return [], notes + ["no ncu table in the output"]
    header, units = parsed[0], dict(zip(parsed[0], parsed[1]))
    rows, case = [], -1
    for values in parsed[2:]:
        rec = dict(zip(header, values))
        kernel = rec.get("Kernel Name", "")
        if kernel.startswith(MARKER):
            case += 1
            continue
        if not 0 <= case < len(names):
            notes.append(f"kernel {kernel!r} outside any profiled range")
            continue
        name, dtype, M, N, K = names[case]
        row = {"impl": name, "dtype": dtype, "M": M, "N": N, "K": K, "kernel": kernel}
        for col, metric in METRICS.items():
            v = _number(rec.get(metric, ""))
            if col == "time_ms" and v is not None:
                scale = TO_MS.get(units.get(metric, ""))
                v = v * scale if scale else None
            row[col] = v
        ld, st = row["smem_ld_wavefronts"], row["smem_st_wavefronts"]
        row["smem_bytes"] = 128 * ((ld or 0) + (st or 0)) if ld is not None or st is not None else None
        rows.append(row)
    if case + 1 != len(names):
        notes.append(f"{case + 1} marker kernels for {len(names)} profiled calls")
    return rows, notes


# --- the parent: ncu over the child, a chunk at a time ----------------------------------------------

def available_metrics(ncu: str) -> set[str]:
    out = subprocess.run([ncu, "--query-metrics", "--csv"], capture_output=True, text=True).stdout
    return {line.split(",")[0].strip('"') for line in out.splitlines()[1:] if line}


def run(n: int, ragged: tuple[int, int, int], out_dir: Path, impls=None, ncu: str = "ncu", keep: bool = False) -> Path:
    """keep: the rows of implementations not profiled now stay in profile.csv as they were (their own gpu and
    commit columns say where they were measured); otherwise the file holds this run alone."""
    from . import registry
    from .environment import git_commit
    import torch
    have = available_metrics(ncu)
    # launch__* are launch attributes, not counters: --query-metrics does not list them, the raw page has them.
    metrics = [m for m in METRICS.values() if not have or m.startswith("launch__") or m.split(".")[0] in have]
    missing = sorted(set(METRICS.values()) - set(metrics))
    all_cases = cases(n, ragged, impls)
    rows, notes = [], [f"metrics this ncu lacks: {missing}"] if missing else []
    gpu, commit = torch.cuda.get_device_name(0), git_commit()
    path = Path(out_dir) / "profile.csv"
    profiled = {c[0] for c in all_cases}
    kept = []
    if keep and path.exists():
        with path.open() as f:
            kept = [r for r in csv.DictReader(f) if r["impl"] not in profiled]
    # One ncu process per (shape, backend), the n^3 calls first, and the file rewritten after each: a child
    # stays short, a failure stays local, and a run cut short by a time limit keeps what it measured.
    chunks = [[c for c in all_cases if (c[2:] == (n, n, n)) == square and registry.get(c[0]).backend == b]
              for square in (True, False) for b in sorted({registry.get(c[0]).backend for c in all_cases})]
    for chunk in [c for c in chunks if c]:
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
               "--metrics", ",".join(metrics), sys.executable, "-m", "study.profile", "--child", json.dumps(chunk)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        got, more = parse(proc.stdout)
        what = f"{registry.get(chunk[0][0]).backend} at {'x'.join(map(str, chunk[0][2:]))}"
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
    from . import registry
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=PROFILE_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(kept)
        for r in rows:
            impl = registry.get(r["impl"])
            w.writerow({**r, "backend": impl.backend, "stage": impl.stage_label,
                        "precision": impl.precision(r["dtype"]), "gpu": gpu, "commit": commit})


def _shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(v) for v in text.lower().split("x"))
    return m, n, k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--ragged", type=_shape, default=(3001, 2999, 1001))
    ap.add_argument("--impls", default="", help="comma list of implementations (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "reports")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of implementations not profiled now (with --impls)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        child([tuple(c) for c in json.loads(args.child)])
        return 0
    print(run(args.n, args.ragged, args.out, [i for i in args.impls.split(",") if i] or None,
              os.environ.get("NCU", "ncu"), args.keep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
