"""What ncu counted (profile.csv, python -m study.profile): the hierarchical rooflines, the stages' claims against
the counters, and every profiled call; plus any other ncu_*.csv tables in the folder."""
from __future__ import annotations

from pathlib import Path

from study.measure import ncu as counters
from study.measure.frame import dtype_order, load_json
from study.present import hierarchy
from study.present.formatting import fmt_num

ID, NAV, TEMPLATE = "profile", "Profile (ncu)", "sections/profile.html.j2"


def _safe(name: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "unknown"


def counter_tables(report_dir: Path) -> list[dict]:
    """One table per reports/ncu_*.csv: what ncu counted for each profiled kernel (study/measure/ncu.py)."""
    tables = []
    for prof in counters.load_all(report_dir):
        m = prof.machine
        where = ", ".join(str(x) for x in (m.get("gpu"), m.get("commit") and f"commit {m['commit']}",
                                           m.get("n") and f"{m['n']}^3 {m.get('dtype', 'fp32')}") if x)
        rows = [{"impl": r["impl"], "kernel": r["kernel"],
                 **{k: fmt_num(r[k]) if r[k] is not None else "" for k in ("ms", "registers", "instructions_m",
                                                                        "dram_read_mb", "issue_pct", "tensor_pct")},
                 "conflicts": " / ".join(f"{int(r[k]):,}" if r[k] is not None else "" for k in
                                         ("smem_ld_conflicts", "smem_st_conflicts"))}
                for r in prof.rows]
        tables.append({"source": prof.source, "where": where, "notes": prof.notes, "rows": rows})
    return tables


def profile_section(report_dir: Path, ceilings: dict | None) -> dict | None:
    """reports/profile.csv (study/measure/ncu.py): hierarchical rooflines, claims against counters, every call."""
    for old in report_dir.glob("hierarchy_*.png"):
        old.unlink()
    df = hierarchy.load(report_dir / "profile.csv")
    if df is None:
        return None
    agg = hierarchy.per_call(df)
    figures = []
    for dtype in dtype_order(agg["dtype"]):
        name = f"hierarchy_{_safe(dtype)}.png"
        if hierarchy.figure(agg, ceilings, dtype, report_dir / name):
            figures.append({"dtype": dtype, "src": name})
    extra = load_json(report_dir / "profile_notes.json") or {}
    first = df.iloc[0]
    return {"figures": figures, "claims": hierarchy.claims(agg), "rows": hierarchy.table(agg),
            "notes": extra.get("notes", []), "where": f"{first['gpu']}, commit {first['commit']}"}



def build(ctx) -> dict | None:
    prof, tables = profile_section(ctx.report_dir, ctx.ceilings), counter_tables(ctx.report_dir)
    return {"profile": prof, "counters": tables} if prof or tables else None
