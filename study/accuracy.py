"""`python -m study.accuracy`: the accuracy study (error against float64 over distributions and K), the fp8 stage's
error against K (study/measure/fp8_accuracy.py), then render the report."""
import sys

from study._render import render
from study.measure import accuracy, fp8_accuracy

if __name__ == "__main__":
    sys.exit(accuracy.main(render=render, parts=(fp8_accuracy,)))
