"""Every implementation, declared once.  This is also the study's public Python API.

    import study
    for impl in study.implementations():
        print(impl.name, impl.backend, impl.dtypes)
    d = study.get("cuda:03_smem_tiling")(a, b)                 # D = A @ B
    d = study.get("triton:tuned")(a, b, c, alpha=2.0, beta=0.5) # D = 2 A @ B + 0.5 C
    qa, sa = study.quantize_a(x, "block")                      # fp8 e4m3, K-major, and its 1x128 scales
    qb, sb = study.quantize_b(w, "block")                      # (K x N, K-major) and its 128x128 scales
    d = study.get("cuda:16_fp8-block")(qa, qb, scale_a=sa, scale_b=sb)   # bf16 D of the dequantized product

An implementation is a stage's CUDA kernel, its Triton or Gluon counterpart, or a baseline (cuBLAS through
torch, the tuned Triton matmul).  The runner, the sweep and the report only ever see `Impl` objects: adding a
stage means adding its kernel files (cuda_kernels/, triton_kernels/, triton_kernels/gluon/), its row of the
stage table (study/core/stages.py) and one `_stage(...)` line below.  How each is launched lives in
study/launch/launchers.py; a stage's unregistered tuning variants are declared here too (VARIANTS).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from study.core.contract import validate
from study.core.fp8 import validate_scaled
from study.core.paths import BENCH_DIR, CUDA_DIR, ROOT, TRITON_DIR, source_closure
from study.core.stages import STAGES, Stage, stage
from study.launch.launchers import (CudaBatchedLaunch, CudaDispatch, CudaFp8BulkLaunch, CudaFp8Launch,
                                    CudaFp8TmaOnlyLaunch, CudaLaunch, CudaModelDispatch, CudaPresplitLaunch,
                                    CudaSplitKLaunch, CudaSplitTmaLaunch, CudaTmaLaunch, CudaTypedLaunch, TorchLaunch,
                                    TritonLaunch)

# Input dtype -> what the arithmetic is.  "fp32" means IEEE fp32 FMA: never TF32 under another name.
FP32 = {"fp32": "fp32"}
TF32 = {"fp32": "tf32"}
HALF = {"fp16": "fp16/fp32acc", "bf16": "bf16/fp32acc"}


@dataclass(frozen=True, eq=False)
class Impl:
    name: str
    backend: str                           # "cuda" | "triton" | "gluon" | "cublas"
    stage: Stage | None                    # None for baselines
    dtypes: dict[str, str]                 # input dtype -> precision label
    launch: CudaLaunch | CudaDispatch | TritonLaunch | TorchLaunch
    sources: tuple[Path, ...]
    title: str = ""
    out_dtypes: dict[str, str] = field(default_factory=dict)
    layouts: tuple[str, ...] = ("row-major",)

    def __call__(self, a, b, c=None, alpha=1.0, beta=0.0, out=None):
        """D = alpha * A @ B + beta * C, checked against the contract before launch; returns D."""
        run, d = self.prepare(a, b, c, alpha, beta, out)
        run()
        return d

    def prepare(self, a, b, c=None, alpha=1.0, beta=0.0, out=None):
        """Check the call once and return (launch, D): `launch()` re-runs exactly this GEMM with no host-side
        checks, which is what the runner times."""
        from triton_kernels._common import interpreting
        p = validate(self.name, self.dtypes, self.out_dtypes, a, b, c, alpha, beta, out, layouts=self.layouts,
                     allow_cpu=self.backend == "triton" and interpreting())   # Gluon has no interpreter
        return self.launch.bind(self.name, p), p.out

    def batched(self, a, b, out=None):
        """D[i] = A[i] @ B[i] for a batch (A: BxMxK, B: BxKxN, contiguous; D into `out` if given): seed 002's
        Figure 8 workload.  A launcher with a batched grid (`launch.batched`) runs it as one launch; any other
        runs one GEMM per matrix, checked like every call."""
        import torch
        if a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]:
            raise ValueError(f"{self.name}: batched needs BxMxK and BxKxN, got {tuple(a.shape)} and {tuple(b.shape)}")
        if hasattr(self.launch, "batched"):
            return self.launch.batched(self, a, b, out)
        if out is None:
            return torch.stack([self(x, y) for x, y in zip(a, b)])
        for x, y, o in zip(a, b, out):
            self(x, y, out=o)
        return out

    @property
    def stage_label(self) -> str:
        return self.stage.number if self.stage else "baseline"

    def precision(self, dtype: str) -> str:
        return self.dtypes[dtype]


@dataclass(frozen=True, eq=False)
class ScaledImpl(Impl):
    """An fp8 GEMM (stage 16): e4m3 A and B, K-major, each with fp32 scales of one granularity, `scaling`
    (study/core/fp8.py):  D = alpha * (A * scale_a) @ (B * scale_b) + beta * C."""
    scaling: str = "tensor"

    def __call__(self, a, b, c=None, alpha=1.0, beta=0.0, out=None, *, scale_a=None, scale_b=None):
        run, d = self.prepare(a, b, c, alpha, beta, out, scale_a=scale_a, scale_b=scale_b)
        run()
        return d

    def prepare(self, a, b, c=None, alpha=1.0, beta=0.0, out=None, *, scale_a=None, scale_b=None):
        from triton_kernels._common import interpreting
        p = validate_scaled(self.name, self.scaling, self.dtypes, self.out_dtypes, a, b, c, alpha, beta, out,
                            scale_a, scale_b, allow_cpu=self.backend == "triton" and interpreting())
        return self.launch.bind(self.name, p), p.out

    def batched(self, a, b, out=None):
        raise TypeError(f"{self.name}: an fp8 GEMM has no batched form")



def _cuda_sources(name: str) -> tuple[Path, ...]:
    return tuple(source_closure(CUDA_DIR / name))


def _triton_sources(module: str, *uses: str) -> tuple[Path, ...]:
    """A Triton stage's file, the files of earlier stages it imports (`uses`), and the shared helpers."""
    return (TRITON_DIR / f"{module}.py", *(TRITON_DIR / f"{u}.py" for u in uses), TRITON_DIR / "_common.py")


