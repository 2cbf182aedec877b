"""Stage 16 (Gluon) - fp8 e4m3 GEMM on wgmma: scaled operands, the tensor core's partial promoted every 128 k.

Technique:  rung 14's persistent, warp-specialized machinery on e4m3 operands: a 1-warp loader TMA-loads A
            [BM, 128] and B^T [BN, 128] boxes (K-major, 128-byte swizzle) into a ring of mbarrier slots; two
            consumer warpgroups of 64 rows issue SS wgmma m64nBNk32 .e4m3.e4m3 (B the permuted view of its box);
            setmaxnreg 40 / 232.  gemm, gemm_row, gemm_block (promoted, "fp32acc", 128x128 tiles, 6 slots): a
            slot is one 128-deep chunk whose four k32 wgmmas start a partial from zero (use_acc=False); two
            partials alternate, and chunk k + 1 is issued before the warpgroup waits for chunk k (wait(1)), hands
            its slot back and adds it into an fp32 sum (block: fma by sa[m, kb] * sb[kb, nb]), so its next
            wgmmas are queued while it adds.  gemm_tcacc: rung 14's loop, one accumulator over all of K, 128x256
            tiles.  Epilogue: alpha * scale * acc (+ beta * C) in fp32, bf16 once; TMA stores in [64, 64] pieces
            when D and C allow, else masked register stores.
Reproduces: no seed covers fp8; promotion is seed 002's lesson (sum outside the tensor core).  Anchors:
            DeepGEMM's README and the DeepSeek-V3 report (section 3.3.2: promotion every 128 k, 1x128 and 128x128
            scales applied at promotion), triton-lang/triton PR #5461.  The CUDA twin: cuda_kernels/16_fp8.cu.
Changed:    from Gluon 14: e4m3 operands, bf16 C and D; B^T boxes passed permuted (fp8 wgmma reads B K-major
            only); BK 128; promoted forms: 128x128 tiles, two partial accumulators and the promotion adds; scales;
            register stores for C and D of any alignment.
Why faster: (a prediction, made before the first GPU run) against the Triton form: the ring runs ahead across
            tiles and a consumer's promotion adds overlap the other's wgmmas, so the promoted forms should stay
            near the tcacc form; against cuBLAS, 128x128 tiles move more operand bytes per product than its
            tiles, so near cuBLAS, not above.  From the first runs: both consumers added at once while the tensor
            core idled (variant `serial`), so a consumer now keeps its next chunk queued while it adds.
Measured:   H100 SXM, the sweep of c5489b3, TFLOP/s (% of the report's cuBLAS fp8 rows of the same scaling, timed
            in the same sweep; tcacc: of cuBLAS with fast accumulation), 4096^3: gemm 1386.1 (104.0%), gemm_row
            1290.9 (100.1%), gemm_block 1161.1 (97.0%), gemm_tcacc 1413.3 (100.7%); 8192^3: 1439.8 (102.8%),
            1421.7 (104.1%), 1075.0 (85.1%), 1547.1 (104.0%).  Against the first design (variant `serial`, each
            chunk waited for alone), timed side by side by study.probe at 4096^3: 1351 against 1240 TFLOP/s.
Ragged edges: TMA reads zeros past M, N and K; TMA stores clip D at M and N, register stores are masked; beta == 0
            reads no C; block scales past M load as 0 (those rows are never stored).
Alignment:  A and B^T through study.core.fp8.k_major_16 (16-byte pitched copies, refreshed at every launch, when a
            tensor map cannot take them); D and C through TMA only when 16-byte aligned, decided per call.
Range:      M, N, K any integers >= 1; scales any fp32 values.
"""
# No `from __future__ import annotations`: @aggregate reads its fields' annotations as types.
import importlib

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.language.core import _aggregate as aggregate

from triton_kernels.gluon._common import as_int64, grouped_tile, split_cols

_g14 = importlib.import_module("triton_kernels.gluon.14_wgmma")
_epilogue_piece, Stores = _g14._epilogue_piece, _g14.Stores

