"""Time Gluon tensor-core stages 11-13 (and unregistered tile variants of stage 13) against cuBLAS HGEMM.

    python tools/gluon_tc_probe.py [--shapes 4096,8192] [--dtypes fp16,bf16] [--no-variants] [--check]

Per shape and dtype: torch.mm on the same inputs (cuBLAS, timed adjacently), the registered gluon:11/12/13
(and cuda:12/13 when their sources build), then stage 13's variants (fp16 only).  Every kernel's D is judged
against the float64 reference before it is timed.  --check first runs gluon:10 over all four operand
layouts (transposed views) and every dtype on a few ragged shapes.  A tuning aid: the numbers that count
come from study.sweep on registered implementations.
"""
from __future__ import annotations

import argparse
import importlib
import time

import torch

import study
from _probe import setup
from study.contract import validate
from study.timing import bench
from study.verify import judge, make_inputs, reference, reference_terms

# Stage 13 variants: name -> launch parameters (overrides of its META).
VARIANTS = {
    "128x256x64 s4 (META)": {},
    "  no EPI_SMEM": {"EPI_SMEM": False},
    "  no PIPE": {"PIPE": False},
    "  no PIPE, no EPI_SMEM": {"PIPE": False, "EPI_SMEM": False},
    "  no swizzle": {"SMEM_SWIZZLE": False},
    "  GROUP_M 16": {"GROUP_M": 16},
    "128x256x32 s6": {"BK": 32, "STAGES": 6},
    "128x128x32 s6 2x2 (4 warps)": {"BN": 128, "BK": 32, "WN": 2, "STAGES": 6, "num_warps": 4},
}


def check_layouts() -> None:
    impl = study.get("gluon:10_wmma")
    bad = 0
    for dtype in impl.dtypes:
        for (M, N, K) in ((67, 45, 131), (1, 33, 7), (130, 257, 64)):
            for beta in (0.0, 1.0):
                for ab in ("rr", "rc", "cr", "cc"):
                    x = make_inputs(M, N, K, dtype, "cuda", 2.0, beta, impl.out_dtypes.get(dtype))
                    a = x.a.t().contiguous().t() if ab[0] == "c" else x.a
                    b = x.b.t().contiguous().t() if ab[1] == "c" else x.b
                    impl(a, b, x.c, alpha=x.alpha, beta=x.beta, out=x.out)
                    torch.cuda.synchronize()
                    v = judge(x.out, reference(x), impl.precision(dtype), terms=lambda: reference_terms(x), k=x.a.shape[1])
                    if not v.passed:
                        bad += 1
                        print(f"check gluon:10 {dtype} {ab} {M}x{N}x{K} beta={beta}: FAIL {v.error}", flush=True)
    print(f"check gluon:10 layouts: {'all passed' if not bad else f'{bad} failed'}", flush=True)


def timed(label: str, run, out: torch.Tensor, ref: torch.Tensor, precision: str, n: int, base: float, flush, clock):
    try:
        out.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        v = judge(out, ref, precision)
        t = bench(run, flush, clock)
    except Exception as e:   # noqa: BLE001 - a tuning aid reports and goes on
        print(f"{n}^3 {label:34s} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
        return
    tf = 2 * n**3 / t.ms / 1e9
    print(f"{n}^3 {label:34s} {tf:7.1f} TFLOP/s {100 * tf / base:5.1f}%  relerr {v.relerr:.1e} "
          f"{'ok' if v.passed else 'FAIL'}  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--impls", default="gluon:11_wmma_async,gluon:12_mma_ldmatrix,gluon:13_swizzle,"
                                       "cuda:12_mma_ldmatrix,cuda:13_swizzle")
    ap.add_argument("--no-variants", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    dev, flush, clock = setup()
    if args.check:
        check_layouts()
    g13 = importlib.import_module("triton_kernels.gluon.13_swizzle")
    for n in (int(s) for s in args.shapes.split(",")):
        for dtype in args.dtypes.split(","):
            t0 = time.time()
            x = make_inputs(n, n, n, dtype, dev)
            ref = reference(x)
            out = torch.empty_like(x.out)
            t = bench(lambda: torch.mm(x.a, x.b, out=out), flush, clock)
            base = 2 * n**3 / t.ms / 1e9
            print(f"{n}^3 {dtype} cublas (torch.mm)  {base:7.1f} TFLOP/s  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)
            for name in args.impls.split(","):
                impl = study.get(name)
                try:
                    run, _ = impl.prepare(x.a, x.b, out=out)
                except Exception as e:   # noqa: BLE001
                    print(f"{n}^3 {name:34s} ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                timed(f"{dtype} {name}", run, out, ref, impl.precision(dtype), n, base, flush, clock)
            if dtype == "fp16" and not args.no_variants:
                p = validate("probe", {"fp16": "fp16/fp32acc"}, {}, x.a, x.b, out=out)
                for label, over in VARIANTS.items():
                    meta = {**g13.META, **over}
                    timed(f"{dtype} g13 {label}", lambda: g13.launch(p, meta), out, ref, "fp16/fp32acc", n, base,
                          flush, clock)
            print(f"  ({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
