"""``t2s report RUN [--compare RUN_B] --out report.html``: one run as a self-contained HTML file
(:mod:`t2s_pipeline.report`), compared with ``RUN_B`` or, by default, with the run's baseline
(SPEC 13)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t2s_pipeline.commands.runs import DEFAULT_RESULTS, run_case_set
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.report import ReportInputs, write_report
from t2s_pipeline.run.baseline import baseline_for
from t2s_pipeline.run.compare import compare
from t2s_pipeline.scoring.compare import Comparison
from t2s_pipeline.store import ResultsStore


def register(subparsers: argparse._SubParsersAction) -> None:
    command = subparsers.add_parser(
        "report", help="one run as a self-contained HTML report (charts, comparison, items)"
    )
    command.add_argument("run", help="the run id (t2s runs lists them)")
    command.add_argument(
        "--compare",
        metavar="RUN_B",
        default=None,
        help="compare with this run (default: the run's baseline, if it has one)",
    )
    command.add_argument("--out", type=Path, default=Path("report.html"))
    command.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    command.add_argument("--decisions", type=Path, default=Path("decisions"))
    command.set_defaults(func=_report)


def report_inputs(
    store: ResultsStore, run_id: str, decisions: Path, other: str | None = None
) -> ReportInputs:
    """What the report of ``run_id`` shows: compared with ``other`` when given (``run_id`` is
    run A, as in ``t2s compare``), else with its baseline (the baseline is run A)."""
    known = set(store.run_ids())
    for name in (run_id, other):
        if name is not None and name not in known:
            raise ConfigError(f"no run {name!r} in {store.path}; `t2s runs` lists them")
    case_set, notes = run_case_set(store, run_id)
    comparison: Comparison | None
    if other is not None:
        comparison = compare(store, run_id, other)
        compared_by = f"--compare {other}"
    else:
        baseline = baseline_for(store, run_id, decisions)
        compared_by = f"baseline, {baseline.chosen_by}"
        comparison = None if baseline.run_id is None else compare(store, baseline.run_id, run_id)
    return ReportInputs(store, run_id, comparison, compared_by, case_set, tuple(notes))


def _report(args: argparse.Namespace) -> int:
    inputs = report_inputs(ResultsStore(args.results), args.run, args.decisions, args.compare)
    for note in inputs.notes:
        print(f"note: {note}", file=sys.stderr)
    out = write_report(inputs, args.out)
    against = (
        f", compared with {inputs.comparison.run_a if args.compare is None else args.compare}"
        if inputs.comparison is not None
        else ", not compared (no baseline; --compare RUN_B names one)"
    )
    print(f"wrote the report of {args.run}{against} to {out}; it opens in any browser, offline")
    return 0
