// Stage 14 - wgmma: Hopper's warpgroup MMA, fed by TMA, warp-specialized, persistent.
//
// Technique:   wgmma.mma_async (sm_90a; wgmma.cuh): a warpgroup (4 warps) multiplies a 64x16 tile of A by a 16x256
//              tile of B straight out of shared memory, asynchronously, into a 64x256 fp32 accumulator (128
//              registers a thread).  TMA fills a ring of slots in CU_TENSOR_MAP_SWIZZLE_128B boxes, the layout
//              wgmma's shared-memory descriptors name (A K-major, B N-major: "transposed").  mbarriers hand the
//              slots over: full[s] completes when a slot's bytes have landed, empty[s] when every consumer warp
//              reading it (in every block of a cluster) has seen its wgmmas finish.  Each form adds one thing
//              (entry wgmma_<form>, its Shape at the end of this file):
//                -1wg:        one warpgroup per 64x256 tile, a block per tile; after each wgmma wait a lane of
//                             each warp copies a box of the refill.
//                -ws:         a producer warpgroup (one thread issues TMA) and two consumer warpgroups per 128x256
//                             tile, setmaxnreg 40/232; still a block per tile.
//                -persistent: one block per SM, whose tile scheduler walks the tiles in GROUP_M order, the ring
//                             running on from one tile into the next.
//                -cluster:    clusters of two blocks side by side in M; each copies half of their shared k-tile
//                             of B and multicasts it to both.
//                -tma-store:  D out through shared memory: stmatrix into the 128-byte swizzle, two 64x64 buffers
//                             a consumer, TMA stores.
//              The stage, cuda:14_wgmma, adds a choice of tile per call by a model of waves x tile x measured cost
//              per output (CudaModelDispatch): wgmma_wide (256x192, each consumer 128x192, clusters of 2) for calls
//              of many tiles, else wgmma_tma (128x256, no clusters).  Both grids are balanced: the fewest blocks
//              that take the same waves of tiles (at 4096^3, 128 blocks of 4; the probe: 0.8-1.2 points faster).
// Reproduces:  no seed covers Hopper (seed 000 stops at mma.sync: its kernel 9 is stage 13).  Its
//              anchors: pranjalssh/fast.cu's H100/H200 ladder and ThunderKittens' educational H100 levels.
// Changed:     stage 13 feeds mma.sync m16n8k16 from ldmatrix (4 ldmatrix and 16 mma.sync per warp and k16 step
//              of a 64x64 tile); here one instruction per warpgroup does 64x256x16, operands never in registers.
// Why faster:  the issue slots stage 13 spends on ldmatrix and mma.sync are free, so the tensor pipe runs near
//              its peak; the copy engine does the address work; the TMA-store epilogue (per 64x64 piece, 4
//              stmatrix a warp and one TMA store, against 16 4-byte stores a thread) gives the pipe back sooner.
//              Multicast has each block of a pair copy half of B's boxes (predicted: half its L2 reads of B;
//              ncu: L2 bytes 1.49 -> 1.37 GB in all at fp16 4096^3): within a point of -persistent at 4096^3,
//              2.4-2.5 points faster at 8192^3 on the H100 (the sweep of 3bd236b) and 1.2-2.8 points on the H200
//              (the sweep of d183105), where the power limit sets the clock.
// Measured:    H100 SXM, the sweep of 3bd236b, fp16 4096^3, TFLOP/s (% of cuBLAS; ncu tensor pipe active, profiled
//              at d532662 for -1wg, at bcfb91e for -ws and -tma-store, at 8a0f29b for the others): stage 13's TMA
//              form 476.3 (64%; 83%) -> -1wg 596.9 (81%; 73%: one warpgroup waits on its own wgmmas) -> -ws 644.4
//              (87%; 80%: two consumers keep the pipe fed) -> -persistent 654.0 (89%; 82%) -> -cluster 658.2 (89%;
//              82%, L2 bytes 1.49 -> 1.37 GB) -> -tma-store 727.2 (98%; 93%) -> cuda:14_wgmma: 735.4 (99.5%, a tie:
//              its p20-p80 times overlap cuBLAS's; 94.4%, cuBLAS's 94.8%), 697.7 at 8192^3 (102.3%, wgmma_wide's
//              tiles); bf16 752.3 (99.6%) and 726.1 (101.1%).  H200 (4 GPUs, d183105): 99.9-100.9%.
// Ragged edges: TMA reads zeros past M, N and K, so every tile is computed whole; stores are masked (TMA
//              stores clip at M and N); a cluster's tile wholly past M copies its share of B and stores nothing.
// Alignment:   tensor maps need 16-byte aligned starts and leading dimensions: the launcher sends any other call
//              to stage 13's cp.async kernel (mma_swizzle_*_unaligned), never to a fault.
// Range:       any M, N, K >= 1 (a tile with K past the matrix reads zeros); beta == 0 never reads C.
#include <cuda.h>   // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace {

// GROUP_M 16: a wave of 132 tiles covers about 16 x 8 of them (2048 x 2112 of D), whose operands are fewer bytes
// than with 8 (1024 x 4224) or 32 (4096 x 1056).  ncu at 4096^3 fp16: DRAM reads 0.187 -> 0.148 GB; the probe:
// 0.3-2.3 points faster at three of the four target points (docs/14_wgmma.md, "GROUP_M, skewed consumers").
constexpr int BK = 64, GROUP_M = 16;

// A kernel's shape, field by field: `consumers` warpgroups of 64 x `wg_m` rows each (wg_m wgmmas of m64n`bn` a
// k16 step); `producer_wg`: a separate warpgroup issues the copies; `stages`: the ring's slots; `persistent`: the
// block walks tiles with the tile scheduler (else it computes one, blockIdx's); `cluster` blocks side by side in
// M share B by multicast; `tma_store`: D leaves through shared memory and TMA stores (else straight from the
// accumulators).  A form names its shape with designated initializers, leaving out trailing fields only: nvcc
// -std=c++17 (the study's dialect) takes designated initializers as an extension and zero-fills a field left out
// before a given one instead of taking its default (C++20 takes the default).  A count zeroed so fails Cfg's
// first static_assert; a flag's default is false anyway.
struct Shape {
    int consumers = 1;
    bool producer_wg = false;
    int stages = 4;
    bool persistent = false;
    int cluster = 1;
    bool tma_store = false;
    int bn = 256;
    int wg_m = 1;
    bool warp_copies = false;   // -1wg only: no empty barriers; after a bar.sync each warp copies a box of the refill
};

// A shape's constants.  S: a constexpr Shape, by reference (C++17, the study's nvcc dialect, takes no template
// parameter of class type).
template <const Shape& S>
struct Cfg {
    static constexpr int CONSUMERS = S.consumers, STAGES = S.stages, CLUSTER = S.cluster, BN = S.bn, WG_M = S.wg_m;
    static constexpr bool PRODUCER_WG = S.producer_wg, PERSISTENT = S.persistent, TMA_STORE = S.tma_store;
    static constexpr bool WARP_COPIES = S.warp_copies;
    static_assert(CONSUMERS > 0 && STAGES > 0 && CLUSTER > 0 && BN > 0 && WG_M > 0,
                  "a count left out before a given field (zero under nvcc -std=c++17): spell it");
    static constexpr int BM = 64 * WG_M * CONSUMERS, ACC = BN / 2;   // ACC: accumulators a thread per m64 block
    static constexpr int THREADS = 128 * CONSUMERS + (PRODUCER_WG ? 128 : 0);
    static constexpr int A_BYTES = BM * BK * 2, SLOT_BYTES = A_BYTES + BK * BN * 2;
    static constexpr int B_BOX_BYTES = 64 * 64 * 2;     // one box of B: 64 k-rows x 64 n (128 bytes a row)
    static constexpr int B_BOXES = BN / 64;             // B's boxes in a slot (tma::load_item)
    static constexpr int PIECE_BYTES = 64 * 64 * 2;     // a 64x64 piece of D (TMA_STORE: two per consumer)
    static constexpr int PIECES_BYTES = TMA_STORE ? 2 * CONSUMERS * PIECE_BYTES : 0;
    // The ring, the consumers' D pieces, 1024 bytes to put them on a 1024-byte boundary (the swizzle's period,
    // and the same offsets in every block of a cluster), and 2 mbarriers a slot.
    static constexpr int SMEM_BYTES = STAGES * SLOT_BYTES + PIECES_BYTES + 1024 + 2 * STAGES * 8;
    static_assert(SMEM_BYTES <= 227 * 1024, "an SM's shared memory");
    // setmaxnreg moves registers within the block's launch pool (THREADS x 168 at 384 threads).
    static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
    static_assert(!PRODUCER_WG || 128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= THREADS * 168,
                  "the block's register pool");
    static_assert(CLUSTER == 1 || PRODUCER_WG, "a cluster's blocks each have a producer warpgroup");
    static_assert(CONSUMERS == 1 || CONSUMERS == 2, "the consumer body is instantiated per warpgroup: Wg<0>, Wg<1>");
    static_assert(!WARP_COPIES || (!PRODUCER_WG && CONSUMERS == 1 && CLUSTER == 1 && B_BOXES == 4),
                  "warp copies: one warpgroup's four warps, a box of B each");
};

