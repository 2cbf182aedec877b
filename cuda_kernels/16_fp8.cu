// Stage 16 - fp8: e4m3 inputs on Hopper's fp8 wgmma, fp32 promotion every 128 k, scaled, bf16 out.
//
// Technique:   wgmma.mma_async m64nNk32 .e4m3.e4m3 -> f32 (fp8_wgmma.cuh), both operands K-major (A: M x K, B as
//              Bt: N x K), TMA boxes of 128 k (a k-tile is one 128-deep chunk, one 128-byte swizzle row).  Stage
//              14's skeleton: persistent blocks walking tiles in groups of GROUP_M tile-rows, a producer warpgroup
//              (setmaxnreg 40) and two consumer warpgroups (232) of 64 x BN; roles and ring waits that ptxas sees
//              warp-uniform (slots and wgmma descriptors in uniform registers).
//              Promotion (fp8_tensor, fp8_row, fp8_block; 128x128 tiles, 6 slots), streamed: each chunk's 4
//              wgmmas start a fresh partial, two partials alternate, chunk k + 1 is issued before chunk k is
//              waited for (wgmma.wait_group 1), released and added into the fp32 sum (block: fma by sa[m,kb] *
//              sb[kb,nb]).  fp8_block's scales are staged: the producer's second warp cp.async-copies a chunk's
//              into its ring slot, arriving on the slot's full barrier.  fp8_tcacc: the whole K in the wgmma
//              accumulator (128x256 tiles, 4 slots).  Epilogue: alpha * scale * acc (+ beta * C), bf16 RN once;
//              stmatrix into 128-byte-swizzled 64x64 pieces and TMA stores when D is 16-byte aligned, else
//              register stores.
// Reproduces:  no seed covers fp8; promotion is seed 002's lesson (sum outside the tensor core).  Anchors: DeepGEMM's
//              README and the DeepSeek-V3 report (promotion of the tensor core's partial sums into fp32 every 128 k;
//              128x128 block scales), triton-lang/triton PR #5461 (Triton's persistent TMA fp8 matmul).
// Changed:     against stage 14: e4m3 operands, k32 wgmmas, B K-major, 128-deep k-tiles; two partials and an fp32
//              sum per consumer (promotion, 3 x 64 registers a thread), scales (block: staged in the ring); stage
//              14's TMA-store epilogue for aligned D, register stores at any other alignment (`store`, per call).
// Why faster:  (a prediction, made before the first GPU run) fp8 wgmma doubles fp16's rate per byte of operand,
//              so a tile's mainloop is half as long against the same epilogue: the TMA-store epilogue (per 64x64
//              piece, 4 stmatrix a warp and one TMA store, against 32 scattered 4-byte stores a thread) gives the
//              tensor core back sooner, as it did for stage 14.  128x128 promoted tiles leave room for 6 slots
//              beside the D buffers and waste less of the last wave than 128x192 at 4096^3 (1024 tiles on 132 SMs
//              against 704).  Then, from the first runs: a consumer that waited for all of its wgmmas before adding
//              (that design is the variant `serial`) left the tensor core idle while both consumers added at once;
//              the streamed promotion keeps the next chunk queued, and a sum with two partials fits only at
//              128x128 (three 128x192 sets would be 288 registers).
// Measured:    H100 SXM, the sweep of c5489b3, TFLOP/s (% of the report's cuBLAS fp8 rows of the same scaling,
//              timed in the same sweep; tcacc: of cuBLAS with fast accumulation), 4096^3: fp8_tensor 1335.5
//              (100.2%), fp8_row 1247.3 (96.7%), fp8_block 1136.5 (95.0%), fp8_tcacc 1420.8 (101.2%);
//              8192x8192x4096: 1396.1 (97.5%), 1339.9 (98.5%), 1181.0 (91.0%), 1531.0 (104.6%); 8192^3: 1383.7
//              (98.8%), 1384.0 (101.4%), 1137.9 (90.1%), 1492.5 (100.3%).  What each design choice bought,
//              timed side by side by study.probe (the streamed promotion, uniform registers, groups of 8
//              tile-rows, staged block scales, and where the block form's time goes): docs/16_fp8.md.
// Ragged edges: TMA reads zeros past M, N and K (a ragged last chunk adds zeros); TMA stores clip at M and N,
//              register stores are masked; a warpgroup's rows wholly past M store nothing.
// Alignment:   tensor maps need 16-byte aligned A and Bt (the launcher re-pitches others, study.core.fp8.
//              k_major_16); C and D any: TMA stores for 16-byte aligned D, 4-byte bf16 pair accesses only where
//              the launcher says the call allows, else bf16 by bf16.
// Range:       any M, N, K >= 1; beta == 0 never reads C.
#include <cuda.h>   // CUtensorMap
#include <cuda_bf16.h>

#include <type_traits>

#include "async_copy.cuh"
#include "fp8_wgmma.cuh"
#include "gemm_common.cuh"
#include "tma.cuh"

