"""The diagnose stage: the deterministic diagnosis (SPEC 11) of every item, from the stored
output, component and retrieval rows, and from what the data says about a failing item's extra
joins and differing conditions (``t2s_pipeline.scoring.facts``, asked here through the
evaluation guard)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from t2s_pipeline.execution import open_executor
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.execute import guard
from t2s_pipeline.run.rows import write
from t2s_pipeline.run.test_suite import snapshot_only_finding
from t2s_pipeline.scoring.facts import DataFacts, Probe, facts_from, probes
from t2s_pipeline.scoring.item import NO_FACTS, diagnosis_row, evidence, json_object
from t2s_pipeline.store import ResultsStore


def diagnosis_rows(
    store: ResultsStore, run_id: str, facts: Mapping[str, DataFacts] | None = None
) -> list[dict[str, object]]:
    """Diagnose every item from its stored family rows (and what the data says, ``facts``)."""
    # Plain dicts per item: a row looked up by label through pandas cost about 0.1 ms each.
    output = _by_item(store.read("output_scores", run_id))
    components = _by_item(store.read("component_scores", run_id))
    retrieval = _by_item(store.read("retrieval_scores", run_id))
    suite = _by_item(store.read("test_suite_matches", run_id))
    rows = []
    for item_id, out in output.items():
        found = evidence(
            out,
            components.get(item_id, {}),
            retrieval.get(item_id, {}),
            candidate_failed=out["candidate_status"] != "ok",
            gold_failed=out["gold_status"] != "ok",
            facts=(facts or {}).get(str(item_id), NO_FACTS),
        )
        if item_id in suite:
            found = replace(found, snapshot_only=snapshot_only_finding(suite[item_id]))
        rows.append(diagnosis_row(str(item_id), str(out["case_id"]), found))
    return rows


def _by_item(frame: pd.DataFrame) -> dict[object, dict[str, object]]:
    """Each row as a dict without its ``item_id``, keyed by it (as ``set_index("item_id")``
    then ``.loc[item].to_dict()`` gives it: values as Python's own types)."""
    records = frame.to_dict("records")
    return {record.pop("item_id"): record for record in records}


def materialise(run: RunContext) -> StageResult:
    """Deterministic diagnosis (SPEC 11) of every item."""
    facts = data_facts(run)
    rows = diagnosis_rows(run.store, run.run_id, facts)
    write(run, "diagnoses", rows)
    counts = Counter(str(r["category"]) for r in rows)
    metadata: dict[str, object] = {"dagster/row_count": len(rows)}
    metadata |= {f"diagnosis/{k}": v for k, v in counts.most_common()}
    metadata["diagnosis/data_probes"] = sum(1 for f in facts.values() if f != NO_FACTS)
    return StageResult({"diagnoses": metadata})


def data_facts(run: RunContext) -> dict[str, DataFacts]:
    """What the data says about each failing item's extra joins and differing conditions
    (``t2s_pipeline.scoring.facts``): every probe through the evaluation guard, each distinct
    probe once; a probe that fails says nothing."""
    output = run.store.read("output_scores", run.run_id)
    matches = dict(zip(output["item_id"], output["exact_match"], strict=True))
    components = run.store.read("component_scores", run.run_id)
    cases = run.case_set.by_id()
    wanted: dict[str, tuple[str, list[Probe]]] = {}
    for row in components.itertuples(index=False):
        item = str(row.item_id)
        matched = matches.get(item)
        if matched is None or pd.isna(matched) or bool(matched):
            continue
        gold, candidate = json_object(row.gold_sets_json), json_object(row.candidate_sets_json)
        found = probes(gold, candidate) if gold and candidate else []  # type: ignore[arg-type]
        if found and str(row.case_id) in cases:
            target = run.case_set.domain.database_for(cases[str(row.case_id)])
            wanted[item] = (target, found)
    answers = _answers(run, {(t, p) for t, found in wanted.values() for p in found})
    return {
        item: facts_from({p: answers[(t, p)] for p in found if (t, p) in answers})
        for item, (t, found) in wanted.items()
    }


def _answers(run: RunContext, asked: set[tuple[str, Probe]]) -> dict[tuple[str, Probe], bool]:
    answers: dict[tuple[str, Probe], bool] = {}
    by_target: dict[str, list[Probe]] = {}
    for target, probe in sorted(asked, key=lambda a: (a[0], a[1].sql)):
        by_target.setdefault(target, []).append(probe)
    for target, group in by_target.items():
        with open_executor(target, guard(run), logging.DEBUG) as executor:
            outcomes = executor.run_all(p.sql for p in group)
            for probe, outcome in zip(group, outcomes, strict=True):
                if outcome.refused or outcome.error is not None or outcome.timed_out:
                    continue
                answers[(target, probe)] = probe.holds(outcome.rows[0] if outcome.rows else ())
    return answers
