// Stage 04 - 1D block tiling + thread coarsening.
//
// Technique:   a block of 512 threads owns a 64x64 tile of D and walks K in steps of BK = 8.  Per step it
//              stages a 64x8 tile of A and an 8x64 tile of B in shared memory (one element per thread
//              each).  Each thread then computes TM = 8 outputs stacked down one column: per k it reads one
//              B value into a register and uses it for 8 FMAs against 8 values of A.
// Reproduces:  seed 000 kernel 2 (tiling + thread coarsening), seed 001 "1D BlockTiling" (the same
//              BM = BN = 64, BK = 8, TM = 8).
// Changed:     stage 03 gave each thread one output, so every FMA needed two shared loads (one of A, one
//              of B).  Here one B load feeds 8 FMAs, and the A values are the same for a whole warp (a
//              broadcast).  With the k loop unrolled, nvcc fuses each A row's 8 k values into two 16-byte
//              loads: the SASS has 8 LDS + 16 LDS.128 per 64 FFMA, 0.375 shared loads per FMA against 2.
//              The accumulators live in registers (acc[TM], fully unrolled).
// Why faster:  stage 03 measured as bound by shared-memory loads (docs/03_smem_tiling.md).  Prediction: 2-3x
//              over stage 03 at 4096^3.  Measured: 16.9 TFLOP/s at 4096^3 on an H100, 2.0x stage 03
//              (reports/h100/results.csv).
//
// Ragged edges: tiles that hang over M, N or K are zero-filled when loaded (zeros add nothing), and only
//              in-range outputs are stored; beta == 0 never reads C (gemm_epilogue).
// Bank use:     As[row][k] is read at one address per warp (all 32 lanes share their rows: a broadcast);
//              Bs[k][col] is 32 consecutive words.  The stores to shared memory are 32 consecutive words
//              per warp.  Prediction: no bank conflicts.  ncu (reports/h100/profile.csv): the loads are
//              conflict-free, the stores nearly so.
#include "gemm_common.cuh"

namespace {
constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int THREADS = BM * BN / TM;   // 512: one thread per column strip of TM outputs
static_assert(THREADS == BM * BK && THREADS == BK * BN, "one element of each tile per thread");
}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_tiling_1d(int M, int N, int K, float alpha,
                const float* __restrict__ A, idx_t lda,
                const float* __restrict__ B, idx_t ldb, float beta,
                const float* __restrict__ C, idx_t ldc,
                float* __restrict__ D, idx_t ldd) {
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    // The output strip: rows strip*TM .. strip*TM+7 of column col.  A warp is 32 columns of one strip.
    const int col = tid % BN, strip = tid / BN;
    // The copy map: a warp copies 4 rows x 8 k of A (four 32-byte segments) and 32 columns of one B row.
    const int a_row = tid / BK, a_k = tid % BK;
    const int b_k = tid / BN, b_col = tid % BN;
    const bool a_row_ok = m0 + a_row < M, b_col_ok = n0 + b_col < N;
    // Out-of-range rows/columns point at the matrix base and are never dereferenced.
    const float* a_src = a_row_ok ? A + (idx_t)(m0 + a_row) * lda + a_k : A;
    const float* b_src = b_col_ok ? B + (idx_t)b_k * ldb + n0 + b_col : B;

    float acc[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) acc[i] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += BK) {
        As[a_row][a_k] = (a_row_ok && k0 + a_k < K) ? a_src[k0] : 0.0f;
        Bs[b_k][b_col] = (k0 + b_k < K && b_col_ok) ? b_src[(idx_t)k0 * ldb] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float b = Bs[k][col];   // one shared load, TM uses
#pragma unroll
            for (int i = 0; i < TM; ++i) acc[i] = fmaf(As[strip * TM + i][k], b, acc[i]);
        }
        __syncthreads();  // the next iteration overwrites tiles that other threads may still be reading
    }

    const idx_t c = n0 + col;
    if (c >= N) return;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const idx_t r = m0 + strip * TM + i;
        if (r < M) D[r * ldd + c] = gemm_epilogue(acc[i], alpha, beta, C, ldc, r, c);
    }
}
STUDY_ENTRY_FACTS(sgemm_tiling_1d, BM, BN, THREADS, 0)
