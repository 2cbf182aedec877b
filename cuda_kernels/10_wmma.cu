// Stage 10 - WMMA: the first tensor-core stage, generic over every type pair and fragment shape of the API.
//
// Technique:   4 warps own a 64x64 tile of D, each warp a 32x32 quarter made of WMMA accumulator fragments
//              (2x2 of 16x16, 1x4 of 32x8, 4x1 of 8x32, 4x4 of 8x8).  K advances 32 at a time: all 128 threads
//              copy a 64x32 tile of A and a 32x64 tile of B into shared memory element by element (zeros past
//              M, N, K), synchronise, and each warp runs load_matrix_sync / mma_sync over the tile.  At the end
//              the accumulators go through shared memory (store_matrix_sync) so that alpha, beta, C and the
//              bounds can be applied element by element, coalesced along the rows of D.
// Reproduces:  seed 003 (one generic GEMM over WMMA's type pairs and shapes, D = alpha A B + beta C, A and B
//              optionally transposed, zero padding so any size works; D and C in the accumulator type) and
//              seed 000 kernel 7 (fp16 WMMA 16x16x16, a 64x64 tile of D per block).  Unlike seed 003 the
//              caller never pads: the padding happens on the way into shared memory.
// Changed:     stages 01-09 multiply on the FP32 pipe, one FMA per thread-instruction.  Here one warp-wide
//              mma_sync does a whole 16x16x16 (4096 multiply-adds) on the tensor cores; the k-loop keeps stage
//              03's structure (copy a tile, barrier, compute, barrier).
// Why faster:  the tensor cores' fp16 rate on H100 is ~12x the FP32 pipe's.  This plain kernel reaches little
//              of it: its copies are scalar, and nothing is in flight while the tensor cores work (stage 11).
//              Measured: fp16 -> fp32 68.8 TFLOP/s at 4096^3 on an H100, 9.3% of cuBLAS fp16
//              (reports/h100/results.csv).
//
// Type pairs:  (A, B) -> (C, D): half and bfloat16 -> float, signed and unsigned char -> int, in 16x16x16,
//              32x8x16 and 8x32x16; half -> half (16x16x16); float -> float as tf32 (16x16x8, inputs rounded
//              by __float_to_tf32); double -> double (8x8x4, DMMA).  Entries wmma_{pair}_{ab} ({pair}: input
//              then accumulator type, e.g. f16f32), plus wmma_m32n8k16_* and wmma_m8n32k16_* for those shapes.
//              Epilogue arithmetic: float (float and half accumulators), double (f64), int32 (integer pairs;
//              alpha and beta as integers, wrapping modulo 2^32).
// Layouts:     {ab} is A's then B's storage order (r = row-major, c = column-major); each shared tile keeps
//              its operand's global order (coalesced copies; a column-major operand loads col_major).
// Shared tile: load_matrix_sync wants 32-byte aligned fragment rows, which fragments side by side in one row
//              cannot all have (8-bit fragments are 16 bytes wide), so each tile is stored as slabs, one per
//              fragment width W, rows padded to a multiple of 32 bytes (P elements), ldm = P.
// Ragged edges: elements outside M, N or K are stored as zeros (they add nothing), and D is written element
//              by element under bounds checks.  Any alignment of A, B, C and D is fine (2-byte elements at odd
//              offsets included): every global access is a scalar of the element's own type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <type_traits>

#include "gemm_common.cuh"