// The operands' shared-memory descriptors (wgmma.cuh), 128-byte swizzle: A (K-major): rows 128 bytes apart,
// 8-row groups 1024 (the stride offset; the leading one is unused).  B (N-major): 64-column boxes 8 KiB apart
// (the leading offset), 8-k-row groups 1024 (the stride offset).  The high word is the same for both, so the
// k-loop moves only the low word, in 32 bits.
constexpr uint32_t DESC_HI = wgmma::desc_hi(1024, wgmma::SWIZZLE_128B);

// A consumer warpgroup's index as a compile-time constant (Wg<V>): the consumers' body is instantiated once
// per warpgroup, so that what depends on the index (its rows of A, its named barrier, its epilogue buffers)
// folds into constants and the k-loop's state stays in uniform registers.
template <int V>
struct Wg {};
template <int V>
__device__ __forceinline__ constexpr int wg_index(Wg<V>) { return V; }

// stmatrix.x4: four 8x8 b16 matrices to shared memory, the mirror of ldmatrix (mma_sync.cuh's ldsm_x4): lane
// 4g + t gives elements (g, 2t) and (g, 2t + 1) of matrix i in r[i], and lanes 8i .. 8i + 7 the addresses of
// matrix i's rows.
__device__ __forceinline__ void stsm_x4(uint32_t addr, const uint32_t (&r)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
                 :: "r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

// alpha * acc + beta * C at (row, col) and (row, col + 1), C read only with HAS_C; col + 1 may lie past N.
template <class T, bool HAS_C>
__device__ __forceinline__ float2 epilogue_pair(float v0, float v1, float alpha, float beta, const T* __restrict__ Cm,
                                                idx_t ldc, idx_t row, int col, int M, int N) {
    v0 *= alpha;
    v1 *= alpha;
    if (HAS_C && row < M) {
        if (col + 1 < N) {   // the pair lies inside N: one 4-byte access (ldc is even)
            const float2 c = Elem<T>::unpack(*reinterpret_cast<const uint32_t*>(Cm + row * ldc + col));
            v0 = fmaf(beta, c.x, v0);
            v1 = fmaf(beta, c.y, v1);
        } else if (col < N) {
            v0 = fmaf(beta, Elem<T>::load(Cm + row * ldc + col), v0);
        }
    }
    return make_float2(v0, v1);
}

// A 64 x (2 ACC) tile of D from one m64 block of a consumer warpgroup's accumulators: lane 4g + t of warp w
// holds rows 16w + g and 16w + g + 8, columns 8j + 2t and 8j + 2t + 1 in acc[4j], acc[4j + 1] and acc[4j + 2],
// acc[4j + 3] (PTX ISA, wgmma's accumulator fragment), stored as pairs.  row0: the block's first row.
template <class T, bool HAS_C, int ACC>
__device__ __forceinline__ void store_tile(const float (&acc)[ACC], int row0, int col0, int warp, int lane, int M,
                                           int N, float alpha, float beta, const T* __restrict__ Cm, idx_t ldc,
                                           T* __restrict__ D, idx_t ldd) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const idx_t row = row0 + 16 * warp + (lane >> 2) + 8 * h;
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < ACC / 4; ++j) {
            const int col = col0 + 8 * j + 2 * (lane & 3);
            const float2 v = epilogue_pair<T, HAS_C>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], alpha, beta, Cm, ldc,
                                                     row, col, M, N);
            if (col + 1 < N)   // one 4-byte store (ldd is even)
                *reinterpret_cast<uint32_t*>(D + row * ldd + col) = Elem<T>::pack(v.x, v.y);
            else if (col < N)
                Elem<T>::store(D + row * ldd + col, v.x);
        }
    }
}