def _gluon_sources(key: str, *uses: str) -> tuple[Path, ...]:
    """A Gluon stage's file, the files of earlier stages it imports (`uses`), and the shared helpers."""
    return (TRITON_DIR / "gluon" / f"{key}.py", *(TRITON_DIR / "gluon" / f"{u}.py" for u in uses),
            TRITON_DIR / "gluon" / "_common.py", TRITON_DIR / "_common.py")


def _stage(number: str, cuda: CudaLaunch | CudaDispatch, dtypes: dict[str, str], gluon: bool = False) -> list[Impl]:
    """A ladder stage: its CUDA kernel, the Triton module of the same number and name, and (from stage 03
    on) the Gluon module of that name under triton_kernels/gluon/."""
    s = stage(number)
    source = (cuda.choices[0] if isinstance(cuda, CudaDispatch) else cuda).source
    assert source == f"{s.key}.cu", (source, s.key)
    impls = [
        Impl(f"cuda:{s.key}", "cuda", s, dtypes, cuda, _cuda_sources(source), s.title),
        Impl(f"triton:{s.key}", "triton", s, dtypes, TritonLaunch(s.key), _triton_sources(s.key), s.title),
    ]
    if gluon:
        impls.append(Impl(f"gluon:{s.key}", "gluon", s, dtypes, TritonLaunch(f"gluon.{s.key}"),
                          _gluon_sources(s.key), s.title))
    return impls


def _simt(source: str, entry: str, tile: int | tuple[int, int], threads: int, vec: bool = False) -> CudaLaunch:
    """An fp32 stage from 04 on: one 1-D block of `threads` per tile of D (square if one number)."""
    return CudaLaunch(source, entry, (threads, 1, 1), tile if isinstance(tile, tuple) else (tile, tile),
                      unaligned_entry=f"{entry}_unaligned" if vec else "")


DISPATCH_K = 67     # K of the calls that reach each tile of a dispatch (tests, sanitizer): three k-tiles of 32, ragged

# Stage 09's shape classes, largest first: (BM, BN, threads).
BEST_TILES = ((128, 256, 256), (128, 128, 128), (64, 64, 128))

# Tensor-core stages 10-13.  Input dtype -> (precision label, output dtype, the .cu file's type-pair tag).
# Stage 10 follows seed 003: D (and C) have the accumulator's type, so fp16 -> fp32 reads fp16 A and B and
# writes fp32 D.  Stages 11-13 follow cuBLAS's HGEMM instead: fp32 accumulation, D in the input dtype.
WMMA_PAIRS = {
    "fp16": ("fp16/fp32acc", "fp32", "f16f32"),
    "bf16": ("bf16/fp32acc", "fp32", "bf16f32"),
    "fp32": ("tf32", "fp32", "tf32f32"),
    "int8": ("int8/int32acc", "int32", "i8i32"),
    "uint8": ("uint8/int32acc", "int32", "u8i32"),
    "fp64": ("fp64", "fp64", "f64f64"),
}
WMMA_F16ACC = {"fp16": ("fp16/fp16acc", "fp16", "f16f16")}
HALF_IO = {"fp16": ("fp16/fp32acc", "fp16", "f16"), "bf16": ("bf16/fp32acc", "bf16", "bf16")}
HALF_IO_TAGS = tuple((d, v[2]) for d, v in HALF_IO.items())
BOTH_LAYOUTS = ("row-major", "col-major")
ALL_AB = ("rr", "rc", "cr", "cc")


def _pairs(table: dict, only=None) -> dict:
    return {d: v for d, v in table.items() if only is None or d in only}


def _tc_impl(name: str, backend: str, s: Stage, pairs: dict, launch, sources, title: str = "",
             layouts: tuple[str, ...] = ("row-major",)) -> Impl:
    return Impl(name, backend, s, {d: v[0] for d, v in pairs.items()}, launch, sources, title or s.title,
                out_dtypes={d: v[1] for d, v in pairs.items() if v[1] != d}, layouts=layouts)


def _cuda_tc(source: str, entry: str, pairs: dict, block: int, tile: tuple[int, int],
             layouts: tuple[str, ...] = ("rr",), vec: bool = False) -> CudaTypedLaunch:
    return CudaTypedLaunch(source, entry, (block, 1, 1), tile,
                           pairs=tuple((d, v[2]) for d, v in pairs.items()), layouts=layouts, vec=vec)


# --- stage 10: WMMA over seed 003's type pairs (cuda_kernels/10_wmma.cu, triton_kernels/10_wmma.py,
# triton_kernels/gluon/10_wmma.py).  Fragment shape per variant: the default entry uses 16x16x16 (16x16x8 for
# tf32, 8x8x4 for fp64); the -m32n8k16 and -m8n32k16 variants the API's other two shapes.
WMMA_SHAPED = ("fp16", "bf16", "int8", "uint8")


def _wmma_stage() -> list[Impl]:
    s = stage("10")
    src, tri, glu = f"{s.key}.cu", _triton_sources(s.key), _gluon_sources(s.key)
    impls = []
    for suffix, pairs, entry in (("", WMMA_PAIRS, "wmma_{pair}_{ab}"),
                                 ("-f16acc", WMMA_F16ACC, "wmma_{pair}_{ab}"),
                                 ("-m32n8k16", _pairs(WMMA_PAIRS, WMMA_SHAPED), "wmma_m32n8k16_{pair}_{ab}"),
                                 ("-m8n32k16", _pairs(WMMA_PAIRS, WMMA_SHAPED), "wmma_m8n32k16_{pair}_{ab}")):
        cuda = _cuda_tc(src, entry, pairs, 128, (64, 64), layouts=ALL_AB)
        impls.append(_tc_impl(f"cuda:{s.key}{suffix}", "cuda", s, pairs, cuda, _cuda_sources(src),
                              f"{s.title}{' (' + suffix[1:] + ')' if suffix else ''}", BOTH_LAYOUTS))
    no_u8 = _pairs(WMMA_PAIRS, ("fp16", "bf16", "fp32", "int8", "fp64"))
    impls += [
        _tc_impl(f"triton:{s.key}", "triton", s, no_u8, TritonLaunch(s.key), tri, layouts=BOTH_LAYOUTS),
        _tc_impl(f"triton:{s.key}-f16acc", "triton", s, WMMA_F16ACC, TritonLaunch(s.key, "gemm_f16acc"), tri,
                 f"{s.title} (f16acc)", BOTH_LAYOUTS),
        _tc_impl(f"gluon:{s.key}", "gluon", s, _pairs(WMMA_PAIRS, ("fp16", "bf16", "fp32", "int8")),
                 TritonLaunch(f"gluon.{s.key}"), glu, layouts=BOTH_LAYOUTS),
    ]
    return impls


