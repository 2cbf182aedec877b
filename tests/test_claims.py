"""Every measured figure a stage file quotes in its header (the CUDA file's opening comment, the Triton and Gluon
module docstrings) must be one the committed data holds, whichever paragraph quotes it.

What counts as a quoted measurement (`quotes`), per clause of the header (a sentence, cut at semicolons):
* a figure with a unit, anywhere: TFLOP/s, TOP/s, GFLOP/s, GB/s, GB, ms, MHz, % (of cuBLAS, or an ncu
  percentage), points (a difference of % of cuBLAS), and a ratio Nx against cuBLAS, SGEMM or a stage
  ("2.6x Triton 04", "1.0x of Gluon 07"); a figure joined to a unit-bearing one by a dash, "and", "to" or an
  arrow takes its unit ("98.2-100.7% of cuBLAS", "745.8 fp16 and 768.0 bf16 TFLOP/s", "1.45 -> 1.37 GB");
* every decimal figure of a "Measured" paragraph, or of a clause that says "measured" ("measured 63.3").

Each is looked up (`pools`) among the values of its unit in the committed data of the GPU its clause names
(else its paragraph; else every GPU's), at the problem shapes its paragraph names (4096^3, MxNxK; else all):
the rows of the stage, of the stage below it and of cuBLAS in results.csv (tflops, pct_cublas, ms, gbps,
sm_clock_mhz), the ceilings, the profile of those calls (its *_pct values, bytes in GB, time_ms,
shared-memory conflicts as a % of wavefronts), the ratios of the stage's TFLOP/s to those rows' at the same
GPU, dtype and shape, and the differences of % of cuBLAS among the ladder's rows.  It matches at the precision
it is quoted to (one unit of its last digit either way).

A figure that is not from this data (a paper's, a seed's, a prediction, a datasheet's, study.probe's) says so
in its own clause ("predicted", "seed", "paper", "datasheet", "~", "probe", ...), and is left out.
test_every_stage_file_is_read reads every stage file of the three backends, names the files that quote no
measured figure, and fails on a decimal figure that no rule checks and no clause marks."""
from __future__ import annotations

import ast
import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from study.core.paths import CUDA_DIR, TRITON_DIR
from study.core.stages import STAGES
from study.measure import audit


# Words that mark a clause's figures as not measured here, or not in reports/ ("the probe": study.probe's runs,
# which docs/NN.md records).  Matched in the clause's lower case.
NOT_FROM_DATA = ("predict", "seed", "paper", "datasheet", "~", "expected", "peak of", "issue ", "probe")

# A number that is a figure: not part of a name (sm_90a, m64n256k16, H100), a shape (4096^3, 128x256), a power
# (2^11) or an exponent (7.7e-4); a range's second end (98.2-100.7) counts.  Its suffix: % or a ratio's x.
NUMBER = re.compile(r"(?:(?<=\d-)|(?<![\w.^/$-]))(\d+(?:\.\d+)?)(%|x(?!\w))?(?![\w^]|\.\d)")
# A unit written after a figure (a dtype may stand between: "768.0 bf16 TFLOP/s").
UNIT = re.compile(r"\s*(?:(?:fp16|bf16|fp32|int8)\s+)?(TFLOP/s|TOP/s|GFLOP/s|GB/s|GB\b|ms\b|MHz\b|points?\b)")
# What a ratio is against, after its x: "2.0x stage 03", "0.85-1.0x of stage 07", "2.1x cuBLAS SGEMM".
RATIO_OF = re.compile(r"\s*(?:(?:the|its|of|over|than)\s+)*(?:cuBLAS|SGEMM|stage|Triton|Gluon|CUDA)\b")
# What may join a figure to the next one, whose unit it then shares.
JOIN = re.compile(r"\s*(?:(?:fp16|bf16|fp32|int8)\s+)?(?:-|–|to|and|or|->)\s*")
UNIT_OF = {"TOP/s": "TFLOP/s", "point": "points", "%": "%", "x": "x"}


