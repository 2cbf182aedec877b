// Stage 15 - TCEC: fp32 GEMM on fp16 tensor cores with error correction.
//
// Technique:   every fp32 operand x is split into hi = fp16(x) and lo = fp16((x - hi) * 2^11), and the fp32
//              product is rebuilt from three fp16 tensor-core products:
//                  A B  ~  hiA hiB + (loA hiB + hiA loB) / 2^11          (loA loB, ~2^-22 of it, dropped).
//              Before the split, row i of A and column j of B are multiplied by powers of two (exact) that put
//              each line's largest |x| in [2^14, 2^15), and the epilogue multiplies D back by 2^-(ea_i + eb_j).
//              hiA hiB leaves the tensor core every k-tile (32 k), added to fp32 registers with
//              round-to-nearest FADDs; the two corrections share their own accumulator.  On Hopper this is wgmma
//              (m64n128k16, two warpgroups of 64x128 per 128x128 tile), after two small kernels: tcec_amax
//              finds each line's max |x|, split_b splits B once into hi/lo fp16 tiles laid out as wgmma reads
//              them.  In the GEMM each warp cp.asyncs its own 16 rows of fp32 A (and 1/8 of the k-tile's split
//              B) into a 4-slot ring and splits A in registers straight into wgmma's A fragments, the split of
//              k-tile t+1 overlapping the tensor cores' work on tile t.
// Reproduces:  seed 002 (Ootomo & Yokota 2022, section 4.4): the split, scaling and correction of its eqs.
//              (6)-(7), its WMMAe idea (fragments built in registers from fp32 data), and its finding that
//              accumulating inside the tensor cores (which round toward zero) kept Markidis et al.'s method
//              short of fp32 accuracy.  Variants: tcec_fp16 (the method); tcec_markidis (lo unscaled, every
//              product in one tensor-core accumulator); tcec_nocorr (hi only, the floor); tcec_tf32 (3xTF32
//              on mma.sync m16n8k8: fp32's exponent range, no scaling; not tuned); bf16x6 and bf16x9 (the
//              fp32-emulation shootout: cuBLAS's BF16x9 recipe with TCEC's promotion, below).
// Changed:     the SIMT ladder (01-09) ends at the FP32 FMA pipe, ~64 TFLOP/s.  Here the multiplies move to
//              the tensor cores, whose fp16 rate is ~12x that, at the price of 3 products per product and a
//              split of every operand.
// Why faster:  3 fp16 products at cuBLAS's ~780 TFLOP/s fp16 rate bound this at ~260 TFLOP/s of fp32 work,
//              5x SGEMM's ~51.  Measured: 137.5 TFLOP/s at 4096^3 on an H100, 2.67x cuBLAS SGEMM, the scaling
//              pass included (reports/h100/results.csv); tuning steps and the run before that pass: docs/15_tcec.md.
//
// Ragged edges: split_b writes zeros past K and N, so B's tiles are always whole; A's chunks that cross or lie
//              past M or K go by 4-byte copies that zero-fill (cp.async's src-size; no out-of-range address is
//              formed, and no 16-byte copy reaches past the matrix); stores are masked.
// Alignment:   tcec_amax and split_b read element by element (any alignment).  tcec_* copy A in 16-byte chunks
//              and store D in 8-byte pairs, so they need 16-byte aligned operand starts and leading dimensions;
//              otherwise study/registry.py picks tcec_*_unaligned, the same template with 4-byte copies.
// Range:       fp32's, by the scaling.  What remains: a value more than ~2^29 below its row's (or column's)
//              largest |x| falls into fp16's subnormals and keeps fewer bits (its error is then that small
//              relative to the line's largest term); a line whose largest |x| is below 2^-112 is scaled by at
//              most 2^126.  A row of A or column of B holding an inf or a NaN is recomputed in fp32 FMAs
//              (nonfinite_dot), so inf and NaN come out where, and as, SGEMM's do.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "mma_sync.cuh"
#include "wgmma.cuh"

