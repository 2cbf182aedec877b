// Stage 15 - wgmma: Hopper's warpgroup MMA, fed by TMA, warp-specialized, persistent.
//
// Technique:   wgmma.mma_async (sm_90a): a warpgroup (4 warps) multiplies a 64x16 tile of A by a 16x256 tile
//              of B straight out of shared memory, asynchronously, into a 64x256 fp32 accumulator spread over
//              its 128 threads (128 registers each).  Operands arrive by TMA (cp.async.bulk.tensor) in
//              CU_TENSOR_MAP_SWIZZLE_128B boxes, which is exactly the 128-byte-swizzled layout wgmma's
//              shared-memory descriptors name: A K-major (64 k of a row in 128 bytes), B N-major (64 n of a
//              k-row in 128 bytes, "transposed" in wgmma's terms).  A ring of slots hands over by mbarriers:
//              full[s] completes when a slot's TMA bytes have landed, empty[s] when every consumer warp's
//              wgmmas that read it have finished.  Four forms, each one technique more:
//                wgmma_1wg: one warpgroup per 64x256 tile; its thread 0 also issues the copies, 5 slots ahead.
//                wgmma_ws:  a producer warpgroup (one thread issues TMA) and two consumer warpgroups per
//                           128x256 tile; setmaxnreg moves registers from the producer to the consumers.
//                           Launched one block per tile (cuda:15_wgmma-ws) or one per SM walking the tiles
//                           in GROUP_M-grouped order, the ring running on across tiles
//                           (cuda:15_wgmma-persistent).
//                wgmma_tma: the persistent form with D written through shared memory, 64x64 pieces in the
//                           128-byte swizzle, by TMA stores (cuda:15_wgmma).
// Reproduces:  no seed covers Hopper (seed 000 stops at mma.sync: its kernel 9 is stage 13).  Issue 20's
//              anchors: pranjalssh/fast.cu's H100/H200 ladder (wgmma + TMA, then producer/consumer
//              warpgroups, then a persistent grid) and ThunderKittens' educational H100 levels.
// Changed:     stage 13 fed mma.sync m16n8k16 (Ampere's instruction) from ldmatrix: a warp needs 4 ldmatrix
//              and 16 mma.sync per k16 step of its 64x64 tile.  Here one instruction per warpgroup does a
//              64x256x16 step with no fragment loads at all: operands never pass through registers.
// Why faster:  the issue slots that stage 13 spends on ldmatrix and mma.sync (its tensor pipe ~84% busy at
//              7.3 cycles an instruction, issue 20) are free, so the tensor pipe can run near its peak; the
//              copy engine does the address work.  Measured (H100, reports/h100/results.csv; % of cuBLAS):
//              fp16 4096^3 481 (64%, stage 13) -> 270 (36%, one warpgroup) -> 621 (82%, specialized) -> 630
//              (83%, persistent) -> 685 TFLOP/s (90.4%, TMA-store epilogue); 630 (95.6%) at 8192^3.
//
// Ragged edges: TMA reads zeros past M, N and K, so every tile is computed whole; stores are masked (TMA
//              stores clip at M and N).
// Alignment:   a tensor map needs 16-byte aligned starts and leading dimensions: the launcher sends any other
//              call to stage 13's cp.async kernel (mma_swizzle_*_unaligned), never to a fault.
// Range:       any M, N, K >= 1 (a tile with K past the matrix reads zeros); beta == 0 never reads C.
#include <cuda.h>   // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"
#include "tma.cuh"

