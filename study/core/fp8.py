"""fp8 (e4m3) GEMMs: the scaled operands, their contract and the quantization helpers (stage 16).

    D = alpha * (A * scale_a) @ (B * scale_b) + beta * C       A, B: e4m3; C, D: bf16; fp32 scales

An fp8 GEMM multiplies e4m3 values, each operand carrying fp32 scales in one of three granularities
(`SCALINGS`), the ones DeepSeek-V3 and cuBLASLt use:

    scaling   scale_a                                   scale_b
    tensor    (1,): one for all of A                    (1,): one for all of B
    row       (M,): one per row of A                    (N,): one per column of B
    block     (M, KB), column-major: one per row and    (KB, NB), column-major: one per 128 x 128 block
              128-deep k-block (1x128)                  (KB = ceil(K / 128), NB = ceil(N / 128))

Column-major is torch._scaled_mm's layout for block scales: element (m, kb) of scale_a at kb * M + m, element
(kb, nb) of scale_b at nb * KB + kb.  A and B are K-major, as fp8 wgmma and cuBLASLt require: A row-major, B
column-major (the transposed view `bt.t()` of a row-major N x K matrix).  The rest of the GEMM contract is
study.core.contract's.  The float64 reference is of the dequantized operands, so the scales are the caller's
choice: `quantize` is one way to pick them, outside any timed GEMM.

Range: the forms apply alpha, beta and the scales in float32 (the epilogue, and block scaling's per-chunk
factor scale_a * scale_b), so each of them and their products must lie within float32's range; beyond it D
holds infinities, as float32 arithmetic gives.  The scales' values live on the GPU and are not read before a
launch; non-finite scales are the caller's, and propagate into D.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from study.core.contract import Problem, validate

E4M3 = torch.float8_e4m3fn
E4M3_MAX = 448.0                      # the largest finite e4m3 value
BLOCK = 128                           # the k-block of block scaling, and the promotion interval of stage 16
SCALINGS = ("tensor", "row", "block")


def blocks(n: int) -> int:
    return -(-n // BLOCK)


def scale_shapes(scaling: str, M: int, N: int, K: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shapes of scale_a and scale_b for an M x N x K GEMM."""
    return {"tensor": ((1,), (1,)), "row": ((M,), (N,)),
            "block": ((M, blocks(K)), (blocks(K), blocks(N)))}[scaling]