namespace {

enum Variant { TCEC = 0, MARKIDIS = 1, NOCORR = 2, TF32X3 = 3 };
template <int V> struct Variant_ {};   // a tag, to pick a constructor's variant

constexpr int BM = 128, BN = 128, BK = 32;   // every variant: 128x128 tiles of D, K in steps of 32
constexpr float LO_SCALE = 2048.0f;          // 2^11, seed 002 eqs. (6)-(7)

// ---- exact power-of-two scaling (the fp16 variants) -------------------------------------------------------
// An fp16 split holds x to ~22 bits only while |x| lies in about [2^-14, 2^15]: above, hi overflows to inf;
// below, lo (then hi) falls into fp16's subnormals.  So row i of A is multiplied by 2^ea[i] and column j of B by
// 2^eb[j] (exact), each chosen to put the line's largest finite |x| in [2^14, 2^15), and the epilogue multiplies
// the product by 2^-(ea[i] + eb[j]).  A first kernel (tcec_amax) records each line's max |x| as its bits
// (non-negative floats order as their bits), or INF_BITS where the line holds an inf or a NaN; such lines'
// results are recomputed in fp32 (nonfinite_dot), so that inf and NaN come out where, and as, SGEMM's do.
constexpr unsigned INF_BITS = 0x7F800000u;

__device__ __forceinline__ float pow2(int e) { return __int_as_float((e + 127) << 23); }   // e in [-126, 127]

// The e that puts max |x| (as bits) in [2^14, 2^15): 0 for a line of zeros or with an inf or a NaN; at most 126
// (a line whose max is below 2^-112 is scaled less far: still exact, with less of fp16's range).
__device__ __forceinline__ int scale_exponent(unsigned bits) {
    if (bits == 0 || bits >= INF_BITS) return 0;
    const int log2 = bits >= 0x00800000u ? int(bits >> 23) - 127 : (31 - __clz(int(bits))) - 149;
    return min(14 - log2, 126);
}

// v * 2^-e in two exact steps of at most 2^126 each (e reaches +-252): only a subnormal result rounds.
__device__ __forceinline__ float unscale(float v, int e) {
    const int h = e >> 1;
    return v * pow2(-h) * pow2(h - e);
}

// sum_k A[row][k] B[k][col] by fp32 FMAs in k order: an element whose row of A or column of B holds an inf or NaN.
__device__ __noinline__ float nonfinite_dot(const float* __restrict__ A, idx_t lda, const float* __restrict__ B,
                                            idx_t ldb, int K, int row, int col) {
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s = fmaf(A[row * lda + k], B[(idx_t)k * ldb + col], s);
    return s;
}

// tcec_amax's block b of GEMM z: blocks below ceil(M/8) take 8 rows of A (a warp a row) over 256 k; the rest 64
// columns of B over 256 k (thread t: column t % 64, every fourth row).  Each line's max goes out by atomicMax
// into amax_a[M] or amax_b[N], which the caller zeroed.
constexpr int AMAX_ROWS = 8, AMAX_COLS = 64, AMAX_K = 256, AMAX_THREADS = 256;

__device__ __forceinline__ unsigned abs_bits(float x) { return min(__float_as_uint(x) & 0x7FFFFFFFu, INF_BITS); }

__device__ __forceinline__ void line_maxima(const float* __restrict__ A, idx_t lda, const float* __restrict__ B,
                                            idx_t ldb, int M, int N, int K, unsigned* amax_a, unsigned* amax_b) {
    const int a_blocks = (M + AMAX_ROWS - 1) / AMAX_ROWS, k0 = blockIdx.y * AMAX_K;
    unsigned m = 0;
    if ((int)blockIdx.x < a_blocks) {
        const int row = blockIdx.x * AMAX_ROWS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
        if (row >= M) return;
#pragma unroll
        for (int i = 0; i < AMAX_K / 32; ++i) {
            const int k = k0 + lane + 32 * i;
            if (k < K) m = max(m, abs_bits(A[row * lda + k]));
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
        if (lane == 0 && m) atomicMax(amax_a + row, m);
    } else {
        const int col = (blockIdx.x - a_blocks) * AMAX_COLS + (threadIdx.x % AMAX_COLS);
        if (col >= N) return;
        constexpr int STEP = AMAX_THREADS / AMAX_COLS;
#pragma unroll 16   // independent loads, in flight together
        for (int i = 0; i < AMAX_K / STEP; ++i) {
            const int k = k0 + threadIdx.x / AMAX_COLS + STEP * i;
            if (k < K) m = max(m, abs_bits(B[(idx_t)k * ldb + col]));
        }
        if (m) atomicMax(amax_b + col, m);
    }
}

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

// ---- the wgmma path (fp16 variants) ---------------------------------------------------------------------
// Two kernels.  split_b splits B once, before the GEMM, into the exact shared-memory image of each k-tile's
// hi and lo tiles (wgmma's B operand), zero-padded past K and N.  Then the GEMM: Hopper's warpgroup MMA reads B
// straight from shared memory, so per k16 step a warp needs only its own A fragments in registers.  Two
// warpgroups; warpgroup w owns rows 64w .. 64w+63 of the 128x128 tile as m64n128 accumulators.  Every warp
// copies, with cp.async into a 4-slot ring, its 16 rows of fp32 A, which it splits in registers straight into
// wgmma's A fragments (seed 002's WMMAe idea: no hi/lo copy of A ever touches shared memory), and an eighth of
// the k-tile's split B, which both warpgroups' wgmmas read where it lands.  So a warp waits for its own copies
// alone, and one barrier per k-tile publishes the B tiles.  The split of k-tile t+1's A runs while the tensor
// cores work on tile t (A fragments are double-buffered in registers for that).
namespace wg {

constexpr int THREADS = 256;                                   // two warpgroups
constexpr int RING = 4;
// A rows padded to 40 floats: a half-warp's 8-byte fragment loads (4 rows x 4 lanes) hit banks 8g + 2t, all distinct
// (ncu counted 2^24 bank conflicts per 4096^3 GEMM with 36, whose rows are only 4 banks apart).
constexpr int A_PITCH = BK + 8;
constexpr int B_HALVES = BN * BK;                              // one hi or lo B tile
constexpr int WS_TILE = 2 * B_HALVES;                          // halves: one k-tile's B hi, then its B lo
constexpr int A_BYTES = BM * A_PITCH * 4;
constexpr int SLOT_BYTES = A_BYTES + WS_TILE * 2;              // fp32 A, then B hi and B lo
constexpr int SMEM_BYTES = RING * SLOT_BYTES;

// B in wgmma's no-swizzle K-major layout: 8x8 "core matrices" of 8 n-rows by 8 k-values (16 bytes), each
// 128 contiguous bytes; the 16 core matrices of one k-octet lie side by side along n, then the next octet.
// So neighbours along N are 128 bytes apart (the descriptor's stride offset) and along K 2048 (its leading
// offset) (PTX ISA, "Matrix Descriptor Format" and "Shared Memory Matrix Layout").
constexpr int CORE_BYTES = 128, OCTET_BYTES = (BN / 8) * CORE_BYTES;

__device__ __forceinline__ int b_offset(int n, int k_octet) {    // in halves
    return (k_octet * (BN / 8) + (n >> 3)) * (CORE_BYTES / 2) + (n & 7) * 8;
}

__device__ __forceinline__ uint64_t descriptor(const __half* tile) {
    return wgmma::desc(wgmma::desc_lo(async_copy::smem_u32(tile), OCTET_BYTES),
                       wgmma::desc_hi(CORE_BYTES, wgmma::NO_SWIZZLE));
}

using wgmma::commit, wgmma::fence, wgmma::hold, wgmma::mma, wgmma::wait;   // wgmma.cuh

__device__ __forceinline__ unsigned half2_bits(__half2 h) { return *reinterpret_cast<const unsigned*>(&h); }

// Two neighbouring fp32 values -> their hi and lo halves, packed as wgmma's 32-bit fragment registers.
template <int V>
__device__ __forceinline__ void split2(float2 x, unsigned& hi, unsigned& lo) {
    const __half2 h = __floats2half2_rn(x.x, x.y);
    hi = half2_bits(h);
    const float2 f = __half22float2(h);
    const float s = V == TCEC ? LO_SCALE : 1.0f;
    lo = half2_bits(__floats2half2_rn((x.x - f.x) * s, (x.y - f.y) * s));
}

// split_b's block (kt, nb) of GEMM z writes k-tile kt of B's 128-column block nb as that k-tile's shared-memory
// image: hi at b_offset, lo B_HALVES after it, zeros past K and N.  Thread n splits column n, eight k at a
// time: a warp's reads are 128 consecutive bytes of a row, its 16-byte writes one contiguous run.
template <int V>
__device__ __forceinline__ void split_b(const float* __restrict__ B, idx_t ldb, int K, int N, __half* __restrict__ ws,
                                        const unsigned* __restrict__ amax_b) {
    const int kt = blockIdx.x, nb = blockIdx.y, n = threadIdx.x, col = nb * BN + n;
    __half* tile = ws + ((idx_t)nb * gridDim.x + kt) * WS_TILE;
    const float scale = col < N ? pow2(scale_exponent(amax_b[col])) : 1.0f;
#pragma unroll
    for (int octet = 0; octet < BK / 8; ++octet) {
        float v[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int k = kt * BK + 8 * octet + i;
            v[i] = k < K && col < N ? B[(idx_t)k * ldb + col] * scale : 0.0f;
        }
        uint4 h, l;
        split2<V>(make_float2(v[0], v[1]), h.x, l.x);
        split2<V>(make_float2(v[2], v[3]), h.y, l.y);
        split2<V>(make_float2(v[4], v[5]), h.z, l.z);
        split2<V>(make_float2(v[6], v[7]), h.w, l.w);
        *reinterpret_cast<uint4*>(tile + b_offset(n, octet)) = h;
        if (V != NOCORR) *reinterpret_cast<uint4*>(tile + B_HALVES + b_offset(n, octet)) = l;
    }
}

struct Operands {
    const float* A; idx_t lda; int M, K, m0, k_tiles;
    const __half* ws;   // this block's column of split B tiles, k-tile after k-tile
    int scales;         // ea of this lane's two A rows (16w + g, 16w + g + 8), 16 bits each: one register
};

// The bytes of a split B tile the GEMM copies: hi and lo, or (tcec_nocorr, which split_b gives no lo) hi only.
// Warp w copies the w-th eighth of them, 512 bytes per lane.
template <int V>
constexpr int B_COPY_BYTES = (V == NOCORR ? 1 : 2) * B_HALVES * 2;
template <int V>
constexpr int B_COPIES = B_COPY_BYTES<V> / 8 / 512;   // 16-byte copies per lane

// Warp w's copies of one k-tile: 4 chunks of 4 floats of A per lane (rows 16w .. 16w+15), and its eighth of
// the split B tile, which is always whole.
template <int V, bool VEC>
__device__ __forceinline__ void copy_tile(unsigned char* slot, const Operands& o, int warp, int lane, int kt) {
    float* a = reinterpret_cast<float*>(slot);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int c = lane + 32 * i;
        const int row = 16 * warp + (c >> 3), ka = (c & 7) * 4;
        copy4<VEC>(a + row * A_PITCH + ka, o.A, o.lda, o.m0 + row, kt * BK + ka, o.M, o.K);
    }
    const unsigned char* b = reinterpret_cast<const unsigned char*>(o.ws + (idx_t)kt * WS_TILE);
#pragma unroll
    for (int i = 0; i < B_COPIES<V>; ++i) {
        const int off = warp * (B_COPY_BYTES<V> / 8) + i * 512 + lane * 16;
        async_copy::cp16(reinterpret_cast<float*>(slot + A_BYTES + off), reinterpret_cast<const float*>(b + off), 16);
    }
}

// copy_tile for a k-tile that lies wholly inside A (most of them): no bounds, and the source addresses are
// fixed offsets from two pointers that advance by one k-tile per step, where copy_tile spends a 64-bit
// multiply and a clamp on each.  Lane chunks as in copy_tile: A chunk i is row 16w + lane/8 + 4i.
struct FastCopier {
    const float* a;       // this lane's first A chunk in the current k-tile
    const __half* b;      // this lane's first split-B chunk in the current k-tile
    idx_t a4;             // 4 rows of A
    int a_dst, b_dst;     // byte offsets of the first chunks within a ring slot

    template <int V>
    __device__ __forceinline__ FastCopier(const Operands& o, int warp, int lane, Variant_<V>) {
        const int a_row = 16 * warp + (lane >> 3), b_off = warp * (B_COPY_BYTES<V> / 8) + lane * 16;
        a = o.A + (o.m0 + a_row) * o.lda + (lane & 7) * 4;
        b = o.ws + b_off / 2;
        a4 = 4 * o.lda;
        a_dst = (a_row * A_PITCH + (lane & 7) * 4) * 4;
        b_dst = A_BYTES + b_off;
    }
    // Tile t into `slot`; the pointers must already point at tile t (advance() once per k-tile).
    template <int V>
    __device__ __forceinline__ void copy(unsigned char* slot) const {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            async_copy::cp16(reinterpret_cast<float*>(slot + a_dst + i * 4 * A_PITCH * 4), a + i * a4, 16);
#pragma unroll
        for (int i = 0; i < B_COPIES<V>; ++i)
            async_copy::cp16(reinterpret_cast<float*>(slot + b_dst + i * 512),
                             reinterpret_cast<const float*>(b + i * 256), 16);
    }
    __device__ __forceinline__ void advance() { a += BK, b += WS_TILE; }
};

// Warp w's split of a landed slot: its A rows into fragments ah/al (rows g, g+8 of its 16; k pairs 2t, 2t+8
// of each k16 step).
__device__ __forceinline__ float2 scaled(const float* p, float s) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    return make_float2(x.x * s, x.y * s);
}

template <int V>
__device__ __forceinline__ void split_tile(const unsigned char* slot, int warp, int lane, int scales,
                                           unsigned (&ah)[2][4], unsigned (&al)[2][4]) {
    const float scale[2] = {pow2((scales << 16) >> 16), pow2(scales >> 16)};
    const float* r0 = reinterpret_cast<const float*>(slot) + (16 * warp + (lane >> 2)) * A_PITCH + 2 * (lane & 3);
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        const float* p = r0 + 16 * k;
        split2<V>(scaled(p, scale[0]), ah[k][0], al[k][0]);
        split2<V>(scaled(p + 8 * A_PITCH, scale[1]), ah[k][1], al[k][1]);
        split2<V>(scaled(p + 8, scale[0]), ah[k][2], al[k][2]);
        split2<V>(scaled(p + 8 * A_PITCH + 8, scale[1]), ah[k][3], al[k][3]);
    }
    // The slot's B arrived by cp.async, which wgmma (the async proxy) reads only after this fence and the
    // barrier that follows.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// hi*hi collects in `chunk` over CHUNK k-tiles (CHUNK * 32 products) before it leaves the tensor core.  The
// tensor cores' accumulation truncates, so on all-positive sums its errors point one way and grow with the
// chunk: at CHUNK 4 the relerr on uniform [0, 1) inputs was 4.7e-7 at every K (2x SGEMM's), a bias.  So the
// promotion runs every k-tile.  -DTCEC_CHUNK=N builds another interval (the tuning variant chunk4).
#ifndef TCEC_CHUNK
#define TCEC_CHUNK 1
#endif
constexpr int CHUNK = TCEC_CHUNK;
static_assert(CHUNK > 0 && (CHUNK & (CHUNK - 1)) == 0, "chunks are counted with a mask");

// One k-tile t, its A fragments in set P (so that set 1 - P can take tile t+1's while the wgmmas run).
template <int V, bool VEC, int P>
__device__ __forceinline__ void k_step(int t, const Operands& o, bool interior, FastCopier& fast, unsigned char* ring,
                                       int warp, int lane, float (&acc)[64], float (&chunk)[64], float (&corr)[64],
                                       unsigned (&ah)[2][2][4], unsigned (&al)[2][2][4]) {
    static_assert((RING & (RING - 1)) == 0, "slots are picked with a mask");
    const __half* b_hi = reinterpret_cast<const __half*>(ring + (t & (RING - 1)) * SLOT_BYTES + A_BYTES);
    const __half* b_lo = b_hi + B_HALVES;
    fence();
#pragma unroll
    for (int k = 0; k < 2; ++k) {   // a k16 step spans two k-octets: 2 * OCTET_BYTES bytes = OCTET_BYTES halves
        const uint64_t bh = descriptor(b_hi + k * OCTET_BYTES), bl = descriptor(b_lo + k * OCTET_BYTES);
        if constexpr (V == TCEC) {
            mma(chunk, ah[P][k], bh, (t & (CHUNK - 1)) + k);   // a fresh chunk at the first product of CHUNK tiles
            mma(corr, al[P][k], bh, 1);
            mma(corr, ah[P][k], bl, 1);
        } else {
            mma(acc, ah[P][k], bh, 1);
            if constexpr (V == MARKIDIS) {
                mma(acc, al[P][k], bh, 1);
                mma(acc, ah[P][k], bl, 1);
            }
        }
    }
    commit();
    // The copies are issued after the wgmmas, so that the tensor cores start as early as possible.  They go
    // into the slot of tile t-1, whose wgmmas every warpgroup finished before the previous barrier.
    const int ahead = t + RING - 1;
    if (ahead < o.k_tiles) {
        unsigned char* slot = ring + (ahead & (RING - 1)) * SLOT_BYTES;
        if (VEC && interior && (ahead + 1) * BK <= o.K) fast.template copy<V>(slot);
        else copy_tile<V, VEC>(slot, o, warp, lane, ahead);
        fast.advance();
    }
    async_copy::commit();
    if (t + 1 < o.k_tiles) {
        async_copy::wait_group<RING - 2>();   // this warp's copies of tile t+1 ...
        __syncwarp();                          // ... are visible to all its lanes
        split_tile<V>(ring + ((t + 1) & (RING - 1)) * SLOT_BYTES, warp, lane, o.scales, ah[1 - P], al[1 - P]);
    }
    wait<0>();
    hold(acc), hold(chunk), hold(corr), hold(ah[P][0]), hold(ah[P][1]), hold(al[P][0]), hold(al[P][1]);
    if constexpr (V == TCEC) {
        if ((t & (CHUNK - 1)) == CHUNK - 1 || t + 1 == o.k_tiles) {
#pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] += chunk[i];   // round-to-nearest, outside the tensor core
        }
    }
    __syncthreads();   // tile t+1's B is visible to every warp, and no wgmma reads tile t's slot any more
}

}  // namespace wg

