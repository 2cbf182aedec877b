"""Time the Triton tensor-core stages (11-13), the stage-13 tile/pipeline variants and the tuned Triton baseline
against cuBLAS (torch.mm on the same fp16/bf16 inputs), adjacently, on the GPU at hand.

    python tools/triton_tc_probe.py [--shapes 4096,8192] [--dtypes fp16,bf16] [--variants all|default]

Every row is checked against the float64 reference first (a wrong kernel prints FAIL and is still timed, so
the row is never mistaken for a result).  It is a tuning aid: the numbers that count come from study.sweep.
"""
from __future__ import annotations

import argparse
import importlib
import sys

import torch

from _probe import setup
from study.contract import validate
from study.timing import bench
from study.verify import judge, make_inputs, reference, reference_terms

import study

M13 = importlib.import_module("triton_kernels.13_swizzle")
BASE = M13.TMA_META
# Stage 13 variants: name -> compile-time parameters of the persistent TMA kernel (beta == 0 only: with C
# read through TMA, 128x256x64 at 4 stages needs 262 KB of shared memory).  A warp-specialized variant
# (tl.range(warp_specialize=True), num_warps=4, unflattened, pointer epilogue) compiled but did not finish
# within 240 s on the H100 (hang, not diagnosed), so it is no longer in this list.
VARIANTS = {
    "tma 128x256x64 s3 split": BASE,
    "tma 128x256x64 s4 split": dict(BASE, num_stages=4),
    "tma 256x128x64 s3 split": dict(BASE, BLOCK_M=256, BLOCK_N=128),
    "tma 128x128x64 s4 split": dict(BASE, BLOCK_N=128, num_stages=4),
}
REGISTERED = ["triton:11_wmma_async", "triton:12_mma_ldmatrix", "triton:13_swizzle", "triton:tuned"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--variants", default="all")
    args = ap.parse_args()
    dev, flush, clock = setup()
    variants = VARIANTS if args.variants == "all" else {k: VARIANTS[k] for k in args.variants.split(";")}
    print(f"{torch.cuda.get_device_name(dev)}, torch {torch.__version__}", flush=True)
    for dtype in args.dtypes.split(","):
        for n in (int(s) for s in args.shapes.split(",")):
            x = make_inputs(n, n, n, dtype, dev)
            ref = reference(x)
            t = bench(lambda: torch.mm(x.a, x.b, out=x.out), flush, clock)
            base = 2 * n**3 / t.ms / 1e9
            print(f"{dtype} {n}^3 cublas                      {base:7.1f} TFLOP/s  {t.sm_clock_mhz or 0:.0f} MHz",
                  flush=True)

            def row(name, go):
                x.out.fill_(float("nan"))
                try:
                    go()
                    torch.cuda.synchronize()
                except Exception as e:   # noqa: BLE001 - a variant that fails to compile or launch is a finding
                    print(f"{dtype} {n}^3 {name:28s} ERROR {type(e).__name__}: {str(e)[-200:]}", flush=True)
                    return
                v = judge(x.out, ref, study.get("triton:13_swizzle").precision(dtype),
                          terms=lambda: reference_terms(x), k=x.a.shape[1])
                tm = bench(go, flush, clock)
                tf = 2 * n**3 / tm.ms / 1e9
                print(f"{dtype} {n}^3 {name:28s} {tf:7.1f} TFLOP/s {100 * tf / base:5.1f}%  relerr {v.relerr:.1e} "
                      f"{'ok' if v.passed else 'FAIL'}  {tm.sm_clock_mhz or 0:.0f} MHz", flush=True)

            for name in REGISTERED:
                run, _ = study.get(name).prepare(x.a, x.b, out=x.out)
                row(name, run)
            p = validate("probe", {dtype: ""}, {}, x.a, x.b, out=x.out)
            for name, meta in variants.items():
                row(name, lambda meta=meta: M13.launch_tma(p, meta))
            del x, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
