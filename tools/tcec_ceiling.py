"""The speed ceiling of any fp32 emulation by three fp16 products, measured on the GPU at hand.

cuBLAS's own fp16 GEMM (fp32 output) over K = 3N does exactly the three products' multiply-adds, with no split,
no scaling and no promotion: no 3-product method can expect to beat it.  Printed beside cuBLAS SGEMM (TF32 off)
and cuda:14_tcec, each the median of 20 calls with L2 flushed between them.  A development probe (not part of
the sweep): its output goes into NOTES.md.

    python tools/tcec_ceiling.py
"""
from __future__ import annotations

import statistics

import pynvml
import torch

from study import registry


def median_us(fn, flush, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return statistics.median(times)


def main():
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    pynvml.nvmlInit()
    nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    tcec = registry.get("cuda:14_tcec")
    for n in (4096, 8192):
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        out = torch.empty(n, n, device="cuda")
        sgemm = median_us(lambda: torch.mm(a, b, out=out), flush)
        a3 = torch.randn(n, 3 * n, device="cuda").half()
        b3 = torch.randn(3 * n, n, device="cuda").half()
        three = median_us(lambda: torch.mm(a3, b3, out_dtype=torch.float32, out=out), flush)
        clock = pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM)
        ours = median_us(lambda: tcec(a, b, out=out), flush)
        flop = 2 * n**3
        print(f"{n}^3: SGEMM {sgemm:.0f} us ({flop / sgemm / 1e6:.1f} TFLOP/s, 4x = {4 * flop / sgemm / 1e6:.1f}); "
              f"cuBLAS fp16 {n}x{n}x{3 * n} fp32-out {three:.0f} us ({3 * flop / three / 1e6:.0f} fp16 TFLOP/s) -> "
              f"3-product bound {flop / three / 1e6:.1f} TFLOP/s before the passes; cuda:14_tcec {ours:.0f} us "
              f"({flop / ours / 1e6:.1f}); SM clock after {clock} MHz", flush=True)


if __name__ == "__main__":
    main()
