"""What the Gluon stages share: the launch, tile indices, the GEMM epilogue (alpha, beta, C) and the masked
store of D, and the copy and compute loops that several stages run with layouts of their own.

Gluon tensors carry an explicit distributed layout, so the epilogue helpers take index vectors that already
have the right one: `rows` in SliceLayout(1, acc.type.layout) and `cols` in SliceLayout(0, acc.type.layout),
both int64 (row * ld may exceed 2**31).  `rows[:, None]` and `cols[None, :]` then broadcast back to exactly
the accumulator's layout, so the epilogue moves no data between threads: each thread reads C and writes D for
the very outputs it holds.  Whether those accesses become 16-byte vectors is decided by the accumulator layout
(4 consecutive columns per thread) and by what Triton's argument specialisation proves (D, C 16-byte aligned;
ldd, ldc, N multiples of 16); without that proof the same code issues scalar accesses, so an unaligned view is
slower, never wrong.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from triton_kernels._common import gemm_args, launch, tiles


# --- launch -------------------------------------------------------------------------------------------------

def launch_tiles(name: str, kernel, p, meta: dict, **options):
    """triton_kernels._common.launch() with one program per meta["BM"] x meta["BN"] tile of D: the
    constexprs and launch options in `meta`, plus launch `options` kept out of meta (maxnreg)."""
    return launch(name, kernel, p, tiles(p, meta["BM"], meta["BN"]), **meta, **options)


def pitches_divisible(p, by: int, names=("lda", "ldb", "ldc", "ldd")) -> bool:
    """Whether the leading dimensions `names` of gemm_args(p) are all multiples of `by` elements."""
    args = gemm_args(p)
    return all(args[ld] % by == 0 for ld in names)


def rows_aligned_16(p) -> bool:
    """What 16-byte cp.async of 2-byte operands needs (stages 11-13): A and B start 16-byte aligned and every
    leading dimension is a multiple of 8 elements, so every row starts 16-byte aligned.  C and D's pitches
    join the proof only so that one flag covers it (an unaligned C or D takes the element-wise path too)."""
    return p.a.data_ptr() % 16 == 0 and p.b.data_ptr() % 16 == 0 and pitches_divisible(p, 8)


# --- tile indices, pitches ----------------------------------------------------------------------------------

@gluon.jit
def tile_origin(pid, N, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr):
    """First row and column (int64) of program `pid`'s BLOCK_M x BLOCK_N tile of D; tiles are numbered in
    row-major order over a one-dimensional grid of cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) programs."""
    n_tiles = gl.cdiv(N, BLOCK_N)
    row0 = (pid // n_tiles).to(gl.int64) * BLOCK_M
    col0 = (pid % n_tiles).to(gl.int64) * BLOCK_N
    return row0, col0


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
def as_int64(x):
    """x as a 64-bit scalar tensor.  Needed for integer kernel arguments: Triton's launcher specialises an
    argument equal to 1 into a compile-time constant, which has no .to(), so `ld.to(gl.int64)` would fail
    to compile exactly when a leading dimension is 1."""
    return gl.to_tensor(x).to(gl.int64)


@gluon.jit
def as_multiple(ld, MULTIPLE: gl.constexpr):
    """Leading dimension ld (int64) written as (ld // MULTIPLE) * MULTIPLE.  For a launcher that checked that
    MULTIPLE divides ld: in this form Triton's alignment analysis sees it too, so rows of MULTIPLE-aligned
    pitch can move as 16-byte vectors."""
    return (ld // MULTIPLE).to(gl.int64) * MULTIPLE


# --- the epilogue, whole or in pieces -----------------------------------------------------------------------

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


@gluon.jit
def _store_piece(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C: gl.constexpr,
                 EPI_SMEM: gl.constexpr):
    if EPI_SMEM:
        # Through shared memory into rows of 8 consecutive elements per lane (stage 13): C loads and D stores
        # become 16-byte vectors (an mma fragment holds 2 consecutive columns per lane).
        x = gl.convert_layout(x, copy_layout(x.shape[1], gl.num_warps()))
    store_part(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C)


@gluon.jit
def store_row_piece(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C: gl.constexpr,
                    COL_SPLIT: gl.constexpr, EPI_SMEM: gl.constexpr = False):
    """store_part of rows row0.. of the output, in two column halves when COL_SPLIT (the top column bit is a
    register bit of x's layout, so the split moves no data)."""
    if COL_SPLIT:
        left, right = split_cols(x)
        _store_piece(left, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, EPI_SMEM)
        _store_piece(right, alpha, beta, C, D, row0, col0 + x.shape[1] // 2, M, N, ldc, ldd, full_n, HAS_C,
                     EPI_SMEM)
    else:
        _store_piece(x, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, EPI_SMEM)


@gluon.jit
def store_pieces(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C: gl.constexpr,
                 ROW_PIECES: gl.constexpr, COL_SPLIT: gl.constexpr, EPI_SMEM: gl.constexpr = False):
    """D = alpha * acc + beta * C for the tile at (row0, col0), in pieces along the layout's register wraps
    (no data moves): 4 row pieces when ROW_PIECES >= 4, 2 when >= 2, each cut in column halves when
    COL_SPLIT, so that with beta != 0 a thread holds only a piece of its C values at a time."""
    BM: gl.constexpr = acc.shape[0]
    if ROW_PIECES >= 4:
        top, bottom = split_rows(acc)
        p0, p1 = split_rows(top)
        p2, p3 = split_rows(bottom)
        Q: gl.constexpr = BM // 4
        store_row_piece(p0, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT, EPI_SMEM)
        store_row_piece(p1, alpha, beta, C, D, row0 + Q, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT,
                        EPI_SMEM)
        store_row_piece(p2, alpha, beta, C, D, row0 + 2 * Q, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT,
                        EPI_SMEM)
        store_row_piece(p3, alpha, beta, C, D, row0 + 3 * Q, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT,
                        EPI_SMEM)
    elif ROW_PIECES >= 2:
        top, bottom = split_rows(acc)
        store_row_piece(top, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT, EPI_SMEM)
        store_row_piece(bottom, alpha, beta, C, D, row0 + BM // 2, col0, M, N, ldc, ldd, full_n, HAS_C,
                        COL_SPLIT, EPI_SMEM)
    else:
        store_row_piece(acc, alpha, beta, C, D, row0, col0, M, N, ldc, ldd, full_n, HAS_C, COL_SPLIT, EPI_SMEM)


# --- the shared-memory K loop of stages 03-06 ---------------------------------------------------------------

@gluon.jit
def smem_dot_fma(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha, beta, HAS_C: gl.constexpr,
                 BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, L: gl.constexpr, LA: gl.constexpr,
                 LB: gl.constexpr, SA: gl.constexpr, SB: gl.constexpr):
    """Program pid's BM x BN tile of D, staged through shared memory: the K loop of stages 03-06, each with
    layouts of its own.  Per BK step a BM x BK tile of A and a BK x BN tile of B are loaded from global
    memory in the copy layouts LA and LB (masked: zeros outside M, N and K), stored to shared memory in the
    shared layouts SA and SB, a barrier, gl.dot_fma into the fp32 accumulator in the register-tile layout L,
    and a second barrier before the next step overwrites the tiles.  Then the epilogue (epilogue_store)."""
    row0, col0 = tile_origin(gl.program_id(0), N, BM, BN)
    a_rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, LA)).to(gl.int64)
    a_k = gl.arange(0, BK, layout=gl.SliceLayout(0, LA))
    b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    b_cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, LB)).to(gl.int64)
    a_in_m = (a_rows < M)[:, None]
    b_in_n = (b_cols < N)[None, :]
    a_ptrs = A + a_rows[:, None] * lda + a_k[None, :]
    b_ptrs = B + b_k.to(gl.int64)[:, None] * ldb + b_cols[None, :]
    b_step = as_int64(ldb) * BK                                    # 64-bit: BK * ldb may exceed 2**31

    As = gl.allocate_shared_memory(gl.float32, [BM, BK], SA)
    Bs = gl.allocate_shared_memory(gl.float32, [BK, BN], SB)
    acc = gl.zeros([BM, BN], gl.float32, L)
    for k0 in range(0, K, BK):
        k_left = K - k0                                               # k of this tile still in range
        a = gl.load(a_ptrs, mask=a_in_m & (a_k < k_left)[None, :], other=0.0)
        b = gl.load(b_ptrs, mask=(b_k < k_left)[:, None] & b_in_n, other=0.0)
        As.store(a.to(gl.float32))
        Bs.store(b.to(gl.float32))
        gl.thread_barrier()                                           # tiles complete before anyone reads
        acc = gl.dot_fma(As.load(gl.DotOperandLayout(0, L, 0)), Bs.load(gl.DotOperandLayout(1, L, 0)), acc)
        gl.thread_barrier()                                           # everyone done before the overwrite
        a_ptrs += BK
        b_ptrs += b_step

    rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, L)).to(gl.int64)
    cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, L)).to(gl.int64)
    epilogue_store(acc, alpha, beta, C, D, rows, cols, M, N, ldc, ldd, HAS_C)


