"""reports/environment.json: what the numbers were measured on, and from which commit."""
from __future__ import annotations

import datetime as dt
import os
import platform
import subprocess
from importlib import metadata

from study.core.paths import ROOT


def git_commit() -> str:
    """The measured commit.  The GPU machine gets a copy of the tree without .git, so the launch script
    passes it in as STUDY_COMMIT; a '-dirty' suffix marks uncommitted kernel changes."""
    if c := os.environ.get("STUDY_COMMIT"):
        return c
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "cuda_kernels", "triton_kernels", "study"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except Exception:
        return "unknown"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def collect(device=None) -> dict:
    import torch
    from study.launch.build import nvcc_version
    env = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
           "python": platform.python_version(), "torch": torch.__version__, "triton": _version("triton"),
           "cuda_bindings": _version("cuda-bindings") or _version("cuda-python"),
           "cuda_runtime": torch.version.cuda}
    try:
        env["nvcc"] = nvcc_version()
    except Exception as e:
        env["nvcc"] = f"unavailable ({e})"
    if device is not None:
        p = torch.cuda.get_device_properties(device)
        env.update(gpu=p.name, sm_count=p.multi_processor_count, l2_bytes=p.L2_cache_size,
                   memory_gib=round(p.total_memory / 2**30, 1), compute_capability=f"{p.major}.{p.minor}")
        try:
            import pynvml
            pynvml.nvmlInit()
            env["driver"] = pynvml.nvmlSystemGetDriverVersion()
            h = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
            env["sm_clock_max_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)
            env["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000
        except Exception:
            pass
    return env


def missing_tool(variable: str, default: str, what: str) -> str | None:
    """None if the tool (the environment variable `variable`, else `default`) is on PATH; else a one-line error."""
    import os
    import shutil
    tool = os.environ.get(variable, default)
    return None if shutil.which(tool) else f"{tool} is not on PATH ({what}; or set {variable})"
