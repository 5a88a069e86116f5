"""The ``t2s`` command line.

Each sub-command lives in its own module under ``t2s_pipeline/commands/`` and exposes
``register(subparsers)``; that function adds its parser and sets ``func`` to a callable taking the
parsed arguments and returning the exit code. Add a new command by adding its module name to
``COMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

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
    "init",
    "store",
    "promote",
    "report",
)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every registered sub-command."""
    parser = argparse.ArgumentParser(
        prog="t2s", description="Evaluate a text-to-SQL system: score, guard, run, compare."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"t2s_pipeline.commands.{name}").register(subparsers)
    _mark_typed_paths(parser)
    return parser


class _TypedPath(type(Path())):  # type: ignore[misc]
    """A path the user typed (relative to where they typed it), unlike a default (relative to
    the project)."""


def _mark_typed_paths(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if action.type is Path:
            action.type = _TypedPath
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _mark_typed_paths(child)


def enter_project(args: argparse.Namespace) -> None:
    """Work from the project's folder (:mod:`t2s_pipeline.project`): typed paths are made
    absolute first (then relative to the project when inside it), defaults stay relative."""
    from t2s_pipeline.project import find_root

    config = getattr(args, "config", None)
    root = find_root(Path(config) if isinstance(config, Path) else None)
    here = Path.cwd()
    if root is None or root == here.resolve():
        return
    for name, value in vars(args).items():
        if isinstance(value, _TypedPath):
            setattr(args, name, _rebased(value, root))
        elif isinstance(value, list) and any(isinstance(v, _TypedPath) for v in value):
            setattr(args, name, [_rebased(v, root) if isinstance(v, Path) else v for v in value])
    os.chdir(root)


def _rebased(path: Path, root: Path) -> Path:
    absolute = path.expanduser().absolute()
    try:
        return absolute.resolve().relative_to(root)
    except ValueError:
        return absolute


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``t2s``; returns the process exit code."""
    args = build_parser().parse_args(argv)
    here = os.getcwd()
    try:
        if getattr(args, "in_project", True):
            enter_project(args)
        code: int = args.func(args)
    except T2SError as error:
        print(f"t2s: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (e.g. `head`) went away: not an error of ours
        sys.stderr.close()
        return 0
    finally:
        os.chdir(here)  # a caller in this process (a test, a script) keeps its folder
    return code


if __name__ == "__main__":
    sys.exit(main())
