"""The pass/fail rule itself must be able to fail: NaN, an unwritten element, TF32 posing as fp32."""
from __future__ import annotations

import pytest
import torch

from study.core.verify import judge, make_inputs, reference, reference_terms
from tests.helpers import ALPHA_BETA, SHAPES


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


def _judge(out, x, precision):
    return judge(out, reference(x), precision, terms=lambda: reference_terms(x), k=x.a.shape[1])


def test_cancellation_is_judged_per_element_at_the_labels_own_precision():
    """D = C - A B with C == A B (up to fp16 rounding of the inputs): the result is tiny, so a relative error
    says nothing.  fp16-rounded inputs pass fp16-inputs (each element within its bound), but a TF32 result still
    fails fp32 there, and so does fp16: the bound is the label's, not a looser fallback."""
    x = make_inputs(1, 1, 1, "fp32", "cpu", alpha=-1.0, beta=1.0)
    while abs(float(_tf32(x.a.clone())) / float(x.a) - 1) < 1e-5:      # TF32 must differ from fp32 here
        x = make_inputs(1, 1, 1, "fp32", "cpu", alpha=-1.0, beta=1.0)
    x.c = (x.a @ x.b) * (1 + 2**-9)                      # beta C and alpha A B nearly cancel
    rounded = -(x.a.half().float() @ x.b.half().float()) + x.c
    assert _judge(rounded, x, "fp16-inputs").passed
    assert not _judge(rounded, x, "fp32").passed
    assert not _judge(-(_tf32(x.a.clone()) @ _tf32(x.b.clone())) + x.c, x, "fp32").passed
    assert _judge(-(x.a @ x.b) + x.c, x, "fp32").passed


@pytest.mark.parametrize("label,dtype", [("tf32", "fp32"), ("fp16/fp32acc", "fp16"), ("bf16/fp32acc", "bf16")])
@pytest.mark.parametrize("n", [257, 1000])
def test_one_wrong_element_fails(label, dtype, n):
    """A relative Frobenius error hides one zeroed element of a 1000^3 product; the per-element bound does not."""
    x = make_inputs(n, n, n, dtype, "cpu", 2.5, -0.75)
    a, b = x.a.float(), x.b.float()
    if label == "tf32":
        a, b = _tf32(a.clone()), _tf32(b.clone())
    d = (x.alpha * (a @ b) + x.beta * x.c.float()).to(x.out.dtype)
    assert _judge(d, x, label).passed
    # The last 64x64 tile's element that is largest against its terms: a zeroed element whose true value lies
    # within rounding of zero is no wrong answer, so the test picks one that is not.
    ref = reference(x)[-64:, -64:]
    i, j = divmod(int((ref.abs() / reference_terms(x).l2[-64:, -64:]).argmax()), ref.shape[1])
    d[n - 64 + i, n - 64 + j] = 0
    v = _judge(d, x, label)
    assert not v.passed and "1 of" in v.error, v


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
@pytest.mark.parametrize("M,N,K", SHAPES)
def test_tf32_posing_as_fp32_fails_on_every_test_shape(M, N, K, alpha, beta):
    """The GPU suite's shapes and scalars: an honest fp32 result passes "fp32", a TF32 one fails it, 1x1x1
    included.  Where TF32 moves a 1x1x1 D by less than 1e-5 of its terms (a small A B beside a large beta C, or
    operands TF32 holds exactly), no test can tell the two apart: such draws are redrawn."""
    while True:
        x = make_inputs(M, N, K, "fp32", "cpu", alpha, beta)
        tf = _tf32(x.a.clone()) @ _tf32(x.b.clone())
        moved = float((x.alpha * (tf - x.a @ x.b)).abs().max())     # what TF32 does to D
        if M * N * K > 1 or moved > 1e-5 * float(reference_terms(x).l2.max()):
            break
    c = x.beta * x.c if beta else 0
    assert _judge(x.alpha * (x.a @ x.b) + c, x, "fp32").passed
    v = _judge(x.alpha * tf + c, x, "fp32")
    assert not v.passed, f"TF32 passed as fp32 at {M}x{N}x{K} alpha={alpha} beta={beta}: {v}"
