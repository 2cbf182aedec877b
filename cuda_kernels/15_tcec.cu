// Stage 15 - TCEC: fp32 GEMM on fp16 tensor cores with error correction, on the Hopper rung's machinery.
//
// Technique:   every fp32 operand x is split into hi = fp16(x) and lo = fp16((x - hi) * 2^11), and the fp32
//              product is rebuilt from three fp16 tensor-core products:
//                  A B  ~  hiA hiB + (loA hiB + hiA loB) / 2^11          (loA loB, ~2^-22 of it, dropped).
//              Before the split, row i of A and column j of B are multiplied by powers of two (exact) that put
//              each line's largest |x| in [2^14, 2^15), and the epilogue multiplies D back by 2^-(ea_i + eb_j).
//              Two passes write the split operands (A per row, K-major, beside B's column maxima; then B per
//              row, N-major: the layouts rung 14's TMA reads); the GEMM is rung 14's: persistent, a producer
//              thread feeding a 3-slot ring by TMA, two consumer warpgroups of 64x128 issuing SS wgmma
//              m64n128k16.  Per 32 k, hi*hi runs into a fresh accumulator and leaves the tensor core, added to
//              fp32 registers with round-to-nearest FADDs; the two corrections share a second accumulator.
// Reproduces:  seed 002 (Ootomo & Yokota 2022, section 4.4): the split, scaling and correction of its eqs.
//              (6)-(7), and its finding that accumulating inside the tensor cores (which round toward zero) kept
//              Markidis et al.'s method short of fp32 accuracy.  Variants of the same kernel: tcec_markidis (lo
//              unscaled, every product in one tensor-core accumulator) and tcec_nocorr (hi only: the floor).
//              3xTF32 and the bf16x6/x9 recipes, the shootout, are cuda_kernels/tcec_shootout.cu.
// Changed:     against stage 14: fp32 inputs, split by passes into two fp16 matrices each; three products per
//              product and a second accumulator.  Against this stage's first form (A split in registers for RS
//              wgmma, 255 registers, issue-bound; docs/15_tcec.md): the split leaves the k-loop.
// Why faster:  cuBLAS's fp16 GEMM over K = 3N does exactly the three products, ~5x SGEMM's rate of fp32 work
//              (the stage's probe of that ceiling is in ceilings.json); with the split out of the k-loop the GEMM
//              can run near it, and the passes move each operand's bytes about three times at DRAM speed.
// Measured:    184.7 TFLOP/s at 4096^3 and 194.7 at 8192^3 on an H100, 3.59x and 3.80x cuBLAS SGEMM, the
//              passes included (the sweep of 3bd236b, reports/h100/results.csv; docs/15_tcec.md splits the time).
//
// Ragged edges: the split matrices are padded to multiples of 8 halves (zeros past K in A, past N in B) and
//              read through tensor maps of the unpadded extents, which zero-fill past M, N and K; stores are
//              masked.  A batch (seed 002's Figure 8) stacks its matrices: a tile's boxes past its own M or K
//              reach the next matrix's rows only where the other operand is zero-filled or the output masked.
// Alignment:   the passes' vector paths (A's by an argument of tcec_lines, B's in tcec_lines_vb and
//              tcec_split_b_vec) move 16-byte vectors (operand start and leading dimension 16-byte aligned, K or
//              N a multiple of 4); the others go element by element.  Any alignment.
// Range:       fp32's, by the scaling.  What remains: a value more than ~2^29 below its row's (or column's)
//              largest |x| falls into fp16's subnormals and keeps fewer bits (its error is then that small
//              relative to the line's largest term); a line whose largest |x| is below 2^-112 is scaled by at
//              most 2^126.  A row of A or column of B holding an inf or a NaN is split as zeros and its outputs
//              recomputed in fp32 FMAs by a last launch (tcec_fixup), so inf and NaN come out as SGEMM's do.
#include <cuda_fp16.h>

