"""Stage 17 (Triton) - decode-shaped GEMMs (M <= 128): swap-AB, stream-K over k-slices, a deterministic fix-up.

Technique:  D = A W with few rows of A (tokens) is bound by reading W (B, K x N) once.  Swap-AB: a program
            computes a [128, MT] tile of D^T = W^T A^T with tl.dot(W^T tile [128, 64], A^T tile [64, MT]), so W's
            columns fill the MMA's 64/128-row side and the tokens its narrow side (MT = 16, 64 or 128: the first
            that holds M; past 128 tokens, tiles also walk M).  The work is T = tiles x kit (tile, 64-deep k-slice)
            iterations; a grid of G = min(T, SMs) programs gives program g the iterations [g T / G, (g + 1) T / G)
            (stream-K).  A program walks the tiles its range touches, an inner tl.range k loop (num_stages: the
            compiler's cp.async ring) over each segment.  A segment that is all of a tile's K stores D; a part
            writes its fp32 partial into the program's workspace slot (2g for its first tile, 2g + 1 for its
            last), bar.sync, then one thread's acq_rel atomic add on the tile's int32 counter; the tile's last
            program to arrive adds the partials in program order (ld.global.cg) and stores D, then puts the
            counter back to 0.  No float atomics: D is bit-identical from run to run.
Reproduces: no seed covers decode GEMMs; seed 004's bandwidth-bound lesson at the scale LLM inference runs.
            Stream-K: Osama et al., PPoPP 2023, with the tile fix-up in a fixed order.  The CUDA twin:
            cuda_kernels/17_split_k.cu (the same tiles and fix-up; its wgmmas fed by the copy engine in 128-deep
            slices, its grid picked by a cost model among one block a tile, split-K and stream-K).
Changed:    against Triton 13: operands swapped (W^T the left operand), [128, MT] tiles, the K range split over
            programs with a fix-up; pointer loads with strides, so A and B may each be row- or column-major.
Why faster: (a prediction) one program a tile would leave most SMs idle on a W of a few 128-column tiles;
            stream-K gives every SM the same number of k-slices (within one), so the whole chip streams W.
Measured:   H100, the rows of f648659 (bf16, W row-major, % of cuBLAS, GB/s of compulsory traffic): 1x4096x4096
            78.6% (1578 GB/s), 1x8192x28672 97.7% (2895 GB/s), 64x4096x4096 68.8% (1414 GB/s), 64x8192x28672 93.3%
            (2722 GB/s): below the CUDA twin and cuBLAS on most decode shapes (docs/17_split_k.md).
Ragged edges: masked loads zero-fill past M, N and K (per element); stores are masked; beta == 0 (HAS_C=False)
            compiles no load of C.
Alignment:  any start and pitch, one kernel: masked pointer loads.  gemm() picks the launch: where the JIT can prove
            16-byte chunks (vector_loads: aligned starts, pitches and K, N % 16) BK-deep loads that the compiler turns
            into a cp.async ring; otherwise element-wise loads, 16 deep, 8 warps, unpipelined (slower, never wrong).
Compiles to (Triton 3.6, sm_90a, offline; ptxas -v): wgmma.mma_async m64n{MT}k16 .f32.f16.f16 / .bf16.bf16; one
            atom.global.gpu.acq_rel.add.u32 a partial tile (after bar.sync), ld.global.cg for the partials, no float
            atomics.  Vector path: shared memory 110,592 / 122,880 / 131,072 bytes at MT 16 / 64 / 128 (81,920 to
            100,352 with column-major A), 96-237 registers, no spills.  Element-wise path: 8 / 32 / 64 KiB, up to 255
            registers, spills up to 88 bytes at MT 64 and 580 at MT 128.
Range:      any M, N, K >= 1 (64-bit offsets and iteration counts); workspace 2 G x 128 x MT fp32, one int32
            counter a tile, both cached per (form, device, stream, M, N, K) and reused by every call.
"""
from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from triton_kernels._common import check_grid, interpreting, store_tile

BN, BK = 128, 64
# Per MT: warps and pipeline depth (cp.async slots of W 16 KiB + A MT x 128 bytes), loads BK deep.
METAS = {16: dict(LK=64, num_warps=4, num_stages=6), 64: dict(LK=64, num_warps=4, num_stages=5),
         128: dict(LK=64, num_warps=8, num_stages=4)}
# Operands whose loads Triton cannot prove 16-byte aligned (element-wise, never cp.async, so never pipelined):
# 16-deep loads over 8 warps, which keeps the pointer tiles in registers (BK-deep loads spilled up to 2.4 KB).
META_ELEMENTWISE = dict(LK=16, num_warps=8, num_stages=1)
META = dict(MT=16, BN=BN, BK=BK, **METAS[16])     # one representative variant (offline compiles)


def token_tile(M: int) -> int:
    return 16 if M <= 16 else (64 if M <= 64 else 128)


@triton.jit
def _first_of(g, T, G):
    """The first iteration of program g (int64)."""
    return g * T // G


@triton.jit
def _block_of(i, T, G):
    """The program whose range holds iteration i (int64)."""
    return ((i + 1) * G - 1) // T


