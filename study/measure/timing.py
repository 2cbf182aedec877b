"""Honest kernel timing: CUDA events around each call, the L2 flushed before each, the median reported,
and the SM clock sampled by NVML while it runs (sustained GEMMs move the clock; the row says where).

Two protocols.  Back to back (the default): each call follows the previous one after only the L2 flush, so a
GEMM that draws the card to its power limit is timed at the clock it sustains.  With an idle gap (`idle_ms`): the
host waits for the GPU to finish and then sleeps before each call, so the card cools below its power limit
between calls and each call starts near the maximum clock.  A sweep row whose back-to-back clock falls below
POWER_LIMITED_FRACTION of the maximum is timed both ways (study/measure/runner.py).

Host time.  Before each timed call the GPU sleeps while the host issues the call, so that the start event fires
right before the call's first kernel and the events bracket GPU work.  A call whose Python issues several launches
(a dispatch, passes, a reduction) can take the host longer than a fixed sleep; the sleep is sized from the host's
own time to issue the call (HOST_COVER times it), and that time is reported beside the GPU's (Timing.host_ms)."""
from __future__ import annotations

import statistics
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import torch

from study.core.clock import IDLE_GAP_MS, IDLE_MIN_CALL_MS, POWER_LIMITED_FRACTION  # noqa: F401 - the runner's


SLEEP_CYCLES = 200_000          # the GPU's sleep before a timed call: ~100 us at 2 GHz
HOST_COVER = 2.0                # the sleep lasts at least this many times the host's time to issue the call
SLEEP_HZ = 2.0e9                # cycles a second the sleep is sized at (an SM clock at most ~2 GHz sleeps longer)


@dataclass
class Timing:
    ms: float
    ms_p20: float
    ms_p80: float
    reps: int
    sm_clock_mhz: float | None
    host_ms: float | None = None  # the host's time to issue one call from an idle GPU, which the events exclude


class L2Flusher:
    """Reading a buffer of 2x the L2 size evicts whatever the previous call left there, its dirty lines written
    back now, so every timed call starts with cold caches; nothing it does falls between the timing events.  It
    reads rather than writes: a write leaves L2 full of its own dirty lines, and the timed call would pay for
    writing them back (docs/method.md, "L2 flush")."""

    def __init__(self, device: torch.device):
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        self.buf = torch.ones(max(2 * l2, 64 << 20) // 4, dtype=torch.int32, device=device)
        self.sink = torch.empty((), dtype=torch.int64, device=device)

    def __call__(self, sleep_cycles: int = SLEEP_CYCLES):
        torch.sum(self.buf, dim=0, out=self.sink)
        # Then keep the GPU busy (~100 us at ~2 GHz, or longer: bench sizes it) while the host launches the timed
        # call, so the start event fires right before the kernel: the events bracket GPU work, not Python launch
        # overhead.
        torch.cuda._sleep(sleep_cycles)


def sleep_cycles(host_s: float) -> int:
    """The sleep that covers HOST_COVER times a host time of host_s seconds, and never less than SLEEP_CYCLES."""
    return max(SLEEP_CYCLES, int(host_s * HOST_COVER * SLEEP_HZ))


def gpu_uuid(device) -> str:
    """The GPU's UUID as nvidia-smi and NVML print it (GPU-xxxxxxxx-...); "" where torch does not say."""
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", "")
    return f"GPU-{uuid}" if uuid else ""


class ClockSampler:
    """Mean SM clock over a region, read by a background thread every ~2 ms through NVML."""

    def __init__(self, device: torch.device):
        self.handle = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            try:       # by UUID: NVML's indices ignore CUDA_VISIBLE_DEVICES, so torch's index may name another GPU
                # as bytes: older pynvml releases pass it to c_char_p, which refuses a str
                self.handle = pynvml.nvmlDeviceGetHandleByUUID(gpu_uuid(device).encode())
            except Exception:
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        except Exception:
            self.handle = None

    def read(self) -> float | None:
        if self.handle is None:
            return None
        return float(self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM))

    @contextmanager
    def sampling(self):
        samples: list[float] = []
        stop = threading.Event()

        def loop():
            while not stop.is_set():
                if (v := self.read()) is not None:
                    samples.append(v)
                time.sleep(0.002)

        t = threading.Thread(target=loop, daemon=True) if self.handle is not None else None
        if t:
            t.start()
        result = {"mean": None}
        try:
            yield result
        finally:
            stop.set()
            if t:
                t.join()
            if (v := self.read()) is not None:
                samples.append(v)
            result["mean"] = statistics.fmean(samples) if samples else None


def bench(fn, flush: L2Flusher, clock: ClockSampler, budget_ms: float = 300.0,
          min_reps: int = 3, max_reps: int = 200, idle_ms: float = 0.0) -> Timing:
    """Time `fn` (already run once, so compiled and loaded): one warm-up, an estimate, the host's time to issue a
    call (the warm-up's, or the least of three where it sets the sleep), then `reps` timed calls, each preceded by
    an L2 flush and a sleep that covers the host's time twice over, both outside the events.  Reps fit
    `budget_ms`, within limits.  idle_ms > 0: before each call the host waits for the GPU and sleeps idle_ms
    (the idle-gap protocol)."""
    def issued() -> float:        # seconds the host takes to issue fn's work, from an idle GPU (an empty queue)
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    host = issued()                                   # the warm-up
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    flush(sleep_cycles(host))
    s.record()
    fn()
    e.record()
    e.synchronize()
    est = max(s.elapsed_time(e), 1e-3)
    if sleep_cycles(host) > SLEEP_CYCLES:               # where the host's time sets the sleep: two more samples
        host = min(host, issued(), issued())
    cycles = sleep_cycles(host)
    reps = int(min(max_reps, max(min_reps, budget_ms / (est + idle_ms))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    with clock.sampling() as clk:
        for i in range(reps):
            if idle_ms > 0:
                torch.cuda.synchronize()
                time.sleep(idle_ms / 1e3)
            flush(cycles)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
    times = sorted(st.elapsed_time(en) for st, en in zip(starts, ends))
    q = statistics.quantiles(times, n=5) if len(times) >= 2 else [times[0]] * 4
    return Timing(statistics.median(times), q[0], q[3], reps, clk["mean"], 1e3 * host)
