"""Baseline (cuBLAS, through torch) with the precision stated, never inherited from global flags.

torch's fp32 matmul silently follows torch.backends.cuda.matmul.allow_tf32; the "fp32" entry forces it off
for the duration of the call and the "tf32" entry forces it on, so each row means what its label says.
torch.addmm with beta == 0 does not read its input (documented: NaN/inf in it are not propagated), which
is the contract's rule for C.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch


# Reduced-precision reductions would let cuBLAS sum fp16/bf16 partial results in 16 bits; off, so the
# fp16/bf16 rows really are "16-bit inputs, fp32 accumulation" as labelled.
_FLAGS = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")


@contextmanager
def precision_flags(tf32: bool):
    flags = torch.backends.cuda.matmul
    saved = {f: getattr(flags, f) for f in _FLAGS}
    flags.allow_tf32 = tf32
    flags.allow_fp16_reduced_precision_reduction = False
    flags.allow_bf16_reduced_precision_reduction = False
    try:
        yield
    finally:
        for f, v in saved.items():
            setattr(flags, f, v)


def _addmm(p):
    base = p.c if p.c is not None else p.out
    torch.addmm(base, p.a, p.b, beta=p.beta, alpha=p.alpha, out=p.out)


def gemm_fp32(p):
    """fp32 inputs with TF32 off (true SGEMM); fp16/bf16 inputs use cuBLAS's default (fp32 accumulation)."""
    with precision_flags(tf32=False):
        _addmm(p)


def gemm_tf32(p):
    with precision_flags(tf32=True):
        _addmm(p)
