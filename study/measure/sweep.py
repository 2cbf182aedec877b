"""Run the study on the local GPU and write reports/<gpu>/ (e.g. reports/h100/): results.csv,
environment.json, ceilings.json, plots, index.html.

    python -m study.sweep --list                  # implementations, stages, dtypes and shape presets
    python -m study.sweep --quick                 # ~5 minutes: square 256..8192, every dtype
    python -m study.sweep                         # the full ladder 128..8192 plus Llama 3 projection shapes
    python -m study.sweep --stages 03 --backends cuda,cublas --shapes 4096x4096x4096,8192x1024x8192
    python -m study.sweep --resume                # skip rows already in results.csv
    python -m study.sweep --stages 16 --dtypes fp8e4m3 --redo   # time these rows and their baselines again
    python -m study.sweep --gpus all              # every GPU of the host, one torchrun rank each
    torchrun --nproc-per-node 4 -m study.sweep    # the same, started by hand (also --nnodes: study/measure/shard.py)

Rows are appended to results.csv as they are measured, so an interrupted sweep loses nothing.  For every
(shape, dtype) the cuBLAS row of matching precision is timed first, adjacent to the rows it normalises.
"""
from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

from study.core import cli
from study import registry
from study.core.clock import IDLE_MIN_CALL_MS
from study.core.paths import CUDA_DIR
from study.core.schema import RESULT_COLUMNS
from study.core.shapes import DECODE, LLAMA3, PRESETS, QUICK_SQUARE, SQUARE
from study.measure import shard

REPORTS = registry.ROOT / "reports"


def gpu_slug(name: str) -> str:
    """The reports/ directory of a GPU: "NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA H200" -> "h200"; another name,
    lower-cased, its words joined by "-"."""
    import re
    m = re.search(r"\b([A-Z]{1,2}\d{2,4}[A-Z]?)\b", name.replace("NVIDIA", ""))
    return m.group(1).lower() if m else re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def parse_shapes(spec: str, quick: bool) -> list[tuple[int, int, int, str]]:
    shapes = []
    for part in spec.split(","):
        part = part.strip()
        if part == "square":
            shapes += [(n, n, n, "square") for n in (QUICK_SQUARE if quick else SQUARE)]
        elif part == "llama3":
            shapes += [(m, n, k, "llama3") for _, m, n, k in LLAMA3]
        elif part == "decode":
            shapes += [(m, n, k, "decode") for _, m, n, k in DECODE]
        elif part == "all":
            shapes += parse_shapes("square,llama3", quick)
        else:
            try:
                m, n, k = (int(v) for v in part.lower().split("x"))
            except ValueError:
                raise SystemExit(f"--shapes: {part!r} is not a preset (square, llama3, decode, all) or MxNxK") from None
            shapes.append((m, n, k, "square" if m == n == k else "custom"))
    return shapes


def select(stages: str, backends: str) -> list[registry.Impl]:
    want_stages = None if stages == "all" else {s.strip() for s in stages.split(",")}
    want_backends = {b.strip() for b in backends.split(",")}
    known_stages = {s.number for s in registry.stages()} | {"baseline"}
    known_backends = {i.backend for i in registry.implementations()}
    if want_stages and want_stages - known_stages:
        raise SystemExit(f"--stages: no stage {', '.join(sorted(want_stages - known_stages))}; "
                         f"known: {', '.join(sorted(known_stages))}")
    if want_backends - known_backends:
        raise SystemExit(f"--backends: no backend {', '.join(sorted(want_backends - known_backends))}; "
                         f"known: {', '.join(sorted(known_backends))}")
    chosen = [i for i in registry.implementations()
              if i.backend in want_backends and (want_stages is None or i.stage_label in want_stages)]
    if not chosen:
        raise SystemExit(f"no implementation matches --stages {stages} --backends {backends}")
    return chosen


_key = shard.row_key


