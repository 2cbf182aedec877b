"""Profile one launch of every ladder implementation of one dtype (and cuBLAS) at one size, under ncu.

    ncu --clock-control none --profile-from-start off --csv --page raw --metrics <list> \\
        python3 tools/ncu_ladder.py [--n 4096] [--stages 03,04,...] [--dtype fp32] > reports/ncu_ladder.csv

The tensor-core stages take --dtype fp16 or bf16, e.g. stages 12 and 13 (reports/ncu_tensor.csv):
    ... python3 tools/ncu_ladder.py --dtype fp16 --stages 12,13 --backends cuda

tools/gpu_run.sh runs it with the metric list below (the STUDY_STEPS step "ncu").  Each implementation is
warmed up (Triton autotunes, compiles) outside the profiled range; only its last launch is profiled.  The
lines "PROFILED <impl>" name the profiled kernels in order; the first line records the machine and commit.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess

METRICS = ",".join((
    "gpu__time_duration.sum", "launch__registers_per_thread", "smsp__warps_active.avg.per_cycle_active",
    "smsp__inst_executed.sum", "smsp__inst_executed_pipe_fma.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", "dram__bytes_read.sum",
    *(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio"
      for r in ("barrier", "long_scoreboard", "short_scoreboard", "mio_throttle", "dispatch_stall", "wait",
                "math_pipe_throttle", "lg_throttle", "not_selected", "no_instruction")),
    # Tensor-core stages (14): how busy the HMMA pipe is, and whether L2 can feed it.
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", "smsp__inst_executed_pipe_tensor.sum",
    "lts__t_bytes.sum", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--stages", default="03,04,05,06,07,08,09")
    ap.add_argument("--backends", default="cuda,triton,gluon")
    ap.add_argument("--dtype", default="fp32", help="input dtype (fp32, fp16, bf16, ...); cuBLAS runs it too")
    ap.add_argument("--metrics", action="store_true", help="print the metric list and exit")
    args = ap.parse_args()
    if args.metrics:
        print(METRICS)
        return
    import torch

    import study
    from study.verify import make_inputs

    dev = torch.device("cuda", 0)
    torch.backends.cuda.matmul.allow_tf32 = False
    commit = os.environ.get("STUDY_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print("MACHINE", json.dumps({"gpu": torch.cuda.get_device_name(dev), "commit": commit, "n": args.n,
                                 "dtype": args.dtype, "torch": torch.__version__}), flush=True)
    wanted = args.stages.split(",")
    backends = args.backends.split(",")
    names = [i.name for i in study.implementations(dtype=args.dtype)
             if i.stage and i.stage.number in wanted and i.backend in backends]
    inputs = {}   # output dtype -> inputs (stage 10 writes fp32 D from fp16 A and B; 11-13 write fp16)
    runs = []
    for name in [*names, "cublas"]:
        impl = study.get(name)
        out_dtype = impl.out_dtypes.get(args.dtype, args.dtype)
        if out_dtype not in inputs:
            inputs[out_dtype] = make_inputs(args.n, args.n, args.n, args.dtype, dev, out_dtype=out_dtype)
        x = inputs[out_dtype]
        run, _ = impl.prepare(x.a, x.b, out=x.out)
        run(), run()
        runs.append((name, run))
    torch.cuda.synchronize()
    for name, run in runs:
        print("PROFILED", name, flush=True)
        torch.cuda.profiler.start()
        run()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