def header(path: Path) -> str:
    """A stage file's header as one line of text: a CUDA file's opening comment (its `//` lines up to the first
    line of code), a Python file's module docstring."""
    if path.suffix == ".cu":
        lines = []
        for line in path.read_text().splitlines():
            if line.startswith("//"):
                lines.append(line.lstrip("/ ").strip())
            elif line.strip():
                break
        return " ".join(lines)
    return " ".join(l.strip() for l in (ast.get_docstring(ast.parse(path.read_text())) or "").splitlines())


# A field of a header ("Why faster:", "Measured:", "Measured (H100, ...):", "Compiles to (Triton 3.6, ...):").
FIELD = re.compile(r"(?<=\s)(?=[A-Z][a-z]+(?: [a-z]+)?(?:\s*\([^)]*\))?:\s)")
MEASURED = re.compile(r"Measured(?:\s*\([^)]*\))?:")
# What a clause names of its context: a GPU ("H100") and problem shapes ("4096^3", "4096x6144x4096").
GPU = re.compile(r"\b(H\d00)\b")
SHAPE = re.compile(r"(?<![\w^])(\d+)\^3\b|(?<![\w^])(\d+)x(\d+)x(\d+)(?![\w^])")


def paragraphs(text: str) -> list[str]:
    return [p for p in FIELD.split(text) if p.strip()]


def measured_part(text: str) -> str:
    """The "Measured" paragraphs of a header, joined (each without its field name)."""
    return " ".join(MEASURED.sub("", p, count=1) for p in paragraphs(text) if MEASURED.match(p))


def clauses(text: str):
    """(clause, its paragraph) for each clause of the header: its sentences (a full stop before a capital, or
    before two spaces), cut at semicolons."""
    for para in paragraphs(text):
        for clause in re.split(r"(?<=[.;])\s+(?=[A-Z(~])|(?<=\.)\s{2,}|;\s+", para):
            yield clause, para


@dataclass(frozen=True)
class Quote:
    clause: str
    figure: str        # as written, without its suffix
    unit: str          # "TFLOP/s", "GB/s", "GB", "ms", "MHz", "points", "%", "x", or "" (a bare figure)
    gpus: tuple[str, ...] = ()                      # the GPUs its clause (else its paragraph) names
    shapes: tuple[tuple[int, int, int], ...] = ()   # the problem shapes its paragraph names


def _named(clause: str, para: str):
    def gpus(t):
        return tuple(sorted({g.lower() for g in GPU.findall(t)}))

    def shapes(t):
        return tuple(sorted({(int(a), int(a), int(a)) if a else (int(m), int(n), int(k))
                             for a, m, n, k in SHAPE.findall(t)}))
    return gpus(clause) or gpus(para), shapes(para)


def quotes(text: str):
    """Every figure of the header the data must hold (see the module docstring), marked clauses left out."""
    for clause, para in clauses(text):
        lower = clause.lower()
        if any(w in lower for w in NOT_FROM_DATA):
            continue
        measured = bool(MEASURED.match(para)) or bool(re.search(r"(?<!not )\bmeasured\b", lower))
        found = list(NUMBER.finditer(clause))
        units = []
        for m in found:
            after = clause[m.end():]
            u = UNIT.match(after)
            if m.group(2) == "%":
                units.append("%")
            elif m.group(2) == "x":
                units.append("x" if RATIO_OF.match(after) or measured else None)
            else:
                units.append(UNIT_OF.get(u.group(1), u.group(1)) if u else None)
        for i in range(len(found) - 2, -1, -1):     # a figure joined to a unit-bearing one takes its unit
            between = clause[found[i].end():found[i + 1].start()]
            if units[i] is None and found[i].group(2) is None and units[i + 1] and JOIN.fullmatch(between):
                units[i] = units[i + 1]
        gpus, shapes = _named(clause, para)
        for m, unit in zip(found, units):
            if unit is not None or (measured and "." in m.group(1)):
                yield Quote(clause, m.group(1), unit or "", gpus, shapes)


def figures(text: str):
    """(clause, figure) of every quote: what the data must hold."""
    for q in quotes(text):
        yield q.clause, q.figure


