// Stage 17 - decode-shaped GEMMs (M <= 128): swap-AB, split-K and stream-K, reading W at DRAM speed.
//
// Technique:   D = A W with few rows of A (tokens) is bound by reading W (B, K x N) once.  Swap-AB: each block
//              computes a 128 x MT tile of D^T = W^T A^T, so W's columns fill wgmma's m64 side and the tokens its
//              N (MT = 16, 64 or 128 tokens a tile; stage 14 would spend a 128-row tile on 16 tokens).  Two
//              warpgroups own 64 columns of W each, over all MT tokens: m64nMTk16 with W^T from shared memory as
//              the A operand (M-major from row-major W, K-major from column-major W) and the tokens as B.  The
//              tensor memory accelerator (TMA, the SM's copy engine) brings W and A in 128-deep k-slices (64-deep
//              boxes, 128-byte swizzle; thread 0 issues them onto the slot's full mbarrier) through a ring of 4
//              slots (3 at MT = 128).
//              The work is (tile, k-slice) iterations; a grid of G blocks gives block g the iterations
//              [g T / G, (g + 1) T / G): G = tiles is one block a tile (no split), G = tiles x S splits each
//              tile's K S ways (split-K), G = SMs balances every SM to within one k-slice (stream-K).  The ring
//              runs on across a block's tiles.  A block that does all of a tile's K stores D; one that does part
//              writes fp32 partials into its own workspace slot, and the tile's last block to arrive (an integer
//              counter) adds the tile's partials in block order, so D is bit-identical from run to run: no float
//              atomics.
// Reproduces:  no seed covers decode GEMMs; seed 004's bandwidth-bound lesson at the scale LLM inference runs.
//              Stream-K: Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
//              Multiplication on the GPU" (PPoPP 2023); the deterministic fix-up in block order is its "tile
//              fix-up" with a fixed reduction order.
// Changed:     against stage 14 (TMA, wgmma): the operands' roles swapped (W^T as wgmma's A operand), tiles of
//              128 x MT, the k-range split over blocks with a deterministic fix-up.  The variant sync runs the same
//              tiles on mma.sync m16n8k16 (8 warps of 16 columns of W, ldmatrix), the first design.
// Why faster:  (a prediction) bytes of W in flight per SM: 3 slots of 32 KiB ahead of the one computed (2 at
//              MT = 128): 96 KiB.  Little's law with ~1 us of loaded DRAM latency at 3.35 TB/s (H100) needs ~25 KiB
//              an SM, at 4.8 TB/s (H200) ~37 KiB.  Split or stream-K puts every SM to work on a W of 32 tiles
//              (4096 columns), where one block a tile would leave 100 of 132 SMs idle.
// Measured:    H100, the rows of f648659 (bf16, W row-major, % of cuBLAS, GB/s of compulsory traffic):
//              1x4096x4096 82.8% (1660 GB/s), 1x8192x28672 100.0% (2965 GB/s), 64x4096x4096 73.3% (1506 GB/s),
//              64x8192x28672 98.2% (2863 GB/s), 64x6144x4096 81.6% (1748 GB/s).  Short of cuBLAS at 4096 columns
//              of 4096 and at 6144 with 64 tokens, level with it where W is hundreds of MB (docs/17_split_k.md).
// Ragged edges: the copy engine reads zeros past M, N and K; the _unaligned entries zero-fill chunks past them
//              and load a chunk that straddles an edge element by element; stores are masked per element.
// Alignment:   the TMA entries need B (and row-major A) 16-byte aligned in start and pitch (the launcher checks);
//              the _unaligned twins load element by element.  Column-major A (tokens contiguous) is loaded
//              element by element into the token-major tile at any alignment.  C and D: any (element stores).
// Range:       any M, N, K >= 1 (tiles over M past MT); the workspace holds two fp32 partial tiles a block.
#include <cuda.h>   // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace {

// A kernel's shape: MT tokens a tile, slices `bk` deep (whole 64-deep blocks), a ring of `stages` slots of (W:
// 128 x bk, A: MT x bk), `blocks` an SM.
struct Shape {
    int mt = 16;
    int bk = 64;
    int stages = 8;
    int blocks = 1;
    bool wgmma = true;   // the warpgroups' wgmma (m64 x MT x k16), else the warps' mma.sync (m16 x n8 x k16)
};

