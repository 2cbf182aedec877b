"""`python -m study.evidence`: check, list or record the GPU evidence each implementation's key needs."""
import sys

from study.measure import evidence

if __name__ == "__main__":
    sys.exit(evidence.main())
