"""nvcc -> cubin, cached on disk, with ptxas's resource report kept beside each cubin.

Needs no GPU: the architecture is an argument (default sm_90a, what CI checks).  The cache key covers
everything that changes the binary - the source and the headers it can include, the flags, the arch and
the nvcc version - so a warm run compiles nothing and a changed input can never hit a stale cubin.

"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from study.core.paths import CUDA_DIR as KERNEL_DIR, source_closure
NVCC_FLAGS = ("-O3", "-std=c++17", "-lineinfo")
DEFAULT_ARCH = "90a"


class BuildError(RuntimeError):
    pass


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one entry function."""
    registers: int
    smem_bytes: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


@dataclass(frozen=True)
class Cubin:
    path: Path
    arch: str
    resources: dict[str, Resources]   # entry name -> resources

    @property
    def exports(self) -> dict[str, int]:
        """The launch facts the source exports (STUDY_EXPORT in gemm_common.cuh): shared-memory sizes, tiles."""
        return _exports(self.path)


@functools.lru_cache(maxsize=None)
def _exports(path: Path) -> dict[str, int]:
    from study.launch.cubin_key import exports
    return exports(path)


def cache_dir() -> Path:
    root = os.environ.get("GEMM_STUDY_CACHE") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    d = Path(root) / "gemm-study" / "cubin"
    d.mkdir(parents=True, exist_ok=True)
    return d


def nvcc_path() -> str:
    for cand in (os.environ.get("NVCC"), shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and Path(cand).exists():
            return cand
    raise BuildError("nvcc not found: put the CUDA toolkit's bin/ on PATH or set NVCC")


@functools.lru_cache(maxsize=None)
def nvcc_version() -> str:
    out = subprocess.run([nvcc_path(), "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release [\d.]+, V([\d.]+)", out)
    return m.group(1) if m else out.strip().splitlines()[-1]


def arch_for_capability(major: int, minor: int) -> str:
    # sm_90a unlocks wgmma/setmaxnreg and is only valid on 9.0 itself; elsewhere build the plain target.
    return "90a" if (major, minor) == (9, 0) else f"{major}{minor}"


def _key(source: Path, arch: str, flags: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for p in source_closure(source):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(" ".join(flags).encode() + b"\0" + arch.encode() + b"\0" + nvcc_version().encode())
    return h.hexdigest()[:24]


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def parse_ptxas(log: str) -> dict[str, Resources]:
    """Map each entry function to its registers, static shared memory, stack and spills."""
    out: dict[str, Resources] = {}
    entry, stack = None, (0, 0, 0)
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            entry, stack = m.group(1), (0, 0, 0)
        elif (m := _STACK.search(line)) and entry:
            stack = tuple(int(x) for x in m.groups())
        elif (m := _USED.search(line)) and entry:
            out[entry] = Resources(registers=int(m.group(1)), smem_bytes=int(m.group(2) or 0),
                                   stack_bytes=stack[0], spill_stores=stack[1], spill_loads=stack[2])
            entry = None
    return out


def build(source: Path | str, arch: str = DEFAULT_ARCH, flags: tuple[str, ...] = NVCC_FLAGS) -> Cubin:
    source = Path(source)
    if not source.is_absolute():
        source = KERNEL_DIR / source
    key = _key(source, arch, flags)
    cubin = cache_dir() / f"{source.stem}-sm{arch}-{key}.cubin"
    meta = cubin.with_suffix(".json")
    if cubin.exists() and meta.exists():
        res = {k: Resources(**v) for k, v in json.loads(meta.read_text()).items()}
        return Cubin(cubin, arch, res)

    with tempfile.TemporaryDirectory() as tmp:
        tmp_cubin = Path(tmp) / cubin.name
        cmd = [nvcc_path(), "-cubin", f"-gencode=arch=compute_{arch},code=sm_{arch}", *flags,
               "-Xptxas", "-v", f"-I{source.parent}", "-o", str(tmp_cubin), str(source)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"nvcc failed for {source.name} (sm_{arch}):\n{proc.stderr}")
        res = parse_ptxas(proc.stderr)
        if not res:
            raise BuildError(f"no ptxas resource report for {source.name}:\n{proc.stderr}")
        # Write the metadata first and move the cubin last: a cubin in the cache is always complete.
        meta.write_text(json.dumps({k: v.__dict__ for k, v in res.items()}, indent=1))
        os.replace(tmp_cubin, cubin)
    return Cubin(cubin, arch, res)


def build_many(jobs, arch: str = DEFAULT_ARCH, strict: bool = True) -> list[Cubin | BuildError]:
    """build() of each (source, flags) of `jobs`, nvcc processes side by side (a thread each, up to one a CPU).
    strict=False returns a failed build's BuildError in its place instead of raising it."""
    from concurrent.futures import ThreadPoolExecutor

    def one(job):
        try:
            return build(job[0], arch, job[1])
        except BuildError as e:
            if strict:
                raise
            return e
    jobs = list(jobs)
    with ThreadPoolExecutor(max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        return list(pool.map(one, jobs))