# --- the fp32 cp.async rings of stages 07-09 (A stored transposed, rank-1 updates) and 14 -------------------

@gluon.constexpr_function
def a_t_smem_layout(BK, BM):
    """A^T tile [BK, BM] in shared memory (stages 07-09).  Offset bit i holds the (k, m) in bases[i]: m0, m1,
    then k0-2 XOR m2-4, then m2-4 (which also flip k0-2: the XOR), the rest of m, the rest of k."""
    bases = [[0, 1], [0, 2], [1, 0], [2, 0], [4, 0], [1, 4], [2, 8], [4, 16]]
    bases += [[0, 1 << b] for b in range(5, BM.bit_length() - 1)]
    bases += [[1 << b, 0] for b in range(3, BK.bit_length() - 1)]
    return gl.SharedLinearLayout(bases)


@gluon.constexpr_function
def transposed_layout(layout):
    """The BlockedLayout of the transposed tile: loading [1, BM] in it and permuting gives [BM, 1] in layout."""
    return gl.BlockedLayout(layout.size_per_thread[::-1], layout.threads_per_warp[::-1],
                            layout.warps_per_cta[::-1], [1 - o for o in layout.order])


@gluon.jit
def copy_indices_a_t(row0, col0, M, N, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                     LA: gl.constexpr, LB: gl.constexpr):
    """Index vectors for issue_tile_a_t: A's rows and k as slices of the transposed pointer tile's layout LA
    ([BK, BM]), B's k and columns as slices of LB ([BK, BN]), and the row and column masks."""
    a_rows = row0 + gl.arange(0, BM, layout=gl.SliceLayout(0, LA)).to(gl.int64)
    a_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LA))
    a_in_m = (a_rows < M)[None, :]
    b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))
    b_cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, LB)).to(gl.int64)
    b_in_n = (b_cols < N)[None, :]
    return a_rows, a_k, a_in_m, b_k, b_cols, b_in_n


