// Stage 15's shootout: the fp32 emulations TCEC is compared with, on the tensor cores of the earlier rungs
// (mma.sync, cp.async).  Not the method: that is cuda_kernels/15_tcec.cu.
//
//   tcec_tf32       3xTF32: hi = tf32(x), lo = tf32(x - hi); hi*hi + lo*hi + hi*lo on mma.sync m16n8k8, all
//                   in one tensor-core accumulator.  fp32's exponent range, no scaling; not tuned.
//   bf16x6, bf16x9  three bf16 parts per value and six or nine mma.sync m16n8k16 products, a0*b0 promoted into
//                   fp32 registers every k16 step as TCEC promotes hi*hi (cuBLAS's BF16x9 recipe, fused).
//
// Ragged edges: A's and B's chunks that cross or lie past the matrix go by 4-byte copies that zero-fill
//              (cp.async's src-size; no out-of-range address is formed); stores are masked.
// Alignment:   16-byte copies need 16-byte aligned operand starts and leading dimensions; otherwise
//              study/registry.py picks the *_unaligned entries, the same templates with 4-byte copies.
// Range:       fp32's (tf32 and bf16 keep fp32's exponent); bf16x's limits are in its section below.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"

namespace {

constexpr int BM = 128, BN = 128, BK = 32;   // every kernel: 128x128 tiles of D, K in steps of 32

// Blocks run in groups of GROUP_M tile-rows, column by column, so that the A panels of a group and the B
// panel they share stay in L2 while the group sweeps (the plain row-major order streams all of B per row).
constexpr int GROUP_M = 8;

__device__ __forceinline__ void block_origin(int M, int& m0, int& n0) {
    const idx_t tiles_m = (M + BM - 1) / BM, tiles_n = gridDim.x;   // 64-bit: the grid may hold 2^31 blocks
    const idx_t pid = blockIdx.y * tiles_n + blockIdx.x, in_group = pid % (GROUP_M * tiles_n);
    const idx_t first_m = pid / (GROUP_M * tiles_n) * GROUP_M;
    const idx_t group_m = min(tiles_m - first_m, idx_t(GROUP_M));
    m0 = int((first_m + in_group % group_m) * BM);
    n0 = int(in_group / group_m * BN);
}

// Four consecutive elements X[row][col .. col+3] -> dst, zeros past `rows` / `cols`, by cp.async.  VEC and all
// four in range: one 16-byte copy (start and ld 16-byte aligned, col a multiple of 4).  Otherwise four 4-byte
// copies, each in range or reading 0 bytes from the matrix base (src-size 0 zero-fills); a partial 16-byte copy
// would read only its src-size bytes, but compute-sanitizer counts all 16 (memcheck, with torch's caching
// allocator off, caught stage 11's 1x1x1 call so), and `full` is its own test (see stage 11's copy8).
template <bool VEC>
__device__ __forceinline__ void copy4(float* dst, const float* __restrict__ X, idx_t ld, int row, int col, int rows,
                                      int cols) {
    const bool full = row < rows && col + 4 <= cols;
    if (VEC && full) {
        async_copy::cp16(dst, X + row * ld + col, 16);
    } else if (VEC) {   // the same four 4-byte copies, from one clamped count (ptxas kept tcec_fp16 unspilled so)
        const int n = row < rows ? max(0, min(4, cols - col)) : 0;
        const float* src = n ? X + row * ld + col : X;
#pragma unroll
        for (int j = 0; j < 4; ++j) async_copy::cp4(dst + j, j < n ? src + j : X, j < n);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const bool ok = row < rows && col + j < cols;
            async_copy::cp4(dst + j, ok ? X + row * ld + col + j : X, ok);
        }
    }
}

