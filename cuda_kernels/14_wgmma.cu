// Stage 14 - wgmma: Hopper's warpgroup MMA, fed by TMA, warp-specialized, persistent.
//
// Technique:   wgmma.mma_async (sm_90a): a warpgroup (4 warps) multiplies a 64x16 tile of A by a 16x256 tile
//              of B straight out of shared memory, asynchronously, into a 64x256 fp32 accumulator (128
//              registers a thread).  TMA fills a ring of slots in CU_TENSOR_MAP_SWIZZLE_128B boxes, the layout
//              wgmma's shared-memory descriptors name (A K-major, B N-major: "transposed").  mbarriers hand the
//              slots over: full[s] completes when a slot's bytes have landed, empty[s] when every consumer warp
//              reading it (in every block of a cluster) has seen its wgmmas finish.  Each form adds one thing:
//                wgmma_1wg:     one warpgroup per 64x256 tile; its thread 0 also issues the copies.
//                wgmma_ws:      a producer warpgroup (one thread issues TMA) and two consumer warpgroups per
//                               128x256 tile, setmaxnreg 40/232; one block per tile (-ws) or one per SM walking
//                               the tiles in GROUP_M order, the ring running on across tiles (-persistent).
//                wgmma_cluster: the persistent form in clusters of two blocks side by side in M; each copies
//                               half of their shared k-tile of B and multicasts it to both (-cluster).
//                wgmma_tma:     the persistent form (no clusters) with D leaving through shared memory:
//                               stmatrix into the 128-byte swizzle, two 64x64 buffers a consumer, TMA stores.
//                wgmma_wide:    the same for calls of many tiles, 256x192 tiles (each consumer 128x192) in
//                               clusters of 2 with B multicast; the launcher picks it by a model of waves x
//                               tile x measured cost per output (study/launch/launchers.py, CudaModelDispatch).
//                               Both grids are balanced: the fewest blocks that take the same waves of tiles
//                               (at 4096^3, 128 blocks of 4 tiles; the probe: 0.8-1.2 points faster).
// Reproduces:  no seed covers Hopper (seed 000 stops at mma.sync: its kernel 9 is stage 13).  Its
//              anchors: pranjalssh/fast.cu's H100/H200 ladder and ThunderKittens' educational H100 levels.
// Changed:     stage 13 feeds mma.sync m16n8k16 from ldmatrix (4 ldmatrix and 16 mma.sync per warp and k16 step
//              of a 64x64 tile); here one instruction per warpgroup does 64x256x16, operands never in registers.
// Why faster:  the issue slots stage 13 spends on ldmatrix and mma.sync are free, so the tensor pipe runs near
//              its peak; the copy engine does the address work; the TMA-store epilogue (per 64x64 piece, 4
//              stmatrix a warp and one TMA store, against 16 4-byte stores a thread) gives the pipe back sooner.
//              Multicast has each block of a pair copy half of B's boxes (predicted: half its L2 reads of B;
//              ncu: L2 bytes 1.45 -> 1.37 GB in all at fp16 4096^3): within a point of -persistent at 4096^3,
//              3-5 points faster at 8192^3, where the power limit sets the clock (the sweeps of aa433d3).
// Measured:    H100 SXM, the sweep of aa433d3, fp16 4096^3, TFLOP/s (% of cuBLAS; ncu tensor pipe active):
//              stage 13's TMA form 476.1 (64%; 83%) -> -1wg 486.2 (65%; 56%: one warpgroup waits on its own
//              wgmmas) -> -ws 646.3 (87%; 79%: two consumers keep the pipe fed) -> -persistent 653.2 (88%; 82%)
//              -> -cluster 657.9 (88%; 81%, L2 bytes 1.45 -> 1.37 GB) -> with the TMA-store epilogue and a
//              balanced grid instead, cuda:14_wgmma: 743.5 (99.98%; 94.3%, cuBLAS's 95.0%), 671.7 at 8192^3
//              (100.3%, wgmma_wide's tiles); bf16 765.1 (101.5%) and 699.1 (99.2%).  H200: 98.6-102.7%.
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

