"""``t2s cases``: validate a gold case set, and freeze expected results on the pinned snapshot."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t2s_pipeline.casecheck import CheckReport, check_case_set, freeze_case_set
from t2s_pipeline.cases import DIFFICULTIES, load_cases


def register(subparsers: argparse._SubParsersAction) -> None:
    cases = subparsers.add_parser("cases", help="validate and freeze gold cases")
    sub = cases.add_subparsers(dest="cases_command", required=True)
    check = sub.add_parser("check", help="validate every case file and run every gold query")
    check.add_argument("path", nargs="?", type=Path, default=Path("cases/erp"))
    check.set_defaults(func=_check)
    freeze = sub.add_parser("freeze", help="write each gold result as expected_result")
    freeze.add_argument("path", nargs="?", type=Path, default=Path("cases/erp"))
    freeze.set_defaults(func=_freeze)


def print_check_report(report: CheckReport) -> None:
    """Counts per stratum, twins, then every problem; problems go to stderr."""
    case_set = report.case_set
    counts = case_set.counts_by_difficulty()
    print(f"domain {case_set.domain.name}: {len(case_set.cases)} valid case(s)")
    # The six demo strata are listed even when empty; an imported benchmark shows its own bands.
    standard = DIFFICULTIES if set(counts) & set(DIFFICULTIES) else ()
    for band in (*standard, *sorted(set(counts) - set(DIFFICULTIES))):
        print(f"  {band:<20} {counts.get(band, 0):>4}")
    phrasings = sum(len(c.questions) for c in case_set.cases)
    print(f"  {'items (phrasings)':<20} {phrasings:>4}")
    print(f"twin groups: {len(report.twins)}")
    for group in report.twins:
        print(f"  {' = '.join(group)}")
    if report.snapshot_mismatch:
        print(f"snapshot: {report.snapshot_mismatch}", file=sys.stderr)
    for problem in report.problems:
        print(f"problem: {problem}", file=sys.stderr)
    print("ok" if report.ok else f"{len(report.problems)} problem(s)")


def _check(args: argparse.Namespace) -> int:
    report = check_case_set(load_cases(args.path))
    print_check_report(report)
    return 0 if report.ok else 1


def _freeze(args: argparse.Namespace) -> int:
    case_set = load_cases(args.path)
    for problem in case_set.problems:
        print(f"problem: {problem}", file=sys.stderr)
    problems = freeze_case_set(case_set, progress=print)
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 0 if not (problems or case_set.problems) else 1