def unit_scales(scaling: str, M: int, N: int, K: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """scale_a and scale_b of all ones, in the contract's shapes and layouts."""
    return tuple(column_major(torch.ones(s, device=device)) if len(s) == 2 else torch.ones(s, device=device)
                 for s in scale_shapes(scaling, M, N, K))


def column_major(t: torch.Tensor) -> torch.Tensor:
    """The same 2-D values stored column-major (strides (1, rows))."""
    return t.t().contiguous().t()


def _canonical(t: torch.Tensor, shape: tuple[int, ...]) -> bool:
    """`t` has `shape` and the layout the kernels index: contiguous for a vector, column-major for a matrix."""
    if tuple(t.shape) != shape:
        return False
    if len(shape) == 1:
        return shape[0] == 1 or t.stride(0) == 1
    rows, cols = shape
    return (rows == 1 or t.stride(0) == 1) and (cols == 1 or t.stride(1) == rows)


@dataclass(frozen=True)
class ScaledProblem(Problem):
    """A validated fp8 call: A (M x K) and B (K x N) K-major, their scales, and the rest of a Problem."""
    scale_a: torch.Tensor | None = None
    scale_b: torch.Tensor | None = None
    scaling: str = "tensor"

    @property
    def bt(self) -> torch.Tensor:
        """B^T, N x K row-major: what a tensor map of B is made from."""
        return self.b.t()

    @property
    def lda(self) -> int:
        return self.a.stride(0) if self.a.shape[0] > 1 else self.a.shape[1]

    @property
    def ldbt(self) -> int:
        return self.b.stride(1) if self.b.shape[1] > 1 else self.b.shape[0]


def validate_scaled(name: str, scaling: str, dtypes: dict[str, str], out_dtypes: dict[str, str], a, b, c=None,
                    alpha=1.0, beta=0.0, out=None, scale_a=None, scale_b=None, *,
                    allow_cpu: bool = False) -> ScaledProblem:
    """contract.validate, then what an fp8 GEMM adds: A and B K-major, and scales of this `scaling`."""
    def fail(exc, msg):
        raise exc(f"{name}: {msg}")

    p = validate(name, dtypes, out_dtypes, a, b, c, alpha, beta, out, allow_cpu=allow_cpu,
                 layouts=("row-major", "col-major"))
    M, N, K = p.mnk
    if K > 1 and p.a.stride(1) != 1:
        fail(ValueError, f"A must be K-major (row-major, unit stride along K), got strides {tuple(p.a.stride())}")
    if K > 1 and p.b.stride(0) != 1:
        fail(ValueError, f"B must be K-major (column-major, unit stride along K: pass bt.t() for a row-major N x K "
                         f"bt), got strides {tuple(p.b.stride())}; fp8 wgmma reads both operands K-major")
    want_a, want_b = scale_shapes(scaling, M, N, K)
    for label, s, shape in (("scale_a", scale_a, want_a), ("scale_b", scale_b, want_b)):
        layout = "column-major " if len(shape) == 2 else ""
        if not isinstance(s, torch.Tensor):
            fail(TypeError, f"{scaling} scaling needs {label}, a {layout}float32 tensor of shape {shape}, "
                            f"got {type(s).__name__}")
        if s.dtype != torch.float32 or s.device != p.a.device:
            fail(TypeError, f"{label} must be float32 on {p.a.device}, got {s.dtype} on {s.device}")
        if not _canonical(s, shape):
            fail(ValueError, f"{scaling} scaling takes {label} of shape {shape}, {layout or 'contiguous, '}"
                             f"got shape {tuple(s.shape)} strides {tuple(s.stride())}")
    for label, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s.numel() and s.untyped_storage().data_ptr() == p.out.untyped_storage().data_ptr():
            fail(ValueError, f"out shares storage with {label}; D must not alias its inputs")
    return ScaledProblem(p.a, p.b, p.c, p.out, p.alpha, p.beta, p.a_col, p.b_col, scale_a, scale_b, scaling)


# --- quantization (outside the timed GEMM) --------------------------------------------------------------------

def _amax_scale(amax: torch.Tensor) -> torch.Tensor:
    """The scale that maps |x| <= amax onto e4m3's range: 1 where a group is all zeros, and float32's smallest
    normal number where amax / 448 falls below it (a scale flushed to zero would make 0 / 0; the group's values
    then round to e4m3's subnormals or to zero)."""
    amax = amax.float()
    tiny = torch.finfo(torch.float32).tiny
    return torch.where(amax > 0, (amax / E4M3_MAX).clamp_min(tiny), torch.ones_like(amax))


def _finite_matrix(name: str, x, scaling: str) -> torch.Tensor:
    """x as float32, refused with a clear error unless `scaling` is a mode and x a non-empty 2-D real matrix whose
    values are finite in float32 (e4m3 has no infinity, and one NaN or Inf would spoil its whole group's scale)."""
    if scaling not in SCALINGS:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.numel() == 0:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name}: x must be a non-empty 2-D matrix, got {shape}")
    if x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name}: x must be real-valued, got {x.dtype}")
    xf = x.float()
    bad = int((~torch.isfinite(xf)).sum())
    if bad:
        raise ValueError(f"{name}: x holds {bad} value(s) that are NaN, infinite or beyond float32's range; "
                         "e4m3 scales need finite input")
    return xf


