"""Every implementation, declared once.  This is also the study's public Python API.

    import study
    for impl in study.implementations():
        print(impl.name, impl.backend, impl.dtypes)
    d = study.get("cuda:03_smem_tiling")(a, b)                 # D = A @ B
    d = study.get("triton:tuned")(a, b, c, alpha=2.0, beta=0.5) # D = 2 A @ B + 0.5 C

An implementation is a stage's CUDA kernel, its Triton counterpart, or a baseline (cuBLAS through torch,
the tuned Triton matmul).  The runner, the sweep and the report only ever see `Impl` objects: adding a
stage means adding its two source files and one `_stage(...)` line below.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .paths import CUDA_DIR, ROOT, TRITON_DIR, source_closure
from .stages import STAGES, Stage, stage

# Input dtype -> what the arithmetic is.  "fp32" means IEEE fp32 FMA: never TF32 under another name.
FP32 = {"fp32": "fp32"}
TF32 = {"fp32": "tf32"}
HALF = {"fp16": "fp16/fp32acc", "bf16": "bf16/fp32acc"}


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@dataclass(frozen=True)
class CudaLaunch:
    """How a cuda_kernels/*.cu entry is launched: one block per `tile` of D, `block` threads each.

    A kernel that moves 16-byte vectors names an `unaligned_entry` too (the same template, scalar accesses):
    it is launched whenever an operand's start or leading dimension is not a multiple of 16 bytes, so a view
    at an odd offset gets the slow path, never a misaligned-address fault."""
    source: str
    entry: str
    block: tuple[int, int, int]
    tile: tuple[int, int]            # (rows, cols) of D per block
    rows_on_x: bool = False          # grid.x walks M (stage 01's uncoalesced map) instead of N
    dynamic_smem: int = 0
    spills_ok: bool = False          # CI fails on register spills unless a kernel declares them deliberate
    unaligned_entry: str = ""
    scalar: str = field(default="float", repr=False)   # C type of alpha and beta ("double": tensor-core stages)

    def grid(self, name: str, M: int, N: int) -> tuple[int, int, int]:
        over_m, over_n = -(-M // self.tile[0]), -(-N // self.tile[1])
        gx, gy = (over_m, over_n) if self.rows_on_x else (over_n, over_m)
        if gx > 2**31 - 1 or gy > 65535:
            raise ValueError(f"{name}: a {M}x{N} output needs a {gx}x{gy} grid; this stage's launch allows "
                             f"grid.x <= 2**31-1 and grid.y <= 65535")
        return gx, gy, 1

    def entries(self) -> tuple[str, ...]:
        return (self.entry, self.unaligned_entry) if self.unaligned_entry else (self.entry,)

    def entry_for(self, p) -> str:
        if self.unaligned_entry and not _all_aligned16(p):
            return self.unaligned_entry
        return self.entry

    def plan(self, p, sms: int) -> tuple[str, ...]:
        """The entries a call on `p` launches on a GPU of `sms` SMs (what the GPU suite must reach)."""
        return (self.entry_for(p),)

    def __call__(self, name: str, p) -> None:
        self._launch(name, p, self.entry_for(p), 1, [])

    def _launch(self, name: str, p, entry: str, depth: int, extra: list) -> None:
        from . import cuda_launch
        M, N, K = p.mnk
        gx, gy, _ = self.grid(name, M, N)
        k = cuda_launch.kernel(CUDA_DIR / self.source, entry, p.a.device, self.dynamic_smem)
        c = p.c if p.c is not None else p.out   # never read when beta == 0 (the kernel checks beta)
        cuda_launch.launch(k, (gx, gy, depth), self.block, self.dynamic_smem, [
            ("int", M), ("int", N), ("int", K), (self.scalar, p.alpha),
            ("ptr", p.a), ("i64", p.lda), ("ptr", p.b), ("i64", p.ldb),
            (self.scalar, p.beta), ("ptr", c), ("i64", c.stride(0)), ("ptr", p.out), ("i64", p.out.stride(0)),
        ] + extra, p.a.device)

    def resources(self) -> dict:
        from .cuda_build import build
        r = build(CUDA_DIR / self.source).resources[self.entries()[0]]
        return {"registers": r.registers, "smem_bytes": r.smem_bytes + self.dynamic_smem, "spills": r.spills}


@dataclass(frozen=True)
class CudaBatchedLaunch(CudaLaunch):
    """A kernel whose grid.z walks a batch: after the GEMM arguments it takes the element distance between
    consecutive A, B, C and D matrices (all 0 for a single GEMM)."""

    def __call__(self, name: str, p) -> None:
        self._launch(name, p, self.entry_for(p), 1, [("i64", 0)] * 4)

    def batched(self, impl, a, b, out=None):
        """D[i] = A[i] @ B[i] in one launch; A: BxMxK, B: BxKxN, D (allocated if None): BxMxN, all contiguous."""
        import torch
        from .contract import validate
        if out is None:
            out = torch.empty(a.shape[0], a.shape[1], b.shape[2], dtype=a.dtype, device=a.device)
        if not (a.is_contiguous() and b.is_contiguous() and out.is_contiguous()):
            raise ValueError(f"{impl.name}: batched operands must be contiguous")
        if tuple(out.shape) != (a.shape[0], a.shape[1], b.shape[2]) or out.dtype != a.dtype:
            raise ValueError(f"{impl.name}: batched out must be {(a.shape[0], a.shape[1], b.shape[2])} {a.dtype}")
        if not 1 <= a.shape[0] <= 65535:
            raise ValueError(f"{impl.name}: a batch of {a.shape[0]} exceeds grid.z <= 65535")
        p = validate(impl.name, impl.dtypes, impl.out_dtypes, a[0], b[0], out=out[0])
        strides = [t.stride(0) for t in (a, b, out, out)]
        vec = self.entry_for(p) == self.entry and all(s % 4 == 0 for s in strides)   # every matrix 16-byte aligned
        self._launch(impl.name, p, self.entry if vec else self.unaligned_entry, a.shape[0],
                     [("i64", s) for s in strides])
        return out


@dataclass(frozen=True)
class CudaPresplitLaunch(CudaBatchedLaunch):
    """Two kernels per GEMM: `split_entry` first writes B, split, into a workspace of `ws_tile` halves per
    (k-tile of `split_tile[0]`, column block of `split_tile[1]`), then the GEMM entry reads it (its last
    argument).  The workspace is allocated per call, and both launches are inside what is timed."""
    split_entry: str = ""
    split_tile: tuple[int, int] = (32, 128)
    ws_tile: int = 0

    def entries(self) -> tuple[str, ...]:
        return (*super().entries(), self.split_entry)

    def plan(self, p, sms: int) -> tuple[str, ...]:
        return (self.split_entry, *super().plan(p, sms))

    def _launch(self, name: str, p, entry: str, depth: int, extra: list) -> None:
        import torch
        from . import cuda_launch
        M, N, K = p.mnk
        kt, nb = -(-K // self.split_tile[0]), -(-N // self.split_tile[1])
        if nb > 65535:
            raise ValueError(f"{name}: N = {N} needs {nb} column blocks for B's split; the launch allows 65535")
        ws = torch.empty(depth * kt * nb * self.ws_tile, dtype=torch.float16, device=p.b.device)
        batch_b = extra[1][1]   # CudaBatchedLaunch's extras: the batch strides of A, B, C, D
        k = cuda_launch.kernel(CUDA_DIR / self.source, self.split_entry, p.b.device)
        cuda_launch.launch(k, (kt, nb, depth), (self.split_tile[1], 1, 1), 0, [
            ("ptr", p.b), ("i64", p.ldb), ("int", K), ("int", N), ("i64", batch_b), ("ptr", ws)], p.b.device)
        super()._launch(name, p, entry, depth, [*extra, ("ptr", ws)])


@dataclass(frozen=True)
class CudaTypedLaunch(CudaLaunch):
    """A tensor-core stage: one entry per type pair and operand layout, named by filling `entry`'s fields:
    {pair} from `pairs` (input dtype -> the .cu file's tag, e.g. "fp16" -> "f16f32"), {ab} from the call's
    layouts ("rr", "rc", "cr", "cc"; see Problem.layouts).  With `vec`, a call whose operands are not all
    16-byte aligned gets the same name + "_unaligned" (scalar copies, never a misaligned cp.async)."""
    pairs: tuple[tuple[str, str], ...] = ()
    layouts: tuple[str, ...] = ("rr",)
    vec: bool = False
    scalar: str = "double"

    def entries(self) -> tuple[str, ...]:
        names = [self.entry.format(pair=tag, ab=ab) for _, tag in self.pairs for ab in self.layouts]
        return tuple(names + [n + "_unaligned" for n in names] if self.vec else names)

    def entry_for(self, p) -> str:
        from .contract import dtype_name
        name = self.entry.format(pair=dict(self.pairs)[dtype_name(p.a.dtype)], ab=p.layouts)
        return name + "_unaligned" if self.vec and not _all_aligned16(p) else name


@dataclass(frozen=True)
class CudaTmaLaunch(CudaTypedLaunch):
    """A persistent kernel fed by the copy engine: A and B reach it as tensor maps (boxes of `a_box` and `b_box`
    elements, rows x cols, 128-byte swizzle) and one block per SM walks D's tiles, in clusters of `cluster`
    blocks along M (the kernel's __cluster_dims__).  Its arguments: the two maps, M, N, K, alpha, beta, C, ldc,
    D, ldd.  A tensor map needs 16-byte aligned starts and pitches, so any call with an operand that is not
    goes to `unaligned`, a block-per-tile launch of the same stage."""
    a_box: tuple[int, int] = (128, 64)
    b_box: tuple[int, int] = (64, 64)
    cluster: int = 1
    unaligned: CudaTypedLaunch | None = None

    def plan(self, p, sms: int) -> tuple[str, ...]:
        return self.unaligned.plan(p, sms) if not _all_aligned16(p) else (self.entry_for(p),)

    def __call__(self, name: str, p) -> None:
        if not _all_aligned16(p):
            return self.unaligned(name, p)
        from . import cuda_launch
        k = cuda_launch.kernel(CUDA_DIR / self.source, self.entry_for(p), p.a.device, self.dynamic_smem)
        self.launch_kernel(k, p.a, p.b, p.c if p.c is not None else p.out, p.alpha, p.beta, p.out)

    def many_tiles(self, sms: int) -> tuple[int, int]:
        """An M x N, ragged in both, of at least 2.5 tiles per SM: every block of the grid walks several tiles,
        and its ring runs on from one into the next (what the tests and the sanitizer must reach).  23 tile-rows:
        with clusters of 2 along M, the last pair's second tile lies wholly past M."""
        return 23 * self.tile[0] - 37, -(-5 * sms // 46) * self.tile[1] - 61

    def launch_kernel(self, k, a, b, c, alpha: float, beta: float, out) -> None:
        """One launch of the loaded kernel `k` (this launch's, or a tuning variant's) on checked operands; C is
        never read when beta == 0."""
        from . import cuda_launch
        (M, K), N = a.shape, b.shape[1]
        tiles = -(-M // (self.tile[0] * self.cluster)) * -(-N // self.tile[1]) * self.cluster
        blocks = min(tiles, cuda_launch.resident_blocks(k, self.block, self.dynamic_smem, self.cluster, a.device))
        cuda_launch.launch(k, (blocks, 1, 1), self.block, self.dynamic_smem, [
            ("tmap", cuda_launch.tensor_map_2d(a, self.a_box)), ("tmap", cuda_launch.tensor_map_2d(b, self.b_box)),
            ("int", M), ("int", N), ("int", K), ("double", alpha), ("double", beta),
            ("ptr", c), ("i64", c.stride(0)), ("ptr", out), ("i64", out.stride(0))], a.device)


def _all_aligned16(p) -> bool:
    return all(_aligned16(t) for t in (p.a, p.b, p.c, p.out) if t is not None)


def _aligned16(t) -> bool:
    """16-byte vectors are safe on every row: the start and the pitch (row or column) are multiples of 16 bytes."""
    from .contract import _row_major
    lines, ld = (t.shape[0], t.stride(0)) if _row_major(t) else (t.shape[1], t.stride(1))
    return t.data_ptr() % 16 == 0 and (lines == 1 or (ld * t.element_size()) % 16 == 0)


@dataclass(frozen=True)
class CudaDispatch:
    """Tile shapes of one kernel, largest first: a call takes the largest whose grid still gives every SM a
    block (big tiles reuse more, but a 1024^2 output in 128x128 tiles would leave half an H100 idle)."""
    choices: tuple[CudaLaunch, ...]
    _last: dict = field(default_factory=dict, compare=False, repr=False)

    def pick(self, M: int, N: int, sms: int) -> CudaLaunch:
        for c in self.choices:
            if -(-M // c.tile[0]) * -(-N // c.tile[1]) >= sms:
                return c
        return self.choices[-1]

    def plan(self, p, sms: int) -> tuple[str, ...]:
        return self.pick(*p.mnk[:2], sms).plan(p, sms)

    def shapes(self, sms: int) -> list[tuple[int, int]]:
        """One M x N per choice that picks it on a GPU of `sms` SMs, ragged in both (the GPU suite and the
        sanitizer run every choice, not only the one the usual test sizes give)."""
        out = []
        root = max(1, round(sms ** 0.5))
        for c in self.choices:
            bm, bn = c.tile
            for rows in sorted(range(1, 4 * root), key=lambda r: abs(r - root)):
                cols = -(-sms // rows)              # rows x cols tiles of this choice: at least one per SM
                M, N = max(1, rows * bm - 37), max(1, cols * bn - 61)
                if self.pick(M, N, sms) is c:
                    break
            else:
                raise ValueError(f"no ragged shape picks the {c.tile} tile on {sms} SMs")
            out.append((M, N))
        return out

    def __call__(self, name: str, p) -> None:
        from .cuda_launch import sm_count
        M, N, _ = p.mnk
        self._last["launch"] = c = self.pick(M, N, sm_count(p.a.device))
        c(name, p)

    def resources(self) -> dict:
        return self._last.get("launch", self.choices[0]).resources()


@dataclass(frozen=True)
class TritonLaunch:
    """A function `fn(problem)` in a triton_kernels module; imported on first use (so TRITON_INTERPRET,
    which Triton reads when the module's kernels are decorated, is honoured)."""
    module: str                      # file stem in triton_kernels/, e.g. "01_naive"
    fn: str = "gemm"
    _last: dict = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, name: str, p) -> None:
        mod = importlib.import_module(f"triton_kernels.{self.module}")
        self._last["kernel"] = getattr(mod, self.fn)(p)

    def resources(self) -> dict | None:
        k = self._last.get("kernel")
        if k is None or not hasattr(k, "metadata"):
            return None
        return {"registers": getattr(k, "n_regs", None), "smem_bytes": getattr(k.metadata, "shared", None),
                "spills": getattr(k, "n_spills", None)}


@dataclass(frozen=True)
class TorchLaunch:
    """A function in study.cublas (or study.cublas_tc, for the int8 and fp64 baselines)."""
    fn: str
    # Not in the repr, which the evidence hash covers: the module's file is among the Impl's sources anyway.
    module: str = field(default="cublas", repr=False)

    def __call__(self, name: str, p) -> None:
        getattr(importlib.import_module(f"study.{self.module}"), self.fn)(p)

    def resources(self) -> None:
        return None


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
        from .contract import validate
        p = validate(self.name, self.dtypes, self.out_dtypes, a, b, c, alpha, beta, out, layouts=self.layouts,
                     allow_cpu=self.backend == "triton" and _interpreting())   # Gluon has no interpreter
        return (lambda: self.launch(self.name, p)), p.out

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

    def resources(self) -> dict | None:
        """Registers, shared memory and spills: from ptxas (CUDA) or the last compiled kernel (Triton)."""
        return self.launch.resources()


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


def _simt(source: str, entry: str, tile: int | tuple[int, int], threads: int, smem: int = 0,
          vec: bool = False) -> CudaLaunch:
    """An fp32 stage from 04 on: one 1-D block of `threads` per tile of D (square if one number)."""
    return CudaLaunch(source, entry, (threads, 1, 1), tile if isinstance(tile, tuple) else (tile, tile),
                      dynamic_smem=smem, unaligned_entry=f"{entry}_unaligned" if vec else "")


DISPATCH_K = 67     # K of the calls that reach each tile of a dispatch (tests, sanitizer): three k-tiles of 32, ragged

# Dynamic shared memory of the pipelined stages (bytes), as their .cu files size their rings.
CP_ASYNC_SMEM = 4 * (128 * 8 + 8 * 128) * 4          # 4 stages of a 128x8 A tile and an 8x128 B tile
WS_SMEM = CP_ASYNC_SMEM
# Stage 09's shape classes, largest first: (BM, BN, threads, BK); 3 ring stages of BK rows of A^T (BM + 4
# floats, padded) and of B (BN floats), as Tile::SMEM_BYTES in the .cu file.
BEST_TILES = ((128, 256, 256, 32), (128, 128, 128, 32), (64, 64, 128, 16))

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
BOTH_LAYOUTS = ("row-major", "col-major")
ALL_AB = ("rr", "rc", "cr", "cc")


def _pairs(table: dict, only=None) -> dict:
    return {d: v for d, v in table.items() if only is None or d in only}


def _tc_impl(name: str, backend: str, s: Stage, pairs: dict, launch, sources, title: str = "",
             layouts: tuple[str, ...] = ("row-major",)) -> Impl:
    return Impl(name, backend, s, {d: v[0] for d, v in pairs.items()}, launch, sources, title or s.title,
                out_dtypes={d: v[1] for d, v in pairs.items() if v[1] != d}, layouts=layouts)


def _cuda_tc(source: str, entry: str, pairs: dict, block: int, tile: tuple[int, int], smem: int = 0,
             layouts: tuple[str, ...] = ("rr",), vec: bool = False) -> CudaTypedLaunch:
    return CudaTypedLaunch(source, entry, (block, 1, 1), tile, dynamic_smem=smem,
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
WMMA_ASYNC_SMEM = 4 * (128 * (32 + 16) + 32 * (128 + 16)) * 2   # 11_wmma_async.cu: 4 slots of A 128x48, B 32x144 halves
MMA_SMEM = 3 * (128 * 32 + 32 * 128) * 2        # 12: 3 slots of a 128x32 A and a 32x128 B tile (48 KiB)
SWIZZLE_SMEM = 4 * (128 * 64 + 64 * 256) * 2    # 13: 4 slots of a 128x64 A and a 64x256 B tile (192 KiB)
SWIZZLE_TMA_SMEM = SWIZZLE_SMEM + 1024 + 3 * 4 * 8  # 13's TMA form: the same ring on a 1024-byte boundary, 12 mbarriers


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
SWIZZLE = _cuda_tc("13_swizzle.cu", "mma_swizzle_{pair}", HALF_IO, 256, (128, 256), SWIZZLE_SMEM, vec=True)


def _swizzle_tma() -> Impl:
    """Stage 13's kernel fed by the copy engine (TMA) in a persistent grid: the same swizzle, ldmatrix and
    mma.sync, with the ring handed over by mbarriers instead of a block barrier."""
    s = stage("13")
    tma = CudaTmaLaunch(SWIZZLE.source, "mma_swizzle_tma_{pair}", (384, 1, 1), (128, 256),
                        dynamic_smem=SWIZZLE_TMA_SMEM, pairs=SWIZZLE.pairs, cluster=1, unaligned=SWIZZLE)
    return _tc_impl(f"cuda:{s.key}-tma", "cuda", s, HALF_IO, tma, _cuda_sources(tma.source),
                    f"{s.title} (TMA-fed, persistent)")


# Stage 14 (seed 002): fp32 inputs on tensor cores, one kernel per backend in four variants.  Name suffix ->
# (precision label, CUDA entry, Triton/Gluon function); the labels' tolerances are in study/schema.py.
TCEC_VARIANTS = {
    "": ("fp16x3-tcec", "tcec_fp16", "gemm_tcec"),                       # the method: scaled lo, RN outside TC
    "-markidis": ("fp16x3-markidis", "tcec_markidis", "gemm_markidis"),  # unscaled lo, all summed inside TC
    "-nocorr": ("fp16-inputs", "tcec_nocorr", "gemm_nocorr"),            # hi only: fp16-rounded inputs
    "-tf32": ("tf32x3", "tcec_tf32", "gemm_tf32"),                       # 3xTF32 split: fp32's exponent range
}
# cuda_kernels/14_tcec.cu: 128x128 tiles, BK 32, 256 threads.  fp16 variants (wgmma, wg::SMEM_BYTES): a 4-slot
# cp.async ring of fp32 A (128x40) and the split B's hi and lo tiles (2x 128x32 halves), which a first kernel
# wrote (TCEC_WS_TILE halves per k-tile and 128-column block).  tf32 (mma.sync, tf32::SMEM_BYTES): two
# buffers of hi/lo tiles (A 128x36, B 32x136 floats), then 2 ring slots.
TCEC_SMEM = {"fp16": 4 * (128 * 40 * 4 + 2 * 128 * 32 * 2),
             "tf32": 2 * 2 * (128 * 36 + 32 * 136) * 4 + 2 * (128 * 32 + 32 * 128) * 4}
TCEC_WS_TILE = 2 * 128 * 32


def _tcec_stage() -> list[Impl]:
    s = stage("14")
    impls = []
    for suffix, (precision, entry, fn) in TCEC_VARIANTS.items():
        common = dict(source=f"{s.key}.cu", entry=entry, block=(256, 1, 1), tile=(128, 128),
                      unaligned_entry=f"{entry}_unaligned")
        if precision == "tf32x3":
            cuda = CudaBatchedLaunch(**common, dynamic_smem=TCEC_SMEM["tf32"])
        else:
            cuda = CudaPresplitLaunch(**common, dynamic_smem=TCEC_SMEM["fp16"], split_entry=f"{entry}_split_b",
                                      split_tile=(32, 128), ws_tile=TCEC_WS_TILE)
        dtypes = {"fp32": precision}
        title = f"{s.title} ({precision})"
        impls += [
            Impl(f"cuda:{s.key}{suffix}", "cuda", s, dtypes, cuda, _cuda_sources(cuda.source), title),
            Impl(f"triton:{s.key}{suffix}", "triton", s, dtypes, TritonLaunch(s.key, fn), _triton_sources(s.key), title),
            Impl(f"gluon:{s.key}{suffix}", "gluon", s, dtypes, TritonLaunch(f"gluon.{s.key}", fn),
                 _gluon_sources(s.key), title),
        ]
    # Gluon's second form of the method: wgmma with A split in registers, as the CUDA stage (its mma_v2 form
    # above is the exact WMMAe mapping of seed 002).
    impls.append(Impl(f"gluon:{s.key}-wgmma", "gluon", s, {"fp32": "fp16x3-tcec"},
                      TritonLaunch(f"gluon.{s.key}", "gemm_tcec_wgmma"), _gluon_sources(s.key),
                      f"{s.title} (fp16x3-tcec, wgmma)"))
    return impls


_IMPLS: list[Impl] = [
    *_stage("01", CudaLaunch("01_naive.cu", "sgemm_naive", (32, 32, 1), (32, 32), rows_on_x=True), FP32),
    *_stage("02", CudaLaunch("02_coalesced.cu", "sgemm_coalesced", (32, 32, 1), (32, 32)), FP32),
    *_stage("03", CudaLaunch("03_smem_tiling.cu", "sgemm_smem_tiling", (32, 32, 1), (32, 32)), FP32, gluon=True),
    *_stage("04", _simt("04_tiling_1d.cu", "sgemm_tiling_1d", 64, 512), FP32, gluon=True),
    *_stage("05", _simt("05_tiling_2d.cu", "sgemm_tiling_2d", 128, 256), FP32, gluon=True),
    *_stage("06", _simt("06_vectorized.cu", "sgemm_vectorized", 128, 256, vec=True), FP32, gluon=True),
    *_stage("07", _simt("07_cp_async.cu", "sgemm_cp_async", 128, 256, smem=CP_ASYNC_SMEM, vec=True), FP32, gluon=True),
    *_stage("08", _simt("08_warp_specialized.cu", "sgemm_warp_specialized", 128, 288, smem=WS_SMEM, vec=True),
            FP32, gluon=True),
    *_stage("09", CudaDispatch(tuple(_simt("09_best_simt.cu", f"sgemm_best_{bm}x{bn}", (bm, bn), thr,
                                           3 * bk * (bm + 4 + bn) * 4, vec=True)
                                     for bm, bn, thr, bk in BEST_TILES)), FP32, gluon=True),
    *_wmma_stage(),
    *_half_stage("11", _cuda_tc("11_wmma_async.cu", "wmma_async_{pair}", HALF_IO, 256, (128, 128),
                                WMMA_ASYNC_SMEM, vec=True)),
    # Triton and Gluon 12 run stage 11's kernel, compiled or launched differently (their files say why).
    *_half_stage("12", _cuda_tc("12_mma_ldmatrix.cu", "mma_{pair}", HALF_IO, 256, (128, 128), MMA_SMEM, vec=True),
                 triton_uses=("11_wmma_async",), gluon_uses=("11_wmma_async",)),
    *_half_stage("13", SWIZZLE, gluon_uses=("11_wmma_async",)),
    _swizzle_tma(),
    *_tcec_stage(),
    Impl("cublas", "cublas", None, {**FP32, **HALF}, TorchLaunch("gemm_fp32"),
         (ROOT / "study" / "cublas.py",), "cuBLAS (torch.addmm, TF32 off)"),
    Impl("cublas:fp64", "cublas", None, {"fp64": "fp64"}, TorchLaunch("gemm_fp64", "cublas_tc"),
         (ROOT / "study" / "cublas_tc.py", ROOT / "study" / "cublas.py"), "cuBLAS DGEMM (torch.addmm)"),
    Impl("cublas:int8", "cublas", None, {"int8": "int8/int32acc"}, TorchLaunch("gemm_int8", "cublas_tc"),
         (ROOT / "study" / "cublas_tc.py", ROOT / "study" / "cublas.py"), "cuBLASLt int8 (torch._int_mm)",
         out_dtypes={"int8": "int32"}),
    Impl("cublas:tf32", "cublas", None, TF32, TorchLaunch("gemm_tf32"),
         (ROOT / "study" / "cublas.py",), "cuBLAS (torch.addmm, TF32 on)"),
    Impl("triton:tuned", "triton", None, {**FP32, **HALF}, TritonLaunch("baseline_tuned", "gemm_ieee"),
         _triton_sources("baseline_tuned"), "Tuned Triton matmul (tl.dot, autotuned)"),
    Impl("triton:tuned-tf32", "triton", None, TF32, TritonLaunch("baseline_tuned", "gemm_tf32"),
         _triton_sources("baseline_tuned"), "Tuned Triton matmul, TF32"),
    Impl("triton:tuned-tf32x3", "triton", None, {"fp32": "tf32x3"}, TritonLaunch("baseline_tuned", "gemm_tf32x3"),
         _triton_sources("baseline_tuned"), "Tuned Triton matmul, input_precision=tf32x3"),
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
    bench = ROOT / "study" / "kernels"
    return out + [(bench / "fma_peak.cu", "fma_peak", False), (bench / "bandwidth.cu", "smem_read", False),
                  (bench / "bandwidth.cu", "l2_read", False), (bench / "profile_marker.cu", "profile_marker", False),
                  *((bench / "mma_peak.cu", e, False) for e in ("mma_peak_f16", "mma_peak_bf16", "mma_peak_tf32",
                                                                  "mma_peak_s8"))]
