"""GPU regressions: calls that once gave wrong answers, each test named by what broke.  They run with the GPU
suite (`pytest -m gpu`) but are not part of the evidence count (tests/test_gpu_equivalence.py is)."""
from __future__ import annotations

import pytest
import torch

import study
from study.core.verify import make_inputs, run_and_judge


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("rows_past", [40, 136])
@pytest.mark.parametrize("K", [64, 1])
def test_wide_tiles_that_end_inside_a_consumer(dtype, rows_past, K):
    """cuda:14_wgmma's 256x192 tiles leave through shared memory in 64x64 pieces, 3 per m64 block, alternating
    between two buffers a consumer warpgroup.  Where M ends so that a consumer stores one of its two m64 blocks
    (M mod 256 in (0, 64] for the first, (128, 192] for the second: an odd count of pieces), the next tile's
    first piece once went into the buffer the last TMA store could still be reading: 1024 wrong elements at
    5000x7000x64 on an H200.  Many short tiles (K = 64, K = 1) make that race likely; three calls each."""
    impl = study.get("cuda:14_wgmma")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    M, N = 19 * 256 + rows_past, 7000
    if impl.launch.pick(M, N, sms) is not impl.launch.choices[0]:
        pytest.skip(f"{M}x{N} picks the 128x256 kernel on {sms} SMs")
    for _ in range(3):
        x = make_inputs(M, N, K, dtype, "cuda", 1.0, 0.0)
        v = run_and_judge(impl, dtype, x)
        assert v.passed, f"cuda:14_wgmma {dtype} {M}x{N}x{K} seed={x.seed}: {v.error}"


@pytest.mark.gpu
def test_a_call_slow_to_issue_is_timed_as_gpu_work():
    """A timed call whose host side takes ~1 ms before its one short kernel: the events once bracketed the host's
    time too, once it outlasted the fixed ~100 us sleep before the call (stage 15's Python-launched passes at
    128^3-2048^3 moved by up to 16x between two sweeps).  The sleep now covers the host's time (timing.bench)."""
    import time

    from study.measure import timing
    device = torch.device("cuda", 0)
    x = torch.randn(1 << 16, device=device)
    y = torch.empty_like(x)

    def gpu_only():
        torch.mul(x, 2.0, out=y)

    def slow_host():
        time.sleep(1e-3)
        torch.mul(x, 2.0, out=y)

    flush, clock = timing.L2Flusher(device), timing.ClockSampler(device)
    fast, slow = timing.bench(gpu_only, flush, clock, 50.0), timing.bench(slow_host, flush, clock, 50.0)
    assert slow.host_ms >= 1.0 > fast.host_ms
    assert slow.ms < 0.25 and slow.ms < 5 * max(fast.ms, 0.01), f"{slow.ms:.3f} ms: the host's time was timed"
