"""The sweep's shape presets, as data: squares, and the GEMMs of real models.

`llama3`: the projection GEMMs of one transformer layer of Llama 3 8B and 70B, D (tokens x out) = X (tokens x
in) W (in x out), at a decode batch of 16 tokens and at a prefill of several thousand.  The model sizes come from
the models' published configurations (Meta, Llama 3 model card and config.json): 8B has hidden size 4096, FFN
size 14336, 32 query heads and 8 key/value heads of 128; 70B has 8192, 28672, 64 and 8 of 128.  So the fused
q/k/v projection has hidden + 2 x 8 x 128 outputs and the fused gate/up projection twice the FFN size.  The
square 4096^3 already is 8B's output projection at 4096 tokens, so the preset leaves that one out.
"""
from __future__ import annotations

SQUARE = (128, 256, 512, 1024, 2048, 4096, 8192)
QUICK_SQUARE = (256, 1024, 4096, 8192)

# (name, M = tokens, N = outputs, K = inputs)
LLAMA3 = (
    ("8B qkv, 16 tokens", 16, 6144, 4096),
    ("8B o, 16 tokens", 16, 4096, 4096),
    ("8B gate/up, 16 tokens", 16, 28672, 4096),
    ("8B down, 16 tokens", 16, 4096, 14336),
    ("8B qkv, 4096 tokens", 4096, 6144, 4096),
    ("8B gate/up, 4096 tokens", 4096, 28672, 4096),
    ("8B down, 4096 tokens", 4096, 4096, 14336),
    ("70B qkv, 16 tokens", 16, 10240, 8192),
    ("70B down, 16 tokens", 16, 8192, 28672),
    ("70B qkv, 2048 tokens", 2048, 10240, 8192),
    ("70B o, 2048 tokens", 2048, 8192, 8192),
)
# `decode`: the same projections at 1 and 64 tokens (with llama3's 16, stage 17's family: GEMMs bound by reading the weights).
# Not in `all` (the default sweep): python -m study.sweep --shapes decode measures it.
DECODE_TOKENS = (1, 64)
DECODE = tuple((f"{name.split(', ')[0]}, {m} token{'s' if m > 1 else ''}", m, n, k)
               for m in DECODE_TOKENS for name, m16, n, k in LLAMA3 if m16 == 16)
PRESETS = {"square": "M = N = K", "llama3": "Llama 3 8B and 70B projections", "all": "square and llama3",
           "decode": "the Llama 3 projections at 1 and 64 tokens"}


def shape_name(M: int, N: int, K: int) -> str:
    """A shape's name in the model preset ("8B qkv, 16 tokens"), "MxNxK" otherwise."""
    return next((name for name, m, n, k in LLAMA3 + DECODE if (m, n, k) == (M, N, K)), f"{M}x{N}x{K}")