// blockIdx.z, read anew: what the epilogue derives from it is then computed there, not kept in registers
// through the k-loop (where the accumulators leave none to spare).
__device__ __forceinline__ idx_t batch_index() {
    unsigned z;
    asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(z));
    return z;
}

// The epilogue's inputs, as the kernel's parameters (constant memory, no registers): GEMM z's start in each.
struct Late {
    const float* B; idx_t ldb, batch_b;
    const unsigned* amax_a;   // [batch][M]
    const unsigned* amax_b;   // [batch][N]
};

template <int V, bool VEC>
__device__ __forceinline__ void tcec_wgmma(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                                           const __half* __restrict__ ws, const Late& late, float beta,
                                           const float* __restrict__ C, idx_t ldc, float* __restrict__ D, idx_t ldd) {
    using namespace wg;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    unsigned char* ring = smem_raw;
    int m0, n0;
    block_origin(M, m0, n0);
    const int k_tiles = (K + BK - 1) / BK;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int row0 = m0 + 16 * warp + (lane >> 2);      // this lane's A and D rows: row0 and row0 + 8
    const auto row_max = [&](int h) {   // read again at the end
        return row0 + 8 * h < M ? late.amax_a[batch_index() * M + row0 + 8 * h] : 0u;
    };
    const Operands o{A, lda, M, K, m0, k_tiles, ws + (idx_t)(n0 / BN) * k_tiles * WS_TILE,
                     (scale_exponent(row_max(0)) & 0xFFFF) | (scale_exponent(row_max(1)) << 16)};

    float acc[64], chunk[64], corr[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = chunk[i] = corr[i] = 0.f;
    unsigned ah[2][2][4], al[2][2][4];

    const bool interior = m0 + BM <= M;   // no bound checks but K's
    FastCopier fast(o, warp, lane, Variant_<V>());
#pragma unroll
    for (int i = 0; i < RING - 1; ++i) {
        if (i < o.k_tiles) copy_tile<V, VEC>(ring + i * SLOT_BYTES, o, warp, lane, i);
        async_copy::commit();
        fast.advance();
    }
    async_copy::wait_group<RING - 2>();
    __syncwarp();
    split_tile<V>(ring, warp, lane, o.scales, ah[0], al[0]);
    __syncthreads();
    for (int t = 0; t < o.k_tiles; t += 2) {
        k_step<V, VEC, 0>(t, o, interior, fast, ring, warp, lane, acc, chunk, corr, ah, al);
        if (t + 1 < o.k_tiles) k_step<V, VEC, 1>(t + 1, o, interior, fast, ring, warp, lane, acc, chunk, corr, ah, al);
    }
    async_copy::wait_all();

    const int tq = lane & 3;
    const idx_t z = batch_index();
    const float* __restrict__ B = late.B + z * late.batch_b;
    const unsigned* __restrict__ amax_b = late.amax_b + z * N;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = row0 + 8 * h;
        if (row >= M) continue;
        const unsigned rm = row_max(h);
        const int ea = scale_exponent(rm);
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int col = n0 + 8 * j + 2 * tq;
            const unsigned cm0 = col < N ? amax_b[col] : 0u, cm1 = col + 1 < N ? amax_b[col + 1] : 0u;
            float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
            if constexpr (V == TCEC) {
                v0 += corr[4 * j + 2 * h] * (1.0f / LO_SCALE);
                v1 += corr[4 * j + 2 * h + 1] * (1.0f / LO_SCALE);
            }
            store2<VEC>(unscale(v0, ea + scale_exponent(cm0)), unscale(v1, ea + scale_exponent(cm1)), alpha, beta, C,
                        ldc, D, ldd, row, col, N);
            // A row or column with an inf or a NaN: its elements again, as SGEMM computes them.
            const bool bad_row = rm >= INF_BITS;
            if (col < N && (bad_row || cm0 >= INF_BITS))
                D[row * ldd + col] =
                    gemm_epilogue(nonfinite_dot(A, lda, B, late.ldb, K, row, col), alpha, beta, C, ldc, row, col);
            if (col + 1 < N && (bad_row || cm1 >= INF_BITS))
                D[row * ldd + col + 1] =
                    gemm_epilogue(nonfinite_dot(A, lda, B, late.ldb, K, row, col + 1), alpha, beta, C, ldc, row,
                                  col + 1);
        }
    }
}

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

