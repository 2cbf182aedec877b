"""What the Triton stages share: tile indices, the operand pointers and masked tl.dot K loop of stage 11 (and
stage 13's fallback), the GEMM epilogue, and the launch: the argument list built from a validated Problem,
the grid and its check."""
from __future__ import annotations

import os

import triton
import triton.language as tl


# --- tile indices -------------------------------------------------------------------------------------------

@triton.jit
def tile_rows_cols(pid, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row and column indices (int64) of program pid's BLOCK_M x BLOCK_N tile of D; tiles are numbered in
    row-major order over a one-dimensional grid of cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs."""
    n_tiles = tl.cdiv(N, BLOCK_N)
    rows = ((pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = ((pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    return rows, cols


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


@triton.jit
def thread_block_tile(pid, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TM: tl.constexpr, TN: tl.constexpr):
    """Program pid's BLOCK_M x BLOCK_N tile of D (numbered as in tile_rows_cols) as the 4-D register tile of
    stages 05 and 06: acc[tm, tn, i, j] is D[row0 + i*TM + tm, col0 + j*TN + tn], and Triton's default layout
    gives (i, j) to threads and keeps each TM x TN block (tm, tn) inside one thread.  Returns the int64 row
    indices, shaped [TM, 1, BM/TM, 1], and column indices, [1, TN, 1, BN/TN]."""
    n_tiles = tl.cdiv(N, BLOCK_N)
    tm = tl.arange(0, TM)[:, None, None, None]
    tn = tl.arange(0, TN)[None, :, None, None]
    i = tl.arange(0, BLOCK_M // TM)[None, None, :, None]
    j = tl.arange(0, BLOCK_N // TN)[None, None, None, :]
    rows = ((pid // n_tiles) * BLOCK_M + i * TM + tm).to(tl.int64)
    cols = ((pid % n_tiles) * BLOCK_N + j * TN + tn).to(tl.int64)
    return rows, cols


# --- operands, the K loop, the epilogue ---------------------------------------------------------------------

@triton.jit
def operand_tiles(A, B, M, N, lda, ldb, rows, cols, BLOCK_K: tl.constexpr):
    """What a tl.dot K loop over the tile rows x cols of D starts from: the k offsets ks of a BLOCK_K step,
    the row mask in_m [BM, 1] and column mask in_n [1, BN], and pointers to the first k-tiles of A
    (BM x BLOCK_K, a_ptrs) and B (BLOCK_K x BN, b_ptrs).  64-bit offsets."""
    ks = tl.arange(0, BLOCK_K)
    in_m, in_n = rows[:, None] < M, cols[None, :] < N
    a_ptrs = A + rows[:, None] * lda + ks[None, :]
    b_ptrs = B + ks[:, None].to(tl.int64) * ldb + cols[None, :]
    return ks, in_m, in_n, a_ptrs, b_ptrs


@triton.jit
def masked_dot_loop(a_ptrs, b_ptrs, ks, in_m, in_n, K, ldb, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr):
    """sum over k-tiles of tl.dot(A tile, B tile), fp32 accumulation, from operand_tiles()'s start: one masked
    load of each k-tile (zeros outside M, N and K) and one tl.dot per BLOCK_K step.  The launch option
    num_stages decides how deep the compiler pipelines the two loads (a ring of cp.async copies)."""
    b_step = BLOCK_K * tl.cast(ldb, tl.int64)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0.0)
        acc = tl.dot(a, b, acc, out_dtype=tl.float32)
        a_ptrs += BLOCK_K
        b_ptrs += b_step
    return acc


@triton.jit
def epilogue(acc, alpha, beta, c_ptrs, mask, HAS_C: tl.constexpr):
    # beta == 0 arrives as HAS_C=False and C is never touched: a C full of NaN must not leak into D.
    d = acc * alpha
    if HAS_C:
        d += beta * tl.load(c_ptrs, mask=mask, other=0.0).to(tl.float32)
    return d


@triton.jit
def store_tile(acc, alpha, beta, C, D, rows, cols, mask, ldc, ldd, HAS_C: tl.constexpr):
    """D[rows, cols] = alpha * acc + beta * C[rows, cols] where `mask`.  `rows` and `cols` (int64) broadcast to
    acc's shape: rows[:, None] and cols[None, :] for a 2-D tile, or index tensors already shaped like acc."""
    d = epilogue(acc, alpha, beta, C + rows * ldc + cols, mask, HAS_C)
    tl.store(D + rows * ldd + cols, d.to(D.dtype.element_ty), mask=mask)


# --- launch -------------------------------------------------------------------------------------------------

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
    """Whether kernels run on Triton's CPU interpreter (TRITON_INTERPRET set, as in the CPU tests)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def tiles(p, block_m: int, block_n: int) -> int:
    """Programs in a grid of one program per block_m x block_n tile of D."""
    M, N, _ = p.mnk
    return triton.cdiv(M, block_m) * triton.cdiv(N, block_n)


def launch(name: str, kernel, p, programs: int, **meta):
    """kernel[(programs,)] on gemm_args(p) and the compile-time parameters and launch options `meta`, after
    check_grid (`name` is the implementation, for its message).  Returns what the launch returns: the compiled
    kernel, whose registers and shared memory study/registry.py reports."""
    check_grid(name, programs)
    return kernel[(programs,)](**gemm_args(p), **meta)


def launch_tiles(name: str, kernel, p, meta: dict):
    """launch() with one program per meta["BLOCK_M"] x meta["BLOCK_N"] tile of D."""
    return launch(name, kernel, p, tiles(p, meta["BLOCK_M"], meta["BLOCK_N"]), **meta)


def max_tiles(p, configs) -> int:
    """The largest grid any of the autotuner's `configs` could launch (it may pick any of them)."""
    return max(tiles(p, c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]) for c in configs)


