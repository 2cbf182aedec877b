"""The fp8 stage's accuracy part of `python -m study.accuracy`: what promotion buys, as error against K.

Every fp8 e4m3 implementation (the stage's forms and cuBLASLt's, fast accumulation included) is run on the same
inputs at M = N = SIZE for each K of KS, and its D (bf16) compared with the float64 product of the dequantized
operands: the e4m3 values times their scales, so quantization is no part of the error; the error is what the
accumulation and the output rounding add.  fp8_accuracy.csv, one row per (K, method).

The inputs are uniform [0, 1): every product is positive, so the sums grow with K and nothing cancels.  That is
where a truncating accumulator shows: the tensor core adds fp8 products with about 13-14 mantissa bits (about 14 in
the DeepSeek-V3 report, section 3.3.2; 13, FP22, in SageAttention2's measurement), each addition drops the low bits
of the smaller term, and the loss has one sign, so the error
of an unpromoted sum grows with K.  D is bf16, whose rounding alone costs up to 2^-9 of each element; the
FLOOR_METHOD row measures that error on the same inputs (the float64 reference rounded to bf16), so the report draws
the floor the other rows cannot go below.  A form that promotes every 128 k
should sit on that floor at every K; one that does not should leave it as K grows (a prediction until measured).

Each scaling mode quantizes the same float32 inputs its own way (study.core.fp8.quantize_a / quantize_b), so the
reference is per mode; the row names its mode.  Sized for well under a minute on an H100: M = N = 256, K from 256
to 65536 (A and B of 64 MiB in float32 at the largest K); the time is mostly the first calls' compilation.

This module imports torch only inside functions, so the report can read its columns on a machine without torch.
"""
from __future__ import annotations

import math
import os

SIZE = 256
KS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
QUICK_KS = (256, 4096, 65536)
DTYPE = "fp8e4m3"
FLOOR_METHOD = "reference:bf16"      # the float64 reference rounded to bf16: the floor of any bf16 D
FILE = "fp8_accuracy.csv"
COLUMNS = (
    "scaling",        # tensor | row | block: how the inputs were quantized (the method's own mode)
    "M", "N", "K",
    "method",         # registry name, or FLOOR_METHOD
    "backend", "stage", "precision",
    "relerr",         # ||D - R||_F / ||R||_F, R the float64 product of the dequantized operands
    "max_relerr",     # max over elements of |D - R| / |R| (R > 0 everywhere: positive inputs)
    "nonfinite",      # NaN/inf elements of D; when > 0 both errors are inf
    "seed", "error", "gpu", "commit", "date",
)


def methods_of(impls) -> list[tuple[str, str, str, str, str]]:
    """(name, backend, stage, scaling, precision) of every implementation taking fp8 inputs, in the order given:
    registry Impl objects, or (name, backend, precision) triples (the scaling read from the precision label)."""
    out = []
    for i in impls:
        if isinstance(i, tuple):
            name, backend, precision = i
            stage = "baseline" if backend == "cublas" else name.split(":", 1)[1].split("_", 1)[0]
        else:
            if DTYPE not in i.dtypes:
                continue
            name, backend, precision, stage = i.name, i.backend, i.precision(DTYPE), i.stage_label
        scaling = precision.split("/", 1)[0].split("-", 1)[1]
        out.append((name, backend, stage, scaling, precision))
    return out


def operands(K: int, generator, device, size: int = SIZE):
    """A (size x K) and B (K x size), uniform [0, 1) float32."""
    import torch
    a = torch.rand(size, K, generator=generator, device=device)
    b = torch.rand(K, size, generator=generator, device=device)
    return a, b


def quantized(a, b, scaling: str):
    """(qa, qb, scale_a, scale_b, R): the e4m3 operands of `scaling`, their scales, and the float64 product of the
    dequantized operands."""
    from study.core import fp8
    qa, sa = fp8.quantize_a(a, scaling)
    qb, sb = fp8.quantize_b(b, scaling)
    ref = fp8.dequantize(qa, sa, scaling, "a") @ fp8.dequantize(qb, sb, scaling, "b")
    return qa, qb, sa, sb, ref


def errors(d, ref) -> dict:
    import torch
    d64 = d.double()
    bad = int((~torch.isfinite(d64)).sum())
    if bad:
        return {"relerr": math.inf, "max_relerr": math.inf, "nonfinite": bad}
    diff = d64 - ref
    return {"relerr": float(diff.norm() / ref.norm()), "max_relerr": float((diff.abs() / ref.abs()).max()),
            "nonfinite": 0}


def rows(impls, ks, device, context: dict, size: int = SIZE, seed: int | None = None):
    """Yield one row per (K, method), then per K the floor (FLOOR_METHOD) of each scaling mode's reference; inputs
    fresh per K and shared by every method.  A method that raises gives a row with its error, the others go on."""
    import torch
    from study import registry
    from study.measure.accuracy import _error_text, _now, _settle
    methods = methods_of(impls)
    for K in ks:
        s = int.from_bytes(os.urandom(4), "little") if seed is None else seed
        g = torch.Generator(device=device).manual_seed(s)
        a, b = operands(K, g, device, size)
        per_mode = {}
        for name, backend, stage, scaling, precision in methods:
            if scaling not in per_mode:
                per_mode[scaling] = quantized(a, b, scaling)
            qa, qb, sa, sb, ref = per_mode[scaling]
            row = dict.fromkeys(COLUMNS, "")
            row.update(context, scaling=scaling, M=size, N=size, K=K, method=name, backend=backend, stage=stage,
                       precision=precision, seed=s, date=_now())
            try:
                d = registry.get(name)(qa, qb, scale_a=sa, scale_b=sb)
                _settle(device)
                row.update(errors(d, ref))
            except Exception as e:        # a method that cannot run is a result too
                row["error"] = _error_text(e)
                _settle(device, e)
            yield row
        for scaling, (_, _, _, _, ref) in per_mode.items():
            row = dict.fromkeys(COLUMNS, "")
            row.update(context, scaling=scaling, M=size, N=size, K=K, method=FLOOR_METHOD, backend="reference",
                       stage="baseline", precision="bf16", seed=s, date=_now(),
                       **errors(ref.to(torch.bfloat16), ref))
            yield row
        del a, b, per_mode


# --- its part of python -m study.accuracy -------------------------------------------------------------------

def add_arguments(ap) -> None:
    ap.add_argument("--fp8-ks", default=None,
                    help=f"K values of the fp8 study (default {','.join(map(str, KS))}; --quick: "
                         f"{','.join(map(str, QUICK_KS))})")
    ap.add_argument("--no-fp8", action="store_true", help=f"skip the fp8 study ({FILE})")


def run(args, impls, device, context: dict, write) -> None:
    """The fp8 study into args.out / FILE, through study.measure.accuracy's `write`."""
    if args.no_fp8:
        return
    ks = tuple(int(v) for v in args.fp8_ks.split(",")) if args.fp8_ks else (QUICK_KS if args.quick else KS)
    write(args.out / FILE, COLUMNS, rows(impls, ks, device, context),
          lambda r: f"fp8 {r['scaling']:6s} K={r['K']:<6} {r['method']:24s} relerr {r['relerr']!s:.9s} "
                    f"max {r['max_relerr']!s:.9s}", "fp8 error vs K")