# --- stages 11-13: fp16 and bf16 in, fp32 accumulation, D in the input dtype (as cuBLAS HGEMM).
# Each .cu file has one entry per dtype ({pair} = "f16" | "bf16") and its "_unaligned" twin.


def _half_stage(number: str, cuda: CudaTypedLaunch | CudaDispatch, triton_uses: tuple[str, ...] = (),
                gluon_uses: tuple[str, ...] = ()) -> list[Impl]:
    """A stage of fp16/bf16 in, fp32 accumulation; its Triton and Gluon files may import earlier stages'."""
    s = stage(number)
    return [
        _tc_impl(f"cuda:{s.key}", "cuda", s, HALF_IO, cuda, _cuda_sources(f"{s.key}.cu")),
        _tc_impl(f"triton:{s.key}", "triton", s, HALF_IO, TritonLaunch(s.key), _triton_sources(s.key, *triton_uses)),
        _tc_impl(f"gluon:{s.key}", "gluon", s, HALF_IO, TritonLaunch(f"gluon.{s.key}"),
                 _gluon_sources(s.key, *gluon_uses)),
    ]


# Stage 13's cp.async kernel: the registered stage, and the TMA form's path for unaligned operands.
SWIZZLE = _cuda_tc("13_swizzle.cu", "mma_swizzle_{pair}", HALF_IO, 256, (128, 256), vec=True)


def _swizzle_tma() -> Impl:
    """Stage 13's kernel fed by the copy engine (TMA) in a persistent grid: the same swizzle, ldmatrix and
    mma.sync, with the ring handed over by mbarriers instead of a block barrier."""
    s = stage("13")
    tma = CudaTmaLaunch(SWIZZLE.source, "mma_swizzle_tma_{pair}", (384, 1, 1), (128, 256),
                        pairs=SWIZZLE.pairs, cluster=1, unaligned=SWIZZLE)
    return _tc_impl(f"cuda:{s.key}-tma", "cuda", s, HALF_IO, tma, _cuda_sources(tma.source),
                    f"{s.title} (TMA-fed, persistent)")


# Stage 14: wgmma fed by TMA (cuda_kernels/14_wgmma.cu), one registered form per technique added; calls whose
# operands a tensor map cannot take go to stage 13's cp.async kernel.
def _wgmma(entry: str, block: int, tile: tuple[int, int], persistent: bool = True, **kw) -> CudaTmaLaunch:
    """A launch of cuda_kernels/14_wgmma.cu: A in boxes of (BM rows, 64 k), B in 64x64 boxes.  `persistent` is the
    kernel's own Shape field: a kernel without it computes blockIdx's tile only, so its grid has a block per tile."""
    return CudaTmaLaunch("14_wgmma.cu", entry, (block, 1, 1), tile, pairs=HALF_IO_TAGS, a_box=(tile[0], 64),
                         b_box=(64, 64), unaligned=SWIZZLE, persistent=persistent, **kw)


# The last form's two tiles, 256x192 in clusters of 2 and 128x256: the time per output of each at equal waves
# (the H100 probes of docs/14_wgmma.md, "A 256x192 tile ...": the bigger tile 0.6-1.3 points faster at 4096x6144x4096,
# 0.6-7.4 at 6144^3, and about as much at 8192^3 despite its 2.3% worse waves).  The launcher takes the one of
# least modelled time.
WIDE_COST = (0.96, 1.0)
WGMMA_WIDE = _wgmma("wgmma_wide_{pair}", 384, (256, 192), cluster=2, d_box=(64, 64), spills_ok=True, balance=True)
WGMMA_TMA = _wgmma("wgmma_tma_{pair}", 384, (128, 256), d_box=(64, 64), balance=True)


