"""How the report writes values: numbers to significant figures, byte counts, and anything else as text."""
from __future__ import annotations

import json
import math


def finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def fmt_num(x, digits: int = 3) -> str:
    """Significant-figure formatting that keeps small errors (1e-7) and big counts (4096) readable."""
    if not finite(x):
        return "" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    if abs(x) < 1e-2:
        return f"{x:.2e}"
    return f"{x:.{digits}g}" if abs(x) < 10 ** digits else f"{x:,.0f}"


def fmt_bytes(n) -> str:
    if not finite(n):
        return ""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{int(n)} B"


def fmt_value(key: str, value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key.endswith("_bytes") and finite(value):
        return f"{value} ({fmt_bytes(value)})"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return "" if value is None else str(value)

