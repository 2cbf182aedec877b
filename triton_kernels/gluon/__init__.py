"""Gluon (triton.experimental.gluon) fp32 GEMM stages: explicit layouts and shared memory, one file per stage."""
