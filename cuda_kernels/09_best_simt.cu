// Stage 09 - the best SIMT SGEMM: warp tiling, a cp.async pipeline, the tile chosen per shape.
//
// Technique:   8 warps own a 128x256 tile of D.  Each warp owns a 128x32 strip and each lane a 16x8
//              register tile, made of 4x2 blocks of 4x4 that sit 32 rows and 16 columns apart.  K advances
//              32 at a time through a 3-slot ring of shared memory filled by cp.async: B with 16-byte
//              copies, A with 4-byte copies that transpose it (As[k][m]) on the way in.  Per k a lane reads
//              four float4 of A and two of B and issues 128 FMAs.  Grids too small for 128x256 tiles to
//              give every SM a block use 128x128 (4 warps) or 64x64 tiles instead (study/registry.py).
// Reproduces:  seed 000 kernels 3-5 (2D tiling, float4, N-stage cp.async), seed 001 (2D block tiling and
//              vectorized access), and the shape of the CUTLASS SIMT kernel cuBLAS runs for SGEMM on Hopper
//              (cutlass_80_simt_sgemm_256x128_8x4: 256x128 tiles of its column-major view, 128 outputs per
//              thread, named by ncu; docs/09_best_simt.md).
// Changed:     stage 07 pipelined 128x128x8 tiles with 8x8 per thread.  Here the lanes are laid out warp by
//              warp so that each 16-byte shared load of a warp touches 8 (A) or 4 (B) distinct vectors that
//              are broadcast to the other lanes; each lane holds 16x8 outputs, so a shared load feeds 21
//              FMAs instead of 16; BK = 32 takes a quarter of the barriers; and every copy's address is
//              worked out once per block (Copier), so a k-tile costs one add and one compare per copy.
// Why faster:  the FP32 pipe issues one FMA warp-instruction per scheduler per clock, so every other
//              instruction and every stalled cycle is lost throughput (tuning log: docs/09_best_simt.md).
//              Measured: 45.9 TFLOP/s at 4096^3 on an H100, 89.3% of cuBLAS (reports/h100/results.csv).
//
// Ragged edges: a copy whose source lies outside A or B (past M, N or K) copies 0 bytes and zero-fills its
//              destination (cp.async's src-size operand), and points at the matrix base, so no out-of-range
//              address is ever formed; a 16-byte chunk of B that straddles N goes as four 4-byte
//              copies, so that no byte past the matrix is read (compute-sanitizer initcheck checks
//              this); stores are masked per element.
// Alignment:   sgemm_best_* assumes 16-byte aligned operand starts and leading dimensions (the launcher
//              checks); sgemm_best_*_unaligned is the same template with 4-byte copies and scalar stores.
#include "gemm_common.cuh"
#include "async_copy.cuh"
#include "simt_tile.cuh"

namespace {
using namespace async_copy;

constexpr int PAD_A = 4;   // As rows are BM+4 floats: the transposing 4-byte copies hit 32 banks

// A block tile of BM x BN, K steps of BK through a ring of STAGES slots.  Warps form a WARPS_M x WARPS_N
// grid; a warp's lanes form 8 rows x 4 columns, and each lane holds SUB_M x SUB_N blocks of 4x4 outputs,
// the blocks 32 rows (SUB_M) and 16 columns (SUB_N) apart, so a warp tile is (32 SUB_M) x (16 SUB_N).
template <int BM_, int BN_, int BK_, int STAGES_, int WARPS_M, int WARPS_N>
struct Tile {
    static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int SUB_M = WM / 32, SUB_N = WN / 16;
    static constexpr int TM = 4 * SUB_M, TN = 4 * SUB_N;
    static constexpr int A_STRIDE = BM + PAD_A;
    static constexpr int A_FLOATS = BK * A_STRIDE, B_FLOATS = BK * BN;
    static constexpr int STAGE_FLOATS = A_FLOATS + B_FLOATS;
    static constexpr int SMEM_BYTES = STAGES * STAGE_FLOATS * 4;
    static_assert(WM % 32 == 0 && WN % 16 == 0 && BK % 8 == 0, "whole 4x4 blocks per lane, 8-k copy groups");
    static_assert((BM * BK) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "copies divide evenly");
};

// Where this thread's copies come from and go to, worked out once per block: afterwards a k-tile costs
// one add and one compare per copy.  Thread t copies A[row][k] for rows t/8 + (THREADS/8) r and columns
// k = t%8 + 8 j of each k-tile (a warp: 8 consecutive k of 4 consecutive rows, 4 global sectors per
// instruction; with the BM+4 pitch of As[k][m] the 32 destinations fall in 32 banks), and the 16-byte
// chunk B[k][n..n+3] for n = 4 (t % (BN/4)) and k = t / (BN/4) + (4 THREADS / BN) i.
template <class T, bool VEC>
struct Copier {
    static constexpr int A_ROWS = 8 * T::BM / T::THREADS, A_KS = T::BK / 8;
    static constexpr int B_STEP = 4 * T::THREADS / T::BN;
    static_assert((8 * T::BM) % T::THREADS == 0 && (4 * T::THREADS) % T::BN == 0, "affine copy maps");
    const float* a_base;                 // what a skipped copy points at: never an out-of-range address
    const float* b_base;
    const float* a_src[A_ROWS];          // row start + this thread's k offset
    bool a_ok[A_ROWS];
    const float* b_src;                  // B[kb][n] for this thread's first chunk
    int b_cols;                          // how many of the chunk's 4 columns exist (0..4)
    bool b_full;                         // all 4 exist: a flag of its own, see the note in load()
    int a_dst, b_dst, ka, kb;

