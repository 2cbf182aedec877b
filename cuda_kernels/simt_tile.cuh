// A thread's register tile of D in the SIMT stages: clearing it and the outer product that is its inner loop
// (05-09); for tiles made of 4x4 blocks, the k-loop over one shared k-tile (06-08) and the epilogue (06-09).
// Where the blocks lie (which rows and columns of D, which shared addresses) stays in each stage's file: the
// callers pass it, as strides or as functions of the block's index.
#pragma once
#include "gemm_common.cuh"

// acc = 0.
template <int TM, int TN>
__device__ __forceinline__ void zero_tile(float (&acc)[TM][TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
}

// acc += a b^T: one k of the thread's outputs, TM x TN FMAs from TM values of A and TN of B in registers.
template <int TM, int TN>
__device__ __forceinline__ void outer_product(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN]) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// Does nothing: multiply_tile's default after_reads.
struct NoHook {
    __device__ __forceinline__ void operator()(int) const {}
};

// acc += the product of one k-tile in shared memory, for a tile of 4x4 blocks.  At each of its BK k: the
// operands into a and b, one 16-byte shared load (LDS.128) per 4 values, a[4i ..] from a_at(k, i) and b[4j ..]
// from b_at(k, j) (the shared addresses, 16-byte aligned, of block-row i's A values and block-column j's B
// values at k), issued A0, B0, A1, B1, ...; then after_reads(k); then their outer product.  The operand
// registers are the caller's arrays and the loads go in that order because stages 06-08 were written and
// measured so: with the arrays declared in here, or all of A loaded before B, nvcc 13.0 emits other SASS.
template <int BK, int TM, int TN, class AAt, class BAt, class Hook = NoHook>
__device__ __forceinline__ void multiply_tile(float (&acc)[TM][TN], float (&a)[TM], float (&b)[TN], AAt a_at,
                                              BAt b_at, Hook after_reads = Hook()) {
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
        for (int i = 0; i < (TM > TN ? TM : TN) / 4; ++i) {
            if (i < TM / 4) *reinterpret_cast<float4*>(&a[4 * i]) = *reinterpret_cast<const float4*>(a_at(k, i));
            if (i < TN / 4) *reinterpret_cast<float4*>(&b[4 * i]) = *reinterpret_cast<const float4*>(b_at(k, i));
        }
        after_reads(k);
        outer_product(acc, a, b);
    }
}

// The epilogue of a tile of 4x4 blocks: acc[4h + i][4g + j] is D[m0 + row0 + ROW_STEP h + i][n0 + col0 +
// COL_STEP g + j], (m0, n0) being the block's tile and (row0, col0) the thread's first output in it.  Rows past
// M are skipped, and store_row4 masks columns past N (VEC: 16-byte accesses where a run of 4 lies inside N).
template <bool VEC, int ROW_STEP, int COL_STEP, int TM, int TN>
__device__ __forceinline__ void store_tile(const float (&acc)[TM][TN], int m0, int row0, int n0, int col0, int M,
                                           int N, float alpha, float beta, const float* __restrict__ C, idx_t ldc,
                                           float* __restrict__ D, idx_t ldd) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const idx_t r = m0 + row0 + ROW_STEP * (i / 4) + i % 4;
        if (r >= M) continue;
#pragma unroll
        for (int g = 0; g < TN / 4; ++g) {
            const idx_t c = n0 + col0 + COL_STEP * g;
            store_row4<VEC>(&acc[i][4 * g], alpha, beta, C, ldc, D, ldd, r, c, N);
        }
    }
}