#include "async_copy.cuh"
#include "gemm_common.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace {

enum Variant { TCEC = 0, MARKIDIS = 1, NOCORR = 2 };

constexpr float LO_SCALE = 2048.0f;          // 2^11, seed 002 eqs. (6)-(7)

// ---- exact power-of-two scaling ----------------------------------------------------------------------------
// An fp16 split holds x to ~22 bits only while |x| lies in about [2^-14, 2^15]: above, hi overflows to inf;
// below, lo (then hi) falls into fp16's subnormals.  So row i of A is multiplied by 2^ea[i] and column j of B by
// 2^eb[j] (exact), each chosen to put the line's largest finite |x| in [2^14, 2^15), and the epilogue multiplies
// the product by 2^-(ea[i] + eb[j]).  The passes record each line's max |x| as its bits (non-negative floats
// order as their bits), or INF_BITS where the line holds an inf or a NaN; such lines are split as zeros and
// their results recomputed in fp32 (tcec_fixup), so that inf and NaN come out where, and as, SGEMM's do.
constexpr unsigned INF_BITS = 0x7F800000u;

__device__ __forceinline__ unsigned abs_bits(float x) { return min(__float_as_uint(x) & 0x7FFFFFFFu, INF_BITS); }

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

// ---- the passes ------------------------------------------------------------------------------------------
// 256 threads a block.  blockIdx.y is the matrix z of a batch; the split matrices and the line maxima of a batch
// are stacked: A's rows z*M.., B's rows z*K.., amax_a[z*M..], amax_b[z*N..].  The first pass, tcec_lines, runs
// A's split and B's column maxima side by side (blocks below M: a row of A each; the rest: B's column blocks).
constexpr int PASS_THREADS = 256, COL_K = 32;   // col_amax's k-rows per block

// x * 2^e (exact) split into hi = fp16(x 2^e) and lo = fp16((x 2^e - hi) lo_scale); a line holding an inf or a
// NaN (finite false) as zeros.
__device__ __forceinline__ void split(float v, int e, bool finite, float lo_scale, __half& hi, __half& lo) {
    const float s = finite ? v * pow2(e) : 0.0f;
    hi = __float2half_rn(s);
    lo = __float2half_rn((s - __half2float(hi)) * lo_scale);
}

// Row r of A: its max |x| (bits, into amax_a), then hi and lo (Kp halves a row, zeros past K; lo skipped when
// null).  VEC: float4 loads (K % 4 == 0, rows 16-byte aligned).
template <bool VEC>
__device__ void split_a(idx_t r, const float* __restrict__ A, idx_t lda, idx_t batch_a, int M, int K, int Kp,
                        float lo_scale, __half* __restrict__ hi, __half* __restrict__ lo,
                        unsigned* __restrict__ amax_a) {
    const idx_t z = blockIdx.y, row = z * M + r;
    const float* a = A + z * batch_a + r * lda;
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
    const bool finite = m < INF_BITS;
    if (threadIdx.x == 0) amax_a[row] = m;
    if (VEC) {
        for (int k = 4 * threadIdx.x; k < Kp; k += 4 * PASS_THREADS) {
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (k < K) v = *reinterpret_cast<const float4*>(a + k);
            __half h[4], l[4];
            split(v.x, e, finite, lo_scale, h[0], l[0]);
            split(v.y, e, finite, lo_scale, h[1], l[1]);
            split(v.z, e, finite, lo_scale, h[2], l[2]);
            split(v.w, e, finite, lo_scale, h[3], l[3]);
            *reinterpret_cast<uint2*>(hi + row * Kp + k) = *reinterpret_cast<uint2*>(h);
            if (lo) *reinterpret_cast<uint2*>(lo + row * Kp + k) = *reinterpret_cast<uint2*>(l);
        }
    } else {
        for (int k = threadIdx.x; k < Kp; k += PASS_THREADS) {
            __half h = __float2half(0.f), l = __float2half(0.f);
            if (k < K) split(a[k], e, finite, lo_scale, h, l);
            hi[row * Kp + k] = h;
            if (lo) lo[row * Kp + k] = l;
        }
    }
}

