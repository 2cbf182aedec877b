// Stage 14 - TCEC: fp32 GEMM on fp16 tensor cores with error correction.
//
// Technique:   every fp32 operand x is split, on its way into shared memory, into hi = fp16(x) and
//              lo = fp16((x - hi) * 2^11).  A warp then rebuilds the fp32 product from three fp16
//              tensor-core products (mma.sync m16n8k16, fragments loaded with ldmatrix):
//                  A B  ~  hiA hiB + (loA hiB + hiA loB) / 2^11          (loA loB, ~2^-22 of it, dropped)
//              hiA hiB is issued with a zero accumulator every k16 step and added to fp32 registers with
//              ordinary round-to-nearest FADDs; the two correction products, 2^11 smaller, share their own
//              tensor-core accumulator.  8 warps own a 128x128 tile of D, each warp 64x32 (4x4 mma tiles);
//              K advances 32 at a time through two shared-memory buffers, the next tile's fp32 loads in
//              flight while the current one is multiplied.
// Reproduces:  seed 002 (Ootomo & Yokota 2022): the split and scaling of eqs. 4-5, the correction of eq. 6,
//              and its central finding, that accumulating inside the tensor cores (which round toward zero)
//              is what kept Markidis et al.'s method short of fp32 accuracy.  Its variants are one template:
//                tcec_fp16      the method;
//                tcec_markidis  lo unscaled, every product accumulated inside one tensor-core accumulator;
//                tcec_nocorr    hi only: an fp16 GEMM of rounded inputs, the floor;
//                tcec_tf32      3xTF32 (hi = tf32(x), lo = tf32(x - hi), mma.sync m16n8k8.tf32): fp32's
//                               exponent range, so no scaling and no fp16 range limit.
// Changed:     the SIMT ladder (01-09) ends at the FP32 FMA pipe, 64 TFLOP/s.  Here the multiplies move to
//              the tensor cores, whose fp16 rate is ~10x that (mma.sync issue peak ~643 TFLOP/s on Hopper),
//              at the price of 3 products per product and a split of every operand.
// Why faster:  3 fp16 products at ~643 TFLOP/s bound this at ~214 TFLOP/s of fp32 work, over 3x SGEMM's
//              ~51.  Per warp and k16 step the k-loop issues 48 mma, 64 FADD (the promotion) and 12
//              ldmatrix: fewer issue slots than the tensor pipe needs for the 48 mma, so the tensor pipe,
//              not the promotion, should be the bound.  The split costs ~4 instructions per element, once
//              per block (not once per warp that reads it, as a split at fragment-load time would).
//
// Ragged edges: loads outside M, N or K read zeros (no out-of-range address is formed); stores are masked.
// Alignment:   tcec_* use 16-byte loads and 8-byte stores, so the launcher takes them only for 16-byte aligned
//              operand starts and leading dimensions; tcec_*_unaligned is the same template with scalar
//              accesses (study/registry.py picks it).
// Range:       the fp16 split needs |x| <= 65504 (beyond it hi is inf and D turns inf/NaN: loud, not silent),
//              and loses accuracy for |x| < ~2^-14, where lo falls into fp16 subnormals (and hi itself below
//              2^-24 becomes 0).  tcec_tf32 has neither limit.  The report measures both on a wide-range
//              input distribution.
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"