template <const Shape& S>
struct Cfg {
    static constexpr int BN = 128, BK = S.bk, KH = BK / 64, MT = S.mt, STAGES = S.stages, THREADS = 256;
    static constexpr int BLOCKS = S.blocks;
    static constexpr bool WG = S.wgmma;
    static_assert(BK % 64 == 0 && BK <= 256, "whole 64-deep blocks (128-byte rows); a TMA box is at most 256 rows");
    static constexpr int NF = MT / 8;                        // n8 fragments (token groups) a warp holds
    static_assert(MT % 16 == 0 && MT <= 128, "whole ldmatrix.x4 pairs of n8 fragments");
    static constexpr int W_BYTES = BN * BK * 2, X_BYTES = MT * BK * 2, SLOT = W_BYTES + X_BYTES;
    static constexpr int SMEM_BYTES = STAGES * SLOT + 1024;  // + the ring's alignment
    static_assert(BLOCKS * (SMEM_BYTES + 2048) <= 228 * 1024, "an SM's shared memory");
    static constexpr int PARTIAL = BN * MT;                  // fp32 values of one workspace slot
};

// The iterations of a grid of G blocks over T = tiles x kit: block g's first, and the block holding iteration i.
__device__ __forceinline__ long long first_of(long long g, long long T, long long G) { return g * T / G; }
__device__ __forceinline__ long long block_of(long long i, long long T, long long G) { return ((i + 1) * G - 1) / T; }

// A block's copies, slice after slice along its run of iterations (the tile t of the next slice, its k-slice kk).
// TMA: thread 0 copies W's boxes (and A's, row-major) onto the slot's full barrier; the copy engine zero-fills past
// M, N and K.  Column-major A, and every operand of the unaligned entries, go element by element (fill_chunk,
// st.shared) in the same shared layouts: W^T [n][k] or B's [k][n] as two 64-column halves, A [m][k], each in rows
// of 128 bytes with chunk c of row r at c ^ (r % 8) (TMA's 128-byte swizzle).
template <class C, class T, bool TMA>
struct Loader {
    const T* A;
    const T* B;
    idx_t lda, ldb;
    int M, N, K, a_col, b_col, tiles_m, kit, tid;
    const CUtensorMap* map_w;
    const CUtensorMap* map_x;
    int tn, tm, kk;                 // the next slice: its tile (column block, token block) and k-slice

    // Byte offset in W's part of a slot of 16-byte chunk ch of row r: W^T [n][k] in KH blocks of 64 k (r = n, ch
    // < 8 KH), or B [k][n] in two halves of 64 columns (r = k, ch < 16).
    __device__ __forceinline__ static uint32_t w_at(int b_col, int r, int ch) {
        return b_col ? (ch >> 3) * (C::BN * 128) + r * 128 + (((ch & 7) ^ (r & 7)) << 4)
                     : (ch >> 3) * (C::BK * 128) + r * 128 + (((ch & 7) ^ (r & 7)) << 4);
    }
    // A [m][k] in KH blocks of 64 k, after W.
    __device__ __forceinline__ static uint32_t x_at(int r, int ch) {
        return C::W_BYTES + (ch >> 3) * (C::MT * 128) + r * 128 + (((ch & 7) ^ (r & 7)) << 4);
    }