// The same tile through shared memory, in 64x64 pieces: the warpgroup writes a piece with 4 stmatrix.x4 a warp
// (each a 16x16 block: matrices (rows +0, +8) x (columns +0, +8)) in the 128-byte swizzle (16-byte chunk c of row
// r at c ^ (r % 8): by the bank arithmetic a matrix's 8 rows fill the 32 banks once, yet ncu counts 124k conflicts
// on 422k store wavefronts at 4096^3 fp16, Gluon's kernel 15k on 331k (the profile of aa433d3): not explained),
// and its first thread stores it with one TMA store, which clips D at M and N.  The pieces alternate between two
// buffers, and a buffer is rewritten once the store two pieces ago has read it.  `first` is the parity of the
// pieces this warpgroup stored before, over all its tiles: a tile whose rows end inside it stores an odd count
// (256x192 tiles, 3 pieces per m64 block), and a count restarted per tile then rewrote the buffer that the last
// store could still be reading (wrong rows at 5000x7000x64, found on the H200: docs/14_wgmma.md).
template <class C, class T, bool HAS_C, int ACC>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[ACC], uint32_t bufs, int first,
                                               const CUtensorMap& map_d, int row0, int col0, int warp, int lane,
                                               int barrier, int M, int N, float alpha, float beta,
                                               const T* __restrict__ Cm, idx_t ldc) {
    const bool leader = (threadIdx.x & 127) == 0;
    const int r = 16 * warp + 8 * ((lane >> 3) & 1) + (lane & 7);   // the row this lane addresses
    const idx_t row = row0 + 16 * warp + (lane >> 2);                // the rows it holds: row, row + 8
#pragma unroll
    for (int p = 0; p < ACC / 32; ++p) {
        const uint32_t buf = bufs + ((first + p) & 1) * C::PIECE_BYTES;
        if (leader) tma::store_wait<1, true>();
        asm volatile("bar.sync %0, 128;\n" :: "r"(barrier) : "memory");
#pragma unroll
        for (int q = 0; q < 4; ++q) {   // 16-column blocks of the piece
            uint32_t v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {   // matrix i: rows + 8 (i & 1), columns + 8 (i >> 1)
                const int j = 8 * p + 2 * q + (i >> 1), h = i & 1;
                const float2 e = epilogue_pair<T, HAS_C>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], alpha, beta, Cm,
                                                         ldc, row + 8 * h, col0 + 8 * j + 2 * (lane & 3), M, N);
                v[i] = Elem<T>::pack(e.x, e.y);
            }
            const int chunk = 2 * q + (lane >> 4);
            stsm_x4(buf + r * 128 + ((chunk ^ (r & 7)) << 4), v);
        }
        async_copy::fence_async_shared();   // the piece, visible to the copy engine
        asm volatile("bar.sync %0, 128;\n" :: "r"(barrier) : "memory");
        if (leader) {
            tma::store_2d(map_d, buf, col0 + 64 * p, row0);
            tma::store_commit();
        }
    }
}

