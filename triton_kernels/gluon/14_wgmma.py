"""Stage 14 (Gluon) - wgmma fed by TMA: one warpgroup, warp-specialized, persistent, TMA-store epilogue.

Technique:  warpgroup_mma (wgmma.mma_async, sm_90a) reads A and B straight from shared memory that TMA fills
            (128-byte swizzled NVMMASharedLayout, the layout wgmma reads) into fp32 accumulators in registers;
            the copies land in a ring of STAGES slots, each completing on its `ready` mbarrier.  The forms:
              -1wg:        one warpgroup per 64x256 tile, 5 slots, no partitions: its threads issue the copies
                           STAGES k-tiles ahead, into the slot whose wgmmas they have just waited for; D stored
                           straight from the accumulators.
              -ws:         gl.warp_specialize: a 1-warp loader partition (TMA copies only) and two consumer
                           warpgroups of 64 rows of a 128x256 tile (4 slots), which hand a slot back on its
                           `empty` mbarrier; registers set apart (setmaxnreg).  One program per tile.
              -persistent: the same partitions walking the program's tiles in GROUP_M order, one program per SM
                           at most; the ring runs on across tiles (the next tile's copies during the epilogue).
              gluon:14_wgmma (best): -persistent with D leaving through shared memory and TMA stores, C read by TMA.
            The partitions take one `Partitions` aggregate (@aggregate, as in the Gluon tutorials 07 and 08).
Reproduces: no seed covers Hopper (seed 000 stops at mma.sync).  Anchors: pranjalssh/fast.cu's H100 ladder and
            the Gluon tutorials 07-persistence and 08-warp-specialization (triton-lang/triton): their ready/empty
            ring and partition split, applied to wgmma.  The forms mirror cuda_kernels/14_wgmma.cu's -1wg, -ws,
            -persistent and best 128x256 kernel (wgmma_tma); its -cluster and 256x192 tiles have no Gluon form.
Changed:    from Gluon 13 to -1wg: cp.async by every thread -> TMA, completing on a ready mbarrier per slot;
            ldmatrix + mma_v2 m16n8k16 from registers -> wgmma from shared memory (no fragment loads); 128x256
            tiles of 8 warps -> 64x256 of 4.  To -ws: one role -> a loader warp and two consumer warpgroups
            (128x256) with their registers set apart, slots handed back on empty mbarriers.  To -persistent: one
            program per tile -> one per SM.  To the best: stores from registers -> TMA stores.
Why faster: Stage 13's warps spend issue slots on ldmatrix, mma.sync and copy addresses; here one wgmma per
            warpgroup does a 64x256x16 step from shared memory and the copy engine does the address work, so
            the tensor pipe can stay near its peak.  -1wg's one warpgroup waits on its own wgmmas and copies;
            -ws keeps two consumers' wgmmas in the pipe while a warp of its own waits for slots; -persistent
            overlaps a tile's epilogue with the next tile's copies; the TMA-store epilogue (per 64x64 piece a
            pass through shared memory and one TMA store, against 4-byte stores a thread) frees the consumers
            sooner.
Measured:   gluon:14_wgmma on the H100, the sweep of 3bd236b (reports/h100/results.csv): 742.7 fp16 and 763.1 bf16
            TFLOP/s at 4096^3 (100.5% and 101.0% of cuBLAS), 696.3 and 733.2 at 8192^3 (102.1%, 102.0%); on the
            H200 (4 GPUs, the sweep of d183105) 100.8-110.1% at all four; gluon:13_swizzle was 59-63% on the H100,
            59-63% on the H200.  The three other forms on the H100, fp16 at 4096^3: -1wg 601.4 (81%), -ws 648.9 (88%),
            -persistent 672.1 (91%), the CUDA ladder's order.  Over the four calls each form ran at 0.97-1.03x its
            CUDA twin (-1wg 0.97-1.01x CUDA's -1wg, which refills its ring as this kernel does).
Ragged edges: TMA reads zeros past M, N and K, so every tile is computed whole.  Stores from registers mask rows
            at M; a 32-column piece that crosses N masks each column, one wholly left of N moves column pairs as
            4-byte accesses.  The TMA store clips D at M and N.  beta == 0 (HAS_C=False) compiles no read of C.
Alignment:  a tensor descriptor needs 16-byte aligned starts and leading dimensions (of A, B, D, and C when
            read); any other call goes to gluon:13_swizzle's launcher (its unaligned cp.async path), never
            to a fault.  Every form checks all four, as the CUDA stage; for the forms that store from registers
            the same rule makes ldc and ldd multiples of 8, what their 4-byte accesses need.
Compiles to (Triton 3.6, sm_90a, offline; ptxas -v on the PTX; no form spills):
            -1wg: 4 warps, 221 registers (168 without C); per k-tile 4 wgmma.mma_async m64n256k16 (SASS
              HGMMA.64x256x16.F32) and 5 TMA boxes (A one 64x64, B 4 of 64x64; cp.async.bulk.tensor, UTMALDG.2D,
              spread over the 4 warps); shared memory 204,840 bytes (ring 200 KiB).
            -ws, -persistent: 12 warps (384 threads: 4 + 4 + the loader's warpgroup, one warp of it active),
              launched at 168 registers; setmaxnreg gives the consumers 232 and the loader 40.  Per k-tile 8
              wgmma.mma_async m64n256k16 (4 a consumer) and 5 TMA boxes (A one 128x64, B 4 of 64x64, 128-byte
              rows); shared memory 196,824 bytes with C, 196,808 without (ring 192 KiB).
            The best: as -persistent, and the epilogue stmatrix, UTMASTG.2D (and ldmatrix of C); shared memory
              229,656 bytes with C, 213,208 without.
Gluon against CUDA: mbarrier.arrive is issued by one thread of the partition, so the compiler puts a
            128-thread named barrier (bar.sync) before each one, once per k-tile, and around each epilogue
            piece's shared-memory hand-offs; the CUDA stage has lane 0 of every consumer warp arrive (count 8),
            with no barrier.  In -1wg, Triton's barrier analysis puts a bar.sync of the warpgroup before the
            ready wait, the expect and each of the two copies: 4 a k-tile, where CUDA's -1wg meets at one after
            its wgmma wait and then a lane of each warp copies.
            -persistent's grid is the best form's balanced one (CUDA's -persistent takes min(tiles, SMs)).
"""
# No `from __future__ import annotations`: @aggregate reads its fields' annotations as types.
import importlib
from typing import Union

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.language.core import _aggregate as aggregate   # where Triton 3.6 keeps it (tutorials 07, 08)

