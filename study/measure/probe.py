"""Time implementations and their unregistered tuning variants beside cuBLAS, judged against float64.

    python -m study.probe --impls cuda:09_best_simt --variants all --shapes 4096,8192
    python -m study.probe --impls cuda:13_swizzle,cuda:13_swizzle-tma --variants x13_g16,x13t_c2 --dtypes fp16
    python -m study.probe --list                       # every declared variant

Each row is measured exactly as the sweep measures one (study/measure/runner.py): fresh inputs, poisoned
output, the float64 judge, then the timed closure with L2 flushed between launches, median time and mean SM
clock.  Per shape and dtype the cuBLAS baseline of the implementation's precision runs first, so "% cuBLAS"
compares calls timed side by side.  Without --once the whole table is measured three times, interleaved,
and each row reports the median of the three (the run-to-run spread on a busy clock is several percent).

A variant is a launch record declared beside its stage in the catalogue (study/registry.py VARIANTS).  A
tuning aid: the numbers a reader is shown come from the sweep of registered implementations.
"""
from __future__ import annotations

import statistics
import sys

from study.core import cli
from study import registry


def _shapes(spec: str) -> list[tuple[int, int, int]]:
    out = []
    for part in spec.split(","):
        dims = [int(v) for v in part.lower().split("x")]
        out.append(tuple(dims * 3) if len(dims) == 1 else tuple(dims))
        if len(out[-1]) != 3:
            raise SystemExit(f"--shapes: {part!r} is neither N nor MxNxK")
    return out


def candidates(names: list[str], variants: list[str] | None) -> list[registry.Impl]:
    """The implementations asked for, each followed by the variants asked for ('all': every declared one)."""
    out = []
    for name in names:
        out.append(registry.get(name))
        declared = registry.VARIANTS.get(name, {})
        wanted = declared if variants == ["all"] else [v for v in variants or [] if v in declared]
        out += [registry.variant(name, v) for v in wanted]
    unknown = set(variants or []) - {"all"} - {v for n in names for v in registry.VARIANTS.get(n, {})}
    if unknown:
        raise SystemExit(f"--variants: {sorted(unknown)} are declared for none of {names} "
                         f"(python -m study.probe --list)")
    return out


def _median_row(rows: list[dict]) -> dict:
    ok = [r for r in rows if r.get("tflops") not in ("", None)]
    if not ok:
        return rows[-1]
    best = sorted(ok, key=lambda r: r["tflops"])[len(ok) // 2]
    return {**best, "spread": (min(r["tflops"] for r in ok), max(r["tflops"] for r in ok)),
            "pct_cublas": statistics.median(r["pct_cublas"] for r in ok if r.get("pct_cublas") not in ("", None))
            if any(r.get("pct_cublas") not in ("", None) for r in ok) else ""}


def run(impls: list[registry.Impl], shapes, dtypes: list[str] | None, rounds: int, budget_ms: float) -> list[dict]:
    import torch

    from study.measure.environment import collect
    from study.measure.runner import Runner
    device = torch.device("cuda", torch.cuda.current_device())
    env = collect(device)
    print(f"{env['gpu']}, commit {env['commit']}, torch {env.get('torch')}, triton {env.get('triton')}", flush=True)
    runner = Runner(device, budget_ms, context={"gpu": env["gpu"], "commit": env["commit"]})
    table = []
    for M, N, K in shapes:
        for dtype in dtypes or sorted({d for i in impls for d in i.dtypes}):
            members = [i for i in impls if dtype in i.dtypes]
            bases = {registry.baseline_for(dtype, i.precision(dtype)) for i in members} - {None}
            rows: dict[str, list[dict]] = {}
            for _ in range(rounds):
                base_rows = {}
                for b in sorted(bases, key=lambda i: i.name):
                    r = runner.measure(b, dtype, M, N, K, shape_set="probe")
                    base_rows[b.name] = {"impl": b.name, "tflops": r["tflops"]}
                    rows.setdefault(b.name, []).append(r)
                for i in (m for m in members if m not in bases):
                    base = registry.baseline_for(dtype, i.precision(dtype))
                    r = runner.measure(i, dtype, M, N, K, shape_set="probe", baseline=base_rows.get(base and base.name))
                    rows.setdefault(i.name, []).append(r)
            for name, rs in rows.items():
                row = _median_row(rs)
                table.append(row)
                _print(row)
    return table


def _print(r: dict) -> None:
    tf, pct = r.get("tflops"), r.get("pct_cublas")
    spread = r.get("spread")
    what = (f"{tf:8.2f} TFLOP/s" + (f" ({spread[0]:.1f}-{spread[1]:.1f})" if spread and spread[0] != spread[1] else "")
            if tf not in ("", None) else f"{'failed':>16s}: {r.get('error') or 'wrong result'}")
    print(f"{r['M']}x{r['N']}x{r['K']} {r['dtype']:5s} {r['impl']:34s} {what}  "
          f"{f'{pct:6.1f}% cuBLAS' if pct not in ('', None) else '':14s} relerr {r.get('relerr') or 0:.2e}  "
          f"{r.get('sm_clock_mhz') or 0:.0f} MHz  {'PASS' if r.get('passed') else 'FAIL'}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("probe", __doc__)
    ap.add_argument("--impls", default="", help="comma list of implementations (python -m study.probe --list)")
    ap.add_argument("--variants", default="", help="comma list of their variants, or 'all' (default: none)")
    ap.add_argument("--shapes", default="4096", help="comma list of N (N^3) or MxNxK (default 4096)")
    ap.add_argument("--dtypes", default="", help="comma list of input dtypes (default: every one they take)")
    ap.add_argument("--once", action="store_true", help="one round instead of the median of three")
    ap.add_argument("--budget-ms", type=float, default=300.0, help="timing budget per row (default 300)")
    ap.add_argument("--list", action="store_true", help="list the declared variants and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name, vs in registry.VARIANTS.items():
            print(f"{name}: {', '.join(vs)}")
        return 0
    names = [n for n in args.impls.split(",") if n]
    if not names:
        ap.error("--impls is required (or --list)")
    for n in names:
        try:
            registry.get(n)
        except KeyError as e:
            ap.error(str(e))
    impls = candidates(names, [v for v in args.variants.split(",") if v] or None)
    shapes = _shapes(args.shapes)
    import torch
    if not torch.cuda.is_available():
        print("study.probe: no CUDA GPU is visible here, so nothing can be timed.", file=sys.stderr)
        return 2
    table = run(impls, shapes, [d for d in args.dtypes.split(",") if d] or None, 1 if args.once else 3,
                args.budget_ms)
    return 0 if all(r.get("passed") for r in table) else 1