namespace {

// GROUP_M 16: a wave of 132 tiles covers about 16 x 8 of them (2048 x 2112 of D), whose operands are fewer bytes
// than with 8 (1024 x 4224) or 32 (4096 x 1056).  ncu at 4096^3 fp16: DRAM reads 0.187 -> 0.148 GB; the probe:
// 0.3-2.3 points faster at three of the four target points (docs/14_wgmma.md, "GROUP_M, skewed consumers").
constexpr int BK = 64, GROUP_M = 16;

// CONSUMERS warpgroups of 64 x WG_M rows each (WG_M wgmmas of m64nBN a k16 step); PRODUCER_WG: a separate
// warpgroup issues the copies; CLUSTER blocks side by side in M share B by multicast; TMA_STORE: D leaves
// through shared memory and TMA stores (else straight from the accumulators).
template <int CONSUMERS_, bool PRODUCER_WG_, int STAGES_, int CLUSTER_ = 1, bool TMA_STORE_ = false, int BN_ = 256,
          int WG_M_ = 1>
struct Cfg {
    static constexpr int CONSUMERS = CONSUMERS_, STAGES = STAGES_, CLUSTER = CLUSTER_, BN = BN_, WG_M = WG_M_;
    static constexpr bool PRODUCER_WG = PRODUCER_WG_, TMA_STORE = TMA_STORE_;
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
};

// A shared-memory matrix descriptor, 128-byte swizzle (PTX ISA, "Matrix Descriptor Format"): the start
// address, the leading and stride byte offsets, all in 16-byte units.  A (K-major): rows 128 bytes apart, 8-row
// groups 1024 (the stride offset; the leading one is unused).  B (N-major): 64-column boxes 8 KiB apart (the
// leading offset), 8-k-row groups 1024 (the stride offset).  Its high word (the stride offset and the swizzle)
// is the same for every operand here, so the k-loop moves only the low word, in 32 bits: the start address
// field (bits 0-13) holds any shared address (< 228 KiB, < 2^18), so a slot's or a k16 step's offset added to
// it never carries into the leading offset (bits 16-29).
constexpr uint32_t DESC_HI = (1024 >> 4) | (1u << 30);
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr, uint32_t leading) {
    return ((addr & 0x3FFFF) >> 4) | ((leading >> 4) << 16);
}
__device__ __forceinline__ uint64_t desc(uint32_t lo) { return (uint64_t(DESC_HI) << 32) | lo; }

// A consumer warpgroup's index as a compile-time constant (Wg<V>): the consumers' body is instantiated once
// per warpgroup, so that what depends on the index (its rows of A, its named barrier, its epilogue buffers)
// folds into constants and the k-loop's state stays in uniform registers.
template <int V>
struct Wg {};
template <int V>
__device__ __forceinline__ constexpr int wg_index(Wg<V>) { return V; }

__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }

// Registers an in-flight wgmma writes must stay put until its wait: this empty asm "modifies" them after it.
template <int N>
__device__ __forceinline__ void hold(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}

// d (+)= a b: m64nNk16 (N 256 or 192), fp32 accumulators (N / 2 a thread); a K-major, b N-major (imm-trans-b =
// 1), both in shared memory.  TYPES: the input types' suffix of the instruction.
#define WGMMA_ASM_256(TYPES)                                                                                  \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n wgmma.mma_async.sync.aligned.m64n256k16.f32" TYPES \
                 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 1;\n}\n"                                                  \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
                 : "l"(a), "l"(b), "r"(accumulate))
#define WGMMA_ASM_192(TYPES)                                                                                  \
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %98, 0;\n wgmma.mma_async.sync.aligned.m64n192k16.f32" TYPES \
                 " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 1;\n}\n"                                                    \
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
                 : "l"(a), "l"(b), "r"(accumulate))

template <class T, int N>
__device__ __forceinline__ void mma(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate) {
    static_assert(N == 256 || N == 192, "the wgmma shapes this file spells out");
    constexpr bool f16 = std::is_same<T, __half>::value;
    if constexpr (N == 256) {
        if constexpr (f16) WGMMA_ASM_256(".f16.f16");
        else WGMMA_ASM_256(".bf16.bf16");
    } else {
        if constexpr (f16) WGMMA_ASM_192(".f16.f16");
        else WGMMA_ASM_192(".bf16.bf16");
    }
}
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

