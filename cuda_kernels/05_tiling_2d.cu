// Stage 05 - 2D block tiling.
//
// Technique:   a block of 256 threads owns a 128x128 tile of D and walks K in steps of BK = 8, staging a
//              128x8 tile of A and an 8x128 tile of B in shared memory (4 elements of each per thread).
//              Each thread owns an 8x8 block of outputs: per k it reads 8 values of A (a column of its
//              rows) and 8 of B (a row of its columns) into registers and does their outer product, 64 FMAs.
// Reproduces:  seed 000 kernel 3 (2D tiling + thread coarsening), seed 001 "2D BlockTiling" (the same
//              BM = BN = 128, BK = 8, TM = TN = 8, and the same row-major layouts in shared memory).
// Changed:     stage 04 reused each B value for 8 FMAs but loaded a fresh one for every column; with an
//              8x8 tile each A value is reused 8 times and each B value 8 times, so a thread reads 16 words
//              of shared memory per 64 FMAs (stage 04: 72).  The tile is 4x larger (128x128), so each
//              element fetched from global memory feeds 128 FMAs instead of 64.
// Why faster:  shared-memory bandwidth per FMA halves again and global traffic halves.  Prediction: 1.5-2x
//              over stage 04 at 4096^3.  The cost: 64 accumulators plus 16 operands per thread in registers,
//              and 8 KiB of shared tiles per block.  Measured: 22.2 TFLOP/s at 4096^3 on an H100, 1.31x
//              stage 04 (reports/h100/results.csv).
//
// Ragged edges: tiles that hang over M, N or K are zero-filled when loaded, and only in-range outputs are
//              stored; beta == 0 never reads C (gemm_epilogue).
// Bank use:     left as the seeds have it, for stage 06 to fix.  nvcc fuses the reads into 16-byte loads
//              (SASS: 32 LDS.128 per 512 FFMA per k-tile; it loads all 64 A values of a k-tile up front,
//              hence 164 registers and one block per SM).  Predictions, per warp-wide LDS.128: A reads 2
//              distinct vectors 64 words apart, in the same banks (2 wavefronts where 1 would do); B reads
//              16 distinct vectors 8 words apart, which fall in only 4 of the 8 four-bank groups (4
//              wavefronts where 2 would do): 96 wavefronts per k-tile where 48 would do.  ncu confirms it
//              (reports/h100/profile.csv: 268M of 671M shared-load wavefronts are conflicts).
#include "gemm_common.cuh"
#include "simt_tile.cuh"

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int THREADS = (BM / TM) * (BN / TN);   // 256
constexpr int A_LOADS = BM * BK / THREADS;       // 4 elements of A and of B per thread per k-step
constexpr int B_LOADS = BK * BN / THREADS;
constexpr int A_ROW_STEP = THREADS / BK;         // 32: rows between one thread's A elements
constexpr int B_K_STEP = THREADS / BN;           // 2: k rows between one thread's B elements
static_assert(THREADS % BK == 0 && THREADS % BN == 0 && A_LOADS * THREADS == BM * BK, "even copy split");
}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_tiling_2d(int M, int N, int K, float alpha,
                const float* __restrict__ A, idx_t lda,
                const float* __restrict__ B, idx_t ldb, float beta,
                const float* __restrict__ C, idx_t ldc,
                float* __restrict__ D, idx_t ldd) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    // This thread's outputs: rows tr*8 .. tr*8+7, columns tc*8 .. tc*8+7 of the block tile.
    const int tr = tid / (BN / TN), tc = tid % (BN / TN);

    // The copy map: A[a_row + 32 r][a_k] (a warp: 4 rows x 8 k, four 32-byte segments) and
    // B[b_k + 2 r][b_col] (a warp: 32 consecutive columns of one row).
    const int a_row = tid / BK, a_k = tid % BK;
    const int b_k = tid / BN, b_col = tid % BN;
    const bool b_col_ok = n0 + b_col < N;
    // Rows past M and columns past N point at the matrix base and are never dereferenced.
    const float* a_src[A_LOADS];
    bool a_ok[A_LOADS];
#pragma unroll
    for (int r = 0; r < A_LOADS; ++r) {
        const int row = m0 + a_row + A_ROW_STEP * r;
        a_ok[r] = row < M;
        a_src[r] = a_ok[r] ? A + (idx_t)row * lda + a_k : A;
    }
    const float* b_src = b_col_ok ? B + (idx_t)b_k * ldb + n0 + b_col : B;

    float acc[TM][TN];
    zero_tile(acc);

    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool a_k_ok = k0 + a_k < K;
#pragma unroll
        for (int r = 0; r < A_LOADS; ++r)
            As[a_row + A_ROW_STEP * r][a_k] = (a_ok[r] && a_k_ok) ? a_src[r][k0] : 0.0f;
#pragma unroll
        for (int r = 0; r < B_LOADS; ++r)
            Bs[b_k + B_K_STEP * r][b_col] =
                (k0 + b_k + B_K_STEP * r < K && b_col_ok) ? b_src[(idx_t)(k0 + B_K_STEP * r) * ldb] : 0.0f;
        __syncthreads();

#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) a[i] = As[tr * TM + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j) b[j] = Bs[k][tc * TN + j];
            outer_product(acc, a, b);
        }
        __syncthreads();  // the next iteration overwrites tiles that other threads may still be reading
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const idx_t r = m0 + tr * TM + i;
        if (r >= M) break;   // rows only grow with i
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const idx_t c = n0 + tc * TN + j;
            if (c < N) D[r * ldd + c] = gemm_epilogue(acc[i][j], alpha, beta, C, ldc, r, c);
        }
    }
}
STUDY_ENTRY_FACTS(sgemm_tiling_2d, BM, BN, THREADS, 0)
