"""`python -m study.sweep`: measure every implementation on this GPU into reports/<gpu>/results.csv, then render the report."""
import sys

from study.measure import sweep
from study.present import report

if __name__ == "__main__":
    sys.exit(sweep.main(render=report.render))