@functools.lru_cache(maxsize=None)
def _data(gpu_dir: Path):
    """(results.csv, profile.csv or None, ceilings.json) of one GPU, the stage column as two digits."""
    def read(name):
        df = pd.read_csv(gpu_dir / name)
        df["stage"] = df["stage"].astype(str).str.zfill(2)
        return df
    prof = read("profile.csv") if (gpu_dir / "profile.csv").exists() else None
    return read("results.csv"), prof, json.loads((gpu_dir / "ceilings.json").read_text())


def _numbers(stage) -> set[str]:
    """The stage and the one below it (a stage compares itself with the rung below)."""
    return {stage.number, f"{int(stage.number) - 1:02d}"}


def _rows(df: pd.DataFrame, numbers: set[str], shapes) -> pd.DataFrame:
    df = df[df["stage"].isin(numbers) | (df["backend"] == "cublas")]
    if shapes:
        df = df[pd.Series(list(zip(df["M"], df["N"], df["K"])), index=df.index).isin(shapes)]
    return df


@functools.lru_cache(maxsize=None)
def pools(number: str, gpus: tuple[str, ...] = (), shapes: tuple = ()) -> dict[str, list[float]]:
    """Unit -> the values the committed data holds for stage `number` (see the module docstring), on the GPUs
    named (all if none) at the shapes named (all if none, or if the data has none of them)."""
    stage = next(s for s in STAGES if s.number == number)
    out: dict[str, list[float]] = {u: [] for u in ("TFLOP/s", "GB/s", "GB", "ms", "MHz", "%", "x", "points")}
    dirs = [d for d in audit.gpu_dirs() if not gpus or d.name in gpus] or audit.gpu_dirs()
    known = {s for d in dirs for s in zip(_data(d)[0]["M"], _data(d)[0]["N"], _data(d)[0]["K"])}
    shapes = tuple(s for s in shapes if s in known)
    for d in dirs:
        results, profile, ceilings = _data(d)
        r = _rows(results, _numbers(stage), shapes)
        out["TFLOP/s"] += list(r["tflops"].dropna())
        out["%"] += list(r["pct_cublas"].dropna())
        out["ms"] += list(r["ms"].dropna())
        out["GB/s"] += list(r["gbps"].dropna())
        out["MHz"] += list(r["sm_clock_mhz"].dropna())
        mine = r[r["stage"] == stage.number]
        key = ["dtype", "M", "N", "K"]
        pairs = mine[key + ["tflops", "pct_cublas"]].merge(r[key + ["tflops", "pct_cublas", "backend"]], on=key)
        out["x"] += list((pairs["tflops_x"] / pairs["tflops_y"]).dropna())
        out["x"] += list(mine["pct_cublas"].dropna() / 100)
        ladder = pairs[pairs["backend"] != "cublas"]
        out["points"] += list((ladder["pct_cublas_x"] - ladder["pct_cublas_y"]).abs().dropna())
        for k, v in ceilings["measured"].items():
            out["GB/s" if k.endswith("gbps") else "TFLOP/s"].append(v)
        out["MHz"] += list(ceilings.get("sm_clock_mhz", {}).values())
        if profile is not None:
            p = _rows(profile, _numbers(stage), shapes)
            out["ms"] += list(p["time_ms"].dropna())
            for c in p.columns:
                if c.endswith("_pct"):
                    out["%"] += list(p[c].dropna())
                elif c.endswith(("bytes", "conflicts", "wavefronts")):
                    out["GB"] += [v / 1e9 for v in p[c].dropna()]
            for kind in ("ld", "st"):
                w, c = p[f"smem_{kind}_wavefronts"], p[f"smem_{kind}_conflicts"]
                out["%"] += list((100 * c / w)[w > 0].dropna())
    out["GFLOP/s"] = [v * 1000 for v in out["TFLOP/s"]]
    # A bare figure of a Measured paragraph may be any of these but a ratio or a difference.
    out[""] = [v for u, vs in out.items() if u not in ("x", "points") for v in vs]
    return out


