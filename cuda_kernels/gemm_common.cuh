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

// Stores v[0..3] as D[row][col .. col+3] (the epilogue applied), skipping columns at or past N.  VEC: C, D,
// ldc and ldd are 16-byte aligned, so a run of 4 that lies inside N moves as one float4 (16-byte access).
template <bool VEC>
__device__ __forceinline__ void store_row4(const float* v, float alpha, float beta, const float* __restrict__ C,
                                           idx_t ldc, float* __restrict__ D, idx_t ldd, idx_t row, idx_t col,
                                           int N) {
    if (VEC && col + 4 <= N) {
        float4 d = make_float4(alpha * v[0], alpha * v[1], alpha * v[2], alpha * v[3]);
        if (beta != 0.0f) {
            const float4 c = *reinterpret_cast<const float4*>(&C[row * ldc + col]);
            d.x = fmaf(beta, c.x, d.x);
            d.y = fmaf(beta, c.y, d.y);
            d.z = fmaf(beta, c.z, d.z);
            d.w = fmaf(beta, c.w, d.w);
        }
        *reinterpret_cast<float4*>(&D[row * ldd + col]) = d;
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (col + j < N) D[row * ldd + col + j] = gemm_epilogue(v[j], alpha, beta, C, ldc, row, col + j);
    }
}