namespace {

constexpr int BN = 256, BK = 64, GROUP_M = 8;
constexpr int B_BOX_BYTES = 64 * 64 * 2;   // one box of B: 64 k-rows x 64 n (128 bytes a row)

// CONSUMERS warpgroups of 64 rows each; PRODUCER_WG: a separate warpgroup issues the copies.
// TMA_STORE: D leaves through shared memory and TMA stores (else straight from the accumulators).
// LEAN (a tuning variant, WGMMA_EXPLORE): the producer's refill path in 32-bit counters with its tile computed
// once per tile, and the epilogue's beta test hoisted out of its loops (NOTES.md: the SASS comparison with Gluon).
template <int CONSUMERS_, bool PRODUCER_WG_, int STAGES_, bool TMA_STORE_ = false, bool LEAN_ = false>
struct Cfg {
    static constexpr int CONSUMERS = CONSUMERS_, STAGES = STAGES_;
    static constexpr bool PRODUCER_WG = PRODUCER_WG_, TMA_STORE = TMA_STORE_, LEAN = LEAN_;
    static constexpr int BM = 64 * CONSUMERS;
    static constexpr int THREADS = 128 * CONSUMERS + (PRODUCER_WG ? 128 : 0);
    static constexpr int A_BYTES = BM * BK * 2, SLOT_BYTES = A_BYTES + BK * BN * 2;
    static constexpr int PIECE_BYTES = TMA_STORE ? 64 * 64 * 2 : 0;   // a consumer's 64x64 piece of D
    // The ring, the consumers' D pieces, 1024 bytes to put the ring on a 1024-byte boundary (the swizzle's
    // period), and 2 mbarriers a slot.
    static constexpr int SMEM_BYTES = STAGES * SLOT_BYTES + CONSUMERS * PIECE_BYTES + 1024 + 2 * STAGES * 8;
    // setmaxnreg moves registers within the block's launch pool (THREADS x 168 at 384 threads).
    static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
    static_assert(!PRODUCER_WG || 128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= THREADS * 168,
                  "the block's register pool");
};

// A shared-memory matrix descriptor, 128-byte swizzle (PTX ISA, "Matrix Descriptor Format"): the start
// address, the leading and stride byte offsets, all in 16-byte units.  A (K-major): rows 128 bytes apart, 8-row
// groups 1024 (the stride offset; the leading one is unused).  B (N-major): 64-column boxes 8 KiB apart (the
// leading offset), 8-k-row groups 1024 (the stride offset).
__device__ __forceinline__ uint64_t descriptor(uint32_t addr, uint32_t leading, uint32_t stride) {
    return ((addr & 0x3FFFF) >> 4) | (uint64_t(leading >> 4) << 16) | (uint64_t(stride >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// Registers an in-flight wgmma writes must stay put until its wait: this empty asm "modifies" them after it.
__device__ __forceinline__ void hold(float (&r)[128]) {
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}

// d (+)= a b: m64n256k16, fp32 accumulators; a K-major, b N-major (imm-trans-b = 1), both in shared memory.
__device__ __forceinline__ void mma_f16(float (&d)[128], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        " wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(accumulate));
}

__device__ __forceinline__ void mma_bf16(float (&d)[128], uint64_t a, uint64_t b, int accumulate) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        " wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(accumulate));
}

template <class T>
__device__ __forceinline__ void mma(float (&d)[128], uint64_t a, uint64_t b, int accumulate) {
    if constexpr (std::is_same<T, __half>::value) mma_f16(d, a, b, accumulate);
    else mma_bf16(d, a, b, accumulate);
}

// One consumer warpgroup's 64x256 tile of D from its accumulators: lane 4g + t of warp w holds rows 16w + g and
// 16w + g + 8, columns 8j + 2t and 8j + 2t + 1 (PTX ISA, wgmma's accumulator fragment), stored as pairs.
template <class T>
__device__ __forceinline__ void store_tile(const float (&acc)[128], int row0, int col0, int lane, int M, int N,
                                           float alpha, float beta, const T* __restrict__ Cm, idx_t ldc,
                                           T* __restrict__ D, idx_t ldd) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const idx_t row = row0 + 8 * h;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < 32; ++j) {
            const int col = col0 + 8 * j + 2 * (lane & 3);
            float v0 = alpha * acc[4 * j + 2 * h], v1 = alpha * acc[4 * j + 2 * h + 1];
            if (col + 1 < N) {   // the pair lies inside N: one 4-byte access (ldd and ldc are even)
                if (beta != 0.0f) {
                    const float2 c = Elem<T>::unpack(*reinterpret_cast<const uint32_t*>(Cm + row * ldc + col));
                    v0 = fmaf(beta, c.x, v0);
                    v1 = fmaf(beta, c.y, v1);
                }
                *reinterpret_cast<uint32_t*>(D + row * ldd + col) = Elem<T>::pack(v0, v1);
            } else if (col < N) {
                Elem<T>::store(D + row * ldd + col, beta != 0.0f ? fmaf(beta, Elem<T>::load(Cm + row * ldc + col), v0) : v0);
            }
        }
    }
}

