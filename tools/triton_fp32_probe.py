"""Probe plain-Triton fp32 (ieee) configurations beyond the registered ones, cuBLAS SGEMM timed adjacently.

    python tools/triton_fp32_probe.py [--shapes 4096,8192]

Issue 5 asks plain Triton for 95% of cuBLAS SGEMM; the registered autotuner lists reach 84-89%.  This tries
what they do not: a register cap per config (maxnreg), which changes how ptxas schedules the FFMA stream,
and a few tile shapes of the one-dot tuned kernel.  A tuning aid: numbers that count come from study.sweep.
"""
from __future__ import annotations

import argparse
import importlib

import torch
import triton

from study.contract import validate
from _probe import cublas_row, setup
from study.timing import bench
from study.verify import judge
from triton_kernels._common import gemm_args

# (module, kernel attribute, BLOCK_M, BLOCK_N, BLOCK_K, warps, stages, maxnreg)
PROBES = [
    ("09_best_simt", "best_simt_kernel", 64, 128, 32, 4, 4, None),   # the autotuner's pick at 4096^3
    ("09_best_simt", "best_simt_kernel", 64, 128, 32, 4, 4, 168),
    ("09_best_simt", "best_simt_kernel", 64, 256, 16, 4, 3, None),
    ("09_best_simt", "best_simt_kernel", 128, 256, 16, 8, 3, None),
    ("09_best_simt", "best_simt_kernel", 128, 128, 16, 8, 4, 128),
    ("baseline_tuned", "matmul_kernel", 128, 128, 32, 8, 3, None),
    ("baseline_tuned", "matmul_kernel", 128, 128, 32, 8, 3, 168),
    ("baseline_tuned", "matmul_kernel", 64, 128, 32, 4, 4, None),
    ("baseline_tuned", "matmul_kernel", 128, 64, 32, 4, 4, None),
    ("baseline_tuned", "matmul_kernel", 256, 128, 16, 8, 3, None),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096,8192")
    args = ap.parse_args()
    dev, flush, clock = setup()
    for n in (int(s) for s in args.shapes.split(",")):
        x, ref, base = cublas_row(n, dev, flush, clock)
        p = validate("probe", {"fp32": "fp32"}, {}, x.a, x.b, out=x.out)
        for mod_name, attr, bm, bn, bk, warps, stages, maxnreg in PROBES:
            kernel = getattr(importlib.import_module(f"triton_kernels.{mod_name}"), attr)
            meta = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages)
            if mod_name == "baseline_tuned":
                meta["INPUT_PRECISION"] = "ieee"
            if maxnreg:
                meta["maxnreg"] = maxnreg
            grid = (triton.cdiv(n, bm) * triton.cdiv(n, bn),)
            x.out.fill_(float("nan"))
            k = kernel[grid](**gemm_args(p), **meta)
            v = judge(x.out, ref, "fp32")
            tk = bench(lambda: kernel[grid](**gemm_args(p), **meta), flush, clock)
            tf = 2 * n**3 / tk.ms / 1e9
            print(f"{n}^3 {mod_name:14s} {bm}x{bn}x{bk} w{warps} s{stages} maxnreg={maxnreg}: {tf:6.2f} TFLOP/s "
                  f"{100 * tf / base:5.1f}%  regs={k.n_regs} spills={k.n_spills} relerr={v.relerr:.1e} "
                  f"{'' if v.passed else 'FAILED ' + v.error}", flush=True)


if __name__ == "__main__":
    main()
