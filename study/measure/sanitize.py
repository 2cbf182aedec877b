"""compute-sanitizer over every CUDA kernel of the study, on ragged shapes; the counts go into the evidence.

    python -m study.sanitize [--evidence reports/gpu-evidence.json] [--tools memcheck,racecheck,synccheck,initcheck]

A child process makes every call `calls` lists: every CUDA implementation, in every dtype and operand layout it
declares, on the shapes in `SHAPES` (1, 33, 257 and a non-square one), on several tiles per block for a
persistent launch and on each tile a dispatch can pick, with beta != 0 so that C is read, and again through
unaligned views (the `_unaligned` entries), with torch's caching allocator off.  Each tool runs the child once,
with host API errors off
(`--report-api-errors no`: cuda-bindings probes driver entry points through cuGetProcAddress, and those
failed probes are not the kernels').  Errors are attributed to the implementation that was running (the
child prints a marker after each one); anything reported in a kernel that is not the study's (torch's own)
is kept as "other".

The records land in gpu-evidence.json under "sanitizer", keyed like the equivalence records by the
implementation's key (study/measure/evidence.py) and this file's own code, with each tool's total, its "other" count
and its exit status.  Any error anywhere, in a study kernel or not, makes no record clean, and
tests/test_evidence.py fails a CUDA kernel without a clean record for its current key.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from study.core.paths import ROOT

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
SHAPES = ((1, 1, 1), (33, 33, 33), (257, 257, 257), (130, 67, 300))


def cuda_impls(only: str = ""):
    from study import registry
    names = {n for n in only.split(",") if n}
    return [i for i in registry.implementations("cuda") if not names or i.name in names]


def _entries(impl) -> set[str]:
    from study.registry import cuda_launches
    return {e for c in cuda_launches(impl) for e in c.entries()}


def calls(impl, sms: int, device):
    """Every call the sanitizer makes of `impl`, as (what, A, B, Inputs, alpha, beta): each dtype on SHAPES with
    C read; at M = 33 each operand layout the implementation declares; a persistent launch on several tiles per
    block; each tile a dispatch can pick; and unaligned views (the `_unaligned` twins) in every case that has
    an aligned one.  tests/test_coverage.py proves on the CPU that these reach every entry."""
    import torch

    from study.core.contract import DTYPES
    from study.registry import DISPATCH_K
    from study.core.verify import make_inputs, pitched16
    layouts = ("rc", "cr", "cc") if "col-major" in impl.layouts else ()
    for dtype in impl.dtypes:
        ints = not DTYPES[dtype].is_floating_point
        alpha, beta = (2.0, 3.0) if ints else (1.5, 0.5)
        # A persistent launch also gets several tiles per block (K = 65: two k-tiles each, so the ring wraps).
        many = getattr(impl.launch, "many_tiles", None)
        shapes = list(SHAPES) + ([(*many(sms), 65)] if many else [])
        dispatch = [(M, N, DISPATCH_K) for M, N in getattr(impl.launch, "shapes", lambda s: [])(sms)]
        for M, N, K in shapes + dispatch:
            x = make_inputs(M, N, K, dtype, device, alpha, beta, impl.out_dtypes.get(dtype))
            if (M, N, K) in dispatch:     # 16-byte aligned rows, so that the tile's vector entry runs
                x.a, x.b, x.c, x.out = (pitched16(t) for t in (x.a, x.b, x.c, x.out))
            yield f"{dtype} {M}x{N}x{K}", x.a, x.b, x, alpha, beta
            if M == 33:
                for ab in layouts:
                    a = x.a.t().contiguous().t() if ab[0] == "c" else x.a
                    b = x.b.t().contiguous().t() if ab[1] == "c" else x.b
                    yield f"{dtype} {M}x{N}x{K} {ab}", a, b, x, alpha, beta
            if M > 1:   # unaligned views: storage offset 1, odd pitch
                rows, cols = x.a.shape
                a = torch.empty(rows * (cols + 2) + 1, dtype=x.a.dtype, device=device)[1:].view(rows, cols + 2)[:, :cols]
                a.copy_(x.a)
                yield f"{dtype} {M}x{N}x{K} unaligned A", a, x.b, x, alpha, beta


def call(impl, what: str, a, b, x, alpha: float, beta: float) -> None:
    """One call, synchronized, so that a report printed before the next "CALL" line is this call's."""
    import torch
    print("CALL", impl.name, what, flush=True)
    impl(a, b, x.c, alpha, beta, out=x.out, **x.scale_args(impl))
    torch.cuda.synchronize()


def child(only: str = "") -> None:
    import torch
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for impl in cuda_impls(only):
        for args in calls(impl, sms, "cuda"):
            call(impl, *args)
        print("SANITIZED", impl.name, flush=True)


