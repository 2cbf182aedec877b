"""Measure one (implementation, dtype, shape): fresh inputs, poisoned output, verify, then time.

Knows nothing about any single kernel: everything it needs comes from the `Impl` it is handed.
"""
from __future__ import annotations

import datetime as dt
import traceback

import torch

from study.core.contract import DTYPES
from study.core.schema import RESULT_COLUMNS
from study.measure.timing import IDLE_GAP_MS, IDLE_MIN_CALL_MS, POWER_LIMITED_FRACTION, ClockSampler, L2Flusher, bench
from study.core.verify import make_inputs, run_and_judge


def flops(M: int, N: int, K: int) -> float:
    return 2.0 * M * N * K


def compulsory_bytes(M: int, N: int, K: int, dtype: str, out_dtype: str, beta: float) -> int:
    """Each operand read once and D written once: the least traffic any implementation can get away with."""
    s_in, s_out = DTYPES[dtype].itemsize, DTYPES[out_dtype].itemsize
    return s_in * (M * K + K * N) + s_out * M * N + (s_in * M * N if beta != 0 else 0)


class Runner:
    def __init__(self, device: torch.device, budget_ms: float = 300.0, min_reps: int = 3, context: dict | None = None,
                 max_clock_mhz: float | None = None):
        self.device = device
        self.max_clock_mhz = max_clock_mhz    # a row timed below POWER_LIMITED_FRACTION of it is timed idle too
        self.flush = L2Flusher(device)
        self.clock = ClockSampler(device)
        self.budget_ms, self.min_reps = budget_ms, min_reps
        self.context = context or {}          # gpu, commit: the same on every row

    def measure(self, impl, dtype: str, M: int, N: int, K: int, alpha: float = 1.0, beta: float = 0.0,
                shape_set: str = "custom", baseline: dict | None = None) -> dict:
        out_dtype = impl.out_dtypes.get(dtype, dtype)
        precision = impl.precision(dtype)
        row = dict.fromkeys(RESULT_COLUMNS, "")
        row.update(self.context, timestamp=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                   impl=impl.name, stage=impl.stage_label, stage_title=impl.title, backend=impl.backend,
                   dtype=dtype, precision=precision, M=M, N=N, K=K, shape_set=shape_set, alpha=alpha, beta=beta,
                   intensity=flops(M, N, K) / compulsory_bytes(M, N, K, dtype, out_dtype, beta), passed=False)
        try:
            x = make_inputs(M, N, K, dtype, self.device, alpha, beta, out_dtype)
            verdict = run_and_judge(impl, dtype, x)
            row.update(relerr=verdict.relerr, tol=verdict.tol, passed=verdict.passed, error=verdict.error)
            launch, _ = impl.prepare(x.a, x.b, x.c, alpha, beta, x.out, **x.scale_args(impl))   # checked once, untimed
            if verdict.passed:
                t = bench(launch, self.flush, self.clock, self.budget_ms, self.min_reps)
                row.update(ms=t.ms, ms_p20=t.ms_p20, ms_p80=t.ms_p80, reps=t.reps, sm_clock_mhz=t.sm_clock_mhz,
                           host_ms=t.host_ms,
                           tflops=flops(M, N, K) / (t.ms * 1e9),
                           gbps=compulsory_bytes(M, N, K, dtype, out_dtype, beta) / (t.ms * 1e6))
                if self.power_limited(t.sm_clock_mhz) and t.ms >= IDLE_MIN_CALL_MS:
                    row.update(self.idle_timing(launch, t.ms))
            row.update(launch.resources() or {})
        except Exception as e:  # a failed row is a result too; the sweep goes on
            row["error"] = f"{type(e).__name__}: {e}".replace("\n", " ")[:500]
            if not isinstance(e, (ValueError, TypeError)):
                traceback.print_exc()
                torch.cuda.synchronize(self.device)  # a sticky device error raises here and ends the sweep
        if impl.backend == "cublas" and baseline is None and row["tflops"] != "":   # the baseline itself
            row.update(baseline_impl=impl.name, pct_cublas=100.0)
        elif baseline is not None:
            row["baseline_impl"] = baseline["impl"]
            if row["tflops"] != "" and baseline.get("tflops") not in ("", None):
                row["pct_cublas"] = 100.0 * row["tflops"] / baseline["tflops"]
        return row

    def power_limited(self, clock_mhz) -> bool:
        return bool(clock_mhz and self.max_clock_mhz and clock_mhz < POWER_LIMITED_FRACTION * self.max_clock_mhz)

    def idle_timing(self, launch, ms: float) -> dict:
        """The idle-gap protocol's columns for a call that ran power-limited back to back (study/measure/timing.py)."""
        t = bench(launch, self.flush, self.clock, self.budget_ms, self.min_reps, idle_ms=max(IDLE_GAP_MS, ms))
        return {"ms_idle": t.ms, "ms_idle_p20": t.ms_p20, "ms_idle_p80": t.ms_p80, "sm_clock_idle_mhz": t.sm_clock_mhz}

    def retime_idle(self, impl, row: dict) -> dict:
        """idle_timing for a row of an earlier sweep (study.sweep --idle-timings): fresh inputs, judged again, and
        timed only if this process runs the row's own kernel."""
        dtype, (M, N, K) = row["dtype"], (int(row[d]) for d in "MNK")
        alpha, beta, ms = float(row["alpha"]), float(row["beta"]), float(row["ms"])
        x = make_inputs(M, N, K, dtype, self.device, alpha, beta, impl.out_dtypes.get(dtype, dtype))
        verdict = run_and_judge(impl, dtype, x)
        if not verdict.passed:
            raise RuntimeError(f"{impl.name} {dtype} {M}x{N}x{K} failed again: {verdict.error}")
        launch, _ = impl.prepare(x.a, x.b, x.c, alpha, beta, x.out, **x.scale_args(impl))
        launch()                                  # compiled (and autotuned) now, so its resources are known
        if not same_kernel(launch.resources(), row):
            raise RuntimeError(f"this process runs another kernel than the row's (an autotuner's other pick: "
                               f"{launch.resources()} against registers {row.get('registers')}, shared memory "
                               f"{row.get('smem_bytes')}); not timed")
        return self.idle_timing(launch, ms)


def same_kernel(resources: dict | None, row: dict) -> bool:
    """Whether a prepared launch is the kernel a results row timed, as far as its registers and shared memory tell
    (an autotuned launcher may pick another config in another process); cuBLAS rows carry neither and pass."""
    for col in ("registers", "smem_bytes"):
        want, got = row.get(col), (resources or {}).get(col)
        if want not in ("", None) and got is not None and float(want) != float(got):
            return False
    return True