// D[row][col], D[row][col+1] = the epilogue of (v0, v1); VEC: one 8-byte access when both lie inside N.
template <bool VEC>
__device__ __forceinline__ void store2(float v0, float v1, float alpha, float beta, const float* __restrict__ C,
                                       idx_t ldc, float* __restrict__ D, idx_t ldd, int row, int col, int N) {
    if (VEC && col + 1 < N) {
        float2 d = make_float2(alpha * v0, alpha * v1);
        if (beta != 0.0f) {
            const float2 c = *reinterpret_cast<const float2*>(&C[row * ldc + col]);
            d.x = fmaf(beta, c.x, d.x);
            d.y = fmaf(beta, c.y, d.y);
        }
        *reinterpret_cast<float2*>(&D[row * ldd + col]) = d;
    } else {
        if (col < N) D[row * ldd + col] = gemm_epilogue(v0, alpha, beta, C, ldc, row, col);
        if (col + 1 < N) D[row * ldd + col + 1] = gemm_epilogue(v1, alpha, beta, C, ldc, row, col + 1);
    }
}

// mma's and wgmma's per-lane fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8", and
// the same per warp in wgmma's register A and its accumulators): lane = 4g + t holds A at rows g and g+8, B
// at column g, and D at rows g, g+8 and columns 2t, 2t+1.

// ---- 3xTF32 on mma.sync (tcec_tf32) ---------------------------------------------------------------------
// 8 warps of 64x32 (4x4 m16n8k8 tiles).  Raw fp32 tiles arrive by cp.async in a 2-slot ring; each thread
// splits the chunks it copied itself into hi/lo tf32 tiles (so no barrier guards the ring), and one barrier a
// k-tile hands the split buffer to the warps.
namespace tf32 {

constexpr int THREADS = 256, WARP_M = 64, WARP_N = 32, MT = WARP_M / 16, NT = WARP_N / 8, KSTEP = 8;
// Fragments are read as single words: A rows padded to 36 words (lane (g, t) reads bank 4g + t), B rows to
// 136 (bank 8t + g).
constexpr int A_PITCH = BK + 4, B_PITCH = BN + 8, RING = 2;
constexpr int BUFFER = 2 * (BM * A_PITCH + BK * B_PITCH);     // floats: A hi, A lo, B hi, B lo
constexpr int SLOT = BM * BK + BK * BN;                       // floats: raw A and B
constexpr int SMEM_BYTES = (2 * BUFFER + RING * SLOT) * 4;

__device__ __forceinline__ float round(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

__device__ __forceinline__ void split4(const float4 v, float* hi, float* lo) {
    const float4 h = make_float4(round(v.x), round(v.y), round(v.z), round(v.w));
    *reinterpret_cast<float4*>(hi) = h;
    *reinterpret_cast<float4*>(lo) =
        make_float4(round(v.x - h.x), round(v.y - h.y), round(v.z - h.z), round(v.w - h.w));
}

// A 128x32 and B 32x128 as 1024 chunks of 4 floats each, 4 of each per thread; chunk c lands at slot + 4c.
template <bool VEC>
__device__ __forceinline__ void copy_tiles(float* slot, const float* __restrict__ A, idx_t lda,
                                           const float* __restrict__ B, idx_t ldb, int M, int N, int K, int m0,
                                           int n0, int k0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int c = threadIdx.x + i * THREADS;
        copy4<VEC>(slot + 4 * c, A, lda, m0 + (c >> 3), k0 + (c & 7) * 4, M, K);
        copy4<VEC>(slot + BM * BK + 4 * c, B, ldb, k0 + (c >> 5), n0 + (c & 31) * 4, K, N);
    }
}

__device__ __forceinline__ void split_tiles(const float* slot, float* buf) {
    float* a_hi = buf;
    float* a_lo = a_hi + BM * A_PITCH;
    float* b_hi = a_lo + BM * A_PITCH;
    float* b_lo = b_hi + BK * B_PITCH;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int c = threadIdx.x + i * THREADS;
        const int ar = (c >> 3) * A_PITCH + (c & 7) * 4, br = (c >> 5) * B_PITCH + (c & 31) * 4;
        split4(*reinterpret_cast<const float4*>(slot + 4 * c), a_hi + ar, a_lo + ar);
        split4(*reinterpret_cast<const float4*>(slot + BM * BK + 4 * c), b_hi + br, b_lo + br);
    }
}

