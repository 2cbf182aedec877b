"""Hardware counters from Nsight Compute, as tools/ncu_ladder.py records them (reports/ncu_*.csv).

The file is ncu's raw CSV page (`--csv --page raw`: a header row, a units row, one row per profiled kernel)
with the profiled program's own lines around it: `MACHINE {json}` (GPU, commit, size) and one
`PROFILED <implementation>` per profiled range, in launch order.  Each range launches one kernel, so the
n-th kernel row belongs to the n-th PROFILED name; when the counts differ the rows keep their kernel names
and the mapping is reported as unknown rather than guessed.

Needs no GPU and imports neither torch nor triton: the report reads these files on any machine.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

# Column -> (ncu metric, scale to the column's unit).  Times come in the unit the units row names.
METRICS = {
    "registers": ("launch__registers_per_thread", 1),
    "instructions_m": ("smsp__inst_executed.sum", 1e-6),
    "dram_read_mb": ("dram__bytes_read.sum", 1e-6),
    "smem_ld_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 1),
    "smem_st_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 1),
    "issue_pct": ("smsp__issue_active.avg.pct_of_peak_sustained_active", 1),
    "tensor_pct": ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", 1),
}
TIME_METRIC = "gpu__time_duration.sum"
TO_MS = {"ns": 1e-6, "nsecond": 1e-6, "us": 1e-3, "usecond": 1e-3, "ms": 1.0, "msecond": 1.0, "s": 1e3,
         "second": 1e3}


@dataclass
class Profile:
    source: str
    machine: dict = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def load(path: Path | str) -> Profile:
    path = Path(path)
    prof = Profile(path.name)
    names, table = [], []
    for line in path.read_text().splitlines():
        if line.startswith("MACHINE "):
            try:
                prof.machine = json.loads(line[len("MACHINE "):])
            except json.JSONDecodeError:
                prof.notes.append("its MACHINE line is not JSON")
        elif line.startswith("PROFILED "):
            names.append(line[len("PROFILED "):].strip())
        elif line.startswith('"'):
            table.append(line)
    parsed = list(csv.reader(table))
    if len(parsed) < 2:
        prof.notes.append("no ncu table in it")
        return prof
    header, units, kernels = parsed[0], dict(zip(parsed[0], parsed[1])), parsed[2:]
    if len(kernels) != len(names):
        prof.notes.append(f"{len(kernels)} kernels for {len(names)} profiled implementations: "
                          "kernels are not attributed")
        names = [""] * len(kernels)
    for impl, values in zip(names, kernels):
        rec = dict(zip(header, values))
        row = {"impl": impl, "kernel": rec.get("Kernel Name", "")}
        t = _number(rec.get(TIME_METRIC, ""))
        scale = TO_MS.get(units.get(TIME_METRIC, ""))
        row["ms"] = t * scale if t is not None and scale else None
        for col, (metric, k) in METRICS.items():
            v = _number(rec.get(metric, ""))
            row[col] = v * k if v is not None else None
        prof.rows.append(row)
    return prof


def load_all(report_dir: Path) -> list[Profile]:
    return [load(p) for p in sorted(Path(report_dir).glob("ncu_*.csv"))]
