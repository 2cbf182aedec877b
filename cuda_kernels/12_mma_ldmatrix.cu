// Stage 12 - mma.sync m16n8k16 fed by ldmatrix, 2D warp tiling, a cp.async ring.
//
// Technique:   the tensor-core instruction itself instead of WMMA's opaque fragments.  8 warps own a 128x128
//              tile of D as a 2x4 grid of 64x32 warp tiles, i.e. 4x4 m16n8 accumulators (64 fp32 registers)
//              per lane.  K advances 32 at a time through a 3-slot ring of shared memory filled by 16-byte
//              cp.async copies (async_copy.cuh's wait_group discipline, one barrier per k-tile).  Per k16
//              step a warp loads its A fragments with 4 ldmatrix.x4 (four 8x8 matrices: an m16k16 block of
//              row-major A) and its B fragments with 2 ldmatrix.x4.trans (B is row-major KxN, so .trans
//              turns its k-rows into the "col" operand mma wants), then issues 16 mma.sync.  D is stored
//              straight from the accumulators, whose per-lane layout is now known.
//              The shared tiles are unpadded row-major, the "before" case of stage 13: a row of A is 64
//              bytes and a row of B 256, so the 8 row addresses of one 8x8 ldmatrix matrix fall in the same
//              4 banks every 128 bytes - 4-way conflicts for A (2 rows per 128 bytes), 8-way for B.  The
//              cp.async stores write whole rows, so they should not conflict (a prediction: ncu's
//              shared-store conflict counter does not see cp.async's writes, stage 07).
// Reproduces:  seed 000 kernel 8 (mma.sync custom: ldmatrix x4 for A, .trans for B, the m16n8k16 fragment
//              layout of D, unpadded tiles) and its 2D warp-tiled variant (each warp a large tile of D in
//              registers), with seed 000 kernel 7b's cp.async staging.
// Changed:     stage 11 ran WMMA 16x16x16 fragments out of padded shared tiles (rows skewed by 16 halves) and
//              staged D through shared memory; here the fragments are loaded by ldmatrix and multiplied by
//              mma.sync, the tiles are unpadded and D leaves from the registers.
// Why faster:  it is not, as registered: the ldmatrix conflicts are the whole story.  ncu at 4096^3 fp16
//              (reports/h100/profile.csv): 218M of the 268M shared-load wavefronts are bank conflicts (128 per
//              k16 step and warp instead of 24).  Padding every row by 8 elements (x12_pad8 below) removes
//              them; stage 13 swizzles instead.
//
// Ragged edges: only whole in-range 16-byte chunks go by cp.async; a chunk that straddles or lies past K or M
//              (A), K or N (B) is loaded element by element and stored with zeros after them (a partial
//              cp.async reads only its src-size bytes, but the sanitizers count all 16 as read).
//              Stores are masked per element pair.
// Alignment:   mma_{f16,bf16} need 16-byte aligned operand starts and leading dimensions (the launcher
//              checks); mma_*_unaligned is the same template with 2-byte loads into shared memory and
//              element-wise epilogue accesses.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"

namespace {

using async_copy::cp16;   // cp16(shared address, src): a whole 16-byte chunk

// A block tile of BM x BN, K steps of BK through STAGES slots; warps in a WARPS_M x WARPS_N grid.  PAD
// elements at the end of every shared row (0 as registered: the conflicted layout; x12_pad8 has 8).
template <int BM_, int BN_, int BK_, int WARPS_M_, int WARPS_N_, int STAGES_, int PAD_ = 0>
struct Cfg {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
    static constexpr int STAGES = STAGES_, PAD = PAD_;
    static constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int MI = WM / 16, NJ = WN / 16, KK = BK / 16;      // m16 tiles, n16 pairs, k16 steps
    static constexpr int LDA = BK + PAD, LDB = BN + PAD;                 // shared row pitches (elements)
    static constexpr int CPR_A = BK / 8, CPR_B = BN / 8;                 // 16-byte chunks per row
    static constexpr int A_BYTES = BM * LDA * 2, B_BYTES = BK * LDB * 2, SLOT_BYTES = A_BYTES + B_BYTES;
    static constexpr int A_ROWS = THREADS / CPR_A, B_ROWS = THREADS / CPR_B;   // rows copied per pass
    static constexpr int A_COPIES = BM / A_ROWS, B_COPIES = BK / B_ROWS;
    static constexpr int SMEM_BYTES = STAGES * SLOT_BYTES;
    static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0 && STAGES >= 2 && PAD % 8 == 0, "tile shape");
    static_assert(THREADS % CPR_A == 0 && THREADS % CPR_B == 0 && BM % A_ROWS == 0 && BK % B_ROWS == 0,
                  "copies divide evenly");
};