namespace {

// BK: a k-tile, a promotion chunk and one 128-byte swizzle row of fp8.  GROUP_M: tile-rows a group of the persistent
// walk, promoted forms (8: the faster at 4096^3 and 8192x8192x4096 in the probe of 928fc7f) and tcacc (16).
constexpr int BK = 128, GROUP_M = 8, GROUP_M_TCACC = 16;
enum Mode { TENSOR, ROW, BLOCK, TCACC };   // TCACC: per-tensor scales, no promotion

// A kernel's shape: 128 x `bn` tiles (two consumer warpgroups of 64 x bn), a ring of `stages` slots, clusters
// of `cluster` blocks along M multicasting B (each copies bn / cluster rows of Bt), `bufs` 64x64 bf16 buffers a
// consumer for the TMA-store epilogue (2: a piece is written while the one before is still being stored).
struct Shape {
    int bn = 128;
    int stages = 6;
    int cluster = 1;
    int bufs = 2;
    int stream = 0;   // promoted: 1 issues chunk k + 1 before chunk k is promoted (a second partial); 2 also the
                      // next tile's first chunk before the epilogue
    int tma_only = 0;        // 1: only the TMA-store epilogue compiled (CudaFp8TmaOnlyLaunch refuses other calls)
    int staged_scales = 0;   // BLOCK, streamed: 1 has a producer warp copy each chunk's scales into its ring slot,
                             // read after the chunk's wgmmas are issued; 2 read before them; 3 copied by the TMA
                             // thread with two 1D bulk copies (the scales' rows pitched to multiples of 4 floats:
                             // CudaFp8BulkLaunch)
    int arrivals = 0;   // 1: one arrival a consumer warpgroup frees a slot (CUTLASS's consumer_release), not one
                        // a warp; 2: after a named barrier of the warpgroup's 4 warps (as the Gluon twin's SASS)
};

template <const Shape& S, Mode MODE_, int GROUP_ = GROUP_M, bool UNIFORM_ = true,
          int AHEAD_ = MODE_ == BLOCK && S.stream && !S.staged_scales ? 2 : 1, int PROBE_ = 0>
struct Cfg {
    // Diagnostic variants (FP8_EXPLORE; per-tensor, for study.probe at alpha 1): 1 promotes by FFMA with a factor of
    // alpha / alpha, as the block form's FFMA; 2 stages scales as the block form does, unused (ptxas drops the
    // consumers' reads of them: their SASS holds no LDS); 3 stages them without their arrivals on the full
    // barrier, unread.
    static constexpr int PROBE = PROBE_;
    static constexpr int AHEAD = AHEAD_;   // BLOCK, streamed: a chunk's scales are loaded AHEAD chunks before use
    static constexpr int GROUP = GROUP_;   // GROUP_M of the persistent walk
    static constexpr bool UNIFORM = UNIFORM_;   // the roles and ring waits written so that ptxas sees them warp-uniform
    static constexpr Mode MODE = MODE_;
    static constexpr bool PROMOTE = MODE != TCACC;
    static constexpr int BN = S.bn, STAGES = S.stages, CLUSTER = S.cluster, BUFS = S.bufs, CONSUMERS = 2;
    static constexpr int STREAM = S.stream;
    static constexpr bool TMA_ONLY = S.tma_only;
    static_assert(!STREAM || (PROMOTE && BN == 128), "a sum and two partials: 3 x 64 registers a thread");
    static_assert(AHEAD == 1 || (AHEAD == 2 && MODE == BLOCK && STREAM), "scales two chunks ahead: streamed BLOCK");
    // STAGED: a slot also holds its chunk's scales, sa of the tile's BM rows and sb of its n-block, copied by the
    // producer's second warp (cp.async; the full barrier then waits for its 32 lanes as well as the TMA bytes), or
    // with BULK by the TMA thread (their bytes counted with the operands').
    static constexpr bool STAGED = S.staged_scales;
    static constexpr bool EARLY = S.staged_scales == 2;   // a chunk's staged scales read before its wgmmas
    static constexpr bool BULK = S.staged_scales == 3;    // copied by the TMA thread: the tile's sa rows, 4 of sb
    static constexpr int ARRIVALS = S.arrivals;
    static constexpr bool ARR1 = ARRIVALS;   // the warpgroup's lead lane arrives; STAGED or 2: after a named barrier
    static_assert(!ARR1 || S.cluster == 1, "one arrival a warpgroup: one block a cluster");
    static_assert(PROBE == 0 || (MODE == TENSOR && STREAM && (PROBE >= 2) == STAGED), "diagnostics: per-tensor");
    static_assert(!STAGED || ((MODE == BLOCK || PROBE >= 2) && STREAM && AHEAD == 1 && S.cluster == 1 && S.bn == 128),
                  "staged scales: streamed BLOCK, one block a cluster, a tile one n-block of B's scales");
    static constexpr int SCALE_FLOATS = STAGED ? 64 * CONSUMERS + 4 : 0;
    static constexpr int FULL_ARRIVALS = STAGED && !BULK && PROBE != 3 ? 1 + 32 : 1;
    static_assert(BN == 128 || BN == 192 || BN == 256, "wgmma's n of the shapes spelled out; whole 64x64 pieces");
    static_assert(STAGES > 0 && CLUSTER > 0, "a count left out before a given field (zero under -std=c++17)");
    static_assert(BUFS == 1 || BUFS == 2, "a consumer's D buffers");
    static constexpr int BM = 64 * CONSUMERS, ACC = BN / 2;   // ACC: fp32 registers a thread per 64 x BN
    static_assert(PROMOTE ? (STREAM ? 3 : 2) * ACC <= 192 : ACC <= 128, "a consumer's 232 registers");
    static constexpr int THREADS = 128 * (CONSUMERS + 1);
    static constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, SLOT_BYTES = A_BYTES + B_BYTES;
    static_assert((BN / CLUSTER) % 8 == 0, "a block's share of Bt (BN / CLUSTER rows): whole swizzle atoms");
    static constexpr int PIECE_BYTES = 64 * 64 * 2, PIECES = BN / 64;   // a 64x64 bf16 piece of D; a consumer's
    static constexpr int PIECES_BYTES = CONSUMERS * BUFS * PIECE_BYTES;
    // The ring, the D buffers (1024-byte aligned: the swizzle's period), the staged scales, + 1024 to align the
    // ring, the barriers.
    static constexpr int SMEM_BYTES = STAGES * (SLOT_BYTES + 4 * SCALE_FLOATS) + PIECES_BYTES + 1024 + 2 * STAGES * 8;
    static_assert(SMEM_BYTES <= 227 * 1024, "an SM's shared memory");
    static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
    static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= THREADS * 168, "the register pool");
};

// Both operands K-major, 128-byte swizzle: rows 128 bytes apart, 8-row groups 1024 (the stride offset).
constexpr uint32_t DESC_HI = wgmma::desc_hi(1024, wgmma::SWIZZLE_128B);

// The block's tiles in units of a cluster's CLUSTER x 1, GROUP_M-grouped; block `rank` takes tile-row
// tmc * CLUSTER + rank.  next(): the next tile from blockIdx's cluster on, a grid's clusters apart.  32-bit
// counts: the launcher refuses a call of 2^31 tiles or more.
template <class C>
struct Work {
    int tiles_mc, tiles_n, tiles, t, stride, k_tiles, rank;
    __device__ Work(int M, int N, int K) {
        tiles_mc = ((M - 1) / C::BM + C::CLUSTER) / C::CLUSTER;
        tiles_n = (N - 1) / C::BN + 1;
        tiles = tiles_mc * tiles_n;
        t = blockIdx.x / C::CLUSTER;
        stride = gridDim.x / C::CLUSTER;
        k_tiles = (K - 1) / BK + 1;
        rank = blockIdx.x % C::CLUSTER;
    }
    __device__ bool next(int& m0, int& n0) {
        if (t >= tiles) return false;
        int tmc, tn;
        tile_of<C::GROUP / C::CLUSTER>(t, tiles_mc, tiles_n, tmc, tn);
        m0 = (tmc * C::CLUSTER + rank) * C::BM;
        n0 = tn * C::BN;
        t += stride;
        return true;
    }
};