struct FragA { unsigned r[4]; };
struct FragB { unsigned r[2]; };

__device__ __forceinline__ FragA load_a(const float* a, int row0, int k0, int lane) {
    const float* p = a + (row0 + (lane >> 2)) * A_PITCH + k0 + (lane & 3);
    return {{__float_as_uint(p[0]), __float_as_uint(p[8 * A_PITCH]), __float_as_uint(p[4]),
             __float_as_uint(p[8 * A_PITCH + 4])}};
}

__device__ __forceinline__ FragB load_b(const float* b, int k0, int col0, int lane) {
    const float* p = b + (k0 + (lane & 3)) * B_PITCH + col0 + (lane >> 2);
    return {{__float_as_uint(p[0]), __float_as_uint(p[4 * B_PITCH])}};
}

__device__ __forceinline__ void mma(float (&d)[4], const FragA& a, const FragB& b, const float (&c)[4]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// One warp's share of one split k-tile: hi*hi leaves the tensor core after every k8 step (a zero accumulator,
// then a round-to-nearest FADD); the corrections accumulate in their own tensor-core accumulator.
__device__ __forceinline__ void multiply_tile(const float* buf, float (&acc)[MT][NT][4], float (&corr)[MT][NT][4],
                                              int wm, int wn, int lane) {
    const float* a_hi = buf;
    const float* a_lo = a_hi + BM * A_PITCH;
    const float* b_hi = a_lo + BM * A_PITCH;
    const float* b_lo = b_hi + BK * B_PITCH;
    const float zero[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int k = 0; k < BK; k += KSTEP) {
        FragA ah[MT], al[MT];
        FragB bh[NT], bl[NT];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            ah[i] = load_a(a_hi, wm * WARP_M + i * 16, k, lane);
            al[i] = load_a(a_lo, wm * WARP_M + i * 16, k, lane);
        }
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            bh[j] = load_b(b_hi, k, wn * WARP_N + j * 8, lane);
            bl[j] = load_b(b_lo, k, wn * WARP_N + j * 8, lane);
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                float p[4];
                mma(p, ah[i], bh[j], zero);
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] += p[e];
                mma(corr[i][j], al[i], bh[j], corr[i][j]);
                mma(corr[i][j], ah[i], bl[j], corr[i][j]);
            }
    }
}

// hi*hi plus the corrections; but where hi*hi is inf or NaN, hi*hi alone: its pattern of inf and NaN is SGEMM's,
// while an inf's lo is NaN (inf - inf) and would turn an inf into NaN.
__device__ __forceinline__ float with_corr(float acc, float corr) { return isfinite(acc) ? acc + corr : acc; }

template <bool VEC>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                                     const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C,
                                     idx_t ldc, float* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(128) unsigned char smem_raw[];
    float* bufs = reinterpret_cast<float*>(smem_raw);
    float* ring = bufs + 2 * BUFFER;
    int m0, n0;
    block_origin(M, m0, n0);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp / (BN / WARP_N), wn = warp % (BN / WARP_N);

    float acc[MT][NT][4], corr[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = corr[i][j][e] = 0.f;

    // The ring runs one k-tile ahead of the split.
    const int k_tiles = (K + BK - 1) / BK;
    copy_tiles<VEC>(ring, A, lda, B, ldb, M, N, K, m0, n0, 0);
    async_copy::commit();
    async_copy::wait_group<0>();
    split_tiles(ring, bufs);
    __syncthreads();
    for (int t = 0; t < k_tiles; ++t) {
        const bool more = t + 1 < k_tiles;
        if (more) copy_tiles<VEC>(ring + ((t + 1) % RING) * SLOT, A, lda, B, ldb, M, N, K, m0, n0, (t + 1) * BK);
        async_copy::commit();
        multiply_tile(bufs + (t & 1) * BUFFER, acc, corr, wm, wn, lane);
        if (more) {
            async_copy::wait_group<0>();
            split_tiles(ring + ((t + 1) % RING) * SLOT, bufs + ((t + 1) & 1) * BUFFER);
        }
        __syncthreads();   // the next buffer is complete, and nobody still reads this one when it is refilled
    }

    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wm * WARP_M + i * 16 + g + 8 * h;
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < NT; ++j)
                store2<VEC>(with_corr(acc[i][j][2 * h], corr[i][j][2 * h]),
                            with_corr(acc[i][j][2 * h + 1], corr[i][j][2 * h + 1]),
                            alpha, beta, C, ldc, D, ldd, row, n0 + wn * WARP_N + j * 8 + 2 * tq, N);
        }
}

}  // namespace tf32