namespace {

enum Variant { TCEC = 0, MARKIDIS = 1, NOCORR = 2, TF32X3 = 3 };

constexpr int BM = 128, BN = 128, BK = 32, THREADS = 256;
constexpr int WARP_M = 64, WARP_N = 32;              // a 2 x 4 grid of warps
constexpr int MT = WARP_M / 16, NT = WARP_N / 8;     // mma tiles per warp: 4 x 4
constexpr float LO_SCALE = 2048.0f;                  // 2^11, seed 002 eq. 5

// Shared-memory element and tile pitches.  fp16: rows padded by 16 bytes so that the 8 rows an ldmatrix
// reads fall in 8 distinct 16-byte bank groups.  tf32: fragments are read as single words, A rows padded to
// 36 words (lane (g, t) reads bank 4g + t) and B rows to 136 (bank 8t + g).
// RING: slots of raw fp32 tiles that cp.async fills ahead of the split (tf32's larger hi/lo tiles leave
// room for 2 only, within the 227 KB a block may have).
template <int V> struct Layout {
    using T = __half;
    static constexpr int KSTEP = 16, A_PITCH = BK + 8, B_PITCH = BN + 8, RING = 4;
};
template <> struct Layout<TF32X3> {
    using T = float;
    static constexpr int KSTEP = 8, A_PITCH = BK + 4, B_PITCH = BN + 8, RING = 2;
};
template <int V> constexpr int BUFFER_ELEMS = 2 * (BM * Layout<V>::A_PITCH + BK * Layout<V>::B_PITCH);  // hi + lo
constexpr int SLOT_FLOATS = BM * BK + BK * BN;
// Dynamic shared memory: two hi/lo buffers, then the ring (TCEC_SMEM in study/registry.py).
template <int V> constexpr int HILO_BYTES = 2 * BUFFER_ELEMS<V> * int(sizeof(typename Layout<V>::T));
template <int V> constexpr int SMEM_BYTES = HILO_BYTES<V> + Layout<V>::RING * SLOT_FLOATS * 4;

__device__ __forceinline__ unsigned smem_addr(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ float to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}

// Four consecutive fp32 values -> hi and lo parts in shared memory (8 bytes each for fp16, 16 for tf32).
template <int V>
__device__ __forceinline__ void split_store(const float4 v, typename Layout<V>::T* hi, typename Layout<V>::T* lo) {
    if constexpr (V == TF32X3) {
        const float4 h = make_float4(to_tf32(v.x), to_tf32(v.y), to_tf32(v.z), to_tf32(v.w));
        *reinterpret_cast<float4*>(hi) = h;
        *reinterpret_cast<float4*>(lo) =
            make_float4(to_tf32(v.x - h.x), to_tf32(v.y - h.y), to_tf32(v.z - h.z), to_tf32(v.w - h.w));
    } else {
        const __half2 h01 = __floats2half2_rn(v.x, v.y), h23 = __floats2half2_rn(v.z, v.w);
        uint2 hbits;
        hbits.x = *reinterpret_cast<const unsigned*>(&h01);
        hbits.y = *reinterpret_cast<const unsigned*>(&h23);
        *reinterpret_cast<uint2*>(hi) = hbits;
        if constexpr (V != NOCORR) {
            // x - fp32(hi) is exact in fp32; the scale keeps lo clear of fp16's subnormals (eq. 5).
            const float s = V == TCEC ? LO_SCALE : 1.0f;
            const float2 f01 = __half22float2(h01), f23 = __half22float2(h23);
            const __half2 l01 = __floats2half2_rn((v.x - f01.x) * s, (v.y - f01.y) * s);
            const __half2 l23 = __floats2half2_rn((v.z - f23.x) * s, (v.w - f23.y) * s);
            uint2 lbits;
            lbits.x = *reinterpret_cast<const unsigned*>(&l01);
            lbits.y = *reinterpret_cast<const unsigned*>(&l23);
            *reinterpret_cast<uint2*>(lo) = lbits;
        }
    }
}

// Four consecutive elements X[row][col .. col+3] -> dst, zeros past `rows` / `cols`, by cp.async (the
// src-size operand zero-fills; an out-of-range copy reads 0 bytes from the matrix base, so no out-of-range
// address is formed).  VEC: one 16-byte copy (start and ld 16-byte aligned, col a multiple of 4).
template <bool VEC>
__device__ __forceinline__ void copy4(float* dst, const float* __restrict__ X, idx_t ld, int row, int col, int rows,
                                      int cols) {
    if (VEC) {
        const int n = row < rows ? max(0, min(4, cols - col)) : 0;
        async_copy::cp16(dst, n ? X + row * ld + col : X, 4 * n);
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const bool ok = row < rows && col + j < cols;
            async_copy::cp4(dst + j, ok ? X + row * ld + col + j : X, ok);
        }
    }
}

