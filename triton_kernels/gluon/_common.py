"""What every Gluon stage shares: the GEMM epilogue (alpha, beta, C) and the masked store of D.

Gluon tensors carry an explicit distributed layout, so these helpers take index vectors that already have
the right one: `rows` in SliceLayout(1, acc.type.layout) and `cols` in SliceLayout(0, acc.type.layout), both
int64 (row * ld may exceed 2**31).  `rows[:, None]` and `cols[None, :]` then broadcast back to exactly the
accumulator's layout, so the epilogue moves no data between threads: each thread reads C and writes D for
the very outputs it holds.  Whether those accesses become 16-byte vectors is decided by the accumulator
layout (4 consecutive columns per thread) and by what Triton's argument specialisation proves (D, C 16-byte
aligned; ldd, ldc, N multiples of 16); without that proof the same code issues scalar accesses, so an
unaligned view is slower, never wrong.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def as_int64(x):
    """x as a 64-bit scalar tensor.  Needed for integer kernel arguments: Triton's launcher specialises an
    argument equal to 1 into a compile-time constant, which has no .to(), so `ld.to(gl.int64)` would fail
    to compile exactly when a leading dimension is 1."""
    return gl.to_tensor(x).to(gl.int64)


@gluon.jit
def tile_origin(pid, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """First row and column (int64) of program `pid`'s BLOCK_M x BLOCK_N tile of D; tiles are numbered in
    row-major order over a one-dimensional grid of cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs."""
    n_tiles = gl.cdiv(N, BLOCK_N)
    row0 = (pid // n_tiles).to(gl.int64) * BLOCK_M
    col0 = (pid % n_tiles).to(gl.int64) * BLOCK_N
    return row0, col0


@gluon.jit
def tile_indices(pid, M, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, layout: gl.constexpr):
    """Row and column indices (int64) of program `pid`'s BLOCK_M x BLOCK_N tile of D (see tile_origin), as
    slices of the 2-D distributed `layout`: rows in SliceLayout(1, layout), cols in SliceLayout(0, layout)."""
    row0, col0 = tile_origin(pid, N, BLOCK_M, BLOCK_N)
    rows = row0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout)).to(gl.int64)
    cols = col0 + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, layout)).to(gl.int64)
    return rows, cols


@gluon.jit
def epilogue(acc, alpha, beta, C, rows, cols, mask, ldc, HAS_C: gl.constexpr):
    """alpha * acc + beta * C.  beta == 0 arrives as HAS_C=False and C is never touched (no load is even
    compiled): a C full of NaN must not leak into D."""
    d = acc * alpha
    if HAS_C:
        c = gl.load(C + rows[:, None] * ldc + cols[None, :], mask=mask, other=0.0)
        d = d + beta * c.to(gl.float32)
    return d


@gluon.jit
def epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C: gl.constexpr):
    """D[rows, cols] = alpha * acc + beta * C[rows, cols] for the in-range outputs; nothing outside M x N
    is read or written.  `acc` is fp32 in any 2-D distributed layout; `rows`/`cols` are int64 slices of it."""
    mask = (rows < M)[:, None] & (cols < N)[None, :]
    d = epilogue(acc, alpha, beta, C, rows, cols, mask, ldc, HAS_C)
    gl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


@gluon.jit
def grouped_tile(pid, M, N, BM: gl.constexpr, BN: gl.constexpr, GROUP_M: gl.constexpr):
    """First row and column (int64) of program pid's tile: programs walk GROUP_M tile rows column by
    column, so consecutive programs share B tiles and a group's A rows stay in L2."""
    tiles_m = gl.cdiv(M, BM)
    tiles_n = gl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = gl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows
    return pid_m.to(gl.int64) * BM, pid_n.to(gl.int64) * BN


@gluon.jit
def split_rows(x):
    """x[:R/2], x[R/2:] - free when the top row bit is a register bit of x's layout (a wrap)."""
    return gl.split(gl.permute(gl.reshape(x, [2, x.shape[0] // 2, x.shape[1]]), [1, 2, 0]))


@gluon.jit
def split_cols(x):
    """x[:, :C/2], x[:, C/2:] - free when the top column bit is a register bit of x's layout."""
    return gl.split(gl.permute(gl.reshape(x, [x.shape[0], 2, x.shape[1] // 2]), [0, 2, 1]))


@gluon.jit
def store_part(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C: gl.constexpr):
    LC: gl.constexpr = acc.type.layout
    rows = row0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, LC)).to(gl.int64)
    cols = col0 + gl.arange(0, acc.shape[1], layout=gl.SliceLayout(0, LC)).to(gl.int64)
    if full_n:   # no column mask: 16-byte stores where D and ldd allow
        mask = (rows < M)[:, None]
        d = epilogue(acc, alpha, beta, C, rows, cols, mask, ldc, HAS_C)
        gl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)
    else:
        epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C)
