// Shared by every CUDA stage: the GEMM contract's epilogue and index types.
//
// Contract: D = alpha * A @ B + beta * C, row-major, A is MxK (leading dimension lda), B is KxN (ldb),
// C and D are MxN (ldc, ldd).  Leading dimensions are 64-bit so that row * ld never overflows.
#pragma once
#include <cstdint>

typedef long long idx_t;

// beta == 0 must not read C at all: the caller may pass a C full of NaN (or no C), and 0 * NaN = NaN.
__device__ __forceinline__ float gemm_epilogue(float acc, float alpha, float beta,
                                               const float* __restrict__ C, idx_t ldc, idx_t row, idx_t col) {
    float d = alpha * acc;
    if (beta != 0.0f) d = fmaf(beta, C[row * ldc + col], d);
    return d;
}
