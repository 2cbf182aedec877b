"""Stage 17 on the GPU: its split and stream-K forms are deterministic, and right where the split cuts K unevenly.

Every stage-17 form adds partial sums of several blocks in a fixed order (the tile's last block adds them in block
order), with no float atomics: two calls on the same inputs must give the same bits.  The shapes put the
partition's seams everywhere: K that 64 does not divide, several tiles a block, a block ending inside a tile, M
past one token tile, W row- and column-major.  They run with the GPU suite (`pytest -m gpu`) but are not part of
the evidence count (tests/test_gpu_equivalence.py is: the parameter is `form`, not `impl_name`)."""
from __future__ import annotations

import pytest
import torch

import study
from study.core.verify import make_inputs, run_and_judge
from tests.helpers import column_major

pytestmark = pytest.mark.gpu

DECODE_IMPLS = [i.name for i in study.implementations() if i.stage is not None and i.stage.number == "17"]
# (M, N, K): a decode layer; K ragged against the 64-deep slices and the split; a W of 2 tiles on 132 SMs (a block a
# few slices); M past the 64- and 128-token tiles; N ragged.
SEAMS = [(16, 4096, 4096), (1, 6144, 4100), (7, 200, 9999), (64, 1000, 3001), (130, 333, 2050), (33, 4097, 777)]


@pytest.mark.parametrize("b_col", [False, True], ids=["w-row", "w-col"])
@pytest.mark.parametrize("M,N,K", SEAMS)
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("form", DECODE_IMPLS)
def test_split_k_is_bit_identical_run_to_run(form, dtype, M, N, K, b_col):
    impl = study.get(form)
    x = make_inputs(M, N, K, dtype, "cuda", 1.5, -0.5)
    if b_col:
        x.b = column_major(x.b)
    v = run_and_judge(impl, dtype, x)
    assert v.passed, f"{form} {dtype} {M}x{N}x{K} b_col={b_col} seed={x.seed}: {v.error}"
    first = x.out.clone()
    for _ in range(2):
        x.out.fill_(float("nan"))
        impl(x.a, x.b, x.c, alpha=x.alpha, beta=x.beta, out=x.out)
        torch.cuda.synchronize()
        assert torch.equal(first.view(torch.int16), x.out.view(torch.int16)), \
            f"{form} {dtype} {M}x{N}x{K}: two calls on the same inputs differ (seed={x.seed})"