// A thread's copies of every k-tile: where they come from (ChunkSources) and where they go in a slot.
template <class C, class T, bool VEC>
struct Loader : ChunkSources<C, T> {
    using Src = ChunkSources<C, T>;
    using Src::a_src, Src::b_src, Src::a_step, Src::b_step, Src::ldb, Src::a_rows_ok, Src::a_k, Src::b_k,
        Src::b_cols, Src::b_full;
    uint32_t a_dst, b_dst;   // byte offsets of the first copies in a slot

    __device__ __forceinline__ Loader(const T* A, idx_t lda, const T* B, idx_t ldb_, int M, int N, int m0,
                                      int n0, int tid)
        : Src(A, lda, B, ldb_, M, N, m0, n0, tid) {
        const int ar = tid / C::CPR_A, ac = tid % C::CPR_A, br = tid / C::CPR_B, bc = tid % C::CPR_B;
        a_dst = (ar * C::LDA + 8 * ac) * 2;
        b_dst = C::A_BYTES + (br * C::LDB + 8 * bc) * 2;
    }

    // k-tile kt into the slot at shared address `slot`; out-of-range elements become zeros.
    __device__ __forceinline__ void load(uint32_t slot, int K, int kt) const {
        const int ka = kt * C::BK + a_k, left = K - ka;
#pragma unroll
        for (int i = 0; i < C::A_COPIES; ++i) {
            const bool ok = ((a_rows_ok >> i) & 1) && left > 0;
            const T* src = a_src + i * a_step + kt * C::BK;
            const uint32_t dst = slot + a_dst + i * C::A_ROWS * C::LDA * 2;
            const int n = ok ? min(left, 8) : 0;
            // Partial chunks by plain loads: cp.async reads only its src-size bytes, but the sanitizers count
            // all 16.  The full test is its own compare (see b_full).
            if (VEC && ok && left >= 8) cp16(dst, src);
            else fill_chunk(dst, src, n);
        }
        const T* b = b_src + (idx_t)kt * C::BK * ldb;
#pragma unroll
        for (int i = 0; i < C::B_COPIES; ++i) {
            const bool ok = kt * C::BK + b_k + i * C::B_ROWS < K && b_cols > 0;
            const uint32_t dst = slot + b_dst + i * C::B_ROWS * C::LDB * 2;
            if (VEC && ok && b_full) cp16(dst, b + i * b_step);
            else fill_chunk(dst, b + i * b_step, ok ? b_cols : 0);
        }
    }
};

