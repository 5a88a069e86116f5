"""Scoring one item from its analysed SQL and its two results: the pure per-item building
blocks every family shares (output score, ceilings, component and diagnosis evidence, gold
drift), used by the run's stages and by ``t2s score`` alike. No store, no Dagster."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from t2s_pipeline.cases import Case
from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.execution.records import ExecutedResult
from t2s_pipeline.results import Column, PackedResultSet, ResultSet
from t2s_pipeline.scoring.components import ComponentSets, score_components
from t2s_pipeline.scoring.diagnosis import ItemEvidence, diagnose
from t2s_pipeline.scoring.facts import DataFacts
from t2s_pipeline.scoring.findings import Finding, component_findings, retrieval_findings
from t2s_pipeline.scoring.ordering import OrderKeys, RowOrder
from t2s_pipeline.scoring.output import (
    OutputJob,
    OutputScore,
    OutputSettings,
    results_match,
    score_output_job,
)
from t2s_pipeline.scoring.summary import (
    COMPONENT_SETS,
)
from t2s_pipeline.sql.analysis import OutputColumn
from t2s_pipeline.sut.client import ItemOutcome

NO_FACTS = DataFacts()
CUT_TIE = "candidate_cut_tie"
CUT_TIE_FINDING = (
    "the LIMIT cut falls inside a tie on the ORDER BY keys: which tied rows are kept is luck "
    "(add a tie-break)"
)


@dataclass(frozen=True)
class ItemAnalysis:
    """Both queries of one item, analysed once for every family that needs them."""

    item_id: str
    case_id: str
    required_tables: tuple[str, ...]
    gold_columns: tuple[OutputColumn, ...]
    gold_components: ComponentSets
    gold_ordered: bool
    candidate_columns: tuple[OutputColumn, ...] | None
    candidate_components: ComponentSets | None
    candidate_error: str | None
    gold_order_keys: OrderKeys = None
    candidate_order_keys: OrderKeys = None
    """What each outermost ORDER BY sorts by (``t2s_pipeline.scoring.ordering``); None for
    the candidate when it has no analysis."""
    gold_clauses: frozenset[str] | None = None
    """The gold's top-level LIMIT, OFFSET and ORDER BY (``sql.clean.top_clauses``), so a later
    candidate of the same gold is cleaned without parsing the gold again; None: not known."""


def result_set(
    result: ExecutedResult | None, columns: Sequence[OutputColumn] | None
) -> ResultSet | None:
    """The scorer's view of an executed result: None when it failed; origins when they line up."""
    if result is None or not result.ok:
        return None
    return ResultSet(result_columns(result, columns), result.rows)


def result_columns(
    result: ExecutedResult, columns: Sequence[OutputColumn] | None
) -> tuple[Column, ...]:
    """A result's columns with each one's origin from the query's analysis, when the two line
    up (as many analysed columns as returned ones)."""
    lineage = list(columns) if columns is not None and len(columns) == len(result.columns) else None
    return tuple(
        Column(
            name=name,
            origin=None if lineage is None else lineage[i].origin,
            expression=None if lineage is None else lineage[i].expression,
        )
        for i, name in enumerate(result.columns)
    )


def _side(
    result: ExecutedResult | None, columns: Sequence[OutputColumn] | None, packed: bytes | None
) -> ResultSet | PackedResultSet | None:
    if packed is None or result is None or not result.ok:
        return result_set(result, columns)
    return PackedResultSet(result_columns(result, columns), packed)


def output_settings(settings: ScorerSettings) -> OutputSettings:
    return OutputSettings(
        tau=settings.tau,
        float_decimals=settings.float_decimals,
        shelf_bound=settings.shelf_bound,
        ordered_compare=settings.ordered_compare,
        permutation_bound=settings.permutation_bound,
    )


def score_item_output(
    analysis: ItemAnalysis,
    gold: ExecutedResult | None,
    candidate: ExecutedResult | None,
    settings: ScorerSettings,
) -> OutputScore:
    return finish_item_output(
        score_output_job(output_job(analysis, gold, candidate, settings)), candidate
    )


def output_job(
    analysis: ItemAnalysis,
    gold: ExecutedResult | None,
    candidate: ExecutedResult | None,
    settings: ScorerSettings,
    packed: tuple[bytes | None, bytes | None] = (None, None),
) -> OutputJob:
    """The output scoring of one item as a value (:func:`score_item_output` runs it; a large
    run spreads many over the cores). ``packed``: the gold's and the candidate's rows as the
    store keeps them, read instead of the results' own rows (left out by the reader)."""
    return OutputJob(
        _side(gold, analysis.gold_columns, packed[0]),
        _side(candidate, analysis.candidate_columns, packed[1]),
        output_settings(settings),
        analysis.gold_ordered,
        RowOrder(analysis.gold_order_keys, analysis.candidate_order_keys),
    )


