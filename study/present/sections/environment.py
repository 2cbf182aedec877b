"""The machine (environment.json) and its measured ceilings beside the datasheet's (ceilings.json)."""
from __future__ import annotations

from study.measure.frame import positive
from study.present import figures as roofline
from study.present.formatting import fmt_num, fmt_value

ID, NAV, TEMPLATE = "environment", "Environment and ceilings", "sections/environment.html.j2"
ENV_ORDER = ("gpu", "sm_count", "l2_bytes", "compute_capability", "driver", "cuda_runtime", "nvcc", "torch",
             "triton", "cuda_bindings", "python", "commit", "date", "sweep_args", "fixture")
CEILING_NAMES = {"dram_gbps": "DRAM bandwidth", "l2_gbps": "L2 bandwidth", "smem_gbps": "Shared-memory bandwidth",
                 **{k: v[0] for k, v in roofline.CEILINGS.items()}}


# Ceilings the sweep measures now that an older ceilings.json may lack: listed, as not yet measured, until it has them.
ANNOUNCED = ("fp8_tc_tflops",)


def environment_rows(env: dict | None) -> list[tuple[str, str]]:
    if not env:
        return []
    keys = [k for k in ENV_ORDER if k in env] + [k for k in env if k not in ENV_ORDER and k != "gpus"]
    return [(k, fmt_value(k, env[k])) for k in keys]


def gpu_rows(env: dict | None, df) -> list[dict]:
    """The GPUs a sweep ran on (environment.json's gpus: one per torchrun rank), each with its count of rows."""
    gpus = (env or {}).get("gpus") or []
    counts = df["gpu_uuid"].value_counts().to_dict() if df is not None and "gpu_uuid" in df else {}
    return [{"rank": g.get("rank", 0), "host": g.get("host", ""), "index": g.get("gpu_index", ""),
             "uuid": g.get("gpu_uuid", ""), "rows": counts.get(g.get("gpu_uuid"), 0)} for g in gpus]


def _unit(key: str) -> str:
    return {"_gbps": "GB/s", "_tflops": "TFLOP/s", "_tops": "TOP/s"}.get(
        next((s for s in ("_gbps", "_tflops", "_tops") if key.endswith(s)), ""), "")


def ceiling_rows(ceilings: dict | None) -> list[dict]:
    c = ceilings or {}
    measured, datasheet = c.get("measured") or {}, c.get("datasheet") or {}
    clocks, methods, errors = c.get("sm_clock_mhz") or {}, c.get("method") or {}, c.get("errors") or {}
    known = ["dram_gbps", "l2_gbps", "smem_gbps", *roofline.CEILINGS]
    # A ceiling added after a ceilings.json was written is listed anyway, as not yet measured.
    keys = [k for k in known if k in measured or k in datasheet or (c and k in ANNOUNCED)]
    keys += sorted((set(measured) | set(datasheet)) - set(known) - {"source"})
    rows = []
    for key in keys:
        m, d = positive(measured.get(key)), positive(datasheet.get(key))
        rows.append({
            "name": CEILING_NAMES.get(key, key), "key": key, "unit": _unit(key),
            "measured": fmt_num(m, 4) if m else "not measured" if key in measured else "not yet measured", "datasheet": fmt_num(d, 4) if d else "",
            "pct": f"{100 * m / d:.0f}%" if m and d else "", "clock": fmt_num(positive(clocks.get(key)), 4),
            "method": fmt_value(key, methods.get(key)), "error": fmt_value(key, errors.get(key)),
        })
    return rows



def build(ctx) -> dict:
    c = ctx.ceilings or {}
    measured = {k: v for k, v in (c.get("measured") or {}).items() if positive(v)}
    return {"env": environment_rows(ctx.env), "gpus": gpu_rows(ctx.env, ctx.df),
            "ceilings": ceiling_rows(ctx.ceilings), "measured": bool(measured),
            "source": (c.get("datasheet") or {}).get("source", ""), "gpu": c.get("gpu", "")}
