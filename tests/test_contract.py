"""Bad inputs get a clear error that names the implementation and the constraint, before any launch.

CPU tensors suffice: the checks run before anything touches a device.
"""
from __future__ import annotations

import pytest
import torch

import study
from study.core.contract import DTYPES
from study.registry import CudaLaunch

ALL = [i.name for i in study.implementations()]


def _args(M=4, N=5, K=6, dtype=torch.float32):
    return torch.randn(M, K).to(dtype), torch.randn(K, N).to(dtype)


@pytest.mark.parametrize("name", ALL)
def test_wrong_dtype(name):
    impl = study.get(name)
    missing = next(d for d in ("fp64", "int32", "fp16", "fp32") if d not in impl.dtypes)
    a, b = _args(dtype=DTYPES[missing])
    with pytest.raises(TypeError, match=rf"{name}: supports dtypes"):
        impl(a, b)


@pytest.mark.parametrize("name", [i.name for i in study.implementations() if "k-major" not in i.layouts])
def test_layouts_it_does_not_declare_are_refused(name):
    """A transposed view (column-major) reaches only an implementation that declares that layout; every other
    one refuses it before launch, and nothing takes a matrix with no unit stride.  (fp8's K-major operands:
    tests/test_fp8.py.)"""
    impl = study.get(name)
    a, b = _args(dtype=_dtype(impl))
    neither = torch.zeros(4, 12).to(a.dtype)[:, ::2]
    with pytest.raises(ValueError, match=rf"{name}: A must be row-major"):
        impl(neither, b)
    for ta, tb in ((a.t().contiguous().t(), b), (a, b.t().contiguous().t())):
        if "col-major" in impl.layouts:
            try:                          # taken: it runs (the Triton interpreter) or stops at the device check
                impl(ta, tb)
            except ValueError as e:
                assert "needs CUDA tensors" in str(e), e
        else:
            with pytest.raises(ValueError, match=rf"{name}: [AB] must be row-major \(unit stride"):
                impl(ta, tb)


@pytest.mark.parametrize("name", [i.name for i in study.implementations() if i.backend != "triton"
                                  and any(not DTYPES[d].is_floating_point for d in i.dtypes)])
def test_integer_gemms_take_integral_scalars(name):
    impl = study.get(name)
    dt = next(d for d in impl.dtypes if not DTYPES[d].is_floating_point)
    a, b = _args(dtype=DTYPES[dt])
    with pytest.raises(ValueError, match=rf"{name}: {dt} GEMMs take integral alpha and beta"):
        impl(a, b, alpha=1.5)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bad, match", [
    (lambda a, b: (a, b[:-1]), "inner dimensions differ"),
    (lambda a, b: (a[0], b), "must be 2-D"),
    (lambda a, b: (a.repeat(1, 2)[:, ::2], b), "row-major"),
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
        impl(a, b, None, beta=2.0)
    with pytest.raises(ValueError, match="C must be 4x5"):
        impl(a, b, torch.randn(5, 4).to(a.dtype), beta=2.0)
    with pytest.raises(TypeError, match="alpha must be a finite real"):
        impl(a, b, alpha=float("nan"))


@pytest.mark.parametrize("name", ALL)
def test_out_is_checked(name):
    impl = study.get(name)
    a, b = _args(dtype=_dtype(impl))
    odt = DTYPES[impl.out_dtypes.get(next(iter(impl.dtypes)), next(iter(impl.dtypes)))]
    with pytest.raises(ValueError, match="out must be 4x5"):
        impl(a, b, out=torch.empty(5, 5, dtype=odt))
    raw = torch.zeros(256, dtype=torch.uint8)     # A and D share bytes, whatever their dtypes
    with pytest.raises(ValueError, match="out overlaps A"):
        impl(raw[:24 * a.element_size()].view(a.dtype).view(4, 6), b,
             out=raw[:20 * odt.itemsize].view(odt).view(4, 5))


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
    return DTYPES[next(iter(impl.dtypes))]
