"""`python -m study.profile`: Nsight Compute counters of every implementation into profile.csv (needs ncu, as root)."""
import sys

from study.measure import ncu
from study.measure.environment import missing_tool

if __name__ == "__main__":
    child_or_help = {"--child", "-h", "--help"} & set(sys.argv)
    error = None if child_or_help else missing_tool("NCU", "ncu", "Nsight Compute comes with the CUDA toolkit")
    sys.exit(f"study.profile: {error}" if error else ncu.main())
