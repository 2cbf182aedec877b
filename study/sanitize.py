"""`python -m study.sanitize`: run every CUDA implementation under compute-sanitizer and record the counts."""
import sys

from study.measure import sanitize

if __name__ == "__main__":
    sys.exit(sanitize.main())
