"""The compare stage: a run against its baseline (:mod:`t2s_pipeline.run.baseline`), paired
deltas per family with intervals, the items that regressed and improved, and the regression
verdict its check reads. Written per run, so every run (a sensor's included) has its own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from t2s_pipeline.report import ReportInputs, report_path, write_report
from t2s_pipeline.run.baseline import Baseline, baseline_for
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.summary import joined_items
from t2s_pipeline.scoring.compare import Comparison, compare_runs, load_decision, unaccepted
from t2s_pipeline.store import ResultsStore


@dataclass(frozen=True)
class RegressionVerdict:
    baseline: Baseline
    n_shared: int
    n_regressed: int
    unaccepted: list[str]


def compare(store: ResultsStore, run_a: str, run_b: str) -> Comparison:
    return compare_runs(run_a, joined_items(store, run_a), run_b, joined_items(store, run_b))


def regression_verdict(store: ResultsStore, run_id: str, decisions: Path) -> RegressionVerdict:
    """The run's regressions against its baseline, and those no recorded decision accepts
    (none when the run has no baseline)."""
    baseline = baseline_for(store, run_id, decisions)
    if baseline.run_id is None:
        return RegressionVerdict(baseline, 0, 0, [])
    comparison = compare(store, baseline.run_id, run_id)
    decision = load_decision(decisions, run_id)
    return RegressionVerdict(
        baseline,
        comparison.n_shared,
        len(comparison.regressed_items()),
        unaccepted(comparison, decision),
    )


def materialise(run: RunContext) -> StageResult:
    """This run against its baseline: ``run_comparisons`` (a delta per family and metric),
    ``regressions`` and ``improvements`` (per item), all empty when there is no baseline; and
    the run's HTML report (:func:`t2s_pipeline.report.report_path`)."""
    store, run_id = run.store, run.run_id
    baseline = baseline_for(store, run_id, run.decisions)
    if baseline.run_id is None:
        comparison = Comparison("", run_id, 0, (), (), (), (), ())
    else:
        comparison = compare(store, baseline.run_id, run_id)
    deltas = comparison.to_frame()
    n = store.replace_run("run_comparisons", run_id, deltas)
    n_regressions = store.replace_run("regressions", run_id, comparison.regressions_frame())
    n_improvements = store.replace_run("improvements", run_id, comparison.improvements_frame())
    run.info(f"baseline: {baseline.run_id or 'none'} ({baseline.chosen_by})")
    inputs = ReportInputs(
        store,
        run_id,
        comparison if baseline.run_id else None,
        f"baseline, {baseline.chosen_by}",
        run.case_set,
    )
    report = write_report(inputs, report_path(store, run_id))
    run.info(f"report: {report}")
    metadata = {
        "dagster/row_count": n,
        "baseline": baseline.run_id or "none",
        "baseline_chosen_by": baseline.chosen_by,
        "n_shared": comparison.n_shared,
        "regressed_items": len(comparison.regressed_items()),
        "improved_items": len(comparison.improved_items()),
        "regressions": n_regressions,
        "improvements": n_improvements,
        "report": str(report.absolute()),
    }
    return StageResult({"run_comparisons": metadata}, value=comparison)
