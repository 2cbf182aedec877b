"""The GEMM contract every implementation shares, checked before anything is launched.

    D = alpha * A @ B + beta * C          A: MxK, B: KxN, C and D: MxN, row-major torch tensors

* C and D have the implementation's output dtype (`Impl.out_dtypes`, by default the input dtype): a tensor-
  core type pair such as fp16 -> fp32 (seed 003) reads fp16 A and B and reads and writes fp32 C and D.
* A and B may also be column-major (a transposed view such as `x.t()`), if the implementation declares the
  "col-major" layout (`Impl.layouts`); every other implementation refuses them before launch.
* Integer dtypes take integral alpha and beta only (the epilogue is integer arithmetic).
* M, N, K are any integers from 1 to MAX_DIM = 2**31 - 2**16: the kernels count rows, columns and k in
  32-bit integers (offsets are 64-bit), and a tiled loop steps past its bound by up to one tile.
* beta == 0 never reads C: C may be None or full of NaN.  beta != 0 needs C.
* "row-major" means unit stride along a row; rows may be padded (leading dimension >= columns).
* D is written and nothing else: A, B and C are never modified, and D may not overlap them.

Whatever an implementation cannot take raises TypeError/ValueError naming the implementation and the
constraint.  A silent wrong answer is the one outcome this module exists to rule out.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64,
          "int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32,
          "fp8e4m3": torch.float8_e4m3fn}   # stage 16: scaled operands (study/core/fp8.py)
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
MAX_DIM = 2**31 - 2**16


class ContractError(ValueError):
    pass


@dataclass(frozen=True)
class Problem:
    """A validated call: everything a launcher needs, nothing it must re-check."""
    a: torch.Tensor
    b: torch.Tensor
    c: torch.Tensor | None       # None exactly when beta == 0
    out: torch.Tensor
    alpha: float
    beta: float
    a_col: bool = False          # A (or B) is column-major: element (i, k) at A[i + k * lda]
    b_col: bool = False

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.a.shape[0], self.b.shape[1], self.a.shape[1]

    @property
    def lda(self) -> int:
        return pitch(self.a)

    @property
    def ldb(self) -> int:
        return pitch(self.b)

    @property
    def layouts(self) -> str:
        """"rr", "rc", "cr" or "cc": A's and B's storage order (r = row-major, c = column-major)."""
        return ("c" if self.a_col else "r") + ("c" if self.b_col else "r")


def dtype_name(t: torch.dtype) -> str:
    return DTYPE_NAMES.get(t, str(t).replace("torch.", ""))


def _row_major(t: torch.Tensor) -> bool:
    rows, cols = t.shape
    return t.stride(1) == 1 and (rows == 1 or t.stride(0) >= cols)


def aligned16(t: torch.Tensor) -> bool:
    """16-byte vectors are safe on every row: the start and the pitch (row or column) are multiples of 16 bytes."""
    lines, ld = (t.shape[0], t.stride(0)) if _row_major(t) else (t.shape[1], t.stride(1))
    return t.data_ptr() % 16 == 0 and (lines == 1 or (ld * t.element_size()) % 16 == 0)


def _col_major(t: torch.Tensor) -> bool:
    rows, cols = t.shape
    return t.stride(0) == 1 and (cols == 1 or t.stride(1) >= rows)


def pitch(t: torch.Tensor) -> int:
    """The leading dimension: the stride between rows of a row-major matrix, between columns of a column-
    major one (a matrix that is both, one row or one column, counts as row-major)."""
    return t.stride(0) if _row_major(t) else t.stride(1)


def _span(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    extent = sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
    return start, start + extent * t.element_size()


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    if x.device != y.device:
        return False
    (a0, a1), (b0, b1) = _span(x), _span(y)
    return a0 < b1 and b0 < a1


def validate(name: str, dtypes: dict[str, str], out_dtypes: dict[str, str], a, b, c=None,
             alpha=1.0, beta=0.0, out=None, *, allow_cpu: bool = False,
             layouts: tuple[str, ...] = ("row-major",)) -> Problem:
    """Check one call against the contract and `name`'s declared support; allocate D if `out` is None."""
    def fail(exc, msg):
        raise exc(f"{name}: {msg}")

    for label, t in (("A", a), ("B", b)):
        if not isinstance(t, torch.Tensor):
            fail(TypeError, f"{label} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 2:
            fail(ValueError, f"{label} must be 2-D, got shape {tuple(t.shape)}")
    if a.dtype != b.dtype:
        fail(TypeError, f"A and B must share a dtype, got {dtype_name(a.dtype)} and {dtype_name(b.dtype)}")
    dt = dtype_name(a.dtype)
    if dt not in dtypes:
        fail(TypeError, f"supports dtypes {sorted(dtypes)}, got {dt}")
    M, K = a.shape
    K2, N = b.shape
    if K != K2:
        fail(ValueError, f"inner dimensions differ: A is {M}x{K}, B is {K2}x{N}")
    for label, v in (("M", M), ("N", N), ("K", K)):
        if not 1 <= v <= MAX_DIM:
            fail(ValueError, f"{label}={v} is outside 1..{MAX_DIM} (32-bit loop counters)")
    for label, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            fail(TypeError, f"{label} must be a finite real number, got {v!r}")
    alpha, beta = float(alpha), float(beta)
    if not DTYPES[dt].is_floating_point and not (alpha.is_integer() and beta.is_integer()):
        fail(ValueError, f"{dt} GEMMs take integral alpha and beta, got alpha={alpha!r}, beta={beta!r}")
    odt = DTYPES[out_dtypes.get(dt, dt)]

    if beta != 0.0:
        if c is None:
            fail(ValueError, "beta != 0 needs C")
        if not isinstance(c, torch.Tensor):
            fail(TypeError, f"C must be a torch.Tensor, got {type(c).__name__}")
        if tuple(c.shape) != (M, N):
            fail(ValueError, f"C must be {M}x{N}, got {tuple(c.shape)}")
        if c.dtype != odt:
            fail(TypeError, f"C must be {dtype_name(odt)} (the output dtype for {dt} inputs), got {dtype_name(c.dtype)}")
    else:
        c = None  # beta == 0: C is never read, whatever it holds
    if out is not None:
        if not isinstance(out, torch.Tensor):
            fail(TypeError, f"out must be a torch.Tensor, got {type(out).__name__}")
        if tuple(out.shape) != (M, N) or out.dtype != odt:
            fail(ValueError, f"out must be {M}x{N} {dtype_name(odt)}, got {tuple(out.shape)} {dtype_name(out.dtype)}")

    operands = [("A", a), ("B", b)] + ([("C", c)] if c is not None else []) + ([("out", out)] if out is not None else [])
    col = {}
    for label, t in operands:
        if _row_major(t):
            col[label] = False
        elif label in "AB" and "col-major" in layouts and _col_major(t):
            col[label] = True
        else:
            takes = "row-major or column-major" if label in "AB" and "col-major" in layouts else "row-major"
            fail(ValueError, f"{label} must be {takes} (unit stride along one dimension), got strides "
                             f"{tuple(t.stride())}; this implementation takes layouts {list(layouts)}, so pass "
                             f".contiguous() explicitly if a copy is acceptable")
    devices = {t.device for _, t in operands}
    if len(devices) != 1:
        fail(ValueError, f"all operands must be on one device, got {sorted(map(str, devices))}")
    if out is not None:
        for label, t in operands[:-1]:
            if _overlaps(out, t):
                fail(ValueError, f"out overlaps {label}; D must not alias its inputs")
    dev = a.device
    if dev.type != "cuda" and not (allow_cpu and dev.type == "cpu"):
        fail(ValueError, f"needs CUDA tensors, got {dev}")
    if out is None:
        out = torch.empty((M, N), dtype=odt, device=dev)
    return Problem(a, b, c, out, alpha, beta, col["A"], col["B"])