// The copies of one k-tile into a ring slot: A 128x32 as 1024 chunks of 4 (8 per row), B 32x128 (32 per
// row), 4 of each per thread.  Chunk c lands at slot + 4c, and only its copier reads it back (split_tiles):
// so a thread waits for its own copies alone, and no barrier guards the ring.
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

// This thread's chunks of a landed ring slot -> hi and lo tiles of a shared buffer (A [m][k], B [k][n]).
template <int V>
__device__ __forceinline__ void split_tiles(const float* slot, typename Layout<V>::T* buf) {
    using L = Layout<V>;
    typename L::T* a_hi = buf;
    typename L::T* a_lo = a_hi + BM * L::A_PITCH;
    typename L::T* b_hi = a_lo + BM * L::A_PITCH;
    typename L::T* b_lo = b_hi + BK * L::B_PITCH;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int c = threadIdx.x + i * THREADS;
        const int ar = (c >> 3) * L::A_PITCH + (c & 7) * 4, br = (c >> 5) * L::B_PITCH + (c & 31) * 4;
        split_store<V>(*reinterpret_cast<const float4*>(slot + 4 * c), a_hi + ar, a_lo + ar);
        split_store<V>(*reinterpret_cast<const float4*>(slot + BM * BK + 4 * c), b_hi + br, b_lo + br);
    }
}

// ---- tensor-core fragments -----------------------------------------------------------------------------
// mma.sync's per-lane layout (PTX ISA, "Matrix Fragments for mma.m16n8k16 / m16n8k8"): lane = 4g + t holds
// A at rows g and g+8, B at column g, and D at rows g, g+8 and columns 2t, 2t+1.

struct FragA { unsigned r[4]; };
struct FragB { unsigned r[2]; };

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr(p)));
}

// A 16 x KSTEP fragment at (row0, k0) of a row-major tile.  fp16: one ldmatrix.x4 whose four 8x8 matrices
// are (rows 0-7 | 8-15) x (k 0-7 | 8-15), lane l pointing at row l % 16, k (l / 16) * 8.
template <int V>
__device__ __forceinline__ FragA load_a(const typename Layout<V>::T* a, int row0, int k0, int lane) {
    constexpr int P = Layout<V>::A_PITCH;
    FragA f;
    if constexpr (V == TF32X3) {
        const int g = lane >> 2, t = lane & 3;
        const float* p = a + (row0 + g) * P + k0 + t;
        f.r[0] = __float_as_uint(p[0]);
        f.r[1] = __float_as_uint(p[8 * P]);
        f.r[2] = __float_as_uint(p[4]);
        f.r[3] = __float_as_uint(p[8 * P + 4]);
    } else {
        ldmatrix_x4(f.r, a + (row0 + (lane & 15)) * P + k0 + (lane >> 4) * 8);
    }
    return f;
}

// Two KSTEP x 8 fragments (columns col0 .. col0+15) of a row-major [k][n] tile.  fp16: ldmatrix.x4.trans,
// matrices (k 0-7 | 8-15) x (n 0-7 | 8-15); the transpose hands lane 4g + t the k pairs of column g.
template <int V>
__device__ __forceinline__ void load_b2(FragB& f0, FragB& f1, const typename Layout<V>::T* b, int k0, int col0,
                                        int lane) {
    constexpr int P = Layout<V>::B_PITCH;
    if constexpr (V == TF32X3) {
        const int g = lane >> 2, t = lane & 3;
        const float* p = b + (k0 + t) * P + col0 + g;
        f0.r[0] = __float_as_uint(p[0]);
        f0.r[1] = __float_as_uint(p[4 * P]);
        f1.r[0] = __float_as_uint(p[8]);
        f1.r[1] = __float_as_uint(p[4 * P + 8]);
    } else {
        unsigned r[4];
        ldmatrix_x4_trans(r, b + (k0 + (lane & 15)) * P + col0 + (lane >> 4) * 8);
        f0.r[0] = r[0], f0.r[1] = r[1], f1.r[0] = r[2], f1.r[1] = r[3];
    }
}

