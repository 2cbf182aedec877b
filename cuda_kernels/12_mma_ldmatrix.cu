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
//              (reports/profile.csv): 218M of the 268M shared-load wavefronts are bank conflicts (128 per
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

namespace {

template <class T> struct Elem;
template <> struct Elem<__half> {
    __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
    __device__ __forceinline__ static float2 unpack(uint32_t v) {
        return __half22float2(*reinterpret_cast<__half2*>(&v));
    }
    __device__ __forceinline__ static float load(const __half* p) { return __half2float(*p); }
    __device__ __forceinline__ static void store(__half* p, float v) { *p = __float2half_rn(v); }
};
template <> struct Elem<__nv_bfloat16> {
    __device__ __forceinline__ static void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                     "{%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    __device__ __forceinline__ static uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
    __device__ __forceinline__ static float2 unpack(uint32_t v) {
        return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&v));
    }
    __device__ __forceinline__ static float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }
    __device__ __forceinline__ static void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }
};

// Four 8x8 b16 matrices; lane l gives the address of row l % 8 of matrix l / 8.  Lane 4g + t receives
// elements (g, 2t) and (g, 2t + 1) of each matrix; with .trans, elements (2t, g) and (2t + 1, g): exactly
// mma.m16n8k16's A fragment (row-major) and B fragment (B stored k-rows by n, read "col").
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// 16 bytes global -> shared, L2 only.
__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src));
}
// "memory": the unaligned path's loads of one chunk stay below the previous chunk's store (fewer registers).
__device__ __forceinline__ void st_shared16(uint32_t dst, const uint32_t (&v)[4]) {
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n"
                 :: "r"(dst), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]) : "memory");
}

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

// Thread t copies chunk t % CPR_A of A rows t / CPR_A + A_ROWS i and chunk t % CPR_B of B rows
// t / CPR_B + B_ROWS i of every k-tile; addresses are worked out once per block.
template <class C, class T, bool VEC>
struct Loader {
    const T* a_src;          // A[m0 + t / CPR_A][8 (t % CPR_A)]
    const T* b_src;          // B[t / CPR_B][n0 + 8 (t % CPR_B)]
    idx_t a_step, b_step, ldb;
    unsigned a_rows_ok;      // bit i: A row t / CPR_A + A_ROWS i exists
    int a_k, b_k, b_cols;    // k offsets in A's and B's tiles; B columns in range (0..8)
    bool b_full;             // all 8 of them: tested on its own, not as b_cols == 8 (below)
    uint32_t a_dst, b_dst;   // byte offsets of the first copies in a slot

    __device__ __forceinline__ Loader(const T* A, idx_t lda, const T* B, idx_t ldb_, int M, int N, int m0,
                                      int n0, int tid) {
        ldb = ldb_;
        const int ar = tid / C::CPR_A, ac = tid % C::CPR_A, br = tid / C::CPR_B, bc = tid % C::CPR_B;
        a_k = 8 * ac, b_k = br;
        a_rows_ok = 0;
#pragma unroll
        for (int i = 0; i < C::A_COPIES; ++i) a_rows_ok |= (m0 + ar + C::A_ROWS * i < M ? 1u : 0u) << i;
        a_src = A + (idx_t)min(m0 + ar, M - 1) * lda + a_k;   // clamped: only used for rows that exist
        a_step = (idx_t)C::A_ROWS * lda;
        b_cols = max(0, min(8, N - (n0 + 8 * bc)));
        // As in stages 09 and 13: ptxas may fold b_cols == 8 into the clamp's predicate output and branch the
        // 16-byte copy on it; memcheck, with torch's caching allocator off, caught this stage's 1x1x1 call
        // reading 16 bytes of a 2-byte B.  A separate compare keeps the copy's condition what the source says.
        b_full = N - (n0 + 8 * bc) >= 8;
        b_src = B + (idx_t)br * ldb + (b_cols ? n0 + 8 * bc : 0);
        b_step = (idx_t)C::B_ROWS * ldb;
        a_dst = (ar * C::LDA + 8 * ac) * 2;
        b_dst = C::A_BYTES + (br * C::LDB + 8 * bc) * 2;
    }