@gluon.jit
def issue_tile_a_t(As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, kt, full_n,
                   BK: gl.constexpr):
    """cp.async of k-tile kt into ring slots As (A^T, [BK, BM]) and Bs ([BK, BN]); everything outside A or B
    arrives as zeros (a masked cp.async copies 0 bytes and zero-fills)."""
    k0 = kt * BK
    k_left = K - k0
    # A through a transposed pointer tile, ptr[k, m] = A + m*lda + k: the descriptor is A^T's [BK, BM].
    cp.async_copy_global_to_shared(As, A + a_rows[None, :] * lda + (k0 + a_k)[:, None],
                                   mask=a_in_m & (a_k < k_left)[:, None])
    b_ptrs = B + (k0 + b_k).to(gl.int64)[:, None] * ldb + b_cols[None, :]
    if full_n:   # mask constant along a row: 16-byte copies
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=(b_k < k_left)[:, None])
    else:        # the tile crosses N: per-column masks, 4-byte copies
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=(b_k < k_left)[:, None] & b_in_n)


@gluon.jit
def rank1_updates(acc, a_tile, b_tile, L: gl.constexpr, LT: gl.constexpr, BK: gl.constexpr):
    """acc += A^T[:, k-tile]^T @ B[k-tile, :] from one ring slot as BK rank-1 updates: row k of A^T as
    [BM, 1] and row k of B as [1, BN], both in the accumulator's layout L (a lane's values of A as 16-byte
    loads; LT = transposed_layout(L)); the broadcast is free and gl.fma lowers to fma.rn.f32."""
    for k in gl.static_range(BK):
        a = gl.convert_layout(gl.permute(a_tile.slice(k, 1).load(LT), [1, 0]), L, assert_trivial=True)
        b = b_tile.slice(k, 1).load(L)
        a, b = gl.broadcast(a, b)
        acc = gl.fma(a, b, acc)
    return acc