// d = a b + c on the tensor cores (fp32 accumulators).
template <int V>
__device__ __forceinline__ void mma(float (&d)[4], const FragA& a, const FragB& b, const float (&c)[4]) {
    if constexpr (V == TF32X3) {
        asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%11,%12,%13};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]),
              "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    } else {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%11,%12,%13};"
            : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
            : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]),
              "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
    }
}

// One warp's share of one buffered k-tile: BK / KSTEP steps of MT x NT tiles.
template <int V>
__device__ __forceinline__ void multiply_tile(const typename Layout<V>::T* buf, float (&acc)[MT][NT][4],
                                              float (&corr)[MT][NT][4], int wm, int wn, int lane) {
    using L = Layout<V>;
    constexpr bool LO = V != NOCORR;
    const typename L::T* a_hi = buf;
    const typename L::T* a_lo = a_hi + BM * L::A_PITCH;
    const typename L::T* b_hi = a_lo + BM * L::A_PITCH;
    const typename L::T* b_lo = b_hi + BK * L::B_PITCH;
#pragma unroll
    for (int k = 0; k < BK; k += L::KSTEP) {
        FragA ah[MT], al[MT];
        FragB bh[NT], bl[NT];
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            ah[i] = load_a<V>(a_hi, wm * WARP_M + i * 16, k, lane);
            if constexpr (LO) al[i] = load_a<V>(a_lo, wm * WARP_M + i * 16, k, lane);
        }
#pragma unroll
        for (int j = 0; j < NT; j += 2) {
            load_b2<V>(bh[j], bh[j + 1], b_hi, k, wn * WARP_N + j * 8, lane);
            if constexpr (LO) load_b2<V>(bl[j], bl[j + 1], b_lo, k, wn * WARP_N + j * 8, lane);
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                if constexpr (V == TCEC || V == TF32X3) {
                    // hi*hi leaves the tensor core after every step: the fp32 sum rounds to nearest.
                    const float zero[4] = {0.f, 0.f, 0.f, 0.f};
                    float p[4];
                    mma<V>(p, ah[i], bh[j], zero);
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[i][j][e] += p[e];
                    mma<V>(corr[i][j], al[i], bh[j], corr[i][j]);
                    mma<V>(corr[i][j], ah[i], bl[j], corr[i][j]);
                } else {
                    mma<V>(acc[i][j], ah[i], bh[j], acc[i][j]);
                    if constexpr (V == MARKIDIS) {
                        mma<V>(acc[i][j], al[i], bh[j], acc[i][j]);
                        mma<V>(acc[i][j], ah[i], bl[j], acc[i][j]);
                    }
                }
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

// Blocks run in groups of GROUP_M tile-rows, column by column, so that the A panels of a group and the B
// panel they share stay in L2 while the group sweeps (the plain row-major order streams all of B per row).
constexpr int GROUP_M = 8;

template <int V, bool VEC>
__device__ __forceinline__ void tcec_gemm(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,
                                          const float* __restrict__ B, idx_t ldb, float beta,
                                          const float* __restrict__ C, idx_t ldc, float* __restrict__ D, idx_t ldd) {
    using T = typename Layout<V>::T;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T* smem = reinterpret_cast<T*>(smem_raw);

    const idx_t tiles_m = (M + BM - 1) / BM, tiles_n = gridDim.x;   // 64-bit: the grid may hold 2^31 blocks
    const idx_t pid = blockIdx.y * tiles_n + blockIdx.x, in_group = pid % (GROUP_M * tiles_n);
    const idx_t first_m = pid / (GROUP_M * tiles_n) * GROUP_M;
    const idx_t group_m = min(tiles_m - first_m, idx_t(GROUP_M));
    const int m0 = int((first_m + in_group % group_m) * BM);
    const int n0 = int(in_group / group_m * BN);

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp / (BN / WARP_N), wn = warp % (BN / WARP_N);

    float acc[MT][NT][4], corr[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = corr[i][j][e] = 0.f;

    // The ring runs RING - 1 k-tiles ahead of the split; one commit group per k-tile (empty past the end), so
    // "tile t + 1 has landed" is always wait_group<RING - 2> right after the commit of iteration t.
    constexpr int RING = Layout<V>::RING;
    float* ring = reinterpret_cast<float*>(smem_raw + HILO_BYTES<V>);
    const int k_tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int i = 0; i < RING - 1; ++i) {
        if (i < k_tiles) copy_tiles<VEC>(ring + i * SLOT_FLOATS, A, lda, B, ldb, M, N, K, m0, n0, i * BK);
        async_copy::commit();
    }
    async_copy::wait_group<RING - 2>();
    split_tiles<V>(ring, smem);
    __syncthreads();
    for (int t = 0; t < k_tiles; ++t) {
        const int ahead = t + RING - 1;
        if (ahead < k_tiles)
            copy_tiles<VEC>(ring + (ahead % RING) * SLOT_FLOATS, A, lda, B, ldb, M, N, K, m0, n0, ahead * BK);
        async_copy::commit();
        multiply_tile<V>(smem + (t & 1) * BUFFER_ELEMS<V>, acc, corr, wm, wn, lane);
        if (t + 1 < k_tiles) {
            async_copy::wait_group<RING - 2>();
            split_tiles<V>(ring + ((t + 1) % RING) * SLOT_FLOATS, smem + ((t + 1) & 1) * BUFFER_ELEMS<V>);
        }
        __syncthreads();   // the next buffer is complete, and nobody still reads this one when it is refilled
    }
    async_copy::wait_all();

    const int g = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int row = m0 + wm * WARP_M + i * 16 + g + 8 * h;
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                if constexpr (V == TCEC) {
                    v0 += corr[i][j][2 * h] * (1.0f / LO_SCALE);
                    v1 += corr[i][j][2 * h + 1] * (1.0f / LO_SCALE);
                } else if constexpr (V == TF32X3) {
                    v0 += corr[i][j][2 * h];
                    v1 += corr[i][j][2 * h + 1];
                }
                store2<VEC>(v0, v1, alpha, beta, C, ldc, D, ldd, row, n0 + wn * WARP_N + j * 8 + 2 * tq, N);
            }
        }
}

}  // namespace

