// Shared by every CUDA stage: the GEMM contract's epilogue and index types.
//
// Contract: D = alpha * A @ B + beta * C, row-major, A is MxK (leading dimension lda), B is KxN (ldb),
// C and D are MxN (ldc, ldd).  Leading dimensions are 64-bit so that row * ld never overflows.
#pragma once
#include <cstdint>

typedef long long idx_t;

// Launch facts: every entry exports its launch geometry as `extern "C" __device__ const int study_<name>`
// globals (data in the cubin that no code reads), so the launcher never restates it: study/launch/cubin_key.py
// exports() reads them, study/launch/driver.py checks a launch record against them when it loads the entry,
// and tests/test_build.py offline.  STUDY_ENTRY_FACTS: the BM x BN tile of D one block computes, THREADS per
// block, and the bytes of dynamic shared memory the entry is launched with (0 where it has only static).  A
// nonzero value lies in .nv.global.init; a 0 in .nv.global, which holds no bytes in the file (it reads as 0).
#define STUDY_EXPORT(NAME, VALUE) extern "C" __device__ const int study_##NAME = (VALUE);
#define STUDY_ENTRY_FACTS(ENTRY, BM, BN, THREADS, SMEM)                                                      \
    STUDY_EXPORT(ENTRY##_bm, BM) STUDY_EXPORT(ENTRY##_bn, BN) STUDY_EXPORT(ENTRY##_threads, THREADS)         \
    STUDY_EXPORT(ENTRY##_smem, SMEM)
// An entry and its ENTRY_unaligned twin (the same template with scalar accesses): the same facts.
#define STUDY_TWIN_FACTS(ENTRY, BM, BN, THREADS, SMEM)                                                       \
    STUDY_ENTRY_FACTS(ENTRY, BM, BN, THREADS, SMEM) STUDY_ENTRY_FACTS(ENTRY##_unaligned, BM, BN, THREADS, SMEM)

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
