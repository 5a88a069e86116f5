"""``t2s store``: the results store itself (``migrate`` an earlier single-file store)."""

from __future__ import annotations

import argparse
from pathlib import Path

from t2s_pipeline.commands.runs import DEFAULT_RESULTS
from t2s_pipeline.store import ResultsStore, migrate_file


def register(subparsers: argparse._SubParsersAction) -> None:
    store = subparsers.add_parser("store", help="the results store (migrate an old one)")
    actions = store.add_subparsers(dest="action", required=True)
    migrate = actions.add_parser(
        "migrate", help="copy a single-file results store (.t2s/results.duckdb) into the folder"
    )
    migrate.add_argument("--from", dest="source", type=Path, default=Path(".t2s/results.duckdb"))
    migrate.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    migrate.set_defaults(func=_migrate)


def _migrate(args: argparse.Namespace) -> int:
    done = migrate_file(args.source, ResultsStore(args.results))
    for name, n in sorted(done.tables.items()):
        print(f"  {name}: {n} row(s)")
    for name, columns in sorted(done.dropped.items()):
        print(f"  {name}: not copied: {', '.join(columns)}")
    print(
        f"migrated {done.runs} run(s) from {args.source} into {args.results}; the old file is "
        "unchanged (delete it when the new store reads right: t2s runs)"
    )
    return 0