// The block's tiles, in units of a cluster's CLUSTER x 1 tiles, numbered in GROUP_M-grouped order; block `rank`
// of a cluster computes tile-row tmc * CLUSTER + rank (past M for an odd last one: zeros in, nothing stored).
// Without PERSISTENT the grid has a block (cluster) per tile, and the block's tile is its cluster's number;
// with it, the tile scheduler next() walks them: cluster number first, + stride (the grid's clusters), ...
template <class C>
struct Work {
    long long tiles_mc, tiles_n, tiles, first, tile;
    int stride, k_tiles;
    uint32_t rank;
    __device__ Work(int M, int N, int K) {
        tiles_mc = ((M - 1) / C::BM + C::CLUSTER) / C::CLUSTER;
        tiles_n = (N - 1) / C::BN + 1;
        tiles = tiles_mc * tiles_n;
        first = blockIdx.x / C::CLUSTER;
        tile = first;   // a non-persistent block's one tile
        stride = gridDim.x / C::CLUSTER;
        k_tiles = (K - 1) / BK + 1;   // K >= 1; (K + BK - 1) would overflow near 2^31
        rank = blockIdx.x % C::CLUSTER;
    }
    // The tile scheduler: the block's next tile into `tile`; false when it has no work left.
    __device__ bool next() {
        static_assert(C::PERSISTENT, "a block of a non-persistent grid computes one tile, blockIdx's");
        if (first >= tiles) return false;
        tile = first;
        first += stride;
        return true;
    }
    __device__ void at(int& m0, int& n0) const {
        int tmc, tn;
        tile_of<GROUP_M / C::CLUSTER>(tile, tiles_mc, tiles_n, tmc, tn);
        m0 = (tmc * C::CLUSTER + rank) * C::BM;
        n0 = tn * C::BN;
    }
};

// The copies, k-tile after k-tile of the block's tiles, each into the next slot of the ring once the consumers
// of every block of the cluster have released it.  Counters are 32-bit and a tile is taken apart once, so a
// refill is the wait and five copies.
template <class C>
struct Loader {
    const CUtensorMap* map_a;
    const CUtensorMap* map_b;
    uint32_t ring;
    uint64_t *full, *empty;
    Work<C> w;
    bool more_;
    int k = 0, m0 = 0, n0 = 0;
    uint32_t s = 0, phase = 0;   // the next slot, and the parity of its empty barrier's phase to wait for ^ 1

    __device__ Loader(const CUtensorMap* a, const CUtensorMap* b, uint32_t ring_, uint64_t* full_, uint64_t* empty_,
                      const Work<C>& w_)
        : map_a(a), map_b(b), ring(ring_), full(full_), empty(empty_), w(w_) {
        tile(true);
    }
    // The next tile: the scheduler's (PERSISTENT), else the block's one tile, blockIdx's, at the start only.
    __device__ void tile(bool start) {
        if constexpr (C::PERSISTENT) more_ = w.next();
        else more_ = start;
        if (more_) w.at(m0, n0);
        k = 0;
    }
    __device__ bool more() const { return more_; }
    __device__ void next() {   // a fresh barrier's phase of parity 1 counts as complete: the first pass waits not
        async_copy::mbar_wait(&empty[s], phase ^ 1);
        tma::load_item<C>(*map_a, *map_b, ring + s * C::SLOT_BYTES, &full[s], k * BK, m0, n0, w.rank);
        advance();
    }
    // WARP_COPIES: warp `part`'s share of the next k-tile's copies, B's box `part`, and warp 0's also the expect
    // and A's box (the slot is free: the caller's bar.sync).  Copies landing before warp 0's expect leave the
    // phase pending: it completes only on that arrival (PTX ISA: the tx-count may go below zero meanwhile).
    __device__ void share(int part) {
        const uint32_t slot = ring + s * C::SLOT_BYTES;
        if (part == 0) {
            tma::expect_tx(&full[s], C::SLOT_BYTES);
            tma::load_2d(slot, *map_a, k * BK, m0, &full[s]);
        }
        tma::load_2d(slot + C::A_BYTES + part * C::B_BOX_BYTES, *map_b, n0 + 64 * part, k * BK, &full[s]);
        advance();
    }
    __device__ void advance() {
        if (++s == C::STAGES) s = 0, phase ^= 1;
        if (++k == w.k_tiles) tile(false);
    }
};