// Column block bx of B (PASS_THREADS columns, 4 a thread with VEC): each thread's max |x| over COL_K rows from
// by * COL_K on, and every k_blocks * COL_K after, into bits[z*N + n] by atomicMax (bits zeroed by the caller).
// VEC: N % 4 == 0, rows 16-byte aligned.
template <bool VEC>
__device__ void col_amax(int bx, idx_t by, idx_t k_blocks, const float* __restrict__ B, idx_t ldb, idx_t batch_b,
                         int K, int N, unsigned* __restrict__ bits) {
    const int n = (bx * PASS_THREADS + threadIdx.x) * (VEC ? 4 : 1);
    if (n >= N) return;
    const idx_t z = blockIdx.y;
    B += z * batch_b;
    unsigned m[4] = {};
    for (idx_t k0 = by * COL_K; k0 < K; k0 += k_blocks * COL_K) {
#pragma unroll 8   // independent loads, in flight together
        for (int i = 0; i < COL_K; ++i) {
            const idx_t k = k0 + i;
            if (k < K && VEC) {
                const float4 v = *reinterpret_cast<const float4*>(B + k * ldb + n);
                m[0] = max(m[0], abs_bits(v.x)), m[1] = max(m[1], abs_bits(v.y));
                m[2] = max(m[2], abs_bits(v.z)), m[3] = max(m[3], abs_bits(v.w));
            } else if (k < K) {
                m[0] = max(m[0], abs_bits(B[k * ldb + n]));
            }
        }
    }
#pragma unroll
    for (int i = 0; i < (VEC ? 4 : 1); ++i) atomicMax(bits + z * N + n + i, m[i]);
}

// B's rows blockIdx.y, blockIdx.y + gridDim.y, ..., split with their columns' exponents (Np halves a row, zeros
// past N; lo skipped when null).  VEC as col_amax.
template <bool VEC>
__device__ void split_b(const float* __restrict__ B, idx_t ldb, idx_t batch_b, int K, int N, int Np, float lo_scale,
                        const unsigned* __restrict__ bits, __half* __restrict__ hi, __half* __restrict__ lo) {
    const int n = (blockIdx.x * PASS_THREADS + threadIdx.x) * (VEC ? 4 : 1);
    if (n >= Np) return;
    constexpr int W = VEC ? 4 : 1;
    const idx_t z = blockIdx.z;
    int e[W];
    bool finite[W];
#pragma unroll
    for (int i = 0; i < W; ++i) {   // VEC: N % 4 == 0, so the four columns lie all inside N or all past it
        const unsigned b = n < N ? bits[z * N + n + i] : 0u;
        e[i] = scale_exponent(b), finite[i] = b < INF_BITS;
    }
    for (idx_t k = blockIdx.y; k < K; k += gridDim.y) {
        __half h[4] = {}, l[4] = {};
        if (n < N) {
            float x[4];
            const float* row = B + z * batch_b + k * ldb + n;
            if (VEC) {
                const float4 v = *reinterpret_cast<const float4*>(row);
                x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
            } else {
                x[0] = *row;
            }
#pragma unroll
            for (int i = 0; i < W; ++i) split(x[i], e[i], finite[i], lo_scale, h[i], l[i]);
        }
        const idx_t at = (z * K + k) * Np + n;
        if (VEC) {
            *reinterpret_cast<uint2*>(hi + at) = *reinterpret_cast<uint2*>(h);
            if (lo) *reinterpret_cast<uint2*>(lo + at) = *reinterpret_cast<uint2*>(l);
        } else {
            hi[at] = h[0];
            if (lo) lo[at] = l[0];
        }
    }
}

