// Stage 03 - shared-memory tiling.
//
// Technique:   a 32x32 thread block owns a 32x32 tile of D.  It walks K in steps of 32: all 1024 threads
//              copy one element each of a 32x32 tile of A and of B into shared memory, synchronise, and
//              then every thread runs 32 FMAs out of shared memory.
// Reproduces:  seed 004 (tiled matrix multiplication, TILE_WIDTH, boundary handling), seed 001 "CacheGEMM".
// Changed:     stage 02 fetched every operand from global memory (L1/L2 if lucky); now each element of A and
//              B loaded from global memory is reused by 32 threads from shared memory.
// Why faster:  global traffic falls 32x (seed 004: from 4 B/FLOP to 4/TILE B/FLOP), so the kernel moves
//              from DRAM/L2-bound towards shared-memory-bound.  Seed 001: 887 -> 1267 GFLOP/s.
//
// Ragged edges: tiles that hang over M, N or K are zero-filled when loaded (zeros add nothing to the dot
//              product), and only in-range outputs are stored - the seed 004 boundary scheme, for any size.
// Bank use:     As[ty][k] is the same word for a whole warp (broadcast); Bs[k][tx] is 32 consecutive words
//              (32 banks), so the loads cannot conflict, and no padding is used.  ncu at 4096^3
//              (reports/h100/profile.csv): 0.47M load conflicts on 3.2G load wavefronts (0.01%).  The
//              stores As[ty][tx] and Bs[ty][tx] are 32 consecutive words per warp as well, yet ncu counts
//              20.4M store conflicts on 155M store wavefronts (13%); the address pattern does not explain
//              them, and they were not investigated further.
#include "gemm_common.cuh"

#define TILE 32

extern "C" __global__ void __launch_bounds__(TILE * TILE)
sgemm_smem_tiling(int M, int N, int K, float alpha,
                  const float* __restrict__ A, idx_t lda,
                  const float* __restrict__ B, idx_t ldb, float beta,
                  const float* __restrict__ C, idx_t ldc,
                  float* __restrict__ D, idx_t ldd) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const idx_t row = (idx_t)blockIdx.y * TILE + ty;
    const idx_t col = (idx_t)blockIdx.x * TILE + tx;

    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Each thread loads A[row, k0+tx] and B[k0+ty, col]: both coalesced along threadIdx.x.
        As[ty][tx] = (row < M && k0 + tx < K) ? A[row * lda + k0 + tx] : 0.0f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(idx_t)(k0 + ty) * ldb + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();  // the next iteration overwrites the tiles other threads may still be reading
    }
    if (row < M && col < N) D[row * ldd + col] = gemm_epilogue(acc, alpha, beta, C, ldc, row, col);
}
STUDY_ENTRY_FACTS(sgemm_smem_tiling, TILE, TILE, TILE * TILE, 0)