template <class C, class T>
__device__ __forceinline__ void gemm_wgmma(const CUtensorMap& map_a, const CUtensorMap& map_b, int M, int N, int K,
                                           double alpha_, double beta_, const T* __restrict__ Cm, idx_t ldc,
                                           T* __restrict__ D, idx_t ldd, const CUtensorMap* map_d) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t raw = async_copy::smem_u32(smem), ring = (raw + 1023) & ~1023u;
    const uint32_t pieces = ring + C::STAGES * C::SLOT_BYTES;   // the TMA-store epilogue's buffers
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + (ring - raw) + C::STAGES * C::SLOT_BYTES + C::PIECES_BYTES);
    uint64_t* empty = full + C::STAGES;
    const int tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            async_copy::mbar_init(&full[s], 1);                                 // the producer's expect_tx arrival
            async_copy::mbar_init(&empty[s], 4 * C::CONSUMERS * C::CLUSTER);   // a lane of each consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");   // visible to the copy engine
    }
    if (C::CLUSTER > 1) tma::cluster_sync();   // the peer's barriers exist before anything reaches them
    else __syncthreads();
    const Work<C> work(M, N, K);

    if (C::PRODUCER_WG && tid < 128) {   // the producer warpgroup: thread 0 copies as slots free up, the rest idle
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(C::PRODUCER_REGS));
        if (tid == 0) {
            Loader<C> load(&map_a, &map_b, ring, full, empty, work);
            while (load.more()) load.next();
        }
        __syncwarp();
    } else {
        if (C::PRODUCER_WG) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(C::CONSUMER_REGS));
        // With no producer warpgroup, thread 0 fills the ring first, then refills a slot as it is released
        // (WARP_COPIES: the first lane of each warp, its share).
        Loader<C> load(&map_a, &map_b, ring, full, empty, work);
        if constexpr (C::WARP_COPIES) {
            if ((tid & 31) == 0)
                for (int i = 0; i < C::STAGES && load.more(); ++i) load.share(tid >> 5);
        } else if (!C::PRODUCER_WG && tid == 0) {
            for (int i = 0; i < C::STAGES && load.more(); ++i) load.next();
        }

        const int ctid = tid - (C::PRODUCER_WG ? 128 : 0), warp = (ctid >> 5) & 3, lane = tid & 31;
        const float alpha = (float)alpha_, beta = (float)beta_;
        auto consume = [&](auto wg) {   // consumer warpgroup c's tiles
            constexpr int c = wg_index(decltype(wg){});
            // This consumer's 64 x WG_M rows of A and all of B, in slot 0; a slot, a k16 step, an m64 block (64 rows
            // of 128 bytes: 512 units) move the start address.
            const uint32_t desc_a = wgmma::desc_lo(ring + c * C::WG_M * 64 * 128, 16);
            const uint32_t desc_b = wgmma::desc_lo(ring + C::A_BYTES, C::B_BOX_BYTES);
            // The slot's wgmmas have finished (this warp's): one arrival on its empty barrier in each block of the
            // cluster (lane r for block r).
            auto release = [&](uint32_t s) {
                if constexpr (C::WARP_COPIES) {   // the four warps past the slot's wgmmas, then each copies its share
                    asm volatile("bar.sync 3, 128;\n" ::: "memory");
                    if (lane == 0 && load.more()) load.share(warp);
                    return;
                }
                if (C::CLUSTER > 1) {
                    if (lane < C::CLUSTER) tma::arrive_remote<false>(&empty[s], lane);
                } else if (lane == 0) {
                    async_copy::mbar_arrive(&empty[s]);
                }
                if (!C::PRODUCER_WG && tid == 0 && load.more()) load.next();
            };
            uint32_t s = 0, phase = 0;   // the slot computed next, and the parity of its full barrier's phase
            [[maybe_unused]] int stored = 0;   // the parity of the D pieces this warpgroup has stored, all tiles
            // The block's tiles.  With PERSISTENT the tile scheduler hands them over one after another, the
            // ring's slot and phase (and the epilogue's buffer parity) running on from one into the next;
            // without it the block computes one tile, blockIdx's (Work's constructor): one pass, no loop in SASS.
            Work<C> w = work;
            for (;;) {
                if constexpr (C::PERSISTENT)
                    if (!w.next()) break;   // the tile scheduler: the block's next tile, or none left
                int m0, n0;
                w.at(m0, n0);
                float acc[C::WG_M][C::ACC];
                uint32_t prev = 0;
                for (int kt = 0; kt < w.k_tiles; ++kt) {
                    async_copy::mbar_wait(&full[s], phase);
                    const uint32_t off = s * (C::SLOT_BYTES >> 4);
                    wgmma::fence();
#pragma unroll
                    for (int kk = 0; kk < BK / 16; ++kk)   // k16 steps: 32 bytes along A's rows, 16 k-rows of B
#pragma unroll
                        for (int mi = 0; mi < C::WG_M; ++mi)
                            wgmma::mma<T, C::BN>(acc[mi], wgmma::desc(desc_a + off + 2 * kk + 512 * mi, DESC_HI),
                                                 wgmma::desc(desc_b + off + 128 * kk, DESC_HI), kt | kk);
                    wgmma::commit();
                    wgmma::wait<1>();   // the k-tile before is done: its slot may be refilled while this one runs
#pragma unroll
                    for (int mi = 0; mi < C::WG_M; ++mi) wgmma::hold(acc[mi]);
                    if (kt > 0) release(prev);
                    prev = s;
                    if (++s == C::STAGES) s = 0, phase ^= 1;
                }
                wgmma::wait<0>();
#pragma unroll
                for (int mi = 0; mi < C::WG_M; ++mi) wgmma::hold(acc[mi]);
                release(prev);
#pragma unroll
                for (int mi = 0; mi < C::WG_M; ++mi) {
                    const int row0 = m0 + 64 * (C::WG_M * c + mi);
                    // A cluster's tile past M, or this warpgroup's share of it.  Decided by a warp vote, which
                    // nvcc knows to be warp-uniform: with a plain compare the whole loop's state left the uniform
                    // registers (the k-loop: 59 SASS instructions for 4 HGMMA with the vote, 69 without).
                    if (__all_sync(~0u, row0 >= M)) break;
                    if constexpr (C::TMA_STORE) {
                        const uint32_t bufs = pieces + c * 2 * C::PIECE_BYTES;
                        const int first = stored;
                        stored ^= (C::ACC / 32) & 1;   // an even count per block folds to a constant
                        if (beta != 0.0f)
                            store_tile_tma<C, T, true>(acc[mi], bufs, first, *map_d, row0, n0, warp, lane, 1 + c, M, N,
                                                       alpha, beta, Cm, ldc);
                        else
                            store_tile_tma<C, T, false>(acc[mi], bufs, first, *map_d, row0, n0, warp, lane, 1 + c, M, N,
                                                        alpha, beta, Cm, ldc);
                    } else {
                        if (beta != 0.0f)
                            store_tile<T, true>(acc[mi], row0, n0, warp, lane, M, N, alpha, beta, Cm, ldc, D, ldd);
                        else
                            store_tile<T, false>(acc[mi], row0, n0, warp, lane, M, N, alpha, beta, Cm, ldc, D, ldd);
                    }
                }
                if constexpr (!C::PERSISTENT) break;   // one block per tile
            }
        };
        if (C::CONSUMERS == 1 || ctid < 128) consume(Wg<0>{});
        else consume(Wg<1>{});
        if (C::TMA_STORE && (tid & 127) == 0) tma::store_wait<0, false>();   // the pieces outlive their last store
    }
    // Neither block of a cluster leaves while the other may still multicast into it or arrive on its barriers.
    if (C::CLUSTER > 1) tma::cluster_sync();
}

}  // namespace