class ResultsFile:
    """results.csv, appended and flushed row by row; with resume, the rows already there are kept (a file of an
    older header is first rewritten in the current one)."""

    def __init__(self, path: Path, resume: bool):
        self.path = path
        kept = shard.read_rows(path) if resume else []
        self.done: dict[tuple, dict] = {_key(row): row for row in kept}
        shard.write_rows(path, [], append=resume)     # the header alone, or none appended to the rows there
        self.f = path.open("a", newline="")
        self.w = csv.DictWriter(self.f, RESULT_COLUMNS, extrasaction="ignore", restval="")

    def write(self, row: dict):
        self.w.writerow(row)
        self.f.flush()
        self.done[_key(row)] = row


def plan(impls, shapes, dtypes):
    """(shape, dtype) groups, each led by the cuBLAS rows its members are compared with."""
    for (M, N, K, shape_set) in shapes:
        for dtype in dtypes:
            members = [i for i in impls if dtype in i.dtypes]
            if not members:
                continue
            baselines = {registry.baseline_for(dtype, i.precision(dtype)) for i in members} - {None}
            ordered = sorted(baselines, key=lambda i: i.name) + [i for i in members if i not in baselines]
            yield (M, N, K, shape_set, dtype, ordered)


def _listing() -> str:
    impls = registry.implementations()
    lines = ["stages:"] + [f"  {s.number}  {s.title}" for s in registry.stages()]
    lines += ["implementations (name: dtype -> precision):"]
    lines += [f"  {i.name}: " + ", ".join(f"{d} -> {p}" for d, p in i.dtypes.items()) for i in impls]
    lines += ["dtypes: " + ", ".join(_all_dtypes()), "backends: " + ", ".join(sorted({i.backend for i in impls})),
              "shape presets:", f"  square: {', '.join(f'{n}^3' for n in SQUARE)} (--quick: "
              f"{', '.join(f'{n}^3' for n in QUICK_SQUARE)})", f"  llama3 ({PRESETS['llama3']}): "
              + ", ".join(f"{name} {m}x{n}x{k}" for name, m, n, k in LLAMA3), f"  all: {PRESETS['all']}"]
    return "\n".join(lines)


def _all_dtypes() -> list[str]:
    from study.measure.frame import dtype_order
    return dtype_order({d for i in registry.implementations() for d in i.dtypes})


