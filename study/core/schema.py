"""The columns of reports/results.csv, one row per (implementation, dtype, shape, alpha, beta) measurement.

Shared by the sweep (which writes rows) and the report (which reads them), so the two cannot drift.
"""
from __future__ import annotations

RESULT_COLUMNS: tuple[str, ...] = (
    "timestamp",      # UTC ISO-8601, when the row was measured
    "impl",           # registry name, e.g. "cuda:03_smem_tiling", "cublas", "triton:tuned"
    "stage",          # "01".."NN" for ladder stages, "baseline" for cuBLAS and the tuned Triton matmul
    "stage_title",
    "backend",        # "cuda" | "triton" | "cublas"
    "dtype",          # input dtype: "fp32" | "fp16" | "bf16" | ...
    "precision",      # what the arithmetic really is: "fp32", "tf32", "fp16/fp32acc", ...
    "M", "N", "K",
    "shape_set",      # the preset the shape came from: "square", "llama3" (study/core/shapes.py), "custom"
    "alpha", "beta",
    "ms",             # median kernel time over `reps` timed runs (CUDA events, L2 flushed before each)
    "ms_p20", "ms_p80",
    "reps",
    "tflops",         # 2*M*N*K / ms
    "gbps",           # compulsory bytes / ms
    "intensity",      # 2*M*N*K / compulsory bytes (A, B, C if beta != 0, D), FLOP per byte
    "baseline_impl",  # the cuBLAS row of the same dtype and precision, timed adjacent to this one
    "pct_cublas",     # 100 * tflops / tflops of baseline_impl
    "relerr",         # ||D - D_ref||_F / ||D_ref||_F against a float64 reference
    "tol",            # the tolerance relerr was held to (per precision)
    "passed",         # relerr <= tol, no NaN, every element written
    "error",          # empty, or why the row failed (exception text, NaN count, ...)
    "registers", "smem_bytes", "spills",   # per thread / per block / bytes; empty for cuBLAS
    "sm_clock_mhz",   # mean SM clock sampled by NVML while this row was timed
    "gpu",
    "gpu_index",      # the GPU the row ran on: its CUDA index in the process (a torchrun rank's LOCAL_RANK)
    "gpu_uuid",       # and its UUID, unique across a host's and a cluster's GPUs (study/measure/shard.py)
    "commit",
    "impl_key",       # the implementation's code key when measured (study/measure/evidence.py): a row whose key is not the
                      # current one measured other code, and is stale (python -m study.evidence --stale)
    # A row whose mean SM clock fell below POWER_LIMITED_FRACTION (study/core/clock.py) of the GPU's maximum ran
    # power-limited: back to back, sustained tensor-core GEMMs pull the clock down.  Such a row is timed a second
    # time with the GPU left idle before each call (study/measure/timing.py), which keeps the clock up; both
    # figures are shown.
    "ms_idle", "ms_idle_p20", "ms_idle_p80",
    "sm_clock_idle_mhz",
    "host_ms",        # the host's time to issue one timed call (study/measure/timing.py); the events exclude it
)
# Columns added since the committed sweeps were measured: a results file without them reads them as blank, unremarked.
NEWER_COLUMNS: tuple[str, ...] = ("host_ms",)