    __device__ __forceinline__ Copier(const float* A, idx_t lda, const float* B, idx_t ldb, int M, int N,
                                      int m0, int n0, int tid) {
        a_base = A, b_base = B, ka = tid % 8;
#pragma unroll
        for (int r = 0; r < A_ROWS; ++r) {
            const int row = m0 + tid / 8 + (T::THREADS / 8) * r;
            a_ok[r] = row < M;
            a_src[r] = a_ok[r] ? A + (idx_t)row * lda + ka : A;
        }
        a_dst = ka * T::A_STRIDE + tid / 8;
        kb = tid / (T::BN / 4);
        const int col = n0 + 4 * (tid % (T::BN / 4));
        b_cols = max(0, min(4, N - col));
        b_full = col + 4 <= N;
        b_src = B + (idx_t)kb * ldb + col;   // only used where b_cols > 0 and the k row exists
        b_dst = kb * T::BN + 4 * (tid % (T::BN / 4));
    }

    // Copies k-tile [k0, k0 + BK) into the slot at As/Bs; out-of-range elements become zeros.
    __device__ __forceinline__ void load(float* As, float* Bs, idx_t ldb, int K, int k0) const {
        const int k_left = K - k0;
#pragma unroll
        for (int j = 0; j < A_KS; ++j)
#pragma unroll
            for (int r = 0; r < A_ROWS; ++r) {
                const bool ok = a_ok[r] && ka + 8 * j < k_left;
                cp4(&As[a_dst + 8 * j * T::A_STRIDE + (T::THREADS / 8) * r], ok ? a_src[r] + k0 + 8 * j : a_base, ok);
            }
        const float* b = b_src + (idx_t)k0 * ldb;
#pragma unroll
        for (int i = 0; i < T::BK / B_STEP; ++i) {
            const bool k_ok = kb + B_STEP * i < k_left;
            const float* src = k_ok && b_cols ? b + (idx_t)(B_STEP * i) * ldb : b_base;
            float* dst = &Bs[b_dst + B_STEP * i * T::BN];
            // Partial chunks go word by word (see stage 07's copier).  The test reads b_full, not
            // b_cols == 4: ptxas 13.0 branched the prologue's copies on the predicate output of the
            // clamp that computes b_cols, and initcheck caught a 16-byte copy at N = 1 (docs/09_best_simt.md).
            if (VEC && k_ok && b_full) {
                cp16(dst, src, 16);
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c) cp4(dst + c, k_ok && c < b_cols ? src + c : b_base, k_ok && c < b_cols);
            }
        }
    }
};

