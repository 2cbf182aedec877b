"""Energy per GEMM: run each implementation back to back for a while and read the GPU's energy counter.

    python tools/energy_probe.py --impls cuda:15_wgmma,gluon:15_wgmma,cublas --variants g16 --shapes 8192 \
        --dtypes bf16 [--seconds 1.5] [--rounds 2]

Where the power limit sets the clock (an H100 at 8192^3), a kernel that spends less energy per GEMM runs at a
higher clock, so two kernels of equal speed per cycle can differ in TFLOP/s.  This tool separates the two:
per implementation it prints the time per call, the mean SM clock and board power over the run (NVML), the
energy per call (NVML's total-energy counter, mJ) and the cycles per call (time x clock).  No L2 flush between
calls: the steady state of a kernel run back to back.  A tuning aid, not a source of report numbers.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time

import torch

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))

from study import registry  # noqa: E402
from study.core.verify import make_inputs, run_and_judge  # noqa: E402
from study.measure.probe import _shapes, candidates  # noqa: E402


def _sampler(handle, stop, out):
    import pynvml
    while not stop.is_set():
        out.append((pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                    pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0))
        time.sleep(0.005)


def measure(impl, dtype, M, N, K, seconds, handle):
    import pynvml
    x = make_inputs(M, N, K, dtype, torch.device("cuda"), 1.0, 0.0, impl.out_dtypes.get(dtype, dtype))
    verdict = run_and_judge(impl, dtype, x)
    launch, _ = impl.prepare(x.a, x.b, x.c, 1.0, 0.0, x.out)
    for _ in range(3):
        launch()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    launch()
    torch.cuda.synchronize()
    n = max(5, int(seconds / max(time.perf_counter() - t0, 1e-6)))
    samples, stop = [], threading.Event()
    th = threading.Thread(target=_sampler, args=(handle, stop, samples))
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    th.start()
    start.record()
    for _ in range(n):
        launch()
    end.record()
    end.synchronize()
    stop.set()
    th.join()
    e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    ms = start.elapsed_time(end) / n
    body = samples[len(samples) // 5:] or samples        # past the first fifth: the clock has settled
    mhz = sum(s[0] for s in body) / len(body)
    watts = sum(s[1] for s in body) / len(body)
    return dict(impl=impl.name, dtype=dtype, shape=f"{M}x{N}x{K}", passed=verdict.passed, ms=ms,
                tflops=2.0 * M * N * K / (ms * 1e9), mhz=mhz, watts=watts, mj=(e1 - e0) / n,
                mcycles=ms * mhz / 1e3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impls", required=True)
    ap.add_argument("--variants", default="")
    ap.add_argument("--shapes", default="8192")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--seconds", type=float, default=1.5)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    import pynvml
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    names = [n for n in args.impls.split(",") if n]
    impls = candidates([n for n in names if n != "cublas"], [v for v in args.variants.split(",") if v] or None)
    for M, N, K in _shapes(args.shapes):
        for dtype in args.dtypes.split(","):
            base = registry.baseline_for(dtype, impls[0].precision(dtype))
            todo = ([base] if "cublas" in names else []) + [i for i in impls if dtype in i.dtypes]
            for rnd in range(args.rounds):
                for impl in todo:
                    r = measure(impl, dtype, M, N, K, args.seconds, handle)
                    print(f"{r['shape']} {dtype:5s} {r['impl']:30s} r{rnd} {r['ms'] * 1e3:8.1f} us {r['tflops']:7.1f} TFLOP/s "
                          f"{r['mhz']:6.0f} MHz {r['watts']:5.0f} W {r['mj']:7.2f} mJ {r['mcycles']:7.3f} Mcycles "
                          f"{'PASS' if r['passed'] else 'FAIL'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
