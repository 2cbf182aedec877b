"""The speed ceiling of any fp32 emulation by three fp16 products, measured on the GPU at hand.

cuBLAS's own fp16 GEMM (fp32 output) over K = 3N does exactly the three products' multiply-adds, with no split,
no scaling and no promotion: no 3-product method can expect to beat it.  Printed beside cuBLAS SGEMM (TF32 off)
and cuda:14_tcec, each timed as the sweep times a row (study.measure.timing.bench: L2 flushed before every call,
the median, the mean SM clock while it ran).  A development probe (not part of the sweep): its output goes into
NOTES.md (the tenth session's figures came from its first version, commit 9923281: median of 20, its own loop).

    python tools/tcec_ceiling.py
"""
from __future__ import annotations

import torch

from study import registry
from study.measure.timing import ClockSampler, L2Flusher, bench


def main():
    device = torch.device("cuda")
    flush, clock = L2Flusher(device), ClockSampler(device)
    torch.backends.cuda.matmul.allow_tf32 = False
    tcec = registry.get("cuda:14_tcec")
    for n in (4096, 8192):
        a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
        out = torch.empty(n, n, device=device)
        a3 = torch.randn(n, 3 * n, device=device).half()
        b3 = torch.randn(3 * n, n, device=device).half()
        calls = {"sgemm": lambda: torch.mm(a, b, out=out),
                 "three": lambda: torch.mm(a3, b3, out_dtype=torch.float32, out=out),
                 "tcec": lambda: tcec(a, b, out=out)}
        t = {k: bench(fn, flush, clock) for k, fn in calls.items()}
        us = {k: v.ms * 1e3 for k, v in t.items()}
        flop = 2 * n**3
        print(f"{n}^3: SGEMM {us['sgemm']:.0f} us ({flop / us['sgemm'] / 1e6:.1f} TFLOP/s, 4x = "
              f"{4 * flop / us['sgemm'] / 1e6:.1f}); cuBLAS fp16 {n}x{n}x{3 * n} fp32-out {us['three']:.0f} us "
              f"({3 * flop / us['three'] / 1e6:.0f} fp16 TFLOP/s, {t['three'].sm_clock_mhz or 0:.0f} MHz) -> "
              f"3-product bound {flop / us['three'] / 1e6:.1f} TFLOP/s before the passes; cuda:14_tcec "
              f"{us['tcec']:.0f} us ({flop / us['tcec'] / 1e6:.1f})", flush=True)


if __name__ == "__main__":
    main()
