"""`python -m study.ptx`: write reports/ptx.json, what Triton emitted for each Triton and Gluon implementation
(study/measure/ptx_summary.py)."""
import sys

from study.measure import ptx_summary

if __name__ == "__main__":
    sys.exit(ptx_summary.main())