// ---- bf16x6 and bf16x9: the fp32-emulation shootout's fused bf16 recipes ---------------------------------------
// Every fp32 x is split into three bf16 parts, each rounded to nearest: x0 = bf16(x), x1 = bf16(x - x0),
// x2 = bf16(x - x0 - x1) (the differences exact in fp32; bf16 keeps fp32's exponent, so nothing is scaled).
// bf16x9 sums all nine products ai bj, bf16x6 the six with i + j <= 2 (those it drops are below ~2^-24 |a b|):
// cuBLAS's BF16x9 recipe (CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUDA 12.9, Blackwell only), here with TCEC's
// promotion: a0 b0 leaves the tensor core every k16 step (mma.sync m16n8k16 into a zero accumulator, added to
// fp32 registers by round-to-nearest FADDs), the smaller products share one tensor-core accumulator.  The
// kernel is shaped as tcec_tf32: 128x128 tiles, 8 warps of 64x32, raw fp32 k-tiles by cp.async into a 2-slot
// ring, each thread splitting the chunks it copied into three bf16 tiles of A and three of B, ldmatrix fragments.
// Range: x0 of a finite |x| >= 2^128 (1 - 2^-9), which would round to inf, is truncated instead; x2 underflows
// for |x| below ~2^-110 (precision goes gradually), and |x| <= 2^-134 is 0.  An inf's lower parts are NaN, so
// where a0 b0's sum is inf or NaN it alone is kept (its pattern is SGEMM's).
namespace bf16x {

using Bf16 = Elem<__nv_bfloat16>;

constexpr int THREADS = 256;
constexpr int WARP_M = 64, WARP_N = 32, MT = WARP_M / 16, NT = WARP_N / 8;   // 4 x 4 m16n8 tiles a warp
// bf16 rows padded by 8 elements: A rows of 80 bytes and B rows of 272 are odd counts of 16 bytes, so the 8
// rows of each ldmatrix matrix fall in 8 different groups of 4 banks.
constexpr int A_PITCH = BK + 8, B_PITCH = BN + 8;
constexpr int A_PART = BM * A_PITCH * 2, B_PART = BK * B_PITCH * 2;   // bytes of one part's tile
constexpr int BUFFER = 3 * (A_PART + B_PART);                          // bytes: A0 A1 A2 B0 B1 B2
constexpr int SLOT = (BM * BK + BK * BN) * 4, RING = 2;                // bytes: raw fp32 A and B
constexpr int SMEM_BYTES = 2 * BUFFER + RING * SLOT;                   // 179200
static_assert(SMEM_BYTES <= 227 * 1024, "an H100 block has at most 227 KB of shared memory");

// Thread t copies and splits chunks (4 floats) t + 256 i, i < 4, of A and of B.  B chunk c is k-row c / 32,
// columns 4 (c % 32): a warp stores one 256-byte run of a bf16 row.  A chunk c is columns 4 (c % 8) of row
// a_row(c / 8) + 32 i, a_row permuting each 8 rows so that a half-warp's 8-byte stores of the split cover two
// rows 4 apart (80 x 4 bytes, 16 banks apart: no conflict) instead of two adjacent ones.  The raw chunk waits in
// its ring slot at 16 c bytes (B's after A's), where only its own thread reads it, so the ring needs no barrier.
struct Chunks {
    int a_row, a_col, b_row, b_col;   // of the first chunk (i = 0) in a tile
    int a_dst, b_dst;                 // byte offsets of the first chunk's parts in a part's tile