# Precision -> largest relative Frobenius error accepted.  True fp32 FMA over K <= 16384 lands near
# 1e-6 (sequential-sum error grows like u*sqrt(K)); TF32 lands near 3e-4, so 2e-5 separates them.
TOLERANCE: dict[str, float] = {
    "fp32": 2e-5,
    "tf32": 2e-3,
    "fp16/fp32acc": 5e-3,
    "fp16": 1e-2,
    "bf16/fp32acc": 1e-2,
    # fp16 accumulation (WMMA f16 -> f16): the running sum is rounded to fp16 once per fragment k-step;
    # over K = 4099 in 16-deep steps that is ~2e-3 for randn inputs, so 1e-2 still catches a lost product.
    "fp16/fp16acc": 1e-2,
    "fp64": 1e-12,                   # IEEE fp64 FMA (DMMA or DFMA): ~1e-15 over K <= 16384
    "int8/int32acc": 0.0,            # integer pairs are exact: compared bit for bit
    "uint8/int32acc": 0.0,
    # Stage 15 (seed 002): fp32 inputs computed on tensor cores from split operands.  The TCEC and 3xTF32
    # splits must be as accurate as fp32 SIMT; Markidis-style accumulation inside the tensor cores and the
    # uncorrected fp16 rounding are the measurably worse variants the study exists to show.
    "fp16x3-tcec": 2e-5,
    "tf32x3": 2e-5,
    "fp16x3-markidis": 1e-4,
    "fp16-inputs": 2e-3,
    # The fp32-emulation shootout: three bf16 parts per value (bf16 keeps fp32's exponent), six or nine products.
    # Fused, with hi*hi promoted out of the tensor cores, they are fp32-accurate; composed from cuBLAS bf16 GEMMs,
    # every product is summed inside the tensor cores, and the truncation drifts with K as Markidis's does.
    "bf16x6": 2e-5,
    "bf16x9": 2e-5,
    "bf16x6-tcacc": 1e-4,
    "bf16x9-tcacc": 1e-4,
    # Triton's own input_precision="tf32x3": three TF32 products summed inside the tensor cores.  On rows and
    # columns 2^+-40 apart its relerr was 2.4x SGEMM's, so it is not held to fp32's.
    "tf32x3-tcacc": 1e-4,
    # Stage 16: e4m3 products are exact; D is bf16, whose rounding (relerr ~1.7e-3) is most of the error.
    # "fp32acc": the tensor core's partial sum promoted into fp32 every 128 k.  "tcacc": the whole K in the fp8
    # tensor core's accumulator (about 13 mantissa bits, truncating), whose error grows with K: DeepSeek-V3's report
    # (section 3.3.2) measured a maximum relative error near 2% at K = 4096 on an H800.
    "fp8e4m3-tensor/fp32acc": 1e-2,
    "fp8e4m3-row/fp32acc": 1e-2,
    "fp8e4m3-block/fp32acc": 1e-2,
    "fp8e4m3-tensor/tcacc": 1e-2,
}
# A method whose error drifts with K rather than walking like sqrt(K): Markidis-style accumulation inside the tensor
# cores.  On the H100 its relerr on randn inputs was 2^-28.1 K, to two digits, at every K from 128 to 28672 (1.0e-4
# at K = 28672, the Llama 3 70B down projection), so its tolerance is max(TOLERANCE, TOLERANCE_PER_K * K): four
# times that drift, and never looser than the fixed one.
TOLERANCE_PER_K: dict[str, float] = {"fp16x3-markidis": 2**-26, "bf16x6-tcacc": 2**-26, "bf16x9-tcacc": 2**-26,
                                     "tf32x3-tcacc": 2**-26, "fp8e4m3-tensor/tcacc": 2**-17}


def tolerance(precision: str, k: int | None = None) -> float:
    """The largest relative Frobenius error a product of depth k may have at this precision."""
    return max(TOLERANCE[precision], TOLERANCE_PER_K.get(precision, 0.0) * (k or 0))

# Precision -> (u_in, u_acc): the per-element error model beside TOLERANCE (study.core.verify.element_bound).
# u_in is the unit roundoff of what the method does to its inputs before multiplying (0 where the products are
# exact: fp16 and bf16 operands, fp32 FMA); u_acc that of its running sum.  An element may be off by
# ELEMENT_SIGMAS * (u_in + u_acc * sqrt(K)) times the l2 norm of its terms, plus the output's own rounding.
# Independent rounding errors add like that norm (a sum of K of them grows like sqrt(K)); 8 is far past the
# largest of 2^28 Gaussian draws (~6 sigma).  u_acc is 2^-23, not 2^-24: tensor-core accumulators truncate.
ELEMENT_SIGMAS = 8.0
ELEMENT_MODEL: dict[str, tuple[float, float]] = {
    "fp32": (0.0, 2**-23),
    "tf32": (2**-10, 2**-23),            # inputs cut to 10 explicit mantissa bits (by truncation, on some paths)
    "fp16/fp32acc": (0.0, 2**-23),
    "fp16": (0.0, 2**-11),
    "bf16/fp32acc": (0.0, 2**-23),
    "fp16/fp16acc": (0.0, 2**-11),       # the running sum itself is fp16
    "fp64": (0.0, 2**-52),
    "int8/int32acc": (0.0, 0.0),         # exact
    "uint8/int32acc": (0.0, 0.0),
    "fp16x3-tcec": (2**-21, 2**-23),     # hi + lo keep 22 bits of each input
    "tf32x3": (2**-21, 2**-23),
    "fp16x3-markidis": (2**-14, 2**-23), # unscaled lo goes subnormal in fp16 for small inputs
    "fp16-inputs": (2**-11, 2**-23),
    "bf16x6": (2**-22, 2**-23),          # the three dropped products are ~2^-24 of the whole
    "bf16x9": (2**-22, 2**-23),
    "bf16x6-tcacc": (2**-14, 2**-23),    # summed inside the tensor cores, as Markidis
    "bf16x9-tcacc": (2**-14, 2**-23),
    "tf32x3-tcacc": (2**-14, 2**-23),
    # fp8: the tensor core's partial of each 128-deep chunk keeps ~13 bits (taken as an input-side error); promoted,
    # the running sum is fp32.  Unpromoted, the running sum itself keeps ~13 bits.
    "fp8e4m3-tensor/fp32acc": (2**-11, 2**-23),
    "fp8e4m3-row/fp32acc": (2**-11, 2**-23),
    "fp8e4m3-block/fp32acc": (2**-11, 2**-23),
    "fp8e4m3-tensor/tcacc": (2**-11, 2**-13),
}
