"""Two sweeps of the same rows against each other: how far each row's % of cuBLAS moved, and whether by more than
the two rows' own spreads (docs/method.md, "The sweep on several GPUs").

    python -m study.measure.compare reports/h200/single-gpu reports/h200

A row's spread is its p20-p80 in points of % of cuBLAS (pct x (ms_p80 - ms_p20) / ms); a row "disagrees" where the
two % differ by more than the sum of the two spreads.  The moves are relative, |b - a| / a."""
from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass
from pathlib import Path

from study.measure.shard import read_rows, row_key

BANDS = (0.02, 0.05, 0.10)          # the disagreeing rows are counted below 2%, 2-5%, 5-10% and above 10%


@dataclass(frozen=True)
class Move:
    key: tuple                       # the sweep's row key: (impl, dtype, M, N, K, alpha, beta)
    a: float                         # % of cuBLAS in the first sweep
    b: float                         # ... in the second
    spread: float                    # the two rows' p20-p80 widths, summed, in points
    gpu_b: str                       # the GPU index the second sweep's row ran on

    @property
    def rel(self) -> float:
        return abs(self.b - self.a) / self.a

    @property
    def disagrees(self) -> bool:
        return abs(self.b - self.a) > self.spread

    @property
    def work(self) -> int:
        M, N, K = self.key[2:5]
        return M * N * K


def _pct(row: dict) -> float | None:
    try:
        v = float(row["pct_cublas"])
    except (KeyError, ValueError):
        return None
    return v if v == v and v > 0 else None


def _width(row: dict, pct: float) -> float:
    return pct * (float(row["ms_p80"]) - float(row["ms_p20"])) / float(row["ms"])


def read(path: Path) -> dict[tuple, dict]:
    """results.csv (or the folder holding it), by row key (the last row of a key wins, as in the report)."""
    return {row_key(r): r for r in read_rows(path / "results.csv" if path.is_dir() else path)}


def moves(a: dict[tuple, dict], b: dict[tuple, dict]) -> list[Move]:
    """Every row both sweeps hold with a % of cuBLAS, in key order."""
    out = []
    for key in sorted(a.keys() & b.keys()):
        pa, pb = _pct(a[key]), _pct(b[key])
        if pa is not None and pb is not None:
            out.append(Move(key, pa, pb, _width(a[key], pa) + _width(b[key], pb), b[key].get("gpu_index", "")))
    return out


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def summary(ms: list[Move]) -> dict:
    """The figures docs/method.md quotes: the median, p90 and p99 move over all rows and over rows of at least
    512^3 of work, and the disagreeing rows by band."""
    def stats(sel):
        rel = [m.rel for m in sel]
        return {"rows": len(sel), "median": statistics.median(rel), "p90": quantile(rel, 0.9),
                "p99": quantile(rel, 0.99)}
    off = [m for m in ms if m.disagrees]
    edges = (0.0, *BANDS, float("inf"))
    return {"all": stats(ms), "512^3": stats([m for m in ms if m.work >= 512**3]), "disagree": len(off),
            "bands": [sum(lo <= m.rel < hi for m in off) for lo, hi in zip(edges, edges[1:])]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path, help="a sweep's folder or results.csv")
    ap.add_argument("b", type=Path)
    ap.add_argument("--top", type=int, default=20, help="list this many disagreeing rows, largest move first")
    args = ap.parse_args(argv)
    ms = moves(read(args.a), read(args.b))
    s = summary(ms)
    for name in ("all", "512^3"):
        t = s[name]
        print(f"{name}: {t['rows']} rows, move median {100 * t['median']:.1f}%, p90 {100 * t['p90']:.1f}%, "
              f"p99 {100 * t['p99']:.1f}%")
    print(f"outside the two spreads: {s['disagree']} rows; by move <2%, 2-5%, 5-10%, >10%: {s['bands']}")
    for m in sorted((m for m in ms if m.disagrees), key=lambda m: -m.rel)[:args.top]:
        impl, dtype, M, N, K = m.key[:5]
        print(f"  {impl} {dtype} {M}x{N}x{K}: {m.a:.1f} vs {m.b:.1f}% (GPU {m.gpu_b})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
