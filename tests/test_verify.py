"""The pass/fail rule itself must be able to fail: NaN, an unwritten element, TF32 posing as fp32."""
from __future__ import annotations

import torch

from study.verify import judge, make_inputs, reference


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """Round fp32 to TF32 (10 explicit mantissa bits), as the tensor cores do to their inputs."""
    i = x.view(torch.int32)
    return ((i + 0x1000) & ~0x1FFF).view(torch.float32)


def test_fp32_result_passes_and_tf32_result_fails_the_fp32_tolerance():
    x = make_inputs(64, 48, 512, "fp32", "cpu")
    ref = reference(x)
    assert judge((x.a @ x.b), ref, "fp32").passed
    tf = _tf32(x.a.clone()) @ _tf32(x.b.clone())
    v = judge(tf, ref, "fp32")
    assert not v.passed and v.relerr > 1e-4, v
    assert judge(tf, ref, "tf32").passed


def test_unwritten_element_fails():
    x = make_inputs(8, 8, 8, "fp32", "cpu")
    out = x.a @ x.b
    out[3, 5] = float("nan")
    v = judge(out, reference(x), "fp32")
    assert not v.passed and "1 of 64" in v.error


def test_inputs_are_fresh_random_and_poisoned():
    x, y = make_inputs(16, 16, 16, "fp32", "cpu"), make_inputs(16, 16, 16, "fp32", "cpu")
    assert x.seed != y.seed and not torch.equal(x.a, y.a)
    assert x.out.isnan().all() and x.c.isnan().all(), "beta == 0: C and D start as NaN"
    assert (x.a != 0).float().mean() > 0.99
    z = make_inputs(4, 4, 4, "bf16", "cpu", beta=0.5)
    assert z.c.isfinite().all() and z.a.dtype == torch.bfloat16


def test_componentwise_bound_admits_cancellation_but_not_a_wrong_element():
    """D = C - A B with C == A B (up to fp16 rounding of the inputs): the result is tiny, so fp16-rounded
    inputs miss by far more than 2e-3 of it, yet every element is within 2e-3 of its terms.  A TF32 result
    still fails fp32, and one wrong element still fails, under the componentwise bound."""
    from study.verify import reference_scale
    x = make_inputs(1, 1, 1, "fp32", "cpu", alpha=-1.0, beta=1.0)
    x.c = (x.a @ x.b) * (1 + 2**-9)                      # beta C and alpha A B nearly cancel
    ref = reference(x)
    rounded = -(x.a.half().float() @ x.b.half().float()) + x.c
    assert not judge(rounded, ref, "fp16-inputs").passed
    assert judge(rounded, ref, "fp16-inputs", scale=lambda: reference_scale(x)).passed

    y = make_inputs(64, 48, 512, "fp32", "cpu")
    tf = _tf32(y.a.clone()) @ _tf32(y.b.clone())
    assert not judge(tf, reference(y), "fp32", scale=lambda: reference_scale(y)).passed
    wrong = y.a @ y.b
    wrong[7, 3] += 0.05 * float(reference_scale(y)[7, 3])
    assert not judge(wrong, reference(y), "fp16-inputs", scale=lambda: reference_scale(y)).passed