    __device__ __forceinline__ explicit Chunks(int tid) {
        const int q = tid >> 3;
        a_row = (q & ~7) | ((q & 1) << 2) | ((q >> 1) & 3);
        a_col = 4 * (tid & 7);
        b_row = tid >> 5;
        b_col = 4 * (tid & 31);
        a_dst = (a_row * A_PITCH + a_col) * 2;
        b_dst = (b_row * B_PITCH + b_col) * 2;
    }
};

template <bool VEC>
__device__ __forceinline__ void copy_tiles(unsigned char* slot, const Chunks& ch, const float* __restrict__ A,
                                           idx_t lda, const float* __restrict__ B, idx_t ldb, int M, int N, int K,
                                           int m0, int n0, int k0) {
    float* a = reinterpret_cast<float*>(slot) + 4 * threadIdx.x;
    float* b = a + BM * BK;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        copy4<VEC>(a + 4 * THREADS * i, A, lda, m0 + ch.a_row + 32 * i, k0 + ch.a_col, M, K);
        copy4<VEC>(b + 4 * THREADS * i, B, ldb, k0 + ch.b_row + 8 * i, n0 + ch.b_col, K, N);
    }
}

// x0's input: a finite |x| >= 0x7F7F8000 (2^128 (1 - 2^-9)) would round to inf in bf16, so it is truncated to
// bf16's largest finite value instead (x - x0 stays exact); inf truncates to itself, and NaN fails the test.
__device__ __forceinline__ float top_safe(float x) {
    return fabsf(x) >= __uint_as_float(0x7F7F8000u) ? __uint_as_float(__float_as_uint(x) & 0xFFFF0000u) : x;
}

// Four consecutive values -> their three bf16 parts, each 4 elements (8 bytes) at p + part * stride.
__device__ __forceinline__ void split4(const float4 v, unsigned char* p, int stride) {
    float r[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int part = 0; part < 3; ++part) {
        uint2 h;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const float lo = part ? r[2 * e] : top_safe(r[2 * e]), hi = part ? r[2 * e + 1] : top_safe(r[2 * e + 1]);
            const uint32_t w = Bf16::pack(lo, hi);   // lo in the low half: the lower address
            // exact: the error of a rounding to bf16 (whose value is w's half, shifted to fp32's high bits)
            r[2 * e] -= __uint_as_float(w << 16), r[2 * e + 1] -= __uint_as_float(w & 0xFFFF0000u);
            (e ? h.y : h.x) = w;
        }
        *reinterpret_cast<uint2*>(p + part * stride) = h;
    }
}

__device__ __forceinline__ void split_tiles(const unsigned char* slot, unsigned char* buf, const Chunks& ch) {
    const float4* a = reinterpret_cast<const float4*>(slot) + threadIdx.x;
    const float4* b = a + BM * BK / 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        split4(a[THREADS * i], buf + ch.a_dst + 32 * i * A_PITCH * 2, A_PART);
        split4(b[THREADS * i], buf + 3 * A_PART + ch.b_dst + 8 * i * B_PITCH * 2, B_PART);
    }
}