def _block_amax(x: torch.Tensor, rows_per_block: int) -> torch.Tensor:
    """amax of x (R x K) over blocks of `rows_per_block` rows x 128 columns: shape (ceil(R/rpb), ceil(K/128))."""
    R, K = x.shape
    pad = torch.zeros(blocks(R) * BLOCK if rows_per_block == BLOCK else R, blocks(K) * BLOCK,
                      dtype=torch.float32, device=x.device)
    pad[:R, :K] = x.float().abs()
    return pad.view(pad.shape[0] // rows_per_block, rows_per_block, blocks(K), BLOCK).amax(dim=(1, 3))


def quantize_a(x: torch.Tensor, scaling: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A (M x K, any real dtype, finite) -> (e4m3 A, row-major; scale_a) with scales from each group's amax."""
    return _quantize_rows(_finite_matrix("quantize_a", x, scaling), scaling)


def _quantize_rows(x: torch.Tensor, scaling: str) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize_a of a checked float32 x."""
    M, K = x.shape
    if scaling == "tensor":
        s = _amax_scale(x.abs().amax().reshape(1))
        full = s.expand(M, K)
    elif scaling == "row":
        s = _amax_scale(x.abs().amax(dim=1))
        full = s[:, None].expand(M, K)
    else:
        s = _amax_scale(_block_amax(x, 1))                       # (M, KB)
        full = s.repeat_interleave(BLOCK, dim=1)[:, :K]
        s = column_major(s)
    q = (x / full).clamp(-E4M3_MAX, E4M3_MAX).to(E4M3).contiguous()
    return q, s.contiguous() if s.dim() == 1 else s


def quantize_b(x: torch.Tensor, scaling: str) -> tuple[torch.Tensor, torch.Tensor]:
    """B (K x N, any float dtype) -> (e4m3 B, K-major; scale_b): per column for "row", per 128 x 128 block for
    "block"."""
    x = _finite_matrix("quantize_b", x, scaling)
    K, N = x.shape
    if scaling in ("tensor", "row"):
        qt, s = _quantize_rows(x.t(), scaling)                    # a column of B is a row of B^T
        return qt.t(), s
    s = _amax_scale(_block_amax(x.t(), BLOCK)).t()                # (KB, NB)
    full = s.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:K, :N]
    qt = (x / full).clamp(-E4M3_MAX, E4M3_MAX).t().contiguous().to(E4M3)
    return qt.t(), column_major(s)


def dequantize(q: torch.Tensor, scale: torch.Tensor, scaling: str, operand: str) -> torch.Tensor:
    """The float64 values an e4m3 operand and its scales stand for (operand "a": M x K; "b": K x N)."""
    x = q.double()
    if scaling == "tensor":
        return x * scale.double()[0]
    if scaling == "row":
        return x * (scale.double()[:, None] if operand == "a" else scale.double()[None, :])
    R, C = x.shape
    s = scale.double()
    if operand == "a":
        return x * s.repeat_interleave(BLOCK, dim=1)[:, :C]
    return x * s.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:R, :C]


def scales_for(scale_a: torch.Tensor, scale_b: torch.Tensor, scaling: str, M: int, N: int, K: int):
    """Scales drawn for a larger problem, cut to M x N x K in the canonical layout (what a test that takes a
    sub-matrix of its operands passes)."""
    if scaling == "tensor":
        return scale_a, scale_b
    if scaling == "row":
        return scale_a[:M].contiguous(), scale_b[:N].contiguous()
    return column_major(scale_a[:M, :blocks(K)]), column_major(scale_b[:blocks(K), :blocks(N)])


# --- what a TMA-fed form needs --------------------------------------------------------------------------------

def _tma_ready(t: torch.Tensor, pitch: int) -> bool:
    return t.data_ptr() % 16 == 0 and (t.shape[0] == 1 or pitch % 16 == 0)


def k_major_16(p: ScaledProblem):
    """(A, B^T, refresh): the K-major operands as row-major matrices a tensor map can take (16-byte aligned start
    and pitch).  Aligned operands are themselves (refresh does nothing); others are copied into 16-byte pitched
    buffers allocated now, which refresh() fills again: call it at the start of every run, since a prepared launch
    is re-run on tensors whose values may have changed."""
    pairs = []
    for t, pitch in ((p.a, p.lda), (p.bt, p.ldbt)):
        if _tma_ready(t, pitch):
            pairs.append((t, None))
        else:
            rows, cols = t.shape
            buf = torch.empty(rows, -(-cols // 16) * 16, dtype=t.dtype, device=t.device)[:, :cols]
            pairs.append((buf, t))
    copies = [(dst, src) for dst, src in pairs if src is not None]

    def refresh():
        for dst, src in copies:
            dst.copy_(src)
    return pairs[0][0], pairs[1][0], refresh


def block_scales_16(p: ScaledProblem):
    """(sa, sb, refresh) for a kernel that copies block scales in 16-byte runs: sa as KB rows of M and sb as NB
    rows of KB, each row pitched to a multiple of 4 floats from a 16-byte aligned start (the canonical layouts,
    read by rows: scale_a.t() and scale_b.t()).  Scales already so are themselves (refresh does nothing); others
    are copied into zero-padded buffers allocated now, which refresh() fills again at the start of every run."""
    copies, out = [], []
    for t in (p.scale_a.t(), p.scale_b.t()):
        rows, cols = t.shape
        pitch = -(-cols // 4) * 4
        if t.data_ptr() % 16 == 0 and cols == pitch and t.stride(1) == 1 and (rows == 1 or t.stride(0) == pitch):
            out.append(t)
        else:
            buf = torch.zeros(rows, pitch, dtype=t.dtype, device=t.device)
            copies.append((buf[:, :cols], t))
            out.append(buf)

    def refresh():
        for dst, src in copies:
            dst.copy_(src)
    return out[0], out[1], refresh


__all__ = ["BLOCK", "E4M3", "E4M3_MAX", "SCALINGS", "ScaledProblem", "block_scales_16", "blocks", "column_major",
           "dequantize", "k_major_16", "quantize_a", "quantize_b", "scale_shapes", "scales_for", "unit_scales",
           "validate_scaled"]
