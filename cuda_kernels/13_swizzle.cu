// Stage 13 - XOR-swizzled shared memory, and what else makes mma.sync fast.
//
// Technique:   as stage 12, each warp owns a 64x64 tile of D in fp32 registers and feeds mma.sync m16n8k16
//              from shared memory with ldmatrix (x4 for A, x4.trans for row-major B).  Each shared row's
//              16-byte chunks are permuted: chunk c of row r is stored at chunk c ^ (r % 8) (rows of only 4
//              chunks, BK = 32, XOR with (r / 2) % 4, two rows sharing one 128-byte line).  The 8 rows of an
//              ldmatrix 8x8 matrix then read the 8 different chunks of a 128-byte line, all 32 banks, instead
//              of the same 4 banks (stage 12).  Also tuned: 128x256 block tiles (8 warps of 64x64), BK 64
//              through a 4-slot cp.async ring (192 KiB), fragments double-buffered in registers, the next
//              k-tile's copies spread over the k-steps, k-tiles wholly inside A and B copied without bounds
//              checks, blocks walked in groups of 8 block-rows (L2 reuse within a wave), and an epilogue
//              staged through shared memory (C read and D written in 16-byte vectors along a row).
// Reproduces:  seed 000 kernel 9 (mma.sync with swizzling; its get_swizzled_index XORs 8-column groups of
//              2-row pairs - here the unit is the 16-byte chunk ldmatrix reads, as in CUTLASS's Sm80 shared
//              layouts), and the structure of CUTLASS's sm80 multistage mainloop.
// Changed:     stage 12 kept the tiles unswizzled, 128x128x32 in 3 slots, checked bounds on every copy and
//              stored D from the fragments.
// Why faster:  ncu at 4096^3 fp16 (reports/h100/profile.csv): stage 12 spends 218M of its 268M shared-load
//              wavefronts on bank conflicts; here 1.6% are, about what the epilogue's strided reads alone give.
//              Measured: fp16 470.0 TFLOP/s at 4096^3 on an H100, 63.6% of cuBLAS (reports/h100/results.csv).
//
// The TMA form (cuda:13_swizzle-tma, entries mma_swizzle_tma_*): the same warp tiles, swizzle, ldmatrix and
//              mma.sync; the copy engine (TMA) fills each slot from two tensor maps with its 128-byte swizzle
//              (swz<8>), issued by one thread of a producer warpgroup once the slot's empty mbarrier says all
//              256 consumer threads have read it; the consumers wait on its full mbarrier, so there is no block
//              barrier in the loop.  Persistent (one block per SM), so every tile's prologue but the first
//              overlaps the tile before; D is stored from the registers; setmaxnreg gives the producers 40
//              registers and the consumers 232.  Edges: the tensor maps read zeros past M, N and K; stores
//              are masked.
// Why faster:  predicted ~70% of cuBLAS (the ablations: docs/13_swizzle.md).  Measured: fp16 476.3 TFLOP/s at
//              4096^3 on an H100, 64.5% of cuBLAS (reports/h100/results.csv).
//
// Ragged edges: a copy whose source lies past M, N or K copies 0 bytes (cp.async src-size) and points at the
//              matrix base, so no out-of-range address is formed; a 16-byte chunk that straddles K (A) or N
//              (B) is loaded element by element and stored with zeros after them (as in stage 12).
//              Stores are masked per row, and per element where a 16-byte run crosses N.
// Alignment:   mma_swizzle_{f16,bf16} need 16-byte aligned operand starts and leading dimensions (the launcher
//              checks); the _unaligned twins are the same template with 2-byte loads (packed into 16-byte
//              shared stores, synchronous) and element-wise epilogue accesses.
#include <cuda.h>   // CUtensorMap
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"
#include "tma.cuh"

