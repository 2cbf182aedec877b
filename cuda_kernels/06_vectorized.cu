// Stage 06 - vectorized (16-byte) access.
//
// Technique:   stage 05's block (256 threads, 128x128 tile of D, BK = 8, 8x8 outputs per thread), with
//              every wide access made one 16-byte instruction: a thread fetches 4 consecutive k of one row
//              of A and 4 consecutive columns of one row of B as float4 (LDG.E.128), stores A transposed in
//              shared memory (As[k][m]) so that the 4 rows a thread needs at one k are adjacent, reads its
//              A and B fragments with LDS.128, and writes D (and reads C when beta != 0) as float4.
// Reproduces:  seed 000 kernel 4 (float4 loads), seed 001 "vectorized access" (float4 loads of A and B, A
//              transposed into As[BK][BM], float4 epilogue).
// Changed:     (1) global loads: 4 scalar LDG of A and 4 of B per k-tile become 1 LDG.E.128 of each.
//              (2) A is transposed and XOR-swizzled on its way into shared memory (As[k][m ^ 4k]).
//              (3) a thread's 8x8 outputs are no longer one contiguous block: they are 2x2 blocks of 4x4,
//              rows tr*4 + {0, 64} and columns tc*4 + {0, 64} (tr = tid/16, tc = tid%16), so a warp's B
//              reads cover 64 consecutive words and its A reads 2 adjacent vectors.  (4) float4 epilogue.
// Why faster:  per warp-wide LDS.128 read, A touches 2 distinct vectors in distinct banks (1 wavefront) and
//              B 16 consecutive vectors (2, the minimum for 256 bytes): 48 wavefronts per k-tile where stage
//              05 needs 96.  And at 122 registers (stage 05: 164) two blocks fit on an SM, so one block's
//              barrier waits can be covered by the other's FMAs.  Prediction: 1.2-1.5x over stage 05 at
//              4096^3.  Measured: 36.4 TFLOP/s at 4096^3 on an H100, 1.64x stage 05 (reports/h100/results.csv).
//
// Ragged edges: a float4 that would run past K (A) or N (B), or lies in a row past M (A) or K (B), is
//              loaded as up to 4 masked scalars, the rest zeros, so no element outside a matrix is read.
//              Stores and C loads fall back to masked scalars where a float4 would run past N.  beta == 0
//              never reads C.
// Alignment:   sgemm_vectorized assumes 16-byte aligned A, B, C, D and leading dimensions that are
//              multiples of 4 (the launcher checks, study/registry.py), so every float4 that starts at a
//              multiple-of-4 column is aligned.  sgemm_vectorized_unaligned is the same template with
//              scalar global loads and stores, correct for any alignment.
#include "gemm_common.cuh"
#include "simt_tile.cuh"

namespace {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int THREADS = (BM / TM) * (BN / TN);   // 256
static_assert(BM * BK == 4 * THREADS && BK * BN == 4 * THREADS, "one float4 of A and of B per thread");

// Where A[m][k] of the tile lives in As[BK][BM].  XOR with 4k moves whole aligned 4-float groups, so a
// thread's 4 rows stay one 16-byte vector; it spreads the k rows of the transposing stores over the banks.
__device__ __forceinline__ int a_slot(int k, int m) { return k * BM + (m ^ (4 * k)); }

// n (0..4) consecutive floats from p, zeros after them.  The aligned entry loads all 4 at once.
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* p, int n) {
    if (VEC && n == 4) return *reinterpret_cast<const float4*>(p);
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (n > 0) v.x = p[0];
    if (n > 1) v.y = p[1];
    if (n > 2) v.z = p[2];
    if (n > 3) v.w = p[3];
    return v;
}

template <bool VEC>
__device__ __forceinline__ void sgemm_vectorized_impl(int M, int N, int K, float alpha,
                                                      const float* __restrict__ A, idx_t lda,
                                                      const float* __restrict__ B, idx_t ldb, float beta,
                                                      const float* __restrict__ C, idx_t ldc,
                                                      float* __restrict__ D, idx_t ldd) {
    __shared__ __align__(16) float As[BK * BM];   // transposed, swizzled: see a_slot
    __shared__ __align__(16) float Bs[BK * BN];

    const int tid = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    // Outputs: rows tr*4 + 64h + i, columns tc*4 + 64g + j of the block tile (h, g in {0, 1}; i, j < 4).
    const int tr = tid / 16, tc = tid % 16;

    // The copy map: A[a_row][a_k .. a_k+3] (a warp: 16 rows x 32 bytes) and B[b_k][b_col .. b_col+3]
    // (a warp: 512 consecutive bytes of one row).  Out-of-range sources point at the matrix base.
    const int a_row = tid / 2, a_k = (tid % 2) * 4;
    const int b_k = tid / 32, b_col = (tid % 32) * 4;
    const bool a_row_ok = m0 + a_row < M;
    const int b_cols = max(0, min(4, N - (n0 + b_col)));   // how many of this thread's 4 columns exist
    const float* a_src = a_row_ok ? A + (idx_t)(m0 + a_row) * lda + a_k : A;
    const float* b_src = b_cols > 0 ? B + (idx_t)b_k * ldb + n0 + b_col : B;

    float acc[TM][TN];
    zero_tile(acc);

    for (int k0 = 0; k0 < K; k0 += BK) {
        const int a_n = a_row_ok ? max(0, min(4, K - (k0 + a_k))) : 0;
        const int b_n = k0 + b_k < K ? b_cols : 0;
        const float4 a = load4<VEC>(a_n > 0 ? a_src + k0 : A, a_n);
        const float4 b = load4<VEC>(b_n > 0 ? b_src + (idx_t)k0 * ldb : B, b_n);
        As[a_slot(a_k + 0, a_row)] = a.x;
        As[a_slot(a_k + 1, a_row)] = a.y;
        As[a_slot(a_k + 2, a_row)] = a.z;
        As[a_slot(a_k + 3, a_row)] = a.w;
        *reinterpret_cast<float4*>(&Bs[b_k * BN + b_col]) = b;
        __syncthreads();

        // Per k: A's rows tr*4 + 64h and B's columns tc*4 + 64g, one LDS.128 each, then their 64 FMAs.
        float af[TM], bf[TN];
        multiply_tile<BK>(acc, af, bf, [&](int k, int h) { return &As[a_slot(k, tr * 4 + 64 * h)]; },
                          [&](int k, int g) { return &Bs[k * BN + tc * 4 + 64 * g]; });
        __syncthreads();  // the next iteration overwrites tiles that other threads may still be reading
    }

    store_tile<VEC, 64, 64>(acc, m0, tr * 4, n0, tc * 4, M, N, alpha, beta, C, ldc, D, ldd);
}

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_vectorized(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                 const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc,
                 float* __restrict__ D, idx_t ldd) {
    sgemm_vectorized_impl<true>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);
}

extern "C" __global__ void __launch_bounds__(THREADS)
sgemm_vectorized_unaligned(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                           const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C,
                           idx_t ldc, float* __restrict__ D, idx_t ldd) {
    sgemm_vectorized_impl<false>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);
}
STUDY_TWIN_FACTS(sgemm_vectorized, BM, BN, THREADS, 0)
