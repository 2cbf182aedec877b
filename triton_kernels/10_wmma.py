"""Stage 10 (Triton) - tensor cores through tl.dot, every type pair Triton offers, no software pipelining.

Technique:  one program per 64x64 tile of D; per BLOCK_K step it loads a 64xBLOCK_K tile of A and a
            BLOCK_Kx64 tile of B straight from global memory (masked) and issues one tl.dot, accumulating
            in the accumulator type of the pair: fp16 -> fp32, bf16 -> fp32, fp32 -> fp32 through TF32
            (input_precision="tf32", named), int8 -> int32, fp64 -> fp64, and fp16 -> fp16 (gemm_f16acc).
            num_stages=1: no load overlaps a product, the unpipelined WMMA loop of the CUDA stage.  D and C
            are in the accumulator type (seed 003); the fp16-accumulated pair writes fp16.
Reproduces: seed 003 (generic WMMA GEMM over type pairs, transposed operands as col_major fragments).
Changed:    stages 01-09 were fp32 FMAs; the multiply-adds now run on the tensor cores.  tl.dot has no
            fragment shape to choose (16x16x16, 32x8x16 ... are CUDA-only, see study/stages.py notes).
Why faster: a Hopper tensor-core instruction retires a 64xNx16 (wgmma) or 16x8x16 (mma.sync) product per
            issue, ~15x the fp32 FMA rate for 16-bit inputs.  Measured: 187.7 TFLOP/s fp16 at 4096^3 on an
            H100 (reports/h100/results.csv).
Operand layouts: A and B arrive row- or column-major (Problem.a_col/b_col).  Pointers follow the storage
            order, so global loads are coalesced along the unit stride.  16-bit wgmma reads the resulting
            MN-major operand as it is; tf32 and int8 wgmma need K-major operands, and the compiler
            transposes through registers on the way into shared memory.
Ragged edges: masked loads give zeros outside M, N and K; masked stores; beta == 0 (HAS_C=False) compiles
            no load of C.  Offsets are 64-bit.  alpha and beta are passed as fp64 (annotated): the fp64
            pair scales in fp64, the integer pairs in int32 (the contract makes them integral), the rest
            in fp32.
Compiles to (Triton 3.6, sm_90a): wgmma m64n64k16 (fp16, bf16, fp16 accumulation), m64n64k8 tf32,
            m64n64k32 s8; fp64 has no wgmma and falls back to mma.sync m16n8k16 f64.  Per k-tile:
            ld.global.v4 -> st.shared.v4 into NVMMA-swizzled buffers -> wgmma -> wait_group 0, so no copy
            is in flight during a product; no cp.async.  Not expressible: uint8 (tl.dot asserts "only int8
            supported!") and WMMA's fragment shapes.
"""
from __future__ import annotations

import triton
import triton.language as tl

from triton_kernels._common import check_grid, tiles

# Pair -> (accumulator, input precision, BLOCK_K).  int8's mma.sync k-step is 32, so BLOCK_K >= 32 there.
_PAIRS = {
    "torch.float16": (tl.float32, "ieee", 32),
    "torch.bfloat16": (tl.float32, "ieee", 32),
    "torch.float32": (tl.float32, "tf32", 32),    # TF32 by name: never the silent default
    "torch.int8": (tl.int32, "ieee", 32),
    "torch.float64": (tl.float64, "ieee", 16),
}
META = dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=1)