namespace {

using async_copy::cp16;   // cp16(shared address, src): a whole 16-byte chunk

template <bool B> struct Flag { static constexpr bool value = B; };

// ---- the tile ----------------------------------------------------------------------------------------------
// Byte offset of chunk c (16 bytes, 8 elements) of row r in a swizzled tile of CPR chunks per row.  Adding a
// multiple of 16 to r changes neither XOR term, which the fragment addressing below relies on.
template <int CPR>
__device__ __forceinline__ int swz(int r, int c) {
    static_assert(CPR == 4 || CPR % 8 == 0, "rows of 4 chunks, or of a multiple of 8");
    return (r * CPR + (CPR == 4 ? c ^ ((r >> 1) & 3) : c ^ (r & 7))) * 16;
}

// A warp's fragments for one k-step: MI m16 tiles of A from a_addr (16 rows apart, A_ROW bytes a row) and NJ
// pairs of B's n8 tiles from b_base + b_off[j] (mma_sync.cuh's mma_step multiplies them).
template <int MI, int NJ, int A_ROW>
__device__ __forceinline__ void load_fragments(uint32_t (&af)[MI][4], uint32_t (&bf)[NJ][4], uint32_t a_addr,
                                               uint32_t b_base, const int (&b_off)[NJ]) {
#pragma unroll
    for (int i = 0; i < MI; ++i) ldsm_x4(af[i], a_addr + i * 16 * A_ROW);
#pragma unroll
    for (int j = 0; j < NJ; ++j) ldsm_x4_trans(bf[j], b_base + b_off[j]);
}

// STAGED: the epilogue goes through shared memory (false: D stored from the fragments, as in stage 12).
// ABL (probe ablations only, docs/13_swizzle.md, never registered: their results are wrong): 1 = no copies in the
// k-loop, 2 = no fragment loads in the k-loop, 4 = no cp.async wait or barrier in the k-loop.
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_, int GROUP_M_ = 8, bool STAGED_ = true,
          int ABL_ = 0>
struct Cfg {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
    static constexpr int STAGES = STAGES_, GROUP_M = GROUP_M_, ABL = ABL_;
    static constexpr bool STAGED = STAGED_;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int MI = WM / 16, NJ = WN / 16, KK = BK / 16;      // m16 tiles, n16 pairs, k16 steps
    static constexpr int CPR_A = BK / 8, CPR_B = BN / 8;                 // 16-byte chunks per row
    static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, SLOT_BYTES = A_BYTES + B_BYTES;
    static constexpr int A_ROWS = THREADS / CPR_A, B_ROWS = THREADS / CPR_B;   // rows copied per pass
    static constexpr int A_COPIES = BM / A_ROWS, B_COPIES = BK / B_ROWS, COPIES = A_COPIES + B_COPIES;
    static constexpr int PARTS = KK - 1;                                // k-steps that issue the copies
    static constexpr int EPI_PITCH = BN + 8;                            // floats: see the epilogue
    static constexpr int RING_BYTES = STAGES * SLOT_BYTES, EPI_BYTES = BM * EPI_PITCH * 4;
    static constexpr int SMEM_BYTES = RING_BYTES > EPI_BYTES || !STAGED ? RING_BYTES : EPI_BYTES;
    static_assert(WM % 16 == 0 && WN % 16 == 0 && KK >= 2 && STAGES >= 3, "tile shape");
    static_assert(THREADS % CPR_A == 0 && THREADS % CPR_B == 0 && BM % A_ROWS == 0 && BK % B_ROWS == 0,
                  "copies divide evenly");
    // A thread copies rows r0, r0 + A_ROWS, ...: a multiple of 8 apart, so one swizzle phase for all of them.
    static_assert(A_ROWS % 8 == 0 && B_ROWS % 8 == 0, "one swizzle phase per thread");
    static_assert((BM * BN / 8) % THREADS == 0, "epilogue chunks divide evenly");
};

// A thread's copies of every k-tile: where they come from (ChunkSources) and where they go in a swizzled slot.
template <class C, class T, bool VEC>
struct Loader : ChunkSources<C, T> {
    using Src = ChunkSources<C, T>;
    using Src::a_src, Src::b_src, Src::a_step, Src::b_step, Src::ldb, Src::a_rows_ok, Src::a_k, Src::b_k,
        Src::b_cols, Src::b_full;
    bool inside;             // the block's tile lies inside M and N: k-tiles inside K need no checks
    uint32_t a_dst, b_dst;   // byte offsets of the first copies in a slot

    __device__ __forceinline__ Loader(const T* A, idx_t lda, const T* B, idx_t ldb_, int M, int N, int m0,
                                      int n0, int tid)
        : Src(A, lda, B, ldb_, M, N, m0, n0, tid) {
        const int ar = tid / C::CPR_A, ac = tid % C::CPR_A, br = tid / C::CPR_B, bc = tid % C::CPR_B;
        a_dst = swz<C::CPR_A>(ar, ac);
        b_dst = C::A_BYTES + swz<C::CPR_B>(br, bc);
        inside = VEC && m0 + C::BM <= M && n0 + C::BN <= N;
    }

