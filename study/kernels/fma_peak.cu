// FP32 FMA ceiling micro-benchmark (not a ladder stage).
//
// Each thread runs ILP independent FMA chains so the FP32 pipes never wait on a dependency; operands stay
// in registers, so nothing but the FMA units is exercised.  FLOPs = 2 * ILP * iters * threads.
// The result is stored (conditionally on a value that never occurs) so the compiler cannot drop the work.
#define ILP 8

extern "C" __global__ void fma_peak(float* out, int iters, float seed) {
    float x[ILP];
#pragma unroll
    for (int i = 0; i < ILP; ++i) x[i] = seed + threadIdx.x + i;
    const float a = 0.999999f, b = 1e-7f;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
#pragma unroll
            for (int i = 0; i < ILP; ++i) x[i] = fmaf(x[i], a, b);
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < ILP; ++i) s += x[i];
    if (s == -1.0f) out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
