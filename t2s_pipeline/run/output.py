"""The output stage: output columns and cells (SPEC 6) and exact match of every item, with
every ceiling (SPEC 10) that bounds what its figures can say."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence

import pandas as pd

from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.execution.records import from_frame, packed_rows
from t2s_pipeline.run.analyse import analyses_from_frame
from t2s_pipeline.run.ask import stored_outcomes
from t2s_pipeline.run.context import Metadata, RunContext, StageResult
from t2s_pipeline.run.rows import family_metadata, write
from t2s_pipeline.scoring.item import (
    ItemAnalysis,
    finish_item_output,
    item_ceilings,
    output_job,
    output_row,
)
from t2s_pipeline.scoring.output import score_output_job
from t2s_pipeline.scoring.summary import (
    count_ceilings,
)
from t2s_pipeline.spread import spread
from t2s_pipeline.sut.client import ItemOutcome

SPREAD_FROM = 3000
"""Items from which the output scoring is shared with a second interpreter (about 0.8 ms an
item; the second one takes about 0.7 s to start and import the scoring). At 1,000 items
sharing gained nothing; at 10,000 the scoring took 5.8-6.6 s instead of about 9 s."""
STARTUP_JOBS = 300
"""How many more items the caller scores than the second interpreter: measured at 10,000
items, the split nearest even was the fastest (the caller, holding the run's tables, scores
an item more slowly than the fresh interpreter)."""


def score_outputs(
    settings: ScorerSettings,
    analyses: Mapping[str, ItemAnalysis],
    gold: pd.DataFrame,
    candidate_results: pd.DataFrame,
    responses: pd.DataFrame,
    outcomes: Mapping[str, ItemOutcome],
    probed: bool,
) -> list[dict[str, object]]:
    """Output family and exact match of every item, with its ceilings.

    ``outcomes``: each item's answer as stored (:func:`~t2s_pipeline.run.ask.stored_outcomes`),
    ``responses`` the stored table they were read from (whether each item was isolated).
    ``probed``: the SUT can be probed (HTTP, built-in); an item whose probe is missing or
    failed is then ``no_probe``. False: not a probed SUT (replay).
    """

    # Rows stay packed, read where each item is scored (sent to another process packed).
    gold_by_case, gold_rows = from_frame(gold, rows=False), packed_rows(gold)
    candidates = from_frame(candidate_results, rows=False)
    candidate_rows = packed_rows(candidate_results)
    drift = dict(zip(gold["key"], gold["drift"], strict=True)) if not gold.empty else {}
    isolated = dict(zip(responses["item_id"], responses["isolated"], strict=True))
    jobs = [
        output_job(
            analysis,
            gold_by_case.get(analysis.case_id),
            candidates.get(item_id),
            settings,
            (gold_rows.get(analysis.case_id), candidate_rows.get(item_id)),
        )
        for item_id, analysis in analyses.items()
    ]
    scores = spread(score_output_job, jobs, spread_from=SPREAD_FROM, startup_jobs=STARTUP_JOBS)
    rows = []
    for (item_id, analysis), scored in zip(analyses.items(), scores, strict=True):
        reference = gold_by_case.get(analysis.case_id)
        candidate = candidates.get(item_id)
        score = finish_item_output(scored, candidate)
        outcome = outcomes.get(item_id)
        found = item_ceilings(
            outcome,
            reference,
            candidate,
            score,
            bool(isolated.get(item_id, True)),
            bool(drift.get(analysis.case_id, False)),
        )
        if probed and (outcome is None or outcome.probe is None):
            found.append("no_probe")  # missing (no retrieve endpoint) or failed
        row = output_row(analysis, score, found)
        row["candidate_status"] = None if candidate is None else candidate.status
        row["gold_status"] = None if reference is None else reference.status
        rows.append(row)
    return rows


def ceiling_counts(rows: Sequence[Mapping[str, object]]) -> dict[str, int]:
    """Items per ceiling, every ceiling of §10 listed."""
    counter: Counter[str] = Counter()
    for row in rows:
        counter.update(json.loads(str(row["ceilings_json"])))
    return count_ceilings(counter)


def materialise(run: RunContext) -> StageResult:
    """Output family (columns and cells) and exact match, with every ceiling per item; the
    value is the rows, for the asset's table of the items behind each ceiling."""
    store, run_id = run.store, run.run_id
    probed = run.spec.config.sut.kind != "replay"
    rows = score_outputs(
        run.spec.config.scorer,
        analyses_from_frame(store.read("sql_analyses", run_id)),
        store.read("gold_results", run_id),
        store.read("candidate_results", run_id),
        store.read("sut_responses", run_id),
        stored_outcomes(store, run_id, probes=probed),
        probed,
    )
    write(run, "output_scores", rows)
    metadata: Metadata = dict(family_metadata(rows, ["columns_recall", "cells_recall"]))
    metadata |= {f"ceiling/{k}": v for k, v in ceiling_counts(rows).items()}
    return StageResult({"output_scores": metadata}, value=rows)
