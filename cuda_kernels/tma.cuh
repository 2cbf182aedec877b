// The copy engine (TMA) and persistent tile walks, shared by the TMA-fed stages (13's TMA form, 15).
#pragma once
#include <cuda.h>   // CUtensorMap

#include "async_copy.cuh"

namespace tma {

using async_copy::smem_u32;

__device__ __forceinline__ void expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
}

// Box (c0, c1) of the tensor map (c0 along the contiguous dimension) -> shared memory at dst; its bytes count
// toward bar's transaction.  Elements outside the tensor arrive as zeros: the ragged edges of M, N and K.
__device__ __forceinline__ void load_2d(uint32_t dst, const CUtensorMap& map, int c0, int c1, uint64_t* bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(&map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)) : "memory");
}

// The same box into dst and bar at the same offsets in every block of the cluster named by `mask`.
__device__ __forceinline__ void load_2d_multicast(uint32_t dst, const CUtensorMap& map, int c0, int c1, uint64_t* bar,
                                                  uint16_t mask) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(reinterpret_cast<uint64_t>(&map)), "r"(c0), "r"(c1), "r"(smem_u32(bar)), "h"(mask)
                 : "memory");
}

// One arrival on the barrier at the same offset as `bar` in block `rank` of this cluster (which may be this
// block).  CLUSTER_SCOPE: release at cluster scope, which orders this thread's generic-proxy reads before the
// arrival at the cost of a memory fence per arrival (stage 13's consumers read by ldmatrix).  Without it
// (release at block scope, as CUTLASS's ClusterBarrier::arrive(cta_id)), for readers that are wgmmas the
// arriving thread has already waited for.
template <bool CLUSTER_SCOPE = true>
__device__ __forceinline__ void arrive_remote(uint64_t* bar, uint32_t rank) {
    if (CLUSTER_SCOPE)
        asm volatile("{\n .reg .b32 r;\n mapa.shared::cluster.u32 r, %0, %1;\n"
                     " mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r];\n}\n"
                     :: "r"(smem_u32(bar)), "r"(rank) : "memory");
    else
        asm volatile("{\n .reg .b32 r;\n mapa.shared::cluster.u32 r, %0, %1;\n"
                     " mbarrier.arrive.shared::cluster.b64 _, [r];\n}\n"
                     :: "r"(smem_u32(bar)), "r"(rank) : "memory");
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Box (c0, c1) of the tensor map <- shared memory at src (the same swizzled layout a load lands in), as one bulk
// group of this thread; elements outside the tensor are not written (the ragged edges of D).
__device__ __forceinline__ void store_2d(const CUtensorMap& map, uint32_t src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"
                 :: "l"(reinterpret_cast<uint64_t>(&map)), "r"(c0), "r"(c1), "r"(src) : "memory");
}
__device__ __forceinline__ void store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// This thread's bulk stores but the last N have read their shared memory (READ) or are complete.
template <int N, bool READ>
__device__ __forceinline__ void store_wait() {
    if (READ) asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(N) : "memory");
    else asm volatile("cp.async.bulk.wait_group %0;\n" :: "n"(N) : "memory");
}

// One item of a ring (a k-tile of a tile) into its slot: A's box (C::BM rows from m0, 64 k from k0), then this
// block's share of B's C::B_BOXES 64-column boxes from n0 (a cluster of C::CLUSTER blocks side by side in M
// splits them in consecutive runs, and each multicasts its run to all of them), all counted by the slot's full
// barrier.  The slot holds A (C::A_BYTES), then B's boxes C::B_BOX_BYTES apart.
template <class C>
__device__ __forceinline__ void load_item(const CUtensorMap& map_a, const CUtensorMap& map_b, uint32_t slot,
                                          uint64_t* full, int k0, int m0, int n0, uint32_t rank) {
    expect_tx(full, C::SLOT_BYTES);
    load_2d(slot, map_a, k0, m0, full);
    constexpr int PER = (C::B_BOXES + C::CLUSTER - 1) / C::CLUSTER;   // boxes a block copies (the last: fewer)
#pragma unroll
    for (int i = 0; i < PER; ++i) {
        const int b = rank * PER + i;
        if (b >= C::B_BOXES) break;
        if (C::CLUSTER > 1)
            load_2d_multicast(slot + C::A_BYTES + b * C::B_BOX_BYTES, map_b, n0 + 64 * b, k0, full,
                              (1 << C::CLUSTER) - 1);
        else
            load_2d(slot + C::A_BYTES + b * C::B_BOX_BYTES, map_b, n0 + 64 * b, k0, full);
    }
}

}  // namespace tma

// Tile number pid of a grid_m x grid_n grid of D's tiles -> (tm, tn): consecutive numbers walk down GROUP_M
// tile-rows before moving right, so the tiles in flight at once share few A row-panels and B column-panels.
template <int GROUP_M>
__device__ __forceinline__ void tile_of(long long pid, long long grid_m, long long grid_n, int& tm, int& tn) {
    const long long per_group = GROUP_M * grid_n, first = pid / per_group * GROUP_M;
    const long long rows = min(grid_m - first, (long long)GROUP_M);
    tm = (int)(first + pid % per_group % rows);
    tn = (int)(pid % per_group / rows);
}