# Scaling modes (constexpr SCALING).
TENSOR, ROW, BLOCK = 0, 1, 2
_SCALING = {"tensor": TENSOR, "row": ROW, "block": BLOCK}
CHUNK = 128   # the promotion interval and the k-block of block scaling: one ring slot

# Promoted forms: 128x128 tiles (two consumer warpgroups of 64x128: two partials and a sum, 3 x 64 fp32
# registers a thread), BK = CHUNK, 6 slots of 32 KiB (A 128x128, B^T 128x128); the epilogue in [64, EPI_N] pieces.
META = dict(BM=128, BN=128, BK=CHUNK, STAGES=6, GROUP_M=8, EPI_N=64)
# tcacc: rung 14's 128x256 tiles (one 128-register accumulator a thread), 4 slots of 48 KiB.
META_TCACC = dict(BM=128, BN=256, BK=CHUNK, STAGES=4, GROUP_M=8, EPI_N=64)
# Registers as rung 14: 168 a thread at launch (3 warpgroups), setmaxnreg 40 for the loader, 232 for consumers.
MAXNREG, LOADER_REGS, CONSUMER_REGS = 168, 40, 232

_SMEM_8 = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
_SMEM_16 = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


@gluon.constexpr_function
def _acc_layout(BN):
    """An fp8 wgmma's accumulator for one warpgroup (m64nBNk32: 8-bit operands take k 32), BN / 2 fp32 a thread."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 32])


@aggregate
class Fp8Parts:
    """What the loader and the consumers share: the operand descriptors, the ring and its barriers, the
    epilogue's (TMA: descriptors, one [64, EPI_N] buffer of C and D and a C barrier per consumer; registers:
    C, D and their pitches), the scales, the sizes and the form's constants."""
    a_desc: tma.tensor_descriptor
    b_desc: tma.tensor_descriptor
    a_ring: gl.shared_memory_descriptor
    b_ring: gl.shared_memory_descriptor
    ready: gl.shared_memory_descriptor
    empty: gl.shared_memory_descriptor
    c_desc: tma.tensor_descriptor
    d_desc: tma.tensor_descriptor
    c_bufs: gl.shared_memory_descriptor
    d_bufs: gl.shared_memory_descriptor
    c_bars: gl.shared_memory_descriptor
    C: gl.tensor
    D: gl.tensor
    ldc: gl.tensor
    ldd: gl.tensor
    SA: gl.tensor
    SB: gl.tensor
    M: gl.tensor
    N: gl.tensor
    K: gl.tensor
    alpha: gl.tensor
    beta: gl.tensor
    GROUP_M: gl.constexpr
    HAS_C: gl.constexpr
    TMA_STORE: gl.constexpr
    SCALING: gl.constexpr
    PROMOTE: gl.constexpr
    STREAM: gl.constexpr

    @gluon.constexpr_function
    def __init__(self, a_desc, b_desc, a_ring, b_ring, ready, empty, c_desc, d_desc, c_bufs, d_bufs, c_bars, C, D,
                 ldc, ldd, SA, SB, M, N, K, alpha, beta, GROUP_M, HAS_C, TMA_STORE, SCALING, PROMOTE, STREAM):
        self.a_desc = a_desc
        self.b_desc = b_desc
        self.a_ring = a_ring
        self.b_ring = b_ring
        self.ready = ready
        self.empty = empty
        self.c_desc = c_desc
        self.d_desc = d_desc
        self.c_bufs = c_bufs
        self.d_bufs = d_bufs
        self.c_bars = c_bars
        self.C = C
        self.D = D
        self.ldc = ldc
        self.ldd = ldd
        self.SA = SA
        self.SB = SB
        self.M = M
        self.N = N
        self.K = K
        self.alpha = alpha
        self.beta = beta
        self.GROUP_M = gl.constexpr(GROUP_M)
        self.HAS_C = gl.constexpr(HAS_C)
        self.TMA_STORE = gl.constexpr(TMA_STORE)
        self.SCALING = gl.constexpr(SCALING)
        self.PROMOTE = gl.constexpr(PROMOTE)
        self.STREAM = gl.constexpr(STREAM)