// ---- the GEMM --------------------------------------------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 64, STAGES = 3, GROUP_M = 8, THREADS = 384;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, SLOT = 2 * A_BYTES + 2 * B_BYTES;   // 64 KiB a slot
constexpr int B_HALF = B_BYTES / 2, SMEM_BYTES = STAGES * SLOT + 1024 + 2 * STAGES * 8;
constexpr uint32_t DESC_HI = wgmma::desc_hi(1024, wgmma::SWIZZLE_128B);   // 128-byte rows, 8-row swizzle atoms

// What the epilogue reads, GEMM z's start in each at z * batch_*.
struct Operands {
    const unsigned* amax_a;   // [batch][M]
    const unsigned* amax_b;   // [batch][N]
    const float* C; idx_t ldc, batch_c;
    float* D; idx_t ldd, batch_d;
};

// D = alpha (hi*hi + (lo*hi + hi*lo) / 2^11) 2^-(ea_i + eb_j) + beta C (V = TCEC) on tiles of 128x128, one block
// per SM walking the batch's tiles in GROUP_M order.  MARKIDIS: all three products in one tensor-core
// accumulator over K (lo unscaled by its pass); NOCORR: hi*hi alone, likewise.
template <int V>
__device__ void gemm(const CUtensorMap& map_ahi, const CUtensorMap& map_alo, const CUtensorMap& map_bhi,
                     const CUtensorMap& map_blo, int M, int N, int K, int batch, const Operands& o, float alpha,
                     float beta) {
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
    const long long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, per_gemm = tiles_m * tiles_n;
    const long long tiles = per_gemm * batch;
    const int k_tiles = (K - 1) / BK + 1;
    if (tid < 128) {   // the producer warpgroup: thread 0 copies
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (tid == 0) {
            constexpr int BYTES = V == NOCORR ? A_BYTES + B_BYTES : SLOT;
            uint32_t s = 0, ph = 0;
            for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
                int tm, tn;
                tile_of<GROUP_M>(t % per_gemm, tiles_m, tiles_n, tm, tn);
                const long long z = t / per_gemm;
                const int m0 = int(z * M) + tm * BM, n0 = tn * BN;   // stacked rows: z*M < 2^31 (the launcher)
                for (int kt = 0; kt < k_tiles; ++kt) {
                    const int k0 = int(z * K) + kt * BK;
                    async_copy::mbar_wait(&empty[s], ph ^ 1);
                    const uint32_t slot = ring + s * SLOT;
                    tma::expect_tx(&full[s], BYTES);
                    tma::load_2d(slot, map_ahi, kt * BK, m0, &full[s]);
                    if (V != NOCORR) tma::load_2d(slot + A_BYTES, map_alo, kt * BK, m0, &full[s]);
                    for (int b = 0; b < 2; ++b) {
                        tma::load_2d(slot + 2 * A_BYTES + b * B_HALF, map_bhi, n0 + 64 * b, k0, &full[s]);
                        if (V != NOCORR)
                            tma::load_2d(slot + 2 * A_BYTES + B_BYTES + b * B_HALF, map_blo, n0 + 64 * b, k0, &full[s]);
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
    const uint32_t dbhi = wgmma::desc_lo(ring + 2 * A_BYTES, B_HALF), dblo = dbhi + (B_BYTES >> 4);
    uint32_t s = 0, ph = 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        tile_of<GROUP_M>(t % per_gemm, tiles_m, tiles_n, tm, tn);
        const int m0 = tm * BM, n0 = tn * BN;
        float acc[64], hh[V == TCEC ? 64 : 1], cc[V == TCEC ? 64 : 1];
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        uint32_t prev = 0;
        for (int kt = 0; kt < k_tiles; ++kt) {
            async_copy::mbar_wait(&full[s], ph);
            const uint32_t off = s * (SLOT >> 4);
            const auto a = [&](uint32_t d, int kk) { return wgmma::desc(d + off + 2 * kk, DESC_HI); };
            const auto b = [&](uint32_t d, int kk) { return wgmma::desc(d + off + 128 * kk, DESC_HI); };
            if constexpr (V == TCEC) {
                // Two halves of 32 k: hi*hi of each in a fresh accumulator (two k16 steps inside the tensor core,
                // whose adds truncate), then promoted; the half's corrections run meanwhile.
#pragma unroll
                for (int half = 0; half < 2; ++half) {
                    wgmma::fence();
#pragma unroll
                    for (int kk = 2 * half; kk < 2 * half + 2; ++kk)
                        wgmma::mma<__half, 128>(hh, a(dahi, kk), b(dbhi, kk), kk & 1);
                    wgmma::commit();
#pragma unroll
                    for (int kk = 2 * half; kk < 2 * half + 2; ++kk) {
                        wgmma::mma<__half, 128>(cc, a(dalo, kk), b(dbhi, kk), kt | kk);
                        wgmma::mma<__half, 128>(cc, a(dahi, kk), b(dblo, kk), 1);
                    }
                    wgmma::commit();
                    wgmma::wait<1>();   // this half's hi*hi done, and every wgmma before its corrections
                    wgmma::hold(hh);
                    if (half == 0 && kt > 0 && lane == 0) async_copy::mbar_arrive(&empty[prev]);   // k-tile kt-1's
#pragma unroll
                    for (int i = 0; i < 64; ++i) acc[i] = __fadd_rn(acc[i], hh[i]);
                }
            } else {
                wgmma::fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk) {
                    wgmma::mma<__half, 128>(acc, a(dahi, kk), b(dbhi, kk), kt | kk);
                    if (V == MARKIDIS) {
                        wgmma::mma<__half, 128>(acc, a(dalo, kk), b(dbhi, kk), 1);
                        wgmma::mma<__half, 128>(acc, a(dahi, kk), b(dblo, kk), 1);
                    }
                }
                wgmma::commit();
                wgmma::wait<1>();   // the k-tile before's products: release that slot
                if (kt > 0 && lane == 0) async_copy::mbar_arrive(&empty[prev]);
            }
            prev = s;
            if (++s == STAGES) s = 0, ph ^= 1;
        }
        wgmma::wait<0>();
        if constexpr (V == TCEC) wgmma::hold(cc);
        else wgmma::hold(acc);
        if (lane == 0) async_copy::mbar_arrive(&empty[prev]);

        const idx_t z = t / per_gemm;
        const float* C = o.C + z * o.batch_c;
        float* D = o.D + z * o.batch_d;
        const int row0 = m0 + 64 * c + 16 * warp + (lane >> 2);   // this thread's rows: row0, row0 + 8
        int er[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const unsigned rm = row0 + 8 * h < M ? o.amax_a[z * M + row0 + 8 * h] : 0u;
            er[h] = scale_exponent(rm);
        }
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const int col0 = n0 + 8 * j + 2 * (lane & 3);
            int ec[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const unsigned cm = col0 + e < N ? o.amax_b[z * N + col0 + e] : 0u;
                ec[e] = scale_exponent(cm);
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = row0 + 8 * h;
                if (row >= M) continue;
                float v[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int i = 4 * j + 2 * h + e;
                    v[e] = acc[i];
                    if constexpr (V == TCEC) v[e] += cc[i] * (1.0f / LO_SCALE);
                    v[e] = unscale(v[e], er[h] + ec[e]);   // a line with an inf or a NaN: tcec_fixup's
                }
                float* d = D + row * o.ldd + col0;
                const float* cp = C + row * o.ldc + col0;
                if (col0 + 1 < N && !(reinterpret_cast<uintptr_t>(d) & 7) &&
                    (beta == 0.0f || !(reinterpret_cast<uintptr_t>(cp) & 7))) {   // both in one 8-byte access
                    float2 r = make_float2(alpha * v[0], alpha * v[1]);
                    if (beta != 0.0f) {
                        const float2 y = *reinterpret_cast<const float2*>(cp);
                        r.x = fmaf(beta, y.x, r.x), r.y = fmaf(beta, y.y, r.y);
                    }
                    *reinterpret_cast<float2*>(d) = r;
                } else {
#pragma unroll
                    for (int e = 0; e < 2; ++e)
                        if (col0 + e < N) d[e] = gemm_epilogue(v[e], alpha, beta, C, o.ldc, row, col0 + e);
                }
            }
        }
    }
}

}  // namespace