template <class T, bool VEC>
__device__ __forceinline__ void sgemm_best(int M, int N, int K, float alpha,
                                           const float* __restrict__ A, idx_t lda,
                                           const float* __restrict__ B, idx_t ldb, float beta,
                                           const float* __restrict__ C, idx_t ldc,
                                           float* __restrict__ D, idx_t ldd) {
    constexpr int BK = T::BK, STAGES = T::STAGES;
    extern __shared__ __align__(16) float smem[];
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int m0 = blockIdx.y * T::BM, n0 = blockIdx.x * T::BN;
    // Lane (lane/4, lane%4) of warp (warp/WARPS_N, warp%WARPS_N): its 4x4 blocks start at rows am + 32 i
    // and columns bn + 16 j of the block tile.
    const int am = (warp / (T::BN / T::WN)) * T::WM + (lane / 4) * 4;
    const int bn = (warp % (T::BN / T::WN)) * T::WN + (lane % 4) * 4;

    float acc[T::TM][T::TN];
    zero_tile(acc);

    const Copier<T, VEC> copier(A, lda, B, ldb, M, N, m0, n0, tid);
    const int k_tiles = (K + BK - 1) / BK;
    // Prologue: STAGES-1 tiles in flight.  Every iteration commits a group (empty past the end) so that
    // wait_group<STAGES-2> always means "the tile about to be used has landed".
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles)
            copier.load(smem + s * T::STAGE_FLOATS, smem + s * T::STAGE_FLOATS + T::A_FLOATS, ldb, K, s * BK);
        commit();
    }

    int use = 0, fill = STAGES - 1;     // ring slots: the tile computed now, the tile copied now
    for (int kt = 0; kt < k_tiles; ++kt) {
        wait_group<STAGES - 2>();
        // One barrier per k-tile does two jobs: tile kt is visible to all, and every warp has finished
        // tile kt-1, whose slot the copy below overwrites.
        __syncthreads();
        if (kt + STAGES - 1 < k_tiles) {
            float* slot = smem + fill * T::STAGE_FLOATS;
            copier.load(slot, slot + T::A_FLOATS, ldb, K, (kt + STAGES - 1) * BK);
        }
        commit();
        fill = fill == STAGES - 1 ? 0 : fill + 1;

        const float* As = smem + use * T::STAGE_FLOATS;
        use = use == STAGES - 1 ? 0 : use + 1;
        const float* Bs = As + T::A_FLOATS;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[T::TM], b[T::TN];
#pragma unroll
            for (int i = 0; i < T::SUB_M; ++i)
                *reinterpret_cast<float4*>(&a[4 * i]) =
                    *reinterpret_cast<const float4*>(&As[k * T::A_STRIDE + am + 32 * i]);
#pragma unroll
            for (int j = 0; j < T::SUB_N; ++j)
                *reinterpret_cast<float4*>(&b[4 * j]) = *reinterpret_cast<const float4*>(&Bs[k * T::BN + bn + 16 * j]);
            outer_product(acc, a, b);
        }
    }
    wait_group<0>();   // nothing may still be writing shared memory when the block exits

    store_tile<VEC, 32, 16>(acc, m0, am, n0, bn, M, N, alpha, beta, C, ldc, D, ldd);
}

}  // namespace

// Dynamic shared memory per block: Tile::SMEM_BYTES = STAGES * BK * ((BM + 4) + BN) * 4, exported with the
// tile and block size (STUDY_ENTRY_FACTS).
#define BEST_ENTRY(NAME, TILE, VEC, MIN_BLOCKS)                                                               \
    extern "C" __global__ void __launch_bounds__(TILE::THREADS, MIN_BLOCKS)                                  \
    NAME(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,                           \
         const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc,         \
         float* __restrict__ D, idx_t ldd) {                                                                 \
        sgemm_best<TILE, VEC>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);                         \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, TILE::BM, TILE::BN, TILE::THREADS, TILE::SMEM_BYTES)

#ifdef BEST_EXPLORE
// Candidates for python -m study.probe (not registered); docs/09_best_simt.md records what each measured.
using X_128x128_8x8 = Tile<128, 128, 16, 3, 2, 4>;     // 8 warps, 8x8 per lane
using X_256x128_16x8 = Tile<256, 128, 16, 3, 2, 4>;    // CUTLASS's 256x128 shape, 16x8 per lane
using X_128x256_bk16 = Tile<128, 256, 16, 3, 1, 8>;
BEST_ENTRY(x_128x128_8x8, X_128x128_8x8, true, 2)
BEST_ENTRY(x_256x128_16x8, X_256x128_16x8, true, 1)
BEST_ENTRY(x_128x256_bk16, X_128x256_bk16, true, 1)
#endif

// The registered shape classes, largest first (study/registry.py picks the largest that fills the GPU).
using Big = Tile<128, 256, 32, 3, 1, 8>;     // 8 warps of 128x32, 16x8 per lane; 149 KB of shared memory
using Mid = Tile<128, 128, 32, 3, 1, 4>;     // 4 warps of 128x32
using Small = Tile<64, 64, 16, 3, 2, 2>;     // 4 warps of 32x32, 4x8 per lane
BEST_ENTRY(sgemm_best_128x256, Big, true, 1)
BEST_ENTRY(sgemm_best_128x256_unaligned, Big, false, 1)
BEST_ENTRY(sgemm_best_128x128, Mid, true, 2)
BEST_ENTRY(sgemm_best_128x128_unaligned, Mid, false, 2)
BEST_ENTRY(sgemm_best_64x64, Small, true, 4)
BEST_ENTRY(sgemm_best_64x64_unaligned, Small, false, 4)
