"""Prove a refactor changed no code: hash the PTX a stage module's KERNEL compiles to for sm_90, offline.

    TRITON_INTERPRET=0 python tools/ptx_hash.py triton_kernels.gluon.12_mma_ldmatrix [--dtypes fp16,bf16] \\
        [--rename wmma_async_kernel,mma_kernel]

For each dtype x HAS_C x ALIGNED (the module's META otherwise) it prints a hash of the PTX's code: debug
sections, comments, .file and .loc lines dropped, and the --rename names (kernel names, which also name the
parameters) replaced, so that moving a kernel between files or renaming it leaves the hash alone.  Run it
before and after; equal hashes mean equal code.  Operand pointers are declared 16-byte aligned for
ALIGNED=True, as the launcher's specialisation would.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
OPTIONS = ("num_warps", "num_stages")


def code_hash(ptx: str, renames: list[str]) -> str:
    """study.offline's PTX digest (the one the evidence key holds), with the kernel names replaced first."""
    from study.offline import code_hash as digest
    for name in renames:
        ptx = ptx.replace(name, "KERNEL")
    return digest(ptx)[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--dtypes", default="fp16,bf16")
    ap.add_argument("--rename", default="")
    args = ap.parse_args()
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.experimental.gluon._runtime import GluonASTSource

    from triton_kernels._common import signature
    mod = importlib.import_module(args.module)
    source_type = GluonASTSource if ".gluon." in args.module else ASTSource
    renames = [r for r in args.rename.split(",") if r]
    out = {}
    for dt in args.dtypes.split(","):
        for has_c in (True, False):
            for aligned in ((True, False) if "ALIGNED" in mod.META else (None,)):
                consts = {k: v for k, v in mod.META.items() if k not in OPTIONS}
                if aligned is not None:
                    consts["ALIGNED"] = aligned
                attrs = {(i,): [["tt.divisibility", 16]] for i in range(4)} if aligned else {}
                src = source_type(mod.KERNEL, {**signature(dt), **{k: "constexpr" for k in consts}},
                                  constexprs={"HAS_C": has_c, **consts}, attrs=attrs)
                k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                   options={o: mod.META[o] for o in OPTIONS if o in mod.META})
                out[f"{dt} HAS_C={has_c} ALIGNED={aligned}"] = code_hash(k.asm["ptx"], renames)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