// tcec_lines<VB> (grid: M + col_blocks * k_blocks, batch; col_blocks = ceil(N / (256 w)), w = 4 with VB; vec_a: A's
// rows by float4),
// then tcec_split_b (grid: ceil(Np / (256 w)), <= K, batch), then the GEMM (one block of 384 threads per SM, at
// most the batch's tile count, SMEM_BYTES of dynamic shared memory).
#define TCEC_LINES_ENTRY(NAME, VB)                                                                           \
    extern "C" __global__ void __launch_bounds__(PASS_THREADS) NAME(                                         \
        const float* __restrict__ A, idx_t lda, idx_t batch_a, int M, int K, int Kp, int vec_a, float lo_scale, \
        __half* hi, __half* lo, unsigned* amax_a, const float* __restrict__ B, idx_t ldb, idx_t batch_b, int N, \
        int col_blocks, int k_blocks, unsigned* bits) {                                                      \
        const idx_t b = blockIdx.x;                                                                          \
        if (b < M && vec_a) split_a<true>(b, A, lda, batch_a, M, K, Kp, lo_scale, hi, lo, amax_a);           \
        else if (b < M) split_a<false>(b, A, lda, batch_a, M, K, Kp, lo_scale, hi, lo, amax_a);              \
        else col_amax<VB>(int((b - M) % col_blocks), (b - M) / col_blocks, k_blocks, B, ldb, batch_b, K, N, bits); \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, 1, PASS_THREADS * (VB ? 4 : 1), PASS_THREADS, 0)
