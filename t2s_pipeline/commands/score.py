"""``t2s score``: every family for one gold/candidate pair on one database (SPEC §15)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    score = subparsers.add_parser("score", help="score one candidate query against a gold query")
    score.add_argument("--db", required=True, help="DuckDB or SQLite file, or postgresql:// URL")
    score.add_argument("--gold", required=True, help="gold SQL text, or @file.sql")
    score.add_argument("--candidate", required=True, help="candidate SQL text, or @file.sql")
    score.add_argument("--dialect", help="sqlglot dialect (default: the engine's)")
    score.add_argument("--allow", help="comma-separated schemas to allow (default: all)")
    score.add_argument("--tau", type=float, default=0.25, help="value-pairing threshold")
    score.add_argument("--float-decimals", type=int, default=6)
    score.add_argument("--json", action="store_true", help="print the JSON of SPEC §15")
    score.set_defaults(func=_score)


def _sql(value: str) -> str:
    """The SQL text itself, or the contents of ``@file.sql``."""
    if not value.startswith("@"):
        return value
    try:
        return Path(value[1:]).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read SQL from {value[1:]}: {error}") from error


def _score(args: argparse.Namespace) -> int:
    from t2s_pipeline.scoring.pair import score_pair

    result = score_pair(
        args.db,
        _sql(args.gold),
        _sql(args.candidate),
        dialect=args.dialect,
        allowed_schemas=None if not args.allow else [s.strip() for s in args.allow.split(",")],
        settings=ScorerSettings(tau=args.tau, float_decimals=args.float_decimals),
    )
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
        return 0
    print(render(result.to_json()))
    return 0


def render(data: dict[str, object]) -> str:
    """A readable report: pairs, key, matched cells, ceilings, component sets."""
    output = data["output"]
    assert isinstance(output, dict)
    lines = [f"exact match: {data['exact_match']}"]
    for label in ("gold", "candidate"):
        side = data[label]
        assert isinstance(side, dict)
        reason = f" ({side['reason']})" if side.get("reason") else ""
        lines.append(f"{label}: {side['status']}{reason}, {side['rows']} row(s)")
    for family in ("columns", "cells"):
        pr = output[family]
        lines.append(f"{family:<8} precision {_f(pr['precision'])}  recall {_f(pr['recall'])}")
    for pair in output["pairs"]:
        lines.append(
            f"  pair candidate #{pair['candidate']} ~ reference #{pair['reference']} by "
            f"{pair['by']}: P {pair['precision']:.3f} R {pair['recall']:.3f}"
        )
    lines.append(
        f"row key: reference columns {output['key']} (selectivity {_f(output['selectivity'])})"
    )
    component = data["component"]
    assert isinstance(component, dict)
    for name, pr in component.items():
        lines.append(
            f"component {name:<13} precision {_f(pr['precision'])}  recall {_f(pr['recall'])}"
        )
    retrieval = data["retrieval"]
    assert isinstance(retrieval, dict)
    lines.append(f"required tables: {', '.join(retrieval['required'])}")
    lines.append(f"ceilings: {', '.join(data['ceilings']) or 'none'}")  # type: ignore[arg-type]
    lines.append(f"scorer fault: {data['scorer_fault']}")
    return "\n".join(lines)


def _f(value: object) -> str:
    return "undefined" if value is None else f"{float(value):.3f}"  # type: ignore[arg-type]
