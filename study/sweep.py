"""`python -m study.sweep`: measure every implementation on this GPU into reports/<gpu>/results.csv, then render the report."""
import sys

from study._render import render
from study.measure import sweep

if __name__ == "__main__":
    sys.exit(sweep.main(render=render))