@gluon.jit
def ring_prologue(ISSUE: gl.constexpr, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K,
                  k_tiles, full_n, BK: gl.constexpr, STAGES: gl.constexpr):
    """Start a cp.async ring of STAGES slots (As, Bs: one allocation each): tiles 0 .. STAGES-2 in flight,
    copied by ISSUE (issue_tile_a_t, or a copy with the same arguments: stage 15's).  Every step commits one
    group, empty or not, so tile t is always group t and "at most STAGES-2 groups pending" always means the
    tile about to be used has landed."""
    for t in gl.static_range(STAGES - 1):
        if t < k_tiles:
            ISSUE(As.index(t), Bs.index(t), A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K, t,
                  full_n, BK)
        cp.commit_group()


@gluon.jit
def ring_advance(ISSUE: gl.constexpr, As, Bs, A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n, lda, ldb, K,
                 kt, k_tiles, full_n, BK: gl.constexpr, STAGES: gl.constexpr):
    """Wait for tile kt of the ring ring_prologue started, then start tile kt + STAGES - 1 in the slot of
    tile kt - 1.  One barrier, two jobs: tile kt is visible to all, and every thread has finished tile
    kt - 1, whose slot the copy overwrites."""
    cp.wait_group(STAGES - 2)
    gl.thread_barrier()
    nxt = kt + STAGES - 1
    if nxt < k_tiles:
        ISSUE(As.index(nxt % STAGES), Bs.index(nxt % STAGES), A, a_rows, a_k, a_in_m, B, b_k, b_cols, b_in_n,
              lda, ldb, K, nxt, full_n, BK)
    cp.commit_group()


# --- the 2-byte cp.async ring of stages 11-13: 16-byte copies, mma_v2 from shared memory --------------------

@gluon.constexpr_function
def copy_layout(cols, num_warps):
    """[rows, cols] 2-byte tile in 16-byte chunks: a warp's lanes cover whole rows, chunks along a row first."""
    chunks = cols // 8
    tpw_c = min(32, chunks)
    return gl.BlockedLayout([1, 8], [32 // tpw_c, tpw_c], [num_warps, 1], [1, 0])


@gluon.jit
def fill_indices(row0, col0, M, N, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr):
    """Index tiles for fill_tile: A's rows [BM, 1] and k [1, BK], B's k [BK, 1] and columns [1, BN], in the
    16-byte-chunk copy layouts of the [BM, BK] and [BK, BN] tiles (copy_layout), and the masks: rows of A,
    columns of B, and B's columns up to N rounded up to 8 (constant over each 16-byte chunk: a chunk that
    starts below N is 16-byte aligned and holds a valid element, and its values past N reach only columns
    of D that are never stored)."""
    LA: gl.constexpr = copy_layout(BK, gl.num_warps())
    LB: gl.constexpr = copy_layout(BN, gl.num_warps())
    a_rows = (row0 + gl.arange(0, BM, layout=gl.SliceLayout(1, LA)).to(gl.int64))[:, None]
    a_k = gl.arange(0, BK, layout=gl.SliceLayout(0, LA))[None, :]
    a_in_m = a_rows < M
    b_k = gl.arange(0, BK, layout=gl.SliceLayout(1, LB))[:, None]
    b_cols = (col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, LB)).to(gl.int64))[None, :]
    b_in_n = b_cols < N
    b_in_n8 = b_cols < (N + 7) // 8 * 8
    return a_rows, a_k, a_in_m, b_k, b_cols, b_in_n, b_in_n8


@gluon.jit
def ring_k_tiles(K, BK: gl.constexpr, ALIGNED: gl.constexpr):
    """How many k-tiles the ring carries: with ALIGNED the full ones only (the partial one, where what lies
    past K in its last 16-byte chunks may be NaN, is done after the loop: partial_tile_mma), otherwise all
    of them, every one element-wise."""
    if ALIGNED:
        return K // BK
    else:
        return gl.cdiv(K, BK)