    // wgmma (async proxy) reads what st.shared (generic proxy) wrote only after a proxy fence: fence_async.
    __device__ __forceinline__ void load_next(uint32_t w, uint64_t* full, bool fence_async) {
        const int k0 = kk * C::BK, n0 = tn * C::BN, m0 = tm * C::MT;
        const uint32_t x = w + C::W_BYTES;
        if (TMA) {
            if (tid == 0) {
                tma::expect_tx(full, C::W_BYTES + (a_col ? 0 : C::X_BYTES));
#pragma unroll
                for (int h = 0; h < C::KH; ++h) {
                    if (b_col) tma::load_2d(w + h * (C::BN * 128), *map_w, k0 + 64 * h, n0, full);
                    if (!a_col) tma::load_2d(x + h * (C::MT * 128), *map_x, k0 + 64 * h, m0, full);
                }
                if (!b_col) {
                    tma::load_2d(w, *map_w, n0, k0, full);
                    tma::load_2d(w + C::BK * 128, *map_w, n0 + 64, k0, full);
                }
            }
        } else {
            for (int c = tid; c < C::BN * C::BK / 8; c += C::THREADS) {
                int r, ch, n, k;
                if (b_col) r = c / (C::BK / 8), ch = c % (C::BK / 8), n = n0 + r, k = k0 + 8 * ch;
                else r = c >> 4, ch = c & 15, n = n0 + 8 * ch, k = k0 + r;
                const int valid = b_col ? (n < N ? min(8, K - k) : 0) : (k < K ? min(8, N - n) : 0);
                const uint32_t at = w + w_at(b_col, r, ch);
                if (valid > 0) {
                    fill_chunk<T>(at, B + (b_col ? (idx_t)n * ldb + k : (idx_t)k * ldb + n), valid);
                } else {
                    const uint32_t z[4] = {0u, 0u, 0u, 0u};
                    st_shared16(at, z);
                }
            }
            if (!a_col) {
                for (int c = tid; c < C::MT * C::BK / 8; c += C::THREADS) {
                    const int r = c / (C::BK / 8), ch = c % (C::BK / 8), m = m0 + r, k = k0 + 8 * ch;
                    const int valid = m < M ? min(8, K - k) : 0;
                    const uint32_t at = w + x_at(r, ch);
                    if (valid > 0) {
                        fill_chunk<T>(at, A + (idx_t)m * lda + k, valid);
                    } else {
                        const uint32_t z[4] = {0u, 0u, 0u, 0u};
                        st_shared16(at, z);
                    }
                }
            }
        }
        if (a_col) {       // column-major A (tokens contiguous): element by element into the [m][k] tile
            const unsigned short* a = reinterpret_cast<const unsigned short*>(A);
#pragma unroll 4
            for (int e = tid; e < C::MT * C::BK; e += C::THREADS) {
                const int r = e / C::BK, kc = e % C::BK, m = m0 + r, k = k0 + kc;
                const unsigned short v = m < M && k < K ? a[m + (idx_t)k * lda] : 0;
                const uint32_t at = w + x_at(r, kc >> 3) + 2 * (kc & 7);
                asm volatile("st.shared.u16 [%0], %1;\n" :: "r"(at), "h"(v) : "memory");
            }
        }
        if (fence_async && (!TMA || a_col)) async_copy::fence_async_shared();
        if (++kk == kit) {
            kk = 0;
            if (++tm == tiles_m) tm = 0, ++tn;
        }
    }
};

// Where a lane's ldmatrix rows start in a slot, per k16 step kk: its W^T fragment's (a) and its tokens' (x, for
// tokens 0-15; tokens 16p on are 2048 p bytes further).  Lane l gives row l % 8 of matrix l / 8.
template <class C, class T>
struct Frags {
    uint32_t a[C::BK / 16], x[C::BK / 16];
    __device__ __forceinline__ Frags(int b_col, int warp, int lane) {
        const int i = lane >> 3, r = lane & 7;
#pragma unroll
        for (int kk = 0; kk < C::BK / 16; ++kk) {
            if (b_col) {   // W^T [n][k]: matrices (n + 8 (i & 1), k + 8 (i >> 1))
                const int n = 16 * warp + ((i & 1) << 3) + r;
                a[kk] = Loader<C, T, true>::w_at(1, n, 2 * kk + (i >> 1));
            } else {       // B [k][n], transposed: matrices (k + 8 (i >> 1), n + 8 (i & 1))
                const int k = 16 * kk + ((i >> 1) << 3) + r;
                a[kk] = Loader<C, T, true>::w_at(0, k, 2 * warp + (i & 1));
            }
            // A [m][k]: matrices (m + 8 (i >> 1), k + 8 (i & 1))
            x[kk] = Loader<C, T, true>::x_at(((i >> 1) << 3) + r, 2 * kk + (i & 1));
        }
    }
};

