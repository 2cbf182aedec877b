"""`python -m study.sanitize`: run every CUDA implementation under compute-sanitizer and record the counts."""
import os
import shutil
import sys

from study.measure import sanitize

if __name__ == "__main__":
    tool = os.environ.get("COMPUTE_SANITIZER", "compute-sanitizer")
    if "--child" not in sys.argv and "-h" not in sys.argv and "--help" not in sys.argv and not shutil.which(tool):
        sys.exit(f"study.sanitize: {tool} is not on PATH (it comes with the CUDA toolkit; or set COMPUTE_SANITIZER)")
    sys.exit(sanitize.main())
