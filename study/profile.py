"""`python -m study.profile`: Nsight Compute counters of every implementation into profile.csv (needs ncu, as root)."""
import os
import shutil
import sys

from study.measure import ncu

if __name__ == "__main__":
    tool = os.environ.get("NCU", "ncu")
    if "--child" not in sys.argv and "-h" not in sys.argv and "--help" not in sys.argv and not shutil.which(tool):
        sys.exit(f"study.profile: {tool} is not on PATH (Nsight Compute comes with the CUDA toolkit; or set NCU)")
    sys.exit(ncu.main())
