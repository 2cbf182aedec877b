"""The results as data: results.csv and the JSON and CSV files beside it, read into typed frames.

Loading, column coercion and the names that identify a series (a stage, a stage's variant, a baseline) live
here, apart from any drawing: the sweep and the report use them, and this module imports neither matplotlib
nor seaborn (nor torch).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from study.core.schema import NEWER_COLUMNS, RESULT_COLUMNS
from study.core.stages import STAGES

# The columns the figures read as numbers; the report reads all of NUMERIC_COLUMNS as numbers.
NUMERIC = ("M", "N", "K", "alpha", "beta", "tflops", "intensity")
NUMERIC_COLUMNS = ("M", "N", "K", "alpha", "beta", "ms", "ms_p20", "ms_p80", "reps", "tflops", "gbps",
                   "intensity", "pct_cublas", "relerr", "tol", "registers", "smem_bytes", "spills", "sm_clock_mhz",
                   "host_ms")
# One measurement per (implementation, dtype, shape, alpha, beta); a resumed sweep appends, so the last wins.
ROW_KEY = ["impl", "dtype", "M", "N", "K", "alpha", "beta"]


def call_key(r) -> tuple[str, str, int, int, int]:
    """(implementation, dtype, M, N, K) of a row (a mapping: a csv.DictReader row, a pandas row or a record): the
    call a stale mark, a profile call or a default-sweep check is about."""
    return (r["impl"], r["dtype"], int(r["M"]), int(r["N"]), int(r["K"]))


def as_bool(s: pd.Series) -> pd.Series:
    if s.dtype == bool:
        return s
    return s.astype(str).str.strip().str.lower().isin({"true", "1", "yes"})


def prepare(df: pd.DataFrame) -> pd.DataFrame:
    """Coerce the columns the figures use, so a frame read any way (all-str, or by pandas' guesses) works."""
    df = df.copy()
    for col in NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df else np.nan
    for col in ("stage", "impl", "backend", "dtype", "precision", "shape_set", "stage_title"):
        df[col] = df[col].fillna("").astype(str) if col in df else ""
    # A stage number read back as an integer (1) must still match its two digits (01).
    df["stage"] = df["stage"].map(lambda s: s.zfill(2) if s.isdigit() else s)
    df["passed"] = as_bool(df["passed"]) if "passed" in df else False
    return df


def positive(x) -> float | None:
    """x as a float when it is a finite positive number (a measured ceiling, say), else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) and v > 0 else None


def dtype_order(dtypes) -> list[str]:
    pref = ["fp32", "tf32", "fp16", "bf16", "fp8e4m3", "int8"]
    return sorted(set(dtypes), key=lambda d: (pref.index(d) if d in pref else len(pref), d))


# --- series ---------------------------------------------------------------------------------------

_STAGE_KEYS = {s.number: s.key for s in STAGES}


def variant_of(stage: str, impl: str) -> str:
    """The variant suffix of a stage's implementation ("cuda:<stage key>-<variant>" -> "<variant>"), and ""
    for the stage's main kernel: a stage may register several variants per backend."""
    key = _STAGE_KEYS.get(stage)
    body = impl.split(":", 1)[-1]
    return body[len(key):].lstrip("-_") if key and body.startswith(key) else ""


def series_key(stage: str, impl: str) -> str:
    """What a row is a point of: its stage ("<stage>"), a stage's variant ("<stage>-<variant>"), or a
    baseline's implementation ("cublas")."""
    if stage == "baseline":
        return impl
    variant = variant_of(stage, impl)
    return f"{stage}-{variant}" if variant else stage


# --- loading --------------------------------------------------------------------------------------

def read_csv(path: Path, columns, newer=()) -> tuple[pd.DataFrame | None, list[str]]:
    """A CSV as strings (pandas would otherwise read a stage number such as 01 as the integer 1), with every one
    of `columns` (blank where the file lacks it), plus a note naming what it lacked, but for the `newer` columns,
    which a file written before they existed lacks; None when there is no file."""
    if not path.exists():
        return None, []
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in raw.columns]
    for col in missing:
        raw[col] = ""
    noted = [c for c in missing if c not in newer]
    return raw, ([f"{path.name} lacks columns: {', '.join(noted)}"] if noted else [])


def load_table(path: Path, columns, numeric) -> tuple[pd.DataFrame | None, list[str]]:
    """read_csv(), with the `numeric` columns as numbers."""
    raw, notes = read_csv(path, columns)
    for col in numeric if raw is not None else ():
        raw[col] = pd.to_numeric(raw[col], errors="coerce")
    return raw, notes


def load_results(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """The results as typed columns, duplicates resolved to the last row; plus notes for the page."""
    raw, notes = read_csv(path, RESULT_COLUMNS, NEWER_COLUMNS)
    if raw is None:
        return pd.DataFrame(columns=RESULT_COLUMNS), [f"no {path.name} in this directory"]
    df = prepare(raw)
    for col in NUMERIC_COLUMNS:
        df[col] = pd.to_numeric(df[col], errors="coerce")
    dedup = df.drop_duplicates(subset=ROW_KEY, keep="last").reset_index(drop=True)
    if len(dedup) < len(df):
        notes.append(f"{len(df) - len(dedup)} earlier duplicate row(s) superseded by later re-runs "
                     f"(still in {path.name})")
    return dedup, notes


def load_json(path: Path) -> dict | None:
    """A JSON object from a file; None when the file is absent, unreadable or not an object."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
