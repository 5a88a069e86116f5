"""The ``t2s`` command line.

Each sub-command lives in its own module under ``t2s_pipeline/commands/`` and exposes
``register(subparsers)``; that function adds its parser and sets ``func`` to a callable taking the
parsed arguments and returning the exit code. Add a new command by adding its module name to
``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from t2s_pipeline.errors import T2SError

COMMANDS: tuple[str, ...] = (
    "demo",
    "cases",
    "score",
    "query",
    "guardrails",
    "agent",
    "runs",
    "importer",
    "label",
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="t2s", description="Evaluate a text-to-SQL system: score, guard, run, compare."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"t2s_pipeline.commands.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``t2s``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except T2SError as error:
        print(f"t2s: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (e.g. `head`) went away: not an error of ours
        sys.stderr.close()
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