// fp16 variants: first NAME_split_b (grid ceil(K/32) x ceil(N/128) x batch, 128 threads: BK k-rows x BN
// columns a block, no dynamic shared memory) writes the split B into a workspace of NAME_split_b_ws_tile
// (wg::WS_TILE) halves per k-tile and column block, then NAME (256 threads, two warpgroups, wg::SMEM_BYTES of
// dynamic shared memory) reads it (its last argument; B itself is not read again).
#define TCEC_WGMMA_ENTRIES(NAME, V)                                                                          \
    extern "C" __global__ void __launch_bounds__(BN) NAME##_split_b(const float* __restrict__ B, idx_t ldb,   \
                                                                   int K, int N, idx_t batch_b,              \
                                                                   __half* __restrict__ ws,                  \
                                                                   const unsigned* __restrict__ amax_b) {    \
        const idx_t z = blockIdx.z, per_gemm = (idx_t)gridDim.x * gridDim.y * wg::WS_TILE;                  \
        wg::split_b<V>(B + z * batch_b, ldb, K, N, ws + z * per_gemm, amax_b + z * N);                       \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME##_split_b, BK, BN, BN, 0)                                                         \
    STUDY_EXPORT(NAME##_split_b_ws_tile, wg::WS_TILE)                                                        \
    TCEC_WGMMA_GEMM(NAME, V, true)                                                                           \
    TCEC_WGMMA_GEMM(NAME##_unaligned, V, false)
#define TCEC_WGMMA_GEMM(NAME, V, VEC)                                                                        \
    extern "C" __global__ void __launch_bounds__(wg::THREADS, 1) NAME TCEC_SIGNATURE,                        \
                                                                 const __half* __restrict__ ws,              \
                                                                 const unsigned* __restrict__ amax_a,        \
                                                                 const unsigned* __restrict__ amax_b) {      \
        const idx_t z = blockIdx.z, per_gemm = (idx_t)((N + BN - 1) / BN) * ((K + BK - 1) / BK) * wg::WS_TILE; \
        tcec_wgmma<V, VEC>(M, N, K, alpha, A + z * batch_a, lda, ws + z * per_gemm,                           \
                           Late{B, ldb, batch_b, amax_a, amax_b}  , beta, C + z * batch_c, ldc,            \
                           D + z * batch_d, ldd);                                                            \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, BM, BN, wg::THREADS, wg::SMEM_BYTES)
// tcec_amax (grid ceil(M/8) + ceil(N/64) x ceil(K/256) x batch, 256 threads) writes the line maxima every
// fp16 variant's split_b and GEMM read: amax_a[batch][M] and amax_b[batch][N], zeroed by the caller.
extern "C" __global__ void __launch_bounds__(AMAX_THREADS) tcec_amax(const float* __restrict__ A, idx_t lda,
                                                                   const float* __restrict__ B, idx_t ldb, int M,
                                                                   int N, int K, idx_t batch_a, idx_t batch_b,
                                                                   unsigned* amax_a, unsigned* amax_b) {
    const idx_t z = blockIdx.z;
    line_maxima(A + z * batch_a, lda, B + z * batch_b, ldb, M, N, K, amax_a + z * M, amax_b + z * N);
}
STUDY_ENTRY_FACTS(tcec_amax, AMAX_ROWS, AMAX_COLS, AMAX_THREADS, 0)

TCEC_WGMMA_ENTRIES(tcec_fp16, TCEC)
TCEC_WGMMA_ENTRIES(tcec_markidis, MARKIDIS)
TCEC_WGMMA_ENTRIES(tcec_nocorr, NOCORR)

// One block per 128x128 tile, grid (ceil(N/128), ceil(M/128), batch), 256 threads, SMEM_BYTES of dynamic shared
// memory.  grid.z walks a batch of independent GEMMs whose operands lie batch_* elements apart (0 for one GEMM).
#define BF16X_ENTRY(NAME, PRODUCTS, VEC)                                                                     \
    extern "C" __global__ void __launch_bounds__(bf16x::THREADS, 1)                                                 \
        NAME(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,                       \
             const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc,     \
             float* __restrict__ D, idx_t ldd, idx_t batch_a, idx_t batch_b, idx_t batch_c, idx_t batch_d) { \
        const idx_t z = blockIdx.z;                                                                          \
        bf16x::gemm<PRODUCTS, VEC>(M, N, K, alpha, A + z * batch_a, lda, B + z * batch_b, ldb, beta, C + z * batch_c, \
                            ldc, D + z * batch_d, ldd);                                                      \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, BM, BN, bf16x::THREADS, bf16x::SMEM_BYTES)
BF16X_ENTRY(bf16x6, 6, true)
BF16X_ENTRY(bf16x6_unaligned, 6, false)
BF16X_ENTRY(bf16x9, 9, true)
BF16X_ENTRY(bf16x9_unaligned, 9, false)

#ifdef TCEC_RUNG14
// TCEC on rung 14's machinery (the probe's variant cuda:15_tcec/rung14, docs/15_tcec.md): both operands split
// by passes into exactly scaled hi/lo fp16 matrices (A K-major, B N-major: what rung 14's TMA reads), then a
// persistent, warp-specialized GEMM of SS wgmmas: a producer thread copies A's hi and lo boxes (128x64) and B's
// (2 of 64x64 each) into a 3-slot ring; each of two consumer warpgroups (64x128 of a 128x128 tile) runs per
// k-tile 4 hi*hi wgmmas into a fresh accumulator, promoted into fp32 registers with round-to-nearest adds once
// they finish, and 8 correction wgmmas into a second accumulator that runs over all of K.  The line maxima and
// exponents are the stage's (tcec_amax's bits: INF_BITS for a line with an inf or a NaN, whose outputs the
// epilogue recomputes in fp32 by nonfinite_dot).
#include "tma.cuh"

namespace r14 {

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 3, GROUP_M = 8, THREADS = 384;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, SLOT = 2 * A_BYTES + 2 * B_BYTES;   // 64 KiB a slot
constexpr int SMEM_BYTES = STAGES * SLOT + 1024 + 2 * STAGES * 8;
constexpr int PASS_THREADS = 256, COL_K = 32;   // the passes' blocks; col_amax's k-rows per block
constexpr uint32_t DESC_HI = wgmma::desc_hi(1024, wgmma::SWIZZLE_128B);

// x * 2^e (exact) split into hi = fp16(x 2^e) and lo = fp16((x 2^e - hi) 2^11).
__device__ __forceinline__ void split(float v, int e, __half& hi, __half& lo) {
    const float s = v * pow2(e);
    hi = __float2half_rn(s);
    lo = __float2half_rn((s - __half2float(hi)) * LO_SCALE);
}

// A's row blockIdx.x: its max |x| (as tcec_amax's bits, into amax_a[row]), then hi and lo (Kp halves a row,
// zeros past K).  VEC: float4 loads.
template <bool VEC>
__device__ void split_a(const float* __restrict__ A, idx_t lda, int K, int Kp, __half* __restrict__ hi,
                        __half* __restrict__ lo, unsigned* __restrict__ amax_a) {
    const idx_t row = blockIdx.x;
    const float* a = A + row * lda;
    unsigned m = 0;
    if (VEC) {
        for (int k = 4 * threadIdx.x; k < K; k += 4 * PASS_THREADS) {
            const float4 v = *reinterpret_cast<const float4*>(a + k);
            m = max(max(m, max(abs_bits(v.x), abs_bits(v.y))), max(abs_bits(v.z), abs_bits(v.w)));
        }
    } else {
        for (int k = threadIdx.x; k < K; k += PASS_THREADS) m = max(m, abs_bits(a[k]));
    }
    __shared__ unsigned red[PASS_THREADS / 32];
    m = __reduce_max_sync(~0u, m);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int i = 1; i < PASS_THREADS / 32; ++i) m = max(m, red[i]);
    const int e = scale_exponent(m);
    if (threadIdx.x == 0) amax_a[row] = m;
    if (VEC) {
        for (int k = 4 * threadIdx.x; k < Kp; k += 4 * PASS_THREADS) {
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (k < K) v = *reinterpret_cast<const float4*>(a + k);
            __half h[4], l[4];
            split(v.x, e, h[0], l[0]);
            split(v.y, e, h[1], l[1]);
            split(v.z, e, h[2], l[2]);
            split(v.w, e, h[3], l[3]);
            *reinterpret_cast<uint2*>(hi + row * Kp + k) = *reinterpret_cast<uint2*>(h);
            *reinterpret_cast<uint2*>(lo + row * Kp + k) = *reinterpret_cast<uint2*>(l);
        }
    } else {
        for (int k = threadIdx.x; k < Kp; k += PASS_THREADS) {
            __half h = __float2half(0.f), l = __float2half(0.f);
            if (k < K) split(a[k], e, h, l);
            hi[row * Kp + k] = h;
            lo[row * Kp + k] = l;
        }
    }
}

// Columns of B: each thread's max |x| over COL_K rows, as tcec_amax's bits, into bits[n] by atomicMax.  VEC: 4
// columns a thread (N % 4 == 0, rows 16-byte aligned).
template <bool VEC>
__device__ void col_amax(const float* __restrict__ B, idx_t ldb, int K, int N, unsigned* __restrict__ bits) {
    const int n = (blockIdx.x * PASS_THREADS + threadIdx.x) * (VEC ? 4 : 1), k0 = blockIdx.y * COL_K;
    if (n >= N) return;
    unsigned m[4] = {};
    for (int k = k0; k < min(K, k0 + COL_K); ++k) {
        if (VEC) {
            const float4 v = *reinterpret_cast<const float4*>(B + k * ldb + n);
            m[0] = max(m[0], abs_bits(v.x)), m[1] = max(m[1], abs_bits(v.y));
            m[2] = max(m[2], abs_bits(v.z)), m[3] = max(m[3], abs_bits(v.w));
        } else {
            m[0] = max(m[0], abs_bits(B[k * ldb + n]));
        }
    }
#pragma unroll
    for (int i = 0; i < (VEC ? 4 : 1); ++i) atomicMax(bits + n + i, m[i]);
}

// B's row blockIdx.y, split with its columns' exponents (Np halves a row, zeros past N).  VEC as col_amax.
template <bool VEC>
__device__ void split_b(const float* __restrict__ B, idx_t ldb, int K, int N, int Np, const unsigned* __restrict__ bits,
                        __half* __restrict__ hi, __half* __restrict__ lo) {
    const int n = (blockIdx.x * PASS_THREADS + threadIdx.x) * (VEC ? 4 : 1);
    const idx_t k = blockIdx.y;
    if (n >= Np) return;
    __half h[4] = {}, l[4] = {};
    constexpr int W = VEC ? 4 : 1;
    if (n < N) {   // VEC: N % 4 == 0, so the four columns lie all inside N or all past it
        float x[4];
        if (VEC) {
            const float4 v = *reinterpret_cast<const float4*>(B + k * ldb + n);
            x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
        } else {
            x[0] = B[k * ldb + n];
        }
#pragma unroll
        for (int i = 0; i < W; ++i) {
            split(x[i], scale_exponent(bits[n + i]), h[i], l[i]);
        }
    }
    if (VEC) {
        *reinterpret_cast<uint2*>(hi + k * Np + n) = *reinterpret_cast<uint2*>(h);
        *reinterpret_cast<uint2*>(lo + k * Np + n) = *reinterpret_cast<uint2*>(l);
    } else {
        hi[k * Np + n] = h[0];
        lo[k * Np + n] = l[0];
    }
}

// D = alpha (hi*hi + (lo*hi + hi*lo) / 2^11) 2^-(ea_i + eb_j) + beta C on tiles of 128x128, one block per SM
// walking them in GROUP_M order.
__device__ void gemm(const CUtensorMap& map_ahi, const CUtensorMap& map_alo, const CUtensorMap& map_bhi,
                     const CUtensorMap& map_blo, int M, int N, int K, const float* __restrict__ A, idx_t lda,
                     const float* __restrict__ B, idx_t ldb, const unsigned* __restrict__ amax_a,
                     const unsigned* __restrict__ amax_b, float alpha, float beta, const float* __restrict__ C,
                     idx_t ldc, float* __restrict__ D, idx_t ldd) {
    extern __shared__ __align__(128) unsigned char smem[];
    const uint32_t raw = async_copy::smem_u32(smem), ring = (raw + 1023) & ~1023u;
    uint64_t* full = reinterpret_cast<uint64_t*>(smem + (ring - raw) + STAGES * SLOT);
    uint64_t* empty = full + STAGES;
    const int tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            async_copy::mbar_init(&full[s], 1);
            async_copy::mbar_init(&empty[s], 8);   // a lane of each consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const long long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int k_tiles = (K - 1) / BK + 1;
    if (tid < 128) {   // the producer warpgroup: thread 0 copies
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            uint32_t s = 0, ph = 0;
            for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
                int tm, tn;
                tile_of<GROUP_M>(t, tiles_m, tiles_n, tm, tn);
                const int m0 = tm * BM, n0 = tn * BN;
                for (int kt = 0; kt < k_tiles; ++kt) {
                    async_copy::mbar_wait(&empty[s], ph ^ 1);
                    const uint32_t slot = ring + s * SLOT;
                    tma::expect_tx(&full[s], SLOT);
                    tma::load_2d(slot, map_ahi, kt * BK, m0, &full[s]);
                    tma::load_2d(slot + A_BYTES, map_alo, kt * BK, m0, &full[s]);
                    for (int b = 0; b < 2; ++b) {
                        tma::load_2d(slot + 2 * A_BYTES + b * 8192, map_bhi, n0 + 64 * b, kt * BK, &full[s]);
                        tma::load_2d(slot + 2 * A_BYTES + B_BYTES + b * 8192, map_blo, n0 + 64 * b, kt * BK, &full[s]);
                    }
                    if (++s == STAGES) s = 0, ph ^= 1;
                }
            }
        }
        __syncwarp();
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = (tid - 128) >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
    const uint32_t dahi = wgmma::desc_lo(ring + c * 64 * 128, 16), dalo = dahi + (A_BYTES >> 4);
    const uint32_t dbhi = wgmma::desc_lo(ring + 2 * A_BYTES, 8192), dblo = dbhi + (B_BYTES >> 4);
    uint32_t s = 0, ph = 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        tile_of<GROUP_M>(t, tiles_m, tiles_n, tm, tn);
        const int m0 = tm * BM, n0 = tn * BN;
        float acc[64], hh[64], cc[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        uint32_t prev = 0;
        for (int kt = 0; kt < k_tiles; ++kt) {
            async_copy::mbar_wait(&full[s], ph);
            const uint32_t off = s * (SLOT >> 4);
            wgmma::fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wgmma::mma<__half, 128>(hh, wgmma::desc(dahi + off + 2 * kk, DESC_HI),
                                        wgmma::desc(dbhi + off + 128 * kk, DESC_HI), kk);
            wgmma::commit();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                wgmma::mma<__half, 128>(cc, wgmma::desc(dalo + off + 2 * kk, DESC_HI),
                                        wgmma::desc(dbhi + off + 128 * kk, DESC_HI), kt | kk);
                wgmma::mma<__half, 128>(cc, wgmma::desc(dahi + off + 2 * kk, DESC_HI),
                                        wgmma::desc(dblo + off + 128 * kk, DESC_HI), 1);
            }
            wgmma::commit();
            wgmma::wait<1>();   // hi*hi done, and the k-tile before's corrections: promote, release that slot
            wgmma::hold(hh);
            if (kt > 0 && lane == 0) async_copy::mbar_arrive(&empty[prev]);
#pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] = __fadd_rn(acc[i], hh[i]);
            prev = s;
            if (++s == STAGES) s = 0, ph ^= 1;
        }
        wgmma::wait<0>();
        wgmma::hold(cc);
        if (lane == 0) async_copy::mbar_arrive(&empty[prev]);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const idx_t row = m0 + 64 * c + 16 * warp + (lane >> 2) + 8 * h;
            if (row >= M) continue;
            const unsigned rm = amax_a[row];
            const int er = scale_exponent(rm);
#pragma unroll
            for (int j = 0; j < 16; ++j) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = n0 + 8 * j + 2 * (lane & 3) + e, i = 4 * j + 2 * h + e;
                    if (col >= N) continue;
                    const unsigned cm = amax_b[col];
                    // A row or column with an inf or a NaN: its elements again, as SGEMM computes them.
                    const float v = rm >= INF_BITS || cm >= INF_BITS
                        ? nonfinite_dot(A, lda, B, ldb, K, row, col)
                        : unscale(acc[i] + cc[i] * (1.0f / LO_SCALE), er + scale_exponent(cm));
                    D[row * ldd + col] = gemm_epilogue(v, alpha, beta, C, ldc, row, col);
                }
            }
        }
    }
}

}  // namespace r14

