"""Stage 14 on the GPU, quickly: each method's error on uniform [0, 1) inputs (relative Frobenius and the mean
signed relative error, which shows a bias) beside SGEMM's, and the kernels one call launches with their GPU times
(torch.profiler).  Not part of the sweep; a development probe whose output goes into NOTES.md.

    python tools/tcec_probe.py --impls cuda:14_tcec,triton:14_tcec --size 4096 --ks 256,4096
"""
from __future__ import annotations

import argparse

import torch

import study


def bias(names, n, ks, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    for k in ks:
        a = torch.rand((n, k), generator=g, device="cuda")
        b = torch.rand((k, n), generator=g, device="cuda")
        ref = a.double() @ b.double()
        for name in ["cublas", *names]:
            out = torch.full((n, n), float("nan"), device="cuda")
            study.get(name)(a, b, out=out)
            rel = (out.double() - ref) / ref
            print(f"uniform {n}x{n}x{k} {name:28s} relerr {float((out.double() - ref).norm() / ref.norm()):.3e}  "
                  f"mean signed {float(rel.mean()):+.3e}")


def kernels(names, size):
    from torch.profiler import ProfilerActivity, profile
    a = torch.randn(size, size, device="cuda")
    b = torch.randn(size, size, device="cuda")
    out = torch.empty(size, size, device="cuda")
    for name in names:
        impl = study.get(name)
        for _ in range(3):
            impl(a, b, out=out)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            impl(a, b, out=out)
            torch.cuda.synchronize()
        events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        total = sum(e.device_time for e in events)
        print(f"{name} at {size}^3: {total:.0f} us of kernels, {2 * size**3 / total / 1e6:.1f} TFLOP/s")
        for e in events:
            print(f"    {e.device_time:9.1f} us  {e.name[:90]}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--impls", required=True)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--bias-size", type=int, default=1024)
    ap.add_argument("--ks", default="256,4096")
    args = ap.parse_args()
    names = args.impls.split(",")
    bias(names, args.bias_size, [int(k) for k in args.ks.split(",")])
    kernels(names, args.size)