template <class C, class T, bool VEC>
__device__ __forceinline__ void gemm_mma(int M, int N, int K, double alpha_, const T* __restrict__ A, idx_t lda,
                                         const T* __restrict__ B, idx_t ldb, double beta_,
                                         const T* __restrict__ Cm, idx_t ldc, T* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t ring = async_copy::smem_u32(smem);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int wm = warp / C::WARPS_N, wn = warp % C::WARPS_N;
    const int m0 = blockIdx.y * C::BM, n0 = blockIdx.x * C::BN;

    float acc[C::MI][2 * C::NJ][4];
    zero_fragments(acc);

    const Loader<C, T, VEC> loader(A, lda, B, ldb, M, N, m0, n0, tid);
    const int k_tiles = (K + C::BK - 1) / C::BK;
    // ldmatrix lane l points at row l % 16, column 8 (l / 16) of a 16x16 block: of A (rows m, columns k)
    // for an m16 tile, of B (rows k, columns n) for a pair of n8 tiles.
    const uint32_t a_frag = ((wm * C::WM + lane % 16) * C::LDA + 8 * (lane / 16)) * 2;
    const uint32_t b_frag = C::A_BYTES + ((lane % 16) * C::LDB + wn * C::WN + 8 * (lane / 16)) * 2;

    // Prologue: STAGES-1 k-tiles in flight; every iteration commits a group (empty past the end), so
    // wait_group<STAGES-2> always means "k-tile kt has landed".
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; ++s) {
        if (s < k_tiles) loader.load(ring + s * C::SLOT_BYTES, K, s);
        async_copy::commit();
    }
    int use = 0, fill = C::STAGES - 1;
    for (int kt = 0; kt < k_tiles; ++kt) {
        async_copy::wait_group<C::STAGES - 2>();
        // One barrier per k-tile: k-tile kt is visible to all, and every warp has finished k-tile kt-1,
        // whose slot the copy below overwrites.
        __syncthreads();
        if (kt + C::STAGES - 1 < k_tiles) loader.load(ring + fill * C::SLOT_BYTES, K, kt + C::STAGES - 1);
        async_copy::commit();
        fill = fill == C::STAGES - 1 ? 0 : fill + 1;
        const uint32_t slot = ring + use * C::SLOT_BYTES;
        use = use == C::STAGES - 1 ? 0 : use + 1;
#pragma unroll
        for (int kk = 0; kk < C::KK; ++kk) {
            uint32_t af[C::MI][4], bf[C::NJ][4];
#pragma unroll
            for (int i = 0; i < C::MI; ++i) ldsm_x4(af[i], slot + a_frag + (16 * i * C::LDA + 16 * kk) * 2);
#pragma unroll
            for (int j = 0; j < C::NJ; ++j) ldsm_x4_trans(bf[j], slot + b_frag + (16 * kk * C::LDB + 16 * j) * 2);
            mma_step<T>(acc, af, bf);
        }
    }
    async_copy::wait_all();   // nothing may still be writing shared memory when the block exits

    // D from the fragments: row indices in int, as this stage was measured.
    const float alpha = (float)alpha_, beta = (float)beta_;
    store_fragments<C::MI, 2 * C::NJ, T, VEC>(acc, m0, wm * C::WM, n0, wn * C::WN, lane, M, N, alpha, beta, Cm, ldc,
                                              D, ldd);
}

}  // namespace

// Dynamic shared memory per block: Cfg::SMEM_BYTES, exported with the tile and block size (STUDY_ENTRY_FACTS).
#define MMA_ENTRY(NAME, CFG, T, VEC, MIN_BLOCKS)                                                                \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, MIN_BLOCKS)                                    \
    NAME(int M, int N, int K, double alpha, const T* __restrict__ A, idx_t lda, const T* __restrict__ B,     \
         idx_t ldb, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) {         \
        gemm_mma<CFG, T, VEC>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);                          \
    }                                                                                                         \
    STUDY_ENTRY_FACTS(NAME, CFG::BM, CFG::BN, CFG::THREADS, CFG::SMEM_BYTES)

#ifdef MMA_EXPLORE
// Candidates for python -m study.probe (not registered; docs/12_mma_ldmatrix.md has their figures): the same
// kernel with padded rows (8 elements: every ldmatrix row 16 bytes further round the banks), and stage 13's
// geometry unswizzled.
using XPad8 = Cfg<128, 128, 32, 2, 4, 3, 8>;
using XBig = Cfg<128, 256, 64, 2, 4, 4>;
MMA_ENTRY(x12_pad8_f16, XPad8, __half, true, 1)
MMA_ENTRY(x12_pad8_bf16, XPad8, __nv_bfloat16, true, 1)
MMA_ENTRY(x12_128x256x64_s4_f16, XBig, __half, true, 1)
MMA_ENTRY(x12_128x256x64_s4_bf16, XBig, __nv_bfloat16, true, 1)
#endif

using Plain = Cfg<128, 128, 32, 2, 4, 3>;   // 8 warps of 64x32; 3 slots of 16 KiB = 48 KiB
MMA_ENTRY(mma_f16, Plain, __half, true, 1)
MMA_ENTRY(mma_f16_unaligned, Plain, __half, false, 1)
MMA_ENTRY(mma_bf16, Plain, __nv_bfloat16, true, 1)
MMA_ENTRY(mma_bf16_unaligned, Plain, __nv_bfloat16, false, 1)