from triton_kernels.gluon._common import as_multiple, grouped_tile, split_cols, store_part

# The fallback for what TMA cannot take, and the two host checks the Triton form of stage 13 already has.
_gluon13 = importlib.import_module("triton_kernels.gluon.13_swizzle")
_triton13 = importlib.import_module("triton_kernels.13_swizzle")
tma_ok, _sm_count = _triton13.tma_ok, _triton13._sm_count

# -1wg: one warpgroup per 64x256 tile, BK 64, a ring of 5 slots of 40 KiB (the CUDA form's).
META_1WG = dict(BM=64, BN=256, BK=64, STAGES=5, GROUP_M=16, num_warps=4)
# -ws and -persistent: 128x256 tiles (two consumer warpgroups of 64x256), BK 64, a ring of 4 slots of 48 KiB.
# num_warps is the default partition's: consumer warpgroup 0.
META_WS = dict(BM=128, BN=256, BK=64, STAGES=4, GROUP_M=16, num_warps=4)
# The best form: -persistent's, and the epilogue moves [64, EPI_N] pieces (8 KiB a buffer).
META = dict(META_WS, EPI_N=64)
# Registers: 1 + 4 + 4 warps round up to 3 warpgroups (384 threads); 168 a thread at launch is 64512 of the
# SM's 65536.  setmaxnreg then gives the loader's warpgroup 40 and each consumer 232 (128 x (40 + 2 x 232)
# = 64512), the CUDA stage's split; a 64x256 fp32 accumulator is 128 registers a thread.
MAXNREG, LOADER_REGS, CONSUMER_REGS = 168, 40, 232