// grid (blocks, 1, 1): one block per tile, or (PERSISTENT) fewer, each walking tiles; with ATTR
// __cluster_dims__(CLUSTER, 1, 1), clusters of CLUSTER consecutive blocks.
#define WGMMA_ENTRY(NAME, CFG, T, ATTR)                                                                      \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, 1) ATTR                                      \
    NAME(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N, \
         int K, double alpha, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) { \
        gemm_wgmma<CFG, T>(map_a, map_b, M, N, K, alpha, beta, C, ldc, D, ldd, nullptr);                     \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, CFG::BN, CFG::THREADS, CFG::SMEM_BYTES)
// The TMA-store form takes D's tensor map too (64x64 boxes), last.
#define WGMMA_TMA_ENTRY(NAME, CFG, T, ATTR)                                                                  \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, 1) ATTR                                      \
    NAME(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N, \
         int K, double alpha, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd,  \
         const __grid_constant__ CUtensorMap map_d) {                                                        \
        gemm_wgmma<CFG, T>(map_a, map_b, M, N, K, alpha, beta, C, ldc, D, ldd, &map_d);                      \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, CFG::BN, CFG::THREADS, CFG::SMEM_BYTES)
#define WGMMA_PAIR(ENTRY, NAME, CFG, ATTR)                                                                   \
    ENTRY(NAME##_f16, CFG, __half, ATTR)                                                                     \
    ENTRY(NAME##_bf16, CFG, __nv_bfloat16, ATTR)
#define PAIRS_OF_2 __cluster_dims__(2, 1, 1)

// The forms, each adding one technique to the one before (study/registry.py: cuda:14_wgmma-<form>).
// -1wg: 64x256 tiles, one warpgroup, 5 slots of 40 KiB; a block per tile; each warp copies a box of the refill.
constexpr Shape ONE_WARPGROUP{.consumers = 1, .producer_wg = false, .stages = 5, .persistent = false, .cluster = 1,
                              .tma_store = false, .bn = 256, .wg_m = 1, .warp_copies = true};
WGMMA_PAIR(WGMMA_ENTRY, wgmma_1wg, Cfg<ONE_WARPGROUP>, )
// -ws: 128x256 tiles, a producer and two consumer warpgroups, 4 slots of 48 KiB; still a block per tile.
constexpr Shape SPECIALIZED{.consumers = 2, .producer_wg = true, .stages = 4};
WGMMA_PAIR(WGMMA_ENTRY, wgmma_ws, Cfg<SPECIALIZED>, )
// -persistent: a block per SM, each walking tiles with the tile scheduler.
constexpr Shape SCHEDULED{.consumers = 2, .producer_wg = true, .stages = 4, .persistent = true};
WGMMA_PAIR(WGMMA_ENTRY, wgmma_persistent, Cfg<SCHEDULED>, )
// -cluster: clusters of 2 along M, B multicast.
constexpr Shape CLUSTERED{.consumers = 2, .producer_wg = true, .stages = 4, .persistent = true, .cluster = 2};
WGMMA_PAIR(WGMMA_ENTRY, wgmma_cluster, Cfg<CLUSTERED>, PAIRS_OF_2)
// -tma-store: D out through shared memory and TMA stores.
constexpr Shape CLUSTERED_TMA{.consumers = 2, .producer_wg = true, .stages = 4, .persistent = true, .cluster = 2,
                              .tma_store = true};
WGMMA_PAIR(WGMMA_TMA_ENTRY, wgmma_tma_store, Cfg<CLUSTERED_TMA>, PAIRS_OF_2)
// The registered form, cuda:14_wgmma: two tiles of the TMA-store kernel on balanced grids, the launcher's model
// picking one per call (study/launch/launchers.py).  128x256 tiles, without clusters:
constexpr Shape TMA_STORED{.consumers = 2, .producer_wg = true, .stages = 4, .persistent = true, .cluster = 1,
                           .tma_store = true};
WGMMA_PAIR(WGMMA_TMA_ENTRY, wgmma_tma, Cfg<TMA_STORED>, )
// and, for calls of many tiles, 256x192 tiles (each consumer 128x192: two m64n192k16 a k16 step, 192
// accumulators), 3 slots of 56 KiB, in clusters of 2 along M sharing B by multicast: 22% fewer operand bytes per
// output than 128x256 before multicast.
constexpr Shape WIDE{.consumers = 2, .producer_wg = true, .stages = 3, .persistent = true, .cluster = 2,
                     .tma_store = true, .bn = 192, .wg_m = 2};
WGMMA_PAIR(WGMMA_TMA_ENTRY, wgmma_wide, Cfg<WIDE>, PAIRS_OF_2)

#ifdef WGMMA_EXPLORE
// wgmma_wide without clusters ("t256x192"; docs/14_wgmma.md: slower than with them)
constexpr Shape WIDE_ALONE{.consumers = 2, .producer_wg = true, .stages = 3, .persistent = true, .cluster = 1,
                           .tma_store = true, .bn = 192, .wg_m = 2};
WGMMA_PAIR(WGMMA_TMA_ENTRY, x14_t256, Cfg<WIDE_ALONE>, )
// -1wg with its thread 0 issuing every copy once the four warps have arrived on the slot's empty barrier
// ("thread0"; docs/14_wgmma.md: 1.10-1.18x slower than the warps sharing the refill)
constexpr Shape ONE_WARPGROUP_THREAD0{.consumers = 1, .stages = 5};
WGMMA_PAIR(WGMMA_ENTRY, x14_1wg_thread0, Cfg<ONE_WARPGROUP_THREAD0>, )
#endif