def finish_item_output(score: OutputScore, candidate: ExecutedResult | None) -> OutputScore:
    """An item's output score once its candidate's cut is known."""
    if candidate is not None and candidate.ok and candidate.cut_tie:
        # Which tied rows the cut kept is luck, so nothing measured on them is decided: no
        # match, not "the same data", and the column and cell figures are undefined (left out
        # of the means, as any undefined figure; the ceiling candidate_cut_tie counts them).
        return replace(
            score,
            exact_match=False,
            presentation=(),
            columns_precision=None,
            columns_recall=None,
            cells_precision=None,
            cells_recall=None,
            selectivity=None,
            matched_cells=0,
            pairs=(),
            key=(),
        )
    return score


def item_ceilings(
    outcome: ItemOutcome | None,
    gold: ExecutedResult | None,
    candidate: ExecutedResult | None,
    output: OutputScore | None,
    isolated: bool,
    drift: bool,
) -> list[str]:
    """Every ceiling that limits what this item's numbers can say."""
    found: list[str] = []
    if gold is None or not gold.ok:
        found.append("gold_failed")
    elif gold.truncated:
        found.append("gold_truncated")
    if drift:
        found.append("gold_drift")
    if outcome is not None and outcome.error_class == "timeout":
        found.append("agent_timeout")
    elif outcome is not None and outcome.error_class is not None:
        found.append("agent_error")
    sut_refused = outcome is not None and outcome.response is not None and outcome.response.refused
    if sut_refused or candidate is not None and candidate.status in ("refused", "timeout"):
        found.append("refused")  # by the SUT itself, or by the guard when its SQL ran
    if candidate is not None and candidate.truncated:
        found.append("candidate_truncated")
    if gold is not None and gold.ok and gold.cut_tie:
        found.append("gold_cut_tie")
    if candidate is not None and candidate.ok and candidate.cut_tie:
        found.append("candidate_cut_tie")
    if not isolated:
        found.append("not_isolated")
    if output is not None:
        found += [c for c in output.ceilings if c not in found]
        if output.scorer_fault and "scorer_fault" not in found:
            found.append("scorer_fault")
    return found


def component_row(analysis: ItemAnalysis) -> dict[str, object]:
    scores = score_components(analysis.gold_components, analysis.candidate_components)
    row: dict[str, object] = {"item_id": analysis.item_id, "case_id": analysis.case_id}
    for name in COMPONENT_SETS:
        pr = getattr(scores, name)
        row[f"{name}_precision"] = pr.precision
        row[f"{name}_recall"] = pr.recall
    row["parse_error"] = analysis.candidate_error
    row["gold_sets_json"] = json.dumps(sets_json(analysis.gold_components))
    row["candidate_sets_json"] = (
        None
        if analysis.candidate_components is None
        else json.dumps(sets_json(analysis.candidate_components))
    )
    return row


def sets_json(components: ComponentSets) -> dict[str, object]:
    """Each component set sorted, and ``display``: element -> the text as written, where the
    two differ (meaning-level normalisation, SPEC 7)."""
    sets: dict[str, object] = {name: sorted(getattr(components, name)) for name in COMPONENT_SETS}
    shown = {k: v for k, v in components.display.items() if k != v}
    if shown:
        sets["display"] = shown
    return sets


def output_row(
    analysis: ItemAnalysis, score: OutputScore, ceilings: Sequence[str]
) -> dict[str, object]:
    data = score.to_json()
    output = data["output"]
    assert isinstance(output, dict)
    return {
        "item_id": analysis.item_id,
        "case_id": analysis.case_id,
        "exact_match": score.exact_match,
        "columns_precision": score.columns_precision,
        "columns_recall": score.columns_recall,
        "cells_precision": score.cells_precision,
        "cells_recall": score.cells_recall,
        "selectivity": score.selectivity,
        "matched_cells": score.matched_cells,
        "reference_rows": score.reference_rows,
        "candidate_rows": score.candidate_rows,
        "pairs_json": json.dumps(output["pairs"]),
        "key_json": json.dumps(output["key"]),
        "scorer_fault": score.scorer_fault,
        "ceilings_json": json.dumps(list(ceilings)),
        "presentation_json": json.dumps(list(score.presentation)),
    }