def launch_autotuned(kernel, tuned, p, interpreter_config: dict, **meta):
    """`tuned` (triton.autotune over `kernel`) with one program per BLOCK_M x BLOCK_N tile of the config it
    picks.  The interpreter cannot benchmark, so there `kernel` itself runs with `interpreter_config`."""
    args = gemm_args(p)
    if interpreting():
        grid = (tiles(p, interpreter_config["BLOCK_M"], interpreter_config["BLOCK_N"]),)
        return kernel[grid](**args, **meta, **interpreter_config)
    grid = lambda cfg: (tiles(p, cfg["BLOCK_M"], cfg["BLOCK_N"]),)
    return tuned[grid](**args, **meta)


def config_variants(configs, **constexprs) -> list[dict]:
    """Every compile-time variant an autotuned launch may compile: each config's parameters and options, plus
    the `constexprs` the launcher adds (for the offline precision check in the tests)."""
    return [dict(c.kwargs, **constexprs, num_warps=c.num_warps, num_stages=c.num_stages) for c in configs]


# --- exact power-of-two scaling for the fp16 splits of stage 15 -------------------------------------------
# An fp16 split (hi = fp16(x), lo = fp16((x - hi) 2^11)) holds x to ~22 bits only while |x| lies in about
# [2^-14, 2^15]: above, hi overflows to inf; below, lo (then hi) falls into fp16's subnormals.  So every row of A
# and every column of B is first multiplied by a power of two (exact) that puts its largest finite |x| in
# [2^14, 2^15), and the product is multiplied back in the epilogue.  tcec_amax() finds those maxima: one int32
# per row of A, then one per column of B, holding the bits of max |x| over the finite x (non-negative floats
# order as their bits), or INF_BITS where the line holds an inf or a NaN.  Such a line's results are recomputed
# by nonfinite_fixup(), with fp32 FMAs, so that inf and NaN come out where, and as, SGEMM's do.
INF_BITS = tl.constexpr(0x7F800000)
_AMAX_LINES, _AMAX_LENGTH = 32, 128   # a program's [lines, elements] tile


