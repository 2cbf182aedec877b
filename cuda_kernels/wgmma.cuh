// Hopper's warpgroup MMA (wgmma.mma_async, sm_90a), for the stages that use it (14, 15): shared-memory matrix
// descriptors, the fence, commit and wait that order wgmmas, hold() for the registers one has in flight, and
// m64nNk16 with fp32 accumulators, its operand lists spelled out by macros.
//
// A warpgroup (4 warps, 128 threads) issues a wgmma together; it runs asynchronously, reading its operands
// from shared memory (described by a 64-bit descriptor) or, for A, from registers.  The accumulators of an
// m64nNk16 are N / 2 fp32 registers a thread: lane 4g + t of warp w holds rows 16w + g and 16w + g + 8,
// columns 8j + 2t and 8j + 2t + 1 in d[4j], d[4j + 1] and d[4j + 2], d[4j + 3] (PTX ISA, "Register Fragments
// and Shared Memory Matrix Layouts").
#pragma once
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace wgmma {

// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): the start address (bits 0-13),
// the leading byte offset (bits 16-29) and the stride byte offset (bits 32-45), all in 16-byte units, and the
// swizzle mode (bits 62-63).  It is built as two 32-bit words: a kernel whose operands share one stride and
// swizzle keeps the high word a constant and moves the low one.  The start address field holds any shared
// address (< 228 KiB, < 2^18), so an offset added to a low word that stays inside shared memory never
// carries into the leading offset.
enum Swizzle : uint32_t { NO_SWIZZLE = 0, SWIZZLE_128B = 1 };
__host__ __device__ constexpr uint32_t desc_hi(uint32_t stride, Swizzle swizzle) {
    return (stride >> 4) | (uint32_t(swizzle) << 30);
}
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr, uint32_t leading) {
    return ((addr & 0x3FFFF) >> 4) | ((leading >> 4) << 16);
}
__device__ __forceinline__ uint64_t desc(uint32_t lo, uint32_t hi) { return (uint64_t(hi) << 32) | lo; }

// The wgmmas that follow see this thread's earlier writes of their registers and shared memory; commit closes
// a group of the wgmmas issued since the last; wait<N> returns once all but the last N groups have finished.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// Registers an in-flight wgmma reads or writes must stay where they are until its wait: this empty asm
// "modifies" them after the wait, so the compiler can neither reuse nor move them before it.
template <int N>
__device__ __forceinline__ void hold(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
template <int N>
__device__ __forceinline__ void hold(unsigned (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}

}  // namespace wgmma

// The accumulators d[0 .. R - 1] as the operands "+f"(d[0]) .. (R = N / 2 of an m64nNk16: 64, 96 or 128) ...
#define WGMMA_D8(d, i)                                                                                          \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define WGMMA_D32(d, i) WGMMA_D8(d, i), WGMMA_D8(d, i + 8), WGMMA_D8(d, i + 16), WGMMA_D8(d, i + 24)
#define WGMMA_D64(d) WGMMA_D32(d, 0), WGMMA_D32(d, 32)
#define WGMMA_D96(d) WGMMA_D64(d), WGMMA_D32(d, 64)
#define WGMMA_D128(d) WGMMA_D96(d), WGMMA_D32(d, 96)
// ... and their register list in the instruction, "{%0, %1, .., %(R - 1)}".
#define WGMMA_R0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                       \
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WGMMA_R32 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "            \
                  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define WGMMA_R64 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "            \
                  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define WGMMA_R96 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
                  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define WGMMA_REGS64 "{" WGMMA_R0 ", " WGMMA_R32 "}"
#define WGMMA_REGS96 "{" WGMMA_R0 ", " WGMMA_R32 ", " WGMMA_R64 "}"
#define WGMMA_REGS128 "{" WGMMA_R0 ", " WGMMA_R32 ", " WGMMA_R64 ", " WGMMA_R96 "}"

namespace wgmma {

// d (+)= a b: m64nNk16 (N 256, 192 or 128), fp32 accumulators (N / 2 a thread); a K-major and b N-major
// (imm-trans-b 1), both in shared memory; T, the inputs' type (__half or __nv_bfloat16).  accumulate == 0
// ignores d.  WGMMA_SS spells the instruction: SHAPE and TYPES its suffixes, REGS and D the accumulators'
// register list and operands, AB the descriptors' operand numbers and FLAG accumulate's.
#define WGMMA_SS(SHAPE, TYPES, REGS, D, AB, FLAG)                                                               \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " FLAG ", 0;\n wgmma.mma_async.sync.aligned." SHAPE ".f32" \
                 TYPES " " REGS ", " AB ", p, 1, 1, 0, 1;\n}\n"                                                  \
                 : D(d)                                                                                         \
                 : "l"(a), "l"(b), "r"(accumulate))
template <class T, int N>
__device__ __forceinline__ void mma(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate) {
    static_assert(N == 256 || N == 192 || N == 128, "the shapes spelled out here");
    constexpr bool f16 = std::is_same<T, __half>::value;
    if constexpr (N == 256) {
        if constexpr (f16) WGMMA_SS("m64n256k16", ".f16.f16", WGMMA_REGS128, WGMMA_D128, "%128, %129", "%130");
        else WGMMA_SS("m64n256k16", ".bf16.bf16", WGMMA_REGS128, WGMMA_D128, "%128, %129", "%130");
    } else if constexpr (N == 128) {
        if constexpr (f16) WGMMA_SS("m64n128k16", ".f16.f16", WGMMA_REGS64, WGMMA_D64, "%64, %65", "%66");
        else WGMMA_SS("m64n128k16", ".bf16.bf16", WGMMA_REGS64, WGMMA_D64, "%64, %65", "%66");
    } else {
        if constexpr (f16) WGMMA_SS("m64n192k16", ".f16.f16", WGMMA_REGS96, WGMMA_D96, "%96, %97", "%98");
        else WGMMA_SS("m64n192k16", ".bf16.bf16", WGMMA_REGS96, WGMMA_D96, "%96, %97", "%98");
    }
}
#undef WGMMA_SS

// d (+)= a b: m64n128k16, fp16 inputs, fp32 accumulators; a from registers (mma.m16n8k16's A fragment, warp w
// of the warpgroup holding rows 16w .. 16w+15), b K-major in shared memory (imm-trans-b 0).  accumulate == 0
// ignores d.
__device__ __forceinline__ void mma(float (&d)[64], const unsigned (&a)[4], uint64_t b, int accumulate) {
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %68, 0;\n"
                 " wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " WGMMA_REGS64 ", {%64, %65, %66, %67}, %69,"
                 " p, 1, 1, 0;\n}\n"
                 : WGMMA_D64(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(accumulate), "l"(b));
}

}  // namespace wgmma
