// Stage 11 - WMMA fed by a multi-stage cp.async pipeline.
//
// Technique:   8 warps own a 128x128 tile of D, each warp a 64x32 block of 4x2 WMMA 16x16x16 accumulators
//              (fp32).  K advances 32 at a time through a 4-slot ring of shared memory: while the warps
//              multiply k-tile t, cp.async copies of tiles t+1 .. t+3 are in flight (16-byte copies, two of
//              A and two of B per thread and tile).  One barrier per k-tile.  The epilogue stages the fp32
//              accumulators through shared memory (the ring, no longer needed), applies alpha and beta in fp32
//              and writes D in the input type, 8 elements (16 bytes) per access.
// Reproduces:  seed 000 kernel 7b (WMMA fed from shared memory that cp.async fills, a multi-stage pipeline)
//              Its 64x64 block tile of 16 warps, one 16x16 fragment each, grows here to 128x128 for 8 warps
//              of 64x32 (our choice: more mma_syncs per fragment loaded).
// Changed:     stage 10 copied each k-tile element by element through registers, synchronised, multiplied,
//              synchronised again: copy and tensor-core work never overlapped, and each warp had a 32x32 tile
//              (a fragment of A loaded from shared memory fed 2 mma_syncs).  Here the copies run 3 tiles
//              ahead, bypass the registers, move 16 bytes each, and a fragment of A feeds 2, of B 4 mma_syncs.
// Why faster:  the tensor cores wait on neither global memory latency (3 tiles in flight) nor the copy
//              instructions' issue slots (16 bytes per copy instead of stage 10's 2).  Measured: fp16 226.9
//              TFLOP/s at 4096^3 on an H100, 30.7% of cuBLAS, 3.3x stage 10 (reports/h100/results.csv).
//
// fp16 and bf16 in, fp32 accumulation, C and D in the input type (as cuBLAS HGEMM): wmma_async_f16,
// wmma_async_bf16, and their _unaligned twins.  A and B row-major.
// Shared tile: A slots are 128 rows of BK + 16 halves, B slots 32 rows of 128 + 16: every row stays 32-byte
//              aligned, as wmma::load_matrix_sync requires; the 16-half skew is meant to spread consecutive rows over
//              the banks (NVIDIA's cudaTensorCoreGemm sample pads the same way; not measured here, stage 13 is
//              where bank conflicts are counted).
// Ragged edges: only whole in-range 16-byte chunks go by cp.async; a chunk that crosses M, N or K, or lies
//              past them, is copied element by element with zeros beyond the edge (a partial cp.async reads only
//              its src-size bytes, but compute-sanitizer counts all 16: memcheck, with torch's caching allocator
//              off, caught the 1x1x1 call reading 16 bytes of a 2-byte A); stores are masked.
// Alignment:   wmma_async_* need 16-byte aligned operand starts and leading dimensions (the launcher checks);
//              wmma_async_*_unaligned is the same template with element-wise copies through registers (2-byte
//              elements at an odd offset allow nothing wider) and scalar epilogue accesses.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"   // to_float, from_float