def _wgmma_stage() -> list[Impl]:
    s = stage("14")
    src = f"{s.key}.cu"
    ws = dict(block=384, tile=(128, 256))
    forms = [   # (name suffix, launch, title): the ladder, one technique a step
        ("-1wg", _wgmma("wgmma_1wg_{pair}", 128, (64, 256), False), "one warpgroup, TMA"),
        ("-ws", _wgmma("wgmma_ws_{pair}", **ws, persistent=False), "producer + two consumer warpgroups"),
        ("-persistent", _wgmma("wgmma_persistent_{pair}", **ws), "warp-specialized, persistent"),
        ("-cluster", _wgmma("wgmma_cluster_{pair}", **ws, cluster=2), "persistent, clusters of 2, B multicast"),
        ("-tma-store", _wgmma("wgmma_tma_store_{pair}", **ws, cluster=2, d_box=(64, 64)),
         "clusters of 2, TMA-store epilogue"),
        # wgmma_wide spills its 8-byte tile counter (192 accumulators and ~40 live values pass 232 registers): one
        # local load and store a tile, none in the k-loop (its SASS).  Both grids balanced: the H100 probes of
        # docs/14_wgmma.md, "Balanced persistent grids" (0.8-1.2 points at 4096^3, no change beyond the spread
        # at 8192^3).
        ("", CudaModelDispatch((WGMMA_WIDE, WGMMA_TMA), cost=WIDE_COST),
         "two tiles by a model, TMA-store epilogue"),
    ]
    return [
        *(_tc_impl(f"cuda:{s.key}{suffix}", "cuda", s, HALF_IO, launch, _cuda_sources(src), f"{s.title} ({title})")
          for suffix, launch, title in forms),
        # Triton's forms, named for what the compiler made of them (triton_kernels/14_wgmma.py): TMA + wgmma one
        # program per tile, and stage 13's persistent kernel, the registered best.
        _tc_impl(f"triton:{s.key}-tma", "triton", s, HALF_IO, TritonLaunch(s.key, "gemm_tma"),
                 _triton_sources(s.key, "13_swizzle"), f"{s.title} (TMA, one program per tile)"),
        _tc_impl(f"triton:{s.key}", "triton", s, HALF_IO, TritonLaunch(s.key), _triton_sources(s.key, "13_swizzle")),
        # Gluon's forms, the same ladder to -persistent, then the best (persistent, TMA-store epilogue): they
        # borrow stage 13's TMA checks (Triton file) and its fallback (Gluon file).
        *(_tc_impl(f"gluon:{s.key}{suffix}", "gluon", s, HALF_IO, TritonLaunch(f"gluon.{s.key}", fn),
                   (*_gluon_sources(s.key, "13_swizzle"), TRITON_DIR / "13_swizzle.py"), f"{s.title} ({title})")
          for suffix, fn, title in (("-1wg", "gemm_1wg", "one warpgroup, TMA"),
                                    ("-ws", "gemm_ws", "loader warp + two consumer warpgroups"),
                                    ("-persistent", "gemm_persistent", "warp-specialized, persistent"))),
        _tc_impl(f"gluon:{s.key}", "gluon", s, HALF_IO, TritonLaunch(f"gluon.{s.key}"),
                 (*_gluon_sources(s.key, "13_swizzle"), TRITON_DIR / "13_swizzle.py")),
    ]


# Stage 15 (seed 002): fp32 inputs on tensor cores.  Name suffix -> (precision label, CUDA entry, Triton/Gluon
# function); the labels' tolerances are in study/core/schema.py.  The CUDA method and its two variants are one
# kernel (cuda_kernels/15_tcec.cu); 3xTF32 and the bf16 recipes are the shootout (cuda_kernels/tcec_shootout.cu).
TCEC_VARIANTS = {
    "": ("fp16x3-tcec", "tcec_gemm", "gemm_tcec_tma"),                      # the method: scaled lo, RN outside TC
    "-markidis": ("fp16x3-markidis", "tcec_markidis", "gemm_markidis_tma"),  # unscaled lo, all summed inside TC
    "-nocorr": ("fp16-inputs", "tcec_nocorr", "gemm_nocorr_tma"),            # hi only: fp16-rounded inputs
    "-tf32": ("tf32x3", "tcec_tf32", "gemm_tf32"),                           # 3xTF32 split: fp32's exponent range
}
SHOOTOUT = "tcec_shootout.cu"


def _tcec_cuda(precision: str, entry: str) -> CudaLaunch:
    if precision == "tf32x3":
        return CudaBatchedLaunch(SHOOTOUT, entry, (256, 1, 1), (128, 128), unaligned_entry=f"{entry}_unaligned")
    return CudaSplitTmaLaunch(f"{stage('15').key}.cu", entry, (384, 1, 1), (128, 128),
                              lo_scale=1.0 if precision == "fp16x3-markidis" else 2048.0,
                              with_lo=precision != "fp16-inputs")


def _tcec_stage() -> list[Impl]:
    s = stage("15")
    impls = []
    for suffix, (precision, entry, fn) in TCEC_VARIANTS.items():
        cuda = _tcec_cuda(precision, entry)
        dtypes = {"fp32": precision}
        title = f"{s.title} ({precision})"
        # The fp16 forms run on the Hopper rung's Triton and Gluon machinery (their files import it).
        triton_src = _triton_sources(s.key)
        gluon_src = (*_gluon_sources(s.key, "14_wgmma", "13_swizzle"), TRITON_DIR / "13_swizzle.py",
                     TRITON_DIR / f"{s.key}.py")
        impls += [
            Impl(f"cuda:{s.key}{suffix}", "cuda", s, dtypes, cuda, _cuda_sources(cuda.source), title),
            Impl(f"triton:{s.key}{suffix}", "triton", s, dtypes, TritonLaunch(s.key, fn), triton_src, title),
            Impl(f"gluon:{s.key}{suffix}", "gluon", s, dtypes, TritonLaunch(f"gluon.{s.key}", fn), gluon_src, title),
        ]
    # The fp32-emulation shootout's fused bf16 recipes (cuda_kernels/tcec_shootout.cu): three bf16 parts per
    # value, six or nine mma.sync products, a0*b0 promoted into fp32 registers as TCEC promotes hi*hi.
    for name in ("bf16x6", "bf16x9"):
        cuda = CudaBatchedLaunch(SHOOTOUT, name, (256, 1, 1), (128, 128), unaligned_entry=f"{name}_unaligned")
        impls.append(Impl(f"cuda:{s.key}-{name}", "cuda", s, {"fp32": name}, cuda, _cuda_sources(cuda.source),
                          f"{s.title} ({name}, bf16 splits)"))
    return impls


# Stage 16: fp8 e4m3, K-major operands with fp32 scales (study/core/fp8.py), D in bf16.  Name suffix -> (scaling,
# precision label, Triton/Gluon function): "fp32acc" forms add the tensor core's partial sum into fp32 registers
# every 128 k; "tcacc" keeps the whole K in the tensor core's accumulator (about 13 mantissa bits).
FP8_FORMS = {
    "": ("tensor", "fp8e4m3-tensor/fp32acc", "gemm"),
    "-row": ("row", "fp8e4m3-row/fp32acc", "gemm_row"),
    "-block": ("block", "fp8e4m3-block/fp32acc", "gemm_block"),
    "-tcacc": ("tensor", "fp8e4m3-tensor/tcacc", "gemm_tcacc"),
}
FP8_OUT = {"fp8e4m3": "bf16"}
K_MAJOR = ("k-major",)          # A row-major, B column-major: the only layout fp8 wgmma reads


