// Stage 07 - a multi-stage cp.async pipeline.
//
// Technique:   stage 06's block (256 threads, 128x128 tile of D, BK = 8, 8x8 outputs per thread, the same
//              shared layouts and fragment reads), but shared memory is now a ring of STAGES = 4 slots
//              filled by cp.async, which copies global -> shared without a trip through registers and
//              without stalling the thread that issued it.  While the block computes k-tile kt, the copies
//              of tiles kt+1 .. kt+3 are in flight.  Each tile is one cp.async group; wait_group tells a
//              thread when its own copies of a tile have landed, and one __syncthreads per k-tile makes
//              everyone's copies visible.
// Reproduces:  seed 000 kernel 5 (N-stage asynchronous pipeline, 4 stages).
// Changed:     stage 06 loaded a tile into registers, stored it to shared memory, synchronised, computed and
//              synchronised again, so every k-tile paid a full global-memory latency with nothing else to
//              do (hidden only by a second block on the SM).  Now: 3 tiles in flight, 1 barrier per tile
//              instead of 2, no registers held for loads.  The A tile is still stored transposed and
//              swizzled (As[k][m ^ 4k]); cp.async cannot transpose a 16-byte vector, so A moves as 4-byte
//              copies (cp.async.ca, 4 per thread per tile) and B as one 16-byte copy (cp.async.cg).
// Why faster:  stage 06 runs 2 blocks of 8 warps per SM and each block stalls on global latency once per
//              k-tile.  Prediction: 1.1-1.3x over stage 06 at 4096^3.  Measured: 36.4 TFLOP/s at 4096^3 on
//              an H100, level with stage 06 (reports/h100/results.csv): the 4-byte copies of A and their
//              address work cost about what the pipeline won.
//
// Ragged edges: a copy whose source is outside A or B (past M, N or K) has src-size 0, so cp.async writes
//              zeros, and its source pointer is the matrix base, so no out-of-range address is formed.  A
//              16-byte chunk of B that straddles N goes as four 4-byte copies, the missing words with
//              src-size 0 (so no byte past the matrix is read, as compute-sanitizer initcheck sees it).
//              Stores are masked as in stage 06; beta == 0 never reads C.
// Alignment:   sgemm_cp_async assumes 16-byte aligned A, B, C, D and leading dimensions that are multiples
//              of 4 (the launcher checks); sgemm_cp_async_unaligned is the same template with four 4-byte
//              copies instead of each 16-byte one and a scalar epilogue.  A always moves 4 bytes at a time.
// Bank use:     (prediction, unmeasured: ncu's shared-store conflict counter does not see cp.async's LDGSTS)
//              a warp's 4-byte copies of A cover 4 rows x 8 k; the swizzle puts them in 32 distinct banks.
//              The fragment reads are stage 06's: ncu counted no shared-load conflicts (docs/07_cp_async.md).
#include "gemm_common.cuh"
#include "async_copy.cuh"
#include "simt_tile.cuh"

namespace {
using namespace async_copy;

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, STAGES = 4;
constexpr int THREADS = (BM / TM) * (BN / TN);   // 256
constexpr int A_FLOATS = BK * BM, B_FLOATS = BK * BN, STAGE_FLOATS = A_FLOATS + B_FLOATS;
constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;   // 32 KiB of dynamic shared memory (exported below)
constexpr int A_COPIES = BM * BK / THREADS;             // 4 single-float copies of A per thread per tile
static_assert((STAGES & (STAGES - 1)) == 0, "ring index by mask");
static_assert(BK * BN == 4 * THREADS, "one 16-byte chunk of B per thread per tile");

// Where A[m][k] of a tile lives in its As[BK][BM] slot (stage 06's swizzle).
__device__ __forceinline__ int a_slot(int k, int m) { return k * BM + (m ^ (4 * k)); }

// One thread's share of every tile's copies, with the per-block address work done once.
// A: rows a_row + 32 r (r < 4), column a_k of the tile (a warp: 4 rows x 8 k, four 32-byte segments).
// B: row b_k, columns b_col .. b_col+3 (a warp: 512 consecutive bytes of one row).
template <bool VEC>
struct TileCopier {
    const float* A;
    const float* B;
    idx_t ldb;
    idx_t a_off[A_COPIES];   // element offsets of A[row][a_k]; -1 where the row is past M
    idx_t b_off;             // element offset of B[b_k][b_col]
    int b_cols;              // how many of the 4 columns exist (0..4)
    int a_dst[A_COPIES], b_dst, a_k, b_k;