@triton.jit
def split_k_kernel(A, B, C, D, WS, CNT, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, ldc, ldd, alpha,
                   beta, HAS_C: tl.constexpr, MT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   LK: tl.constexpr, STAGES: tl.constexpr):
    g = tl.program_id(0).to(tl.int64)
    G = tl.num_programs(0).to(tl.int64)
    tiles_m = tl.cdiv(M, MT)
    kit = tl.cdiv(K, BK).to(tl.int64)
    T = tiles_m.to(tl.int64) * tl.cdiv(N, BN) * kit
    start = _first_of(g, T, G)
    end = _first_of(g + 1, T, G)            # G <= T: never empty
    t_first = start // kit
    ln = tl.arange(0, BN)
    lm = tl.arange(0, MT)
    kk = tl.arange(0, LK)
    ws_off = ln[:, None] * MT + lm[None, :]     # a partial's layout in its slot: [n][m]
    for t in range(t_first, (end - 1) // kit + 1):
        t0 = t * kit
        lo = tl.maximum(start, t0) - t0     # this program's k-slices of tile t: [lo, hi)
        hi = tl.minimum(end, t0 + kit) - t0
        n = (t // tiles_m) * BN + ln.to(tl.int64)
        m = (t % tiles_m) * MT + lm.to(tl.int64)
        in_n, in_m = n < N, m < M
        w_base = B + n[:, None] * stride_bn            # W^T tile [BN, BK]
        a_base = A + m[None, :] * stride_am            # A^T tile [BK, MT]
        acc = tl.zeros([BN, MT], dtype=tl.float32)
        for i in tl.range(lo, hi, num_stages=STAGES):
            for j in tl.static_range(BK // LK):     # LK < BK: element-wise loads in smaller steps (registers)
                k = i * BK + j * LK + kk.to(tl.int64)
                in_k = k < K
                w = tl.load(w_base + k[None, :] * stride_bk, mask=in_n[:, None] & in_k[None, :], other=0.0)
                a = tl.load(a_base + k[:, None] * stride_ak, mask=in_k[:, None] & in_m[None, :], other=0.0)
                acc = tl.dot(w, a, acc, out_dtype=tl.float32)
        mask = in_n[:, None] & in_m[None, :]
        if (lo == 0) & (hi == kit):         # all of tile t's K: D straight from acc (D[m, n] = acc[n, m])
            store_tile(acc, alpha, beta, C, D, m[None, :], n[:, None], mask, ldc, ldd, HAS_C)
        else:
            slot = 2 * g + tl.where(t == t_first, 0, 1)
            tl.store(WS + slot * (BN * MT) + ws_off, acc)
            tl.debug_barrier()              # every thread's partial is stored before the one arrival below
            first = _block_of(t0, T, G)
            last = _block_of(t0 + kit - 1, T, G)
            old = tl.atomic_add(CNT + t, 1, sem="acq_rel", scope="gpu")
            if old == (last - first).to(tl.int32):     # the last to arrive: the fix-up, in program order
                total = tl.zeros([BN, MT], dtype=tl.float32)
                for b in range(first, last + 1):
                    b_slot = 2 * b + tl.where(_first_of(b, T, G) // kit == t, 0, 1)
                    total += tl.load(WS + b_slot * (BN * MT) + ws_off, cache_modifier=".cg")
                store_tile(total, alpha, beta, C, D, m[None, :], n[:, None], mask, ldc, ldd, HAS_C)
                tl.store(CNT + t, 0)        # ready for the next launch: no memset per call


@functools.lru_cache(maxsize=None)
def _sm_count(index) -> int:
    if index is None:
        return 5   # the interpreter: a few programs, so that ranges straddle tiles and the fix-up runs
    return torch.cuda.get_device_properties(index).multi_processor_count


_STATE: dict = {}   # (form, device index, stream, M, N, K) -> (G, MT, workspace, counters)


def state(p, form: str = "triton:17_split_k"):
    """The grid, token tile, workspace and counters of a call like p (the Gluon twin's too, by `form`): made once
    per stream and shape, so that a timed call only launches (the kernel leaves the counters at zero)."""
    M, N, K = p.mnk
    dev = p.a.device
    index = dev.index if dev.type == "cuda" else None
    stream = torch.cuda.current_stream(dev).cuda_stream if dev.type == "cuda" and not interpreting() else None
    key = (form, index, stream, M, N, K)
    st = _STATE.get(key)
    if st is None:
        mt = token_tile(M)
        tiles = triton.cdiv(M, mt) * triton.cdiv(N, BN)
        G = min(tiles * triton.cdiv(K, BK), _sm_count(index))
        check_grid(form, G)
        st = (G, mt, torch.empty(2 * G * BN * mt, dtype=torch.float32, device=dev),
              torch.zeros(tiles, dtype=torch.int32, device=dev))
        _STATE[key] = st
    return st


def vector_loads(p) -> bool:
    """Whether the JIT's specialisation (pointers 16-byte aligned, integers divisible by 16) lets the W and A
    tiles move as 16-byte cp.async chunks: aligned starts, pitches and K, and N where B's rows are contiguous."""
    M, N, K = p.mnk
    return (p.a.data_ptr() % 16 == 0 and p.b.data_ptr() % 16 == 0 and p.lda % 16 == 0 and p.ldb % 16 == 0
            and K % 16 == 0 and (p.b_col or N % 16 == 0))


def gemm(p):
    G, mt, ws, counters = state(p)
    M, N, K = p.mnk
    c = p.c if p.c is not None else p.out   # a placeholder pointer; HAS_C=False means it is never read
    meta = METAS[mt] if vector_loads(p) else META_ELEMENTWISE
    return split_k_kernel[(G,)](
        p.a, p.b, c, p.out, ws, counters, M, N, K, p.a.stride(0), p.a.stride(1), p.b.stride(0), p.b.stride(1),
        c.stride(0), p.out.stride(0), p.alpha, p.beta, HAS_C=p.c is not None, MT=mt, BN=BN, BK=BK, LK=meta["LK"],
        STAGES=meta["num_stages"], num_warps=meta["num_warps"])


KERNEL = split_k_kernel
