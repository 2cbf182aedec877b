"""When a timed row counts as power-limited, shared by the timing (study/measure/timing.py, which imports torch)
and the report (study/present/spread.py, which must not)."""

# Below this fraction of the GPU's maximum SM clock a row counts as power-limited (a sustained 8192^3 fp16 GEMM
# on an H100 at 700 W averages about 1600 of 1980 MHz).
POWER_LIMITED_FRACTION = 0.95
# The idle gap before each call of the second protocol: at least this, and at least the call's own time, so
# the card is busy at most half the time.
IDLE_GAP_MS = 1.0
# Only calls of at least this long are timed idle: the power limit acts on sustained load, and for shorter calls
# the wake-up after each idle gap weighs on the call itself (seen on an H200: cuBLAS fp16 4096^3, 0.18 ms, ran
# 12% slower idle).
IDLE_MIN_CALL_MS = 1.0