@gluon.jit
def fill_tile(As, Bs, A, B, a_rows, a_k, a_in_m, b_k, b_cols, b_in_n8, b_in_n, lda, ldb, K, t,
              BK: gl.constexpr, ALIGNED: gl.constexpr):
    """k-tile t of A and B into ring slot As, Bs; everything outside A and B arrives as zeros."""
    k0 = t * BK
    a_ptrs = A + a_rows * lda + (k0 + a_k)
    b_ptrs = B + (k0 + b_k).to(gl.int64) * ldb + b_cols
    if ALIGNED:
        # A full k-tile (the ring never holds the partial one).  Masks constant over each 16-byte chunk.
        cp.async_copy_global_to_shared(As, a_ptrs, mask=a_in_m)
        cp.async_copy_global_to_shared(Bs, b_ptrs, mask=b_in_n8)
    else:
        # Operands or pitches not 16-byte aligned: cp.async copies 4, 8 or 16 bytes only.
        fill_tile_elementwise(As, Bs, a_ptrs, b_ptrs, a_in_m, a_k, b_k, b_in_n, K - k0)


@gluon.jit
def fill_tile_elementwise(As, Bs, a_ptrs, b_ptrs, a_in_m, a_k, b_k, b_in_n, k_left):
    """Masked element-wise loads through registers, stored to the slot (visible after the next barrier)."""
    As.store(gl.load(a_ptrs, mask=a_in_m & (a_k < k_left), other=0.0))
    Bs.store(gl.load(b_ptrs, mask=(b_k < k_left) & b_in_n, other=0.0))


@gluon.jit
def tile_mma(acc, a_tile, b_tile, OPA: gl.constexpr, OPB: gl.constexpr, BK: gl.constexpr):
    """acc += a_tile @ b_tile, one k16 slice at a time: fragments by ldmatrix, products by mma.sync."""
    for j in gl.static_range(BK // 16):
        a = a_tile.slice(j * 16, 16, dim=1).load(OPA)
        b = b_tile.slice(j * 16, 16, dim=0).load(OPB)
        acc = mma_v2(a, b, acc)
    return acc


@gluon.jit
def partial_tile_mma(acc, As, Bs, A, B, a_rows, a_k, a_in_m, b_k, b_cols, b_in_n, lda, ldb, K, k_tiles,
                     OPA: gl.constexpr, OPB: gl.constexpr, BK: gl.constexpr):
    """acc += the partial k-tile past the ring's k_tiles full ones (none when BK divides K): what lies past K
    in its last 16-byte chunks may be NaN, so it is loaded element-wise with per-k masks, into slot 0 of the
    ring (As, Bs) once every warp is done with the ring."""
    if K % BK != 0:
        gl.thread_barrier()
        k0 = k_tiles * BK
        fill_tile_elementwise(As.index(0), Bs.index(0), A + a_rows * lda + (k0 + a_k),
                              B + (k0 + b_k).to(gl.int64) * ldb + b_cols, a_in_m, a_k, b_k, b_in_n, K - k0)
        gl.thread_barrier()
        acc = tile_mma(acc, As.index(0), Bs.index(0), OPA, OPB, BK)
    return acc


# --- compile-time checks ------------------------------------------------------------------------------------

@gluon.jit
def assert_conflict_free(DTYPE: gl.constexpr, ROWS: gl.constexpr, COLS: gl.constexpr, REG: gl.constexpr,
                         SMEM: gl.constexpr, WHAT: gl.constexpr):
    """Compile-time proof (gl.bank_conflicts) that moving a ROWS x COLS tile of DTYPE between registers in
    layout REG and shared memory in layout SMEM has no bank conflicts; WHAT names the access."""
    # DTYPE.value: the dtype itself (a constexpr parameter arrives wrapped, and the types want it bare).
    gl.static_assert(gl.bank_conflicts(gl.distributed_type(DTYPE.value, [ROWS, COLS], REG),
                                       gl.shared_memory_descriptor_type(DTYPE.value, [ROWS, COLS], SMEM,
                                                                        [ROWS, COLS])) == 0,
                     WHAT + " must be free of bank conflicts")
