#!/usr/bin/env bash
# One call on a GPU machine: build every kernel, run the GPU equivalence tests (writing
# reports/gpu-evidence.json), run the sweep, run stage 15's accuracy study, and pack reports/ into $OUT (the
# report renders on any machine: python -m study.report; the GPU image lacks plotly).
#
#   STUDY_COMMIT=<sha> bash tools/gpu_run.sh [sweep args...]      (default: --quick, into reports/<gpu>/)
#   STUDY_COMMIT is required: the device machine's copy of the tree may carry a stale .git (seen 2026-11-23:
#   it named the session's first commit, so every record claimed the wrong one).  Write the sha into the
#   command where the repo lives, e.g. STUDY_COMMIT=ba4f553, never $(git rev-parse ...) run over there.
#   STUDY_STEPS="build test sanitize sweep idle accuracy profile ncu probe" selects steps (default: build test sweep
#   accuracy).  idle times the power-limited rows of reports/<gpu>/results.csv again with an idle gap before
#   each call (python -m study.sweep --idle-timings).  accuracy writes reports/<gpu>/accuracy.csv and fig8.csv,
#   sized for < 3 minutes on an H100; sanitize (study/measure/sanitize.py) records compute-sanitizer counts in the
#   evidence; profile (study/measure/ncu.py) writes reports/<gpu>/profile.csv for every implementation, bank
#   conflicts included; ncu profiles the fp32 ladder at 4096^3, with stall reasons, into reports/ladder/profile.csv.
#   STUDY_ACCURACY_ARGS="--quick" passes arguments to python -m study.accuracy
#   STUDY_SANITIZE_ARGS="--impls a,b" passes arguments to python -m study.sanitize (default: every CUDA kernel)
#   STUDY_PROFILE_ARGS="--impls a,b" passes arguments to python -m study.profile (the others' rows stay)
#   probe (last, before packing) runs python -m study.probe $STUDY_PROBE_ARGS (tuning variants beside cuBLAS) for
#   at most STUDY_PROBE_TIMEOUT seconds (default 560), into logs/probe.log
#   STUDY_STALE_ONLY=1 re-tests only implementations whose current key has no passing evidence
#   (study/measure/evidence.py)
#   STUDY_TEST_WORKERS=N runs the GPU tests in N pytest-xdist processes (default 8; Triton compiles in each)
#   STUDY_TEST_FILTER=EXPR runs only the GPU tests pytest -k EXPR selects (their evidence records are rewritten)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export GEMM_STUDY_CACHE="${GEMM_STUDY_CACHE:-/tmp/gemm-study-cache}"
# Autotuned Triton kernels keep the config they first pick, on disk: the tests, the sweep and the profile of one
# call then run the same config.
export TRITON_CACHE_AUTOTUNING=1
# $OUT brings back 8 files at most: the logs go in one tarball
OUT="${OUT:-/tmp/gemm-study-out}"; LOGS="$OUT/logs"; mkdir -p "$LOGS"
STEPS="${STUDY_STEPS:-build test sweep accuracy}"
SWEEP_ARGS=("$@"); [ ${#SWEEP_ARGS[@]} -eq 0 ] && SWEEP_ARGS=(--quick)
status=0
log() { echo "=== $(date -u +%H:%M:%S) $*"; }
if [ -z "${STUDY_COMMIT:-}" ]; then
  echo "tools/gpu_run.sh: set STUDY_COMMIT to the commit being measured (see the header)" >&2
  exit 2
fi
export STUDY_COMMIT

log "machine"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', \
  torch.version.cuda)"
GPU_DIR="reports/$(python3 -c 'import torch; from study.measure.sweep import gpu_slug
print(gpu_slug(torch.cuda.get_device_name()))')"

if [[ " $STEPS " == *" build "* ]]; then
  log "build (nvcc, sm_90a)"
  python3 -m study.build 2>&1 | tee "$LOGS/build.log" || status=1
fi
if [[ " $STEPS " == *" test "* ]]; then
  log "GPU equivalence tests"
  TEST_ARGS=(-m gpu -q -p no:cacheprovider --write-evidence reports/gpu-evidence.json --junitxml="$LOGS/junit.xml")
  if [ "${STUDY_STALE_ONLY:-0}" = 1 ]; then
    TEST_ARGS+=(--stale-only)
    # Every xdist worker computes the keys at collection: warm the offline-compile cache once, first.
    python3 -m study.evidence --keys > "$LOGS/keys.json" || status=1
  fi
  [ -n "${STUDY_TEST_FILTER:-}" ] && TEST_ARGS+=(-k "$STUDY_TEST_FILTER")
  python3 -c "import xdist" 2>/dev/null && TEST_ARGS+=(-n "${STUDY_TEST_WORKERS:-8}" --dist load)  # not per file
  python3 -m pytest "${TEST_ARGS[@]}" tests > "$LOGS/tests.log" 2>&1 || status=1
  tail -40 "$LOGS/tests.log"
fi
if [[ " $STEPS " == *" sweep "* ]]; then
  log "sweep ${SWEEP_ARGS[*]}"
  python3 -m study.sweep "${SWEEP_ARGS[@]}" 2>&1 | tee "$LOGS/sweep.log" | grep -v '%|' || status=1
fi
if [[ " $STEPS " == *" idle "* ]]; then
  log "idle-gap timings of the power-limited rows"
  python3 -m study.sweep --idle-timings --out "$GPU_DIR" 2>&1 | tee "$LOGS/idle.log" || status=1
fi
if [[ " $STEPS " == *" accuracy "* ]]; then
  log "accuracy (stage 15, seed 002: error vs K, Figure 8)"
  read -ra ACCURACY_ARGS <<< "${STUDY_ACCURACY_ARGS:-}"
  python3 -m study.accuracy --out "$GPU_DIR" "${ACCURACY_ARGS[@]}" 2>&1 | tee "$LOGS/accuracy.log" || status=1
fi
if [[ " $STEPS " == *" ncu "* ]]; then
  log "ncu (fp32 ladder 03-09, 4096^3, with stall reasons)"
  timeout 400 python3 -m study.profile --stages 03,04,05,06,07,08,09 --dtypes fp32 --ragged none --stalls \
    --out reports/ladder 2>&1 | tee "$LOGS/ncu.log" || status=1
fi
if [[ " $STEPS " == *" sanitize "* ]]; then
  log "compute-sanitizer: memcheck, racecheck, synccheck, initcheck over every CUDA kernel (ragged shapes)"
  read -ra SANITIZE_ARGS <<< "${STUDY_SANITIZE_ARGS:-}"
  timeout 560 python3 -m study.sanitize --evidence reports/gpu-evidence.json --log-dir "$LOGS" "${SANITIZE_ARGS[@]}" \
    || status=1
fi
if [[ " $STEPS " == *" profile "* ]]; then
  log "profile: ncu counters of every implementation and dtype at 4096^3 and one ragged shape"
  read -ra PROFILE_ARGS <<< "${STUDY_PROFILE_ARGS:-}"
  timeout 560 python3 -m study.profile --out "$GPU_DIR" "${PROFILE_ARGS[@]}" 2>&1 | tee "$LOGS/profile.log" || status=1
fi
if [[ " $STEPS " == *" probe "* ]]; then
  log "probe ${STUDY_PROBE_ARGS:-}"
  read -ra PROBE_ARGS <<< "${STUDY_PROBE_ARGS:-}"
  timeout "${STUDY_PROBE_TIMEOUT:-560}" python3 -m study.probe "${PROBE_ARGS[@]}" 2>&1 | grep -v '%|' \
    | tee "$LOGS/probe.log" || status=1
fi
log "pack reports"
tar czf "$OUT/reports.tgz" reports
tar czf "$OUT/logs.tgz" -C "$OUT" logs && rm -rf "$LOGS"
exit $status
