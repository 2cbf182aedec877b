// cp.async and mbarrier in PTX, for the pipelined stages (07-09, 11-14).
//
// cp.async (sm_80+) copies global -> shared without passing through registers.  Its src-size operand
// copies that many bytes and zero-fills the rest of the destination, which is how the pipelined stages
// zero-fill ragged tiles: a copy that is wholly out of range has src-size 0 and points at the matrix base,
// so no out-of-range address is ever formed, let alone read.
// mbarrier (sm_80+, try_wait sm_90) is a shared-memory barrier object with an arrival count and a phase
// bit; stage 08 hands ring slots between producer and consumer warps with it instead of __syncthreads.
#pragma once
#include <cstdint>

namespace async_copy {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 4 bytes, L1-allocating (.ca: the only kind that takes 4 bytes); valid == false writes a zero.
__device__ __forceinline__ void cp4(float* dst, const float* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(valid ? 4 : 0) : "memory");
}

// 16 bytes, L2 only (.cg); the first src_bytes (0, 4, 8, 12 or 16) come from src, the rest are zeros.
// dst and src must be 16-byte aligned even when src_bytes < 16.
__device__ __forceinline__ void cp16(float* dst, const float* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(src_bytes) : "memory");
}

// 16 bytes, L2 only, to a shared address given as an integer (as the ldmatrix stages, 12 and 13, keep them).
// No src-size: all 16 bytes must lie inside the matrix.
__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Wait until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wait_group() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

__device__ __forceinline__ void wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// ---- mbarrier ------------------------------------------------------------------------------------------
// A phase completes when `count` arrivals have been made; waiters name the phase by its parity (0, 1, 0,
// ...), so a waiter may be at most one phase behind.

__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(smem_u32(bar)), "r"(count) : "memory");
}

// One arrival, with release semantics: this thread's earlier shared-memory reads are ordered before it.
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("{\n .reg .b64 state;\n mbarrier.arrive.shared::cta.b64 state, [%0];\n}\n"
                 :: "r"(smem_u32(bar)) : "memory");
}

// One arrival that fires when all of this thread's earlier cp.async copies have landed.  .noinc: the
// arrival is one of the `count` given to mbar_init (it does not raise the expected count).
__device__ __forceinline__ void mbar_arrive_on_copies(uint64_t* bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" :: "r"(smem_u32(bar)) : "memory");
}

// Blocks until the phase with this parity has completed (acquire: what the arrivers wrote is visible).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
    uint32_t done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    } while (!done);
}

// mbar_wait with the retry loop inside the asm: no C++-level branch on a per-thread value, so ptxas keeps what a
// warp computes after the wait (ring slots, wgmma descriptors) in uniform registers where it can.
__device__ __forceinline__ void mbar_wait_asm(uint64_t* bar, unsigned parity) {
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra WAIT_%=;\n}\n" :: "r"(smem_u32(bar)), "r"(parity) : "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy reads (wgmma, bulk copies).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

}  // namespace async_copy