    // Copy j of k-tile kt into the slot at shared address `slot` (j < A_COPIES: A, else B).
    // FAST: the whole k-tile is in range, so every copy is 16 bytes from where it says: no bounds, no
    // selects (a quarter of the k-loop's instructions at 4096^3 went on those).
    template <int J, bool FAST>
    __device__ __forceinline__ void copy(uint32_t slot, int K, int kt) const {
        if (FAST) {
            if (J < C::A_COPIES) cp16(slot + a_dst + J * C::A_ROWS * C::BK * 2, a_src + J * a_step + kt * C::BK);
            else cp16(slot + b_dst + (J - C::A_COPIES) * C::B_ROWS * C::BN * 2,
                      b_src + (idx_t)kt * C::BK * ldb + (J - C::A_COPIES) * b_step);
        } else if (J < C::A_COPIES) {
            constexpr int I = J;
            const int k = kt * C::BK + a_k, left = K - k;
            const bool ok = ((a_rows_ok >> I) & 1) && left > 0;
            const T* src = a_src + I * a_step + kt * C::BK;
            const uint32_t dst = slot + a_dst + I * C::A_ROWS * C::BK * 2;
            const int n = ok ? min(left, 8) : 0;
            if (VEC && n == 8) cp16(dst, src);   // partial chunks by plain loads: see fill_chunk
            else fill_chunk(dst, src, n);
        } else {
            constexpr int I = J - C::A_COPIES;
            const int k = kt * C::BK + b_k + I * C::B_ROWS;
            const bool ok = k < K && b_cols > 0;
            const T* src = b_src + (idx_t)kt * C::BK * ldb + I * b_step;
            const uint32_t dst = slot + b_dst + I * C::B_ROWS * C::BN * 2;
            if (VEC && ok && b_full) cp16(dst, src);
            else fill_chunk(dst, src, ok ? b_cols : 0);
        }
    }

    // Part kk of PARTS of k-tile kt's copies (the next k-tile's copies are spread over the k-steps; kk is a
    // constant once the k-step loop is unrolled).
    template <int P, bool FAST>
    __device__ __forceinline__ void part_at(int kk, uint32_t slot, int K, int kt) const {
        if (kk == P) part_range<P * C::COPIES / C::PARTS, (P + 1) * C::COPIES / C::PARTS, FAST>(slot, K, kt);
        if constexpr (P + 1 < C::PARTS) part_at<P + 1, FAST>(kk, slot, K, kt);
    }
    template <int J, int HI, bool FAST>
    __device__ __forceinline__ void part_range(uint32_t slot, int K, int kt) const {
        if constexpr (J < HI) {
            copy<J, FAST>(slot, K, kt);
            part_range<J + 1, HI, FAST>(slot, K, kt);
        }
    }
    __device__ __forceinline__ void all(uint32_t slot, int K, int kt) const {
        part_range<0, C::COPIES, false>(slot, K, kt);
    }
};

template <class C, class T, bool VEC>
__device__ __forceinline__ void gemm_swizzle(int M, int N, int K, double alpha_, const T* __restrict__ A, idx_t lda,
                                             const T* __restrict__ B, idx_t ldb, double beta_,
                                             const T* __restrict__ Cm, idx_t ldc, T* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t ring = async_copy::smem_u32(smem);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / C::WARPS_N, wn = warp % C::WARPS_N;

    int tm, tn;
    tile_of<C::GROUP_M>((long long)blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, tm, tn);
    const int m0 = tm * C::BM, n0 = tn * C::BN;

    float acc[C::MI][2 * C::NJ][4];
    zero_fragments(acc);

    const Loader<C, T, VEC> loader(A, lda, B, ldb, M, N, m0, n0, tid);
    const int k_tiles = (K + C::BK - 1) / C::BK;

    // Fragment addresses (byte offsets in a slot).  ldmatrix lane l points at row l % 16, chunk l / 16 of a
    // 16x16 block: A's m16 tile (rows of A, chunks along k) and a pair of B's n8 tiles (rows of k, chunks
    // along n).  Another m16 tile or k-step adds 16 rows, a constant that leaves the swizzle alone.
    int a_off[C::KK], b_off[C::NJ];
#pragma unroll
    for (int kk = 0; kk < C::KK; ++kk) a_off[kk] = swz<C::CPR_A>(wm * C::WM + lane % 16, 2 * kk + lane / 16);
#pragma unroll
    for (int j = 0; j < C::NJ; ++j)
        b_off[j] = C::A_BYTES + swz<C::CPR_B>(lane % 16, wn * C::WN / 8 + 2 * j + lane / 16);

    uint32_t af[2][C::MI][4], bf[2][C::NJ][4];
    auto load_frags = [&](int buf, uint32_t slot, int kk) {
        load_fragments<C::MI, C::NJ, C::BK * 2>(af[buf], bf[buf], slot + a_off[kk], slot + kk * 16 * C::BN * 2, b_off);
    };

    // Prologue: STAGES-1 k-tiles in flight.  Every k-tile commits one group (empty past the end), so
    // wait_group<STAGES-2> always means "the next k-tile has landed".
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; ++s) {
        if (s < k_tiles) loader.all(ring + s * C::SLOT_BYTES, K, s);
        async_copy::commit();
    }
    async_copy::wait_group<C::STAGES - 2>();
    __syncthreads();

