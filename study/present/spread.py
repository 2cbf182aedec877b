"""How the report states a measurement: its value with its p20-p80 spread and its SM clock, whether its clock
was held down by the power limit, and whether two measurements differ by more than their spreads.

Every timed row (results.csv) carries ms (the median), ms_p20 and ms_p80 (the 20th and 80th percentiles of the
same timed calls) and sm_clock_mhz (NVML's mean over them); a row that ran power-limited also carries ms_idle and
sm_clock_idle_mhz, the same call timed with the GPU left idle before each call (study/measure/timing.py).
Throughput is work / time, so the row's p20 time is its p80 throughput and vice versa.  One helper for every page, table, hover and generated sentence.
"""
from __future__ import annotations

import math

from study.core.clock import IDLE_GAP_MS, IDLE_MIN_CALL_MS, POWER_LIMITED_FRACTION
from study.present.formatting import fmt_num


def _f(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def throughput_range(r) -> tuple[float, float] | None:
    """(low, high) throughput of a row from its p80 and p20 times, in the row's own unit (tflops)."""
    ms, p20, p80, t = _f(r.get("ms")), _f(r.get("ms_p20")), _f(r.get("ms_p80")), _f(r.get("tflops"))
    if not (ms and p20 and p80 and t):
        return None
    return t * ms / p80, t * ms / p20


def spread_pct(r) -> float | None:
    """Half the p20-p80 width of the row's time, as a percentage of its median."""
    ms, p20, p80 = _f(r.get("ms")), _f(r.get("ms_p20")), _f(r.get("ms_p80"))
    if not (ms and p20 is not None and p80 is not None):
        return None
    return 50.0 * (p80 - p20) / ms


LOPSIDED = 2.0        # a spread whose one side is this many times the other (and at least 1%) is written as two


def spread_text(r) -> str:
    """A figure's spread as a suffix: " ±0.3%" (half the p20-p80 width, " ±<0.1%" below 0.05%), or, where the
    throughput range is lopsided, its two sides: " −7.8/+0.3%" (a slow tail), so that neither reads as symmetric."""
    s, rng, t = spread_pct(r), throughput_range(r), _f(r.get("tflops"))
    if s is None:
        return ""
    if rng and t:
        lo, hi = 100.0 * (rng[0] / t - 1.0), 100.0 * (rng[1] / t - 1.0)
        wide, narrow = max(-lo, hi), min(-lo, hi)
        if wide >= 1.0 and wide > LOPSIDED * max(narrow, 0.0):
            return f" \u2212{-lo:.1f}/+{hi:.1f}%"
    return " ±<0.1%" if s < 0.05 else f" ±{s:.1f}%"


def power_limited(r, max_clock_mhz) -> bool:
    clk, top = _f(r.get("sm_clock_mhz")), _f(max_clock_mhz)
    return bool(clk and top and clk < POWER_LIMITED_FRACTION * top)


def idle_tflops(r) -> float | None:
    """The row's throughput under the idle-gap protocol (study/measure/timing.py), where it was timed so: only
    rows that ran power-limited back to back are."""
    ms, ms_idle, t = _f(r.get("ms")), _f(r.get("ms_idle")), _f(r.get("tflops"))
    return t * ms / ms_idle if ms and ms_idle and t else None


def fmt_measure(r, max_clock_mhz=None, unit: str = "") -> str:
    """"743.5 ±0.3% @1980 MHz"; where the clock was held down, "(power-limited; 761 @1975 MHz with idle gaps)"
    gives the idle-gap protocol's figure beside it."""
    t = _f(r.get("tflops"))
    if t is None:
        return ""
    text = fmt_num(t, 4) + (f" {unit}" if unit else "")
    text += spread_text(r)
    if (clk := _f(r.get("sm_clock_mhz"))) is not None:
        text += f" @{clk:.0f} MHz"
    if power_limited(r, max_clock_mhz):
        idle, idle_clk = idle_tflops(r), _f(r.get("sm_clock_idle_mhz"))
        text += " (power-limited" + (f"; {fmt_num(idle, 4)}" + (f" @{idle_clk:.0f} MHz" if idle_clk else "")
                                     + " with idle gaps" if idle else "") + ")"
    return text


def tie(a, b) -> bool:
    """True when the two rows' throughput ranges (p20-p80) overlap: a difference inside the combined spread is
    a tie, never "faster" or "behind".  Rows without a spread tie only when equal."""
    ra, rb = throughput_range(a), throughput_range(b)
    if ra is None or rb is None:
        return _f(a.get("tflops")) == _f(b.get("tflops"))
    return ra[0] <= rb[1] and rb[0] <= ra[1]


def compare_word(a, b, faster: str = "faster than", slower: str = "behind", same: str = "tied with") -> str:
    """How row a stands against row b in a generated sentence: a tie inside the spread, else faster or slower."""
    if tie(a, b):
        return same
    return faster if _f(a.get("tflops")) > _f(b.get("tflops")) else slower


def protocol(reps, max_clock_mhz=None) -> str:
    """How every figure of a page was measured, stated from its rows' repetition counts (`reps`) and the timing's
    own constants: the paragraph each page carries under its numbers."""
    counts = sorted({int(v) for v in reps if _f(v)})
    calls = f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else (str(counts[0]) if counts else "up to 200")
    top = _f(max_clock_mhz)
    return (f"Each figure is the median of {calls} back-to-back calls, the L2 flushed before each; ± is half its "
            "p20–p80 spread (written −low/+high where one side is over twice the other) and @MHz NVML's mean SM "
            "clock over the timed calls. A row below "
            f"{100 * POWER_LIMITED_FRACTION:.0f}% of the maximum clock{f' ({top:.0f} MHz)' if top else ''} ran "
            f"power-limited: it is marked, and where its call takes at least {IDLE_MIN_CALL_MS:g} ms it was also "
            f"timed with the GPU idle for at least {IDLE_GAP_MS:g} ms (and the call's own time) before each call: "
            "that figure stands beside it. "
            "Two figures whose p20–p80 ranges overlap are a tie.")