def _fp8(entry: str, bn: int, launch: type[CudaFp8Launch] = CudaFp8Launch, **kw) -> CudaFp8Launch:
    """cuda_kernels/16_fp8.cu's persistent kernel: a producer and two consumer warpgroups on a 128 x bn tile."""
    return launch("16_fp8.cu", entry, (384, 1, 1), (128, bn), **kw)


# The promoted forms' tile is 128x128 (a consumer holds a partial and a sum of 64 registers each; the Gluon twin's
# tile); tcacc's is stage 14's 128x256 (one accumulator of 128).
FP8_CUDA = {"": _fp8("fp8_tensor", 128), "-row": _fp8("fp8_row", 128), "-block": _fp8("fp8_block", 128),
            "-tcacc": _fp8("fp8_tcacc", 256)}


def _fp8_stage() -> list[Impl]:
    s = stage("16")
    impls = []
    for suffix, (scaling, precision, fn) in FP8_FORMS.items():
        title = f"{s.title.split(':')[0]} ({scaling} scaling, {precision.split('/')[1]})"
        common = dict(stage=s, dtypes={"fp8e4m3": precision}, title=title, out_dtypes=FP8_OUT, layouts=K_MAJOR,
                      scaling=scaling)
        cuda = FP8_CUDA[suffix]
        impls += [
            ScaledImpl(f"cuda:{s.key}{suffix}", "cuda", launch=cuda, sources=_cuda_sources(cuda.source), **common),
            ScaledImpl(f"triton:{s.key}{suffix}", "triton", launch=TritonLaunch(s.key, fn),
                       sources=_triton_sources(s.key), **common),
            ScaledImpl(f"gluon:{s.key}{suffix}", "gluon", launch=TritonLaunch(f"gluon.{s.key}", fn),
                       sources=(*_gluon_sources(s.key, "14_wgmma", "13_swizzle"), TRITON_DIR / "13_swizzle.py"),
                       **common),
        ]
    return impls


# Stage 17: decode-shaped GEMMs (cuda_kernels/17_split_k.cu): one swap-AB kernel, its grid picked per form ("the
# work": (tile, 64-deep k-slice) iterations, a block taking a contiguous run of them).  Name suffix -> (policy,
# title), in ladder order: each form adds one technique to the one before.
SPLIT_K_FORMS = {
    "-tiles": ("tiles", "swap-AB, one block a tile"),
    "-splitk": ("split", "swap-AB, split-K"),
    "-streamk": ("stream", "swap-AB, stream-K"),
    "": ("model", "swap-AB, split or stream by a model"),
}


def _split_k(policy: str) -> CudaSplitKLaunch:
    return CudaSplitKLaunch("17_split_k.cu", "split_k_m{mt}_{pair}", (256, 1, 1), (16, 128), pairs=HALF_IO_TAGS,
                            policy=policy)


def _split_k_stage() -> list[Impl]:
    s = stage("17")
    impls = [_tc_impl(f"cuda:{s.key}{suffix}", "cuda", s, HALF_IO, _split_k(policy), _cuda_sources(f"{s.key}.cu"),
                      f"{s.title.split(':')[0]} ({title})", BOTH_LAYOUTS)
             for suffix, (policy, title) in SPLIT_K_FORMS.items()]
    return impls + [
        _tc_impl(f"triton:{s.key}", "triton", s, HALF_IO, TritonLaunch(s.key), _triton_sources(s.key),
                 layouts=BOTH_LAYOUTS),
        _tc_impl(f"gluon:{s.key}", "gluon", s, HALF_IO, TritonLaunch(f"gluon.{s.key}"),
                 (*_gluon_sources(s.key), TRITON_DIR / f"{s.key}.py"), layouts=BOTH_LAYOUTS),
    ]


def _fp8_baselines() -> list[Impl]:
    """cuBLASLt through torch._scaled_mm, one per scaling mode torch takes on Hopper (study/launch/cublas_fp8.py),
    and per-tensor with fast accumulation (no promotion: the tcacc forms' baseline)."""
    sources = (_BASELINES / "cublas_fp8.py",)
    modes = (("", "tensor", "fp8e4m3-tensor/fp32acc", "per-tensor scales"),
             ("-row", "row", "fp8e4m3-row/fp32acc", "row-wise scales"),
             ("-block", "block", "fp8e4m3-block/fp32acc", "1x128 / 128x128 block scales"),
             ("-fastacc", "tensor", "fp8e4m3-tensor/tcacc", "per-tensor scales, use_fast_accum"))
    return [ScaledImpl(f"cublas:fp8{suffix}", "cublas", None, {"fp8e4m3": precision},
                       TorchLaunch(f"prepare_{suffix[1:] or 'tensor'}", "cublas_fp8", prepares=True), sources,
                       f"cuBLASLt fp8 (torch._scaled_mm, {what})", out_dtypes=FP8_OUT, layouts=K_MAJOR,
                       scaling=scaling)
            for suffix, scaling, precision, what in modes]


