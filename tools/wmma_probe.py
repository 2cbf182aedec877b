"""Time the WMMA stages (registered, launched through the registry) against cuBLAS on the same inputs, adjacently.

    python tools/wmma_probe.py --shapes 4096,8192

Rows: cuda:11_wmma_async (fp16, bf16 -> same type) against torch.mm (cuBLAS HGEMM / BF16 GEMM), and stage 10's
f16 -> f32 pair (cuda:10_wmma) against the same torch.mm row.  A tuning aid: the numbers that count come from
study.sweep.
"""
from __future__ import annotations

import argparse

import torch

import study
from _probe import setup
from study.contract import DTYPES
from study.timing import bench
from study.verify import judge, make_inputs, reference


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096")
    ap.add_argument("--impls", default="cuda:11_wmma_async,cuda:10_wmma")
    args = ap.parse_args()
    dev, flush, clock = setup()
    for n in (int(s) for s in args.shapes.split(",")):
        for dtype in ("fp16", "bf16"):
            x = make_inputs(n, n, n, dtype, dev)
            ref = reference(x)
            t = bench(lambda: torch.mm(x.a, x.b, out=x.out), flush, clock)
            base = 2 * n**3 / t.ms / 1e9
            print(f"{n}^3 {dtype} cublas {base:7.2f} TFLOP/s  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)
            for name in args.impls.split(","):
                impl = study.get(name)
                if dtype not in impl.dtypes:
                    continue
                odt = DTYPES[impl.out_dtypes.get(dtype, dtype)]
                out = torch.full((n, n), float("nan"), device=dev, dtype=odt)
                go, _ = impl.prepare(x.a, x.b, out=out)
                go()
                torch.cuda.synchronize()
                v = judge(out, ref, impl.precision(dtype))
                tk = bench(go, flush, clock)
                tf = 2 * n**3 / tk.ms / 1e9
                print(f"{n}^3 {dtype} {name:20s} {tf:7.2f} TFLOP/s {100 * tf / base:5.1f}% of cuBLAS  relerr "
                      f"{v.relerr:.2e} {'ok' if v.passed else 'FAIL'}  {tk.sm_clock_mhz or 0:.0f} MHz", flush=True)


if __name__ == "__main__":
    main()
