"""Time the mma.sync stages (12, 13) and their unregistered variants against cuBLAS, adjacently.

    python tools/mma_probe.py [--shapes 4096,8192,MxNxK] [--dtypes fp16,bf16] [--only x13_] [--peak] [--reps 2]

Each row: TFLOP/s, % of cuBLAS's torch.mm on the same inputs (timed just before), the relative error
against float64 and the mean SM clock.  The registered stages run through their Impl (the launcher the
sweep uses); the variants are the MMA_EXPLORE entries of the two .cu files.  --reps repeats the whole
shape's table to show the run-to-run spread.  --peak also times study/kernels/mma_peak.cu.  A tuning aid:
the numbers that count come from study.sweep.
"""
from __future__ import annotations

import argparse

import torch

import study
from _probe import setup
from study import cuda_launch
from study.cuda_build import NVCC_FLAGS
from study.paths import CUDA_DIR
from study.timing import bench
from study.verify import judge, make_inputs, reference

FLAGS = NVCC_FLAGS + ("-DMMA_EXPLORE",)
TAG = {"fp16": "f16", "bf16": "bf16"}
PRECISION = {"fp16": "fp16/fp32acc", "bf16": "bf16/fp32acc"}


def smem12(bm, bn, bk, stages, pad=0):
    return stages * (bm * (bk + pad) + bk * (bn + pad)) * 2


def smem13(bm, bn, bk, stages):
    return max(stages * (bm * bk + bk * bn) * 2, bm * (bn + 8) * 4)


# name -> (source, entry prefix, (BM, BN), threads, dynamic smem); must match the .cu files' MMA_EXPLORE lists.
# x13_abl*: ablations (wrong results on purpose): 1 no copies, 2 no fragment loads, 4 no wait/barrier in the
# k-loop, 3 = 1 + 2.
VARIANTS = {
    "x12_pad8": ("12_mma_ldmatrix.cu", "x12_pad8", (128, 128), 256, smem12(128, 128, 32, 3, 8)),
    "x12_128x256x64_s4": ("12_mma_ldmatrix.cu", "x12_128x256x64_s4", (128, 256), 256, smem12(128, 256, 64, 4)),
    "x13_128x256x64_s3": ("13_swizzle.cu", "x13_128x256x64_s3", (128, 256), 256, smem13(128, 256, 64, 3)),
    "x13_256x128x64_s4": ("13_swizzle.cu", "x13_256x128x64_s4", (256, 128), 256, smem13(256, 128, 64, 4)),
    "x13_128x256x32_s4": ("13_swizzle.cu", "x13_128x256x32_s4", (128, 256), 256, smem13(128, 256, 32, 4)),
    "x13_direct": ("13_swizzle.cu", "x13_direct", (128, 256), 256, 4 * (128 * 64 + 64 * 256) * 2),
    "x13_g16": ("13_swizzle.cu", "x13_g16", (128, 256), 256, smem13(128, 256, 64, 4)),
    **{n: ("13_swizzle.cu", n, (128, 256), 256, smem13(128, 256, 64, 4))
       for n in ("x13_abl1", "x13_abl2", "x13_abl4", "x13_abl3")},
}
# TMA-fed persistent variants of 13 (x13t_*): launched like cuda:13_swizzle-tma, built with MMA_EXPLORE.
TMA_VARIANTS = {"x13t_c2": (4, 2), "x13t_s3": (3, 1)}   # name -> (ring slots, cluster size)
REGISTERED = ("cuda:12_mma_ldmatrix", "cuda:13_swizzle", "cuda:13_swizzle-tma")


def tma_variant_runner(name, dtype, x, dev):
    import dataclasses
    launch = study.get("cuda:13_swizzle-tma").launch
    stages, cluster = TMA_VARIANTS[name]
    smem = stages * (128 * 64 + 64 * 256) * 2 + 1024 + 3 * stages * 8
    launch = dataclasses.replace(launch, entry=f"{name}_{{pair}}", dynamic_smem=smem, cluster=cluster)
    k = cuda_launch.kernel(CUDA_DIR / launch.source, f"{name}_{TAG[dtype]}", dev, smem, FLAGS)
    return lambda: launch.launch_kernel(k, x.a, x.b, x.out, 1.0, 0.0, x.out)