namespace {

using namespace nvcuda;

constexpr int BM = 64, BN = 64, BK = 32;      // block tile of D and k-step
constexpr int THREADS = 128;                  // 4 warps in 2x2, each owning 32x32 of D
constexpr int WM = 32, WN = 32;
constexpr int ALIGN = 32;                     // bytes: wmma pointer and row alignment

// One operand's k-tile in shared memory: ROWS x COLS of its storage order (COLS contiguous), stored as
// COLS / W slabs of ROWS rows, each row P elements (W used, P * sizeof(T) a multiple of 32 bytes).  Slabs are
// a further 32 bytes apart, meant to put a warp's stores to one row of several slabs in different banks
// (by construction; not measured).
template <class T, int ROWS, int COLS, int W>
struct SlabTile {
    static constexpr int P = ((W * (int)sizeof(T) + ALIGN - 1) / ALIGN) * ALIGN / (int)sizeof(T);
    static constexpr int SLAB = ROWS * P + ALIGN / (int)sizeof(T);
    static constexpr int ELEMS = COLS / W * SLAB;
    static constexpr int STEP = THREADS / COLS;     // rows copied per pass of the block
    static_assert(COLS % W == 0 && THREADS % COLS == 0 && ROWS % STEP == 0, "whole slabs, whole passes");

    // Element (r, c) of the tile; fragments start at c % W == 0.
    static __device__ __forceinline__ int at(int r, int c) { return c / W * SLAB + r * P + c % W; }

    // Copies X[r0 + r][c0 + c] for the tile's r, c into t, zeros outside rows x cols.  Thread t keeps column
    // t % COLS and takes every STEP-th row, so a warp reads 32 consecutive elements of a row (coalesced) and
    // each thread's copies are one pointer stepping by STEP rows.  CONVERT is applied to every element stored
    // (tf32 rounding; identity otherwise).
    template <class CONVERT>
    static __device__ __forceinline__ void load(T* t, const T* __restrict__ X, idx_t ld, int r0, int c0, int rows,
                                                int cols, CONVERT convert) {
        const int c = threadIdx.x % COLS, r = threadIdx.x / COLS;
        const bool col_ok = c0 + c < cols;
        const T* src = X + (idx_t)(r0 + r) * ld + c0 + c;   // dereferenced only in range
        T* dst = t + at(r, c);
#pragma unroll
        for (int i = 0; i < ROWS / STEP; ++i) {
            const bool ok = col_ok && r0 + r + i * STEP < rows;
            dst[i * STEP * P] = ok ? convert(src[i * STEP * ld]) : T(0);
        }
    }
};

struct Identity {
    template <class T>
    __device__ __forceinline__ T operator()(T x) const { return x; }
};
struct RoundTf32 {
    __device__ __forceinline__ float operator()(float x) const { return wmma::__float_to_tf32(x); }
};

// The epilogue's arithmetic per accumulator type: d = alpha * acc + beta * c, in float for float and half,
// double for double, int32 (wrapping) for int.  beta == 0 never reads C.
__device__ __forceinline__ float epilogue(float acc, double alpha, double beta, const float* c) {
    float d = (float)alpha * acc;
    return beta != 0.0 ? fmaf((float)beta, *c, d) : d;
}
__device__ __forceinline__ __half epilogue(__half acc, double alpha, double beta, const __half* c) {
    float d = (float)alpha * __half2float(acc);
    return __float2half_rn(beta != 0.0 ? fmaf((float)beta, __half2float(*c), d) : d);
}
__device__ __forceinline__ double epilogue(double acc, double alpha, double beta, const double* c) {
    double d = alpha * acc;
    return beta != 0.0 ? fma(beta, *c, d) : d;
}
__device__ __forceinline__ int epilogue(int acc, double alpha, double beta, const int* c) {
    const unsigned a = (unsigned)(long long)alpha, b = (unsigned)(long long)beta;
    unsigned d = a * (unsigned)acc;
    if (beta != 0.0) d += b * (unsigned)*c;
    return (int)d;
}

// In: A and B's element type; Frag: the fragment's (half, __nv_bfloat16, precision::tf32, signed char, ...);
// Acc: accumulator = C and D type; FM x FN x FK the fragment shape; A_COL / B_COL: column-major operands.
template <class In, class Frag, class Acc, int FM, int FN, int FK, bool A_COL, bool B_COL>
__device__ __forceinline__ void wmma_gemm(int M, int N, int K, double alpha, const In* __restrict__ A, idx_t lda,
                                          const In* __restrict__ B, idx_t ldb, double beta,
                                          const Acc* __restrict__ C, idx_t ldc, Acc* __restrict__ D, idx_t ldd) {
    // A's tile in storage order: row-major BM x BK in slabs FK wide, or column-major BK x BM in slabs FM wide.
    using TA = SlabTile<In, A_COL ? BK : BM, A_COL ? BM : BK, A_COL ? FM : FK>;
    using TB = SlabTile<In, B_COL ? BN : BK, B_COL ? BK : BN, B_COL ? FK : FN>;
    using LayoutA = typename std::conditional<A_COL, wmma::col_major, wmma::row_major>::type;
    using LayoutB = typename std::conditional<B_COL, wmma::col_major, wmma::row_major>::type;
    using Convert = typename std::conditional<std::is_same<Frag, wmma::precision::tf32>::value, RoundTf32,
                                              Identity>::type;
    constexpr int TM = WM / FM, TN = WN / FN;                  // fragments per warp
    constexpr int CS_LD = BN + ALIGN / (int)sizeof(Acc);       // epilogue tile pitch: rows stay 32-byte aligned
    constexpr int TILE_BYTES = (TA::ELEMS + TB::ELEMS) * (int)sizeof(In);
    constexpr int EPI_BYTES = BM * CS_LD * (int)sizeof(Acc);
    static_assert(TA::ELEMS * sizeof(In) % ALIGN == 0, "B's tile starts 32-byte aligned");
    static_assert(WM % FM == 0 && WN % FN == 0 && BK % FK == 0, "whole fragments");

    // The k-tiles and, after the k-loop, the accumulator tile share one buffer (the largest, f64, is 32 KB).
    __shared__ __align__(ALIGN) unsigned char smem[TILE_BYTES > EPI_BYTES ? TILE_BYTES : EPI_BYTES];
    In* As = reinterpret_cast<In*>(smem);
    In* Bs = As + TA::ELEMS;
    Acc* Cs = reinterpret_cast<Acc*>(smem);

    const int warp = threadIdx.x / 32;
    const int wm = (warp / 2) * WM, wn = (warp % 2) * WN;     // this warp's quarter of the block tile
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, FM, FN, FK, Acc> acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) wmma::fill_fragment(acc[i][j], Acc(0));