    // The unaligned path: n elements by 2-byte loads, zeros after them, one 16-byte shared store.
    __device__ __forceinline__ static void fill(uint32_t dst, const T* src, int n) {
        const unsigned short* s = reinterpret_cast<const unsigned short*>(src);
        uint32_t v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const uint32_t lo = 2 * e < n ? s[2 * e] : 0u, hi = 2 * e + 1 < n ? s[2 * e + 1] : 0u;
            v[e] = lo | (hi << 16);
        }
        st_shared16(dst, v);
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
            else fill(dst, src, n);
        }
        const T* b = b_src + (idx_t)kt * C::BK * ldb;
#pragma unroll
        for (int i = 0; i < C::B_COPIES; ++i) {
            const bool ok = kt * C::BK + b_k + i * C::B_ROWS < K && b_cols > 0;
            const uint32_t dst = slot + b_dst + i * C::B_ROWS * C::LDB * 2;
            if (VEC && ok && b_full) cp16(dst, b + i * b_step);
            else fill(dst, b + i * b_step, ok ? b_cols : 0);
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
#pragma unroll
    for (int i = 0; i < C::MI; ++i)
#pragma unroll
        for (int j = 0; j < 2 * C::NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

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
#pragma unroll
            for (int i = 0; i < C::MI; ++i)
#pragma unroll
                for (int j = 0; j < C::NJ; ++j) {
                    Elem<T>::mma(acc[i][2 * j], af[i], bf[j][0], bf[j][1]);
                    Elem<T>::mma(acc[i][2 * j + 1], af[i], bf[j][2], bf[j][3]);
                }
        }
    }
    async_copy::wait_all();   // nothing may still be writing shared memory when the block exits

    // Lane 4g + t holds D[g][2t, 2t+1] (elements 0, 1) and D[g+8][2t, 2t+1] (2, 3) of each m16n8 tile.
    const float alpha = (float)alpha_, beta = (float)beta_;
#pragma unroll
    for (int i = 0; i < C::MI; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const idx_t row = m0 + wm * C::WM + 16 * i + lane / 4 + 8 * h;
            if (row >= M) continue;
#pragma unroll
            for (int j = 0; j < 2 * C::NJ; ++j) {
                const int col = n0 + wn * C::WN + 8 * j + 2 * (lane % 4);
                float v0 = alpha * acc[i][j][2 * h], v1 = alpha * acc[i][j][2 * h + 1];
                T* d = D + row * ldd + col;
                if (VEC && col + 2 <= N) {   // ldd and D 16-byte aligned, col even: a 4-byte access
                    if (beta != 0.0f) {
                        const float2 c = Elem<T>::unpack(*reinterpret_cast<const uint32_t*>(Cm + row * ldc + col));
                        v0 = fmaf(beta, c.x, v0), v1 = fmaf(beta, c.y, v1);
                    }
                    *reinterpret_cast<uint32_t*>(d) = Elem<T>::pack(v0, v1);
                } else {
                    if (col < N) Elem<T>::store(d, beta != 0.0f ? fmaf(beta, Elem<T>::load(Cm + row * ldc + col), v0) : v0);
                    if (col + 1 < N)
                        Elem<T>::store(d + 1, beta != 0.0f ? fmaf(beta, Elem<T>::load(Cm + row * ldc + col + 1), v1) : v1);
                }
            }
        }
}

}  // namespace

// Dynamic shared memory per block: Cfg::SMEM_BYTES (study/registry.py MMA_SMEM).
#define MMA_ENTRY(NAME, CFG, T, VEC, MIN_BLOCKS)                                                                \
    extern "C" __global__ void __launch_bounds__(CFG::THREADS, MIN_BLOCKS)                                    \
    NAME(int M, int N, int K, double alpha, const T* __restrict__ A, idx_t lda, const T* __restrict__ B,     \
         idx_t ldb, double beta, const T* __restrict__ C, idx_t ldc, T* __restrict__ D, idx_t ldd) {         \
        gemm_mma<CFG, T, VEC>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, D, ldd);                          \
    }

#ifdef MMA_EXPLORE
// Candidates for tools/mma_probe.py (not registered; NOTES.md has their figures): the same kernel with padded
// rows (8 elements: every ldmatrix row 16 bytes further round the banks), and stage 13's geometry unswizzled.
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
