"""The roofline's ceilings, measured on the GPU at hand, with the datasheet's figures beside them.

* DRAM bandwidth: a large device-to-device copy, bytes read + written.
* L2 and shared-memory bandwidth: study/kernels/bandwidth.cu, 16-byte loads streamed from each level (the
  inner ceilings of the hierarchical roofline).
* FP32 FMA peak: study/kernels/fma_peak.cu, independent FMA chains on every lane.
* Tensor-core peaks: the largest cuBLAS GEMM (8192^3) for fp16, bf16, tf32 and fp64, torch._int_mm for int8, and
  for fp8 e4m3 the registry's cublas:fp8 (torch._scaled_mm, per-tensor scales, fp32 accumulation, bf16 out).
  A library GEMM reaches ~75-85% of the datasheet rate, so these are "achievable" ceilings.
"""
from __future__ import annotations

from pathlib import Path

import torch

from study.core.paths import BENCH_DIR
from study.launch.cublas import precision_flags
from study.measure.timing import L2Flusher, bench

# Dense (non-sparse) rates: the datasheets print the tensor-core figures "with sparsity", i.e. doubled.
_H100_SXM = "NVIDIA H100 Tensor Core GPU datasheet (SXM5; tensor figures halved from the with-sparsity values)"
_H100_PCIE = "NVIDIA H100 Tensor Core GPU datasheet (PCIe; tensor figures halved from the with-sparsity values)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (SXM; tensor figures halved from the with-sparsity values)"
DATASHEET = {
    "H100 PCIe": dict(dram_gbps=2000, fp32_fma_tflops=51, tf32_tc_tflops=378, fp16_tc_tflops=756,
                      bf16_tc_tflops=756, int8_tc_tops=1513, fp8_tc_tflops=1513, fp64_tc_tflops=51,
                      source=_H100_PCIE),
    "H100": dict(dram_gbps=3350, fp32_fma_tflops=67, tf32_tc_tflops=494.5, fp16_tc_tflops=989.5,
                 bf16_tc_tflops=989.5, int8_tc_tops=1979, fp8_tc_tflops=1979,
                 fp64_tc_tflops=67, source=_H100_SXM),
    "H200": dict(dram_gbps=4800, fp32_fma_tflops=67, tf32_tc_tflops=494.5, fp16_tc_tflops=989.5,
                 bf16_tc_tflops=989.5, int8_tc_tops=1979, fp8_tc_tflops=1979,
                 fp64_tc_tflops=67, source=_H200),
}


def datasheet(gpu_name: str) -> dict:
    for key in DATASHEET:              # most specific first ("H100 PCIe" before "H100")
        if key in gpu_name:
            return dict(DATASHEET[key])
    return {}


def _timed(fn, reps: int, device, clock) -> tuple[float, float | None]:
    """(median ms, mean SM clock) over exactly `reps` calls, timed like every row of the sweep."""
    t = bench(fn, L2Flusher(device), clock, min_reps=reps, max_reps=reps)
    return t.ms, t.sm_clock_mhz


def dram_gbps(device, clock, nbytes: int = 2 << 30):
    x = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    y = torch.empty_like(x)
    ms, mhz = _timed(lambda: y.copy_(x), 20, device, clock)
    return 2 * nbytes / (ms * 1e6), mhz


def _bench_kernel(source: str, entry: str, device):
    """An entry of one of study/kernels/'s micro-benchmarks, compiled for the device and loaded."""
    from study.launch import driver
    return driver.kernel(BENCH_DIR / source, entry, device, driver.params(BENCH_PARAMS[entry]))


def fp32_fma_tflops(device, clock):
    from study.launch import driver as cuda_launch
    k = _bench_kernel("fma_peak.cu", "fma_peak", device)
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    blocks, threads, iters = sms * 8, 256, 4096
    out = torch.empty(blocks * threads, device=device)
    run = cuda_launch.prepared(k, (blocks, 1, 1), (threads, 1, 1), 0,
                               dict(out=out, iters=iters, seed=1.0), device)
    ms, mhz = _timed(run, 10, device, clock)
    ilp, unroll = 8, 16                     # must match fma_peak.cu
    return 2 * ilp * unroll * iters * blocks * threads / (ms * 1e9), mhz


