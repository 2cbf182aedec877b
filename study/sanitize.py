"""`python -m study.sanitize`: run every CUDA implementation under compute-sanitizer and record the counts."""
import sys

from study.measure import sanitize
from study.measure.environment import missing_tool

if __name__ == "__main__":
    # study/measure/sanitize.py's text is part of every sanitizer record's key (study/measure/evidence.py), so its
    # parser is dressed here: the usage line names this command, and the help is its whole docstring, re-wrapped.
    sys.argv[0] = "python -m study.sanitize"
    sanitize.__doc__ = " ".join(sanitize.__doc__.split())
    child_or_help = {"--child", "-h", "--help"} & set(sys.argv)
    error = None if child_or_help else missing_tool("COMPUTE_SANITIZER", "compute-sanitizer",
                                                        "it comes with the CUDA toolkit")
    sys.exit(f"study.sanitize: {error}" if error else sanitize.main())
