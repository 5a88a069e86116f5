"""The stages of one run, in the order they execute."""

from __future__ import annotations

from t2s_pipeline.run import (
    analyse,
    ask,
    compare,
    components,
    diagnose,
    exact,
    execute,
    items,
    judge,
    output,
    retrieval,
    summary,
    test_suite,
)
from t2s_pipeline.run.context import Stage

STAGES: tuple[Stage, ...] = (
    Stage("items", ("items",), items.materialise),
    Stage("ask", ("sut_responses", "retrieval_probes"), ask.materialise),
    Stage("gold", ("gold_results",), execute.materialise_gold),
    Stage("candidates", ("candidate_results",), execute.materialise_candidates),
    Stage("analyse", ("sql_analyses",), analyse.materialise),
    Stage("retrieval", ("retrieval_scores",), retrieval.materialise),
    Stage("components", ("component_scores",), components.materialise),
    Stage("output", ("output_scores",), output.materialise),
    Stage("exact", ("exact_matches",), exact.materialise),
    Stage("suite", ("test_suites",), test_suite.materialise_suite),
    Stage("test_suite", ("test_suite_matches",), test_suite.materialise),
    Stage("diagnose", ("diagnoses",), diagnose.materialise),
    Stage("judge", ("judge_diagnoses",), judge.materialise_judge),
    Stage("calibrate", ("judge_calibration",), judge.materialise_calibration),
    Stage("summary", ("runs",), summary.materialise),
    Stage("compare", ("run_comparisons", "regressions", "improvements"), compare.materialise),
)
STAGE_BY_NAME = {s.name: s for s in STAGES}
