// Stage 08 - warp specialization.
//
// Technique:   the block is 9 warps.  Warps 0-7 (256 threads) are consumers: exactly stage 07's 8x8-per-
//              thread compute on a 128x128 tile of D, reading the same swizzled ring slots.  Warp 8 is the
//              producer: it alone issues every cp.async of every k-tile into a ring of STAGES = 4 slots.
//              Slots are handed over through two mbarriers each.  full[s] completes when the producer's
//              copies into slot s have landed (each producer lane's cp.async.mbarrier.arrive.noinc fires
//              when its own copies complete: 32 arrivals).  empty[s] completes when all 256 consumer
//              threads have finished reading slot s (one arrival each: with one arrival per warp after
//              __syncwarp, compute-sanitizer racecheck reported the producer's refill racing lanes 1-31).  Nobody calls
//              __syncthreads inside the k loop: a consumer warp waits only for the tile it needs, and the
//              producer waits only for a slot to come free, so warps may drift up to 4 tiles apart.
// Reproduces:  seed 000 kernel 6 (one producer warp feeding consumer warps through a block-scoped
//              pipeline), with the pipeline written directly as PTX mbarriers instead of cuda::pipeline.
// Changed:     stage 07 had every thread copy a share of each tile and the whole block meet at one
//              __syncthreads per k-tile.  Now the copies (40 cp.async per k-tile: 32 of A, 8 of B; 64 in
//              the unaligned entry) and their address arithmetic all run on warp 8, and the barrier is
//              replaced by per-slot full/empty handshakes.  Copy maps, swizzle and shared layout as 07.
// Why faster:  it may not be (seed 000 found kernel 6 slower than kernel 5 on an L4).  Prediction: 0.85-1.0x
//              of stage 07 at 4096^3: the kernel is FMA-issue-bound, not latency-bound; the producer's
//              instructions all load one of the SM's 4 schedulers; and 2 blocks of 288 threads cap registers
//              at 96 (stage 07: 128).  What could still win: no block-wide barrier, so one slow warp no longer
//              stalls the other 7.  Measured: 38.6 TFLOP/s at 4096^3 on an H100, 1.06x stage 07
//              (reports/h100/results.csv).
//
// Ragged edges: as stage 07: out-of-range copies have src-size 0 (zero-filled) and point at the matrix
//              base; a 16-byte chunk of B that straddles N goes as four 4-byte copies; stores are
//              masked; beta == 0 never reads C.  Every consumer warp takes part in every k-tile, even where
//              its outputs are out of range, so the barrier counts never depend on the shape.
// Alignment:   sgemm_warp_specialized assumes 16-byte aligned A, B, C, D and leading dimensions that are
//              multiples of 4 (the launcher checks); sgemm_warp_specialized_unaligned is the same template
//              with 4-byte copies of B and a scalar epilogue.
#include "gemm_common.cuh"
#include "async_copy.cuh"
#include "simt_tile.cuh"

namespace {
using namespace async_copy;

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, STAGES = 4;
constexpr int CONSUMERS = (BM / TM) * (BN / TN);        // 256: 8 consumer warps
constexpr int CONSUMER_WARPS = CONSUMERS / 32;
constexpr int THREADS = CONSUMERS + 32;                 // + 1 producer warp = 288
constexpr int A_FLOATS = BK * BM, B_FLOATS = BK * BN, STAGE_FLOATS = A_FLOATS + B_FLOATS;
constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;   // 32 KiB of dynamic shared memory (exported below)
constexpr int A_COPIES = BM * BK / 32;                  // 32 single-float copies of A per producer lane
constexpr int B_CHUNKS = BK * BN / 4 / 32;              // 8 16-byte chunks of B per producer lane
static_assert((STAGES & (STAGES - 1)) == 0, "ring index by mask");
static_assert(BN == 128 && BK * 4 == 32, "producer maps: a B row is 32 lanes x 4 floats, an A row 8 k");

// Where A[m][k] of a tile lives in its As[BK][BM] slot (stage 06's swizzle).
__device__ __forceinline__ int a_slot(int k, int m) { return k * BM + (m ^ (4 * k)); }

// The producer warp's share of the work: all copies of every k-tile.  A: lane copies A[a_row + 4 i][a_k]
// for i < 32 (a_row = lane/8, a_k = lane%8; each instruction moves 4 rows x 8 k, four 32-byte segments,
// into 32 distinct banks after the swizzle).  B: lane copies row i < 8 of the tile, columns 4 lane ..
// 4 lane + 3 (each instruction moves 512 consecutive bytes of one row).  Everything that does not change
// from tile to tile is worked out once, so an interior tile costs about 3 instructions per copy.
template <bool VEC>
struct Producer {
    const float* A;
    const float* B;
    idx_t lda, ldb;
    idx_t a_off;       // element offset of A[m0 + a_row][a_k]; meaningful only for rows that exist
    idx_t b_off;       // element offset of B[0][n0 + 4 lane]
    int a_dst[8];      // As offset of copy i is a_dst[i % 8] + 32 (i / 8): the swizzle, precomputed
    int a_rows;        // copies i < a_rows have a row inside M
    int a_k, b_cols, b_dst;
    bool interior;     // the block tile lies inside M and N: only the K edge needs checks

    __device__ __forceinline__ Producer(const float* A_, idx_t lda_, const float* B_, idx_t ldb_,
                                        int M, int N, int m0, int n0, int lane)
        : A(A_), B(B_), lda(lda_), ldb(ldb_) {
        const int a_row = lane / 8;
        a_k = lane % 8;
        a_off = (idx_t)(m0 + a_row) * lda + a_k;
        a_rows = max(0, (M - m0 - a_row + 3) / 4);
#pragma unroll
        for (int j = 0; j < 8; ++j) a_dst[j] = a_slot(a_k, a_row + 4 * j);   // a_row < 4: see a_slot
        const int col = 4 * lane;
        b_cols = max(0, min(4, N - (n0 + col)));
        b_off = n0 + col;
        b_dst = col;
        interior = M - m0 >= BM && N - n0 >= BN;
    }