TCEC_LINES_ENTRY(tcec_lines, false)
TCEC_LINES_ENTRY(tcec_lines_vb, true)

#define TCEC_SPLIT_B_ENTRY(NAME, VEC)                                                                        \
    extern "C" __global__ void __launch_bounds__(PASS_THREADS) NAME(                                         \
        const float* __restrict__ B, idx_t ldb, idx_t batch_b, int K, int N, int Np, float lo_scale,         \
        const unsigned* bits, __half* hi, __half* lo) {                                                      \
        split_b<VEC>(B, ldb, batch_b, K, N, Np, lo_scale, bits, hi, lo);                                     \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, 1, PASS_THREADS * (VEC ? 4 : 1), PASS_THREADS, 0)
TCEC_SPLIT_B_ENTRY(tcec_split_b, false)
TCEC_SPLIT_B_ENTRY(tcec_split_b_vec, true)

#define TCEC_GEMM_ENTRY(NAME, V)                                                                             \
    extern "C" __global__ void __launch_bounds__(THREADS, 1) NAME(                                           \
        const __grid_constant__ CUtensorMap map_ahi, const __grid_constant__ CUtensorMap map_alo,            \
        const __grid_constant__ CUtensorMap map_bhi, const __grid_constant__ CUtensorMap map_blo, int M, int N, \
        int K, int batch, const unsigned* amax_a, const unsigned* amax_b, float alpha, float beta,           \
        const float* C, idx_t ldc, idx_t batch_c, float* D, idx_t ldd, idx_t batch_d) {                      \
        const Operands o{amax_a, amax_b, C, ldc, batch_c, D, ldd, batch_d};                                  \
        gemm<V>(map_ahi, map_alo, map_bhi, map_blo, M, N, K, batch, o, alpha, beta);                         \
    }                                                                                                        \
    STUDY_ENTRY_FACTS(NAME, BM, BN, THREADS, SMEM_BYTES)