@gluon.jit
def _loader(p):
    """The loader warp: chunk after chunk of the program's tiles, the n-th into slot n % STAGES once both
    consumers have released its last use; A at (row0, k), B^T at (col0, k)."""
    BM: gl.constexpr = p.a_desc.block_type.shape[0]
    BK: gl.constexpr = p.a_desc.block_type.shape[1]
    BN: gl.constexpr = p.b_desc.block_type.shape[0]
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
            bar = p.ready.index(s)
            mbarrier.wait(p.empty.index(s), ((n // STAGES) & 1) ^ 1)
            mbarrier.expect(bar, p.a_desc.block_type.nbytes + p.b_desc.block_type.nbytes)  # zero fill counts
            tma.async_copy_global_to_shared(p.a_desc, [row0, kt * BK], bar, p.a_ring.index(s))
            tma.async_copy_global_to_shared(p.b_desc, [col0, kt * BK], bar, p.b_ring.index(s))
            n += 1


@gluon.jit
def _store_tile(p, x, alpha, row, col0, c_buf, d_buf, c_bar):
    """D[row:row+64, col0:col0+BN] = alpha * x + beta * C: TMA stores of [64, EPI_N] pieces (x's column
    halves, halved again: register repeats, no data moves), or register stores (rung 14's Stores)."""
    if p.TMA_STORE:
        EPI_N: gl.constexpr = p.d_desc.block_type.shape[1]
        PIECES: gl.constexpr = x.shape[1] // EPI_N
        gl.static_assert(PIECES % 2 == 0, "an even count of pieces a tile keeps the C barrier's phase")
        pieces = (x,)
        for _ in gl.static_range(PIECES.bit_length() - 1):
            halves = ()
            for j in gl.static_range(len(pieces)):
                halves += split_cols(pieces[j])
            pieces = halves
        row32 = row.to(gl.int32)
        col32 = col0.to(gl.int32)
        for j in gl.static_range(PIECES):
            _epilogue_piece(pieces[j], row32, col32 + j * EPI_N, alpha, p.beta, p.c_desc, p.d_desc, c_buf, d_buf,
                            c_bar, j % 2, p.HAS_C)
    else:
        Stores(p.C, p.D, p.ldc, p.ldd, p.M, p.N, alpha, p.beta, p.HAS_C).store(x, row, col0)


@gluon.jit
def _issue(p, WG: gl.constexpr, part, n, kt, rows, col0, KB, M64):
    """Wait for chunk n's slot and issue its four wgmmas into `part` (from zero); BLOCK: its scales' loads, in
    flight during them, combined into one factor a row."""
    STAGES: gl.constexpr = p.a_ring.shape[0]
    WG_M: gl.constexpr = p.a_ring.shape[1] // 2
    s = n % STAGES
    f = gl.zeros_like(rows).to(gl.float32)
    if p.SCALING == 2:
        sa = gl.load(p.SA + kt * M64 + rows, mask=rows < p.M, other=0.0)
        f = sa * gl.load(p.SB + (col0 // 128) * KB + kt)
    mbarrier.wait(p.ready.index(s), (n // STAGES) & 1)
    a = p.a_ring.index(s).slice(WG * WG_M, WG_M, dim=0)
    b = p.b_ring.index(s).permute((1, 0))
    part = warpgroup_mma(a, b, part, use_acc=False, is_async=True)
    return part, f


@gluon.jit
def _promote(p, acc, part, f, n, others: gl.constexpr):
    """Wait until `others` wgmma groups at most are in flight (chunk n's are done), hand its slot back and add
    its partial into the sum.  Returns the sum and the partial, waited for (a loop carries it as a tensor)."""
    STAGES: gl.constexpr = p.a_ring.shape[0]
    part = warpgroup_mma_wait(others, deps=[part])
    mbarrier.arrive(p.empty.index(n % STAGES))
    if p.SCALING == 2:
        acc = gl.fma(part, f[:, None], acc)   # fused: a product tensor would need 64 more registers a thread
    else:
        acc = acc + part
    return acc, part


@gluon.jit
def _streamed_tile(p, WG: gl.constexpr, acc, p0, p1, n, k_tiles, rows, col0, KB, M64):
    """A tile's chunks with the promotion streamed: chunk kt + 1 is issued into the other partial before chunk
    kt is waited for, so this warpgroup's next wgmmas are queued while it promotes.  Two chunks a trip (the
    partials' roles alternate; a swap would move registers a wgmma still writes)."""
    p0, f0 = _issue(p, WG, p0, n, 0, rows, col0, KB, M64)
    for kt2 in range(0, (k_tiles - 1) // 2):
        kt = 2 * kt2
        p1, f1 = _issue(p, WG, p1, n + 1, kt + 1, rows, col0, KB, M64)
        acc, p0 = _promote(p, acc, p0, f0, n, 1)
        p0, f0 = _issue(p, WG, p0, n + 2, kt + 2, rows, col0, KB, M64)
        acc, p1 = _promote(p, acc, p1, f1, n + 1, 1)
        n += 2
    if (k_tiles - 1) % 2 == 1:   # two chunks left, the first in flight in p0
        r1, g1 = _issue(p, WG, p1, n + 1, k_tiles - 1, rows, col0, KB, M64)
        acc, q0 = _promote(p, acc, p0, f0, n, 1)
        acc, q1 = _promote(p, acc, r1, g1, n + 1, 0)
        n += 2
    else:
        acc, q0 = _promote(p, acc, p0, f0, n, 0)
        n += 1
    return acc, n


@gluon.jit
def _consumer(p, WG: gl.constexpr):
    """Consumer warpgroup WG: rows WG*64.. of each tile.  PROMOTE: per chunk a fresh partial (scale-d 0),
    waited for, the slot released, the partial added into the fp32 sum (times its block scales in BLOCK
    mode).  Otherwise one accumulator over all of K, rung 14's loop."""
    gl.static_assert(gl.num_warps() == 4, "a consumer is one warpgroup")
    STAGES: gl.constexpr = p.a_ring.shape[0]
    BM: gl.constexpr = p.a_ring.shape[1]
    BK: gl.constexpr = p.a_ring.shape[2]
    BN: gl.constexpr = p.b_ring.shape[1]
    WG_M: gl.constexpr = BM // 2
    L: gl.constexpr = _acc_layout(BN)
    if p.SCALING == 2:
        gl.static_assert(p.PROMOTE, "block scales are applied at promotion")
        gl.static_assert((BK == 128) & (BN == 128), "a chunk and a tile are one 128x128 block of B's scales")
    if p.TMA_STORE:
        c_buf = p.c_bufs.index(WG)
        d_buf = p.d_bufs.index(WG)
        c_bar = p.c_bars.index(WG)
    else:
        c_buf = p.a_ring   # never touched
        d_buf = p.a_ring
        c_bar = p.ready
    alpha = gl.to_tensor(p.alpha)
    if p.SCALING == 0:   # one scalar: alpha * sa * sb
        alpha = alpha * gl.load(p.SA) * gl.load(p.SB)
    k_tiles = gl.cdiv(p.K, BK)
    KB = gl.cdiv(p.K, 128)
    M64 = as_int64(p.M)
    tiles = gl.cdiv(p.M, BM) * gl.cdiv(p.N, BN)
    zero = gl.zeros([WG_M, BN], gl.float32, L)
    part = zero   # the promoted forms' partial: its registers are reused chunk after chunk (scale-d 0)
    part1 = zero  # STREAM: the second partial
    n = 0
    for tile in range(gl.program_id(0), tiles, gl.num_programs(0)):
        row0, col0 = grouped_tile(tile, p.M, p.N, BM, BN, p.GROUP_M)
        row = row0 + WG * WG_M
        rows = row + gl.arange(0, WG_M, layout=gl.SliceLayout(1, L)).to(gl.int64)
        acc = zero
        if p.STREAM:
            acc, n = _streamed_tile(p, WG, acc, part, part1, n, k_tiles, rows, col0, KB, M64)
        else:
            for kt in range(k_tiles):
                s = n % STAGES
                if p.SCALING == 2:   # this chunk's scales, in flight during its wgmmas
                    sa = gl.load(p.SA + kt * M64 + rows, mask=rows < p.M, other=0.0)
                    sb = gl.load(p.SB + (col0 // 128) * KB + kt)
                mbarrier.wait(p.ready.index(s), (n // STAGES) & 1)
                a = p.a_ring.index(s).slice(WG * WG_M, WG_M, dim=0)
                b = p.b_ring.index(s).permute((1, 0))   # [BK, BN] view of the K-major B^T box
                if p.PROMOTE:
                    part = warpgroup_mma(a, b, part, use_acc=False, is_async=True)
                    part = warpgroup_mma_wait(0, deps=[part])
                    mbarrier.arrive(p.empty.index(s))
                    if p.SCALING == 2:
                        acc = acc + part * (sa * sb)[:, None]
                    else:
                        acc = acc + part
                else:
                    acc = warpgroup_mma(a, b, acc, use_acc=kt > 0, is_async=True)
                    # This chunk's wgmmas stay in flight; the one before's are done and its slot goes back.
                    acc = warpgroup_mma_wait(1, deps=[acc])
                    mbarrier.arrive(p.empty.index((n + STAGES - 1) % STAGES), pred=kt > 0)
                n += 1
        if not p.PROMOTE:
            acc = warpgroup_mma_wait(0, deps=[acc])
            mbarrier.arrive(p.empty.index((n + STAGES - 1) % STAGES))
        if p.SCALING == 1:
            cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, L)).to(gl.int64)
            sa_r = gl.load(p.SA + rows, mask=rows < p.M, other=0.0)
            sb_c = gl.load(p.SB + cols, mask=cols < p.N, other=0.0)
            acc = acc * sa_r[:, None] * sb_c[None, :]
        _store_tile(p, acc, alpha, row, col0, c_buf, d_buf, c_bar)
    if p.TMA_STORE:
        tma.store_wait(0)   # d_buf must outlive the last store's read


@gluon.jit(do_not_specialize=["M", "N", "K"])
def fp8_kernel(a_desc, b_desc, c_desc, d_desc, C, D, SA, SB, M, N, K, ldc, ldd, alpha, beta,
               HAS_C: gl.constexpr, TMA_STORE: gl.constexpr, SCALING: gl.constexpr, PROMOTE: gl.constexpr,
               STREAM: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, LOADER_REGS: gl.constexpr,
               CONSUMER_REGS: gl.constexpr):
    """Persistent: the ring, its barriers, the epilogue buffers (TMA_STORE) and the three partitions.  Without
    TMA_STORE, c_desc and d_desc are placeholders (a_desc) and never read."""
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)   # the loader's expect; the copies' bytes complete it
        mbarrier.init(empty.index(i), count=2)   # one arrival per consumer warpgroup
    c_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(c_bars.index(i), count=1)
    if TMA_STORE:   # one D buffer (and C buffer) per consumer
        d_bufs = gl.allocate_shared_memory(d_desc.dtype, [2] + d_desc.block_type.shape, d_desc.layout)
        if HAS_C:
            c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2] + c_desc.block_type.shape, c_desc.layout)
        else:
            c_bufs = d_bufs   # never touched
    else:
        d_bufs = a_ring   # never touched
        c_bufs = a_ring
    p = Fp8Parts(a_desc, b_desc, a_ring, b_ring, ready, empty, c_desc, d_desc, c_bufs, d_bufs, c_bars, C, D,
                 as_int64(ldc), as_int64(ldd), SA, SB, M, N, K, alpha, beta, GROUP_M, HAS_C, TMA_STORE, SCALING,
                 PROMOTE, STREAM)
    gl.warp_specialize([(_consumer, (p, gl.constexpr(0))),   # default: warpgroup 0
                        (_consumer, (p, gl.constexpr(1))),   # worker: warpgroup 1
                        (_loader, (p,))],                    # worker: the loader warp
                       [4, 1], [CONSUMER_REGS, LOADER_REGS])


# --- host ------------------------------------------------------------------------------------------------------

def _tma_ready(t: torch.Tensor) -> bool:
    """A row-major matrix a tensor map can take: 16-byte aligned start and pitch (a single row has no pitch)."""
    return t.data_ptr() % 16 == 0 and (t.shape[0] == 1 or t.stride(0) * t.element_size() % 16 == 0)


def _desc(t: torch.Tensor, block: list[int], layout) -> TensorDescriptor:
    """A TMA descriptor of row-major `t` in boxes of `block`; a single row gets a nominal 16-byte pitch."""
    rows, cols = t.shape
    pitch = t.stride(0) if rows > 1 else -(-cols * t.element_size() // 16) * 16 // t.element_size()
    return TensorDescriptor(t, [rows, cols], [pitch, 1], block, layout)


def launch(p, meta: dict, promote: bool, stream: bool = False):
    """fp8_kernel for ScaledProblem p with `meta`: A and B^T by TMA (16-byte copies refreshed now where
    needed), D by TMA stores when D and C (if read) allow, else from registers.  Returns the compiled kernel."""
    from study.core.fp8 import k_major_16
    a16, bt16, refresh = k_major_16(p)
    refresh()
    meta = dict(meta)
    bm, bn, bk, epi_n = meta.pop("BM"), meta.pop("BN"), meta.pop("BK"), meta.pop("EPI_N")
    M, N, K = p.mnk
    a_desc = _desc(a16, [bm, bk], _SMEM_8)
    b_desc = _desc(bt16, [bn, bk], _SMEM_8)
    has_c = p.c is not None
    tma_store = _tma_ready(p.out) and (not has_c or _tma_ready(p.c))
    if tma_store:
        d_desc = _desc(p.out, [bm // 2, epi_n], _SMEM_16)
        c_desc = _desc(p.c, [bm // 2, epi_n], _SMEM_16) if has_c else d_desc   # never read when HAS_C=False
    else:
        c_desc = d_desc = a_desc   # placeholders, never read
    c = p.c if has_c else p.out
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    return fp8_kernel[_g14._persistent_grid(tiles, p.a.device)](
        a_desc, b_desc, c_desc, d_desc, c, p.out, p.scale_a, p.scale_b, M, N, K, c.stride(0), p.out.stride(0),
        p.alpha, p.beta, HAS_C=has_c, TMA_STORE=tma_store, SCALING=_SCALING[p.scaling], PROMOTE=promote, STREAM=stream,
        LOADER_REGS=LOADER_REGS, CONSUMER_REGS=CONSUMER_REGS, maxnreg=MAXNREG, **meta)


def _promoted(p, scaling: str, stream: bool = True):
    if p.scaling != scaling:
        raise ValueError(f"gluon:16_fp8: this form takes {scaling} scaling, got {p.scaling}")
    return launch(p, META, True, stream)


def gemm_serial(p):
    """Tuning variant: per-tensor, each chunk waited for and promoted with nothing else in flight."""
    return _promoted(p, "tensor", False)


def gemm_block_serial(p):
    """Tuning variant: block scales, each chunk waited for and promoted with nothing else in flight."""
    return _promoted(p, "block", False)


def gemm(p):
    """Per-tensor scales, promoted every 128 k."""
    return _promoted(p, "tensor")


def gemm_row(p):
    """Row scales (sa per row of A, sb per column of B) in the epilogue, promoted every 128 k."""
    return _promoted(p, "row")


def gemm_block(p):
    """Block scales (1x128 of A, 128x128 of B) applied at each promotion."""
    return _promoted(p, "block")


def gemm_tcacc(p):
    """Per-tensor scales, all of K in the tensor core's accumulator (no promotion): rung 14's 128x256 loop."""
    if p.scaling != "tensor":
        raise ValueError(f"gluon:16_fp8-tcacc takes tensor scaling, got {p.scaling}")
    return launch(p, META_TCACC, False)


KERNEL = fp8_kernel