def main(argv: list[str] | None = None, render=None) -> int:
    """The sweep; `render(out_dir)`, if given, renders the report afterwards (unless --no-report)."""
    ap = cli.parser("sweep", __doc__)
    ap.add_argument("--list", action="store_true", help="print implementations, stages, dtypes and shape presets")
    ap.add_argument("--stages", default="all", help="comma list of stage numbers and/or 'baseline' (default: all)")
    ap.add_argument("--backends", default=",".join(sorted({i.backend for i in registry.implementations()})),
                    help="comma list of backends (default: %(default)s)")
    ap.add_argument("--dtypes", default=None, help="comma list of input dtypes (default: every dtype an "
                                                   "implementation declares)")
    ap.add_argument("--shapes", default="all",
                    help="square, llama3, decode, all, or MxNxK[,MxNxK...] (default: all; decode is not in all)")
    ap.add_argument("--quick", action="store_true", help="fewer square sizes, no llama3 shapes, half the timing budget")
    ap.add_argument("--resume", action="store_true", help="keep results.csv and skip rows already in it")
    ap.add_argument("--gpus", default=None, help="'all' or a count: that many GPUs of this host, one torchrun rank "
                                                "each (study/measure/shard.py); default: this process's one GPU")
    ap.add_argument("--refresh-stale", action="store_true",
                    help="like --resume, but first drop the rows measured on code that has changed since (stale: "
                         "python -m study.evidence --stale), so that only those, and missing rows, are measured")
    ap.add_argument("--redo", action="store_true",
                    help="like --resume, but first drop every row this selection measures (its stages, backends, "
                         "dtypes and shapes, and their cuBLAS baselines), so that they are measured again side by "
                         "side; the file's other rows stay")
    ap.add_argument("--out", type=Path, default=None,
                    help="output directory (default: reports/<gpu>/, e.g. reports/h100/ on an H100)")
    ap.add_argument("--alpha", type=float, default=1.0, help="D = alpha A B + beta C (default: %(default)s)")
    ap.add_argument("--beta", type=float, default=0.0, help="(default: %(default)s; 0 never reads C)")
    ap.add_argument("--budget-ms", type=float, default=None, help="timing budget per row (default: 300, quick 150)")
    ap.add_argument("--no-ceilings", action="store_true", help="skip measuring the compute and memory ceilings")
    ap.add_argument("--no-report", action="store_true", help="do not render the report afterwards")
    ap.add_argument("--idle-timings", action="store_true",
                    help="time the power-limited rows of the results already in --out a second time, with the GPU "
                         "left idle before each call (study/measure/timing.py), filling their ms_idle columns; "
                         "rows of stale code are left alone")
    ap.add_argument("--profile", action="store_true",
                    help="instead of timing: Nsight Compute counters of every implementation and dtype at 4096^3 "
                         "and one ragged shape, into profile.csv (python -m study.profile; needs ncu, as root)")
    args = ap.parse_args(argv)
    if args.list:
        print(_listing())
        return 0
    # Every argument is checked before anything touches the GPU.
    every = _all_dtypes()
    dtypes = args.dtypes.split(",") if args.dtypes else every
    if set(dtypes) - set(every):
        ap.error(f"--dtypes: no implementation takes {', '.join(sorted(set(dtypes) - set(every)))}; "
                 f"known: {', '.join(every)}")
    shapes = parse_shapes("square" if args.quick and args.shapes == "all" else args.shapes, args.quick)
    impls = select(args.stages, args.backends)
    if args.gpus not in (None, "all") and not (args.gpus.isdigit() and int(args.gpus) > 0):
        ap.error(f"--gpus: {args.gpus!r} is neither 'all' nor a count of GPUs")
    if args.redo and args.refresh_stale:
        ap.error("--redo and --refresh-stale: choose one")

    import torch
    if not torch.cuda.is_available():
        print("study.sweep: no CUDA GPU is visible here, so nothing can be measured.\n"
              "The committed results still render: python -m study.report", file=sys.stderr)
        return 2
    w = shard.world()
    if args.gpus and not w.distributed:
        n = torch.cuda.device_count() if args.gpus == "all" else int(args.gpus)
        if n > 1:
            return _torchrun(n, argv if argv is not None else sys.argv[1:])
    if w.distributed and (args.profile or args.idle_timings):
        ap.error("--profile and --idle-timings run on one GPU: start them without torchrun")
    store = None
    if w.distributed:
        import torch.distributed as dist
        shard.compile_once_per_host()
        torch.cuda.set_device(w.local_rank)
        store = shard.init(w)
        names = [None] * w.size
        dist.all_gather_object(names, torch.cuda.get_device_name())
        if error := shard.one_model(names, gpu_slug):
            if w.rank == 0:
                print(error, file=sys.stderr)
            return 2
    args.out = args.out or REPORTS / gpu_slug(torch.cuda.get_device_name())
    if args.profile:
        from study.measure import ncu
        from study.measure.environment import missing_tool
        error = missing_tool("NCU", "ncu", "Nsight Compute comes with the CUDA toolkit")
        if error:
            print(f"study.sweep --profile: {error}", file=sys.stderr)
            return 2
        return ncu.main(["--out", str(args.out)])

    from tqdm import tqdm

    from study.measure import ceilings

    from study.measure import environment, timing
    from study.measure.runner import Runner

    args.out.mkdir(parents=True, exist_ok=True)
    device = torch.device("cuda", torch.cuda.current_device())

    env = environment.collect(device)
    gpu = {"gpu_index": device.index, "gpu_uuid": timing.gpu_uuid(device)}
    runner = Runner(device, args.budget_ms or (150.0 if args.quick else 300.0),
                    context={"gpu": env["gpu"], "commit": env["commit"], **gpu},
                    max_clock_mhz=env.get("sm_clock_max_mhz"))
    if args.idle_timings:     # the sweep's environment.json stays; it only notes when and where this ran
        path = args.out / "environment.json"
        recorded = json.loads(path.read_text()) if path.exists() else {}
        recorded["idle_timings"] = {k: env.get(k) for k in ("date", "commit", "gpu", "driver")}
        path.write_text(json.dumps(recorded, indent=2))
        return add_idle_timings(args.out / "results.csv", runner)
    gpus = [gpu]
    if w.distributed:
        gpus = [None] * w.size
        dist.all_gather_object(gpus, {"rank": w.rank, "host": w.host, **gpu})
    env.update(sweep_args=" ".join(argv if argv is not None else sys.argv[1:]), ranks=w.size, gpus=gpus)
    if w.rank == 0:
        (args.out / "environment.json").write_text(json.dumps(env, indent=2))

    def measure_ceilings():     # rank 0's, once the other ranks have started on the queue
        path = args.out / "ceilings.json"
        if args.no_ceilings:
            return
        if not ((args.resume or args.refresh_stale or args.redo) and path.exists()):
            print("measuring ceilings ...", flush=True)
            ceilings.write(path, ceilings.measure(device, runner.clock))
        else:   # kept, but for any ceiling it lacks and stage 15's probe of the code as it is now (seconds)
            print("measuring the missing ceilings and stage 15's probe ...", flush=True)
            ceilings.write(path, ceilings.measure(device, runner.clock, kept=json.loads(path.read_text())))

    keys = _warm(impls, device, w, store)     # what each row measured: a later change to the code makes the row stale
    groups = list(plan(impls, shapes, dtypes))
    again = _refresh if args.refresh_stale else _redo(groups, args.alpha, args.beta) if args.redo else None

    def measure(impl, dtype, M, N, K, alpha, beta, shape_set, base):
        if w.rank == 0:
            bar.set_description(f"{impl.name} {dtype} {M}x{N}x{K}")
        row = runner.measure(impl, dtype, M, N, K, alpha, beta, shape_set, base)
        row["impl_key"] = keys.code_key(impl.name)
        return row

    t0 = time.time()
    with tqdm(total=sum(len(g[-1]) for g in groups), unit="row", dynamic_ncols=True, disable=w.rank != 0) as bar:
        if w.distributed:
            def progress(done, total):
                bar.n = done
                bar.refresh()
            measured = shard.run(groups, args.out, w, store, measure=measure, resume=args.resume or again is not None,
                                 alpha=args.alpha, beta=args.beta, budget_ms=runner.budget_ms,
                                 refresh=again, on_row=progress,
                                 first=measure_ceilings)
            dist.destroy_process_group()
            if w.rank != 0:
                return 0
        else:
            measure_ceilings()
            if again is not None:
                again(args.out / "results.csv")
                args.resume = True
            results, measured = ResultsFile(args.out / "results.csv", args.resume), []

            def write(row):
                results.write(row)
                measured.append(row)

            for group in groups:
                for _ in shard.sweep_group(group, results.done, measure, write, args.alpha, args.beta):
                    bar.update()

    wall = time.time() - t0
    env["sweep_wall_s"] = round(wall, 1)
    (args.out / "environment.json").write_text(json.dumps(env, indent=2))
    failed = [r for r in measured if str(r["passed"]) != "True"]
    print(f"study.sweep: {len(measured)} rows measured in {wall:.0f} s on {env['gpu']} x {w.size}, "
          f"{len(measured) - len(failed)} passed, {len(failed)} failed -> {args.out / 'results.csv'}")
    for r in failed:
        print(f"  FAILED {r['impl']} {r['dtype']} {r['M']}x{r['N']}x{r['K']}: {r['error']}")
    _print_table(measured)
    if render is not None and not args.no_report:
        print(f"report: {render(args.out)}")
    return 1 if failed else 0