def evidence(
    output: Mapping[str, object],
    components: Mapping[str, object],
    retrieval: Mapping[str, object],
    candidate_failed: bool,
    gold_failed: bool,
    facts: DataFacts = NO_FACTS,
) -> ItemEvidence:
    """Gather one item's figures and findings from its stored family rows for the diagnosis."""

    def differs(name: str) -> bool:
        p, r = num(components.get(f"{name}_precision")), num(components.get(f"{name}_recall"))
        return (
            (p is not None and p < 1.0)
            or (r is not None and r < 1.0)
            or ((p is None) != (r is None))
        )

    gold_sets = json_object(components.get("gold_sets_json"))
    candidate_sets = json_object(components.get("candidate_sets_json"))
    display = {**as_mapping(gold_sets.get("display")), **as_mapping(candidate_sets.get("display"))}
    found = retrieval_findings([str(t) for t in json_list(retrieval.get("missing_json"))])
    if CUT_TIE in json_list(output.get("ceilings_json")):
        found.append(Finding("wrong_grain", CUT_TIE_FINDING))
    structural = []
    if candidate_sets:
        structural = component_findings(
            gold_sets,  # type: ignore[arg-type]
            candidate_sets,  # type: ignore[arg-type]
            display,
            facts.row_changing,
            facts.same_rows,
        )
        found += structural
    status = output.get("gold_status") if gold_failed else output.get("candidate_status")

    def supported(category: str, fallback: bool) -> bool:
        # What the findings say, when both sides were reduced to sets; else the set figures.
        return any(f.category == category for f in structural) if candidate_sets else fallback

    presentation = tuple(str(t) for t in json_list(output.get("presentation_json")))
    if (
        not presentation
        and candidate_sets
        and as_int(output.get("reference_rows")) == 0 == as_int(output.get("candidate_rows"))
        and not any(f.category in ("wrong_table", "wrong_filter", "wrong_grain") for f in found)
        and not any(f.category == "wrong_metric" for f in structural)
    ):
        presentation = ("both results are empty and select the same rows; only the columns differ",)
    return ItemEvidence(
        gold_failed=gold_failed,
        scorer_fault=bool(output.get("scorer_fault")),
        exact_match=bool(output.get("exact_match")),
        candidate_failed=candidate_failed,
        retrieval_recall=num(retrieval.get("recall")),
        tables_differ=supported("wrong_table", differs("tables")),
        filters_differ=supported("wrong_filter", differs("filters")),
        group_by_differ=differs("group_by"),
        metric_differ=supported("wrong_metric", differs("aggregations") or differs("select")),
        cells_precision=num(output.get("cells_precision")),
        cells_recall=num(output.get("cells_recall")),
        reference_rows=as_int(output.get("reference_rows")),
        candidate_rows=as_int(output.get("candidate_rows")),
        findings=tuple(found),
        presentation=presentation,
        failure=None if status is None or num_is_missing(status) else str(status),
    )


def diagnosis_row(item_id: str, case_id: str, evidence_: ItemEvidence) -> dict[str, object]:
    diagnosis = diagnose(evidence_)
    return {
        "item_id": item_id,
        "case_id": case_id,
        "category": diagnosis.category,
        "rule": diagnosis.rule,
        "categories_json": json.dumps(list(diagnosis.categories)),
        "findings_json": json.dumps(
            [{"category": f.category, "text": f.text} for f in diagnosis.findings]
        ),
    }


def json_object(value: object) -> dict[str, object]:
    if not isinstance(value, str) or not value:
        return {}
    loaded = json.loads(value)
    return loaded if isinstance(loaded, dict) else {}


def json_list(value: object) -> list[object]:
    if not isinstance(value, str) or not value:
        return []
    loaded = json.loads(value)
    return loaded if isinstance(loaded, list) else []


def as_mapping(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def num_is_missing(value: object) -> bool:
    return value is pd.NA or (isinstance(value, float) and value != value)


def num(value: object) -> float | None:
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return None
    return float(value)  # type: ignore[arg-type]


def as_int(value: object) -> int | None:
    number = num(value)
    return None if number is None else int(number)


def gold_drift(case: Case, gold: ExecutedResult | None, settings: ScorerSettings) -> bool:
    """The live gold result differs from the frozen ``expected_result`` (exact match, §6.5)."""
    if case.expected_result is None or gold is None or not gold.ok:
        return False
    frozen = ResultSet.from_names(case.expected_result.columns, case.expected_result.rows)
    live = ResultSet.from_names(gold.columns, gold.rows)
    return not results_match(frozen, live, output_settings(settings))
