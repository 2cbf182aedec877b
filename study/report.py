"""`python -m study.report`: render reports/**/index.html from committed results (any machine, no GPU)."""
import sys

from study.present import report

if __name__ == "__main__":
    sys.exit(report.main())