// The same tile through shared memory, in four 64x64 pieces: the warpgroup writes a piece into `piece` in the
// 128-byte swizzle (16-byte chunk c of row r at c ^ (r % 8); by the bank arithmetic the 32 lanes of a 4-byte
// store hit 32 banks, yet ncu counts 119k conflicts on 381k store wavefronts at 4096^3 fp16, not explained),
// and its first thread stores it with one TMA store, which clips D at M and N.  Before a piece is rewritten,
// the store of the one before has read it.  C (beta != 0) is read from global memory as in store_tile.
template <class T>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[128], uint32_t piece, const CUtensorMap& map_d,
                                               int row0, int col0, int warp, int lane, int barrier, int M, int N,
                                               float alpha, float beta, const T* __restrict__ Cm, idx_t ldc) {
    const bool leader = (threadIdx.x & 127) == 0;
    const int t = lane & 3;
#pragma unroll
    for (int p = 0; p < 4; ++p) {
        if (leader) tma::store_wait<0, true>();
        asm volatile("bar.sync %0, 128;\n" :: "r"(barrier) : "memory");
#pragma unroll
        for (int jj = 0; jj < 8; ++jj) {
            const int j = 8 * p + jj;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = 16 * warp + (lane >> 2) + 8 * h;
                float v0 = alpha * acc[4 * j + 2 * h], v1 = alpha * acc[4 * j + 2 * h + 1];
                const idx_t row = row0 + r;
                const int col = col0 + 8 * j + 2 * t;
                if (beta != 0.0f && row < M) {
                    if (col + 1 < N) {
                        const float2 c = Elem<T>::unpack(*reinterpret_cast<const uint32_t*>(Cm + row * ldc + col));
                        v0 = fmaf(beta, c.x, v0);
                        v1 = fmaf(beta, c.y, v1);
                    } else if (col < N) {
                        v0 = fmaf(beta, Elem<T>::load(Cm + row * ldc + col), v0);
                    }
                }
                const uint32_t addr = piece + r * 128 + ((jj ^ (r & 7)) << 4) + 4 * t;
                asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(addr), "r"(Elem<T>::pack(v0, v1)) : "memory");
            }
        }
        async_copy::fence_async_shared();   // the piece, visible to the copy engine
        asm volatile("bar.sync %0, 128;\n" :: "r"(barrier) : "memory");
        if (leader) {
            tma::store_2d(map_d, piece, col0 + 64 * p, row0);
            tma::store_commit();
        }
    }
}

