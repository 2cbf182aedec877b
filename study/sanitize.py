"""`python -m study.sanitize`: run every CUDA implementation under compute-sanitizer and record the counts."""
import sys

from study.measure import sanitize
from study.measure.environment import missing_tool

if __name__ == "__main__":
    child_or_help = {"--child", "-h", "--help"} & set(sys.argv)
    error = None if child_or_help else missing_tool("COMPUTE_SANITIZER", "compute-sanitizer",
                                                        "it comes with the CUDA toolkit")
    sys.exit(f"study.sanitize: {error}" if error else sanitize.main())
