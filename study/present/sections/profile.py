"""What ncu counted (profile.csv, python -m study.profile): the hierarchical rooflines, the stages' claims against
the counters, and every profiled call."""
from __future__ import annotations

from pathlib import Path

from study.measure import audit
from study.measure.frame import dtype_order, load_json
from study.present import hierarchy

ID, NAV, TEMPLATE = "profile", "Profile (ncu)", "sections/profile.html.j2"


def _safe(name: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "unknown"


def profile_section(report_dir: Path, ceilings: dict | None, implausible: dict | None = None) -> dict | None:
    """reports/profile.csv (study/measure/ncu.py): hierarchical rooflines, claims against counters, every call.
    implausible: {call key: why} of the calls the audit rejects (audit.implausible_calls), kept out of the
    figures and named under them."""
    for old in report_dir.glob("hierarchy_*.png"):
        old.unlink()
    df = hierarchy.load(report_dir / "profile.csv")
    if df is None:
        return None
    agg = hierarchy.per_call(df)
    implausible = audit.implausible_calls(report_dir) if implausible is None else implausible
    drawn = hierarchy.plausible(agg, implausible)
    figures = []
    for dtype in dtype_order(agg["dtype"]):
        name = f"hierarchy_{_safe(dtype)}.png"
        if hierarchy.figure(drawn, ceilings, dtype, report_dir / name):
            figures.append({"dtype": dtype, "src": name})
    extra = load_json(report_dir / "profile_notes.json") or {}
    first = df.iloc[0]
    return {"figures": figures, "claims": hierarchy.claims(agg), "rows": hierarchy.table(agg),
            "notes": extra.get("notes", []),
            "excluded": hierarchy.excluded_note(implausible), "where": f"{first['gpu']}, commit {first['commit']}"}


def build(ctx) -> dict | None:
    prof = profile_section(ctx.report_dir, ctx.ceilings, ctx.implausible)
    return {"profile": prof} if prof else None