    int read = 0, write = C::STAGES - 1;   // ring slots: the k-tile computed now, the k-tile copied now
    uint32_t rslot = ring;
    load_frags(0, rslot, 0);
    // One k-tile.  FAST: the k-tile copied now (kt + STAGES-1) is wholly inside A and B, so its copies need
    // no bounds; a separate loop for those k-tiles keeps the checks (and their registers) out of it.
    auto k_tile = [&](auto fast, int kt, bool fill) {
        const uint32_t wslot = ring + write * C::SLOT_BYTES;
        const int kc = kt + C::STAGES - 1;
#pragma unroll
        for (int kk = 0; kk < C::KK; ++kk) {
            // Copies of k-tile kt+STAGES-1 go into the slot of k-tile kt-1, which every warp finished
            // reading before the previous k-tile's barrier.  The unaligned path's copies pass through
            // registers, so they go first, while only one set of fragments is live.
            if (!VEC && kk < C::PARTS && fill) loader.template part_at<0, false>(kk, wslot, K, kc);
            // Fragments of the next k-step: this k-tile's, or (last step) the next k-tile's first, whose
            // slot the barrier at step KK-2 made visible.
            if (!(C::ABL & 2)) load_frags((kk + 1) % 2, rslot, (kk + 1) % C::KK);
            if (!(C::ABL & 1) && VEC && kk < C::PARTS && fill)
                loader.template part_at<0, decltype(fast)::value>(kk, wslot, K, kc);
            mma_step<T>(acc, af[kk % 2], bf[kk % 2]);
            if (kk == C::KK - 2) {
                async_copy::commit();
                // One barrier per k-tile: k-tile kt+1 is visible to all, and every warp has read its last
                // fragments of k-tile kt-1's slot (the copies above were issued after the previous one).
                if (!(C::ABL & 4)) {
                    async_copy::wait_group<C::STAGES - 2>();
                    __syncthreads();
                }
                read = read == C::STAGES - 1 ? 0 : read + 1;
                write = write == C::STAGES - 1 ? 0 : write + 1;
                rslot = ring + read * C::SLOT_BYTES;
            }
        }
    };
    int kt = 0;
    if (loader.inside)
        for (const int k_inside = K / C::BK - (C::STAGES - 1); kt < k_inside; ++kt) k_tile(Flag<true>(), kt, true);
    for (; kt < k_tiles; ++kt) k_tile(Flag<false>(), kt, kt + C::STAGES - 1 < k_tiles);
    async_copy::wait_all();   // nothing may still write the ring when the epilogue reuses it
    const float alpha = (float)alpha_, beta = (float)beta_;
    if constexpr (!C::STAGED) {
        // The warp's origin as one 64-bit row index and one column (what x13_direct was measured with).
        store_fragments<C::MI, 2 * C::NJ, T, VEC>(acc, (idx_t)(m0 + wm * C::WM), 0, n0 + wn * C::WN, 0, lane, M, N,
                                                  alpha, beta, Cm, ldc, D, ldd);
        return;
    }
    __syncthreads();