namespace {

using namespace nvcuda;

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 4;
constexpr int THREADS = 256;                  // 8 warps: 2 along M x 4 along N
constexpr int WM = 64, WN = 32;               // warp tile
constexpr int TM = WM / 16, TN = WN / 16;     // 4 x 2 accumulator fragments per warp
constexpr int SKEW = 16;                      // halves: 32 bytes, keeps rows 256-bit aligned
constexpr int A_LD = BK + SKEW, B_LD = BN + SKEW;
constexpr int A_ELEMS = BM * A_LD, B_ELEMS = BK * B_LD;
constexpr int STAGE_ELEMS = A_ELEMS + B_ELEMS;
constexpr int SMEM_BYTES = STAGES * STAGE_ELEMS * 2;   // 86016 bytes of dynamic shared memory
constexpr int CS_LD = BN + 8;                 // floats: the epilogue tile, rows 32-byte aligned
static_assert(BM * CS_LD * 4 <= SMEM_BYTES, "the epilogue tile fits in the ring");
static_assert(BM * BK / 8 == 2 * THREADS && BK * BN / 8 == 2 * THREADS, "two 8-element chunks of A and B per thread");

// X[row][col .. col+7] -> dst (shared), zeros at or past `rows` / `cols`.  VEC and a whole chunk in range: one
// 16-byte cp.async (X and ld 16-byte aligned, col a multiple of 8); otherwise element by element through
// registers (a 2-byte element at an odd offset allows nothing wider; a partial chunk must not be read whole),
// and the ring's barrier orders these plain stores like the copies.  `full` is its own test, not n == 8: ptxas
// once branched a 16-byte copy on the predicate of such a clamp (stages 09 and 13).
template <class T, bool VEC>
__device__ __forceinline__ void copy8(T* dst, const T* __restrict__ X, idx_t ld, int row, int col, int rows,
                                      int cols) {
    const bool full = row < rows && col + 8 <= cols;
    const int n = row < rows ? max(0, min(8, cols - col)) : 0;
    if (VEC && full) {
        async_copy::cp16(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(X + row * ld + col), 16);
    } else {
        const T* src = X + row * ld + col;   // dereferenced only for the n elements in range
#pragma unroll
        for (int j = 0; j < 8; ++j) dst[j] = j < n ? src[j] : from_float<T>(0.0f);
    }
}

// Copies k-tile [k0, k0 + BK) of A (128 x 32) and B (32 x 128) into one ring slot.  Thread t copies chunk
// t % 4 of A rows t / 4 and t / 4 + 64, and chunk t % 16 of B rows t / 16 and t / 16 + 16: a warp reads 8
// rows x 64 bytes of A and 2 rows x 256 bytes of B.
template <class T, bool VEC>
__device__ __forceinline__ void load_tile(T* slot, const T* __restrict__ A, idx_t lda, const T* __restrict__ B,
                                          idx_t ldb, int M, int N, int K, int m0, int n0, int k0) {
    const int tid = threadIdx.x;
    T* As = slot;
    T* Bs = slot + A_ELEMS;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = tid / 4 + 64 * i, c = 8 * (tid % 4);
        copy8<T, VEC>(As + r * A_LD + c, A, lda, m0 + r, k0 + c, M, K);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const int r = tid / 16 + 16 * i, c = 8 * (tid % 16);
        copy8<T, VEC>(Bs + r * B_LD + c, B, ldb, k0 + r, n0 + c, K, N);
    }
}

