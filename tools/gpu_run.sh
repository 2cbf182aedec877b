#!/usr/bin/env bash
# One call on a GPU machine: build every kernel, run the GPU equivalence tests (writing
# reports/gpu-evidence.json), run the sweep, render the report, and pack reports/ into $OUT.
#
#   STUDY_COMMIT=<sha> bash tools/gpu_run.sh [sweep args...]      (default: --quick)
#   STUDY_STEPS="build test sweep" selects steps (default: all three)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export GEMM_STUDY_CACHE="${GEMM_STUDY_CACHE:-/tmp/gemm-study-cache}"
OUT="${OUT:-/tmp/gemm-study-out}"; mkdir -p "$OUT"
STEPS="${STUDY_STEPS:-build test sweep}"
SWEEP_ARGS=("$@"); [ ${#SWEEP_ARGS[@]} -eq 0 ] && SWEEP_ARGS=(--quick)
status=0
log() { echo "=== $(date -u +%H:%M:%S) $*"; }

log "machine"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.version.cuda)"

if [[ " $STEPS " == *" build "* ]]; then
  log "build (nvcc, sm_90a)"
  python3 -m study.cuda_build 2>&1 | tee "$OUT/build.log" || status=1
fi
if [[ " $STEPS " == *" test "* ]]; then
  log "GPU equivalence tests"
  python3 -m pytest -m gpu -q -p no:cacheprovider --write-evidence reports/gpu-evidence.json \
      --junitxml="$OUT/junit.xml" tests 2>&1 | tail -40 | tee "$OUT/tests.log" || status=1
fi
if [[ " $STEPS " == *" sweep "* ]]; then
  log "sweep ${SWEEP_ARGS[*]}"
  python3 -m study.sweep "${SWEEP_ARGS[@]}" 2>&1 | tee "$OUT/sweep.log" | grep -v '%|' || status=1
fi
log "pack reports"
tar czf "$OUT/reports.tgz" reports
exit $status