def variant_runner(name, dtype, x, dev):
    if name in TMA_VARIANTS:
        return tma_variant_runner(name, dtype, x, dev)
    source, prefix, (bm, bn), threads, smem = VARIANTS[name]
    k = cuda_launch.kernel(CUDA_DIR / source, f"{prefix}_{TAG[dtype]}", dev, smem, FLAGS)
    M, K = x.a.shape
    N = x.b.shape[1]
    grid = (-(-N // bn), -(-M // bm), 1)
    args = [("int", M), ("int", N), ("int", K), ("double", 1.0), ("ptr", x.a), ("i64", x.a.stride(0)),
            ("ptr", x.b), ("i64", x.b.stride(0)), ("double", 0.0), ("ptr", x.out), ("i64", x.out.stride(0)),
            ("ptr", x.out), ("i64", x.out.stride(0))]
    return lambda: cuda_launch.launch(k, grid, (threads, 1, 1), smem, args, dev)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--only", default="", help="comma-separated name prefixes of variants to run (default all)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--peak", action="store_true")
    ap.add_argument("--once", action="store_true", help="run each kernel once, untimed (for ncu)")
    args = ap.parse_args()
    dev, flush, clock = setup()
    if args.peak:
        from study.ceilings import mma_sync_peak
        clocks = {}
        for name, v in mma_sync_peak(dev, clock, clocks).items():
            print(f"peak {name:28s} {v:8.1f}  {clocks[name] or 0:.0f} MHz", flush=True)
        # The same f16 chains from 8 warps per SM (2 per scheduler, as stages 12 and 13 run) instead of 32.
        from study.ceilings import _timed
        from study.paths import ROOT
        k = cuda_launch.kernel(ROOT / "study" / "kernels" / "mma_peak.cu", "mma_peak_f16", dev)
        sms = torch.cuda.get_device_properties(dev).multi_processor_count
        out = torch.empty(2 * sms * 256, dtype=torch.int32, device=dev)
        for blocks, threads in ((sms, 256), (sms, 128), (2 * sms, 256)):
            run = lambda: cuda_launch.launch(k, (blocks, 1, 1), (threads, 1, 1), 0,
                                             [("ptr", out), ("int", 2048), ("int", 0x3C003C00)], dev)
            run()
            ms, mhz = _timed(run, 10, dev, clock)
            tf = 4096 * 64 * 2048 * blocks * (threads // 32) / (ms * 1e9)
            print(f"peak f16 {blocks // sms} x {threads} threads per SM {tf:8.1f}  {mhz or 0:.0f} MHz", flush=True)
        # A warp's 64x64 GEMM tile from registers (4 A x 8 B fragments, 32 accumulators).
        for entry in ("mma_tile_f16", "mma_tile_f16_bmajor"):
            k = cuda_launch.kernel(ROOT / "study" / "kernels" / "mma_peak.cu", entry, dev)
            for blocks, threads in ((sms, 256), (2 * sms, 256)):
                run = lambda: cuda_launch.launch(k, (blocks, 1, 1), (threads, 1, 1), 0,
                                                 [("ptr", out), ("int", 512), ("int", 0x3C003C00)], dev)
                run()
                ms, mhz = _timed(run, 10, dev, clock)
                tf = 4096 * 32 * 8 * 512 * blocks * (threads // 32) / (ms * 1e9)
                print(f"{entry} {blocks // sms} x {threads} threads per SM {tf:8.1f}  {mhz or 0:.0f} MHz", flush=True)
    only = [s for s in args.only.split(",") if s]
    names = [*REGISTERED, *(v for v in (*VARIANTS, *TMA_VARIANTS) if not only or any(v.startswith(o) for o in only))]
    for shape in args.shapes.split(","):
        M, N, K = (int(v) for v in shape.split("x")) if "x" in shape else (int(shape),) * 3
        for dtype in args.dtypes.split(","):
            x = make_inputs(M, N, K, dtype, dev)
            n = shape
            ref = reference(x)
            for rep in range(args.reps):
                t = bench(lambda: torch.mm(x.a, x.b, out=x.out), flush, clock) if not args.once else None
                base = 2 * M * N * K / t.ms / 1e9 if t else 0.0
                if t:
                    print(f"{n} {dtype} cublas{'':24s} {base:7.1f} TFLOP/s           {t.sm_clock_mhz or 0:.0f} MHz",
                          flush=True)
                for name in names:
                    try:
                        if name in REGISTERED:
                            run, _ = study.get(name).prepare(x.a, x.b, out=x.out)
                        else:
                            run = variant_runner(name, dtype, x, dev)
                        x.out.fill_(float("nan"))
                        run()
                        torch.cuda.synchronize()
                        v = judge(x.out, ref, PRECISION[dtype])
                        if args.once:
                            print(f"{n} {dtype} {name:30s} ran once, relerr {v.relerr:.1e}", flush=True)
                            continue
                        t = bench(run, flush, clock)
                    except Exception as e:  # one broken variant should not cost the table
                        print(f"{n} {dtype} {name:30s} ERROR {type(e).__name__}: {str(e)[:200]}", flush=True)
                        continue
                    tf = 2 * M * N * K / t.ms / 1e9
                    print(f"{n} {dtype} {name:30s} {tf:7.1f} TFLOP/s {100 * tf / base:5.1f}%  relerr "
                          f"{v.relerr:.1e} {'ok' if v.passed else 'FAIL'}  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)
            del x, ref
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
