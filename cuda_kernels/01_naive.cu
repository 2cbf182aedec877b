// Stage 01 - naive SGEMM: one thread per output element.
//
// Technique:   every thread computes one D[row, col] as a K-long dot product, reading A and B straight
//              from global memory.  No reuse is arranged; whatever the caches catch is luck.
// Reproduces:  seed 001 "SimpleGEMM" (threadIdx.x walks rows), seed 004 MatrixMulKernel, seed 000 kernel 1.
// Changed:     nothing; this is the floor of the ladder.
// Why slow:    threadIdx.x indexes the *row*, so the 32 threads of a warp read A[row..row+31, k]: 32
//              addresses K floats apart, i.e. 32 separate 32-byte sectors per load instruction, and store
//              D with the same stride.  Each FMA needs 8 bytes from memory (seed 004: "4 B per FLOP"), so
//              even perfectly coalesced this would be bandwidth-bound; uncoalesced it is far worse.
//
// Ragged edges: the guard `row < M && col < N` covers any M, N; the K loop has no tiles, so any K works.
#include "gemm_common.cuh"

extern "C" __global__ void sgemm_naive(int M, int N, int K, float alpha,
                                       const float* __restrict__ A, idx_t lda,
                                       const float* __restrict__ B, idx_t ldb, float beta,
                                       const float* __restrict__ C, idx_t ldc,
                                       float* __restrict__ D, idx_t ldd) {
    const idx_t row = (idx_t)blockIdx.x * blockDim.x + threadIdx.x;
    const idx_t col = (idx_t)blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;

    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(A[row * lda + k], B[(idx_t)k * ldb + col], acc);
    D[row * ldd + col] = gemm_epilogue(acc, alpha, beta, C, ldc, row, col);
}

// Launched as 32x32 blocks, one thread per element of a 32x32 tile of D (grid.x walks M).
STUDY_ENTRY_FACTS(sgemm_naive, 32, 32, 32 * 32, 0)