    for (int k0 = 0; k0 < K; k0 += BK) {
        if (A_COL) TA::load(As, A, lda, k0, m0, K, M, Convert());
        else       TA::load(As, A, lda, m0, k0, M, K, Convert());
        if (B_COL) TB::load(Bs, B, ldb, n0, k0, N, K, Convert());
        else       TB::load(Bs, B, ldb, k0, n0, K, N, Convert());
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += FK) {
            wmma::fragment<wmma::matrix_a, FM, FN, FK, Frag, LayoutA> a[TM];
            wmma::fragment<wmma::matrix_b, FM, FN, FK, Frag, LayoutB> b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int m = wm + i * FM;
                wmma::load_matrix_sync(a[i], As + (A_COL ? TA::at(kk, m) : TA::at(m, kk)), TA::P);
            }
#pragma unroll
            for (int j = 0; j < TN; ++j) {
                const int n = wn + j * FN;
                wmma::load_matrix_sync(b[j], Bs + (B_COL ? TB::at(n, kk) : TB::at(kk, n)), TB::P);
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
        __syncthreads();   // the next copy overwrites tiles other warps may still be reading
    }

    // The fragment's element-to-lane map is unspecified, so the epilogue goes through shared memory, where
    // row and column of every element are known.  K >= 1, so the k-loop ran, and its last barrier already
    // separates the warps' tile reads from these writes.
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            wmma::store_matrix_sync(Cs + (wm + i * FM) * CS_LD + wn + j * FN, acc[i][j], CS_LD, wmma::mem_row_major);
    __syncthreads();