def _refresh(path: Path):
    print(f"dropped {drop_stale(path)} stale rows; measuring them again", flush=True)


def _redo(groups, alpha: float, beta: float):
    """--redo's refresh(path): drop the rows of `groups` (plan()'s, baselines included) at alpha and beta."""
    def refresh(path: Path):
        print(f"dropped {drop_calls(path, selected(groups, alpha, beta))} rows of the selection; measuring them "
              "again", flush=True)
    return refresh


def selected(groups, alpha: float, beta: float) -> set[tuple]:
    """The row keys (shard.row_key) that plan()'s `groups` measure at alpha and beta."""
    return {(impl.name, dtype, M, N, K, float(alpha), float(beta))
            for M, N, K, _, dtype, ordered in groups for impl in ordered}


def drop_calls(path: Path, keys: set[tuple]) -> int:
    """Rewrite results.csv without the rows whose key is in `keys`; their count."""
    if not Path(path).exists():
        return 0
    rows = shard.read_rows(Path(path))
    kept = [r for r in rows if _key(r) not in keys]
    shard.write_rows(Path(path), kept)
    return len(rows) - len(kept)


def _warm(impls, device, w: shard.World, store):
    """Every selected CUDA kernel built before the first row, nvcc processes side by side (by each host's local rank
    0 under torchrun, into the shared cache, which writes by atomic rename).  Under torchrun the implementations'
    code keys (Triton's and Gluon's compile their units offline) are computed before any row too: the host's other
    ranks start on Triton's and Gluon's while local rank 0 builds, then it joins them, each taking the next from a
    counter of the host's in the store; then every rank reads the others' from the cache: once per host, not once
    per rank.  One GPU computes its keys as rows need them.  The Triton kernels the rows launch compile once per
    host through shard.CompileOnce."""
    import torch

    from study.launch.build import arch_for_capability, build_many
    from study.measure.evidence import Keys

    def build_cuda():
        arch = arch_for_capability(*torch.cuda.get_device_capability(device))
        # strict=False: a kernel that fails to build fails its own rows (each call builds it again and records
        # the error), not the sweep
        build_many(sorted({(CUDA_DIR / c.source, c.flags()) for i in impls for c in registry.cuda_launches(i)}), arch,
                   strict=False)

    if not w.distributed:
        build_cuda()
        return Keys(impls)
    import torch.distributed as dist
    keys = Keys(impls)
    offline = [i for i in impls if not registry.cuda_launches(i)]    # keys that need no CUDA build
    if w.local_rank == 0:
        build_cuda()
    while (n := store.add(f"keys/{w.host}", 1) - 1) < len(offline):
        keys.code_key(offline[n].name)
    dist.barrier()
    for impl in impls:
        keys.code_key(impl.name)
    return keys