    // Epilogue: the fp32 tile goes through shared memory so that C and D move as 16-byte row vectors.  A
    // fragment row holds 8 floats per 4 lanes; with a pitch of BN+8 floats (8 banks on) a warp's 8 rows
    // fill 2 x 32 banks, the minimum 2 wavefronts for 256 bytes.
    float* stage = reinterpret_cast<float*>(smem);
#pragma unroll
    for (int i = 0; i < C::MI; ++i)
#pragma unroll
        for (int j = 0; j < 2 * C::NJ; ++j) {
            const int r = wm * C::WM + 16 * i + lane / 4, c = wn * C::WN + 8 * j + 2 * (lane % 4);
            *reinterpret_cast<float2*>(&stage[r * C::EPI_PITCH + c]) = make_float2(acc[i][j][0], acc[i][j][1]);
            *reinterpret_cast<float2*>(&stage[(r + 8) * C::EPI_PITCH + c]) = make_float2(acc[i][j][2], acc[i][j][3]);
        }
    __syncthreads();
#pragma unroll 4
    for (int q = tid; q < C::BM * C::BN / 8; q += C::THREADS) {
        const int r = q / C::CPR_B, c = 8 * (q % C::CPR_B);
        const idx_t row = m0 + r;
        const int col = n0 + c;
        if (row >= M || col >= N) continue;
        const float4 s0 = *reinterpret_cast<const float4*>(&stage[r * C::EPI_PITCH + c]);
        const float4 s1 = *reinterpret_cast<const float4*>(&stage[r * C::EPI_PITCH + c + 4]);
        float v[8] = {alpha * s0.x, alpha * s0.y, alpha * s0.z, alpha * s0.w,
                      alpha * s1.x, alpha * s1.y, alpha * s1.z, alpha * s1.w};
        T* d = D + row * ldd + col;
        if (VEC && col + 8 <= N) {
            if (beta != 0.0f) {
                const uint4 cv = *reinterpret_cast<const uint4*>(Cm + row * ldc + col);
                const uint32_t cw[4] = {cv.x, cv.y, cv.z, cv.w};
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const float2 f = Elem<T>::unpack(cw[e]);
                    v[2 * e] = fmaf(beta, f.x, v[2 * e]);
                    v[2 * e + 1] = fmaf(beta, f.y, v[2 * e + 1]);
                }
            }
            *reinterpret_cast<uint4*>(d) = make_uint4(Elem<T>::pack(v[0], v[1]), Elem<T>::pack(v[2], v[3]),
                                                      Elem<T>::pack(v[4], v[5]), Elem<T>::pack(v[6], v[7]));
        } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
                if (col + e < N)
                    Elem<T>::store(d + e, beta != 0.0f ? fmaf(beta, Elem<T>::load(Cm + row * ldc + col + e), v[e])
                                                       : v[e]);
        }
    }
}

// ---- the persistent TMA form (mma_swizzle_tma_*) ------------------------------------------------------------
// The copy engine writes each slot, with the same XOR swizzle: CU_TENSOR_MAP_SWIZZLE_128B stores 16-byte chunk
// c of a 128-byte row r at chunk c ^ (r % 8) of its 1024-byte group, which is swz<8>.  A's tile is one box of
// BM rows x 64 k (128-byte rows); B's 64 k-rows x BN columns are BN / 64 boxes of 64 x 64, each its own 8 KiB
// block, since a swizzled box row holds at most 128 bytes.

// CLUSTER blocks (1 or 2) side by side in M share each k-tile of B: each copies BN / 64 / CLUSTER of its boxes and
// multicasts them to both, so a block fetches 16 + 32 / CLUSTER KiB per k-tile from L2 instead of 48.
template <int BN_, int STAGES_, int CLUSTER_>
struct TmaCfg : Cfg<128, BN_, 64, 2, BN_ / 64, STAGES_, 8, false> {
    using Base = Cfg<128, BN_, 64, 2, BN_ / 64, STAGES_, 8, false>;
    static constexpr int CLUSTER = CLUSTER_, B_BOX_BYTES = 64 * 64 * 2, B_BOXES = BN_ / 64;
    static constexpr int ALL_THREADS = Base::THREADS + 128;                        // + the producer warpgroup
    // Dynamic shared memory: the ring, 1024 bytes to put it on a 1024-byte boundary, and the full, empty and
    // peer_free mbarriers of each slot (gemm_swizzle_tma).
    static constexpr int SMEM_BYTES = Base::RING_BYTES + 1024 + 3 * STAGES_ * (int)sizeof(uint64_t);
    // Registers: 65536 per SM split as 128 x PRODUCER_REGS + 256 x CONSUMER_REGS (setmaxnreg, multiples of 8).
    static constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
    static_assert(128 * PRODUCER_REGS + Base::THREADS * CONSUMER_REGS <= 65536, "register file");
    static_assert(Base::WN == 64 && Base::KK % 2 == 0 && (CLUSTER_ == 1 || CLUSTER_ == 2),
                  "one B box per warp column");
};