// One warp's share of one split k-tile (shared address buf; a_frag and b_frag: this lane's ldmatrix offsets).
// Per k16 step: a0 b0 into a zero accumulator, then added to acc; the other products into corr, smallest first.
template <int PRODUCTS>
__device__ __forceinline__ void multiply_tile(uint32_t buf, uint32_t a_frag, uint32_t b_frag,
                                              float (&acc)[MT][NT][4], float (&corr)[MT][NT][4]) {
#pragma unroll 1   // unrolled, ptxas hoisted the second step's fragments too and spilled at 255 registers
    for (int kk = 0; kk < BK / 16; ++kk) {
        uint32_t b[3][NT / 2][4];   // per part, a pair of n8 tiles per ldmatrix.x4.trans
#pragma unroll
        for (int p = 0; p < 3; ++p)
#pragma unroll
            for (int jj = 0; jj < NT / 2; ++jj)
                ldsm_x4_trans(b[p][jj], buf + 3 * A_PART + p * B_PART + b_frag + (16 * kk * B_PITCH + 16 * jj) * 2);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            uint32_t a[3][4];
#pragma unroll
            for (int p = 0; p < 3; ++p) ldsm_x4(a[p], buf + p * A_PART + a_frag + (16 * i * A_PITCH + 16 * kk) * 2);
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int jj = j / 2, h = 2 * (j % 2);
                auto product = [&](float (&d)[4], int pa, int pb) {
                    Bf16::mma(d, a[pa], b[pb][jj][h], b[pb][jj][h + 1]);
                };
                float p00[4] = {0.f, 0.f, 0.f, 0.f};
                product(p00, 0, 0);
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[i][j][e] += p00[e];   // round-to-nearest, outside the tensor core
                if constexpr (PRODUCTS == 9) {
                    product(corr[i][j], 2, 2);
                    product(corr[i][j], 1, 2);
                    product(corr[i][j], 2, 1);
                }
                product(corr[i][j], 0, 2);
                product(corr[i][j], 1, 1);
                product(corr[i][j], 2, 0);
                product(corr[i][j], 0, 1);
                product(corr[i][j], 1, 0);
            }
        }
    }
}

template <int PRODUCTS, bool VEC>
__device__ __forceinline__ void gemm(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                                     const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C,
                                     idx_t ldc, float* __restrict__ D, idx_t ldd) {
    static_assert(PRODUCTS == 6 || PRODUCTS == 9, "bf16x6 or bf16x9");
    extern __shared__ __align__(128) unsigned char smem_raw[];
    unsigned char* ring = smem_raw + 2 * BUFFER;   // two split buffers, then the ring
    const uint32_t bufs = async_copy::smem_u32(smem_raw);
    int m0, n0;
    block_origin(M, m0, n0);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp / (BN / WARP_N), wn = warp % (BN / WARP_N);
    const Chunks ch(threadIdx.x);
    // ldmatrix lane l points at row l % 16, column 8 (l / 16) of a 16x16 block: of A (rows m, columns k) for an
    // m16 tile, of B (rows k, columns n) for a pair of n8 tiles.
    const uint32_t a_frag = ((wm * WARP_M + lane % 16) * A_PITCH + 8 * (lane / 16)) * 2;
    const uint32_t b_frag = ((lane % 16) * B_PITCH + wn * WARP_N + 8 * (lane / 16)) * 2;

    float acc[MT][NT][4], corr[MT][NT][4];
    zero_fragments(acc);
    zero_fragments(corr);

    // The ring runs one k-tile ahead of the split, the split one ahead of the multiplies.
    const int k_tiles = (K + BK - 1) / BK;
    copy_tiles<VEC>(ring, ch, A, lda, B, ldb, M, N, K, m0, n0, 0);
    async_copy::commit();
    async_copy::wait_group<0>();
    split_tiles(ring, smem_raw, ch);
    __syncthreads();
    for (int t = 0; t < k_tiles; ++t) {
        const bool more = t + 1 < k_tiles;
        unsigned char* next = ring + ((t + 1) % RING) * SLOT;
        if (more) copy_tiles<VEC>(next, ch, A, lda, B, ldb, M, N, K, m0, n0, (t + 1) * BK);
        async_copy::commit();
        multiply_tile<PRODUCTS>(bufs + (t & 1) * BUFFER, a_frag, b_frag, acc, corr);
        if (more) {
            async_copy::wait_group<0>();
            split_tiles(next, smem_raw + ((t + 1) & 1) * BUFFER, ch);
        }
        __syncthreads();   // the next buffer is complete, and nobody still reads this one when it is refilled
    }

    // Lanes 2s and 2s+1 trade halves of their pairs, so that the even one holds row g, columns 4s .. 4s+3 of an
    // n8 tile and the odd one the same of row g+8: gemm_common.cuh's store_row4 then stores 16-byte runs.
    const int g = lane >> 2, odd = lane & 1, col4 = 4 * ((lane & 3) >> 1);
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
            float v[4];
#pragma unroll
            for (int e = 0; e < 4; ++e)   // an inf's corrections are NaN: a0 b0 alone where it is inf or NaN
                v[e] = isfinite(acc[i][j][e]) ? acc[i][j][e] + corr[i][j][e] : acc[i][j][e];
            const float s0 = __shfl_xor_sync(0xFFFFFFFFu, odd ? v[0] : v[2], 1);
            const float s1 = __shfl_xor_sync(0xFFFFFFFFu, odd ? v[1] : v[3], 1);
            const float out[4] = {odd ? s0 : v[0], odd ? s1 : v[1], odd ? v[2] : s0, odd ? v[3] : s1};
            const int row = m0 + wm * WARP_M + 16 * i + g + 8 * odd;
            if (row < M)
                store_row4<VEC>(out, alpha, beta, C, ldc, D, ldd, row, n0 + wn * WARP_N + 8 * j + col4, N);
        }
}

}  // namespace bf16x

}  // namespace