# --- tuning variants: unregistered, re-run by name with `python -m study.probe --impls NAME --variants V`.
# Implementation -> {variant: its launch record}.  Each is built with its own nvcc -D macro, under which the
# .cu file compiles the variant's entries (or its other constants); one without a scalar twin takes aligned
# operands only (a TMA variant sends the others to the registered cp.async kernel).  The stage's file in
# docs/ records what each measured.
_BEST_EXPLORE = dict(source="09_best_simt.cu", defines=("BEST_EXPLORE",), aligned_only=True)
_MMA_EXPLORE = dict(pairs=HALF_IO_TAGS, defines=("MMA_EXPLORE",), aligned_only=True)
VARIANTS: dict[str, dict[str, CudaLaunch]] = {
    "cuda:17_split_k": {   # 64-deep slices: one block an SM, two (M <= 16, <= 64), an 8-slot ring (M <= 16);
        # the registered tiles on mma.sync
        "k64": dataclasses.replace(_split_k("model"), entry="x17_k64_m{mt}_{pair}", token_tiles=(16, 64),
                                   defines=("SPLITK_EXPLORE",)),
        "b2": dataclasses.replace(_split_k("model"), entry="x17_b2_m{mt}_{pair}", token_tiles=(16, 64),
                                  defines=("SPLITK_EXPLORE",)),
        "s8": dataclasses.replace(_split_k("model"), entry="x17_s8_m{mt}_{pair}", token_tiles=(16,),
                                  defines=("SPLITK_EXPLORE",)),
        "sync": dataclasses.replace(_split_k("model"), entry="x17_sync_m{mt}_{pair}", token_tiles=(16, 64),
                                    defines=("SPLITK_EXPLORE",)),   # mma.sync in place of wgmma
    },
    "cuda:09_best_simt": {
        "x_128x128_8x8": CudaLaunch(entry="x_128x128_8x8", block=(256, 1, 1), tile=(128, 128), **_BEST_EXPLORE),
        "x_256x128_16x8": CudaLaunch(entry="x_256x128_16x8", block=(256, 1, 1), tile=(256, 128), **_BEST_EXPLORE),
        "x_128x256_bk16": CudaLaunch(entry="x_128x256_bk16", block=(256, 1, 1), tile=(128, 256), **_BEST_EXPLORE),
    },
    "cuda:13_swizzle": {
        name: CudaTypedLaunch("13_swizzle.cu", f"{name}_{{pair}}", (256, 1, 1), tile, **_MMA_EXPLORE)
        for name, tile in (("x13_128x256x64_s3", (128, 256)), ("x13_256x128x64_s4", (256, 128)),
                           ("x13_128x256x32_s4", (128, 256)), ("x13_direct", (128, 256)), ("x13_g16", (128, 256)))
    },
    "cuda:13_swizzle-tma": {
        name: CudaTmaLaunch("13_swizzle.cu", f"{name}_{{pair}}", (384, 1, 1), (128, 256), cluster=cluster,
                            unaligned=SWIZZLE, **_MMA_EXPLORE)
        for name, cluster in (("x13t_c2", 2), ("x13t_s3", 1))
    },
    "cuda:14_wgmma-1wg": {     # thread 0 issuing the whole refill after the slot's empty barrier (the first design)
        "thread0": _wgmma("x14_1wg_thread0_{pair}", 128, (64, 256), False, defines=("WGMMA_EXPLORE",),
                          aligned_only=True),
    },
    "cuda:14_wgmma": {     # its 256x192 tiles without clusters (docs/14_wgmma.md: slower than with them)
        "t256x192": _wgmma("x14_t256_{pair}", 384, (256, 192), d_box=(64, 64), defines=("WGMMA_EXPLORE",),
                           aligned_only=True),
        # the dispatch's two kernels alone, at every size (balanced grids, as registered), and the 128x256 one on
        # one block per SM (Gluon's grid)
        "wide": WGMMA_WIDE,
        "tma": WGMMA_TMA,
        "tma132": dataclasses.replace(WGMMA_TMA, balance=False),
    },
    # Stage 16: under FP8_EXPLORE, 128x192 tiles (5 slots and one D buffer a consumer, or 4 and two), 128x128 with
    # one D buffer, clusters of 2 along M multicasting B; the registered kernels with register stores only, with
    # (div) roles and ring waits that ptxas cannot prove warp-uniform, in groups of 16, 4, 6 or 12 tile-rows, the
    # registered kernel on one block per SM (nobal), with the TMA-store epilogue only (tmaonly); block scales
    # loaded from global memory by the consumers two chunks ahead (global) or one (ahead1), staged with 5 slots and
    # two D buffers a consumer (staged5), read before
    # the chunk's wgmmas (early), or copied by the TMA thread (bulk); diagnostics of the block form's cost on the
    # per-tensor form: its FFMA promotion (ffma), its staging (staged; read early: stearly; with no arrivals on the
    # full barrier, unread: stnoarr); one arrival a consumer warpgroup frees a ring slot (arr1; block: on bulk;
    # arr1s: after a named barrier of its warps).
    "cuda:16_fp8": {"n192": _fp8("x16_tensor_n192", 192, defines=("FP8_EXPLORE",)),
                    "n192s4": _fp8("x16_tensor_n192s4", 192, defines=("FP8_EXPLORE",)),
                    "b1": _fp8("x16_tensor_b1", 128, defines=("FP8_EXPLORE",)),
                    "c2": _fp8("x16_tensor_c2", 192, cluster=2, defines=("FP8_EXPLORE",)),
                    "n128c2": _fp8("x16_tensor_n128c2", 128, cluster=2, defines=("FP8_EXPLORE",)),
                    "regstore": _fp8("fp8_tensor", 128, tma_store=False),
                    "serial": _fp8("x16_tensor_serial", 128, defines=("FP8_EXPLORE",)),
                    "st2": _fp8("x16_tensor_st2", 128, defines=("FP8_EXPLORE",)),
                    "b1s": _fp8("x16_tensor_b1s", 128, defines=("FP8_EXPLORE",)),
                    "g16": _fp8("x16_tensor_g16", 128, defines=("FP8_EXPLORE",)),
                    "g4": _fp8("x16_tensor_g4", 128, defines=("FP8_EXPLORE",)),
                    "g6": _fp8("x16_tensor_g6", 128, defines=("FP8_EXPLORE",)),
                    "g12": _fp8("x16_tensor_g12", 128, defines=("FP8_EXPLORE",)),
                    "ffma": _fp8("x16_tensor_ffma", 128, defines=("FP8_EXPLORE",)),
                    "staged": _fp8("x16_tensor_staged", 128, defines=("FP8_EXPLORE",)),
                    "stearly": _fp8("x16_tensor_stearly", 128, defines=("FP8_EXPLORE",)),
                    "stnoarr": _fp8("x16_tensor_stnoarr", 128, defines=("FP8_EXPLORE",)),
                    "nobal": _fp8("fp8_tensor", 128, balance=False),
                    "tmaonly": _fp8("x16_tensor_tmaonly", 128, CudaFp8TmaOnlyLaunch, defines=("FP8_EXPLORE",)),
                    "arr1": _fp8("x16_tensor_arr1", 128, defines=("FP8_EXPLORE",)),
                    "arr1s": _fp8("x16_tensor_arr1s", 128, defines=("FP8_EXPLORE",)),
                    "stc2": _fp8("x16_tensor_stc2", 128, cluster=2, defines=("FP8_EXPLORE",)),
                    "div": _fp8("x16_tensor_div", 128, defines=("FP8_EXPLORE",))},
    "cuda:16_fp8-row": {"n192": _fp8("x16_row_n192", 192, defines=("FP8_EXPLORE",)),
                        "st2": _fp8("x16_row_st2", 128, defines=("FP8_EXPLORE",)),
                        "div": _fp8("x16_row_div", 128, defines=("FP8_EXPLORE",))},
    "cuda:16_fp8-block": {"n192": _fp8("x16_block_n192", 192, defines=("FP8_EXPLORE",)),
                          "serial": _fp8("x16_block_serial", 128, defines=("FP8_EXPLORE",)),
                          "st2": _fp8("x16_block_st2", 128, defines=("FP8_EXPLORE",)),
                          "c2": _fp8("x16_block_c2", 192, cluster=2, defines=("FP8_EXPLORE",)),
                          "div": _fp8("x16_block_div", 128, defines=("FP8_EXPLORE",)),
                          "g16": _fp8("x16_block_g16", 128, defines=("FP8_EXPLORE",)),
                          "g4": _fp8("x16_block_g4", 128, defines=("FP8_EXPLORE",)),
                          "g6": _fp8("x16_block_g6", 128, defines=("FP8_EXPLORE",)),
                          "ahead1": _fp8("x16_block_ahead1", 128, defines=("FP8_EXPLORE",)),
                          "global": _fp8("x16_block_global", 128, defines=("FP8_EXPLORE",)),
                          "staged5": _fp8("x16_block_staged5", 128, defines=("FP8_EXPLORE",)),
                          "early": _fp8("x16_block_early", 128, defines=("FP8_EXPLORE",)),
                          "bulk": _fp8("x16_block_bulk", 128, CudaFp8BulkLaunch, defines=("FP8_EXPLORE",)),
                          "arr1": _fp8("x16_block_arr1", 128, CudaFp8BulkLaunch, defines=("FP8_EXPLORE",)),
                          "regstore": _fp8("fp8_block", 128, tma_store=False)},
    "gluon:16_fp8": {"serial": TritonLaunch("gluon.16_fp8", "gemm_serial")},
    "gluon:16_fp8-block": {"serial": TritonLaunch("gluon.16_fp8", "gemm_block_serial")},
    "cuda:16_fp8-tcacc": {"c2": _fp8("x16_tcacc_c2", 256, cluster=2, defines=("FP8_EXPLORE",)),
                          "div": _fp8("x16_tcacc_div", 256, defines=("FP8_EXPLORE",)),
                          "regstore": _fp8("fp8_tcacc", 256, tma_store=False)},
}