    const int col = threadIdx.x % BN;
    const idx_t gcol = n0 + col;
    if (gcol >= N) return;
    for (int r = threadIdx.x / BN; r < BM; r += THREADS / BN) {
        const idx_t grow = m0 + r;
        if (grow >= M) break;
        D[grow * ldd + gcol] = epilogue(Cs[r * CS_LD + col], alpha, beta, C + grow * ldc + gcol);
    }
}

}  // namespace

#define WMMA_ENTRY(NAME, IN, FRAG, ACC, FM, FN, FK, A_COL, B_COL)                                             \
    extern "C" __global__ void __launch_bounds__(THREADS)                                                    \
    NAME(int M, int N, int K, double alpha, const IN* __restrict__ A, idx_t lda, const IN* __restrict__ B,  \
         idx_t ldb, double beta, const ACC* __restrict__ C, idx_t ldc, ACC* __restrict__ D, idx_t ldd) {     \
        wmma_gemm<IN, FRAG, ACC, FM, FN, FK, A_COL, B_COL>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd); \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, BM, BN, THREADS, 0)

// The four storage orders of one (pair, shape): NAME_rr, NAME_rc, NAME_cr, NAME_cc.
#define WMMA_LAYOUTS(NAME, IN, FRAG, ACC, FM, FN, FK)              \
    WMMA_ENTRY(NAME##_rr, IN, FRAG, ACC, FM, FN, FK, false, false) \
    WMMA_ENTRY(NAME##_rc, IN, FRAG, ACC, FM, FN, FK, false, true)  \
    WMMA_ENTRY(NAME##_cr, IN, FRAG, ACC, FM, FN, FK, true, false)  \
    WMMA_ENTRY(NAME##_cc, IN, FRAG, ACC, FM, FN, FK, true, true)

// Default shapes (registry impls cuda:10_wmma and cuda:10_wmma-f16acc).
WMMA_LAYOUTS(wmma_f16f32, __half, __half, float, 16, 16, 16)
WMMA_LAYOUTS(wmma_f16f16, __half, __half, __half, 16, 16, 16)
WMMA_LAYOUTS(wmma_bf16f32, __nv_bfloat16, __nv_bfloat16, float, 16, 16, 16)
WMMA_LAYOUTS(wmma_tf32f32, float, wmma::precision::tf32, float, 16, 16, 8)
WMMA_LAYOUTS(wmma_i8i32, signed char, signed char, int, 16, 16, 16)
WMMA_LAYOUTS(wmma_u8i32, unsigned char, unsigned char, int, 16, 16, 16)
WMMA_LAYOUTS(wmma_f64f64, double, double, double, 8, 8, 4)

// The API's other two shapes, for the pairs that have them (cuda:10_wmma-m32n8k16, cuda:10_wmma-m8n32k16).
WMMA_LAYOUTS(wmma_m32n8k16_f16f32, __half, __half, float, 32, 8, 16)
WMMA_LAYOUTS(wmma_m32n8k16_bf16f32, __nv_bfloat16, __nv_bfloat16, float, 32, 8, 16)
WMMA_LAYOUTS(wmma_m32n8k16_i8i32, signed char, signed char, int, 32, 8, 16)
WMMA_LAYOUTS(wmma_m32n8k16_u8i32, unsigned char, unsigned char, int, 32, 8, 16)
WMMA_LAYOUTS(wmma_m8n32k16_f16f32, __half, __half, float, 8, 32, 16)
WMMA_LAYOUTS(wmma_m8n32k16_bf16f32, __nv_bfloat16, __nv_bfloat16, float, 8, 32, 16)
WMMA_LAYOUTS(wmma_m8n32k16_i8i32, signed char, signed char, int, 8, 32, 16)
WMMA_LAYOUTS(wmma_m8n32k16_u8i32, unsigned char, unsigned char, int, 8, 32, 16)