// The block's work is a list of items, k-tile after k-tile of its tiles blockIdx.x, + gridDim.x, ...: item q
// is k-tile q % k_tiles of its (q / k_tiles)-th tile and goes to slot q % STAGES.
template <class C, class T>
__device__ __forceinline__ void gemm_wgmma(const CUtensorMap& map_a, const CUtensorMap& map_b, int M, int N, int K,
                                           double alpha_, double beta_, const T* __restrict__ Cm, idx_t ldc,
                                           T* __restrict__ D, idx_t ldd, const CUtensorMap* map_d) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t raw = async_copy::smem_u32(smem), ring = (raw + 1023) & ~1023u;
    const uint32_t pieces = ring + C::STAGES * C::SLOT_BYTES;   // the TMA-store epilogue's buffers
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + (ring - raw) + C::STAGES * C::SLOT_BYTES +
                                                 C::CONSUMERS * C::PIECE_BYTES);
    uint64_t* empty = full + C::STAGES;
    const int tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            async_copy::mbar_init(&full[s], 1);                    // the producer's expect_tx arrival
            async_copy::mbar_init(&empty[s], 4 * C::CONSUMERS);   // one lane of each consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");   // visible to the copy engine
    }
    __syncthreads();

    const long long tiles_m = (M + C::BM - 1) / C::BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const long long my_tiles = tiles > blockIdx.x ? (tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const long long items = my_tiles * k_tiles;
    auto load = [&](long long q) {   // item q into its slot: A's box and B's four, all counted on full[s]
        int tm, tn;
        tile_of<GROUP_M>(blockIdx.x + q / k_tiles * gridDim.x, tiles_m, tiles_n, tm, tn);
        const int k0 = int(q % k_tiles) * BK;
        const uint32_t s = q % C::STAGES, slot = ring + s * C::SLOT_BYTES;
        tma::expect_tx(&full[s], C::SLOT_BYTES);
        tma::load_2d(slot, map_a, k0, tm * C::BM, &full[s]);
#pragma unroll
        for (int b = 0; b < BN / 64; ++b) tma::load_2d(slot + C::A_BYTES + b * B_BOX_BYTES, map_b, tn * BN + 64 * b, k0, &full[s]);
    };

    if constexpr (C::PRODUCER_WG) {
        if (tid < 128) {   // the producer warpgroup: thread 0 copies as fast as slots free up, the rest idle
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(C::PRODUCER_REGS));
            if (tid == 0 && !C::LEAN) {
                for (long long q = 0; q < items; ++q) {
                    if (q >= C::STAGES) async_copy::mbar_wait(&empty[q % C::STAGES], (q / C::STAGES + 1) & 1);
                    load(q);
                }
            } else if (tid == 0) {   // LEAN: addresses first, then the wait, then the five copies
                uint32_t s = 0, phase = 0, used = 0;   // slot, its empty barrier's parity, slots filled once
                for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
                    int tm, tn;
                    tile_of<GROUP_M>(tile, tiles_m, tiles_n, tm, tn);
                    const int m0 = tm * C::BM, n0 = tn * BN;
                    for (int k0 = 0; k0 < K; k0 += BK) {
                        const uint32_t slot = ring + s * C::SLOT_BYTES;
                        if (used >= C::STAGES) async_copy::mbar_wait(&empty[s], phase ^ 1);
                        tma::expect_tx(&full[s], C::SLOT_BYTES);
                        tma::load_2d(slot, map_a, k0, m0, &full[s]);
#pragma unroll
                        for (int b = 0; b < BN / 64; ++b)
                            tma::load_2d(slot + C::A_BYTES + b * B_BOX_BYTES, map_b, n0 + 64 * b, k0, &full[s]);
                        used += used < C::STAGES;
                        if (++s == C::STAGES) s = 0, phase ^= 1;
                    }
                }
            }
            return;
        }
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(C::CONSUMER_REGS));
    } else if (tid == 0) {   // one warpgroup: its thread 0 fills the ring first, then refills (release below)
        for (long long q = 0; q < items && q < C::STAGES; ++q) load(q);
    }

    const int ctid = tid - (C::PRODUCER_WG ? 128 : 0), c = ctid >> 7, warp = (ctid >> 5) & 3, lane = tid & 31;
    const float alpha = (float)alpha_, beta = (float)beta_;
    // Item q has left its slot (every consumer warp's wgmmas that read it are done): one arrival per warp; with
    // no producer warpgroup, thread 0 then waits for the other warps' and copies item q + STAGES in.
    auto release = [&](long long q) {
        const uint32_t s = q % C::STAGES;
        if (lane == 0) async_copy::mbar_arrive(&empty[s]);
        if (!C::PRODUCER_WG && tid == 0 && q + C::STAGES < items) {
            async_copy::mbar_wait(&empty[s], (q / C::STAGES) & 1);
            load(q + C::STAGES);
        }
    };
    long long q = 0;
    for (long long i = 0; i < my_tiles; ++i) {
        int tm, tn;
        tile_of<GROUP_M>(blockIdx.x + i * gridDim.x, tiles_m, tiles_n, tm, tn);
        float acc[128];
        for (int kt = 0; kt < k_tiles; ++kt, ++q) {
            const uint32_t s = q % C::STAGES;
            async_copy::mbar_wait(&full[s], (q / C::STAGES) & 1);
            const uint32_t a = ring + s * C::SLOT_BYTES + c * 64 * 128, b = ring + s * C::SLOT_BYTES + C::A_BYTES;
            fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)   // k16 steps: 32 bytes along A's rows, 16 k-rows of B
                mma<T>(acc, descriptor(a + 32 * kk, 16, 1024), descriptor(b + 2048 * kk, B_BOX_BYTES, 1024), kt | kk);
            commit();
            wait<1>();   // the k-tile before is done: its slot may be refilled while this one runs
            hold(acc);
            if (kt > 0) release(q - 1);
        }
        wait<0>();
        hold(acc);
        release(q - 1);
        if constexpr (C::TMA_STORE && C::LEAN) {
            if (beta != 0.0f)
                store_tile_tma<T>(acc, pieces + c * C::PIECE_BYTES, *map_d, tm * C::BM + 64 * c, tn * BN, warp, lane,
                                  1 + c, M, N, alpha, beta, Cm, ldc);
            else   // the same call with beta a constant 0: the C reads and their branches compile away
                store_tile_tma<T>(acc, pieces + c * C::PIECE_BYTES, *map_d, tm * C::BM + 64 * c, tn * BN, warp, lane,
                                  1 + c, M, N, alpha, 0.0f, Cm, ldc);
        } else if constexpr (C::TMA_STORE)
            store_tile_tma<T>(acc, pieces + c * C::PIECE_BYTES, *map_d, tm * C::BM + 64 * c, tn * BN, warp, lane,
                              1 + c, M, N, alpha, beta, Cm, ldc);
        else
            store_tile<T>(acc, tm * C::BM + 64 * c + 16 * warp + (lane >> 2), tn * BN, lane, M, N, alpha, beta, Cm,
                          ldc, D, ldd);
    }
    if (C::TMA_STORE && (tid & 127) == 0) tma::store_wait<0, false>();   // the pieces outlive their last store
}

}  // namespace