template <class T, bool VEC>
__device__ __forceinline__ void wmma_async(int M, int N, int K, double alpha_d, const T* __restrict__ A, idx_t lda,
                                           const T* __restrict__ B, idx_t ldb, double beta_d,
                                           const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* ring = reinterpret_cast<T*>(smem_raw);
    const float alpha = (float)alpha_d, beta = (float)beta_d;

    const int warp = threadIdx.x / 32;
    const int wm = (warp / (BN / WN)) * WM, wn = (warp % (BN / WN)) * WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    const int k_tiles = (K + BK - 1) / BK;
    // Prologue: STAGES-1 tiles in flight.  Every iteration commits a group (empty past the end), so that
    // wait_group<STAGES-2> always means "the tile about to be used has landed".
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load_tile<T, VEC>(ring + s * STAGE_ELEMS, A, lda, B, ldb, M, N, K, m0, n0, s * BK);
        async_copy::commit();
    }

    for (int kt = 0; kt < k_tiles; ++kt) {
        async_copy::wait_group<STAGES - 2>();
        // One barrier per k-tile: tile kt is visible to every warp, and every warp has finished tile kt-1,
        // whose slot the copy below refills.
        __syncthreads();
        if (kt + STAGES - 1 < k_tiles)
            load_tile<T, VEC>(ring + (kt + STAGES - 1) % STAGES * STAGE_ELEMS, A, lda, B, ldb, M, N, K, m0, n0,
                              (kt + STAGES - 1) * BK);
        async_copy::commit();

        const T* As = ring + kt % STAGES * STAGE_ELEMS;
        const T* Bs = As + A_ELEMS;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[TM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) wmma::load_matrix_sync(a[i], As + (wm + 16 * i) * A_LD + kk, A_LD);
#pragma unroll
            for (int j = 0; j < TN; ++j) wmma::load_matrix_sync(b[j], Bs + kk * B_LD + wn + 16 * j, B_LD);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
    async_copy::wait_all();   // only empty groups remain, but nothing may write the ring once it is reused
    __syncthreads();          // every warp is done reading the ring

    // Accumulators -> shared memory (their element-to-lane map is unspecified), then 8 consecutive columns
    // per thread and pass: thread t takes columns 8 (t % 16) .. +7 of rows t / 16 + 16 p.
    float* Cs = reinterpret_cast<float*>(smem_raw);
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            wmma::store_matrix_sync(Cs + (wm + 16 * i) * CS_LD + wn + 16 * j, acc[i][j], CS_LD, wmma::mem_row_major);
    __syncthreads();

    const int c = 8 * (threadIdx.x % 16);
    const idx_t col = n0 + c;
    if (col >= N) return;
#pragma unroll 4
    for (int r = threadIdx.x / 16; r < BM; r += THREADS / 16) {
        const idx_t row = m0 + r;
        if (row >= M) break;
        float v[8];
        *reinterpret_cast<float4*>(&v[0]) = *reinterpret_cast<const float4*>(&Cs[r * CS_LD + c]);
        *reinterpret_cast<float4*>(&v[4]) = *reinterpret_cast<const float4*>(&Cs[r * CS_LD + c + 4]);
        if (VEC && col + 8 <= N) {
            alignas(16) T out[8];
            alignas(16) T cin[8];
            if (beta != 0.0f) *reinterpret_cast<uint4*>(cin) = *reinterpret_cast<const uint4*>(&C[row * ldc + col]);
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const float d = alpha * v[j];
                out[j] = from_float<T>(beta != 0.0f ? fmaf(beta, to_float(cin[j]), d) : d);
            }
            *reinterpret_cast<uint4*>(&D[row * ldd + col]) = *reinterpret_cast<const uint4*>(out);
        } else {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                if (col + j >= N) break;
                const float d = alpha * v[j];
                D[row * ldd + col + j] =
                    from_float<T>(beta != 0.0f ? fmaf(beta, to_float(C[row * ldc + col + j]), d) : d);
            }
        }
    }
}

}  // namespace

// Dynamic shared memory per block: SMEM_BYTES = STAGES * (128 * 48 + 32 * 144) * 2 = 86016, exported with the
// tile and block size (STUDY_ENTRY_FACTS).
#define WMMA_ASYNC_ENTRY(NAME, T, VEC)                                                                          \
    extern "C" __global__ void __launch_bounds__(THREADS, 2)                                                    \
    NAME(int M, int N, int K, double alpha, const T* __restrict__ A, idx_t lda, const T* __restrict__ B,       \
         idx_t ldb, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) {            \
        wmma_async<T, VEC>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);                               \
    }                                                                                                           \
    STUDY_ENTRY_FACTS(NAME, BM, BN, THREADS, SMEM_BYTES)

WMMA_ASYNC_ENTRY(wmma_async_f16, __half, true)
WMMA_ASYNC_ENTRY(wmma_async_f16_unaligned, __half, false)
WMMA_ASYNC_ENTRY(wmma_async_bf16, __nv_bfloat16, true)
WMMA_ASYNC_ENTRY(wmma_async_bf16_unaligned, __nv_bfloat16, false)