// Warp specialization on top of the persistent grid (one block per SM; with CLUSTER 2, pairs of blocks): one
// thread of a producer warpgroup copies k-tiles into the ring as fast as slots free up, running on across tile
// boundaries (the next tile's first k-tiles land while the consumers finish this one and store D from their
// registers); 8 consumer warps compute, exactly as the cp.async form's warps do.  Items are numbered across the
// block's tiles: item q is k-tile q % k_tiles of the block's (q / k_tiles)-th tile, in slot q % STAGES.  The
// slots hand over by mbarriers alone: full[s] completes when slot s has been written, empty[s] when all 256
// consumer threads have read it (and, in a cluster, peer_free[s] when the peer's consumers have too).  setmaxnreg
// moves registers from the producer warpgroup, which needs few, to the consumers' 64x64 accumulator tiles.
template <class C, class T>
__device__ __forceinline__ void gemm_swizzle_tma(const CUtensorMap& map_a, const CUtensorMap& map_b, int M, int N,
                                                 int K, double alpha_, double beta_, const T* __restrict__ Cm,
                                                 idx_t ldc, T* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(128) unsigned char smem[];
    // SWIZZLE_128B swizzles by shared address bits 7-9, so slots start on 1024-byte boundaries (and at the same
    // offsets in both blocks of a cluster, which multicast needs).
    const uint32_t raw = async_copy::smem_u32(smem), ring = (raw + 1023) & ~1023u;
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + (ring - raw) + C::RING_BYTES);
    uint64_t* empty = full + C::STAGES;
    uint64_t* peer_free = empty + C::STAGES;
    const int tid = threadIdx.x;
    const uint32_t rank = blockIdx.x % C::CLUSTER;   // 1-D grid: a cluster is CLUSTER consecutive blocks
    if (tid == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            async_copy::mbar_init(&full[s], 1);
            async_copy::mbar_init(&empty[s], C::THREADS);
            async_copy::mbar_init(&peer_free[s], 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");   // visible to the copy engine
    }
    if (C::CLUSTER > 1) tma::cluster_sync();   // the peer's barriers exist before anything reaches them
    else __syncthreads();

    // The block's tiles: first, first + stride, ... below tiles, in units of a cluster's CLUSTER x 1 tiles.
    // (Worked out after setmaxnreg in each branch: before it, under the 168-register entry limit, ptxas spilled
    // them.)
    const long long tiles_n = (N + C::BN - 1) / C::BN;
    auto tiles_mc = [&] { return ((M + C::BM - 1) / C::BM + C::CLUSTER - 1) / C::CLUSTER; };
    auto first = [&] { return (long long)(blockIdx.x / C::CLUSTER); };
    const int stride = gridDim.x / C::CLUSTER, k_tiles = (K + C::BK - 1) / C::BK;

    if (tid < 128) {   // the producer warpgroup: thread 0 copies, the rest idle
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" :: "n"(C::PRODUCER_REGS));
        const long long tiles = tiles_mc() * tiles_n;
        if (tid == 0) {
            uint32_t q = 0;
            for (long long tile = first(); tile < tiles; tile += stride) {
                int tmc, tn;
                tile_of<C::GROUP_M / C::CLUSTER>(tile, tiles_mc(), tiles_n, tmc, tn);
                const int m0 = (tmc * C::CLUSTER + rank) * C::BM, n0 = tn * C::BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++q) {
                    const uint32_t s = q % C::STAGES;
                    if (q >= C::STAGES) {   // item q - STAGES must have left the slot, here and in the peer
                        const uint32_t parity = (q / C::STAGES + 1) & 1;
                        async_copy::mbar_wait(&empty[s], parity);
                        if (C::CLUSTER > 1) {
                            tma::arrive_remote(&peer_free[s], rank ^ 1);
                            async_copy::mbar_wait(&peer_free[s], parity);
                        }
                    }
                    tma::load_item<C>(map_a, map_b, ring + s * C::SLOT_BYTES, &full[s], kt * C::BK, m0, n0, rank);
                }
            }
        }
        __syncwarp();
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" :: "n"(C::CONSUMER_REGS));
        const int ctid = tid - 128, lane = ctid % 32, warp = ctid / 32;
        const int wm = warp / C::WARPS_N, wn = warp % C::WARPS_N;
        // Fragment addresses in a slot: A as in the cp.async form; B's n16 pair j of this warp lies in box wn.
        int a_off[C::KK], b_off[C::NJ];
#pragma unroll
        for (int kk = 0; kk < C::KK; ++kk) a_off[kk] = swz<C::CPR_A>(wm * C::WM + lane % 16, 2 * kk + lane / 16);
#pragma unroll
        for (int j = 0; j < C::NJ; ++j)
            b_off[j] = C::A_BYTES + wn * C::B_BOX_BYTES + swz<8>(lane % 16, 2 * j + lane / 16);
        uint32_t af[2][C::MI][4], bf[2][C::NJ][4];
        auto load_frags = [&](int buf, uint32_t slot, int kk) {   // B's box rows are 128 bytes
            load_fragments<C::MI, C::NJ, C::BK * 2>(af[buf], bf[buf], slot + a_off[kk], slot + kk * 16 * 128, b_off);
        };
        auto slot_of = [&](uint32_t q) { return ring + q % C::STAGES * C::SLOT_BYTES; };
        auto wait_full = [&](uint32_t q) { async_copy::mbar_wait(&full[q % C::STAGES], (q / C::STAGES) & 1); };

        const float alpha = (float)alpha_, beta = (float)beta_;
        const long long tiles = tiles_mc() * tiles_n;
        uint32_t q = 0;   // the item computed now
        for (long long tile = first(); tile < tiles; tile += stride) {
            int tmc, tn;
            tile_of<C::GROUP_M / C::CLUSTER>(tile, tiles_mc(), tiles_n, tmc, tn);
            const int tm = tmc * C::CLUSTER + rank;   // may lie past M (odd tiles_m): zeros in, nothing stored
            float acc[C::MI][2 * C::NJ][4];
            zero_fragments(acc);
            wait_full(q);
            load_frags(0, slot_of(q), 0);
            for (int kt = 0; kt < k_tiles; ++kt, ++q) {
                const uint32_t slot = slot_of(q);
#pragma unroll
                for (int kk = 0; kk < C::KK; ++kk) {
                    // The next k-step's fragments: this k-tile's, or (last step) the next k-tile's first.
                    if (kk + 1 < C::KK) {
                        load_frags((kk + 1) % 2, slot, kk + 1);
                    } else if (kt + 1 < k_tiles) {
                        wait_full(q + 1);
                        load_frags(0, slot_of(q + 1), 0);
                    }
                    mma_step<T>(acc, af[kk % 2], bf[kk % 2]);
                }
                // This thread's last read of the slot fed the mma.sync just issued, which waited for it.
                async_copy::mbar_arrive(&empty[q % C::STAGES]);
            }
            store_fragments<C::MI, 2 * C::NJ, T, true>(acc, (idx_t)tm * C::BM, wm * C::WM, tn * C::BN, wn * C::WN, lane,
                                                       M, N, alpha, beta, Cm, ldc, D, ldd);
        }
    }
    // Neither block of a cluster leaves while the other may still signal its barriers or write its ring.
    if (C::CLUSTER > 1) tma::cluster_sync();
}

}  // namespace

