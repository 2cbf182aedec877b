"""`python -m study.probe`: time implementations and their tuning variants beside cuBLAS, judged against float64."""
import sys

from study.measure import probe

if __name__ == "__main__":
    sys.exit(probe.main())