// The block's tiles, in units of a cluster's CLUSTER x 1 tiles: cluster number first, + stride, ..., each taken
// apart in GROUP_M-grouped order; block `rank` of a cluster computes tile-row tmc * CLUSTER + rank (past M for
// an odd last one: zeros in, nothing stored).
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
        stride = gridDim.x / C::CLUSTER;
        k_tiles = (K - 1) / BK + 1;   // K >= 1; (K + BK - 1) would overflow near 2^31
        rank = blockIdx.x % C::CLUSTER;
    }
    // The next tile into `tile`; false when the block has no work left.
    __device__ bool next() {
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
        tile();
    }
    __device__ void tile() {
        more_ = w.next();
        if (more_) w.at(m0, n0);
        k = 0;
    }
    __device__ bool more() const { return more_; }
    __device__ void next() {   // a fresh barrier's phase of parity 1 counts as complete: the first pass waits not
        async_copy::mbar_wait(&empty[s], phase ^ 1);
        tma::load_item<C>(*map_a, *map_b, ring + s * C::SLOT_BYTES, &full[s], k * BK, m0, n0, w.rank);
        if (++s == C::STAGES) s = 0, phase ^= 1;
        if (++k == w.k_tiles) tile();
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
        // With no producer warpgroup, thread 0 fills the ring first, then refills a slot as it is released.
        Loader<C> load(&map_a, &map_b, ring, full, empty, work);
        if (!C::PRODUCER_WG && tid == 0)
            for (int i = 0; i < C::STAGES && load.more(); ++i) load.next();

        const int ctid = tid - (C::PRODUCER_WG ? 128 : 0), warp = (ctid >> 5) & 3, lane = tid & 31;
        const float alpha = (float)alpha_, beta = (float)beta_;
        auto consume = [&](auto wg) {   // consumer warpgroup c's tiles
            constexpr int c = wg_index(decltype(wg){});
            // This consumer's 64 x WG_M rows of A and all of B, in slot 0; a slot, a k16 step, an m64 block (64 rows
            // of 128 bytes: 512 units) move the start address.
            const uint32_t desc_a = desc_lo(ring + c * C::WG_M * 64 * 128, 16);
            const uint32_t desc_b = desc_lo(ring + C::A_BYTES, C::B_BOX_BYTES);
            // The slot's wgmmas have finished (this warp's): one arrival on its empty barrier in each block of the
            // cluster (lane r for block r).
            auto release = [&](uint32_t s) {
                if (C::CLUSTER > 1) {
                    if (lane < C::CLUSTER) tma::arrive_remote<false>(&empty[s], lane);
                } else if (lane == 0) {
                    async_copy::mbar_arrive(&empty[s]);
                }
                if (!C::PRODUCER_WG && tid == 0 && load.more()) load.next();
            };
            uint32_t s = 0, phase = 0;   // the slot computed next, and the parity of its full barrier's phase
            [[maybe_unused]] int stored = 0;   // the parity of the D pieces this warpgroup has stored, all tiles
            Work<C> w = work;
            while (w.next()) {
                int m0, n0;
                w.at(m0, n0);
                float acc[C::WG_M][C::ACC];
                uint32_t prev = 0;
                for (int kt = 0; kt < w.k_tiles; ++kt) {
                    async_copy::mbar_wait(&full[s], phase);
                    const uint32_t off = s * (C::SLOT_BYTES >> 4);
                    fence();
#pragma unroll
                    for (int kk = 0; kk < BK / 16; ++kk)   // k16 steps: 32 bytes along A's rows, 16 k-rows of B
#pragma unroll
                        for (int mi = 0; mi < C::WG_M; ++mi)
                            mma<T, C::BN>(acc[mi], desc(desc_a + off + 2 * kk + 512 * mi),
                                          desc(desc_b + off + 128 * kk), kt | kk);
                    commit();
                    wait<1>();   // the k-tile before is done: its slot may be refilled while this one runs
#pragma unroll
                    for (int mi = 0; mi < C::WG_M; ++mi) hold(acc[mi]);
                    if (kt > 0) release(prev);
                    prev = s;
                    if (++s == C::STAGES) s = 0, phase ^= 1;
                }
                wait<0>();
#pragma unroll
                for (int mi = 0; mi < C::WG_M; ++mi) hold(acc[mi]);
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

// grid (blocks, 1, 1): one block per tile, or (persistent) fewer, each walking tiles; with ATTR
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

using OneWarpgroup = Cfg<1, false, 5>;     // 64x256 tiles, 5 slots of 40 KiB
WGMMA_PAIR(WGMMA_ENTRY, wgmma_1wg, OneWarpgroup, )
using Specialized = Cfg<2, true, 4>;       // 128x256 tiles, a producer and two consumer warpgroups, 4 slots of 48 KiB
WGMMA_PAIR(WGMMA_ENTRY, wgmma_ws, Specialized, )
using Clustered = Cfg<2, true, 4, 2>;      // the same in clusters of 2 along M, B multicast
WGMMA_PAIR(WGMMA_ENTRY, wgmma_cluster, Clustered, PAIRS_OF_2)
using TmaStored = Cfg<2, true, 4, 1, true>;   // the persistent form, D out through shared memory and TMA stores
WGMMA_PAIR(WGMMA_TMA_ENTRY, wgmma_tma, TmaStored, )
// The same for calls of many tiles: 256x192 tiles (each consumer 128x192: two m64n192k16 a k16 step, 192
// accumulators), 3 slots of 56 KiB, in clusters of 2 along M sharing B by multicast: 22% fewer operand bytes per
// output than 128x256 before multicast (the launcher's model picks it: study/launch/launchers.py).
using Wide = Cfg<2, true, 3, 2, true, 192, 2>;
WGMMA_PAIR(WGMMA_TMA_ENTRY, wgmma_wide, Wide, PAIRS_OF_2)

#ifdef WGMMA_EXPLORE
using ClusteredTma = Cfg<2, true, 4, 2, true>;   // the same in clusters of 2 ("cluster"; docs/14_wgmma.md: no faster)
WGMMA_PAIR(WGMMA_TMA_ENTRY, x14_cltma, ClusteredTma, PAIRS_OF_2)
using WideAlone = Cfg<2, true, 3, 1, true, 192, 2>;   // wgmma_wide without clusters ("t256x192"; docs/14_wgmma.md)
WGMMA_PAIR(WGMMA_TMA_ENTRY, x14_t256, WideAlone, )
#endif