// One k-slice of a warp's 16 x MT tile of D^T: BK / 16 k16 steps of an A fragment (W^T) and NF / 2 ldmatrix
// pairs of n8 fragments (tokens).
template <class C, class T>
__device__ __forceinline__ void slice(float (&acc)[C::NF][4], uint32_t w, const Frags<C, T>& f, int b_col) {
#pragma unroll
    for (int kk = 0; kk < C::BK / 16; ++kk) {
        uint32_t a[4];
        if (b_col) ldsm_x4(a, w + f.a[kk]);
        else ldsm_x4_trans(a, w + f.a[kk]);
#pragma unroll
        for (int p = 0; p < C::NF / 2; ++p) {
            uint32_t b[4];
            ldsm_x4(b, w + f.x[kk] + 2048 * p);
            Elem<T>::mma(acc[2 * p], a, b[0], b[1]);
            Elem<T>::mma(acc[2 * p + 1], a, b[2], b[3]);
        }
    }
}

// wgmma's shared-memory descriptors (wgmma.cuh), 128-byte swizzle, 8-row groups 1024 bytes apart (the stride offset).
constexpr uint32_t DESC_HI = wgmma::desc_hi(1024, wgmma::SWIZZLE_128B);

// acc (+)= W^T x^T: one m64 x MT x k16 wgmma of a warpgroup, W^T (the A operand: M-major from row-major W, TA = 1,
// or K-major from column-major W, TA = 0) and the tokens (B, K-major), both in shared memory; acc[j][e] is the
// accumulator register 4 j + e, the same lanes' rows and columns as mma.sync's fragments of warp 4 wg + w.
#define SK_WGMMA(SHAPE, TYPES, TA, REGS, AB, D)                                                                  \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, 1, 0;\n wgmma.mma_async.sync.aligned." SHAPE ".f32" TYPES    \
                 " " REGS ", " AB ", p, 1, 1, " TA ", 0;\n}\n" : D : "l"(a), "l"(b))
#define SK_D4(j) "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
#define SK_D16 SK_D4(0), SK_D4(1)
#define SK_D64 SK_D16, SK_D4(2), SK_D4(3), SK_D4(4), SK_D4(5), SK_D4(6), SK_D4(7)
#define SK_D128 SK_D64, SK_D4(8), SK_D4(9), SK_D4(10), SK_D4(11), SK_D4(12), SK_D4(13), SK_D4(14), SK_D4(15)
#define SK_SHAPES(TYPES, TA)                                                                                     \
    if constexpr (MT == 16) SK_WGMMA("m64n16k16", TYPES, TA, "{%0, %1, %2, %3, %4, %5, %6, %7}", "%8, %9", SK_D16); \
    else if constexpr (MT == 64) SK_WGMMA("m64n64k16", TYPES, TA, "{" WGMMA_R0 "}", "%32, %33", SK_D64);          \
    else SK_WGMMA("m64n128k16", TYPES, TA, WGMMA_REGS64, "%64, %65", SK_D128);
template <class T, int MT, int TA>
__device__ __forceinline__ void wg_mma(float (&acc)[MT / 8][4], uint64_t a, uint64_t b) {
    static_assert(MT == 16 || MT == 64 || MT == 128, "the shapes spelled out here");
    if constexpr (std::is_same<T, __half>::value) {
        if constexpr (TA) { SK_SHAPES(".f16.f16", "1") } else { SK_SHAPES(".f16.f16", "0") }
    } else {
        if constexpr (TA) { SK_SHAPES(".bf16.bf16", "1") } else { SK_SHAPES(".bf16.bf16", "0") }
    }
}
#undef SK_SHAPES
#undef SK_D128
#undef SK_D64
#undef SK_D16
#undef SK_D4
#undef SK_WGMMA

// One k-slice of warpgroup wg's 64 x MT tile of D^T (columns 64 wg .. 64 wg + 63 of the block's 128): BK / 16
// wgmmas, then waited for, so the slot may be refilled once the block has passed its next barrier.  W^T: from
// row-major W, the slot's 64-column half wg (BK k-rows of 128 bytes; a k16 step is 16 rows on); from column-major
// W, rows 64 wg on of each 64-deep block.  The tokens: each 64-deep block's MT rows (a k16 step is 32 bytes on).
template <class C, class T, int TA>
__device__ __forceinline__ void slice_wg(float (&acc)[C::NF][4], uint32_t w, int wg) {
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < C::BK / 16; ++kk) {
        const uint32_t x = w + C::W_BYTES + (kk >> 2) * (C::MT * 128) + 32 * (kk & 3);
        const uint32_t at = TA ? w + wg * (C::BK * 128) + kk * 2048
                               : w + (kk >> 2) * (C::BN * 128) + wg * (64 * 128) + 32 * (kk & 3);
        wg_mma<T, C::MT, TA>(acc, wgmma::desc(wgmma::desc_lo(at, TA ? C::BK * 128 : 16), DESC_HI),
                             wgmma::desc(wgmma::desc_lo(x, 16), DESC_HI));
    }
    wgmma::commit();
    wgmma::wait<0>();
