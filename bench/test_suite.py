"""Test-suite accuracy benchmark (issue 22): what a distilled suite costs to build and to use.

Builds the suite of the demo case set on a fresh copy of the demo warehouse (printing the build
time per case, the suite sizes and the mutants the snapshot misses and the suite catches, by
class), then evaluates the baseline configuration twice without Dagster, with test suites off
and on, and prints the run-time ratio (target: at most 3x) and the ex_ts stage's cost per item
against EX's own (candidate execution, output and exact stages). It ends with the share of
EX-true items that are ex_ts-false.

    .venv/bin/python bench/test_suite.py [--random-neighbours 8] [--phrasings all]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from t2s_pipeline.cases import load_cases
from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.execution.guard import Guard
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.testsuite.suite import SuiteSettings, build_suite

REPO = Path(__file__).resolve().parents[1]
EX_STAGES = ("candidates", "output", "exact")


def _project(root: Path) -> Path:
    """The demo cases over a fresh warehouse in ``root``; returns the cases folder."""
    warehouse = build_warehouse(root / "warehouse.duckdb").path
    cases = root / "cases"
    cases.mkdir()
    for source in (REPO / "cases/erp").glob("*.yaml"):
        (cases / source.name).write_text(source.read_text())
    domain = yaml.safe_load((cases / "domain.yaml").read_text())
    domain["database"] = str(warehouse)
    (cases / "domain.yaml").write_text(yaml.safe_dump(domain, sort_keys=False))
    return cases


def _config(root: Path, cases: Path, name: str, enabled: bool, args: argparse.Namespace) -> Path:
    data = yaml.safe_load((REPO / "configs/baseline.yaml").read_text())
    data.update(name=name, cases=str(cases), phrasings=args.phrasings)
    data.pop("compare_to", None)
    data["test_suite"] = {"enabled": enabled, "random_neighbours": args.random_neighbours}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def bench_build(cases: Path, args: argparse.Namespace) -> None:
    case_set = load_cases(cases)
    domain = case_set.domain
    guard = Guard.for_evaluation(domain.allowed_schemas, domain.dialect)
    started = time.perf_counter()
    suite = build_suite(
        case_set, guard, SuiteSettings(random_neighbours=args.random_neighbours), lambda _: None
    )
    seconds = time.perf_counter() - started
    parts = list(suite.cases.values())
    missed, caught = Counter[str](), Counter[str]()
    for part in parts:
        missed.update(part.missed_by_kind)
        caught.update(part.caught_by_kind)
    print(
        f"suite {suite.key}: {len(parts)} cases; pool: {args.random_neighbours} random, 3 boundary "
        "(below, at, above), 1 tie when a gold query has a top-k cut"
    )
    print(f"build: {seconds:.1f} s, {seconds / len(parts) * 1000:.0f} ms per case")
    sizes = Counter(len(p.neighbours) for p in parts)
    print("neighbours per case: " + ", ".join(f"{k}: {v}" for k, v in sorted(sizes.items())))
    print(f"neighbours kept: {len(suite.neighbours)} ({', '.join(suite.neighbours)})")
    total = sum(p.mutants for p in parts)
    print(
        f"mutants: {total}; the snapshot alone misses {sum(missed.values())}; "
        f"the suite catches {sum(caught.values())} of those"
    )
    print("by class (missed by the snapshot -> caught by the suite):")
    for kind in sorted(missed):
        print(f"  {kind:18} {missed[kind]:4} -> {caught[kind]:4}")


def bench_runs(root: Path, cases: Path, args: argparse.Namespace) -> None:
    timings = {}
    runs = {}
    # The first run warms what every later run reuses (the guard cache, analyses of the gold
    # SQL); the ratio compares the two warm runs after it.
    for name, enabled in (("warm-up", False), ("suite-off", False), ("suite-on", True)):
        config = _config(root, cases, name, enabled, args)
        started = time.perf_counter()
        done = run_config_plainly(
            config, root / "results", root / "registry", say=lambda _: None,
            decisions=root / "decisions",
        )  # fmt: skip
        timings[name] = time.perf_counter() - started
        runs[name] = done
    on = runs["suite-on"]
    n = on.summary.n_items
    ex_cost = sum(on.seconds.get(s, 0.0) for s in EX_STAGES)
    ts_cost = on.seconds.get("test_suite", 0.0) + on.seconds.get("suite", 0.0)
    print(
        f"run without test suites: {timings['suite-off']:.1f} s; with: {timings['suite-on']:.1f} s"
    )
    print(f"with / without: {timings['suite-on'] / timings['suite-off']:.2f} (target <= 3)")
    print(
        f"ex_ts per item: {ts_cost / n * 1000:.1f} ms; EX's own per item (candidates, output, "
        f"exact): {ex_cost / n * 1000:.1f} ms; ratio {ts_cost / ex_cost:.2f}"
    )
    matches = ResultsStore(root / "results").read("test_suite_matches", on.spec.run_id)
    ex_true = matches[matches["exact_match"].fillna(False).astype(bool)]
    only = ex_true[~ex_true["ex_ts"].fillna(False).astype(bool)]
    ex, ex_ts = on.summary.families["exact"]["ex"], on.summary.families["exact"]["ex_ts"]
    print(f"EX {ex}; ex_ts {ex_ts}")
    print(
        f"EX-true items that are ex_ts-false: {len(only)} of {len(ex_true)} "
        f"({len(only) / max(len(ex_true), 1):.1%})"
    )
    for row in only.itertuples(index=False):
        print(f"  {row.item_id}: told apart by {row.told_apart_by}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random-neighbours", type=int, default=8)
    parser.add_argument("--phrasings", choices=("all", "main"), default="all")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        cases = _project(root)
        bench_build(cases, args)
        bench_runs(root, cases, args)


if __name__ == "__main__":
    main()
