"""Bad inputs get a clear error that names the implementation and the constraint, before any launch.

CPU tensors suffice: the checks run before anything touches a device.
"""
from __future__ import annotations

import pytest
import torch

import study
from study.registry import CudaLaunch

ALL = [i.name for i in study.implementations()]


def _args(M=4, N=5, K=6, dtype=torch.float32):
    return torch.randn(M, K).to(dtype), torch.randn(K, N).to(dtype)


@pytest.mark.parametrize("name", ALL)
def test_wrong_dtype(name):
    a, b = _args(dtype=torch.float64)
    with pytest.raises(TypeError, match=rf"{name}: supports dtypes"):
        study.get(name)(a, b)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad, match", [
    (lambda a, b: (a, b[:-1]), "inner dimensions differ"),
    (lambda a, b: (a[0], b), "must be 2-D"),
    (lambda a, b: (a.t().contiguous().t(), b), "row-major"),
    (lambda a, b: (a, b.half() if b.dtype != torch.float16 else b.float()), "share a dtype"),
    (lambda a, b: (a[:0], b), "M=0"),
])
def test_bad_operands(name, bad, match):
    impl = study.get(name)
    a, b = bad(*_args(dtype=_dtype(impl)))
    with pytest.raises((ValueError, TypeError), match=rf"{name}: .*{match}"):
        impl(a, b)


@pytest.mark.parametrize("name", ALL)
def test_beta_needs_c_and_checks_it(name):
    impl = study.get(name)
    a, b = _args(dtype=_dtype(impl))
    with pytest.raises(ValueError, match=rf"{name}: beta != 0 needs C"):
        impl(a, b, None, beta=0.5)
    with pytest.raises(ValueError, match="C must be 4x5"):
        impl(a, b, torch.randn(5, 4).to(a.dtype), beta=0.5)
    with pytest.raises(TypeError, match="alpha must be a finite real"):
        impl(a, b, alpha=float("nan"))


@pytest.mark.parametrize("name", ALL)
def test_out_is_checked(name):
    impl = study.get(name)
    a, b = _args(dtype=_dtype(impl))
    with pytest.raises(ValueError, match="out must be 4x5"):
        impl(a, b, out=torch.empty(5, 5, dtype=a.dtype))
    buf = torch.randn(64).to(a.dtype)
    with pytest.raises(ValueError, match="out overlaps A"):
        impl(buf[:24].view(4, 6), b, out=buf[:20].view(4, 5))


@pytest.mark.parametrize("name", [i.name for i in study.implementations() if i.backend != "triton"])
def test_cpu_tensors_are_refused(name):
    impl = study.get(name)
    a, b = _args(dtype=_dtype(impl))
    with pytest.raises(ValueError, match=rf"{name}: needs CUDA tensors"):
        impl(a, b)


@pytest.mark.parametrize("name", ALL)
def test_dimensions_beyond_32_bit_counters_are_refused(name):
    impl = study.get(name)
    a = torch.empty(1, 1, dtype=_dtype(impl)).expand(1, 2**31)   # a view: no 8 GiB allocated
    b = torch.empty(1, 1, dtype=_dtype(impl)).expand(2**31, 1)
    with pytest.raises(ValueError, match=rf"{name}: K=2147483648 is outside"):
        impl(a, b)


def test_grid_limits_are_checked_before_launch():
    launch = study.get("cuda:02_coalesced").launch
    assert isinstance(launch, CudaLaunch)
    assert launch.grid("x", 33, 65) == (3, 2, 1)
    with pytest.raises(ValueError, match="grid.y <= 65535"):
        launch.grid("cuda:02_coalesced", 65536 * 32 + 1, 8)


def _dtype(impl):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[next(iter(impl.dtypes))]
