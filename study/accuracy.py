"""`python -m study.accuracy`: the accuracy study (error against float64 over distributions and K), then render the report."""
import sys

from study._render import render
from study.measure import accuracy

if __name__ == "__main__":
    sys.exit(accuracy.main(render=render))