def variant(name: str, variant_name: str) -> Impl:
    """Implementation `name` launched as its tuning variant `variant_name` (named "<name>/<variant>")."""
    impl = get(name)
    try:
        launch = VARIANTS[name][variant_name]
    except KeyError:
        raise KeyError(f"no variant {variant_name!r} of {name}; declared: {sorted(VARIANTS.get(name, {}))}") from None
    return dataclasses.replace(impl, name=f"{name}/{variant_name}", launch=launch,
                               title=f"{impl.title} [{variant_name}]")


_BASELINES = ROOT / "study" / "launch"     # cublas.py, cublas_tc.py: the baselines through torch
_IMPLS: list[Impl] = [
    *_stage("01", CudaLaunch("01_naive.cu", "sgemm_naive", (32, 32, 1), (32, 32), rows_on_x=True), FP32),
    *_stage("02", CudaLaunch("02_coalesced.cu", "sgemm_coalesced", (32, 32, 1), (32, 32)), FP32),
    *_stage("03", CudaLaunch("03_smem_tiling.cu", "sgemm_smem_tiling", (32, 32, 1), (32, 32)), FP32, gluon=True),
    *_stage("04", _simt("04_tiling_1d.cu", "sgemm_tiling_1d", 64, 512), FP32, gluon=True),
    *_stage("05", _simt("05_tiling_2d.cu", "sgemm_tiling_2d", 128, 256), FP32, gluon=True),
    *_stage("06", _simt("06_vectorized.cu", "sgemm_vectorized", 128, 256, vec=True), FP32, gluon=True),
    *_stage("07", _simt("07_cp_async.cu", "sgemm_cp_async", 128, 256, vec=True), FP32, gluon=True),
    *_stage("08", _simt("08_warp_specialized.cu", "sgemm_warp_specialized", 128, 288, vec=True),
            FP32, gluon=True),
    *_stage("09", CudaDispatch(tuple(_simt("09_best_simt.cu", f"sgemm_best_{bm}x{bn}", (bm, bn), thr, vec=True)
                                     for bm, bn, thr in BEST_TILES)), FP32, gluon=True),
    *_wmma_stage(),
    *_half_stage("11", _cuda_tc("11_wmma_async.cu", "wmma_async_{pair}", HALF_IO, 256, (128, 128),
                                vec=True)),
    # Triton and Gluon 12 run stage 11's kernel, compiled or launched differently (their files say why).
    *_half_stage("12", _cuda_tc("12_mma_ldmatrix.cu", "mma_{pair}", HALF_IO, 256, (128, 128), vec=True),
                 triton_uses=("11_wmma_async",), gluon_uses=("11_wmma_async",)),
    *_half_stage("13", SWIZZLE, gluon_uses=("11_wmma_async",)),
    _swizzle_tma(),
    *_wgmma_stage(),
    *_tcec_stage(),
    *_fp8_stage(),
    *_split_k_stage(),
    Impl("cublas", "cublas", None, {**FP32, **HALF}, TorchLaunch("gemm_fp32"),
         (_BASELINES / "cublas.py",), "cuBLAS (torch.addmm, TF32 off)"),
    Impl("cublas:fp64", "cublas", None, {"fp64": "fp64"}, TorchLaunch("gemm_fp64", "cublas_tc"),
         (_BASELINES / "cublas_tc.py", _BASELINES / "cublas.py"), "cuBLAS DGEMM (torch.addmm)"),
    # int8's baseline is cuBLASLt at its fastest layout, B column-major; the row-major cost is registered beside it.
    Impl("cublas:int8", "cublas", None, {"int8": "int8/int32acc"},
         TorchLaunch("prepare_int8", "cublas_tc", prepares=True),
         (_BASELINES / "cublas_tc.py", _BASELINES / "cublas.py"), "cuBLASLt int8 (torch._int_mm, B column-major)",
         out_dtypes={"int8": "int32"}),
    Impl("cublas:int8-rowmajor", "cublas", None, {"int8": "int8/int32acc"},
         TorchLaunch("gemm_int8_rowmajor", "cublas_tc"),
         (_BASELINES / "cublas_tc.py", _BASELINES / "cublas.py"), "cuBLASLt int8 (torch._int_mm, B row-major)",
         out_dtypes={"int8": "int32"}),
    Impl("cublas:tf32", "cublas", None, TF32, TorchLaunch("gemm_tf32"),
         (_BASELINES / "cublas.py",), "cuBLAS (torch.addmm, TF32 on)"),
    # The same bf16 recipes composed from cuBLAS bf16 GEMMs (the library-level fp32 emulation on Hopper).
    *(Impl(f"cublas:{n}", "cublas", None, {"fp32": f"{n}-tcacc"}, TorchLaunch(f"gemm_{n}", "cublas_tc"),
           (_BASELINES / "cublas_tc.py", _BASELINES / "cublas.py"), f"cuBLAS bf16 GEMMs, {n} recipe (torch.mm)")
      for n in ("bf16x6", "bf16x9")),
    *_fp8_baselines(),
    Impl("triton:tuned", "triton", None, {**FP32, **HALF}, TritonLaunch("baseline_tuned", "gemm_ieee"),
         _triton_sources("baseline_tuned"), "Tuned Triton matmul (tl.dot, autotuned)"),
    Impl("triton:tuned-tf32", "triton", None, TF32, TritonLaunch("baseline_tuned", "gemm_tf32"),
         _triton_sources("baseline_tuned"), "Tuned Triton matmul, TF32"),
    Impl("triton:tuned-tf32x3", "triton", None, {"fp32": "tf32x3-tcacc"}, TritonLaunch("baseline_tuned", "gemm_tf32x3"),
         _triton_sources("baseline_tuned"), "Tuned Triton matmul, input_precision=tf32x3 (summed in the tensor cores)"),
]
_BY_NAME = {i.name: i for i in _IMPLS}
assert len(_BY_NAME) == len(_IMPLS), "duplicate implementation names"


