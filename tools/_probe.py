"""What the tuning tools share: the timing setup and the cuBLAS SGEMM row they are compared with."""
from __future__ import annotations

import torch

from study.timing import ClockSampler, L2Flusher, bench
from study.verify import Inputs, make_inputs, reference


def setup() -> tuple[torch.device, L2Flusher, ClockSampler]:
    torch.backends.cuda.matmul.allow_tf32 = False   # the baseline is true fp32 SGEMM
    dev = torch.device("cuda", 0)
    return dev, L2Flusher(dev), ClockSampler(dev)


def cublas_row(n: int, dev, flush: L2Flusher, clock: ClockSampler) -> tuple[Inputs, torch.Tensor, float]:
    """Fresh n^3 fp32 inputs, their float64 reference and cuBLAS SGEMM's TFLOP/s on them (printed)."""
    x = make_inputs(n, n, n, "fp32", dev)
    ref = reference(x)
    t = bench(lambda: torch.mm(x.a, x.b, out=x.out), flush, clock)
    base = 2 * n**3 / t.ms / 1e9
    print(f"{n}^3 cublas {base:7.2f} TFLOP/s  {t.sm_clock_mhz or 0:.0f} MHz", flush=True)
    return x, ref, base
