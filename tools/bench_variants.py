"""Time unregistered tile variants of a CUDA stage against cuBLAS, adjacently, on the GPU at hand.

    python tools/bench_variants.py cuda_kernels/09_best_simt.cu -D BEST_EXPLORE \\
        x_a2:128x128:256 x_c1:256x128:256 --shapes 4096,8192

Each variant is ENTRY:BMxBN:THREADS[:SMEM_BYTES]; SMEM defaults to the 09 formula for BK=16, 3 stages.  It
is a tuning aid: the numbers that count come from study.sweep on registered implementations.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import torch

from study import cuda_launch
from study.cuda_build import NVCC_FLAGS
from _probe import cublas_row, setup
from study.timing import bench
from study.verify import judge


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("variants", nargs="+")
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("--shapes", default="4096,8192")
    args = ap.parse_args()
    flags = NVCC_FLAGS + tuple(f"-D{d}" for d in args.defines)
    dev, flush, clock = setup()
    for n in (int(s) for s in args.shapes.split(",")):
        x, ref, base = cublas_row(n, dev, flush, clock)
        for v in args.variants:
            entry, tile, threads, *smem = v.split(":")
            bm, bn = (int(s) for s in tile.split("x"))
            sm = int(smem[0]) if smem else 3 * 16 * (bm + 4 + bn) * 4
            k = cuda_launch.kernel(Path(args.source).resolve(), entry, dev, sm, flags)
            grid = (-(-n // bn), -(-n // bm), 1)
            out = torch.full_like(x.out, float("nan"))

            def go():
                cuda_launch.launch(k, grid, (int(threads), 1, 1), sm, [
                    ("int", n), ("int", n), ("int", n), ("float", 1.0), ("ptr", x.a), ("i64", n), ("ptr", x.b),
                    ("i64", n), ("float", 0.0), ("ptr", out), ("i64", n), ("ptr", out), ("i64", n)], dev)
            go()
            torch.cuda.synchronize()
            verdict = judge(out, ref, "fp32")
            t = bench(go, flush, clock)
            tf = 2 * n**3 / t.ms / 1e9
            print(f"{n}^3 {entry:8s} {tile:8s} {tf:7.2f} TFLOP/s {100 * tf / base:5.1f}%  relerr {verdict.relerr:.2e} "
                  f"{'ok' if verdict.passed else 'FAIL'}  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)


if __name__ == "__main__":
    main()