// One block per 128x128 tile; each entry exports its tile, threads and dynamic shared memory (STUDY_ENTRY_FACTS).
// grid.z walks a batch of independent GEMMs whose operands lie batch_* elements apart (0 for a single GEMM):
// seed 002's Figure 8 times 256 products in one launch.
#define TCEC_SIGNATURE                                                                                       \
    (int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda, const float* __restrict__ B,  \
     idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc, float* __restrict__ D, idx_t ldd,        \
     idx_t batch_a, idx_t batch_b, idx_t batch_c, idx_t batch_d

// 3xTF32: 256 threads on the mma.sync path, tf32::SMEM_BYTES.
#define TCEC_TF32_ENTRY(NAME, VEC)                                                                           \
    extern "C" __global__ void __launch_bounds__(tf32::THREADS, 1) NAME TCEC_SIGNATURE) {                    \
        const idx_t z = blockIdx.z;                                                                          \
        tf32::gemm<VEC>(M, N, K, alpha, A + z * batch_a, lda, B + z * batch_b, ldb, beta, C + z * batch_c, ldc, \
                        D + z * batch_d, ldd);                                                               \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, BM, BN, tf32::THREADS, tf32::SMEM_BYTES)
TCEC_TF32_ENTRY(tcec_tf32, true)
TCEC_TF32_ENTRY(tcec_tf32_unaligned, false)

// One block per 128x128 tile, grid (ceil(N/128), ceil(M/128), batch), 256 threads, SMEM_BYTES of dynamic shared
// memory.  grid.z walks a batch of independent GEMMs whose operands lie batch_* elements apart (0 for one GEMM).
#define BF16X_ENTRY(NAME, PRODUCTS, VEC)                                                                     \
    extern "C" __global__ void __launch_bounds__(bf16x::THREADS, 1)                                          \
        NAME(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,                       \
             const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc,     \
             float* __restrict__ D, idx_t ldd, idx_t batch_a, idx_t batch_b, idx_t batch_c, idx_t batch_d) { \
        const idx_t z = blockIdx.z;                                                                          \
        bf16x::gemm<PRODUCTS, VEC>(M, N, K, alpha, A + z * batch_a, lda, B + z * batch_b, ldb, beta,            \
                                   C + z * batch_c, ldc, D + z * batch_d, ldd);                              \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, BM, BN, bf16x::THREADS, bf16x::SMEM_BYTES)
BF16X_ENTRY(bf16x6, 6, true)
BF16X_ENTRY(bf16x6_unaligned, 6, false)
BF16X_ENTRY(bf16x9, 9, true)
BF16X_ENTRY(bf16x9_unaligned, 9, false)