TCEC_GEMM_ENTRY(tcec_gemm, TCEC)
TCEC_GEMM_ENTRY(tcec_markidis, MARKIDIS)
TCEC_GEMM_ENTRY(tcec_nocorr, NOCORR)

// sum_k A[row][k] B[k][col] by fp32 FMAs in k order: an element whose row of A or column of B holds an inf or NaN.
__device__ float nonfinite_dot(const float* __restrict__ A, idx_t lda, const float* __restrict__ B, idx_t ldb, int K,
                               idx_t row, idx_t col) {
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s = fmaf(A[row * lda + k], B[(idx_t)k * ldb + col], s);
    return s;
}

// The last launch, tcec_fixup: block b takes lines FIX_LINES b.. (line l: row l of A if l < M, else column l - M
// of B; blockIdx.y: the batch's matrix).  A block with no line holding an inf or a NaN returns at once; the
// others recompute each such line of D in turn, all their threads across it.  FIX_LINES: few enough blocks that
// the common case (no such line) costs microseconds, enough that a matrix of NaN still fills the GPU.
constexpr int FIX_LINES = 16;
__device__ void fixup(const float* __restrict__ A, idx_t lda, idx_t batch_a, const float* __restrict__ B, idx_t ldb,
                      idx_t batch_b, int M, int N, int K, const unsigned* __restrict__ amax_a,
                      const unsigned* __restrict__ amax_b, float alpha, float beta, const float* __restrict__ C,
                      idx_t ldc, idx_t batch_c, float* __restrict__ D, idx_t ldd, idx_t batch_d) {
    __shared__ idx_t bad_lines[FIX_LINES];
    __shared__ int n_bad;
    const idx_t z = blockIdx.y, l = (idx_t)blockIdx.x * FIX_LINES + threadIdx.x;
    if (threadIdx.x == 0) n_bad = 0;
    __syncthreads();
    const bool bad = threadIdx.x < FIX_LINES && l < (idx_t)M + N
                     && (l < M ? amax_a[z * M + l] : amax_b[z * N + (l - M)]) >= INF_BITS;
    if (bad) bad_lines[atomicAdd(&n_bad, 1)] = l;
    if (!__syncthreads_or(bad)) return;
    A += z * batch_a, B += z * batch_b, C += z * batch_c, D += z * batch_d;
    for (int j = 0; j < n_bad; ++j) {
        const idx_t b = bad_lines[j];
        const bool row = b < M;
        for (idx_t i = threadIdx.x; i < (row ? N : M); i += blockDim.x) {
            const idx_t r = row ? b : i, c = row ? i : b - M;
            D[r * ldd + c] = gemm_epilogue(nonfinite_dot(A, lda, B, ldb, K, r, c), alpha, beta, C, ldc, r, c);
        }
    }
}

// tcec_fixup (grid ceil((M + N) / FIX_LINES), batch; 256 threads): the rows and columns holding an inf or a NaN,
// in fp32 FMAs.
extern "C" __global__ void __launch_bounds__(PASS_THREADS) tcec_fixup(
    const float* __restrict__ A, idx_t lda, idx_t batch_a, const float* __restrict__ B, idx_t ldb, idx_t batch_b,
    int M, int N, int K, const unsigned* amax_a, const unsigned* amax_b, float alpha, float beta, const float* C,
    idx_t ldc, idx_t batch_c, float* D, idx_t ldd, idx_t batch_d) {
    fixup(A, lda, batch_a, B, ldb, batch_b, M, N, K, amax_a, amax_b, alpha, beta, C, ldc, batch_c, D, ldd, batch_d);
}
STUDY_ENTRY_FACTS(tcec_fixup, 1, FIX_LINES, PASS_THREADS, 0)