// One block of 256 threads per 128x128 tile; dynamic shared memory SMEM_BYTES<V> (study/registry.py).  grid.z
// walks a batch of independent GEMMs whose operands lie batch_* elements apart (0 for a single GEMM): seed
// 002's Figure 8 times 256 products in one launch.
#define TCEC_ENTRY(NAME, V, VEC)                                                                              \
    extern "C" __global__ void __launch_bounds__(THREADS, 1)                                                 \
    NAME(int M, int N, int K, float alpha, const float* __restrict__ A, idx_t lda,                           \
         const float* __restrict__ B, idx_t ldb, float beta, const float* __restrict__ C, idx_t ldc,         \
         float* __restrict__ D, idx_t ldd, idx_t batch_a, idx_t batch_b, idx_t batch_c, idx_t batch_d) {    \
        const idx_t z = blockIdx.z;                                                                          \
        tcec_gemm<V, VEC>(M, N, K, alpha, A + z * batch_a, lda, B + z * batch_b, ldb, beta, C + z * batch_c, \
                          ldc, D + z * batch_d, ldd);                                                        \
    }

TCEC_ENTRY(tcec_fp16, TCEC, true)
TCEC_ENTRY(tcec_fp16_unaligned, TCEC, false)
TCEC_ENTRY(tcec_markidis, MARKIDIS, true)
TCEC_ENTRY(tcec_markidis_unaligned, MARKIDIS, false)
TCEC_ENTRY(tcec_nocorr, NOCORR, true)
TCEC_ENTRY(tcec_nocorr_unaligned, NOCORR, false)
TCEC_ENTRY(tcec_tf32, TF32X3, true)
TCEC_ENTRY(tcec_tf32_unaligned, TF32X3, false)

static_assert(SMEM_BYTES<TCEC> == 206848 && SMEM_BYTES<TF32X3> == 208896, "keep TCEC_SMEM in study/registry.py in step");
