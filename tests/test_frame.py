"""The results data model (study/measure/frame.py), apart from the figures: no plotting library, coercion,
missing columns, duplicate rows, dtype order."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

from study.core.schema import NEWER_COLUMNS, RESULT_COLUMNS
from study.measure.frame import dtype_order, load_results, load_table, prepare, read_csv

REPO = Path(__file__).resolve().parents[1]
def test_the_sweep_and_the_frame_load_no_plotting_library():
    probe = ("import sys, study.measure.frame, study.measure.sweep; "
             "sys.exit(sorted(m for m in ('matplotlib', 'seaborn') if m in sys.modules) or 0)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_prepare_coerces_a_frame_read_as_strings():
    df = prepare(pd.DataFrame({"stage": ["1", "baseline"], "M": ["64", "x"], "passed": ["True", "no"]}))
    assert list(df["stage"]) == ["01", "baseline"] and df["passed"].tolist() == [True, False]
    assert df["M"].iloc[0] == 64 and pd.isna(df["M"].iloc[1]) and (df["impl"] == "").all()


def test_tables_note_their_missing_columns(tmp_path):
    (tmp_path / "t.csv").write_text("a,K\n1,0032\n")
    raw, notes = read_csv(tmp_path / "t.csv", ["a", "b"])
    assert raw["K"].iloc[0] == "0032" and (raw["b"] == "").all() and notes == ["t.csv lacks columns: b"]
    typed, _ = load_table(tmp_path / "t.csv", ["a", "K"], ["K"])
    assert typed["K"].iloc[0] == 32
    assert read_csv(tmp_path / "absent.csv", ["a"]) == (None, [])


def test_results_keep_the_last_of_duplicate_rows(tmp_path):
    row = dict.fromkeys(RESULT_COLUMNS, "")
    row.update(impl="cuda:01_naive", stage="01", dtype="fp32", M="64", N="64", K="64", alpha="1", beta="0")
    rows = [{**row, "tflops": "1.0"}, {**row, "tflops": "2.0"}]
    pd.DataFrame(rows, columns=list(RESULT_COLUMNS)).to_csv(tmp_path / "results.csv", index=False)
    df, notes = load_results(tmp_path / "results.csv")
    assert df["tflops"].tolist() == [2.0] and df["stage"].tolist() == ["01"] and "superseded" in notes[0]
    df, notes = load_results(tmp_path / "none.csv")
    assert df.empty and notes == ["no none.csv in this directory"]


def test_dtype_order_puts_fp32_first():
    assert dtype_order({"int8", "bf16", "fp32", "fp64"}) == ["fp32", "bf16", "int8", "fp64"]


def test_a_column_newer_than_the_file_is_read_blank_unremarked(tmp_path):
    """A results file of a sweep measured before a column existed (schema.NEWER_COLUMNS) reads it as blank, and the
    page notes no lack of it; any other missing column is still noted."""
    assert NEWER_COLUMNS and set(NEWER_COLUMNS) <= set(RESULT_COLUMNS)
    path = tmp_path / "results.csv"
    path.write_text(",".join(c for c in RESULT_COLUMNS if c not in NEWER_COLUMNS) + "\n")
    raw, notes = read_csv(path, RESULT_COLUMNS, NEWER_COLUMNS)
    assert all(c in raw.columns for c in NEWER_COLUMNS) and notes == []
    path.write_text(",".join(c for c in RESULT_COLUMNS if c not in NEWER_COLUMNS + ("gpu_uuid",)) + "\n")
    assert read_csv(path, RESULT_COLUMNS, NEWER_COLUMNS)[1] == ["results.csv lacks columns: gpu_uuid"]


def test_the_sleep_before_a_timed_call_covers_the_host():
    """The GPU sleeps at least SLEEP_CYCLES before a timed call, and twice the host's time to issue the call once
    that is longer (study/measure/timing.py)."""
    from study.measure import timing
    assert timing.sleep_cycles(0.0) == timing.SLEEP_CYCLES
    assert timing.sleep_cycles(20e-6) == timing.SLEEP_CYCLES
    assert timing.sleep_cycles(1e-3) == int(1e-3 * timing.HOST_COVER * timing.SLEEP_HZ) > timing.SLEEP_CYCLES