    __device__ __forceinline__ TileCopier(const float* A_, idx_t lda, const float* B_, idx_t ldb_,
                                          int M, int N, int m0, int n0, int tid)
        : A(A_), B(B_), ldb(ldb_) {
        a_k = tid % BK;
#pragma unroll
        for (int r = 0; r < A_COPIES; ++r) {
            const int row = tid / BK + (THREADS / BK) * r;
            a_off[r] = m0 + row < M ? (idx_t)(m0 + row) * lda + a_k : -1;
            a_dst[r] = a_slot(a_k, row);
        }
        b_k = tid / (BN / 4);
        const int col = 4 * (tid % (BN / 4));
        b_cols = max(0, min(4, N - (n0 + col)));
        b_off = (idx_t)b_k * ldb + n0 + col;
        b_dst = b_k * BN + col;
    }

    // Issues the copies of k-tile [k0, k0 + BK) into ring slot `slot`; out-of-range elements become 0.
    __device__ __forceinline__ void load(float* slot, int K, int k0) const {
        float* As = slot;
        float* Bs = slot + A_FLOATS;
        const bool a_k_ok = a_k < K - k0;
#pragma unroll
        for (int r = 0; r < A_COPIES; ++r) {
            const bool ok = a_k_ok && a_off[r] >= 0;
            cp4(&As[a_dst[r]], ok ? A + a_off[r] + k0 : A, ok);
        }
        const int n = b_k < K - k0 ? b_cols : 0;         // words of this chunk that exist
        const idx_t off = b_off + (idx_t)k0 * ldb;
        // A partial chunk goes word by word: a 16-byte cp.async with src-size < 16 reads only src-size
        // bytes, but initcheck counts all 16 as read, and past the matrix's end they are uninitialized.
        if (VEC && n == 4) {
            cp16(&Bs[b_dst], B + off, 16);
        } else {
#pragma unroll
            for (int c = 0; c < 4; ++c) cp4(&Bs[b_dst + c], c < n ? B + off + c : B, c < n);
        }
    }
};

template <bool VEC>
__device__ __forceinline__ void sgemm_cp_async_impl(int M, int N, int K, float alpha,
                                                    const float* __restrict__ A, idx_t lda,
                                                    const float* __restrict__ B, idx_t ldb, float beta,
                                                    const float* __restrict__ C, idx_t ldc,
                                                    float* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(16) float smem[];   // STAGES slots of [As | Bs], SMEM_BYTES in all

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tr = tid / 16, tc = tid % 16;          // outputs as in stage 06
    const TileCopier<VEC> copier(A, lda, B, ldb, M, N, m0, n0, tid);
    const int k_tiles = (K + BK - 1) / BK;

    float acc[TM][TN];
    zero_tile(acc);

    // Prologue: tiles 0 .. STAGES-2 in flight.  Every step commits exactly one group, empty or not, so
    // that tile t is always group t and "at most STAGES-2 groups pending" always means tile kt has landed.
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) copier.load(smem + s * STAGE_FLOATS, K, s * BK);
        commit();
    }

    for (int kt = 0; kt < k_tiles; ++kt) {
        wait_group<STAGES - 2>();
        // This barrier does two jobs: every thread's copies of tile kt are now visible, and every thread
        // has finished computing tile kt-1, whose slot the copy issued just below overwrites.
        __syncthreads();
        const int next = kt + STAGES - 1;
        if (next < k_tiles) copier.load(smem + (next & (STAGES - 1)) * STAGE_FLOATS, K, next * BK);
        commit();

        const float* As = smem + (kt & (STAGES - 1)) * STAGE_FLOATS;
        const float* Bs = As + A_FLOATS;
        float af[TM], bf[TN];
        multiply_tile<BK>(acc, af, bf, [&](int k, int h) { return &As[a_slot(k, tr * 4 + 64 * h)]; },
                          [&](int k, int g) { return &Bs[k * BN + tc * 4 + 64 * g]; });
    }
    wait_group<0>();   // only empty groups remain, but no copy may outlive the block's shared memory

    store_tile<VEC, 64, 64>(acc, m0, tr * 4, n0, tc * 4, M, N, alpha, beta, C, ldc, D, ldd);
}

}  // namespace

// Dynamic shared memory: SMEM_BYTES = 32768, exported with the tile and block size (STUDY_TWIN_FACTS below).
extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_cp_async(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
               const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc,
               float* __restrict__ D, idx_t ldd) {
    sgemm_cp_async_impl<true>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);
}

extern "C" __global__ void __launch_bounds__(THREADS, 2)
sgemm_cp_async_unaligned(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                         const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C,
                         idx_t ldc, float* __restrict__ D, idx_t ldd) {
    sgemm_cp_async_impl<false>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);
}
STUDY_TWIN_FACTS(sgemm_cp_async, BM, BN, THREADS, SMEM_BYTES)
