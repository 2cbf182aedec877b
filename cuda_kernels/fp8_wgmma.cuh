// fp8 (e4m3) warpgroup MMA for stage 16: wgmma.mma_async m64nNk32 with fp32 accumulators, both operands
// K-major in shared memory (the only layout fp8 wgmma takes: it has no transpose bits), described as in
// wgmma.cuh.  The accumulator fragment is m64nNk16's (wgmma.cuh's header): N / 2 fp32 registers a thread.
#pragma once
#include <cstdint>

#include "wgmma.cuh"

namespace wgmma {

// d (+)= a b: m64nNk32, e4m3 x e4m3 -> f32 (N 256, 192, 128 or 64).  accumulate == 0 ignores d (the chunk's
// first k32 step starts a fresh partial sum).
#define FP8_WGMMA(SHAPE, REGS, D, AB, FLAG)                                                                     \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, " FLAG ", 0;\n wgmma.mma_async.sync.aligned." SHAPE      \
                 ".f32.e4m3.e4m3 " REGS ", " AB ", p, 1, 1;\n}\n"                                               \
                 : D(d)                                                                                         \
                 : "l"(a), "l"(b), "r"(accumulate))
#define FP8_WGMMA_D32(d) WGMMA_D32(d, 0)
#define FP8_WGMMA_REGS32 "{" WGMMA_R0 "}"
template <int N>
__device__ __forceinline__ void mma_e4m3(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate) {
    static_assert(N == 256 || N == 192 || N == 128 || N == 64, "the shapes spelled out here");
    if constexpr (N == 256) FP8_WGMMA("m64n256k32", WGMMA_REGS128, WGMMA_D128, "%128, %129", "%130");
    else if constexpr (N == 192) FP8_WGMMA("m64n192k32", WGMMA_REGS96, WGMMA_D96, "%96, %97", "%98");
    else if constexpr (N == 128) FP8_WGMMA("m64n128k32", WGMMA_REGS64, WGMMA_D64, "%64, %65", "%66");
    else FP8_WGMMA("m64n64k32", FP8_WGMMA_REGS32, FP8_WGMMA_D32, "%32, %33", "%34");
}
#undef FP8_WGMMA
#undef FP8_WGMMA_D32
#undef FP8_WGMMA_REGS32

}  // namespace wgmma