// grid (blocks, 1, 1): one block per tile, or (persistent) fewer, each walking tiles blockIdx.x + i * gridDim.x.
#define WGMMA_ENTRY(NAME, CFG, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, 1)                                           \
    NAME(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N, \
         int K, double alpha, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) { \
        gemm_wgmma<CFG, T>(map_a, map_b, M, N, K, alpha, beta, C, ldc, D, ldd, nullptr);                     \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, BN, CFG::THREADS, CFG::SMEM_BYTES)
// The TMA-store form takes D's tensor map too (64x64 boxes), last.
#define WGMMA_TMA_ENTRY(NAME, CFG, T)                                                                        \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, 1)                                           \
    NAME(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N, \
         int K, double alpha, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd,  \
         const __grid_constant__ CUtensorMap map_d) {                                                        \
        gemm_wgmma<CFG, T>(map_a, map_b, M, N, K, alpha, beta, C, ldc, D, ldd, &map_d);                      \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, BN, CFG::THREADS, CFG::SMEM_BYTES)
#define WGMMA_PAIR(NAME, CFG)                                                                                \
    WGMMA_ENTRY(NAME##_f16, CFG, __half)                                                                     \
    WGMMA_ENTRY(NAME##_bf16, CFG, __nv_bfloat16)

using OneWarpgroup = Cfg<1, false, 5>;   // 64x256 tiles, 5 slots of 40 KiB
WGMMA_PAIR(wgmma_1wg, OneWarpgroup)
using Specialized = Cfg<2, true, 4>;     // 128x256 tiles, a producer and two consumer warpgroups, 4 slots of 48 KiB
WGMMA_PAIR(wgmma_ws, Specialized)
using TmaStored = Cfg<2, true, 4, true>;   // the same, D out through shared memory and TMA stores
WGMMA_TMA_ENTRY(wgmma_tma_f16, TmaStored, __half)
WGMMA_TMA_ENTRY(wgmma_tma_bf16, TmaStored, __nv_bfloat16)

#ifdef WGMMA_EXPLORE
using Lean = Cfg<2, true, 4, true, true>;   // cuda:15_wgmma with the lean producer and epilogue (VARIANTS "lean")
WGMMA_TMA_ENTRY(x15_lean_f16, Lean, __half)
WGMMA_TMA_ENTRY(x15_lean_bf16, Lean, __nv_bfloat16)
#endif