def _torchrun(n: int, argv: list[str]) -> int:
    """python -m study.sweep --gpus N: this process becomes torchrun running the same sweep, one rank per GPU of
    this host (exec, so a signal to it, a time limit's too, reaches torchrun, which stops its ranks)."""
    import os
    rest, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--gpus":
            skip = True
        elif not a.startswith("--gpus="):
            rest.append(a)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={n}",
           "-m", "study.sweep", *rest]
    print("study.sweep:", " ".join(cmd[1:]), flush=True)
    os.execv(sys.executable, cmd)


def _num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _print_table(rows):
    """The largest square shape per dtype, one line per implementation: what a reader wants first."""
    by_dtype: dict[str, list] = {}
    for r in rows:
        if r["shape_set"] == "square":
            by_dtype.setdefault(r["dtype"], []).append(r)
    for dtype, rs in by_dtype.items():
        n = max(int(r["M"]) for r in rs)
        print(f"\n{dtype} {n}x{n}x{n}:  impl / precision / TFLOP/s / % cuBLAS / relerr / SM MHz")
        for r in rs:
            if int(r["M"]) == n:
                tf, pct = _num(r["tflops"]), _num(r["pct_cublas"])
                print(f"  {r['impl']:22s} {r['precision']:13s} {tf if tf is not None else float('nan'):8.2f} "
                      f"{pct if pct is not None else float('nan'):7.1f}%  {_num(r['relerr']) or 0:.2e}  "
                      f"{_num(r['sm_clock_mhz']) or 0:.0f}")