def implementations(backend: str | None = None, dtype: str | None = None) -> list[Impl]:
    return [i for i in _IMPLS if (backend is None or i.backend == backend) and (dtype is None or dtype in i.dtypes)]


def get(name: str) -> Impl:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no implementation {name!r}; registered: {sorted(_BY_NAME)}") from None


def stages() -> tuple[Stage, ...]:
    return STAGES


def baseline_for(dtype: str, precision: str) -> Impl | None:
    """The cuBLAS entry a row is compared with: same input dtype and, where cuBLAS has it, same precision;
    None where cuBLAS takes no such input (uint8)."""
    cands = [i for i in implementations("cublas", dtype)]
    for i in cands:
        if i.dtypes[dtype] == precision:
            return i
    return cands[0] if cands else None


def cuda_launches(impl: Impl) -> tuple[CudaLaunch, ...]:
    """The CUDA launches behind an implementation (a dispatch's every tile shape); none for other backends."""
    launches = impl.launch.choices if isinstance(impl.launch, CudaDispatch) else (impl.launch,)
    launches += tuple(c.unaligned for c in launches if getattr(c, "unaligned", None))
    return tuple(c for c in launches if isinstance(c, CudaLaunch))


def reachable_entries(impl: Impl) -> set[str]:
    """Every CUDA entry a call of `impl` can launch: each launch's entries, and of a fallback launch (a TMA
    form's, taken only for unaligned operands) its unaligned entries only."""
    out: set[str] = set()
    launches = impl.launch.choices if isinstance(impl.launch, CudaDispatch) else (impl.launch,)
    for c in launches:
        if isinstance(c, CudaLaunch):
            out |= set(c.entries())
        fallback = getattr(c, "unaligned", None)
        if fallback is not None:
            out |= {e for e in fallback.entries() if e.endswith("_unaligned") or e == fallback.unaligned_entry}
    return out


def cuda_sources() -> list[tuple[Path, str, bool]]:
    """(source, entry, spills_ok) for every CUDA kernel the study compiles, ladder and ceiling benchmarks."""
    out = []
    for i in _IMPLS:
        out += [(CUDA_DIR / c.source, e, c.spills_ok) for c in cuda_launches(i) for e in c.entries()]
    bench = BENCH_DIR
    return out + [(bench / "fma_peak.cu", "fma_peak", False), (bench / "bandwidth.cu", "smem_read", False),
                  (bench / "bandwidth.cu", "l2_read", False), (bench / "profile_marker.cu", "profile_marker", False),
                  *((bench / "mma_peak.cu", e, False) for e in ("mma_peak_f16", "mma_peak_bf16", "mma_peak_tf32",
                                                                  "mma_peak_s8"))]
