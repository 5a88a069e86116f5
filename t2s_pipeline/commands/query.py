"""``t2s query``: run one statement through the guarded executor and print its outcome.

Exit codes: 0 for rows, 1 when the statement ran and failed, 2 for bad input or an unreachable
database (via ExecutionError), 3 when a guard layer refused the statement.
"""

from __future__ import annotations

import argparse
import json

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.execution import LAYERS, Guard, QueryOutcome, open_executor
from t2s_pipeline.execution.registry import engine_for

DEFAULT_ROW_LIMIT = 1000
DEFAULT_TIMEOUT_S = 30.0
REFUSED_EXIT = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    query = subparsers.add_parser("query", help="run one statement through the guarded executor")
    query.add_argument("--db", required=True, help="DuckDB or SQLite file, or postgresql:// URL")
    query.add_argument("--sql", required=True, help="the statement to run")
    query.add_argument(
        "--allow",
        type=_names,
        help="allowlisted schemas, comma-separated (default: the demo's sales,finance,inventory; "
        "main for SQLite)",
    )
    query.add_argument(
        "--layers", type=_layers, default=LAYERS, help="filter,database (default: both)"
    )
    query.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S)
    query.add_argument(
        "--row-limit", type=int, default=DEFAULT_ROW_LIMIT, help="0 for no serving LIMIT"
    )
    query.add_argument("--dialect", help="dialect of the filter (default: the engine's)")
    query.add_argument(
        "--allow-tables", type=_names, help="SQLite: the only tables a statement may read"
    )
    query.add_argument("--json", action="store_true", help="print the outcome as JSON")
    query.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the statement and print the outcome.

    Exit code 0 for rows, 1 when the statement ran and failed, 2 for bad input, 3 on a refusal
    (a script must be able to tell "refused" from "served").
    """
    if not args.sql.strip():
        raise ConfigError("--sql is empty: give the statement to run")
    spec = engine_for(args.db)
    engine = spec.name
    default_allow = (spec.only_schema,) if spec.only_schema else ALLOWED_SCHEMAS
    guard = Guard(
        allowed_schemas=args.allow or default_allow,
        dialect=args.dialect or engine,
        layers=args.layers,
        timeout_s=args.timeout_s,
        row_limit=args.row_limit or None,
        allowed_tables=args.allow_tables,
    )
    with open_executor(args.db, guard) as executor:
        outcome = executor.run(args.sql)
    print(json.dumps(outcome.to_json()) if args.json else render(outcome))
    if outcome.refused:
        return REFUSED_EXIT
    return 1 if outcome.error is not None else 0


def render(outcome: QueryOutcome) -> str:
    """A readable account: the refusal or error, or the rows as an aligned table."""
    if outcome.refused:
        return f"refused by the {outcome.layer} layer: {outcome.reason}"
    if outcome.error is not None:
        return f"error: {outcome.error}"
    payload = outcome.to_json()
    table = [list(outcome.columns)] + [[_cell(v) for v in row] for row in payload["rows"]]
    widths = [max(len(row[i]) for row in table) for i in range(len(outcome.columns))]
    lines = ["  ".join(text.ljust(w) for text, w in zip(row, widths, strict=True)) for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    more = " (truncated)" if outcome.truncated else ""
    lines.append(f"{len(outcome.rows)} row(s){more} in {outcome.seconds:.3f} s")
    return "\n".join(lines)


def _cell(value: object) -> str:
    return "NULL" if value is None else str(value)


def _names(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise argparse.ArgumentTypeError("give at least one schema name")
    return names


def _layers(text: str) -> frozenset[str]:
    layers = frozenset(_names(text))
    unknown = layers - LAYERS
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown layer(s) {sorted(unknown)}: use filter,database")
    return layers
