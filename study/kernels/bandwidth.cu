// Shared-memory and L2 bandwidth ceilings (not ladder stages): the two inner levels of the hierarchical
// roofline.  Each kernel streams 16-byte loads and folds them with XOR (one integer op per word, far below
// what the load path delivers), storing the fold only on a value that never occurs, so nothing is dropped.

// Shared memory: a block fills 32 KiB, then every warp reads 512 contiguous bytes per instruction (lane i
// takes chunk i: no two lanes of a quarter-warp share a bank).  Bytes = blocks * threads * iters * UNROLL * 16.
#define SMEM_CHUNKS 2048
#define UNROLL 16

extern "C" __global__ void smem_read(unsigned* out, int iters) {
    __shared__ uint4 buf[SMEM_CHUNKS];
    for (int i = threadIdx.x; i < SMEM_CHUNKS; i += blockDim.x) buf[i] = make_uint4(i, 3 * i, 5 * i, 7 * i);
    __syncthreads();
    uint4 acc = make_uint4(0, 0, 0, 0);
    int base = threadIdx.x;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const uint4 v = buf[(base + u * 128) & (SMEM_CHUNKS - 1)];
            acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
        }
        base = (base + 32) & (SMEM_CHUNKS - 1);   // moves on, so no load is loop-invariant
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0xdeadbeefu) out[blockIdx.x * blockDim.x + threadIdx.x] = acc.x;
}

// L2: `passes` sweeps over a buffer that fits in L2 (the caller sizes it well below the L2), each thread
// reading 16-byte chunks grid-strided with ld.global.cg (cached in L2, not L1), so after the first sweep every
// byte comes from L2.  Bytes = passes * n_chunks * 16.
extern "C" __global__ void l2_read(const uint4* __restrict__ src, long long n_chunks, int passes, unsigned* out) {
    uint4 acc = make_uint4(0, 0, 0, 0);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (int p = 0; p < passes; ++p) {
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_chunks; i += stride) {
            const uint4 v = __ldcg(&src[i]);
            acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
        }
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0xdeadbeefu) out[blockIdx.x * blockDim.x + threadIdx.x] = acc.x;
}