def committed_values(stage) -> list[float]:
    """Every value a bare figure of `stage`'s files may be."""
    return pools(stage.number)[""]


def matches(figure: str, values) -> bool:
    digits = len(figure.split(".")[1]) if "." in figure else 0
    q, unit = float(figure), 10 ** -digits
    return any(abs(round(v, digits) - q) <= unit * 1.01 for v in values if math.isfinite(v))


def stage_files(stage) -> list[Path]:
    """The stage's files that exist, of the three backends."""
    paths = (CUDA_DIR / f"{stage.key}.cu", TRITON_DIR / f"{stage.key}.py", TRITON_DIR / "gluon" / f"{stage.key}.py")
    return [p for p in paths if p.exists()]


def label(path: Path) -> str:
    """The file's path in the repository: cuda_kernels/14_wgmma.cu, triton_kernels/gluon/14_wgmma.py."""
    return path.relative_to(CUDA_DIR.parent).as_posix()


def unmatched(text_of=lambda p: header(p)) -> list[str]:
    out = []
    for s in STAGES:
        for path in stage_files(s):
            out += [f"{label(path)}: {q.figure}{'' if q.unit in ('', '%', 'x') else ' '}{q.unit}"
                    for q in quotes(text_of(path))
                    if not matches(q.figure, pools(s.number, q.gpus, q.shapes)[q.unit])]
    return out


# Figures the committed data does not hold today (older sweeps' numbers): each is to be corrected in its file.
KNOWN_UNMATCHED: set[str] = set()

# The stage files whose headers quote no measured figure: allowed, and listed so that a reader sees them, and so
# that a file whose figures these rules stop reading (or that stops quoting any) shows up here.
QUOTE_NOTHING = {"cuda_kernels/01_naive.cu", "triton_kernels/01_naive.py", "cuda_kernels/02_coalesced.cu",
                 "triton_kernels/02_coalesced.py", "triton_kernels/03_smem_tiling.py",
                 "cuda_kernels/12_mma_ldmatrix.cu"}

# Decimal figures a header may hold that are not measurements and are not in a marked clause (Triton's version
# is told apart by itself): file: figure -> what it is.
NOT_MEASUREMENTS = {"cuda_kernels/04_tiling_1d.cu: 0.375": "shared loads per FMA, counted in the SASS"}


def unread(path: Path) -> list[str]:
    """The decimal figures of a header that no rule checks and no clause marks: neither quoted nor Triton's
    version.  Each must be in NOT_MEASUREMENTS."""
    import triton
    version = ".".join(triton.__version__.split(".")[:2])
    text = header(path)
    quoted = {q.figure for q in quotes(text)}
    return [f"{label(path)}: {m.group(1)}" for clause, _ in clauses(text)
            if not any(w in clause.lower() for w in NOT_FROM_DATA)
            for m in NUMBER.finditer(clause) if "." in m.group(1) and m.group(1) not in quoted | {version}]


def test_every_measured_figure_is_in_the_committed_data():
    assert sum(1 for s in STAGES for p in stage_files(s) for _ in quotes(header(p))) >= 100, \
        "the headers' measurements were not found"
    new = set(unmatched()) - KNOWN_UNMATCHED
    assert not new, f"figures no committed row, ceiling or profile value holds: {sorted(new)}"


def test_every_stage_file_is_read():
    """Every stage's file of every backend is read; the files with no checked figure are exactly QUOTE_NOTHING
    (allowed: they quote nothing), and no file holds a decimal figure that is neither checked nor marked
    (not allowed: an unchecked number), but for NOT_MEASUREMENTS."""
    read = {label(p): len(list(quotes(header(p)))) for s in STAGES for p in stage_files(s)}
    every = ({f"cuda_kernels/{s.key}.cu" for s in STAGES} | {f"triton_kernels/{s.key}.py" for s in STAGES}
             | {f"triton_kernels/gluon/{s.key}.py" for s in STAGES if int(s.number) >= 3})   # Gluon from stage 03
    assert set(read) == every, f"not read: {sorted(every - set(read))}"
    assert all(header(p) for s in STAGES for p in stage_files(s)), "a stage file without a header"
    empty = {f for f, n in read.items() if n == 0}
    assert empty == QUOTE_NOTHING, (f"files with no checked figure: {sorted(empty)}, expected {sorted(QUOTE_NOTHING)}"
                                    f"; checked figures per file: {read}")
    loose = {u for s in STAGES for p in stage_files(s) for u in unread(p)}
    assert loose == set(NOT_MEASUREMENTS), \
        f"figures neither checked nor marked: {sorted(loose - set(NOT_MEASUREMENTS))}; no longer held: " \
        f"{sorted(set(NOT_MEASUREMENTS) - loose)}"


