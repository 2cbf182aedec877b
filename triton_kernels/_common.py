"""What every Triton stage shares: the GEMM epilogue and the argument list built from a validated Problem."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def epilogue(acc, alpha, beta, c_ptrs, mask, HAS_C: tl.constexpr):
    # beta == 0 arrives as HAS_C=False and C is never touched: a C full of NaN must not leak into D.
    d = acc * alpha
    if HAS_C:
        d += beta * tl.load(c_ptrs, mask=mask, other=0.0).to(tl.float32)
    return d


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of program pid in grouped order: GROUP_M row-tiles take each column sweep together, so
    their B tiles are still in L2 (the Triton tutorial's "super-grouping")."""
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    first_m = (pid // width) * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)
    return first_m + (pid % width) % group_m, (pid % width) // group_m


def gemm_args(p):
    """Positional arguments shared by every stage kernel: pointers, sizes, leading dimensions, scalars."""
    M, N, K = p.mnk
    c = p.c if p.c is not None else p.out  # a placeholder pointer; HAS_C=False means it is never read
    return dict(A=p.a, B=p.b, C=c, D=p.out, M=M, N=N, K=K,
                lda=p.a.stride(0), ldb=p.b.stride(0), ldc=c.stride(0), ldd=p.out.stride(0),
                alpha=p.alpha, beta=p.beta, HAS_C=p.c is not None)


_TRITON_DTYPE = {"fp32": "fp32", "fp16": "fp16", "bf16": "bf16"}


def signature(dtype: str) -> dict[str, str]:
    """Triton types of gemm_args() for `dtype`, for compiling a stage kernel without a GPU (tests)."""
    ptr = "*" + _TRITON_DTYPE[dtype]
    return dict(A=ptr, B=ptr, C=ptr, D=ptr, M="i32", N="i32", K="i32", lda="i32", ldb="i32", ldc="i32",
                ldd="i32", alpha="fp32", beta="fp32", HAS_C="constexpr")


def check_grid(name: str, programs: int):
    if programs > 2**31 - 1:
        raise ValueError(f"{name}: {programs} programs exceed the grid limit of 2**31-1; the shape is too large "
                         f"for this stage's one-dimensional launch")


def interpreting() -> bool:
    """True under TRITON_INTERPRET=1 (Triton on the CPU; Gluon has no interpreter)."""
    import os
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