# study/kernels/mma_peak.cu: entry -> (ceiling name, 2 M N K of one instruction, operand bit pattern: 1.0 in
# every element of the type, XORed with the lane index in the kernel, so no operand is NaN or inf).
MMA_PEAK = {
    "mma_peak_f16": ("mma_sync_fp16_tflops", 2 * 16 * 8 * 16, 0x3C003C00),    # m16n8k16 f16 -> f32
    "mma_peak_bf16": ("mma_sync_bf16_tflops", 2 * 16 * 8 * 16, 0x3F803F80),  # m16n8k16 bf16 -> f32
    "mma_peak_tf32": ("mma_sync_tf32_tflops", 2 * 16 * 8 * 8, 0x3F800000),   # m16n8k8 tf32 -> f32
    "mma_peak_s8": ("mma_sync_int8_tops", 2 * 16 * 8 * 32, 0x01010101),        # m16n8k32 s8 -> s32
}


# Each micro-benchmark entry's parameters, as study/kernels/*.cu declare them.
BENCH_PARAMS = {"fma_peak": "out:ptr iters:int seed:float", "smem_read": "out:ptr iters:int",
                "l2_read": "src:ptr n_chunks:i64 passes:int out:ptr",
                **{e: "out:ptr iters:int seed:int" for e in MMA_PEAK}}


