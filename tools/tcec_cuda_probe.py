"""Time entries of cuda_kernels/14_tcec.cu, registered or not, against cuBLAS SGEMM, adjacently.

    python tools/tcec_cuda_probe.py tcec_fp16:256:147456:fp16x3-tcec:tcec_fp16_split_b tcec_tf32:256:208896:tf32x3

Each entry is NAME:THREADS:DYNAMIC_SMEM:PRECISION[:SPLIT_ENTRY] (the tolerance it is judged by,
study/schema.py; with SPLIT_ENTRY, B is split first by that kernel, as CudaPresplitLaunch does); it is
launched exactly as the registry launches stage 14 (CudaBatchedLaunch, 128x128 tiles).  Every entry is first
checked on ragged shapes, then timed at --shapes.  A tuning aid: the numbers that count come from study.sweep
on registered implementations.
"""
from __future__ import annotations

import argparse

import torch

from _probe import cublas_row, setup
from study.contract import validate
from study.registry import TCEC_WS_TILE, CudaBatchedLaunch, CudaPresplitLaunch
from study.timing import bench
from study.verify import judge, make_inputs, reference


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("entries", nargs="+")
    ap.add_argument("--shapes", default="4096,8192")
    args = ap.parse_args()
    dev, flush, clock = setup()
    entries = []
    for e in args.entries:
        name, threads, smem, precision, *split = e.split(":")
        common = dict(source="14_tcec.cu", entry=name, block=(int(threads), 1, 1), tile=(128, 128),
                      dynamic_smem=int(smem))
        launch = (CudaPresplitLaunch(**common, split_entry=split[0], ws_tile=TCEC_WS_TILE) if split
                  else CudaBatchedLaunch(**common))
        entries.append((name, precision, launch))

    def launcher(name, launch, precision, x):
        p = validate(name, {"fp32": precision}, {}, x.a, x.b, x.c, x.alpha, x.beta, x.out)
        return lambda: launch(name, p)

    for name, precision, launch in entries:
        for M, N, K in ((1000, 520, 700), (128, 256, 4096), (300, 136, 40)):
            x = make_inputs(M, N, K, "fp32", dev, 1.5, 0.5)
            launcher(name, launch, precision, x)()
            torch.cuda.synchronize()
            v = judge(x.out, reference(x), precision)
            print(f"check {name} {M}x{N}x{K}: relerr {v.relerr:.2e} {'ok' if v.passed else 'FAIL ' + v.error}", flush=True)
    for n in (int(s) for s in args.shapes.split(",")):
        x, ref, base = cublas_row(n, dev, flush, clock)
        for name, precision, launch in entries:
            x.out.fill_(float("nan"))
            go = launcher(name, launch, precision, x)
            go()
            torch.cuda.synchronize()
            v = judge(x.out, ref, precision)
            tk = bench(go, flush, clock)
            tf = 2 * n**3 / tk.ms / 1e9
            print(f"{n}^3 {name:18s} {tf:7.2f} TFLOP/s {tf / base:5.2f}x  relerr {v.relerr:.2e} "
                  f"{'ok' if v.passed else 'FAIL'}  {tk.sm_clock_mhz or 0:.0f} MHz", flush=True)


if __name__ == "__main__":
    main()