@triton.jit
def wmma_kernel(A, B, C, D, M, N, K, lda, ldb, ldc, ldd, alpha: tl.float64, beta: tl.float64,
                HAS_C: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, ACC: tl.constexpr,
                PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    n_tiles = tl.cdiv(N, BLOCK_N)
    rows = ((pid // n_tiles) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = ((pid % n_tiles) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K).to(tl.int64)
    in_m, in_n = rows[:, None] < M, cols[None, :] < N
    # Pointers follow the storage order so that the unit stride lies along the dimension the warp reads.
    if A_COL:
        a_ptrs = A + rows[:, None] + ks[None, :] * lda
        a_step = BLOCK_K * tl.cast(lda, tl.int64)
    else:
        a_ptrs = A + rows[:, None] * lda + ks[None, :]
        a_step = tl.cast(BLOCK_K, tl.int64)
    if B_COL:
        b_ptrs = B + ks[:, None] + cols[None, :] * ldb
        b_step = tl.cast(BLOCK_K, tl.int64)
    else:
        b_ptrs = B + ks[:, None] * ldb + cols[None, :]
        b_step = BLOCK_K * tl.cast(ldb, tl.int64)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=ACC)
    for k0 in range(0, K, BLOCK_K):
        in_k = ks < K - k0
        a = tl.load(a_ptrs, mask=in_m & in_k[None, :], other=0)
        b = tl.load(b_ptrs, mask=in_k[:, None] & in_n, other=0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC)
        a_ptrs += a_step
        b_ptrs += b_step
    mask = in_m & in_n
    # The epilogue in the accumulator's own arithmetic: int32 for the integer pair (alpha, beta integral),
    # fp64 for fp64, fp32 otherwise (the fp16-accumulated pair rounds to fp16 once, at the store).
    if ACC == tl.int32:
        d = acc * tl.cast(alpha, tl.int32)
        if HAS_C:
            d += tl.cast(beta, tl.int32) * tl.load(C + rows[:, None] * ldc + cols[None, :], mask=mask, other=0)
    elif ACC == tl.float64:
        d = acc * alpha
        if HAS_C:
            d += beta * tl.load(C + rows[:, None] * ldc + cols[None, :], mask=mask, other=0.0)
    else:
        d = acc.to(tl.float32) * tl.cast(alpha, tl.float32)
        if HAS_C:
            c = tl.load(C + rows[:, None] * ldc + cols[None, :], mask=mask, other=0.0)
            d += tl.cast(beta, tl.float32) * c.to(tl.float32)
    tl.store(D + rows[:, None] * ldd + cols[None, :], d.to(D.dtype.element_ty), mask=mask)


def _launch(p, acc, precision, block_k):
    M, N, K = p.mnk
    programs = tiles(p, META["BLOCK_M"], META["BLOCK_N"])
    check_grid("triton:10_wmma", programs)
    c = p.c if p.c is not None else p.out   # a placeholder pointer; HAS_C=False means it is never read
    return wmma_kernel[(programs,)](
        p.a, p.b, c, p.out, M, N, K, p.lda, p.ldb, c.stride(0), p.out.stride(0), p.alpha, p.beta,
        HAS_C=p.c is not None, A_COL=p.a_col, B_COL=p.b_col, ACC=acc, PRECISION=precision, BLOCK_K=block_k,
        **META)


def gemm(p):
    """fp16/bf16 -> fp32, fp32 -> fp32 via TF32, int8 -> int32, fp64 -> fp64; D in the accumulator type."""
    acc, precision, block_k = _PAIRS[str(p.a.dtype)]
    return _launch(p, acc, precision, block_k)


def gemm_f16acc(p):
    """fp16 in, fp16 accumulation (tl.dot out_dtype=tl.float16), fp16 D."""
    return _launch(p, tl.float16, "ieee", 32)


KERNEL = wmma_kernel


def variants(entry: str) -> list[dict]:
    """Compile-time variants `entry` launches; the first is the fp32 (TF32) one the precision test compiles."""
    if entry == "gemm_f16acc":
        pairs = [(tl.float16, "ieee", 32)]
    else:
        pairs = [_PAIRS["torch.float32"]] + [v for k, v in _PAIRS.items() if k != "torch.float32"]
    return [dict(META, A_COL=a_col, B_COL=b_col, ACC=acc, PRECISION=prec, BLOCK_K=bk)
            for acc, prec, bk in pairs for a_col in (False, True) for b_col in (False, True)]