#pragma unroll
    for (int j = 0; j < C::NF; ++j) wgmma::hold(acc[j]);
}

// D[m][n] = alpha v + beta C[m][n] for a warp's fragments: lane 4g + t holds D^T rows (columns n of D) g and g + 8,
// tokens 8j + 2t and + 1.
template <class C, class T>
__device__ __forceinline__ void store_d(const float (&v)[C::NF][4], int n0, int m0, int warp, int lane, int M, int N,
                                        float alpha, float beta, const T* __restrict__ Cm, idx_t ldc,
                                        T* __restrict__ D, idx_t ldd) {
#pragma unroll
    for (int j = 0; j < C::NF; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int n = n0 + 16 * warp + (lane >> 2) + 8 * (e >> 1), m = m0 + 8 * j + 2 * (lane & 3) + (e & 1);
            if (n >= N || m >= M) continue;
            float d = alpha * v[j][e];
            if (beta != 0.0f) d = fmaf(beta, Elem<T>::load(Cm + (idx_t)m * ldc + n), d);
            Elem<T>::store(D + (idx_t)m * ldd + n, d);
        }
}

template <class C, class T, bool TMA>
__device__ __forceinline__ void split_k(int M, int N, int K, double alpha_, const T* __restrict__ A, idx_t lda,
                                        const T* __restrict__ B, idx_t ldb, double beta_, const T* __restrict__ Cm,
                                        idx_t ldc, T* __restrict__ D, idx_t ldd, int a_col, int b_col,
                                        float* __restrict__ ws, int* __restrict__ counters, const CUtensorMap& map_w,
                                        const CUtensorMap& map_x) {
    extern __shared__ __align__(1024) unsigned char smem[];
    const uint32_t ring = (async_copy::smem_u32(smem) + 1023) & ~1023u;   // TMA's 128-byte swizzle: 1024-aligned
    __shared__ int last_flag;                 // this block is the last to arrive at a tile (the fix-up's)
    __shared__ __align__(8) uint64_t full[C::STAGES];   // a slot's copies landed (TMA)
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const float alpha = (float)alpha_, beta = (float)beta_;
    const int tiles_m = (M - 1) / C::MT + 1, tiles_n = (N - 1) / C::BN + 1, kit = (K - 1) / C::BK + 1;
    const long long T_ = (long long)tiles_m * tiles_n * kit, G = gridDim.x, g = blockIdx.x;
    const long long start = first_of(g, T_, G), end = first_of(g + 1, T_, G);
    Loader<C, T, TMA> ld{A, B, lda, ldb, M, N, K, a_col, b_col, tiles_m, kit, tid, &map_w, &map_x,
                         (int)(start / kit / tiles_m), (int)(start / kit % tiles_m), (int)(start % kit)};
    // With TMA and row-major A, thread 0 alone copies: no other thread tracks the copies' position.
    const bool loads = !TMA || a_col || tid == 0;
    if (TMA && tid == 0) {
        for (int j = 0; j < C::STAGES; ++j) async_copy::mbar_init(&full[j], 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    // The ring: iteration start + j in slot j % STAGES; STAGES - 1 slices in flight ahead of the one computed.
#pragma unroll
    for (int j = 0; j < C::STAGES - 1; ++j)
        if (loads && start + j < end) ld.load_next(ring + j * C::SLOT, &full[j], C::WG);
    float acc[C::NF][4];
#pragma unroll
    for (int j = 0; j < C::NF; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    const Frags<C, T> frags(b_col, warp, lane);
    long long t = start / kit;          // the tile of iteration i, and its k-slice
    int kk = (int)(start % kit), s = 0, s_next = C::STAGES - 1;
    uint32_t phase = 0;                 // slot s's full barrier's parity this round
    for (long long i = start; i < end; ++i) {
        __syncthreads();   // every warp is done with slot (i - 1) % STAGES: refill it
        if (loads && i + C::STAGES - 1 < end) ld.load_next(ring + s_next * C::SLOT, &full[s_next], C::WG);
        if (TMA) async_copy::mbar_wait(&full[s], phase);
        if constexpr (!C::WG) slice<C, T>(acc, ring + s * C::SLOT, frags, b_col);
        else if (b_col) slice_wg<C, T, 0>(acc, ring + s * C::SLOT, warp >> 2);
        else slice_wg<C, T, 1>(acc, ring + s * C::SLOT, warp >> 2);
        if (++s == C::STAGES) s = 0, phase ^= 1;
        if (++s_next == C::STAGES) s_next = 0;

        if (++kk < kit && i + 1 < end) continue;   // the segment of tile t goes on
        const long long t0 = t * kit;
        const int n0 = (int)(t / tiles_m) * C::BN, m0 = (int)(t % tiles_m) * C::MT;
        if (t0 >= start && t0 + kit <= end) {               // all of tile t's K: D straight from the fragments
            store_d<C, T>(acc, n0, m0, warp, lane, M, N, alpha, beta, Cm, ldc, D, ldd);
        } else {
            // Part of tile t's K: the partial into this block's slot (2g for its first tile, 2g + 1 for its last),
            // in fragment order (coalesced); the tile's last block adds every partial in block order.
            const long long first = block_of(t0, T_, G), last = block_of(t0 + kit - 1, T_, G);
            const bool mine_first = start / kit == t;
            float* slot = ws + (2 * g + (mine_first ? 0 : 1)) * C::PARTIAL;
#pragma unroll
            for (int j = 0; j < C::NF; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) slot[((warp * C::NF + j) * 4 + e) * 32 + lane] = acc[j][e];
            __threadfence();
            __syncthreads();
            if (tid == 0) last_flag = atomicAdd(&counters[t], 1) == (int)(last - first);
            __syncthreads();
            if (*(volatile int*)&last_flag) {
                __threadfence();
                float sum[C::NF][4];
#pragma unroll
                for (int j = 0; j < C::NF; ++j) sum[j][0] = sum[j][1] = sum[j][2] = sum[j][3] = 0.0f;
                // Block order, so the same sum on every run; BATCH partials loaded at once, then added in order.
                constexpr int BATCH = C::NF <= 2 ? 4 : C::NF <= 8 ? 2 : 1;
                for (long long b0 = first; b0 <= last; b0 += BATCH) {
                    float part[BATCH][C::NF][4];
#pragma unroll
                    for (int q = 0; q < BATCH; ++q) {
                        if (b0 + q > last) break;
                        const long long b = b0 + q;
                        const float* src = ws + (2 * b + (first_of(b, T_, G) / kit == t ? 0 : 1)) * C::PARTIAL;
#pragma unroll
                        for (int j = 0; j < C::NF; ++j)
#pragma unroll
                            for (int e = 0; e < 4; ++e)
                                part[q][j][e] = __ldcg(src + ((warp * C::NF + j) * 4 + e) * 32 + lane);
                    }
#pragma unroll
                    for (int q = 0; q < BATCH; ++q) {
                        if (b0 + q > last) break;
#pragma unroll
                        for (int j = 0; j < C::NF; ++j)
#pragma unroll
                            for (int e = 0; e < 4; ++e) sum[j][e] += part[q][j][e];
                    }
                }
                store_d<C, T>(sum, n0, m0, warp, lane, M, N, alpha, beta, Cm, ldc, D, ldd);
                if (tid == 0) counters[t] = 0;              // ready for the next launch
            }
        }
#pragma unroll
        for (int j = 0; j < C::NF; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
        if (kk == kit) ++t, kk = 0;
    }
}

}  // namespace

// grid (G, 1, 1): block g computes iterations [g T / G, (g + 1) T / G) of T = tiles x k-slices.  ws: 2 G slots of
// 128 x MT fp32; counters: one int a tile, zero at launch (each tile's last block puts it back to zero).
#define SPLIT_K_ENTRY(NAME, SHAPE, T, TMA)                                                                       \
    extern "C" __global__ void __launch_bounds__(256, Cfg<SHAPE>::BLOCKS)                                       \
    NAME(int M, int N, int K, double alpha, const T* __restrict__ A, idx_t lda, const T* __restrict__ B,         \
         idx_t ldb, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd, int a_col,     \
         int b_col, float* __restrict__ ws, int* __restrict__ counters, const __grid_constant__ CUtensorMap map_w, \
         const __grid_constant__ CUtensorMap map_x) {                                                            \
        split_k<Cfg<SHAPE>, T, TMA>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd, a_col, b_col, ws,      \
                                    counters, map_w, map_x);                                                     \
    }
#define SPLIT_K_SHAPE(NAME, SHAPE)                                                                               \
    SPLIT_K_ENTRY(NAME##_f16, SHAPE, __half, true)                                                               \
    SPLIT_K_ENTRY(NAME##_f16_unaligned, SHAPE, __half, false)                                                    \
    SPLIT_K_ENTRY(NAME##_bf16, SHAPE, __nv_bfloat16, true)                                                       \
    SPLIT_K_ENTRY(NAME##_bf16_unaligned, SHAPE, __nv_bfloat16, false)                                            \
    STUDY_TWIN_FACTS(NAME##_f16, Cfg<SHAPE>::MT, Cfg<SHAPE>::BN, 256, Cfg<SHAPE>::SMEM_BYTES)              \
    STUDY_TWIN_FACTS(NAME##_bf16, Cfg<SHAPE>::MT, Cfg<SHAPE>::BN, 256, Cfg<SHAPE>::SMEM_BYTES)             \
    STUDY_EXPORT(NAME##_f16_per_sm, Cfg<SHAPE>::BLOCKS) STUDY_EXPORT(NAME##_bf16_per_sm, Cfg<SHAPE>::BLOCKS)       \
    STUDY_EXPORT(NAME##_f16_bk, Cfg<SHAPE>::BK) STUDY_EXPORT(NAME##_bf16_bk, Cfg<SHAPE>::BK)

// Tiles of 16, 64 and 128 tokens (M <= 16, <= 64, more), 128-deep slices: 4 slots of 36 KiB, 4 of 48 KiB, 3 of
// 64 KiB.
constexpr Shape T16{.mt = 16, .bk = 128, .stages = 4};
constexpr Shape T64{.mt = 64, .bk = 128, .stages = 4};
constexpr Shape T128{.mt = 128, .bk = 128, .stages = 3};
SPLIT_K_SHAPE(split_k_m16, T16)
SPLIT_K_SHAPE(split_k_m64, T64)
SPLIT_K_SHAPE(split_k_m128, T128)

#ifdef SPLITK_EXPLORE
// 64-deep slices: 4 slots of 18 KiB (M <= 16) and 8 of 24 KiB (M <= 64), one block an SM, or 5 and 4 slots and
// two blocks an SM (twice the warps to hide latency); 8 slots of 18 KiB (M <= 16).
constexpr Shape K64_16{.mt = 16, .bk = 64, .stages = 4};
constexpr Shape K64_64{.mt = 64, .bk = 64, .stages = 8};
constexpr Shape T16_2{.mt = 16, .bk = 64, .stages = 5, .blocks = 2};
constexpr Shape T64_2{.mt = 64, .bk = 64, .stages = 4, .blocks = 2};
constexpr Shape T16_S8{.mt = 16, .bk = 64, .stages = 8, .blocks = 1};
// The registered tiles with mma.sync (8 warps of 16 columns of W) in place of wgmma.
constexpr Shape SYNC16{.mt = 16, .bk = 128, .stages = 4, .blocks = 1, .wgmma = false};
constexpr Shape SYNC64{.mt = 64, .bk = 128, .stages = 4, .blocks = 1, .wgmma = false};
SPLIT_K_SHAPE(x17_k64_m16, K64_16)
SPLIT_K_SHAPE(x17_k64_m64, K64_64)
SPLIT_K_SHAPE(x17_b2_m16, T16_2)
SPLIT_K_SHAPE(x17_b2_m64, T64_2)
SPLIT_K_SHAPE(x17_s8_m16, T16_S8)
SPLIT_K_SHAPE(x17_sync_m16, SYNC16)
SPLIT_K_SHAPE(x17_sync_m64, SYNC64)
#endif
