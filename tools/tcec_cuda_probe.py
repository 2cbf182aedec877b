"""Time entries of cuda_kernels/14_tcec.cu, registered or not, against cuBLAS SGEMM, adjacently.

    python tools/tcec_cuda_probe.py tcec_fp16:256:180224:fp16x3-tcec tcec_ws_fp16:512:204832:fp16x3-tcec

Each entry is NAME:THREADS:DYNAMIC_SMEM:PRECISION (the tolerance it is judged by, study/schema.py).  Every entry
is first checked on a ragged shape, then timed at --shapes.  A tuning aid: the numbers that count come from
study.sweep on registered implementations.
"""
from __future__ import annotations

import argparse

import torch

from study import cuda_launch
from study.registry import CUDA_DIR
from study.timing import ClockSampler, L2Flusher, bench
from study.verify import judge, make_inputs, reference


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("entries", nargs="+")
    ap.add_argument("--shapes", default="4096,8192")
    args = ap.parse_args()
    dev = torch.device("cuda", 0)
    flush, clock = L2Flusher(dev), ClockSampler(dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    entries = []
    for e in args.entries:
        name, threads, smem, precision = e.split(":")
        entries.append((name, int(threads), int(smem), precision,
                        cuda_launch.kernel(CUDA_DIR / "14_tcec.cu", name, dev, int(smem))))

    def launcher(k, threads, smem, x, M, N, K):
        grid = (-(-N // 128), -(-M // 128), 1)
        return lambda: cuda_launch.launch(k, grid, (threads, 1, 1), smem, [
            ("int", M), ("int", N), ("int", K), ("float", x.alpha), ("ptr", x.a), ("i64", x.a.stride(0)),
            ("ptr", x.b), ("i64", x.b.stride(0)), ("float", x.beta), ("ptr", x.c), ("i64", x.c.stride(0)),
            ("ptr", x.out), ("i64", x.out.stride(0))] + [("i64", 0)] * 4, dev)

    for name, threads, smem, precision, k in entries:
        for M, N, K in ((1000, 520, 700), (128, 256, 4096), (300, 136, 40)):
            x = make_inputs(M, N, K, "fp32", dev, 1.5, 0.5)
            launcher(k, threads, smem, x, M, N, K)()
            torch.cuda.synchronize()
            v = judge(x.out, reference(x), precision)
            print(f"check {name} {M}x{N}x{K}: relerr {v.relerr:.2e} {'ok' if v.passed else 'FAIL ' + v.error}", flush=True)
    for n in (int(s) for s in args.shapes.split(",")):
        x = make_inputs(n, n, n, "fp32", dev)
        ref = reference(x)
        t = bench(lambda: torch.mm(x.a, x.b, out=x.out), flush, clock)
        base = 2 * n**3 / t.ms / 1e9
        print(f"{n}^3 cublas {base:7.2f} TFLOP/s  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)
        for name, threads, smem, precision, k in entries:
            x.out.fill_(float("nan"))
            go = launcher(k, threads, smem, x, n, n, n)
            go()
            torch.cuda.synchronize()
            v = judge(x.out, ref, precision)
            tk = bench(go, flush, clock)
            tf = 2 * n**3 / tk.ms / 1e9
            print(f"{n}^3 {name:18s} {tf:7.2f} TFLOP/s {tf / base:5.2f}x  relerr {v.relerr:.2e} "
                  f"{'ok' if v.passed else 'FAIL'}  {tk.sm_clock_mhz or 0:.0f} MHz", flush=True)


if __name__ == "__main__":
    main()
