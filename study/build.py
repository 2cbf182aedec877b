"""`python -m study.build`: compile every CUDA kernel the study registers for one architecture (default sm_90a,
no GPU needed), and print each entry's registers, shared memory and spills; exit 1 on a spill that no kernel
declared deliberate.  The cubins land in the build cache (study/launch/build.py)."""
from __future__ import annotations

import sys
from pathlib import Path

from study.core import cli
from study import registry
from study.launch.build import DEFAULT_ARCH, NVCC_FLAGS, build_many


def main(argv: list[str] | None = None) -> int:
    ap = cli.parser("build", __doc__)
    ap.add_argument("--arch", default=DEFAULT_ARCH, help="sm_XX target without 'sm_' (default 90a)")
    args = ap.parse_args(argv)
    bad = 0
    sources = sorted({src for src, _, _ in registry.cuda_sources()})
    cubins = dict(zip(sources, build_many(((s, NVCC_FLAGS) for s in sources), args.arch)))
    for src, entry, spills_ok in registry.cuda_sources():
        r = cubins[src].resources[entry]
        flag = "" if not r.spills or spills_ok else "   <-- SPILLS"
        bad += bool(flag)
        print(f"{Path(src).name:28s} {entry:24s} regs={r.registers:3d} smem={r.smem_bytes:6d} "
              f"stack={r.stack_bytes} spills={r.spills}{flag}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
