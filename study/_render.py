"""The commands' report step: render where this machine can draw it (a GPU image may lack plotly)."""
import sys


def render(report_dir):
    try:
        from study.present import report
    except ImportError as e:
        print(f"report not rendered here ({e}); render it on any machine: python -m study.report --dir {report_dir}",
              file=sys.stderr)
        return report_dir
    return report.render(report_dir)