# (file, figure as quoted, a changed figure, what unmatched() reports): in a Measured paragraph (cuda 14, cuda 13:
# a figure near the one the data holds: 457.4 for 470.0) and outside one (Triton 15's "Why faster", Triton 14's
# H200 range, Gluon 11's "measured" in its Changed paragraph).
MUTATIONS = [
    ("cuda_kernels/14_wgmma.cu", "735.4", "935.4", "935.4"),
    ("cuda_kernels/13_swizzle.cu", "fp16 470.0 TFLOP/s", "fp16 457.4 TFLOP/s", "457.4 TFLOP/s"),
    ("triton_kernels/15_tcec.py", "135.6 TFLOP/s", "935.6 TFLOP/s", "935.6 TFLOP/s"),
    ("triton_kernels/15_tcec.py", "2.52x cuBLAS", "9.52x cuBLAS", "9.52x"),
    ("cuda_kernels/15_tcec.cu", "3.59x and 3.80x", "3.59x and 9.80x", "9.80x"),
    ("triton_kernels/14_wgmma.py", "99.1-107.3%", "99.1-137.3%", "137.3%"),
    ("triton_kernels/gluon/11_wmma_async.py", "measured 53.6 TFLOP/s", "measured 52.6 TFLOP/s", "52.6 TFLOP/s"),
]


@pytest.mark.parametrize("name,old,new,reported", MUTATIONS, ids=lambda v: str(v))
def test_a_changed_figure_fails(name, old, new, reported):
    """Mutation: one quoted figure changed in one file is reported as not in the data."""
    path = CUDA_DIR.parent / name
    assert old in header(path), f"{name} no longer quotes {old!r}: pick another figure"
    got = unmatched(lambda p: header(p).replace(old, new) if p == path else header(p))
    assert f"{name}: {reported}" in got, got


def test_mutations_reach_outside_the_measured_paragraph():
    outside = [(n, o) for n, o, _, _ in MUTATIONS if o not in measured_part(header(CUDA_DIR.parent / n))]
    assert len(outside) >= 3, outside


def test_the_rules_read_figures_where_they_stand():
    """Units after a figure, shared along a range or a list; marked clauses left out; bare figures only where
    measured."""
    got = [(q.figure, q.unit) for q in quotes(
        "Why faster: it ran at 98.2-100.7% of cuBLAS, 745.8 fp16 and 768.0 bf16 TFLOP/s at 4096^3 (128x256, "
        "sm_90a); L2 bytes 1.45 -> 1.37 GB, 3-5 points faster, 2.6x Triton 04, 4x larger.  Predicted 2.0x "
        "cuBLAS; measured 63.3 on an H100.  ~12x the FMA rate, 7.7e-4, 2^11; the probe: 0.8 points.  Measured: "
        "43.9, 85.1% of cuBLAS.")]
    assert got == [("98.2", "%"), ("100.7", "%"), ("745.8", "TFLOP/s"), ("768.0", "TFLOP/s"), ("1.45", "GB"),
                   ("1.37", "GB"), ("3", "points"), ("5", "points"), ("2.6", "x"), ("63.3", ""), ("43.9", ""),
                   ("85.1", "%")], got
    assert [(q.gpus, q.shapes) for q in quotes("Measured: 1.0 TFLOP/s at 4096^3 on an H200.")] == \
        [(("h200",), ((4096, 4096, 4096),))]