// A consumer's 64 x BN tile of D: lane 4g + t of warp w holds rows 16w + g (+ 8 for h = 1), columns 8j + 2t and
// + 1 in acc[4j + 2h], acc[4j + 2h + 1].  v = acc * fr[h] (* sb[col] with COLS) (+ beta * C), to bf16 RN.
// PAIRS: C, D, ldc and ldd allow 4-byte accesses to a column pair (col is even).
template <bool PAIRS, bool HAS_C, bool COLS, int ACC>
__device__ __forceinline__ void store_tile(const float (&acc)[ACC], const float (&fr)[2], const float* __restrict__ sb,
                                           int row0, int col0, int lane, int M, int N, float beta,
                                           const __nv_bfloat16* __restrict__ Cm, idx_t ldc,
                                           __nv_bfloat16* __restrict__ D, idx_t ldd) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const idx_t row = row0 + (lane >> 2) + 8 * h;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < ACC / 4; ++j) {
            const int col = col0 + 8 * j + 2 * (lane & 3);
            if (col >= N) continue;
            const bool two = col + 1 < N;
            float v0 = acc[4 * j + 2 * h] * fr[h], v1 = acc[4 * j + 2 * h + 1] * fr[h];
            if (COLS) {
                v0 *= sb[col];
                if (two) v1 *= sb[col + 1];
            }
            if (HAS_C) {
                const __nv_bfloat16* c = Cm + row * ldc + col;
                if (PAIRS && two) {
                    const float2 cv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(c));
                    v0 = fmaf(beta, cv.x, v0);
                    v1 = fmaf(beta, cv.y, v1);
                } else {
                    v0 = fmaf(beta, __bfloat162float(c[0]), v0);
                    if (two) v1 = fmaf(beta, __bfloat162float(c[1]), v1);
                }
            }
            __nv_bfloat16* d = D + row * ldd + col;
            if (PAIRS && two) {
                *reinterpret_cast<__nv_bfloat162*>(d) = __floats2bfloat162_rn(v0, v1);
            } else {
                d[0] = __float2bfloat16_rn(v0);
                if (two) d[1] = __float2bfloat16_rn(v1);
            }
        }
    }
}

// The value of D at (row, col) and (row, col + 1) from a consumer's accumulator pair: v = acc * f (* sb[col]
// with COLS) (+ beta * C), nothing read past M or N (C as one 4-byte pair: the launcher's TMA-store calls allow it).
template <bool HAS_C, bool COLS>
__device__ __forceinline__ uint32_t pair_bf16(float v0, float v1, float f, const float* __restrict__ sb, idx_t row,
                                              int col, int M, int N, float beta, const __nv_bfloat16* __restrict__ Cm,
                                              idx_t ldc) {
    v0 *= f;
    v1 *= f;
    const bool one = col < N, two = col + 1 < N;
    if (COLS) {
        if (one) v0 *= sb[col];
        if (two) v1 *= sb[col + 1];
    }
    if (HAS_C && row < M && one) {
        const __nv_bfloat16* c = Cm + row * ldc + col;
        if (two) {
            const float2 cv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(c));
            v0 = fmaf(beta, cv.x, v0);
            v1 = fmaf(beta, cv.y, v1);
        } else {
            v0 = fmaf(beta, __bfloat162float(c[0]), v0);
        }
    }
    const __nv_bfloat162 d = __floats2bfloat162_rn(v0, v1);   // v0 in the low half: the lower column
    return *reinterpret_cast<const uint32_t*>(&d);
}

// stmatrix.x4: four 8x8 b16 matrices into shared memory; lane 4g + t gives elements (g, 2t), (g, 2t + 1) of
// matrix i in r[i], lanes 8i .. 8i + 7 the addresses of matrix i's rows.
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, const uint32_t (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

// A consumer's 64 x BN tile of D (rows from wg_row0) through shared memory in 64x64 pieces: per piece, 4 stmatrix
// a warp (16x16 blocks: matrices rows +0/+8 x columns +0/+8) into the 128-byte swizzle that D's tensor map names
// (16-byte chunk c of row r at c ^ (r % 8)), then one TMA store by the warpgroup's first thread, which clips at M
// and N.  Pieces cycle through the consumer's BUFS buffers; a buffer is rewritten once the store BUFS pieces
// back has read it.  `stored`: the consumer's pieces so far, modulo BUFS, over all its tiles (3 pieces a tile at
// BN 192: a count restarted per tile would rewrite a buffer a store may still be reading).
template <class C, bool HAS_C, bool COLS>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[C::ACC], const float (&fr)[2],
                                               const float* __restrict__ sb, uint32_t bufs, int& stored,
                                               const CUtensorMap& map_d, int wg_row0, int col0, int warp, int lane,
                                               int barrier, int M, int N, float beta,
                                               const __nv_bfloat16* __restrict__ Cm, idx_t ldc) {
    const bool leader = (threadIdx.x & 127) == 0;
    const int r = 16 * warp + 8 * ((lane >> 3) & 1) + (lane & 7);   // the piece row this lane addresses
    const idx_t row = wg_row0 + 16 * warp + (lane >> 2);             // the rows it holds: row, row + 8
#pragma unroll
    for (int p = 0; p < C::PIECES; ++p) {
        const uint32_t buf = bufs + ((stored + p) % C::BUFS) * C::PIECE_BYTES;
        if (leader) tma::store_wait<C::BUFS - 1, true>();
        asm volatile("bar.sync %0, 128;\n" :: "r"(barrier) : "memory");
#pragma unroll
        for (int q = 0; q < 4; ++q) {   // the piece's 16-column blocks
            uint32_t v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {   // matrix i: rows + 8 (i & 1), columns + 8 (i >> 1)
                const int j = 8 * p + 2 * q + (i >> 1), h = i & 1;
                v[i] = pair_bf16<HAS_C, COLS>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], fr[h], sb, row + 8 * h,
                                              col0 + 8 * j + 2 * (lane & 3), M, N, beta, Cm, ldc);
            }
            const int chunk = 2 * q + (lane >> 4);
            stmatrix_x4(buf + r * 128 + ((chunk ^ (r & 7)) << 4), v);
        }
        async_copy::fence_async_shared();   // the piece, visible to the copy engine
        asm volatile("bar.sync %0, 128;\n" :: "r"(barrier) : "memory");
        if (leader) {
            tma::store_2d(map_d, buf, col0 + 64 * p, wg_row0);
            tma::store_commit();
        }
    }
    stored = (stored + C::PIECES) % C::BUFS;
}