def add_idle_timings(path: Path, runner) -> int:
    """Fill the idle-gap columns of every row of `path` that ran power-limited and lacks them (current code only)."""
    from study.measure import evidence
    stale = {_key(r) for r in evidence.stale_rows(path)}
    rows = shard.read_rows(Path(path))
    todo = [r for r in rows if _key(r) not in stale and str(r["passed"]) == "True" and not r.get("ms_idle")
            and runner.power_limited(_num(r["sm_clock_mhz"])) and _num(r["ms"]) >= IDLE_MIN_CALL_MS]
    print(f"study.sweep --idle-timings: {len(todo)} power-limited rows of {len(rows)}", flush=True)
    for i, r in enumerate(todo):
        try:
            r.update(runner.retime_idle(registry.get(r["impl"]), r))
        except Exception as e:  # noqa: BLE001 - the row keeps its back-to-back figure alone
            print(f"  {r['impl']} {r['dtype']} {r['M']}x{r['N']}x{r['K']}: {type(e).__name__}: {e}", flush=True)
        if i % 20 == 19 or i == len(todo) - 1:       # rewritten as it goes: a cut-short run keeps what it timed
            shard.write_rows(Path(path), rows)
            print(f"  {i + 1}/{len(todo)}", flush=True)
    return 0


def drop_stale(path: Path) -> int:
    """Rewrite results.csv without its stale rows (their implementation's code key has changed since); their
    count."""
    from study.measure import evidence
    if not Path(path).exists():
        return 0
    return drop_calls(path, {_key(r) for r in evidence.stale_rows(path)})


def check(report_dir: Path, current: bool = True) -> list[str]:
    """What keeps `report_dir` from being one current, complete sweep: rows of the default sweep that are missing
    or failed, stale rows (measured on code that has changed since, study/measure/evidence.py), rows of more
    than one commit or GPU, calls of the default ncu profile (profile.csv) that are missing, and whatever the data
    fails of study/measure/audit.py (its arithmetic, the ceilings, impossible counters).  Empty: current.
    current=False asks only for a complete sweep: stale rows and rows of several commits pass (a report that
    awaits a re-sweep, its stale rows marked by study.report --stale)."""
    from study.measure import audit, evidence, ncu
    from study.measure.frame import call_key
    report_dir = Path(report_dir)
    path = report_dir / "results.csv"
    if not path.exists():
        return [f"{path}: no results"]
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    problems = []
    have = {call_key(r): r for r in rows
            if float(r["alpha"]) == 1.0 and float(r["beta"]) == 0.0}
    every = _all_dtypes()
    for M, N, K, _, dtype, ordered in plan(registry.implementations(), parse_shapes("all", False), every):
        for impl in ordered:
            r = have.get((impl.name, dtype, M, N, K))
            if r is None:
                problems.append(f"missing: {impl.name} {dtype} {M}x{N}x{K}")
            elif str(r["passed"]) != "True":
                problems.append(f"failed: {impl.name} {dtype} {M}x{N}x{K}: {r['error'][:120]}")
    if current:
        problems += [f"stale: {r['impl']} {r['dtype']} {r['M']}x{r['N']}x{r['K']} ({r['stale_because']})"
                     for r in evidence.stale_rows(path)]
    for col in ("commit", "gpu") if current else ("gpu",):
        values = sorted({r[col] for r in rows})
        if len(values) > 1:
            problems.append(f"rows of {len(values)} {col}s: {', '.join(values)}")
    profile = report_dir / "profile.csv"
    if not profile.exists():
        problems.append(f"{profile}: no ncu profile (python -m study.profile --out {report_dir})")
    else:
        problems += [f"not profiled: {' '.join(map(str, c))}" for c in ncu.unprofiled(profile)[0]]
    return problems + [f"audit: {p}" for p in audit.audit(report_dir)]