// Dynamic shared memory per block: Cfg::SMEM_BYTES, exported with the tile and block size (STUDY_ENTRY_FACTS).
#define SWIZZLE_ENTRY(NAME, CFG, T, VEC, MIN_BLOCKS)                                                            \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, MIN_BLOCKS)                                    \
    NAME(int M, int N, int K, double alpha, const T* __restrict__ A, idx_t lda, const T* __restrict__ B,     \
         idx_t ldb, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) {         \
        gemm_swizzle<CFG, T, VEC>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);                      \
    }                                                                                                         \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, CFG::BN, CFG::THREADS, CFG::SMEM_BYTES)
#define SWIZZLE_PAIR(NAME, CFG, MIN_BLOCKS)                                                                   \
    SWIZZLE_ENTRY(NAME##_f16, CFG, __half, true, MIN_BLOCKS)                                                  \
    SWIZZLE_ENTRY(NAME##_bf16, CFG, __nv_bfloat16, true, MIN_BLOCKS)

#ifdef MMA_EXPLORE
// Candidates for python -m study.probe (not registered); docs/13_swizzle.md records what they gave.
using X13_128X256X64_S3 = Cfg<128, 256, 64, 2, 4, 3>;
SWIZZLE_PAIR(x13_128x256x64_s3, X13_128X256X64_S3, 1)
using X13_256X128X64_S4 = Cfg<256, 128, 64, 4, 2, 4>;
SWIZZLE_PAIR(x13_256x128x64_s4, X13_256X128X64_S4, 1)
using X13_128X256X32_S4 = Cfg<128, 256, 32, 2, 4, 4>;
SWIZZLE_PAIR(x13_128x256x32_s4, X13_128X256X32_S4, 1)
using X13_DIRECT = Cfg<128, 256, 64, 2, 4, 4, 8, false>;
SWIZZLE_PAIR(x13_direct, X13_DIRECT, 1)
using X13_G16 = Cfg<128, 256, 64, 2, 4, 4, 16>;
SWIZZLE_PAIR(x13_g16, X13_G16, 1)
using X13_ABL1 = Cfg<128, 256, 64, 2, 4, 4, 8, true, 1>;
SWIZZLE_PAIR(x13_abl1, X13_ABL1, 1)
using X13_ABL2 = Cfg<128, 256, 64, 2, 4, 4, 8, true, 2>;
SWIZZLE_PAIR(x13_abl2, X13_ABL2, 1)
using X13_ABL4 = Cfg<128, 256, 64, 2, 4, 4, 8, true, 4>;
SWIZZLE_PAIR(x13_abl4, X13_ABL4, 1)
using X13_ABL3 = Cfg<128, 256, 64, 2, 4, 4, 8, true, 3>;
SWIZZLE_PAIR(x13_abl3, X13_ABL3, 1)
#endif

using Swizzled = Cfg<128, 256, 64, 2, 4, 4>;   // 8 warps of 64x64; 4 slots of 48 KiB = 192 KiB
SWIZZLE_ENTRY(mma_swizzle_f16, Swizzled, __half, true, 1)
SWIZZLE_ENTRY(mma_swizzle_f16_unaligned, Swizzled, __half, false, 1)
SWIZZLE_ENTRY(mma_swizzle_bf16, Swizzled, __nv_bfloat16, true, 1)
SWIZZLE_ENTRY(mma_swizzle_bf16_unaligned, Swizzled, __nv_bfloat16, false, 1)

// The persistent TMA form: aligned operands only (a tensor map needs 16-byte aligned starts and pitches); the
// launcher sends other calls to mma_swizzle_*_unaligned.  Dynamic shared memory: TmaCfg::SMEM_BYTES (the ring,
// 1024 bytes to align it, and 3 x STAGES mbarriers), exported with the tile and block size (STUDY_ENTRY_FACTS).
#define SWIZZLE_TMA_ENTRY(NAME, CFG, T)                                                                         \
    extern "C" __global__ void __launch_bounds__(CFG::ALL_THREADS, 1) __cluster_dims__(CFG::CLUSTER, 1, 1)    \
    NAME(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N,  \
         int K, double alpha, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) { \
        gemm_swizzle_tma<CFG, T>(map_a, map_b, M, N, K, alpha, beta, C, ldc, D, ldd);                         \
    }                                                                                                         \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, CFG::BN, CFG::ALL_THREADS, CFG::SMEM_BYTES)
#define SWIZZLE_TMA_PAIR(NAME, CFG)                                                                           \
    SWIZZLE_TMA_ENTRY(NAME##_f16, CFG, __half)                                                                \
    SWIZZLE_TMA_ENTRY(NAME##_bf16, CFG, __nv_bfloat16)

#ifdef MMA_EXPLORE
using X13T_C2 = TmaCfg<256, 4, 2>;   // clusters of 2 blocks share B by multicast
SWIZZLE_TMA_PAIR(x13t_c2, X13T_C2)
using X13T_S3 = TmaCfg<256, 3, 1>;
SWIZZLE_TMA_PAIR(x13t_s3, X13T_S3)
#endif

using SwizzledTma = TmaCfg<256, 4, 1>;   // a producer warpgroup + 8 consumer warps of 64x64; 4 slots of 48 KiB
SWIZZLE_TMA_PAIR(mma_swizzle_tma, SwizzledTma)