// A 1D bulk copy of `bytes` (a multiple of 16, both addresses 16-byte aligned) into shared memory, completing on bar.
__device__ __forceinline__ void bulk_load(float* dst, const float* src, uint32_t bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                 :: "r"(async_copy::smem_u32(dst)), "l"(src), "r"(bytes), "r"(async_copy::smem_u32(bar)) : "memory");
}

template <class C>
__device__ __forceinline__ void gemm_fp8(const CUtensorMap& map_a, const CUtensorMap& map_b, int M, int N, int K,
                                         double alpha_, double beta_, const float* __restrict__ sa,
                                         const float* __restrict__ sb, const __nv_bfloat16* __restrict__ Cm, idx_t ldc,
                                         __nv_bfloat16* __restrict__ D, idx_t ldd, int store,
                                         const CUtensorMap& map_d) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t raw = async_copy::smem_u32(smem), ring = (raw + 1023) & ~1023u;
    const uint32_t pieces = ring + C::STAGES * C::SLOT_BYTES;   // the TMA-store epilogue's buffers
    float* staged = reinterpret_cast<float*>(smem + (pieces - raw) + C::PIECES_BYTES);   // STAGED: slot s's scales
    uint64_t* full = reinterpret_cast<uint64_t*>(staged + C::STAGES * C::SCALE_FLOATS);
    uint64_t* empty = full + C::STAGES;
    const int tid = threadIdx.x;
    if constexpr (C::BULK) {   // rows past M's run of 4, never copied, read as zeros (never stored either)
        for (int i = tid; i < C::STAGES * C::SCALE_FLOATS; i += C::THREADS) staged[i] = 0.f;
        async_copy::fence_async_shared();   // before the copy engine writes the same words
    }
    if (tid == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            async_copy::mbar_init(&full[s], C::FULL_ARRIVALS);                  // expect_tx (+ 32 scale copies)
            async_copy::mbar_init(&empty[s], (C::ARR1 ? 1 : 4) * C::CONSUMERS * C::CLUSTER);   // a lane a consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    if (C::CLUSTER > 1) tma::cluster_sync();
    else __syncthreads();

    // The warpgroup's role, broadcast from lane 0 (__shfl_sync) and ring waits looping inside their asm: ptxas
    // then knows every branch a consumer takes is warp-uniform and keeps slots and wgmma descriptors in uniform
    // registers (fp8_tensor's SASS: 187 R2UR without them, each descriptor moved before its wgmma; 76 with them,
    // none in the consumers' main loops).
    const int role = C::UNIFORM ? __shfl_sync(~0u, tid / 128, 0) : tid / 128;
    auto wait = [](uint64_t* bar, unsigned parity) {
        if constexpr (C::UNIFORM) async_copy::mbar_wait_asm(bar, parity);
        else async_copy::mbar_wait(bar, parity);
    };
    if (role == 0) {   // the producer warpgroup: thread 0 copies k-tile after k-tile as slots free up
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(C::PRODUCER_REGS));
        if (tid == 0) {
            Work<C> w(M, N, K);
            uint32_t s = 0, phase = 0;
            int m0, n0;
            while (w.next(m0, n0)) {
                if constexpr (C::BULK) {   // not unrolled: the bulk copies' addresses then fit 40 registers
                    // sa's rows (one a k-block) and sb's (one an n-block) pitched to whole 16-byte runs by the
                    // launcher: sa[kt, m0 .. m0 + rows - 1] and sb[nb, kt & ~3 .. + 3] are each whole runs.
                    const idx_t lds_a = (M + 3) & ~3, lds_b = (w.k_tiles + 3) & ~3;
                    const int rows = min(C::BM, (int)lds_a - m0);
#pragma unroll 1
                    for (int kt = 0; kt < w.k_tiles; ++kt) {
                        wait(&empty[s], phase ^ 1);
                        const uint32_t slot = ring + s * C::SLOT_BYTES;
                        float* dst = staged + s * C::SCALE_FLOATS;
                        tma::expect_tx(&full[s], C::SLOT_BYTES + 4 * (rows + 4));
                        tma::load_2d(slot, map_a, kt * BK, m0, &full[s]);
                        bulk_load(dst, sa + kt * lds_a + m0, 4 * rows, &full[s]);
                        bulk_load(dst + C::BM, sb + (n0 / 128) * lds_b + (kt & ~3), 16, &full[s]);
                        tma::load_2d(slot + C::A_BYTES, map_b, kt * BK, n0, &full[s]);
                        if (++s == C::STAGES) s = 0, phase ^= 1;
                    }
                    continue;
                }
                for (int kt = 0; kt < w.k_tiles; ++kt) {
                    wait(&empty[s], phase ^ 1);   // a fresh barrier's parity-1 phase: complete
                    const uint32_t slot = ring + s * C::SLOT_BYTES, b = slot + C::A_BYTES;
                    tma::expect_tx(&full[s], C::SLOT_BYTES);
                    tma::load_2d(slot, map_a, kt * BK, m0, &full[s]);
                    if constexpr (C::CLUSTER > 1)
                        tma::load_2d_multicast(b + w.rank * (C::BN / C::CLUSTER) * BK, map_b, kt * BK,
                                               n0 + w.rank * (C::BN / C::CLUSTER), &full[s], (1 << C::CLUSTER) - 1);
                    else
                        tma::load_2d(b, map_b, kt * BK, n0, &full[s]);
                    if (++s == C::STAGES) s = 0, phase ^= 1;
                }
            }
        }
        if (C::STAGED && !C::BULK && tid / 32 == 1) {   // the second warp: each chunk's scales into its slot, cp.async
            const int lane = tid & 31;
            Work<C> w(M, N, K);
            uint32_t s = 0, phase = 0;
            int m0, n0;
            while (w.next(m0, n0)) {
                const float* sbt = sb + (idx_t)(n0 / 128) * w.k_tiles;   // sb[nb, kt]; BN == 128: one n-block
#pragma unroll 1
                for (int kt = 0; kt < w.k_tiles; ++kt) {
                    wait(&empty[s], phase ^ 1);
                    float* dst = staged + s * C::SCALE_FLOATS;
                    const float* sak = sa + (idx_t)kt * M;   // sa[kt, row], rows past M clamped (never stored)
#pragma unroll
                    for (int i = 0; i < C::BM / 32; ++i)
                        async_copy::cp4(dst + 32 * i + lane, C::PROBE ? sa : sak + min(m0 + 32 * i + lane, M - 1),
                                        true);
                    if (lane == 0) async_copy::cp4(dst + C::BM, C::PROBE ? sb : sbt + kt, true);
                    if constexpr (C::PROBE != 3) async_copy::mbar_arrive_on_copies(&full[s]);
                    if (++s == C::STAGES) s = 0, phase ^= 1;
                }
            }
            async_copy::wait_all();
        }
        __syncwarp();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(C::CONSUMER_REGS));
        const int ctid = tid - 128, warp = (ctid >> 5) & 3, lane = tid & 31;
        const float alpha = (float)alpha_, beta = (float)beta_;
        const float tensor_scale = C::MODE == TENSOR || C::MODE == TCACC ? alpha * sa[0] * sb[0] : alpha;
        [[maybe_unused]] const float unit = (float)(alpha_ / alpha_);   // PROBE 1: 1 at any finite nonzero alpha
        auto consume = [&](auto wg) {   // consumer warpgroup c, instantiated per c (its offsets fold)
            constexpr int c = decltype(wg)::value;
            const uint32_t desc_a = wgmma::desc_lo(ring + c * 64 * BK, 16);
            const uint32_t desc_b = wgmma::desc_lo(ring + C::A_BYTES, 16);
            auto release = [&](uint32_t s) {   // this warp's wgmmas on slot s are done: one arrival per block
                if (C::CLUSTER > 1) {
                    if (lane < C::CLUSTER) tma::arrive_remote<false>(&empty[s], lane);
                } else if constexpr (C::ARR1) {
                    // A warp's wgmma wait covers the warpgroup's wgmmas, not its warps' reads of the staged scales.
                    if constexpr (C::STAGED || C::ARRIVALS == 2)
                        asm volatile("bar.sync %0, 128;\n" :: "r"(1 + c) : "memory");
                    if (warp == 0 && lane == 0) async_copy::mbar_arrive(&empty[s]);
                } else if (lane == 0) {
                    async_copy::mbar_arrive(&empty[s]);
                }
            };
            auto chunk = [&](float (&d)[C::ACC], uint32_t off, int first) {   // a k-tile's 4 k32 steps
                wgmma::fence();
#pragma unroll
                for (int kk = 0; kk < BK / 32; ++kk)   // 32 bytes along the rows of A and Bt
                    wgmma::mma_e4m3<C::BN>(d, wgmma::desc(desc_a + off + 2 * kk, DESC_HI),
                                           wgmma::desc(desc_b + off + 2 * kk, DESC_HI), first | kk);
                wgmma::commit();
            };
            // The epilogue of a finished 64 x BN tile: alpha * scales * acc (+ beta * C) to bf16, from registers or
            // by TMA stores.  Warp votes (warp-uniform to nvcc): rows past M store nothing; the TMA-store path's
            // barriers take the whole warpgroup, so it skips by the warpgroup's rows.
            int stored = 0;   // the TMA-store epilogue's pieces so far, modulo BUFS
            auto finish = [&](const float (&acc)[C::ACC], int m0, int n0) {
                const int row0 = m0 + 64 * c + 16 * warp;   // this warp's first row
                float fr[2] = {tensor_scale, tensor_scale};
                if constexpr (C::MODE == ROW) {
                    fr[0] = alpha * sa[min(row0 + (lane >> 2), M - 1)];
                    fr[1] = alpha * sa[min(row0 + (lane >> 2) + 8, M - 1)];
                }
                constexpr bool COLS = C::MODE == ROW;
                if (C::TMA_ONLY || store == 2) {
                    const int wg_row0 = m0 + 64 * c;
                    if (__all_sync(~0u, wg_row0 >= M)) return;
                    const uint32_t bufs = pieces + c * C::BUFS * C::PIECE_BYTES;
                    if (beta != 0.f)
                        store_tile_tma<C, true, COLS>(acc, fr, sb, bufs, stored, map_d, wg_row0, n0, warp, lane, 1 + c,
                                                      M, N, beta, Cm, ldc);
                    else
                        store_tile_tma<C, false, COLS>(acc, fr, sb, bufs, stored, map_d, wg_row0, n0, warp, lane,
                                                       1 + c, M, N, beta, Cm, ldc);
                    return;
                }
                if constexpr (!C::TMA_ONLY) {
                    if (__all_sync(~0u, row0 >= M)) return;
                    auto from_regs = [&](auto pair, auto has_c) {
                        store_tile<decltype(pair)::value, decltype(has_c)::value, COLS>(acc, fr, sb, row0, n0, lane, M,
                                                                                        N, beta, Cm, ldc, D, ldd);
                    };
                    using yes = std::true_type;
                    using no = std::false_type;
                    if (store == 1) {
                        if (beta != 0.f) from_regs(yes{}, yes{});
                        else from_regs(yes{}, no{});
                    } else {
                        if (beta != 0.f) from_regs(no{}, yes{});
                        else from_regs(no{}, no{});
                    }
                }
            };
            Work<C> w(M, N, K);
            uint32_t s = 0, phase = 0;   // the slot computed next, and its full barrier's parity
            int m0, n0;
            if constexpr (C::STREAM) {
                // Chunk kt + 1 is issued into the other partial before chunk kt is waited for: the tensor core has
                // this warpgroup's next wgmmas queued while it promotes kt.  STREAM 2: the next tile's first chunk
                // is issued before this tile's epilogue, and runs while D is stored.  BLOCK: a chunk's scales are
                // loaded when it is issued and used a chunk later, at its promotion.
                float acc[C::ACC], p0[C::ACC], p1[C::ACC];
                [[maybe_unused]] float sc[2][3];   // BLOCK, per partial: sb[nb, kt], sa[row, kt], sa[row + 8, kt]
                [[maybe_unused]] float pre[3];   // AHEAD 2: chunk kt + 1's scales, loaded when kt is issued
                auto issue = [&](float (&p)[C::ACC], int tm0, int tn0, int kt, float (&x)[3]) {
                    if constexpr (C::MODE == BLOCK && !C::STAGED) {
                        const idx_t r = tm0 + 64 * c + 16 * warp + (lane >> 2);
                        // sb's index holds a term ptxas cannot prove 0 (threadIdx.x >= blockDim.x): a provably
                        // uniform scale is moved into a uniform register by an R2UR that waits for its load.
                        auto load = [&](int k, float (&y)[3]) {
                            y[0] = sb[(idx_t)(tn0 / 128) * w.k_tiles + k + (threadIdx.x >= blockDim.x)];
                            y[1] = sa[(idx_t)k * M + min(r, (idx_t)M - 1)];
                            y[2] = sa[(idx_t)k * M + min(r + 8, (idx_t)M - 1)];
                        };
                        if (C::AHEAD == 1 || kt == 0) {
                            load(kt, x);
                        } else {
#pragma unroll
                            for (int i = 0; i < 3; ++i) x[i] = pre[i];
                        }
                        if (C::AHEAD == 2) load(min(kt + 1, w.k_tiles - 1), pre);
                    }
                    wait(&full[s], phase);
                    auto read = [&]() {   // before the slot is released, a chunk later
                        const float* q = staged + s * C::SCALE_FLOATS;
                        x[0] = q[C::BM + (C::BULK ? kt & 3 : 0)];
                        x[1] = q[64 * c + 16 * warp + (lane >> 2)];
                        x[2] = q[64 * c + 16 * warp + (lane >> 2) + 8];
                    };
                    if constexpr (C::EARLY) read();
                    chunk(p, s * (C::SLOT_BYTES >> 4), 0);
                    if constexpr (C::STAGED && !C::EARLY && C::PROBE != 3) read();
                    if (++s == C::STAGES) s = 0, phase ^= 1;
                };
                uint32_t busy = s;   // the slot of the oldest chunk in flight
                auto promote = [&](float (&p)[C::ACC], const float (&x)[3]) {
                    wgmma::hold(p);
                    release(busy);
                    if (++busy == C::STAGES) busy = 0;
                    [[maybe_unused]] float f0, f1;
                    if constexpr (C::MODE == BLOCK) f0 = x[0] * x[1], f1 = x[0] * x[2];
                    if constexpr (C::PROBE == 1) f0 = f1 = unit;
                    if constexpr (C::PROBE == 2) asm volatile("" :: "f"(x[0]), "f"(x[1]), "f"(x[2]));
                    constexpr bool FMA = C::MODE == BLOCK || C::PROBE == 1;
#pragma unroll
                    for (int i = 0; i < C::ACC; ++i)
                        acc[i] = FMA ? fmaf(p[i], (i & 2) ? f1 : f0, acc[i]) : acc[i] + p[i];
                };
                // A tile's chunks; its first is in flight in p0 on entry.  Returns whether another tile follows.
                // STREAM 2 issues that tile's first chunk before this one's epilogue.
                auto tile = [&]() {
#pragma unroll
                    for (int i = 0; i < C::ACC; ++i) acc[i] = 0.f;
                    int kt = 0;
                    for (; kt + 2 < w.k_tiles; kt += 2) {   // two chunks a trip: the partials' roles alternate
                        issue(p1, m0, n0, kt + 1, sc[1]);
                        wgmma::wait<1>();
                        promote(p0, sc[0]);
                        issue(p0, m0, n0, kt + 2, sc[0]);
                        wgmma::wait<1>();
                        promote(p1, sc[1]);
                    }
                    if (kt + 1 < w.k_tiles) {   // two chunks left, the first in flight in p0
                        issue(p1, m0, n0, kt + 1, sc[1]);
                        wgmma::wait<1>();
                        promote(p0, sc[0]);
                        wgmma::wait<0>();
                        promote(p1, sc[1]);
                    } else {
                        wgmma::wait<0>();
                        promote(p0, sc[0]);
                    }
                    const int dm0 = m0, dn0 = n0;
                    if (!w.next(m0, n0)) {
                        finish(acc, dm0, dn0);
                        return false;
                    }
                    if (C::STREAM == 2) issue(p0, m0, n0, 0, sc[0]);
                    finish(acc, dm0, dn0);
                    return true;
                };
                if (w.next(m0, n0)) {
                    issue(p0, m0, n0, 0, sc[0]);
                    if constexpr (C::STREAM == 2) {
                        while (tile()) {}
                    } else {
                        while (tile()) issue(p0, m0, n0, 0, sc[0]);
                    }
                }
            } else {
                [[maybe_unused]] const int NB = (N - 1) / 128 + 1;
                while (w.next(m0, n0)) {
                    [[maybe_unused]] const int row0 = m0 + 64 * c + 16 * warp;   // this warp's first row
                    float acc[C::ACC];
                    if constexpr (C::PROMOTE) {
                        float part[C::ACC];
#pragma unroll
                        for (int i = 0; i < C::ACC; ++i) acc[i] = 0.f;
                        // BLOCK: the tile's n-blocks (at most two: BN <= 256 and n0 a multiple of 64), from column
                        // `bound` on the second; the rows this thread holds, clamped into A.
                        [[maybe_unused]] const int nb0 = n0 / 128, nb1 = min(nb0 + 1, NB - 1);
                        [[maybe_unused]] const int bound = (nb0 + 1) * 128 - n0;
                        [[maybe_unused]] const idx_t ra0 = min(row0 + (lane >> 2), M - 1);
                        [[maybe_unused]] const idx_t ra1 = min(row0 + (lane >> 2) + 8, M - 1);
                        // BLOCK: chunk kt's scales (sb of the two n-blocks, sa of the two rows), loaded a chunk ahead:
                        // an L2 load outlasts one chunk's wgmmas, and the promotion waits for them.
                        [[maybe_unused]] float nxt[4];
                        auto scales = [&](int kt, float (&x)[4]) {
                            x[0] = sb[(idx_t)nb0 * w.k_tiles + kt];
                            x[1] = C::BN == 128 ? x[0] : sb[(idx_t)nb1 * w.k_tiles + kt];
                            x[2] = sa[(idx_t)kt * M + ra0];
                            x[3] = sa[(idx_t)kt * M + ra1];
                        };
                        if constexpr (C::MODE == BLOCK) scales(0, nxt);
                        for (int kt = 0; kt < w.k_tiles; ++kt) {
                            wait(&full[s], phase);
                            chunk(part, s * (C::SLOT_BYTES >> 4), 0);
                            [[maybe_unused]] float s0, s1, a0, a1;
                            if constexpr (C::MODE == BLOCK) {   // this chunk's scales; the next chunk's, in flight
                                s0 = nxt[0], s1 = nxt[1], a0 = nxt[2], a1 = nxt[3];
                                scales(min(kt + 1, w.k_tiles - 1), nxt);
                            }
                            wgmma::wait<0>();
                            wgmma::hold(part);
                            release(s);
                            if (++s == C::STAGES) s = 0, phase ^= 1;
                            [[maybe_unused]] float f[2][C::BN / 64];   // BLOCK: the scale of rows h, 64-column group g
                            if constexpr (C::MODE == BLOCK) {
#pragma unroll
                                for (int g = 0; g < C::BN / 64; ++g) {
                                    const float sg = C::BN == 128 ? s0 : C::BN == 256 ? (g < 2 ? s0 : s1)
                                                                       : 64 * g < bound ? s0 : s1;
                                    f[0][g] = a0 * sg;
                                    f[1][g] = a1 * sg;
                                }
                            }
#pragma unroll
                            for (int i = 0; i < C::ACC; ++i) {   // promotion: the chunk's partial into the fp32 sum
                                if constexpr (C::MODE == BLOCK) acc[i] = fmaf(part[i], f[(i >> 1) & 1][i / 32], acc[i]);
                                else acc[i] += part[i];
                            }
                        }
                    } else {   // TCACC: one accumulator over all of K; a slot is released once the next one's run
                        uint32_t prev = 0;
                        for (int kt = 0; kt < w.k_tiles; ++kt) {
                            wait(&full[s], phase);
                            chunk(acc, s * (C::SLOT_BYTES >> 4), kt);
                            wgmma::wait<1>();
                            wgmma::hold(acc);
                            if (kt > 0) release(prev);
                            prev = s;
                            if (++s == C::STAGES) s = 0, phase ^= 1;
                        }
                        wgmma::wait<0>();
                        wgmma::hold(acc);
                        release(prev);
                    }
                    finish(acc, m0, n0);
                }
            }
        };
        if (role == 1) consume(std::integral_constant<int, 0>{});
        else consume(std::integral_constant<int, 1>{});
        if ((tid & 127) == 0) tma::store_wait<0, false>();   // the D buffers outlive their last store
    }
    // Neither block of a cluster leaves while the other may still multicast into it or arrive on its barriers.
    if (C::CLUSTER > 1) tma::cluster_sync();
}

}  // namespace