@triton.jit
def _amax_kernel(X, OUT, lines, length, ld_line, ld_elem, LINES: tl.constexpr, LENGTH: tl.constexpr):
    line = tl.program_id(0) * LINES + tl.arange(0, LINES)
    elem = tl.program_id(1) * LENGTH + tl.arange(0, LENGTH)
    mask = (line[:, None] < lines) & (elem[None, :] < length)
    x = tl.load(X + line[:, None].to(tl.int64) * ld_line + elem[None, :].to(tl.int64) * ld_elem, mask=mask,
                other=0.0)
    bits = tl.abs(x).to(tl.int32, bitcast=True)
    bits = tl.where(bits >= INF_BITS, INF_BITS, bits)   # inf and every NaN count as INF_BITS
    tl.atomic_max(OUT + line, tl.max(bits, axis=1), mask=line < lines)


def tcec_amax(p):
    """int32[M + N]: the bits of max |x| over the finite x of each row of A, then of each column of B
    (INF_BITS for a line with an inf or a NaN).  Three launches (a zero fill and one per operand)."""
    import torch
    M, N, K = p.mnk
    out = torch.zeros(M + N, dtype=torch.int32, device=p.a.device)
    grid = lambda lines: (triton.cdiv(lines, _AMAX_LINES), triton.cdiv(K, _AMAX_LENGTH))
    _amax_kernel[grid(M)](p.a, out, M, K, p.a.stride(0), p.a.stride(1), _AMAX_LINES, _AMAX_LENGTH)
    _amax_kernel[grid(N)](p.b, out[M:], N, K, p.b.stride(1), p.b.stride(0), _AMAX_LINES, _AMAX_LENGTH)
    return out


@triton.jit
def pow2(e):
    """2^e as fp32, exact, for integer e in [-126, 127]."""
    return ((e + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def scale_exponent(bits):
    """The e that puts a line's largest finite |x| (its tcec_amax bits) in [2^14, 2^15); 0 for a line of zeros or
    one with an inf or a NaN.  Clamped to 126, so that 2^e stays a normal number (a line whose max is below 2^-112
    is scaled less far: exact still, with less of fp16's range)."""
    normal_log2 = (bits >> 23) - 127
    # A subnormal's bits, as an integer, are below 2^23 and so exact in fp32: their log2 is the float's exponent.
    sub_log2 = ((bits.to(tl.float32).to(tl.int32, bitcast=True) >> 23) - 127) - 149
    log2 = tl.where(bits >= 0x00800000, normal_log2, sub_log2)
    e = tl.minimum(14 - log2, 126)
    return tl.where((bits == 0) | (bits >= INF_BITS), 0, e)


@triton.jit
def unscale(v, e):
    """v * 2^-e in two exact steps of at most 2^126 each (e may reach +-252): only a subnormal result rounds."""
    h = e >> 1
    return v * pow2(-h) * pow2(h - e)


@triton.jit
def nonfinite_fixup(A, B, C, D, rows, cols, bad, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C: tl.constexpr):
    """Rewrites D where `bad` (rows[:, None] x cols[None, :]: a row of A or a column of B that holds an inf or a
    NaN) with alpha * sum_k A[i, k] B[k, j] + beta * C in fp32, k in order: SGEMM's inf and NaN, never the splits'
    (an inf's lo is NaN, and inf * 0 is NaN in a correction product).  A tile without such a line skips it."""
    if tl.max(tl.max(bad.to(tl.int32), axis=1), axis=0) > 0:
        in_m, in_n = rows < M, cols < N
        s = tl.zeros(bad.shape, dtype=tl.float32)
        for k in range(0, K):
            a = tl.load(A + rows * lda + k, mask=in_m, other=0.0)
            b = tl.load(B + k * tl.cast(ldb, tl.int64) + cols, mask=in_n, other=0.0)
            s += a[:, None] * b[None, :]
        mask = bad & in_m[:, None] & in_n[None, :]
        store_tile(s, alpha, beta, C, D, rows[:, None], cols[None, :], mask, ldc, ldd, HAS_C)