def mma_sync_peak(device, clock, clocks: dict | None = None) -> dict:
    """{name: TFLOP/s (TOP/s for s8)} of mma.sync alone: independent chains on every warp (mma_peak.cu), the
    ceiling of the mma.sync stages (12, 13) on a GPU where cuBLAS runs wgmma.  `clocks`, if given, receives
    the mean SM clock (MHz) of each."""
    from study.launch import driver as cuda_launch
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    blocks, threads, iters = sms * 4, 256, 2048
    ilp, unroll = 8, 8                      # must match mma_peak.cu
    out = torch.empty(blocks * threads, dtype=torch.int32, device=device)
    result = {}
    for entry, (name, flops, seed) in MMA_PEAK.items():
        k = _bench_kernel("mma_peak.cu", entry, device)
        run = cuda_launch.prepared(k, (blocks, 1, 1), (threads, 1, 1), 0,
                                   dict(out=out, iters=iters, seed=seed), device)
        run()
        ms, mhz = _timed(run, 10, device, clock)
        result[name] = flops * ilp * unroll * iters * blocks * (threads // 32) / (ms * 1e9)
        if clocks is not None:
            clocks[name] = mhz
    return result


def smem_gbps(device, clock):
    """Aggregate shared-memory read bandwidth: bandwidth.cu's smem_read, 4 blocks of 256 per SM."""
    from study.launch import driver as cuda_launch
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    blocks, threads, iters, unroll = sms * 4, 256, 8192, 16          # unroll must match bandwidth.cu
    out = torch.empty(blocks * threads, dtype=torch.int32, device=device)
    k = _bench_kernel("bandwidth.cu", "smem_read", device)
    run = cuda_launch.prepared(k, (blocks, 1, 1), (threads, 1, 1), 0, dict(out=out, iters=iters), device)
    ms, mhz = _timed(run, 10, device, clock)
    return blocks * threads * iters * unroll * 16 / (ms * 1e6), mhz


def l2_gbps(device, clock, nbytes: int = 16 << 20, passes: int = 50):
    """L2 read bandwidth: bandwidth.cu's l2_read, `passes` sweeps over 16 MiB (a third of an H100's L2, so it
    stays resident whichever half of the L2 holds it); the first sweep's DRAM reads are 2% of the bytes."""
    from study.launch import driver as cuda_launch
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    src = torch.randint(0, 2**31 - 1, (nbytes // 4,), dtype=torch.int32, device=device)
    blocks, threads = sms * 8, 256
    out = torch.empty(blocks * threads, dtype=torch.int32, device=device)
    k = _bench_kernel("bandwidth.cu", "l2_read", device)
    run = cuda_launch.prepared(k, (blocks, 1, 1), (threads, 1, 1), 0,
                               dict(src=src, n_chunks=nbytes // 16, passes=passes, out=out), device)
    ms, mhz = _timed(run, 10, device, clock)
    return passes * nbytes / (ms * 1e6), mhz


def gemm_tflops(device, clock, dtype: torch.dtype, n: int = 8192, tf32: bool = False):
    # Random data, never zeros (zeros run measurably faster); int8 over its whole range, not randn's few values.
    rand = (lambda: torch.randint(-128, 128, (n, n), device=device, dtype=torch.int8)) if dtype == torch.int8 \
        else (lambda: torch.randn(n, n, device=device).to(dtype))
    a, b = rand(), rand()
    if dtype == torch.int8:
        bt = b.t().contiguous().t()   # cuBLASLt's int8 kernels want B column-major ("TN")
        mm = lambda: torch._int_mm(a, bt)
    else:
        mm = lambda: a @ b
    with precision_flags(tf32):
        ms, mhz = _timed(mm, 20, device, clock)
    return 2 * n**3 / (ms * 1e9), mhz


def fp8_tflops(device, clock, n: int = 8192):
    """cuBLASLt's fp8 e4m3 GEMM at n^3 (registry "cublas:fp8": torch._scaled_mm, per-tensor scales, fp32
    accumulation, bf16 D), on randn operands quantized to e4m3 (study.core.fp8), the call checked once."""
    from study import registry
    from study.core import fp8
    impl = registry.get("cublas:fp8")
    g = torch.Generator(device=device).manual_seed(0)
    a, bt = (torch.randn(n, n, generator=g, device=device) for _ in range(2))
    qa, sa = fp8.quantize_a(a, "tensor")
    qb, sb = fp8.quantize_b(bt.t(), "tensor")           # K-major B, as the contract wants
    run, _ = impl.prepare(qa, qb, scale_a=sa, scale_b=sb)
    ms, mhz = _timed(run, 20, device, clock)
    return 2 * n**3 / (ms * 1e9), mhz


def tcec_ceiling(device, clock, n: int):
    """Stage 15's own ceiling at n^3: cuBLAS's fp16 GEMM over K = 3n with fp32 output does exactly TCEC's three
    products' multiply-adds, with no split, scaling or promotion.  As TFLOP/s of fp32 work (2 n^3 per call)."""
    a = torch.randn(n, 3 * n, device=device).half()
    b = torch.randn(3 * n, n, device=device).half()
    ms, mhz = _timed(lambda: torch.mm(a, b, out_dtype=torch.float32), 20, device, clock)
    return 2 * n**3 / (ms * 1e9), mhz


def tcec_passes_ms(device, clock, n: int):
    """The split passes of cuda:15_tcec at n^3 alone (ms): the part of its time that is not the GEMM."""
    from study import registry
    from study.core.contract import validate
    impl = registry.get("cuda:15_tcec")
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    p = validate(impl.name, impl.dtypes, impl.out_dtypes, a, b)
    return _timed(impl.launch.passes(impl.name, p), 20, device, clock)


class _Kept(Exception):
    """The mma.sync peaks a kept measurement already holds."""


def measure(device, clock, kept: dict | None = None) -> dict:
    """Every ceiling, each with the mean SM clock NVML saw while it ran.  kept: an earlier measurement of this
    GPU whose ceilings stand (a resumed sweep's): only the compute and memory ceilings it lacks are measured."""
    gpu = torch.cuda.get_device_name(device)
    probes = {
        "dram_gbps": (lambda: dram_gbps(device, clock), "device-to-device copy of 2 GiB (bytes read + written), median of 20"),
        "smem_gbps": (lambda: smem_gbps(device, clock), "bandwidth.cu smem_read: 16-byte conflict-free shared loads, 4 blocks of 256 per SM, median of 10"),
        "l2_gbps": (lambda: l2_gbps(device, clock), "bandwidth.cu l2_read: 50 sweeps of 16-byte ld.global.cg over 16 MiB, median of 10"),
        "fp32_fma_tflops": (lambda: fp32_fma_tflops(device, clock), "fma_peak.cu: 8 independent FMA chains per thread, 8 blocks of 256 per SM, median of 10"),
        "tf32_tc_tflops": (lambda: gemm_tflops(device, clock, torch.float32, tf32=True), "cuBLAS 8192^3 fp32 with TF32 on, median of 20"),
        "fp16_tc_tflops": (lambda: gemm_tflops(device, clock, torch.float16), "cuBLAS 8192^3 fp16, median of 20"),
        "bf16_tc_tflops": (lambda: gemm_tflops(device, clock, torch.bfloat16), "cuBLAS 8192^3 bf16, median of 20"),
        "int8_tc_tops": (lambda: gemm_tflops(device, clock, torch.int8), "torch._int_mm 8192^3 int8->int32, median of 20"),
        "fp64_tc_tflops": (lambda: gemm_tflops(device, clock, torch.float64), "cuBLAS 8192^3 fp64 (DGEMM), median of 20"),
        "fp8_tc_tflops": (lambda: fp8_tflops(device, clock),
                          "cuBLASLt 8192^3 fp8 e4m3 (torch._scaled_mm, per-tensor scales, fp32 accumulation, bf16 "
                          "out; registry cublas:fp8), median of 20"),
    }
    measured, clocks, method, errors = {}, {}, {}, {}
    if kept:
        have = {k for k, v in kept["measured"].items() if v is not None and k in kept["sm_clock_mhz"]}
        measured, clocks = dict(kept["measured"]), dict(kept["sm_clock_mhz"])
        method = dict(kept.get("method", {}))
        probes = {k: v for k, v in probes.items() if k not in have}
    for key, (fn, how) in probes.items():
        try:
            measured[key], clocks[key] = fn()
            method[key] = how
        except Exception as e:  # one missing ceiling should not cost the others
            measured[key], errors[key] = None, f"{type(e).__name__}: {e}"
    try:
        if kept and all(name in have for name, _, _ in MMA_PEAK.values()):
            raise _Kept
        measured.update(mma_sync_peak(device, clock, clocks))
        method.update({name: "mma_peak.cu: 8 independent mma.sync chains per warp, 4 blocks of 256 per SM, median "
                             "of 10 (the issue peak of stages 12-13)" for name, _, _ in MMA_PEAK.values()})
    except _Kept:
        pass
    except Exception as e:
        errors["mma_sync"] = f"{type(e).__name__}: {e}"
    return {"gpu": gpu, "measured": measured, "datasheet": datasheet(gpu), "sm_clock_mhz": clocks,
            "method": method, "errors": errors, "tcec": tcec_probe(device, clock)}


# Stage 15's own probe, kept apart from the roofline's ceilings (the report draws every "measured" rate as a roof).
TCEC_SIZES = (4096, 8192)


def tcec_probe(device, clock) -> dict:
    """{"ceiling_<n>_tflops", "passes_<n>_ms", "sm_clock_mhz": {...}, "method": {...}, "errors": {...}}."""
    out, clocks, method, errors = {}, {}, {}, {}
    for n in TCEC_SIZES:
        for key, fn, how in (
                (f"ceiling_{n}_tflops", tcec_ceiling,
                 f"cuBLAS fp16 GEMM {n}x{n}x{3 * n}, fp32 output (torch.mm out_dtype), as TFLOP/s of the fp32 GEMM "
                 f"{n}^3 it stands for (TCEC's three products), median of 20"),
                (f"passes_{n}_ms", tcec_passes_ms,
                 f"cuda:15_tcec's passes alone at {n}^3 (zeroing, A's split, B's column maxima, B's split), "
                 f"median of 20")):
            try:
                out[key], clocks[key] = fn(device, clock, n)
                method[key] = how
            except Exception as e:  # the probe is the stage's: the ceilings above stand without it
                out[key], errors[key] = None, f"{type(e).__name__}: {e}"
    return {**out, "sm_clock_mhz": clocks, "method": method, "errors": errors}


def write(path: Path, ceilings: dict) -> None:
    import json
    path.write_text(json.dumps(ceilings, indent=2))
