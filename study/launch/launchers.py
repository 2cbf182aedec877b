"""How an implementation is launched: the launch records the catalogue (study/registry.py) declares.

A CUDA record names a kernel file, an entry and the launch geometry; it passes the kernel's arguments by name,
against a parameter list declared once per kind of entry (the `*_PARAMS` below), which the driver checks
against the loaded kernel's real parameters (study/launch/driver.py).  Dynamic shared memory is never
computed here: every entry exports it (STUDY_ENTRY_FACTS in cuda_kernels/gemm_common.cuh) as `<entry>_smem`,
beside its tile (`<entry>_bm`, `<entry>_bn`) and block size (`<entry>_threads`), which must equal the
record's when the kernel is loaded.

Records are frozen and hold no state.  `bind(name, p)` returns one checked call (`Bound`): `run()` launches
it, `resources()` says what the kernel it launches uses.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field, replace
from typing import Callable

import torch

from study.core.contract import aligned16, dtype_name, validate
from study.core.paths import CUDA_DIR
from study.launch import driver
from study.launch.build import NVCC_FLAGS, build
from study.launch.driver import params

# Parameter lists, as the .cu files declare them.  {s}: the C type of alpha and beta.
GEMM_PARAMS = "M:int N:int K:int alpha:{s} A:ptr lda:i64 B:ptr ldb:i64 beta:{s} C:ptr ldc:i64 D:ptr ldd:i64"
BATCH_PARAMS = "batch_a:i64 batch_b:i64 batch_c:i64 batch_d:i64"          # element distance between matrices
SPLIT_PARAMS = params("B:ptr ldb:i64 K:int N:int batch_b:i64 ws:ptr amax_b:ptr")
AMAX_PARAMS = params("A:ptr lda:i64 B:ptr ldb:i64 M:int N:int K:int batch_a:i64 batch_b:i64 amax_a:ptr amax_b:ptr")
TMA_PARAMS = params("map_a:tmap map_b:tmap M:int N:int K:int alpha:double beta:double C:ptr ldc:i64 D:ptr ldd:i64")


@dataclass(eq=False)
class Bound:
    """One checked call of one launch record."""
    run: Callable[[], object]
    resources: Callable[[], dict | None] = lambda: None

    def __call__(self):
        return self.run()


def _batch(impl, a, b, out):
    """A batched call's checked problem (its first matrices), output and element distances between matrices:
    A: BxMxK, B: BxKxN, D (allocated if None): BxMxN, all contiguous, B <= 65535 (the grid's batch dimension)."""
    if out is None:
        out = torch.empty(a.shape[0], a.shape[1], b.shape[2], dtype=a.dtype, device=a.device)
    if not (a.is_contiguous() and b.is_contiguous() and out.is_contiguous()):
        raise ValueError(f"{impl.name}: batched operands must be contiguous")
    if tuple(out.shape) != (a.shape[0], a.shape[1], b.shape[2]) or out.dtype != a.dtype:
        raise ValueError(f"{impl.name}: batched out must be {(a.shape[0], a.shape[1], b.shape[2])} {a.dtype}")
    if not 1 <= a.shape[0] <= 65535:
        raise ValueError(f"{impl.name}: a batch of {a.shape[0]} exceeds the grid's 65535")
    p = validate(impl.name, impl.dtypes, impl.out_dtypes, a[0], b[0], out=out[0])
    return p, out, dict(batch_a=a.stride(0), batch_b=b.stride(0), batch_c=out.stride(0), batch_d=out.stride(0))


def _all_aligned16(p) -> bool:
    return all(aligned16(t) for t in (p.a, p.b, p.c, p.out) if t is not None)


@dataclass(frozen=True)
class CudaLaunch:
    """A cuda_kernels/*.cu entry: one block per `tile` of D, `block` threads each.

    A kernel that moves 16-byte vectors names an `unaligned_entry` too (the same template, scalar accesses):
    it is launched whenever an operand's start or leading dimension is not a multiple of 16 bytes, so a view
    at an odd offset gets the slow path, never a misaligned-address fault."""
    source: str
    entry: str
    block: tuple[int, int, int]
    tile: tuple[int, int]            # (rows, cols) of D per block
    rows_on_x: bool = False          # grid.x walks M (stage 01's uncoalesced map) instead of N
    defines: tuple[str, ...] = ()    # nvcc -D macros (a tuning variant's entries are built only under one)
    aligned_only: bool = False       # no scalar twin (a tuning variant): refuse operands that are not aligned
    spills_ok: bool = False          # CI fails on register spills unless a kernel declares them deliberate
    unaligned_entry: str = ""
    scalar: str = field(default="float", repr=False)   # C type of alpha and beta ("double": tensor-core stages)

    def params(self, entry: str = "") -> tuple:
        """The parameters of `entry` (any of this record's entries), as its C signature declares them."""
        return params(GEMM_PARAMS.format(s=self.scalar))

    def flags(self) -> tuple[str, ...]:
        return NVCC_FLAGS + tuple(f"-D{d}" for d in self.defines)

    def expected_facts(self, entry: str) -> dict[str, int]:
        """The record's geometry for `entry`, as the kernel must export it."""
        return {f"{entry}_bm": self.tile[0], f"{entry}_bn": self.tile[1],
                f"{entry}_threads": self.block[0] * self.block[1] * self.block[2]}

    def dynamic_smem(self, entry: str | None = None) -> int:
        """Bytes of dynamic shared memory per block of `entry`, as the kernel exports them."""
        return build(CUDA_DIR / self.source, flags=self.flags()).exports[f"{entry or self.entry}_smem"]

    def kernel(self, entry: str, device) -> driver.LoadedKernel:
        """The loaded entry, its parameters and exported geometry checked."""
        return driver.kernel(CUDA_DIR / self.source, entry, device, self.params(entry), smem_fact=f"{entry}_smem",
                             expect=self.expected_facts(entry), flags=self.flags())

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
        if not _all_aligned16(p):
            self._refuse_unaligned()
            if self.unaligned_entry:
                return self.unaligned_entry
        return self.entry

    def _refuse_unaligned(self) -> None:
        if self.aligned_only:
            raise ValueError(f"{self.entry}: this launch takes only 16-byte aligned operands")

    def plan(self, p, sms: int) -> tuple[str, ...]:
        """The entries a call on `p` launches on a GPU of `sms` SMs (what the GPU suite must reach)."""
        return (self.entry_for(p),)

    def bind(self, name: str, p) -> Bound:
        entry = self.entry_for(p)
        return Bound(self._prepared(name, p, entry, 1, {}), lambda: self.resources(entry))

    def _gemm_args(self, p) -> dict:
        M, N, K = p.mnk
        c = p.c if p.c is not None else p.out   # never read when beta == 0 (the kernel checks beta)
        return dict(M=M, N=N, K=K, alpha=p.alpha, A=p.a, lda=p.lda, B=p.b, ldb=p.ldb, beta=p.beta, C=c,
                    ldc=c.stride(0), D=p.out, ldd=p.out.stride(0))

    def _prepared(self, name: str, p, entry: str, depth: int, extra: dict):
        """The GEMM launch on `p`, loaded, checked and packed now: the closure only launches."""
        M, N, _ = p.mnk
        gx, gy, _ = self.grid(name, M, N)
        k = self.kernel(entry, p.a.device)
        return driver.prepared(k, (gx, gy, depth), self.block, k.smem, {**self._gemm_args(p), **extra}, p.a.device)

    def resources(self, entry: str | None = None) -> dict:
        entry = entry or self.entry
        r = build(CUDA_DIR / self.source, flags=self.flags()).resources[entry]
        return {"registers": r.registers, "smem_bytes": r.smem_bytes + self.dynamic_smem(entry), "spills": r.spills}


@dataclass(frozen=True)
class CudaBatchedLaunch(CudaLaunch):
    """A kernel whose grid.z walks a batch: after the GEMM arguments it takes the element distance between
    consecutive A, B, C and D matrices (all 0 for a single GEMM)."""

    def params(self, entry: str = "") -> tuple:
        return super().params(entry) + params(BATCH_PARAMS)

    def bind(self, name: str, p) -> Bound:
        entry = self.entry_for(p)
        return Bound(self._prepared(name, p, entry, 1, dict.fromkeys(("batch_a", "batch_b", "batch_c", "batch_d"), 0)),
                     lambda: self.resources(entry))

    def batched(self, impl, a, b, out=None):
        """D[i] = A[i] @ B[i] in one launch (grid.z: the batch); see _batch."""
        p, out, strides = _batch(impl, a, b, out)
        vec = self.entry_for(p) == self.entry and all(s % 4 == 0 for s in strides.values())   # every matrix aligned
        self._prepared(impl.name, p, self.entry if vec else self.unaligned_entry, a.shape[0], strides)()
        return out


@dataclass(frozen=True)
class CudaPresplitLaunch(CudaBatchedLaunch):
    """Three kernels per GEMM.  `amax_entry` first finds each row of A's and each column of B's largest |x| (into
    amax_a and amax_b, int32 per line, zeroed here; its tile is (rows of A, columns of B) per block, over
    `amax_k` of K).  `split_entry` then writes B, scaled by its columns' powers of two and split, into a
    workspace of `<split_entry>_ws_tile` halves per (k-tile of `split_tile[0]`, column block of
    `split_tile[1]`); the GEMM entry reads that (its `ws` argument) and both maxima.  The buffers are allocated
    per call, and every launch is inside what is timed."""
    split_entry: str = ""
    split_tile: tuple[int, int] = (32, 128)
    amax_entry: str = ""
    amax_tile: tuple[int, int] = (8, 64)
    amax_k: int = 256
    amax_threads: int = 256

    def params(self, entry: str = "") -> tuple:
        if entry == self.split_entry:
            return SPLIT_PARAMS
        if entry == self.amax_entry:
            return AMAX_PARAMS
        return super().params(entry) + params("ws:ptr amax_a:ptr amax_b:ptr")

    def expected_facts(self, entry: str) -> dict[str, int]:
        if entry == self.split_entry:      # one block of split_tile[1] threads per k-tile and column block
            return {f"{entry}_bm": self.split_tile[0], f"{entry}_bn": self.split_tile[1],
                    f"{entry}_threads": self.split_tile[1]}
        if entry == self.amax_entry:
            return {f"{entry}_bm": self.amax_tile[0], f"{entry}_bn": self.amax_tile[1],
                    f"{entry}_threads": self.amax_threads}
        return super().expected_facts(entry)

    def entries(self) -> tuple[str, ...]:
        return (*super().entries(), self.split_entry, self.amax_entry)

    def plan(self, p, sms: int) -> tuple[str, ...]:
        return (self.amax_entry, self.split_entry, *super().plan(p, sms))

    def _prepared(self, name: str, p, entry: str, depth: int, extra: dict):
        """The three launches, loaded and checked now; each call allocates its own buffers (inside the timing)."""
        M, N, K = p.mnk
        kt, nb = -(-K // self.split_tile[0]), -(-N // self.split_tile[1])
        if nb > 65535:
            raise ValueError(f"{name}: N = {N} needs {nb} column blocks for B's split; the launch allows 65535")
        amax_grid = (-(-M // self.amax_tile[0]) + -(-N // self.amax_tile[1]), -(-K // self.amax_k), depth)
        if amax_grid[1] > 65535:
            raise ValueError(f"{name}: K = {K} needs {amax_grid[1]} k-blocks to find the line maxima; the launch "
                             f"allows 65535")
        amax = self.kernel(self.amax_entry, p.a.device)
        split = self.kernel(self.split_entry, p.b.device)
        size = depth * kt * nb * split.exports[f"{self.split_entry}_ws_tile"]
        gemm = self.kernel(entry, p.a.device)
        gx, gy, _ = self.grid(name, M, N)
        args = {**self._gemm_args(p), **extra}

        def run():
            maxima = torch.zeros(depth * (M + N), dtype=torch.int32, device=p.a.device)
            lines = dict(amax_a=maxima[:depth * M], amax_b=maxima[depth * M:])
            ws = torch.empty(size, dtype=torch.float16, device=p.b.device)
            driver.launch(amax, amax_grid, (self.amax_threads, 1, 1), amax.smem,
                          dict(A=p.a, lda=p.lda, B=p.b, ldb=p.ldb, M=M, N=N, K=K, batch_a=extra["batch_a"],
                               batch_b=extra["batch_b"], **lines), p.a.device)
            driver.launch(split, (kt, nb, depth), (self.split_tile[1], 1, 1), split.smem,
                          dict(B=p.b, ldb=p.ldb, K=K, N=N, batch_b=extra["batch_b"], ws=ws,
                               amax_b=lines["amax_b"]), p.b.device)
            driver.launch(gemm, (gx, gy, depth), self.block, gemm.smem, {**args, "ws": ws, **lines}, p.a.device)
        return run


@dataclass(frozen=True)
class CudaSplitTmaLaunch(CudaLaunch):
    """TCEC on rung 14's machinery (cuda_kernels/15_tcec.cu): two passes split A (per row) and B (per column) into
    exactly scaled hi/lo fp16 matrices (tcec_lines: A's split beside B's column maxima; tcec_split_b), and the
    persistent TMA-fed GEMM (`entry`, one block per SM) reads them; tcec_fixup recomputes the rows and columns
    holding an inf or a NaN (FIX_LINES lines a block; a block with none returns at once). The passes' vector entries
    move 16-byte vectors where K (for A) or N (for B) is a multiple of 4 and the operand is 16-byte aligned.
    `lo_scale` is the split's 2^11 (1 for Markidis's unscaled lo); `with_lo=False` skips lo (hi alone). The split
    matrices and line maxima are allocated once per bound call; every launch, the zeroing of B's column maxima
    included, is inside what is timed. `batched` stacks a batch's matrices (seed 002's Figure 8) through the same
    launches. Row-major operands only."""
    lo_scale: float = 2048.0
    with_lo: bool = True
    pass_threads: int = 256
    col_k: int = 32
    PASSES = 2                       # tcec_lines (A's split beside B's column maxima), tcec_split_b
    LINES = {False: "tcec_lines", True: "tcec_lines_vb"}   # by B's vector path; A's is an argument
    FIX_LINES = 16                   # lines a tcec_fixup block checks

    def entries(self) -> tuple[str, ...]:
        return (self.entry, *self.LINES.values(), "tcec_split_b", "tcec_split_b_vec", "tcec_fixup")

    def params(self, entry: str = "") -> tuple:
        if entry.startswith("tcec_lines"):
            return params("A:ptr lda:i64 batch_a:i64 M:int K:int Kp:int vec_a:int lo_scale:float hi:ptr lo:ptr "
                          "amax_a:ptr B:ptr ldb:i64 batch_b:i64 N:int col_blocks:int k_blocks:int bits:ptr")
        if entry.startswith("tcec_split_b"):
            return params("B:ptr ldb:i64 batch_b:i64 K:int N:int Np:int lo_scale:float bits:ptr hi:ptr lo:ptr")
        epilogue = "amax_a:ptr amax_b:ptr alpha:float beta:float C:ptr ldc:i64 batch_c:i64 D:ptr ldd:i64 batch_d:i64"
        if entry == "tcec_fixup":
            return params(f"A:ptr lda:i64 batch_a:i64 B:ptr ldb:i64 batch_b:i64 M:int N:int K:int {epilogue}")
        return params(f"map_ahi:tmap map_alo:tmap map_bhi:tmap map_blo:tmap M:int N:int K:int batch:int {epilogue}")

    def expected_facts(self, entry: str) -> dict[str, int]:
        if entry.startswith(("tcec_lines", "tcec_split_b", "tcec_fixup")):
            w = 4 if entry.endswith(("_vb", "_vec")) else 1
            bn = self.FIX_LINES if entry == "tcec_fixup" else self.pass_threads * w
            return {f"{entry}_bm": 1, f"{entry}_bn": bn, f"{entry}_threads": self.pass_threads}
        return super().expected_facts(entry)

    def plan(self, p, sms: int) -> tuple[str, ...]:
        _, vb = self._vec(p.a, p.b, *p.mnk[1:])
        return (self.LINES[vb], "tcec_split_b_vec" if vb else "tcec_split_b", self.entry, "tcec_fixup")

    @staticmethod
    def _vec(a, b, N: int, K: int, strides: tuple[int, int] = (0, 0)) -> tuple[bool, bool]:
        return (K % 4 == 0 and strides[0] % 4 == 0 and aligned16(a)), (N % 4 == 0 and strides[1] % 4 == 0
                                                                         and aligned16(b))

    def bind(self, name: str, p) -> Bound:
        if p.a_col or p.b_col:
            raise ValueError(f"{name}: this launch takes row-major A and B only")
        run = self._launches(name, p, 1, dict.fromkeys(("batch_a", "batch_b", "batch_c", "batch_d"), 0))
        return Bound(run, lambda: self.resources(self.entry))

    def batched(self, impl, a, b, out=None):
        """D[i] = A[i] @ B[i], the batch stacked through the same launches; see _batch."""
        p, out, strides = _batch(impl, a, b, out)
        self._launches(impl.name, p, a.shape[0], strides)()
        return out

    def _launches(self, name: str, p, batch: int, strides: dict):
        """The passes and the GEMM on `batch` stacked problems like `p`, loaded and packed now."""
        M, N, K = p.mnk
        if batch * max(M, K) > 2**31 - 2**16:
            raise ValueError(f"{name}: {batch} stacked matrices of {max(M, K)} rows exceed the tensor maps' "
                             f"32-bit coordinates")
        dev, half = p.a.device, torch.float16
        kp, np_ = -(-K // 8) * 8, -(-N // 8) * 8
        ahi, alo = (torch.empty(batch * M, kp, dtype=half, device=dev) for _ in range(2))
        bhi, blo = (torch.empty(batch * K, np_, dtype=half, device=dev) for _ in range(2))
        amax_a, bits = (torch.empty(batch * n, dtype=torch.int32, device=dev) for n in (M, N))
        va, vb = self._vec(p.a, p.b, N, K, (strides["batch_a"], strides["batch_b"]))
        t, wb = self.pass_threads, (4 if vb else 1)
        k_l, k_s, k_g, k_f = (self.kernel(e, dev) for e in (self.LINES[vb], "tcec_split_b_vec" if vb else
                                                               "tcec_split_b", self.entry, "tcec_fixup"))
        lo_a, lo_b = (alo, blo) if self.with_lo else (0, 0)
        col_blocks, k_blocks = -(-N // (t * wb)), min(-(-K // self.col_k), 1024)
        if max(M + col_blocks * k_blocks, M + N) > 2**31 - 1:
            raise ValueError(f"{name}: M + N = {M + N} lines exceed the passes' grids (2**31 - 1 blocks)")
        launches = [
            driver.prepared(k_l, (M + col_blocks * k_blocks, batch, 1), (t, 1, 1), 0, dict(
                A=p.a, lda=p.lda, batch_a=strides["batch_a"], M=M, K=K, Kp=kp, vec_a=int(va), lo_scale=self.lo_scale,
                hi=ahi, lo=lo_a, amax_a=amax_a, B=p.b, ldb=p.ldb, batch_b=strides["batch_b"], N=N,
                col_blocks=col_blocks, k_blocks=k_blocks, bits=bits), dev),
            driver.prepared(k_s, (-(-np_ // (t * wb)), min(K, 65535), batch), (t, 1, 1), 0, dict(
                B=p.b, ldb=p.ldb, batch_b=strides["batch_b"], K=K, N=N, Np=np_, lo_scale=self.lo_scale, bits=bits,
                hi=bhi, lo=lo_b), dev),
        ]
        tiles = batch * -(-M // self.tile[0]) * -(-N // self.tile[1])
        c = p.c if p.c is not None else p.out
        epilogue = dict(amax_a=amax_a, amax_b=bits, alpha=p.alpha, beta=p.beta, C=c, ldc=c.stride(0),
                        batch_c=strides["batch_c"], D=p.out, ldd=p.out.stride(0), batch_d=strides["batch_d"])
        launches += [
            driver.prepared(k_g, (min(tiles, driver.sm_count(dev)), 1, 1), self.block, k_g.smem, dict(
                map_ahi=driver.tensor_map_2d(ahi[:, :K], (128, 64)),
                map_alo=driver.tensor_map_2d(alo[:, :K], (128, 64)),
                map_bhi=driver.tensor_map_2d(bhi[:, :N], (64, 64)), map_blo=driver.tensor_map_2d(blo[:, :N], (64, 64)),
                M=M, N=N, K=K, batch=batch, **epilogue), dev),
            driver.prepared(k_f, (-(-(M + N) // self.FIX_LINES), batch, 1), (t, 1, 1), 0, dict(
                A=p.a, lda=p.lda, batch_a=strides["batch_a"], B=p.b, ldb=p.ldb, batch_b=strides["batch_b"], M=M, N=N,
                K=K, **epilogue), dev),
        ]
        buffers = (ahi, alo, bhi, blo, amax_a)   # the packed launches hold their addresses: kept alive by run

        def run(upto: int = len(launches)):
            bits.zero_()
            for launch in launches[:upto]:
                launch()
            return buffers
        return run

    def many_tiles(self, sms: int) -> tuple[int, int]:
        """An M x N of about 2.5 tiles per SM, ragged in both, N a multiple of 4 (B's vector passes): every block of
        the persistent grid walks several tiles, its ring running on from one into the next."""
        return 23 * self.tile[0] - 37, -(-5 * sms // 46) * self.tile[1] - 60

    def passes(self, name: str, p) -> Callable[[], object]:
        """The three passes of a call on `p` alone (the zeroing of B's maxima included): their share of its time."""
        run = self._launches(name, p, 1, dict.fromkeys(("batch_a", "batch_b", "batch_c", "batch_d"), 0))
        return lambda: run(self.PASSES)


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
        name = self.entry.format(pair=dict(self.pairs)[dtype_name(p.a.dtype)], ab=p.layouts)
        if _all_aligned16(p):
            return name
        self._refuse_unaligned()
        return name + "_unaligned" if self.vec else name


@dataclass(frozen=True)
class CudaTmaLaunch(CudaTypedLaunch):
    """A kernel fed by the copy engine: A and B reach it as tensor maps (boxes of `a_box` and `b_box` elements,
    rows x cols, 128-byte swizzle).  With `persistent`, one block per resident slot walks D's tiles, in clusters
    of `cluster` blocks along M (the kernel's __cluster_dims__); otherwise one block per tile.  `balance` trims a
    persistent grid to the fewest blocks (clusters) that take the same number of waves, the SMs left over
    staying idle: 512 tiles on 132 SMs run as 128 blocks of 4 tiles, not 116 of 4 and 16 of 3 (the longest
    block's count, the critical path, is the same).  With `d_box` the kernel stores D by TMA too: its last
    parameter is D's tensor map, in boxes of d_box.  A tensor map needs 16-byte aligned starts and pitches, so
    any call with an operand that is not goes to `unaligned`, a block-per-tile launch of the same stage or the
    one below."""
    a_box: tuple[int, int] = (128, 64)
    b_box: tuple[int, int] = (64, 64)
    cluster: int = 1
    persistent: bool = True
    d_box: tuple[int, int] | None = None
    unaligned: CudaTypedLaunch | None = None
    balance: bool = False

    def params(self, entry: str = "") -> tuple:
        return TMA_PARAMS + (params("map_d:tmap") if self.d_box else ())

    def plan(self, p, sms: int) -> tuple[str, ...]:
        return self.unaligned.plan(p, sms) if not _all_aligned16(p) else (self.entry_for(p),)

    def bind(self, name: str, p) -> Bound:
        if not _all_aligned16(p):
            return self.unaligned.bind(name, p)
        entry = self.entry_for(p)
        k = self.kernel(entry, p.a.device)
        return Bound(self.prepared_kernel(k, p.a, p.b, p.c if p.c is not None else p.out, p.alpha, p.beta, p.out),
                     lambda: self.resources(entry))

    def many_tiles(self, sms: int) -> tuple[int, int]:
        """An M x N, ragged in both, of at least 2.5 tiles per SM: every block of the grid walks several tiles,
        and its ring runs on from one into the next (what the tests and the sanitizer must reach).  23 tile-rows:
        with clusters of 2 along M, the last pair's second tile lies wholly past M."""
        return 23 * self.tile[0] - 37, -(-5 * sms // 46) * self.tile[1] - 61

    def prepared_kernel(self, k, a, b, c, alpha: float, beta: float, out):
        """The launch of the loaded kernel `k` on checked operands, its tensor maps encoded now; C is never read
        when beta == 0."""
        (M, K), N = a.shape, b.shape[1]
        tiles = -(-M // (self.tile[0] * self.cluster)) * -(-N // self.tile[1]) * self.cluster
        if tiles > 2**31 - 1:
            raise ValueError(f"{self.entry}: a {M}x{N} output needs {tiles} tiles; the launch allows 2**31-1")
        blocks = min(tiles, driver.resident_blocks(k, self.block, k.smem, self.cluster, a.device)) \
            if self.persistent else tiles
        if self.persistent and self.balance:
            waves = -(-tiles // blocks)
            blocks = -(-(tiles // self.cluster) // waves) * self.cluster
        maps = {"map_a": (a, self.a_box), "map_b": (b, self.b_box), **({"map_d": (out, self.d_box)} if self.d_box
                                                                          else {})}
        return driver.prepared(k, (blocks, 1, 1), self.block, k.smem, dict(
            M=M, N=N, K=K, alpha=alpha, beta=beta, C=c, ldc=c.stride(0), D=out, ldd=out.stride(0),
            **{name: driver.tensor_map_2d(t, box) for name, (t, box) in maps.items()}), a.device)


@dataclass(frozen=True)
class CudaDispatch:
    """Tile shapes of one kernel, largest first: a call takes the largest whose grid still gives every SM a
    block (big tiles reuse more, but a 1024^2 output in 128x128 tiles would leave half an H100 idle)."""
    choices: tuple[CudaLaunch, ...]

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

    def bind(self, name: str, p) -> Bound:
        M, N, _ = p.mnk
        return self.pick(M, N, driver.sm_count(p.a.device)).bind(name, p)


@dataclass(frozen=True)
class CudaModelDispatch(CudaDispatch):
    """Tile shapes of one persistent kernel, chosen by a model of a call's time: its waves (blocks over the SMs,
    one block an SM, a cluster's pad tile counted) x the tile's outputs x the choice's `cost`, its measured time
    per output at equal waves relative to the others'.  A bigger tile moves fewer operand bytes per output, so it
    wins where its waves are not much worse (stage 14: docs/14_wgmma.md, "A 256x192 tile ...")."""
    cost: tuple[float, ...] = ()

    def modelled(self, c: CudaLaunch, M: int, N: int, sms: int) -> float:
        (bm, bn), cl = c.tile, getattr(c, "cluster", 1)
        blocks = -(-(-(-M // bm)) // cl) * cl * -(-N // bn)
        return -(-blocks // max(cl, sms // cl * cl)) * bm * bn * self.cost[self.choices.index(c)]

    def pick(self, M: int, N: int, sms: int) -> CudaLaunch:
        return min(self.choices, key=lambda c: self.modelled(c, M, N, sms))   # the first of equals

    def shapes(self, sms: int) -> list[tuple[int, int]]:
        """Per choice, a ragged M x N that picks it, of at least 2.5 tiles per SM (every block walks several, its
        ring running on from one into the next) in an odd count of tile-rows (a cluster's last tile wholly past
        M): what the GPU suite and the sanitizer run for each choice.  M ends 120 rows short of a whole tile-row,
        so that the last one's rows end 8 rows into an m64 block: in a 128-row tile, inside the first consumer
        (the second has none); in a 256-row one, inside the second's first block (3 of its 6 pieces of 64x64 D:
        an odd count, which the TMA-store epilogue's buffer parity must carry into the next tile)."""
        need = -(-5 * sms // 2)
        root = max(1, round(need ** 0.5))
        out = []
        for c in self.choices:
            bm, bn = c.tile
            grids = ((rows, cols) for rows in sorted(range(1, 8 * root, 2), key=lambda r: abs(r - root))
                     for cols in range(-(-need // rows), -(-need // rows) + 4 * root))
            shape = next(((rows * bm - 120, cols * bn - 61) for rows, cols in grids
                          if self.pick(rows * bm - 120, cols * bn - 61, sms) is c), None)
            if shape is None:
                raise ValueError(f"no ragged shape of many tiles picks the {c.tile} tile on {sms} SMs")
            out.append(shape)
        return out

    def many_tiles(self, sms: int) -> tuple[int, int]:
        """The first choice's shape of many tiles (tests/test_gpu_equivalence.py runs it at a longer K)."""
        return self.shapes(sms)[0]


@dataclass(frozen=True)
class TritonLaunch:
    """A function `fn(problem)` in a triton_kernels module; imported on first use (so TRITON_INTERPRET,
    which Triton reads when the module's kernels are decorated, is honoured)."""
    module: str                      # file stem in triton_kernels/, e.g. "01_naive"
    fn: str = "gemm"

    def bind(self, name: str, p) -> Bound:
        fn = getattr(importlib.import_module(f"triton_kernels.{self.module}"), self.fn)
        compiled = []                # the kernel the last run launched (its registers, shared memory, spills)

        def run():
            compiled[:] = [fn(p)]

        def resources():
            k = compiled[0] if compiled else None
            if k is None or not hasattr(k, "metadata"):
                return None
            return {"registers": getattr(k, "n_regs", None), "smem_bytes": getattr(k.metadata, "shared", None),
                    "spills": getattr(k, "n_spills", None)}
        return Bound(run, resources)


@dataclass(frozen=True)
class TorchLaunch:
    """A function in study.launch.cublas (or study.launch.cublas_tc, for the int8 and fp64 baselines)."""
    fn: str
    # Not in the repr, which the evidence hash covers: the module's file is among the Impl's sources anyway.
    module: str = field(default="cublas", repr=False)
    # fn(problem) returns the call to time, after setting up outside the timing (a baseline's operand layout).
    prepares: bool = False

    def bind(self, name: str, p) -> Bound:
        fn = getattr(importlib.import_module(f"study.launch.{self.module}"), self.fn)
        return Bound(fn(p) if self.prepares else (lambda: fn(p)))


FP8_PARAMS = params("map_a:tmap map_b:tmap M:int N:int K:int alpha:double beta:double sa:ptr sb:ptr C:ptr ldc:i64 "
                    "D:ptr ldd:i64 store:int map_d:tmap")


def _pairs_ok(t: torch.Tensor) -> bool:
    """A bf16 row-major matrix whose column pairs (even column first) are 4-byte aligned on every row."""
    return t.data_ptr() % 4 == 0 and (t.shape[0] == 1 or t.stride(0) % 2 == 0)


@dataclass(frozen=True)
class CudaFp8Launch(CudaLaunch):
    """Stage 16's persistent fp8 kernels (cuda_kernels/16_fp8.cu) on a study.core.fp8.ScaledProblem: A and B^T,
    K-major, reach them as tensor maps in boxes of (tile rows, 128) and (tile columns / cluster, 128) bytes (a
    cluster's blocks each copy a share of B^T and multicast it); operands a tensor map cannot take are re-pitched by
    k_major_16, refreshed at the start of every run.  C and D may have any alignment: `store` tells the kernel
    how this call's D leaves: 2, by TMA stores of 64x64 boxes through map_d (with `tma_store`, D 16-byte aligned in
    start and pitch, C read as column pairs), else 1 from registers as 4-byte column pairs (C and D allow them), else
    0 element by element.  One block per resident slot (clusters of `cluster` along M), balanced as CudaTmaLaunch's
    `balance`."""
    cluster: int = 1
    balance: bool = True
    tma_store: bool = True

    def params(self, entry: str = "") -> tuple:
        return FP8_PARAMS

    def entry_for(self, p) -> str:
        return self.entry

    def many_tiles(self, sms: int) -> tuple[int, int]:
        """An M x N, ragged in both, of at least 2.5 tiles per SM (as CudaTmaLaunch's): every block walks several
        tiles; 23 tile-rows, so that with clusters of 2 the last pair's second tile lies wholly past M."""
        return 23 * self.tile[0] - 37, -(-5 * sms // 46) * self.tile[1] - 61

    def bind(self, name: str, p) -> Bound:
        from study.core.fp8 import k_major_16
        M, N, K = p.mnk
        bm, bn = self.tile
        tiles = -(-M // (bm * self.cluster)) * self.cluster * -(-N // bn)
        if tiles > 2**31 - 1:
            raise ValueError(f"{name}: a {M}x{N} output needs {tiles} tiles; the launch allows 2**31-1")
        a16, bt16, refresh = k_major_16(p)
        k = self.kernel(self.entry, p.a.device)
        blocks = min(tiles, driver.resident_blocks(k, self.block, k.smem, self.cluster, p.a.device))
        if self.balance:
            waves = -(-tiles // blocks)
            blocks = -(-(tiles // self.cluster) // waves) * self.cluster
        c = p.c if p.c is not None else p.out   # never read when beta == 0
        pairs = _pairs_ok(p.out) and (p.c is None or _pairs_ok(p.c))
        d = p.out
        tma_d = self.tma_store and pairs and d.data_ptr() % 16 == 0 and (M == 1 or d.stride(0) * 2 % 16 == 0)
        map_a = driver.tensor_map_2d(a16.view(torch.uint8), (bm, 128))
        launch = driver.prepared(k, (blocks, 1, 1), self.block, k.smem, dict(
            map_a=map_a, map_b=driver.tensor_map_2d(bt16.view(torch.uint8), (bn // self.cluster, 128)),
            M=M, N=N, K=K, alpha=p.alpha, beta=p.beta, sa=p.scale_a, sb=p.scale_b, C=c, ldc=c.stride(0), D=d,
            ldd=d.stride(0), store=2 if tma_d else int(pairs),
            map_d=driver.tensor_map_2d(d, (64, 64)) if tma_d else map_a), p.a.device)   # map_a: a placeholder
        operands = (a16, bt16)   # the tensor maps' memory lives as long as the call

        def run():
            refresh()
            launch()
            return operands
        return Bound(run, lambda: self.resources(self.entry))


@dataclass(frozen=True)
class CudaFp8BulkLaunch(CudaFp8Launch):
    """A block-scaled kernel whose TMA thread copies each chunk's scales into its ring slot as two 1D bulk copies
    (whole 16-byte runs between 16-byte aligned addresses): the tile's rows of sa and 4 of sb's per-chunk values.
    The kernel reads sa as K / 128 rows of M and sb as N / 128 rows of K / 128 (rounded up), each row pitched to a
    multiple of 4 floats; scales not so (M or the chunk count not a multiple of 4, or a misaligned start) are
    copied into padded buffers by study.core.fp8.block_scales_16, refreshed at the start of every run."""

    def bind(self, name: str, p) -> Bound:
        from study.core.fp8 import block_scales_16
        sa, sb, refresh = block_scales_16(p)
        bound = super().bind(name, replace(p, scale_a=sa, scale_b=sb))

        def run():
            refresh()
            return bound.run(), sa, sb   # the padded scales live as long as the call
        return Bound(run, bound.resources)


@dataclass(frozen=True)
class CudaFp8TmaOnlyLaunch(CudaFp8Launch):
    """A tuning variant compiled with the TMA-store epilogue only: a call whose D (or C) the TMA-store path cannot
    take (D not 16-byte aligned in start and pitch, or C not readable as column pairs) is refused before launch."""

    def bind(self, name: str, p) -> Bound:
        d = p.out
        M = p.mnk[0]
        if not (_pairs_ok(d) and (p.c is None or _pairs_ok(p.c)) and d.data_ptr() % 16 == 0
                and (M == 1 or d.stride(0) * 2 % 16 == 0)):
            raise ValueError(f"{name}: compiled with TMA stores of D only: D needs a 16-byte aligned start and pitch")
        return super().bind(name, p)


SPLIT_K_PARAMS = ("M:int N:int K:int alpha:double A:ptr lda:i64 B:ptr ldb:i64 beta:double C:ptr ldc:i64 D:ptr ldd:i64 "
                  "a_col:int b_col:int ws:ptr counters:ptr map_w:tmap map_x:tmap")


@dataclass(frozen=True)
class CudaSplitKLaunch(CudaTypedLaunch):
    """Stage 17's swap-AB kernel (cuda_kernels/17_split_k.cu): tiles of 128 columns of D by MT tokens (the first
    of `token_tiles` that holds M, else the last), K cut into slices (BK deep, the entry's exported `_bk`), and a
    1-D grid of G blocks, block g taking iterations [g T / G, (g + 1) T / G) of T = tiles x slices.  `policy` picks
    G: "tiles" one block a
    tile; "split" S blocks a tile (S = SMs // tiles, at least 1: split-K in one wave); "stream" one block an SM
    (stream-K); "model" the least modelled time of the three (`modelled`).  The workspace (two fp32 partial
    tiles a block) and the tiles' counters are allocated and zeroed once per bound call; the kernel leaves the
    counters at zero.  Layouts: A and B each row- or column-major, at run time (a_col, b_col).  The copy engine
    reads B (and row-major A) through tensor maps where they are 16-byte aligned in start and pitch; any other
    call takes the _unaligned entry, which loads element by element (its maps are placeholders, never read)."""
    token_tiles: tuple[int, ...] = (16, 64, 128)
    policy: str = "model"
    # The model's constants, fitted to the decode probes of docs/17_split_k.md (H100): a split tile's fix-up costs
    # 4 slices, and 36% of the SMs at 16 tokens stream W as fast as DRAM serves it.
    fixup: float = 4.0
    saturate: float = 0.36
    POLICIES = ("tiles", "split", "stream")

    def params(self, entry: str = "") -> tuple:
        return params(SPLIT_K_PARAMS)

    def _mt(self, M: int) -> int:
        return next((t for t in self.token_tiles if M <= t), self.token_tiles[-1])

    def entries(self) -> tuple[str, ...]:
        names = [self.entry.format(mt=mt, pair=tag) for mt in self.token_tiles for _, tag in self.pairs]
        return tuple(names + [n + "_unaligned" for n in names])

    @staticmethod
    def _tma(p) -> bool:
        return aligned16(p.b) and (p.a_col or aligned16(p.a))

    def entry_for(self, p) -> str:
        name = self.entry.format(mt=self._mt(p.mnk[0]), pair=dict(self.pairs)[dtype_name(p.a.dtype)])
        return name if self._tma(p) else name + "_unaligned"

    def expected_facts(self, entry: str) -> dict[str, int]:
        mt = next(t for t in self.token_tiles if entry.startswith(self.entry.format(mt=t, pair="")))
        return {f"{entry}_bm": mt, f"{entry}_bn": self.tile[1], f"{entry}_threads": self.block[0]}

    def shapes(self, sms: int) -> list[tuple[int, int]]:
        """One ragged M x N per token tile (M three short of it, N of five column tiles and 3): what the sanitizer
        runs, aligned (each tile's TMA entry) and with A shifted (its _unaligned twin)."""
        return [(mt - 3, 5 * self.tile[1] + 3) for mt in self.token_tiles]

    def fact(self, M: int, name: str) -> int:
        """What the entry M takes exports as `<entry>_<name>`: "per_sm" (blocks an SM holds), "bk" (a slice's k)."""
        entry = self.entry.format(mt=self._mt(M), pair=self.pairs[0][1])
        return build(CUDA_DIR / self.source, flags=self.flags()).exports[f"{entry}_{name}"]

    def counts(self, M: int, N: int, K: int) -> tuple[int, int]:
        """(tiles, k-slices a tile)."""
        return -(-M // self._mt(M)) * -(-N // self.tile[1]), -(-K // self.fact(M, "bk"))

    def grid_of(self, policy: str, M: int, N: int, K: int, sms: int) -> int:
        """G for `policy` on a GPU of `sms` SMs (`sms` x the blocks an SM holds: the slots of one wave)."""
        tiles, kit = self.counts(M, N, K)
        if policy == "tiles":
            return tiles
        if policy == "split":
            return tiles * max(1, min(kit, sms // tiles))
        return min(tiles * kit, sms)

    def modelled(self, policy: str, M: int, N: int, K: int, sms: int) -> float:
        """A call's time in k-slices of one block: the longest block's slices, per wave of `sms` blocks, but no
        less than DRAM's time for all of them, plus `fixup` slices where a tile is split (the partials' round
        trip through L2, a latency more than a transfer).  DRAM's time: as if `saturate` x `sms` blocks at full
        speed saturated it, more of them (1 + MT / 128 times) as a slice's tokens add to its bytes."""
        tiles, kit = self.counts(M, N, K)
        G = self.grid_of(policy, M, N, K, sms)
        floor = tiles * kit / (self.saturate * (1 + self._mt(M) / 128) * sms)
        longest = max(-(-(tiles * kit) // G) * -(-G // sms), floor)
        return longest + (self.fixup if G > tiles or (tiles * kit) % G else 0.0)

    def pick(self, M: int, N: int, K: int, sms: int) -> str:
        if self.policy != "model":
            return self.policy
        return min(self.POLICIES, key=lambda pol: self.modelled(pol, M, N, K, sms))   # the first of equals

    def bind(self, name: str, p) -> Bound:
        M, N, K = p.mnk
        dev = p.a.device
        entry = self.entry_for(p)
        k = self.kernel(entry, dev)
        slots = driver.sm_count(dev) * self.fact(M, "per_sm")
        G = self.grid_of(self.pick(M, N, K, slots), M, N, K, slots)
        tiles, _ = self.counts(M, N, K)
        if G > 2**31 - 1:
            raise ValueError(f"{name}: a {M}x{N}x{K} call needs {G} blocks; the launch allows 2**31-1")
        mt = self._mt(M)
        ws = torch.empty(2 * G * self.tile[1] * mt, dtype=torch.float32, device=dev)
        counters = torch.zeros(tiles, dtype=torch.int32, device=dev)
        if self._tma(p):     # W^T rows (B column-major) in boxes of 128 x 64, else B's rows in boxes of BK x 64
            bk = self.fact(M, "bk")
            map_w = driver.tensor_map_2d(p.b.t() if p.b_col else p.b, (self.tile[1], 64) if p.b_col else (bk, 64))
            map_x = map_w if p.a_col else driver.tensor_map_2d(p.a, (mt, 64))
        else:
            map_w = map_x = driver.tensor_map_2d(ws[:16].view(1, 16), (1, 16))   # placeholders, never read
        launch = driver.prepared(k, (G, 1, 1), self.block, k.smem, {
            **self._gemm_args(p), "a_col": int(p.a_col), "b_col": int(p.b_col), "ws": ws, "counters": counters,
            "map_w": map_w, "map_x": map_x}, dev)

        def run():
            launch()
            return ws, counters   # the workspace lives as long as the call
        return Bound(run, lambda: self.resources(entry))
