"""`python -m study.profile`: Nsight Compute counters of every implementation into profile.csv (needs ncu, as root)."""
import sys

from study.measure import ncu

if __name__ == "__main__":
    sys.exit(ncu.main())