@gluon.constexpr_function
def _acc_layout(BN):
    """wgmma's accumulator for one warpgroup: 4 warps x 16 rows, n = BN (m64nBNk16), BN / 2 fp32 a thread."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])


# --- what the forms share: two epilogues, the partitions' arguments ------------------------------------------

@aggregate
class Stores:
    """D straight from the accumulators (-1wg, -ws, -persistent): each thread writes the outputs it holds, 2
    adjacent columns at a time, and reads C there when HAS_C."""
    C: gl.tensor
    D: gl.tensor
    ldc: gl.tensor
    ldd: gl.tensor
    M: gl.tensor
    N: gl.tensor
    alpha: gl.tensor
    beta: gl.tensor
    HAS_C: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, C, D, ldc, ldd, M, N, alpha, beta, HAS_C):
        self.C = C
        self.D = D
        self.ldc = ldc
        self.ldd = ldd
        self.M = M
        self.N = N
        self.alpha = alpha
        self.beta = beta
        self.HAS_C = gl.constexpr(HAS_C)

    @gluon.jit
    def store(self, acc, row0, col0):
        """D[row0:, col0:] = alpha * acc + beta * C there, in fp32, rounded once; in column pieces of 32 (the
        splits move no data), so that a thread holds its addresses and C values for one piece at a time (64
        columns spilled in -ws).  A piece wholly left of N masks rows only, and its column pairs move as 4-byte
        accesses (ldc and ldd are multiples of 8: TMA's pitch rule); one that crosses N masks each element."""
        W: gl.constexpr = 32
        pieces = (acc,)
        for _ in gl.static_range((acc.shape[1] // W).bit_length() - 1):
            halves = ()
            for j in gl.static_range(len(pieces)):
                halves += split_cols(pieces[j])
            pieces = halves
        for j in gl.static_range(len(pieces)):
            col = col0 + j * W
            store_part(pieces[j], self.alpha, self.beta, self.C, self.D, row0, col, self.M, self.N, self.ldc,
                       self.ldd, col + W <= self.N, self.HAS_C)


@aggregate
class TmaStores:
    """D through shared memory and TMA stores (the best form), C read by TMA: one [64, EPI_N] buffer of each
    and one C barrier per consumer warpgroup ([2, ...])."""
    c_desc: tma.tensor_descriptor
    d_desc: tma.tensor_descriptor
    c_bufs: gl.shared_memory_descriptor
    d_bufs: gl.shared_memory_descriptor
    c_bars: gl.shared_memory_descriptor
    alpha: gl.tensor
    beta: gl.tensor
    HAS_C: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, c_desc, d_desc, c_bufs, d_bufs, c_bars, alpha, beta, HAS_C):
        self.c_desc = c_desc
        self.d_desc = d_desc
        self.c_bufs = c_bufs
        self.d_bufs = d_bufs
        self.c_bars = c_bars
        self.alpha = alpha
        self.beta = beta
        self.HAS_C = gl.constexpr(HAS_C)


@aggregate
class Partitions:
    """What the loader and the two consumers share, passed to each partition as its one argument: the TMA
    descriptors of A and B, the ring (STAGES slots of A's [BM, BK] and B's [BK, BN] boxes), each slot's ready
    and empty mbarriers, the epilogue's arguments (`out`), the sizes, the tile order."""
    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    a_ring: gl.shared_memory_descriptor
    b_ring: gl.shared_memory_descriptor
    ready: gl.shared_memory_descriptor
    empty: gl.shared_memory_descriptor
    out: Union[Stores, TmaStores]
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    GROUP_M: gl.constexpr
    TMA_STORE: gl.constexpr   # out is TmaStores

    @gluon.constexpr_function
    def __init__(self, a_desc, b_desc, a_ring, b_ring, ready, empty, out, M, N, K, GROUP_M):
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.a_ring = a_ring
        self.b_ring = b_ring
        self.ready = ready
        self.empty = empty
        self.out = out
        self.M = M
        self.N = N
        self.K = K
        self.GROUP_M = gl.constexpr(GROUP_M)
        self.TMA_STORE = gl.constexpr(isinstance(out, TmaStores))


# --- -1wg: one warpgroup, no partitions, one program per tile -------------------------------------------------

@gluon.jit
def _load_ktile(a_desc, b_desc, a_ring, b_ring, ready, s, row0, col0, kt, pred):
    """k-tile kt of the tile at (row0, col0) into slot s, completing on ready[s]: the expect, then both boxes
    (zeros past the edge count too: a box always delivers its full size)."""
    BK: gl.constexpr = a_desc.block_type.shape[1]
    mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes, pred=pred)
    tma.async_copy_global_to_shared(a_desc, [row0, kt * BK], ready.index(s), a_ring.index(s), pred)
    tma.async_copy_global_to_shared(b_desc, [kt * BK, col0], ready.index(s), b_ring.index(s), pred)


# M, N, K never specialised to constants (K = 1 would fold loop bounds; see Gluon 13's note on 3.6).
@gluon.jit(do_not_specialize=["M", "N", "K"])
def wgmma_1wg_kernel(a_desc, b_desc, C, D, M, N, K, ldc, ldd, alpha, beta, HAS_C: gl.constexpr,
                     STAGES: gl.constexpr, GROUP_M: gl.constexpr):
    """One warpgroup computes a BM (64) x BN tile and issues its own copies (the compiler spreads a k-tile's
    boxes over its 4 warps, one elected lane each), STAGES k-tiles ahead.  No empty barriers: the slot a copy
    refills held the k-tile before the one just issued, whose wgmmas the warpgroup has waited for."""
    dtype: gl.constexpr = a_desc.dtype
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    a_ring = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)   # the expect; the copies' bytes complete it
    out = Stores(C, D, as_multiple(ldc, 8), as_multiple(ldd, 8), M, N, alpha, beta, HAS_C)

    row0, col0 = grouped_tile(gl.program_id(0), M, N, BM, BN, GROUP_M)
    r0 = row0.to(gl.int32)   # TMA coordinates are 32-bit
    c0 = col0.to(gl.int32)
    k_tiles = gl.cdiv(K, a_desc.block_type.shape[1])
    for i in gl.static_range(STAGES):   # fill the ring
        _load_ktile(a_desc, b_desc, a_ring, b_ring, ready, i, r0, c0, i, i < k_tiles)
    acc = gl.zeros([BM, BN], gl.float32, _acc_layout(BN))
    for kt in range(k_tiles):
        s = kt % STAGES
        mbarrier.wait(ready.index(s), (kt // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s), acc, use_acc=kt > 0, is_async=True)
        # Keep this k-tile's wgmmas in flight; the previous k-tile's are done, so its slot takes the k-tile
        # STAGES after that one.
        acc = warpgroup_mma_wait(1, deps=[acc])
        nxt = kt + STAGES - 1
        _load_ktile(a_desc, b_desc, a_ring, b_ring, ready, nxt % STAGES, r0, c0, nxt, (kt > 0) & (nxt < k_tiles))
    acc = warpgroup_mma_wait(0, deps=[acc])
    out.store(acc, row0, col0)


# --- -ws: a loader warp and two consumer warpgroups, one program per tile ---------------------------------------

@gluon.jit
def _loader_ws(p):
    """The loader partition (one warp, TMA only): the program's tile, k-tile after k-tile, the n-th into slot
    n % STAGES.  Before refilling a slot it waits until both consumers have released its previous use (a
    fresh mbarrier counts as released: waiting on parity 1 returns at once)."""
    BM: gl.constexpr = p.a_desc.block_type.shape[0]
    BK: gl.constexpr = p.a_desc.block_type.shape[1]
    BN: gl.constexpr = p.b_desc.block_type.shape[1]
    STAGES: gl.constexpr = p.a_ring.shape[0]
    k_tiles = gl.cdiv(p.K, BK)
    row0, col0 = grouped_tile(gl.program_id(0), p.M, p.N, BM, BN, p.GROUP_M)
    row0 = row0.to(gl.int32)   # TMA coordinates are 32-bit
    col0 = col0.to(gl.int32)
    for n in range(k_tiles):
        s = n % STAGES
        mbarrier.wait(p.empty.index(s), ((n // STAGES) & 1) ^ 1)
        # The slot's ready barrier completes when both boxes' bytes have landed (zeros past the edge
        # count too: a box always delivers its full size).
        mbarrier.expect(p.ready.index(s), p.a_desc.block_type.nbytes + p.b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(p.a_desc, [row0, n * BK], p.ready.index(s), p.a_ring.index(s))
        tma.async_copy_global_to_shared(p.b_desc, [n * BK, col0], p.ready.index(s), p.b_ring.index(s))


@gluon.jit
def _consumer_ws(p, WG: gl.constexpr):
    """Consumer warpgroup WG (0: the default partition, 1: a worker): rows WG*64 .. WG*64+63 of the tile,
    wgmma m64nBNk16 over each slot as it completes; then the slot goes back on its empty barrier (one
    arrival per consumer)."""
    gl.static_assert(gl.num_warps() == 4, "a consumer is one warpgroup")
    BM: gl.constexpr = p.a_ring.shape[1]
    BK: gl.constexpr = p.a_ring.shape[2]
    BN: gl.constexpr = p.b_ring.shape[2]
    STAGES: gl.constexpr = p.a_ring.shape[0]
    WG_M: gl.constexpr = BM // 2
    k_tiles = gl.cdiv(p.K, BK)
    acc = gl.zeros([WG_M, BN], gl.float32, _acc_layout(BN))
    row0, col0 = grouped_tile(gl.program_id(0), p.M, p.N, BM, BN, p.GROUP_M)
    for n in range(k_tiles):
        s = n % STAGES
        mbarrier.wait(p.ready.index(s), (n // STAGES) & 1)
        a = p.a_ring.index(s).slice(WG * WG_M, WG_M, dim=0)   # this warpgroup's 64 rows of the A box
        acc = warpgroup_mma(a, p.b_ring.index(s), acc, use_acc=n > 0, is_async=True)
        # Keep this k-tile's wgmmas in flight; the previous k-tile's are done, so its slot goes back.
        acc = warpgroup_mma_wait(1, deps=[acc])
        mbarrier.arrive(p.empty.index((n + STAGES - 1) % STAGES), pred=n > 0)
    acc = warpgroup_mma_wait(0, deps=[acc])
    mbarrier.arrive(p.empty.index((k_tiles + STAGES - 1) % STAGES))
    p.out.store(acc, row0 + WG * WG_M, col0)


# --- -persistent: the same partitions, each walking the program's tiles -------------------------------------
# (and, with p.TMA_STORE, the best form's epilogue)

@gluon.jit
def _loader(p):
    """_loader_ws over the program's tiles; the ring runs on across them (n counts k-tiles over all tiles)."""
    BM: gl.constexpr = p.a_desc.block_type.shape[0]
    BK: gl.constexpr = p.a_desc.block_type.shape[1]
    BN: gl.constexpr = p.b_desc.block_type.shape[1]
    STAGES: gl.constexpr = p.a_ring.shape[0]
    k_tiles = gl.cdiv(p.K, BK)
    tiles = gl.cdiv(p.M, BM) * gl.cdiv(p.N, BN)
    n = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        row0, col0 = grouped_tile(tile, p.M, p.N, BM, BN, p.GROUP_M)
        row0 = row0.to(gl.int32)   # TMA coordinates are 32-bit
        col0 = col0.to(gl.int32)
        for kt in range(k_tiles):
            s = n % STAGES
            mbarrier.wait(p.empty.index(s), ((n // STAGES) & 1) ^ 1)
            mbarrier.expect(p.ready.index(s), p.a_desc.block_type.nbytes + p.b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(p.a_desc, [row0, kt * BK], p.ready.index(s), p.a_ring.index(s))
            tma.async_copy_global_to_shared(p.b_desc, [kt * BK, col0], p.ready.index(s), p.b_ring.index(s))
            n += 1


@gluon.jit
def _epilogue_piece(x, row, col, alpha, beta, c_desc, d_desc, c_buf, d_buf, c_bar, c_phase, HAS_C: gl.constexpr):
    """The best form: D[row:row+64, col:col+EPI_N] = alpha * x + beta * C there, in fp32, rounded once.  C
    arrives by TMA into c_buf (zeros past the edge) and is read in x's own layout; D leaves through d_buf by a
    TMA store, which clips at M and N."""
    d = x * alpha
    if HAS_C:
        fence_async_shared()   # this warpgroup's reads of c_buf (last piece) before the copy engine rewrites it
        mbarrier.expect(c_bar, c_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(c_desc, [row, col], c_bar, c_buf)
        mbarrier.wait(c_bar, c_phase)
        d = d + beta * c_buf.load(x.type.layout).to(gl.float32)
    tma.store_wait(0)          # the previous piece's store has read d_buf
    d_buf.store(d.to(d_desc.dtype))
    fence_async_shared()       # d_buf's generic-proxy writes before the TMA store (async proxy) reads them
    tma.async_copy_shared_to_global(d_desc, [row, col], d_buf)


@gluon.jit
def _consumer(p, WG: gl.constexpr):
    """_consumer_ws over the program's tiles (n counts k-tiles over all tiles, as the loader's); the loader
    fetches the next tile's k-tiles while the consumers run their epilogue."""
    gl.static_assert(gl.num_warps() == 4, "a consumer is one warpgroup")
    BM: gl.constexpr = p.a_ring.shape[1]
    BK: gl.constexpr = p.a_ring.shape[2]
    BN: gl.constexpr = p.b_ring.shape[2]
    STAGES: gl.constexpr = p.a_ring.shape[0]
    WG_M: gl.constexpr = BM // 2
    if p.TMA_STORE:   # this warpgroup's epilogue buffers
        EPI_N: gl.constexpr = p.out.d_desc.block_type.shape[1]
        gl.static_assert(BN == 4 * EPI_N, "the epilogue cuts the tile in 4 column pieces")
        c_buf = p.out.c_bufs.index(WG)
        d_buf = p.out.d_bufs.index(WG)
        c_bar = p.out.c_bars.index(WG)
    k_tiles = gl.cdiv(p.K, BK)
    tiles = gl.cdiv(p.M, BM) * gl.cdiv(p.N, BN)
    acc = gl.zeros([WG_M, BN], gl.float32, _acc_layout(BN))
    n = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        row0, col0 = grouped_tile(tile, p.M, p.N, BM, BN, p.GROUP_M)
        for kt in range(k_tiles):
            s = n % STAGES
            mbarrier.wait(p.ready.index(s), (n // STAGES) & 1)
            a = p.a_ring.index(s).slice(WG * WG_M, WG_M, dim=0)
            acc = warpgroup_mma(a, p.b_ring.index(s), acc, use_acc=kt > 0, is_async=True)
            acc = warpgroup_mma_wait(1, deps=[acc])
            mbarrier.arrive(p.empty.index((n + STAGES - 1) % STAGES), pred=kt > 0)
            n += 1
        acc = warpgroup_mma_wait(0, deps=[acc])
        mbarrier.arrive(p.empty.index((n + STAGES - 1) % STAGES))

        if p.TMA_STORE:
            # 4 column pieces; the splits move no data (columns 64 apart are register repeats).
            o = p.out
            row = (row0 + WG * WG_M).to(gl.int32)
            col = col0.to(gl.int32)
            left, right = split_cols(acc)
            p0, p1 = split_cols(left)
            p2, p3 = split_cols(right)
            _epilogue_piece(p0, row, col, o.alpha, o.beta, o.c_desc, o.d_desc, c_buf, d_buf, c_bar, 0, o.HAS_C)
            _epilogue_piece(p1, row, col + EPI_N, o.alpha, o.beta, o.c_desc, o.d_desc, c_buf, d_buf, c_bar, 1,
                            o.HAS_C)
            _epilogue_piece(p2, row, col + 2 * EPI_N, o.alpha, o.beta, o.c_desc, o.d_desc, c_buf, d_buf, c_bar, 0,
                            o.HAS_C)
            _epilogue_piece(p3, row, col + 3 * EPI_N, o.alpha, o.beta, o.c_desc, o.d_desc, c_buf, d_buf, c_bar, 1,
                            o.HAS_C)
        else:
            p.out.store(acc, row0 + WG * WG_M, col0)
    if p.TMA_STORE:
        tma.store_wait(0)   # d_buf must outlive the last store's read


@gluon.jit(do_not_specialize=["M", "N", "K"])
def wgmma_ws_kernel(a_desc, b_desc, C, D, M, N, K, ldc, ldd, alpha, beta, HAS_C: gl.constexpr,
                    STAGES: gl.constexpr, GROUP_M: gl.constexpr, PERSISTENT: gl.constexpr,
                    LOADER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr):
    """-ws (PERSISTENT=False) and -persistent: shared memory, barriers, the three partitions."""
    dtype: gl.constexpr = a_desc.dtype
    a_ring = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)   # the loader's expect; the copies' bytes complete it
        mbarrier.init(empty.index(i), count=2)   # one arrival per consumer warpgroup
    out = Stores(C, D, as_multiple(ldc, 8), as_multiple(ldd, 8), M, N, alpha, beta, HAS_C)
    p = Partitions(a_desc, b_desc, a_ring, b_ring, ready, empty, out, M, N, K, GROUP_M)
    if PERSISTENT:
        gl.warp_specialize([(_consumer, (p, gl.constexpr(0))),   # default: warpgroup 0
                            (_consumer, (p, gl.constexpr(1))),   # worker: warpgroup 1
                            (_loader, (p,))],                    # worker: the loader
                           [4, 1], [CONSUMER_REGS, LOADER_REGS])
    else:
        gl.warp_specialize([(_consumer_ws, (p, gl.constexpr(0))),
                            (_consumer_ws, (p, gl.constexpr(1))),
                            (_loader_ws, (p,))],
                           [4, 1], [CONSUMER_REGS, LOADER_REGS])


# --- the best form: -persistent with D through shared memory and TMA stores ------------------------------------

@gluon.jit(do_not_specialize=["M", "N", "K"])
def wgmma_kernel(a_desc, b_desc, c_desc, d_desc, M, N, K, alpha, beta, HAS_C: gl.constexpr,
                 STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOADER_REGS: gl.constexpr,
                 CONSUMER_REGS: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    a_ring = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    # One epilogue buffer (and C buffer, C barrier) per consumer.
    d_bufs = gl.allocate_shared_memory(dtype, [2] + d_desc.block_type.shape, d_desc.layout)
    if HAS_C:
        c_bufs = gl.allocate_shared_memory(dtype, [2] + c_desc.block_type.shape, c_desc.layout)
    else:
        c_bufs = d_bufs   # never touched
    c_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(c_bars.index(i), count=1)
    out = TmaStores(c_desc, d_desc, c_bufs, d_bufs, c_bars, alpha, beta, HAS_C)
    p = Partitions(a_desc, b_desc, a_ring, b_ring, ready, empty, out, M, N, K, GROUP_M)
    gl.warp_specialize([(_consumer, (p, gl.constexpr(0))),
                        (_consumer, (p, gl.constexpr(1))),
                        (_loader, (p,))],
                       [4, 1], [CONSUMER_REGS, LOADER_REGS])


# --- host ------------------------------------------------------------------------------------------------------

_SMEM_16 = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


def _desc(t: torch.Tensor, block: list[int]) -> TensorDescriptor:
    """A TMA descriptor of row-major `t` (its leading dimension may be padded) in boxes of `block`, landing in
    shared memory in the 128-byte swizzle (every box here is at least 64 2-byte elements wide)."""
    return TensorDescriptor(t, list(t.shape), [t.stride(0), 1], block, _SMEM_16)


def _tma_ok(p) -> bool:
    return all(tma_ok(t) for t in (p.a, p.b, p.c, p.out) if t is not None)


def _persistent_grid(tiles: int, device) -> tuple[int]:
    """The fewest programs (at most one an SM) that take the same number of waves of tiles, so each walks the
    same count give or take one (the CUDA form's balanced grid)."""
    return (triton.cdiv(tiles, triton.cdiv(tiles, _sm_count(device))),)


def _launch_direct(kernel, p, meta: dict, persistent: bool | None):
    """A form that stores D from its accumulators: `kernel` with `meta`; persistent None for -1wg (no
    partitions), else -ws (False) or -persistent (True)."""
    if not _tma_ok(p):
        return _gluon13.gemm(p)
    meta = dict(meta)
    bm, bn, bk = meta.pop("BM"), meta.pop("BN"), meta.pop("BK")
    M, N, K = p.mnk
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    c = p.c if p.c is not None else p.out   # never read when HAS_C=False
    extra = {} if persistent is None else dict(PERSISTENT=persistent, LOADER_REGS=LOADER_REGS,
                                               CONSUMER_REGS=CONSUMER_REGS, maxnreg=MAXNREG)
    grid = _persistent_grid(tiles, p.a.device) if persistent else (tiles,)
    return kernel[grid](_desc(p.a, [bm, bk]), _desc(p.b, [bk, bn]), c, p.out, M, N, K, c.stride(0),
                        p.out.stride(0), p.alpha, p.beta, HAS_C=p.c is not None, **meta, **extra)


def gemm_1wg(p):
    return _launch_direct(wgmma_1wg_kernel, p, META_1WG, None)


def gemm_ws(p):
    return _launch_direct(wgmma_ws_kernel, p, META_WS, False)


def gemm_persistent(p):
    return _launch_direct(wgmma_ws_kernel, p, META_WS, True)


def launch(p, meta: dict | None = None):
    """The best form with `meta` (default META) when A, B, D and C (if read) suit TMA; otherwise
    gluon:13_swizzle.  Returns the compiled kernel that ran."""
    if not _tma_ok(p):
        return _gluon13.gemm(p)
    meta = {**META, **(meta or {})}
    bm, bn, bk, epi_n = meta.pop("BM"), meta.pop("BN"), meta.pop("BK"), meta.pop("EPI_N")
    M, N, K = p.mnk
    d_desc = _desc(p.out, [bm // 2, epi_n])
    c_desc = _desc(p.c, [bm // 2, epi_n]) if p.c is not None else d_desc   # never read when HAS_C=False
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    return wgmma_kernel[_persistent_grid(tiles, p.a.device)](
        _desc(p.a, [bm, bk]), _desc(p.b, [bk, bn]), c_desc, d_desc, M, N, K, p.alpha, p.beta,
        HAS_C=p.c is not None, LOADER_REGS=LOADER_REGS, CONSUMER_REGS=CONSUMER_REGS, maxnreg=MAXNREG, **meta)


def gemm(p):
    return launch(p)


KERNEL = wgmma_kernel