#define R14_PASS_ENTRIES(VEC, SUFFIX)                                                                        \
    extern "C" __global__ void __launch_bounds__(r14::PASS_THREADS) tcec14_split_a##SUFFIX(                  \
        const float* __restrict__ A, idx_t lda, int K, int Kp, __half* hi, __half* lo, unsigned* amax_a) {   \
        r14::split_a<VEC>(A, lda, K, Kp, hi, lo, amax_a);                                                    \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(tcec14_split_a##SUFFIX, 1, 0, r14::PASS_THREADS, 0)                                    \
    extern "C" __global__ void __launch_bounds__(r14::PASS_THREADS) tcec14_col_amax##SUFFIX(                 \
        const float* __restrict__ B, idx_t ldb, int K, int N, unsigned* bits) {                              \
        r14::col_amax<VEC>(B, ldb, K, N, bits);                                                              \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(tcec14_col_amax##SUFFIX, r14::COL_K, r14::PASS_THREADS * (VEC ? 4 : 1), r14::PASS_THREADS, 0) \
    extern "C" __global__ void __launch_bounds__(r14::PASS_THREADS) tcec14_split_b##SUFFIX(                  \
        const float* __restrict__ B, idx_t ldb, int K, int N, int Np, const unsigned* bits, __half* hi,      \
        __half* lo) {                                                                                        \
        r14::split_b<VEC>(B, ldb, K, N, Np, bits, hi, lo);                                                   \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(tcec14_split_b##SUFFIX, 1, r14::PASS_THREADS * (VEC ? 4 : 1), r14::PASS_THREADS, 0)
R14_PASS_ENTRIES(true, _vec)
R14_PASS_ENTRIES(false, )

extern "C" __global__ void __launch_bounds__(r14::THREADS, 1) tcec14_gemm(
    const __grid_constant__ CUtensorMap map_ahi, const __grid_constant__ CUtensorMap map_alo,
    const __grid_constant__ CUtensorMap map_bhi, const __grid_constant__ CUtensorMap map_blo, int M, int N, int K,
    const float* __restrict__ A, idx_t lda, const float* __restrict__ B, idx_t ldb, const unsigned* amax_a,
    const unsigned* amax_b, float alpha, float beta, const float* __restrict__ C, idx_t ldc, float* __restrict__ D,
    idx_t ldd) {
    r14::gemm(map_ahi, map_alo, map_bhi, map_blo, M, N, K, A, lda, B, ldb, amax_a, amax_b, alpha, beta, C, ldc, D,
              ldd);
}
STUDY_ENTRY_FACTS(tcec14_gemm, r14::BM, r14::BN, r14::THREADS, r14::SMEM_BYTES)
#endif
