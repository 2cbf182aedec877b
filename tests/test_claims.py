"""Every measured figure a stage file quotes (CUDA header, Triton and Gluon docstrings: TFLOP/s, TOP/s, % of
cuBLAS, x cuBLAS, ms, MHz, or a bare figure in a "Measured" paragraph) must be one the committed data holds: a
value of some row of that stage or of cuBLAS in any GPU's results.csv (tflops, pct_cublas, ms, sm_clock_mhz), a
ceiling, or a profile value of the stage's calls, at the precision the figure is quoted to (one unit of its last
digit either way).  A figure that is not from this data (a paper's, a seed's, a prediction) says so in its own
sentence ("predicted", "seed", "paper", "datasheet", "~"), and is left out."""
from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import pandas as pd

from study.core.paths import CUDA_DIR, TRITON_DIR
from study.core.stages import STAGES
from study.measure import audit


# Words that mark a sentence's figures as not measured here.
NOT_FROM_DATA = ("predict", "seed", "paper", "datasheet", "~", "expected", "peak of", "issue ")


def header(path: Path) -> str:
    """A stage file's opening comment (CUDA) or module docstring (Python), as one line of text."""
    if path.suffix == ".cu":
        return " ".join(l.lstrip("/ ").strip() for l in path.read_text().splitlines() if l.startswith("//"))
    return " ".join(l.strip() for l in (ast.get_docstring(ast.parse(path.read_text())) or "").splitlines())


def measured_part(text: str) -> str:
    """The "Measured:" paragraph of a header, to the next "Field:" (or the end)."""
    m = re.search(r"Measured:(.*?)(?=\s[A-Z][a-z]+(?: [a-z]+)?:\s|$)", text)
    return m.group(1) if m else ""


def figures(text: str):
    """(sentence, figure) for each decimal figure of the Measured paragraph, sentences marked otherwise aside."""
    for sentence in re.split(r"(?<=[.;])\s+(?=[A-Z(])", measured_part(text)):
        if any(w in sentence for w in NOT_FROM_DATA):
            continue
        for f in re.findall(r"(?<![\w.^x/-])(\d+\.\d+)(?![\w^x])", sentence):
            yield sentence, f


def committed_values(stage) -> list[float]:
    vals = []
    for d in audit.gpu_dirs():
        r = pd.read_csv(d / "results.csv")
        mine = r[(r["stage"].astype(str).str.zfill(2) == stage.number) | (r["backend"] == "cublas")]
        for c in ("tflops", "pct_cublas", "ms", "sm_clock_mhz"):
            vals += list(mine[c].dropna())
        vals += [v for v in json.loads((d / "ceilings.json").read_text())["measured"].values()]
        if (d / "profile.csv").exists():
            p = pd.read_csv(d / "profile.csv")
            p = p[(p["stage"].astype(str).str.zfill(2) == stage.number) | (p["backend"] == "cublas")]
            for c in p.columns:
                if c.endswith("_pct"):
                    vals += list(p[c].dropna())
                elif c.endswith(("bytes", "conflicts", "wavefronts")):
                    vals += [v / 1e9 for v in p[c].dropna()]
    return vals


def matches(figure: str, values) -> bool:
    digits = len(figure.split(".")[1])
    q, unit = float(figure), 10 ** -digits
    return any(abs(round(v, digits) - q) <= unit * 1.01 for v in values if math.isfinite(v))


def unmatched(text_of=lambda p: header(p)) -> list[str]:
    out = []
    for s in STAGES:
        vals = committed_values(s)
        for path in (CUDA_DIR / f"{s.key}.cu", TRITON_DIR / f"{s.key}.py", TRITON_DIR / "gluon" / f"{s.key}.py"):
            if path.exists():
                out += [f"{path.name}: {f}" for _, f in figures(text_of(path)) if not matches(f, vals)]
    return out


# Figures the committed data does not hold today (older sweeps' numbers): each is to be corrected in its file.
KNOWN_UNMATCHED: set[str] = set()


def test_every_measured_figure_is_in_the_committed_data():
    assert sum(1 for s in STAGES for p in (CUDA_DIR / f"{s.key}.cu",) if p.exists()
               for _ in figures(header(p))) >= 20, "the headers' measurements were not found"
    new = set(unmatched()) - KNOWN_UNMATCHED
    assert not new, f"figures no committed row, ceiling or profile value holds: {sorted(new)}"


def test_a_changed_figure_fails():
    """Mutation f: 743.5 -> 943.5 in cuda_kernels/14_wgmma.cu's header."""
    path = CUDA_DIR / "14_wgmma.cu"
    assert "743.5" in header(path)
    got = unmatched(lambda p: header(p).replace("743.5", "943.5") if p == path else header(p))
    assert "14_wgmma.cu: 943.5" in got