// grid (blocks, 1, 1): persistent, at most one block an SM; ATTR: __cluster_dims__ for clusters.  sa, sb: the
// scales (study.core.fp8's layouts).  store: how D leaves: 0 bf16 by bf16 from registers, 1 as 4-byte column
// pairs (C, D, ldc and ldd allow them), 2 by TMA stores through map_d (D 16-byte aligned in start and pitch, boxes
// of 64 x 64; C read as pairs); map_d is a placeholder otherwise, never read.
#define FP8_ENTRY(NAME, SHAPE, MODE, ATTR, ...)                                                                      \
    using NAME##_cfg = Cfg<SHAPE, MODE __VA_OPT__(,) __VA_ARGS__>;                                                   \
    extern "C" __global__ void __launch_bounds__(NAME##_cfg::THREADS, 1) ATTR                                \
    NAME(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N, \
         int K, double alpha, double beta, const float* __restrict__ sa, const float* __restrict__ sb,       \
         const __nv_bfloat16* __restrict__ C, idx_t ldc, __nv_bfloat16* __restrict__ D, idx_t ldd, int store, \
         const __grid_constant__ CUtensorMap map_d) {                                                        \
        gemm_fp8<NAME##_cfg>(map_a, map_b, M, N, K, alpha, beta, sa, sb, C, ldc, D, ldd, store, map_d);       \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, NAME##_cfg::BM, NAME##_cfg::BN, NAME##_cfg::THREADS, NAME##_cfg::SMEM_BYTES)
#define PAIRS_OF_2 __cluster_dims__(2, 1, 1)

// Promoted: 128x128 tiles (each consumer 64x128: two partials and a sum, 64 registers each; the promotion
// streamed), 6 slots of 32 KiB, two 8 KiB D buffers a consumer: 230,496 bytes of shared memory.
constexpr Shape PROMOTED{.bn = 128, .stages = 6, .cluster = 1, .bufs = 2, .stream = 1};
FP8_ENTRY(fp8_tensor, PROMOTED, TENSOR, )
FP8_ENTRY(fp8_row, PROMOTED, ROW, )
// Block: the scales staged in the ring beside their chunk (a slot's 528 bytes leave room for one D buffer a
// consumer): 217,280 bytes.
constexpr Shape PROMOTED_STAGED{.bn = 128, .stages = 6, .cluster = 1, .bufs = 1, .stream = 1, .staged_scales = 1};
FP8_ENTRY(fp8_block, PROMOTED_STAGED, BLOCK, )
// Unpromoted: stage 14's 128x256 (each consumer 64x256, 128 registers), 4 slots of 48 KiB, two D buffers a
// consumer (stage 14's wgmma_tma).
constexpr Shape WHOLE_K{.bn = 256, .stages = 4, .cluster = 1, .bufs = 2};
FP8_ENTRY(fp8_tcacc, WHOLE_K, TCACC, , GROUP_M_TCACC)

#ifdef FP8_EXPLORE
// 128x192 promoted tiles (a partial and a sum, 96 registers each; 17% fewer operand bytes per output than
// 128x128): 5 slots of 40 KiB and one D buffer a consumer, or 4 slots and two.
constexpr Shape WIDE{.bn = 192, .stages = 5, .cluster = 1, .bufs = 1};
FP8_ENTRY(x16_tensor_n192, WIDE, TENSOR, )
FP8_ENTRY(x16_row_n192, WIDE, ROW, )
FP8_ENTRY(x16_block_n192, WIDE, BLOCK, )
constexpr Shape WIDE_4{.bn = 192, .stages = 4, .cluster = 1, .bufs = 2};
FP8_ENTRY(x16_tensor_n192s4, WIDE_4, TENSOR, )
// 128x128 with one D buffer a consumer (Gluon's twin) and 6 slots.
constexpr Shape SQUARE_1{.bn = 128, .stages = 6, .cluster = 1, .bufs = 1};
FP8_ENTRY(x16_tensor_b1, SQUARE_1, TENSOR, )
// 128x192 in clusters of 2 along M, each block copying half of Bt's box and multicasting it.
constexpr Shape WIDE_PAIRS{.bn = 192, .stages = 5, .cluster = 2, .bufs = 1};
FP8_ENTRY(x16_tensor_c2, WIDE_PAIRS, TENSOR, PAIRS_OF_2)
FP8_ENTRY(x16_block_c2, WIDE_PAIRS, BLOCK, PAIRS_OF_2)
constexpr Shape SQUARE_PAIRS{.bn = 128, .stages = 6, .cluster = 2, .bufs = 2};
FP8_ENTRY(x16_tensor_n128c2, SQUARE_PAIRS, TENSOR, PAIRS_OF_2)
// 128x128 promoted after each chunk's wgmmas are waited for, with nothing else in flight (the first design).
constexpr Shape SERIAL{.bn = 128, .stages = 6, .cluster = 1, .bufs = 2, .stream = 0};
FP8_ENTRY(x16_tensor_serial, SERIAL, TENSOR, )
FP8_ENTRY(x16_block_serial, SERIAL, BLOCK, )
// Streamed, in groups of 16 tile-rows (the registered walk until 928fc7f), of 4, 6 and 12.
FP8_ENTRY(x16_tensor_g16, PROMOTED, TENSOR, , 16)
FP8_ENTRY(x16_block_g16, PROMOTED, BLOCK, , 16)
FP8_ENTRY(x16_tensor_g4, PROMOTED, TENSOR, , 4)
FP8_ENTRY(x16_tensor_g6, PROMOTED, TENSOR, , 6)
FP8_ENTRY(x16_tensor_g12, PROMOTED, TENSOR, , 12)
FP8_ENTRY(x16_block_g4, PROMOTED_STAGED, BLOCK, , 4)
FP8_ENTRY(x16_block_g6, PROMOTED_STAGED, BLOCK, , 6)
constexpr Shape STREAMED_B1{.bn = 128, .stages = 6, .cluster = 1, .bufs = 1, .stream = 1};
FP8_ENTRY(x16_tensor_b1s, STREAMED_B1, TENSOR, )
// Diagnostics (Cfg's PROBE): per-tensor promoted by FFMA, and per-tensor with the block form's staging.
FP8_ENTRY(x16_tensor_ffma, PROMOTED, TENSOR, , GROUP_M, true, 1, 1)
FP8_ENTRY(x16_tensor_staged, PROMOTED_STAGED, TENSOR, , GROUP_M, true, 1, 2)
// Staged scales read before the chunk's wgmmas are issued, not after (block, and the per-tensor diagnostic).
constexpr Shape STAGED_EARLY{.bn = 128, .stages = 6, .cluster = 1, .bufs = 1, .stream = 1, .staged_scales = 2};
FP8_ENTRY(x16_block_early, STAGED_EARLY, BLOCK, )
FP8_ENTRY(x16_tensor_stearly, STAGED_EARLY, TENSOR, , GROUP_M, true, 1, 2)
// Per-tensor, its scales staged by the second producer warp with no arrivals on the full barrier, never read.
FP8_ENTRY(x16_tensor_stnoarr, PROMOTED_STAGED, TENSOR, , GROUP_M, true, 1, 3)
// Block scales copied into the slot by the TMA thread (cp.async.bulk, a k-tile a trip: no spill in its 40
// registers): no second producer warp, no cp.async.  The scales' rows pitched to 16 bytes (CudaFp8BulkLaunch).
constexpr Shape STAGED_BULK{.bn = 128, .stages = 6, .cluster = 1, .bufs = 1, .stream = 1, .staged_scales = 3};
FP8_ENTRY(x16_block_bulk, STAGED_BULK, BLOCK, )
// The registered per-tensor kernel with the TMA-store epilogue only (no register-store paths: 5,512 SASS
// instructions against fp8_tensor's 14,272), to see whether the kernel's size costs instruction fetches.
constexpr Shape PROMOTED_TMA_ONLY{.bn = 128, .stages = 6, .cluster = 1, .bufs = 2, .stream = 1, .tma_only = 1};
FP8_ENTRY(x16_tensor_tmaonly, PROMOTED_TMA_ONLY, TENSOR, )
// One arrival a consumer warpgroup frees a slot (2 a slot, not 8), as CUTLASS's PipelineTmaAsync; the block form's
// warps first meet at a named barrier (each has read the slot's scales).
constexpr Shape PROMOTED_ARR1{.bn = 128, .stages = 6, .cluster = 1, .bufs = 2, .stream = 1, .arrivals = 1};
FP8_ENTRY(x16_tensor_arr1, PROMOTED_ARR1, TENSOR, )
constexpr Shape PROMOTED_ARR1_SYNC{.bn = 128, .stages = 6, .cluster = 1, .bufs = 2, .stream = 1, .arrivals = 2};
FP8_ENTRY(x16_tensor_arr1s, PROMOTED_ARR1_SYNC, TENSOR, )
constexpr Shape BULK_ARR1{.bn = 128, .stages = 6, .cluster = 1, .bufs = 1, .stream = 1, .staged_scales = 3,
                          .arrivals = 1};
FP8_ENTRY(x16_block_arr1, BULK_ARR1, BLOCK, )
// Streamed, in clusters of 2 along M multicasting B (cuBLAS's 128x128 kernel here runs in pairs).
constexpr Shape STREAMED_PAIRS{.bn = 128, .stages = 6, .cluster = 2, .bufs = 2, .stream = 1};
FP8_ENTRY(x16_tensor_stc2, STREAMED_PAIRS, TENSOR, PAIRS_OF_2)
// Streamed, and the next tile's first chunk issued before this tile's epilogue.
constexpr Shape STREAMED_2{.bn = 128, .stages = 6, .cluster = 1, .bufs = 2, .stream = 2};
FP8_ENTRY(x16_tensor_st2, STREAMED_2, TENSOR, )
FP8_ENTRY(x16_row_st2, STREAMED_2, ROW, )
FP8_ENTRY(x16_block_st2, STREAMED_2, BLOCK, )
// The registered kernels with the roles and ring waits as ptxas cannot prove warp-uniform (tid / 128, a C++ retry
// loop): each wgmma's descriptors pass through R2UR.
FP8_ENTRY(x16_tensor_div, PROMOTED, TENSOR, , GROUP_M, false)
FP8_ENTRY(x16_row_div, PROMOTED, ROW, , GROUP_M, false)
FP8_ENTRY(x16_block_div, PROMOTED, BLOCK, , GROUP_M, false)
FP8_ENTRY(x16_tcacc_div, WHOLE_K, TCACC, , GROUP_M_TCACC, false)
// Block scales loaded from global memory by the consumers, two chunks before their promotion (`global`), or one.
FP8_ENTRY(x16_block_global, PROMOTED, BLOCK, )
FP8_ENTRY(x16_block_ahead1, PROMOTED, BLOCK, , GROUP_M, true, 1)
// Staged scales with 5 slots and two D buffers a consumer.
constexpr Shape STAGED_5{.bn = 128, .stages = 5, .cluster = 1, .bufs = 2, .stream = 1, .staged_scales = 1};
FP8_ENTRY(x16_block_staged5, STAGED_5, BLOCK, )
constexpr Shape WHOLE_K_PAIRS{.bn = 256, .stages = 4, .cluster = 2, .bufs = 2};
FP8_ENTRY(x16_tcacc_c2, WHOLE_K_PAIRS, TCACC, PAIRS_OF_2, GROUP_M_TCACC)
#endif
