"""Time every config of every stage-14 Triton entry, one by one, beside cuBLAS SGEMM (GPU only).

    python3 tools/tcec_triton_probe.py                 # M = N = K = 4096 and 8192, about a minute

For each size: fresh randn inputs, a float64 reference computed once, cuBLAS SGEMM (torch.mm with TF32 off)
timed first, then each (entry, config) launched directly - not through the autotuner - and timed with
triton.testing.do_bench (median; it clears the L2 between repetitions).  One line per (entry, config,
size): TFLOP/s, % of cuBLAS, relerr against float64, registers and spills.  Last, each entry once through
its autotuner, to show the config it would pick.  A tuning aid: the numbers that count come from study.sweep.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from study.contract import Problem  # noqa: E402
from triton_kernels._common import gemm_args  # noqa: E402

ENTRIES = ("gemm_tcec", "gemm_markidis", "gemm_nocorr", "gemm_tf32")


def relerr(d: torch.Tensor, ref: torch.Tensor) -> float:
    return float((d.double() - ref).norm() / ref.norm())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--rep", type=int, default=100, help="do_bench repetition time per config, ms")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("tcec_triton_probe: needs a CUDA GPU")
    mod = importlib.import_module("triton_kernels.14_tcec")
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda", 0)
    print(f"{torch.cuda.get_device_name(dev)}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    start = time.time()
    for n in (int(s) for s in args.sizes.split(",")):
        gen = torch.Generator(device=dev).manual_seed(n)
        a = torch.randn(n, n, device=dev, generator=gen)
        b = torch.randn(n, n, device=dev, generator=gen)
        ref = a.double() @ b.double()
        out = torch.empty(n, n, device=dev)
        flop = 2 * n**3

        ms = triton.testing.do_bench(lambda: torch.mm(a, b, out=out), rep=args.rep, return_mode="median")
        base = flop / ms / 1e9
        print(f"{n:5d} {'cublas-sgemm':14s} {'':22s} {base:7.1f} TFLOP/s {100.0:6.1f}%  relerr {relerr(out, ref):.2e}",
              flush=True)

        p = Problem(a, b, None, out, 1.0, 0.0)
        kargs = gemm_args(p)
        for entry in ENTRIES:
            for meta in mod.variants(entry):
                consts = {k: v for k, v in meta.items() if k not in ("num_warps", "num_stages")}
                grid = (triton.cdiv(n, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

                def go(consts=consts, meta=meta, grid=grid):
                    return mod.KERNEL[grid](**kargs, **consts, num_warps=meta["num_warps"],
                                            num_stages=meta["num_stages"])

                out.fill_(float("nan"))
                k = go()
                torch.cuda.synchronize()
                err = relerr(out, ref)
                ms = triton.testing.do_bench(go, rep=args.rep, return_mode="median")
                tf = flop / ms / 1e9
                cfg = (f"{meta['BLOCK_M']}x{meta['BLOCK_N']}x{meta['BLOCK_K']} "
                       f"w{meta['num_warps']} s{meta['num_stages']}")
                print(f"{n:5d} {entry:14s} {cfg:22s} {tf:7.1f} TFLOP/s {100 * tf / base:6.1f}%  relerr {err:.2e}  "
                      f"regs {k.n_regs} spills {k.n_spills}", flush=True)
        for entry in ENTRIES:
            out.fill_(float("nan"))
            getattr(mod, entry)(p)
            torch.cuda.synchronize()
            tuner = mod._tuned_tf32 if entry == "gemm_tf32" else mod._tuned_fp16
            c = tuner.best_config
            cfg = f"{c.kwargs['BLOCK_M']}x{c.kwargs['BLOCK_N']}x{c.kwargs['BLOCK_K']} w{c.num_warps} s{c.num_stages}"
            print(f"{n:5d} {entry:14s} autotuner picks {cfg}  relerr {relerr(out, ref):.2e}", flush=True)
        del a, b, ref, out
        torch.cuda.empty_cache()
    print(f"done in {time.time() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main()
