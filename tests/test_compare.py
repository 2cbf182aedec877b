"""study.measure.compare: two sweeps' rows against each other, and the figures docs/method.md quotes from it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from study.measure import compare
from study.measure.shard import row_key

ROOT = Path(__file__).resolve().parents[1]


def _row(impl, pct, ms=1.0, p20=0.99, p80=1.01, gpu="0", shape=(512, 512, 512)):
    M, N, K = shape
    return {"impl": impl, "dtype": "fp16", "M": str(M), "N": str(N), "K": str(K), "alpha": "1.0", "beta": "0.0",
            "pct_cublas": str(pct),
            "ms": str(ms), "ms_p20": str(p20), "ms_p80": str(p80), "gpu_index": gpu}


def _keyed(*rows):
    return {row_key(r): r for r in rows}


def test_a_move_is_judged_against_both_spreads():
    a = _keyed(_row("x", 100.0), _row("y", 100.0), _row("z", 50.0), _row("nan", float("nan")), _row("only_a", 90.0))
    b = _keyed(_row("x", 103.0, gpu="2"), _row("y", 100.0, p20=0.9, p80=1.1), _row("z", 60.0),
               _row("nan", 80.0))
    ms = {m.key[0]: m for m in compare.moves(a, b)}
    assert set(ms) == {"x", "y", "z"}                    # a row without a % on either side, or on one, is left out
    assert ms["x"].rel == pytest.approx(0.03) and ms["x"].spread == pytest.approx(2.0 + 2.06)
    assert not ms["x"].disagrees and not ms["y"].disagrees and ms["z"].disagrees and ms["x"].gpu_b == "2"
    s = compare.summary(list(ms.values()))
    assert s["disagree"] == 1 and s["bands"] == [0, 0, 0, 1]       # z moved by 20%
    assert s["all"]["rows"] == 3 and s["all"]["median"] == pytest.approx(0.03)


def _figures(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"(\d+(?:\.\d+)?)%", text)]


def test_the_quoted_comparison_is_the_committed_reports():
    """docs/method.md's d183105 pair: the moves and counts it quotes are what compare gives on the committed
    reports/h200 (four GPUs) against reports/h200/single-gpu."""
    doc = (ROOT / "docs" / "method.md").read_text()
    entry = doc[doc.index("- 2026-11-28, d183105"):]
    entry = entry[:entry.index("**Largest spread")]
    pair = (compare.read(ROOT / "reports/h200/single-gpu"), compare.read(ROOT / "reports/h200"))
    s = compare.summary(compare.moves(*pair))
    para = entry[entry.index("**The two reports against each other**"):]
    want = [round(100 * s[k][q], 1) for k in ("all", "512^3") for q in ("median", "p90", "p99")]
    assert _figures(para)[:6] == want
    counts = re.search(r"(\d+) rows differ by more than the sum of their two p20-p80 widths: (\d+) of them by under "
                       r"2%, (\d+) by 2-5%, (\d+) by\s+5-10% and (\d+) by more than 10%", para)
    assert counts, "the paragraph's counts were not found"
    assert [int(v) for v in counts.groups()] == [s["disagree"], *s["bands"]]
    flat = " ".join(para.split())
    assert f"{s['all']['rows']} rows with a % of cuBLAS" in flat
    assert f"the {s['512^3']['rows']} rows of at least" in flat