# memcheck, synccheck, initcheck: "ERROR SUMMARY: 0 errors"; racecheck: "RACECHECK SUMMARY: 0 hazards displayed
# (0 errors, 0 warnings)".
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error")
_MARKER = re.compile(r"^SANITIZED (\S+)$", re.M)
# A frame in one of the study's kernel sources ("... in 08_warp_specialized.cu:185", "in async_copy.cuh:28").
_OWN_SOURCE = re.compile(r" in [\w.-]+\.cuh?:\d+")
_KERNEL = re.compile(r"\bat (?:0x[0-9a-f]+ in )?(\S.*?)\+0x[0-9a-f]+|Device Frame: ?(\S+?)\+0x[0-9a-f]+")


def attribute(output: str, entry_owner: dict[str, str]) -> tuple[int | None, dict[str, int]]:
    """(total errors, errors per implementation) from one compute-sanitizer run's output.

    The child runs one implementation at a time, synchronizes, and prints "SANITIZED <name>", so a report
    belongs to the implementation whose marker follows it.  Reports name device functions and template
    instances (racecheck gives no entry point), not always an entry, so the marker decides; a report that
    names neither one of the study's entries nor one of its source files (a torch kernel) counts as
    "other"."""
    m = _SUMMARY.search(output)
    total = int(m.group(1) or m.group(2)) if m else None
    per: dict[str, int] = {}
    start = 0
    segments = []
    for mk in _MARKER.finditer(output):
        segments.append((output[start:mk.start()], mk.group(1)))
        start = mk.end()
    segments.append((output[start:], "other"))      # after the last marker: an implementation that never finished
    for text, impl in segments:
        # A report's headline has one space after the "=" run; its detail lines are indented further.
        for block in re.split(r"\n(?=={9} \S)", text):
            head = block.strip().splitlines()[0] if block.strip() else ""
            if "SUMMARY" in head or not _KERNEL.search(block):
                continue
            names = {n for pair in _KERNEL.findall(block) for n in pair if n}
            ours = any(n in entry_owner for n in names) or _OWN_SOURCE.search(block)
            owner = impl if ours else "other"
            per[owner] = per.get(owner, 0) + 1
    return total, per


def run_tool(tool: str, sanitizer: str, only: str) -> tuple[str, int, str]:
    # --error-exitcode: the exit status says whether the tool found anything, even where no summary line is
    # printed or recognised.
    cmd = [sanitizer, "--tool", tool, "--report-api-errors", "no", "--print-limit", "200", "--error-exitcode", "86",
           sys.executable, "-m", "study.sanitize", "--child", "--impls", only]
    # torch's caching allocator off: every tensor is its own cudaMalloc, so an access past an operand's end
    # lands outside any allocation, where memcheck sees it (inside torch's cached slab it would not).
    env = {**os.environ, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    return tool, proc.returncode, proc.stdout + proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evidence", type=Path, default=ROOT / "reports" / "gpu-evidence.json")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--log-dir", type=Path, default=None, help="keep each tool's full output here")
    ap.add_argument("--impls", default="", help="comma list of CUDA implementations (default: all)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.impls)
        return 0
    import torch

    from study.measure import evidence
    from study.measure.environment import git_commit
    impls = cuda_impls(args.impls)
    owner = {e: i.name for i in impls for e in _entries(i)}
    tools = args.tools.split(",")
    with ThreadPoolExecutor(len(tools)) as pool:        # the tools run side by side: each is CPU-bound
        results = list(pool.map(lambda t: run_tool(t, os.environ.get("COMPUTE_SANITIZER", "compute-sanitizer"),
                                                   args.impls), tools))
    counts: dict[str, dict[str, int | None]] = {i.name: {} for i in impls}
    totals: dict[str, dict] = {}
    status = 0
    for tool, rc, out in results:
        if args.log_dir:
            args.log_dir.mkdir(parents=True, exist_ok=True)
            (args.log_dir / f"sanitize_{tool}.log").write_text(out)
        total, per = attribute(out, owner)
        if total is None and rc == 0:
            total = 0                      # no summary line, but the tool's exit status says no error
        done = set(re.findall(r"^SANITIZED (\S+)", out, re.M))
        print(f"{tool}: exit {rc}, {total} errors in total, per implementation {per or '{}'}, "
              f"{len(done)}/{len(impls)} implementations ran", flush=True)
        for i in impls:
            counts[i.name][tool] = per.get(i.name, 0) if i.name in done and total is not None else None
        totals[tool] = {"errors": total, "other": per.get("other", 0), "exit": rc,
                        "implementations_reached": len(done)}
        if total is None:
            print(f"  {tool}: no summary line found; its output ends:\n    " + "\n    ".join(out.splitlines()[-6:]))
        if per.get("other"):
            print(f"  {tool}: {per['other']} errors outside the study's kernels (see the log)")
        status |= rc != 0
    listed: dict[str, list[str]] = {}
    for name, what in re.findall(r"^CALL (\S+) (.*)$", results[0][2], re.M):   # what the child called
        listed.setdefault(name, []).append(what)
    evidence.record_sanitizer(args.evidence, counts, totals, git_commit(), listed)
    return status
