"""``t2s promote RUN --by WHO --reason WHY``: make a finished run the champion of its case set,
the baseline every later run on those cases is compared with unless its configuration names
another (``compare_to``). The decision is a file under ``decisions/promotions/``."""

from __future__ import annotations

import argparse
from pathlib import Path

from t2s_pipeline.commands.runs import DEFAULT_RESULTS
from t2s_pipeline.run.baseline import promote
from t2s_pipeline.store import ResultsStore


def register(subparsers: argparse._SubParsersAction) -> None:
    command = subparsers.add_parser(
        "promote", help="make a finished run the champion (the baseline) of its case set"
    )
    command.add_argument("run", help="the run id (t2s runs lists them)")
    command.add_argument("--by", required=True, help="who decided")
    command.add_argument("--reason", required=True, help="why this run is the new baseline")
    command.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    command.add_argument("--decisions", type=Path, default=Path("decisions"))
    command.set_defaults(func=_promote)


def _promote(args: argparse.Namespace) -> int:
    promotion, path = promote(
        ResultsStore(args.results), args.run, args.by, args.reason, args.decisions
    )
    print(
        f"{promotion.run_id} is the champion of {promotion.cases} (promoted by "
        f"{promotion.promoted_by}); recorded in {path}. Later runs on these cases are compared "
        "with it unless their configuration sets compare_to."
    )
    return 0
