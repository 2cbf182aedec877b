// mma.sync issue-rate ceiling micro-benchmark (not a ladder stage).
//
// Every warp runs ILP independent accumulator chains of one mma.sync shape with operands held in registers,
// so nothing but the tensor pipe is exercised: no shared memory, no ldmatrix, no global traffic in the loop.
// This is the ceiling the mma.sync stages (12, 13) can reach on Hopper, where cuBLAS uses wgmma instead.
// FLOPs per instruction per warp: 2 M N K (m16n8k16: 4096; tf32 m16n8k8: 2048; s8 m16n8k32: 8192 ops).
// The accumulators are stored (conditionally on a value that never occurs) so nothing is dropped.
#include <cstdint>

#define ILP 8
#define UNROLL 8

namespace {

// One instruction per shape; a: 4 regs, b: 2 regs, d: 4 accumulators (fp32 or s32 bit patterns).
__device__ __forceinline__ void mma_f16(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_bf16(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_tf32(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_s8(uint32_t (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// seed: small operand bit patterns (never NaN/inf in any of the four types); the result is not checked.
template <void (*MMA)(uint32_t (&)[4], const uint32_t (&)[4], const uint32_t (&)[2])>
__device__ __forceinline__ void peak(uint32_t* out, int iters, uint32_t seed) {
    uint32_t a[4], b[2], d[ILP][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = seed ^ (threadIdx.x + i);
#pragma unroll
    for (int i = 0; i < 2; ++i) b[i] = seed ^ (threadIdx.x * 3 + i);
#pragma unroll
    for (int c = 0; c < ILP; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) d[c][i] = 0;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int c = 0; c < ILP; ++c) MMA(d[c], a, b);
    }
    uint32_t s = 0;
#pragma unroll
    for (int c = 0; c < ILP; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) s ^= d[c][i];
    if (s == 0x7fc00001u) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// A warp's 64x64 tile of a GEMM k-step, from registers: 4 A fragments x 8 B fragments, 32 accumulators, in
// the order the stages issue them (A-major: A is reused by 8 consecutive instructions, B changes every
// instruction) or B-major.  What mma.sync reaches when every instruction reads new operand registers, which
// the chains above (one A, one B) never do.  FLOPs = 4096 * 32 * UNROLL * iters * (threads / 32).
template <bool A_MAJOR>
__device__ __forceinline__ void tile(uint32_t* out, int iters, uint32_t seed) {
    uint32_t a[4][4], b[8][2], d[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) a[i][e] = seed ^ (threadIdx.x + 4 * i + e);
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) b[j][e] = seed ^ (threadIdx.x * 3 + 2 * j + e);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[i][j][e] = 0;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
            for (int x = 0; x < 32; ++x) {
                const int i = A_MAJOR ? x / 8 : x % 4, j = A_MAJOR ? x % 8 : x / 4;
                mma_f16(d[i][j], a[i], b[j]);
            }
    }
    uint32_t s = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) s ^= d[i][j][e];
    if (s == 0x7fc00001u) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

}  // namespace

// Launch: out has gridDim.x * blockDim.x words; FLOPs = 2 M N K * ILP * UNROLL * iters * (threads / 32).
extern "C" __global__ void mma_peak_f16(uint32_t* out, int iters, uint32_t seed) { peak<mma_f16>(out, iters, seed); }
extern "C" __global__ void mma_peak_bf16(uint32_t* out, int iters, uint32_t seed) { peak<mma_bf16>(out, iters, seed); }
extern "C" __global__ void mma_peak_tf32(uint32_t* out, int iters, uint32_t seed) { peak<mma_tf32>(out, iters, seed); }
extern "C" __global__ void mma_peak_s8(uint32_t* out, int iters, uint32_t seed) { peak<mma_s8>(out, iters, seed); }
extern "C" __global__ void mma_tile_f16(uint32_t* out, int iters, uint32_t seed) { tile<true>(out, iters, seed); }
extern "C" __global__ void mma_tile_f16_bmajor(uint32_t* out, int iters, uint32_t seed) { tile<false>(out, iters, seed); }
