"""The command line's one parser shape: `python -m study.<command>` as the usage line, and the module's whole
docstring (not its first line) as the help text, laid out as written."""
from __future__ import annotations

import argparse


def parser(command: str, doc: str | None) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"python -m study.{command}", description=(doc or "").strip(),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