    // Copies k-tile [k0, k0 + BK) into `slot`.  CHECKED = false: every element exists (interior tile).
    template <bool CHECKED>
    __device__ __forceinline__ void tile(float* slot, int K, int k0) const {
        float* As = slot;
        float* Bs = slot + A_FLOATS;
        const bool a_k_ok = !CHECKED || a_k < K - k0;
        const idx_t a = a_off + k0;                        // offsets; a pointer is formed only in range
#pragma unroll
        for (int i = 0; i < A_COPIES; ++i) {
            const bool ok = !CHECKED || (a_k_ok && i < a_rows);
            cp4(&As[a_dst[i % 8] + 32 * (i / 8)], ok ? A + a + (idx_t)(4 * i) * lda : A, ok);
        }
        const idx_t b = b_off + (idx_t)k0 * ldb;
#pragma unroll
        for (int i = 0; i < B_CHUNKS; ++i) {
            const int n = !CHECKED ? 4 : (i < K - k0 ? b_cols : 0);   // words of the chunk that exist
            float* dst = &Bs[i * BN + b_dst];
            if (VEC && n == 4) {          // partial chunks word by word: see stage 07's copier
                cp16(dst, B + b + (idx_t)i * ldb, 16);
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c) cp4(dst + c, c < n ? B + b + (idx_t)i * ldb + c : B, c < n);
            }
        }
    }
};

template <bool VEC>
__device__ __forceinline__ void sgemm_warp_specialized_impl(int M, int N, int K, float alpha,
                                                            const float* __restrict__ A, idx_t lda,
                                                            const float* __restrict__ B, idx_t ldb,
                                                            float beta, const float* __restrict__ C,
                                                            idx_t ldc, float* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(16) float smem[];       // STAGES slots of [As | Bs], SMEM_BYTES in all
    __shared__ __align__(8) uint64_t full[STAGES];      // slot s holds its next tile
    __shared__ __align__(8) uint64_t empty[STAGES];     // every consumer warp is done with slot s

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int k_tiles = (K + BK - 1) / BK;

    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 32);                 // one copy-completion arrival per producer lane
            mbar_init(&empty[s], CONSUMERS);         // one arrival per consumer thread
        }
    }
    __syncthreads();   // the only block-wide barrier: the mbarriers exist before anyone uses them

    if (warp == CONSUMER_WARPS) {
        // Producer.  Tile kt goes to slot kt % STAGES; its u-th use (u = kt / STAGES) must wait until the
        // consumers have released use u-1, i.e. until phase u-1 of empty[s] has completed.
        const Producer<VEC> producer(A, lda, B, ldb, M, N, m0, n0, lane);
        for (int kt = 0; kt < k_tiles; ++kt) {
            const int s = kt & (STAGES - 1), u = kt / STAGES;
            if (u > 0) mbar_wait(&empty[s], (u - 1) & 1);
            float* slot = smem + s * STAGE_FLOATS;
            if (producer.interior && K - kt * BK >= BK)
                producer.template tile<false>(slot, K, kt * BK);
            else
                producer.template tile<true>(slot, K, kt * BK);
            mbar_arrive_on_copies(&full[s]);   // fires when this lane's copies above have landed
        }
        wait_all();   // the consumers cannot finish before every copy lands, but leave nothing in flight
        return;
    }

    // Consumers: outputs as in stage 06 (rows tr*4 + 64h + i, columns tc*4 + 64g + j).
    const int tr = tid / 16, tc = tid % 16;
    float acc[TM][TN];
    zero_tile(acc);

    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt & (STAGES - 1);
        mbar_wait(&full[s], (kt / STAGES) & 1);   // phase kt / STAGES of full[s] is tile kt
        const float* As = smem + s * STAGE_FLOATS;
        const float* Bs = As + A_FLOATS;
        // This thread's last read of slot s is done at k = BK-1: it releases the slot there, before the FMAs
        // (the arrive orders the reads first).
        float af[TM], bf[TN];
        multiply_tile<BK>(acc, af, bf, [&](int k, int h) { return &As[a_slot(k, tr * 4 + 64 * h)]; },
                          [&](int k, int g) { return &Bs[k * BN + tc * 4 + 64 * g]; },
                          [&](int k) { if (k == BK - 1) mbar_arrive(&empty[s]); });
    }

    store_tile<VEC, 64, 64>(acc, m0, tr * 4, n0, tc * 4, M, N, alpha, beta, C, ldc, D, ldd);
}

}  // namespace

// Block: 288 threads (8 consumer warps + 1 producer warp).  Dynamic shared memory: SMEM_BYTES = 32768
// (exported with the tile and block size, STUDY_TWIN_FACTS below), plus 64 bytes of static shared memory for
// the mbarriers.
extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_warp_specialized(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                       const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C,
                       idx_t ldc, float* __restrict__ D, idx_t ldd) {
    sgemm_warp_specialized_impl<true>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_warp_specialized_unaligned(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                                 const float* __restrict__ B, idx_t ldb, float beta,
                                 const float* __restrict__ C, idx_t ldc, float* __restrict__ D, idx_t ldd) {
    sgemm_warp_specialized_impl<false>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);
}
STUDY_TWIN_FACTS(sgemm_warp_specialized, BM, BN, THREADS, SMEM_BYTES)
