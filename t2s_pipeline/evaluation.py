"""One evaluation run as pure functions over typed records: the library under the assets.

Each function takes what one pipeline stage reads and returns the rows it writes, so the Dagster
assets stay wiring and the same code runs from a test, the command line or a notebook.
Ceilings are counted per item: an item whose case's gold failed counts once under
``gold_failed``, and so on.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd

from t2s_pipeline.cases import Case, CaseSet
from t2s_pipeline.config import RunConfig, ScorerSettings
from t2s_pipeline.errors import SqlAnalysisError
from t2s_pipeline.execution.records import ExecutedResult, QueryJob, from_outcome
from t2s_pipeline.results import Column, ResultSet
from t2s_pipeline.runs import RunSpec
from t2s_pipeline.scoring.compare import Comparison, compare_runs, load_decision, unaccepted
from t2s_pipeline.scoring.components import ComponentScores, ComponentSets, score_components
from t2s_pipeline.scoring.diagnosis import Diagnosis, ItemEvidence, diagnose
from t2s_pipeline.scoring.findings import component_findings, retrieval_findings
from t2s_pipeline.scoring.output import OutputScore, OutputSettings, score_output
from t2s_pipeline.scoring.retrieval import score_retrieval
from t2s_pipeline.scoring.stats import mean_with_ci
from t2s_pipeline.scoring.summary import (
    COMPONENT_SETS,
    FAMILY_COLUMNS,
    RunSummary,
    count_ceilings,
    diagnosis_histograms,
    ex_by_band,
    family_means,
    robustness,
)
from t2s_pipeline.sql.analysis import OutputColumn
from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline.sql.schema import Schema
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.sut.client import Item, ItemOutcome, SutClient
from t2s_pipeline.sut.contract import RequestContext

_LOG = logging.getLogger(__name__)


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


def gold_jobs(case_set: CaseSet) -> list[QueryJob]:
    return [QueryJob(case.id, case, case.gold_sql) for case in case_set.cases]


def candidate_jobs(
    case_set: CaseSet, items: Sequence[Item], outcomes: Mapping[str, ItemOutcome]
) -> list[QueryJob]:
    cases = case_set.by_id()
    return [
        QueryJob(item.item_id, cases[item.case_id], _candidate_sql(outcomes.get(item.item_id)))
        for item in items
    ]


def _candidate_sql(outcome: ItemOutcome | None) -> str | None:
    if outcome is None or outcome.response is None or outcome.response.refused:
        return None
    return outcome.response.sql


def analyse_items(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
) -> list[ItemAnalysis]:
    """Analyse gold and candidate of every item (memoised on identical SQL of one case)."""
    analyses, failed = _analyse_all(case_set, items, outcomes, schemas, skip_failures=False)
    assert not failed
    return analyses


def safe_analyse_items(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
) -> tuple[list[ItemAnalysis], list[str]]:
    """Like :func:`analyse_items`, but a gold query that does not parse skips its items."""
    return _analyse_all(case_set, items, outcomes, schemas, skip_failures=True)


def _analyse_all(
    case_set: CaseSet,
    items: Sequence[Item],
    outcomes: Mapping[str, ItemOutcome],
    schemas: Mapping[str | None, Schema],
    skip_failures: bool,
) -> tuple[list[ItemAnalysis], list[str]]:
    """One memo over every item: phrasings of a case answered with the same SQL share one
    analysis, and a case whose gold cannot be analysed is tried once."""
    cases = case_set.by_id()
    memo: dict[tuple[str, str | None], ItemAnalysis | SqlAnalysisError] = {}
    analyses: list[ItemAnalysis] = []
    failed: list[str] = []
    for item in items:
        case = cases[item.case_id]
        sql = _candidate_sql(outcomes.get(item.item_id))
        key = (case.id, sql)
        if key not in memo:
            try:
                memo[key] = _analyse(case, sql, case_set.domain.dialect, schemas[case.db_id])
            except SqlAnalysisError as error:
                if not skip_failures:
                    raise
                memo[key] = error
        found = memo[key]
        if isinstance(found, SqlAnalysisError):
            failed.append(item.item_id)
        else:
            analyses.append(_retag(found, item.item_id))
    return analyses, failed


def _retag(analysis: ItemAnalysis, item_id: str) -> ItemAnalysis:
    return ItemAnalysis(
        **{**{f.name: getattr(analysis, f.name) for f in fields(analysis)}, "item_id": item_id}
    )


def _analyse(case: Case, candidate_sql: str | None, dialect: str, schema: Schema) -> ItemAnalysis:
    pair = analyse_pair(case.gold_sql, candidate_sql or "SELECT 1", dialect, schema)
    gold = pair.gold
    candidate = pair.candidate if candidate_sql else None
    error = pair.candidate_error if candidate_sql else "no SQL"
    return ItemAnalysis(
        item_id="",
        case_id=case.id,
        required_tables=tuple(sorted(gold.required_tables)),
        gold_columns=gold.output_columns,
        gold_components=gold.components,
        gold_ordered=gold.has_order_by,
        candidate_columns=None if candidate is None else candidate.output_columns,
        candidate_components=None if candidate is None else candidate.components,
        candidate_error=error,
    )


def result_set(
    result: ExecutedResult | None, columns: Sequence[OutputColumn] | None
) -> ResultSet | None:
    """The scorer's view of an executed result: None when it failed; origins when they line up."""
    if result is None or not result.ok:
        return None
    lineage = list(columns) if columns is not None and len(columns) == len(result.columns) else None
    cols = tuple(
        Column(
            name=name,
            origin=None if lineage is None else lineage[i].origin,
            expression=None if lineage is None else lineage[i].expression,
        )
        for i, name in enumerate(result.columns)
    )
    return ResultSet(cols, result.rows)


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
    return score_output(
        result_set(gold, analysis.gold_columns),
        result_set(candidate, analysis.candidate_columns),
        output_settings(settings),
        reference_ordered=analysis.gold_ordered,
    )


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
    if not isolated:
        found.append("not_isolated")
    if output is not None:
        found += [c for c in output.ceilings if c not in found]
        if output.scorer_fault and "scorer_fault" not in found:
            found.append("scorer_fault")
    return found


def retrieval_row(
    analysis: ItemAnalysis, outcome: ItemOutcome | None, dialect: str
) -> dict[str, object]:
    """The retrieval family for the SUT's own trace and for the direct probe."""
    required = frozenset(analysis.required_tables)
    row: dict[str, object] = {"item_id": analysis.item_id, "case_id": analysis.case_id}
    row["required_json"] = json.dumps(sorted(required))
    traces = {
        "": _trace_tables(outcome),
        "probe_": None if outcome is None or outcome.probe is None else outcome.probe.tables,
    }
    for prefix, tables in traces.items():
        if tables is None:
            row.update(
                {f"{prefix}recall": None, f"{prefix}precision": None, f"{prefix}spurious": None}
            )
            row[f"{prefix}offered_json"] = None
            row[f"{prefix}missing_json"] = None
            continue
        offered = [t.name for t in tables]
        score = score_retrieval(required, offered, dialect)
        row[f"{prefix}recall"] = score.recall
        row[f"{prefix}precision"] = score.precision
        row[f"{prefix}spurious"] = score.spurious
        row[f"{prefix}offered_json"] = json.dumps(offered)
        row[f"{prefix}missing_json"] = json.dumps(list(score.missing))
    return row


def _trace_tables(outcome: ItemOutcome | None) -> list[Any] | None:
    """Tables the SUT says it was offered; None (not "nothing") when it reports no trace."""
    if outcome is None or outcome.response is None or outcome.response.retrieval is None:
        return None
    return list(outcome.response.retrieval.tables)


def component_row(analysis: ItemAnalysis) -> dict[str, object]:
    scores = score_components(analysis.gold_components, analysis.candidate_components)
    row: dict[str, object] = {"item_id": analysis.item_id, "case_id": analysis.case_id}
    for name in COMPONENT_SETS:
        pr = getattr(scores, name)
        row[f"{name}_precision"] = pr.precision
        row[f"{name}_recall"] = pr.recall
    row["parse_error"] = analysis.candidate_error
    row["gold_sets_json"] = json.dumps(_sets(analysis.gold_components))
    row["candidate_sets_json"] = (
        None
        if analysis.candidate_components is None
        else json.dumps(_sets(analysis.candidate_components))
    )
    return row


def _sets(components: ComponentSets) -> dict[str, object]:
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
) -> ItemEvidence:
    """Gather one item's figures and findings from its stored family rows for the diagnosis."""

    def differs(name: str) -> bool:
        p, r = _num(components.get(f"{name}_precision")), _num(components.get(f"{name}_recall"))
        return (
            (p is not None and p < 1.0)
            or (r is not None and r < 1.0)
            or ((p is None) != (r is None))
        )

    gold_sets = _json_object(components.get("gold_sets_json"))
    candidate_sets = _json_object(components.get("candidate_sets_json"))
    display = {**_mapping(gold_sets.get("display")), **_mapping(candidate_sets.get("display"))}
    found = retrieval_findings([str(t) for t in _json_list(retrieval.get("missing_json"))])
    structural = []
    if candidate_sets:
        structural = component_findings(gold_sets, candidate_sets, display)  # type: ignore[arg-type]
        found += structural
    status = output.get("gold_status") if gold_failed else output.get("candidate_status")

    def supported(category: str, fallback: bool) -> bool:
        # What the findings say, when both sides were reduced to sets; else the set figures.
        return any(f.category == category for f in structural) if candidate_sets else fallback

    presentation = tuple(str(t) for t in _json_list(output.get("presentation_json")))
    if (
        not presentation
        and candidate_sets
        and _int(output.get("reference_rows")) == 0 == _int(output.get("candidate_rows"))
        and not any(f.category in ("wrong_table", "wrong_filter", "wrong_grain") for f in found)
        and not any(f.category == "wrong_metric" for f in structural)
    ):
        presentation = ("both results are empty and select the same rows; only the columns differ",)
    return ItemEvidence(
        gold_failed=gold_failed,
        scorer_fault=bool(output.get("scorer_fault")),
        exact_match=bool(output.get("exact_match")),
        candidate_failed=candidate_failed,
        retrieval_recall=_num(retrieval.get("recall")),
        tables_differ=supported("wrong_table", differs("tables")),
        filters_differ=differs("filters"),
        group_by_differ=differs("group_by"),
        metric_differ=supported("wrong_metric", differs("aggregations") or differs("select")),
        cells_precision=_num(output.get("cells_precision")),
        cells_recall=_num(output.get("cells_recall")),
        reference_rows=_int(output.get("reference_rows")),
        candidate_rows=_int(output.get("candidate_rows")),
        findings=tuple(found),
        presentation=presentation,
        failure=None if status is None or _num_is_missing(status) else str(status),
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


def _json_object(value: object) -> dict[str, object]:
    if not isinstance(value, str) or not value:
        return {}
    loaded = json.loads(value)
    return loaded if isinstance(loaded, dict) else {}


def _json_list(value: object) -> list[object]:
    if not isinstance(value, str) or not value:
        return []
    loaded = json.loads(value)
    return loaded if isinstance(loaded, list) else []


def _mapping(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _num_is_missing(value: object) -> bool:
    return value is pd.NA or (isinstance(value, float) and value != value)


def _num(value: object) -> float | None:
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return None
    return float(value)  # type: ignore[arg-type]


def _int(value: object) -> int | None:
    number = _num(value)
    return None if number is None else int(number)


def frame(rows: Sequence[Mapping[str, object]], float_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Rows to a frame, metric columns typed as nullable floats (undefined stays NULL)."""
    data = pd.DataFrame(list(rows))
    for column in float_columns:
        if column in data:
            data[column] = pd.to_numeric(data[column], errors="coerce").astype("Float64")
    return data


# --- Stored forms: each stage's records as rows, and back --------------------------------------


def items_rows(items: Sequence[Item], case_set: CaseSet) -> list[dict[str, object]]:
    cases = case_set.by_id()
    return [
        {
            "item_id": item.item_id,
            "case_id": item.case_id,
            "phrasing": item.phrasing,
            "question": item.question,
            "exclude_json": json.dumps(list(item.exclude)),
            "evidence": item.evidence,
            "difficulty": cases[item.case_id].difficulty,
            "context_json": None if item.context is None else item.context.model_dump_json(),
        }
        for item in items
    ]


def items_from_frame(data: pd.DataFrame) -> list[Item]:
    return [
        Item(
            item_id=str(row.item_id),
            case_id=str(row.case_id),
            phrasing=int(row.phrasing),  # type: ignore[arg-type]
            question=str(row.question),
            exclude=tuple(json.loads(str(row.exclude_json))),
            evidence=None if pd.isna(row.evidence) else str(row.evidence),
            context=_context(getattr(row, "context_json", None)),
        )
        for row in data.sort_values(["case_id", "phrasing"]).itertuples(index=False)
    ]


def _context(text: object) -> RequestContext | None:
    """An item's stored request context; None for items stored before contexts were sent."""
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    return RequestContext.model_validate_json(str(text))


def outcome_row(outcome: ItemOutcome, item: Item) -> dict[str, object]:
    response = outcome.response
    return {
        "item_id": outcome.item_id,
        "case_id": item.case_id,
        "sql": None if response is None else response.sql,
        "refused": None if response is None else response.refused,
        "message": None if response is None else response.message,
        "error_class": outcome.error_class,
        "status": outcome.status,
        "error_message": outcome.message,
        "attempts": outcome.attempts,
        "latency_s": outcome.latency_s,
        "response_json": None if response is None else response.model_dump_json(),
    }


def probe_row(outcome: ItemOutcome, item: Item) -> dict[str, object]:
    probe = outcome.probe
    return {
        "item_id": outcome.item_id,
        "case_id": item.case_id,
        "tables_json": None if probe is None else json.dumps([t.name for t in probe.tables]),
        "examples_json": None if probe is None else json.dumps([e.id for e in probe.examples]),
        "error_class": outcome.probe_error_class,
        "error_message": outcome.probe_message,
        "probe_json": None if probe is None else probe.model_dump_json(),
    }


def outcomes_from_frames(responses: pd.DataFrame, probes: pd.DataFrame) -> dict[str, ItemOutcome]:
    """Rebuild each item's outcome from the stored responses and probes."""
    from t2s_pipeline.sut.contract import AskResponse, RetrieveResponse

    probe_by_item = (
        {} if probes.empty else {str(r.item_id): r for r in probes.itertuples(index=False)}
    )
    out: dict[str, ItemOutcome] = {}
    for row in responses.itertuples(index=False):
        probe = probe_by_item.get(str(row.item_id))
        out[str(row.item_id)] = ItemOutcome(
            item_id=str(row.item_id),
            response=None
            if pd.isna(row.response_json)
            else AskResponse.model_validate_json(str(row.response_json)),
            probe=None
            if probe is None or pd.isna(probe.probe_json)
            else RetrieveResponse.model_validate_json(str(probe.probe_json)),
            error_class=None if pd.isna(row.error_class) else str(row.error_class),
            status=None if pd.isna(row.status) else int(row.status),  # type: ignore[arg-type]
            message=None if pd.isna(row.error_message) else str(row.error_message),
            attempts=int(row.attempts),  # type: ignore[arg-type]
            latency_s=float(row.latency_s),  # type: ignore[arg-type]
            probe_error_class=None
            if probe is None or pd.isna(probe.error_class)
            else str(probe.error_class),
            probe_message=None
            if probe is None or pd.isna(probe.error_message)
            else str(probe.error_message),
        )
    return out


def analysis_row(analysis: ItemAnalysis) -> dict[str, object]:
    return {
        "item_id": analysis.item_id,
        "case_id": analysis.case_id,
        "required_json": json.dumps(list(analysis.required_tables)),
        "parse_error": analysis.candidate_error,
        "analysis_json": json.dumps(
            {
                "required_tables": list(analysis.required_tables),
                "gold_columns": [asdict(c) for c in analysis.gold_columns],
                "gold_components": _sets(analysis.gold_components),
                "gold_ordered": analysis.gold_ordered,
                "candidate_columns": None
                if analysis.candidate_columns is None
                else [asdict(c) for c in analysis.candidate_columns],
                "candidate_components": None
                if analysis.candidate_components is None
                else _sets(analysis.candidate_components),
                "candidate_error": analysis.candidate_error,
            }
        ),
    }


def analyses_from_frame(data: pd.DataFrame) -> dict[str, ItemAnalysis]:
    out: dict[str, ItemAnalysis] = {}
    for row in data.itertuples(index=False):
        d = json.loads(str(row.analysis_json))
        out[str(row.item_id)] = ItemAnalysis(
            item_id=str(row.item_id),
            case_id=str(row.case_id),
            required_tables=tuple(d["required_tables"]),
            gold_columns=tuple(OutputColumn(**c) for c in d["gold_columns"]),
            gold_components=_components(d["gold_components"]),
            gold_ordered=bool(d["gold_ordered"]),
            candidate_columns=None
            if d["candidate_columns"] is None
            else tuple(OutputColumn(**c) for c in d["candidate_columns"]),
            candidate_components=None
            if d["candidate_components"] is None
            else _components(d["candidate_components"]),
            candidate_error=d["candidate_error"],
        )
    return out


def _components(data: Mapping[str, object]) -> ComponentSets:
    sets = {name: frozenset(data.get(name) or ()) for name in COMPONENT_SETS}  # type: ignore[call-overload]
    return ComponentSets(**sets, display=dict(data.get("display") or {}))  # type: ignore[call-overload]


def gold_drift(case: Case, gold: ExecutedResult | None, settings: ScorerSettings) -> bool:
    """The live gold result differs from the frozen ``expected_result`` (exact match, §6.5)."""
    if case.expected_result is None or gold is None or not gold.ok:
        return False
    frozen = ResultSet.from_names(case.expected_result.columns, case.expected_result.rows)
    live = ResultSet.from_names(gold.columns, gold.rows)
    return not score_output(frozen, live, output_settings(settings)).exact_match


# --- Running a SUT -------------------------------------------------------------------------------

Progress = Callable[[int, int], None]


@contextmanager
def open_client(config: RunConfig, case_set: CaseSet) -> Iterator[SutClient]:
    """The client a configuration names; the built-in agent is served on loopback for the run."""
    from t2s_pipeline.agent.app import AgentSettings, build_app
    from t2s_pipeline.agent.server import serve_in_thread
    from t2s_pipeline.sut.factory import http_client, http_settings, python_client
    from t2s_pipeline.sut.http import HttpSutClient
    from t2s_pipeline.sut.replay import ReplayClient

    with ExitStack() as stack:
        client: SutClient
        if config.sut.kind == "replay":
            assert config.sut.file is not None
            client = ReplayClient(config.sut.file)
        elif config.sut.kind == "http":
            client = http_client(config)
        elif config.sut.kind == "python":
            client = python_client(config)
        else:
            agent = AgentSettings.from_sut(config.sut)
            url = stack.enter_context(serve_in_thread(build_app(case_set, settings=agent)))
            client = HttpSutClient(http_settings(config, base_url=url))
        stack.callback(client.close)
        yield client


def item_isolated(honours_exclusions: bool, item: Item, outcome: ItemOutcome) -> bool:
    """Whether this item's case was provably hidden from the SUT while it was asked (§4).

    It was when exclusions were sent (the configuration isolates), the SUT says it honours
    them, and neither its own trace nor the probe returned the case or one of its twins.

    >>> from t2s_pipeline.sut.contract import RetrieveResponse, RetrievedExample
    >>> item = Item("a#0", "a", 0, "q", ("a", "a-twin"))
    >>> leak = RetrieveResponse(tables=(), examples=(RetrievedExample(id="a-twin", question="q",
    ...                                                                sql="SELECT 1"),))
    >>> item_isolated(True, item, ItemOutcome("a#0", None, leak, "http_status", 500, "", 1, 0.1))
    False
    >>> item_isolated(True, item, ItemOutcome("a#0", None, None, "http_status", 500, "", 1, 0.1))
    True
    """
    if not honours_exclusions or not item.exclude:
        return False
    return not excluded_returned(item, outcome)


def response_rows(
    outcomes: Sequence[ItemOutcome], items: Mapping[str, Item], honours_exclusions: bool
) -> tuple[list[dict[str, object]], list[str]]:
    """The ``sut_responses`` rows with each item's isolation, and the ids of items that got
    back an example excluded for them."""
    rows = [
        outcome_row(o, items[o.item_id])
        | {"isolated": item_isolated(honours_exclusions, items[o.item_id], o)}
        for o in outcomes
    ]
    leaked = [o.item_id for o in outcomes if excluded_returned(items[o.item_id], o)]
    return rows, leaked


def excluded_returned(item: Item, outcome: ItemOutcome) -> set[str]:
    """The excluded case ids (the case, its twins) that came back anyway."""
    return set(item.exclude) & returned_examples(outcome)


def returned_examples(outcome: ItemOutcome) -> set[str]:
    """Ids of the examples the SUT said it used and the probe returned."""
    seen = {e.id for e in outcome.probe.examples} if outcome.probe is not None else set()
    response = outcome.response
    if response is not None and response.retrieval is not None:
        seen |= {e.id for e in response.retrieval.examples}
    return seen


def isolation(client: SutClient, warn: Callable[[str], None]) -> bool:
    """Whether the SUT honours exclusions; an unreadable health counts as not isolated.

    A SUT that cannot be asked about its health is still evaluated: each item records its own
    failure, and nothing proves the case was hidden, so every item counts ``not_isolated``.
    """
    from t2s_pipeline.errors import SutError

    try:
        client.health()
    except SutError as error:
        warn(f"{error}; every item counts as not_isolated")
        return False
    return client.isolated


# --- Scoring a run from its stored stages ---------------------------------------------------------


def score_outputs(
    settings: ScorerSettings,
    analyses: Mapping[str, ItemAnalysis],
    gold: pd.DataFrame,
    candidates: Mapping[str, ExecutedResult],
    responses: pd.DataFrame,
    probes: pd.DataFrame | None = None,
) -> list[dict[str, object]]:
    """Output family and exact match of every item, with its ceilings.

    ``probes``: the run's retriever probes, for a SUT the harness can probe (HTTP, built-in);
    an item whose probe is missing or failed is ``no_probe``. None: not a probed SUT (replay).
    """
    from t2s_pipeline.execution.records import from_frame

    gold_by_case = from_frame(gold)
    drift = dict(zip(gold["key"], gold["drift"], strict=True)) if not gold.empty else {}
    outcomes = outcomes_from_frames(responses, pd.DataFrame() if probes is None else probes)
    isolated = dict(zip(responses["item_id"], responses["isolated"], strict=True))
    rows = []
    for item_id, analysis in analyses.items():
        reference = gold_by_case.get(analysis.case_id)
        candidate = candidates.get(item_id)
        score = score_item_output(analysis, reference, candidate, settings)
        outcome = outcomes.get(item_id)
        found = item_ceilings(
            outcome,
            reference,
            candidate,
            score,
            bool(isolated.get(item_id, True)),
            bool(drift.get(analysis.case_id, False)),
        )
        if probes is not None and (outcome is None or outcome.probe is None):
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


def family_metadata(
    rows: Sequence[Mapping[str, object]], columns: Sequence[str]
) -> dict[str, float | int]:
    """Mean and n of a few figures, for an asset's materialisation metadata."""
    out: dict[str, float | int] = {"dagster/row_count": len(rows)}
    for column in columns:
        mean = mean_with_ci(_num(row.get(column)) for row in rows)
        out[f"{column}/n"] = mean.n
        if mean.mean is not None:
            out[column] = round(mean.mean, 6)
    return out


def exact_rows(items: pd.DataFrame, output: pd.DataFrame) -> list[dict[str, object]]:
    merged = items[["item_id", "case_id", "phrasing", "difficulty"]].merge(
        output[["item_id", "exact_match", "scorer_fault", "gold_status", "presentation_json"]]
        if "presentation_json" in output
        else output[["item_id", "exact_match", "scorer_fault", "gold_status"]],
        on="item_id",
    )
    return [
        {
            "item_id": r.item_id,
            "case_id": r.case_id,
            "phrasing": int(r.phrasing),  # type: ignore[arg-type]
            "difficulty": r.difficulty,
            # EX of an item whose gold failed is undefined, not a miss.
            "exact_match": None if r.gold_status != "ok" else bool(r.exact_match),
            # Exact, or differing only in presentation (SPEC 11): a second line beside EX.
            "ex_presentation": None
            if r.gold_status != "ok"
            else bool(r.exact_match) or bool(_json_list(getattr(r, "presentation_json", None))),
            "scorer_fault": bool(r.scorer_fault),
        }
        for r in merged.itertuples(index=False)
    ]


def diagnosis_rows(store: ResultsStore, run_id: str) -> list[dict[str, object]]:
    """Diagnose every item from its stored family rows."""
    output = store.read("output_scores", run_id).set_index("item_id")
    components = store.read("component_scores", run_id).set_index("item_id")
    retrieval = store.read("retrieval_scores", run_id).set_index("item_id")
    rows = []
    for item_id, out in output.iterrows():
        comp = components.loc[item_id].to_dict() if item_id in components.index else {}
        retr = retrieval.loc[item_id].to_dict() if item_id in retrieval.index else {}
        found = evidence(
            out.to_dict(),
            comp,
            retr,
            candidate_failed=out["candidate_status"] != "ok",
            gold_failed=out["gold_status"] != "ok",
        )
        rows.append(diagnosis_row(str(item_id), str(out["case_id"]), found))
    return rows


def joined_items(store: ResultsStore, run_id: str) -> pd.DataFrame:
    """One row per item with every family's figures, the band and the diagnosis."""
    data = store.read("exact_matches", run_id)
    for table, drop in (
        ("output_scores", ["case_id", "exact_match", "scorer_fault"]),
        ("retrieval_scores", ["case_id"]),
        ("component_scores", ["case_id"]),
        ("diagnoses", ["case_id"]),
    ):
        other = store.read(table, run_id)
        if other.empty:
            continue
        other = other.drop(columns=[c for c in [*drop, "run_id"] if c in other])
        data = data.merge(other, on="item_id", how="left")
    return data


def summarise_run(store: ResultsStore, run_id: str) -> RunSummary:
    from t2s_pipeline.judge.report import judge_section

    data = joined_items(store, run_id)
    counts = (
        ceiling_counts(data.to_dict("records")) if "ceilings_json" in data else count_ceilings({})
    )
    return RunSummary(
        run_id=run_id,
        n_items=len(data),
        n_cases=int(data["case_id"].nunique()) if not data.empty else 0,
        families=family_means(data),
        ceilings=counts,
        ex_by_difficulty=ex_by_band(data) if not data.empty else {},
        diagnoses=diagnosis_histograms(data) if "category" in data else {},
        robustness=robustness(data) if not data.empty else mean_with_ci([]),
        extra=judge_section(store, run_id),
    )


def code_fingerprint() -> str:
    """A hash of the package's source, so runs made by different code can be told apart
    (the run id covers the configuration and the cases, not the harness).

    >>> len(code_fingerprint())
    12
    """
    import hashlib

    root = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def record_run_start(store: ResultsStore, spec: RunSpec, case_set: CaseSet) -> None:
    """The ``runs`` row: config and hashes, warehouse snapshot, code version, start."""
    from importlib.metadata import version

    snapshot = None
    if case_set.domain.engine == "duckdb" and "{db_id}" not in case_set.domain.database:
        from t2s_pipeline.demo.generate import read_snapshot_hash

        with suppress(Exception):
            snapshot = read_snapshot_hash(Path(case_set.domain.database_for()))
    row = {
        "run_id": spec.run_id,
        "config_name": spec.config.name,
        "config_path": spec.config_path,
        "config_json": json.dumps(spec.config.model_dump(mode="json"), sort_keys=True),
        "config_hash": spec.config_hash,
        "case_set_hash": case_set.content_hash,
        "sut_fingerprint": spec.sut_fingerprint,
        "cases_dir": spec.config.cases,
        "snapshot_hash": snapshot,
        "code_version": f"{version('t2s_pipeline')}+{code_fingerprint()}",
        "started_at": dt.datetime.now(dt.UTC).replace(tzinfo=None),
        "ended_at": pd.NaT,
        "summary_json": None,
    }
    frame_ = pd.DataFrame([row]).astype({"ended_at": "datetime64[us]", "summary_json": "string"})
    store.replace_run("runs", spec.run_id, frame_)


def finished_runs(store: ResultsStore) -> set[str]:
    """Run ids whose evaluation finished (their summary recorded)."""
    runs = store.read("runs")
    if runs.empty:
        return set()
    return set(runs.loc[runs["ended_at"].notna(), "run_id"].astype(str))


def record_run_end(store: ResultsStore, spec: RunSpec, summary: RunSummary) -> None:
    runs = store.read("runs", spec.run_id)
    if runs.empty:
        return
    runs = runs.assign(
        ended_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        summary_json=json.dumps(summary.to_json()),
    )
    store.replace_run("runs", spec.run_id, runs)


# --- Comparing runs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegressionVerdict:
    previous: str
    n_shared: int
    n_regressed: int
    unaccepted: list[str]


def previous_run(store: ResultsStore, run_id: str) -> str | None:
    """The latest completed run before ``run_id`` on the same case folder."""
    runs = store.read("runs")
    if runs.empty or run_id not in set(runs["run_id"]):
        return None
    this = runs[runs["run_id"] == run_id].iloc[0]
    earlier = runs[
        (runs["cases_dir"] == this["cases_dir"])
        & (runs["run_id"] != run_id)
        & runs["ended_at"].notna()
        & (runs["started_at"] < this["started_at"])
    ]
    return None if earlier.empty else str(earlier.sort_values("started_at").iloc[-1]["run_id"])


def compare(store: ResultsStore, run_a: str, run_b: str) -> Comparison:
    return compare_runs(run_a, joined_items(store, run_a), run_b, joined_items(store, run_b))


def regression_verdict(
    store: ResultsStore, run_id: str, decisions: str
) -> RegressionVerdict | None:
    previous = previous_run(store, run_id)
    if previous is None:
        return None
    comparison = compare(store, previous, run_id)
    decision = load_decision(Path(decisions), run_id)
    return RegressionVerdict(
        previous,
        comparison.n_shared,
        len(comparison.regressed_items()),
        unaccepted(comparison, decision),
    )


def compare_all(store: ResultsStore) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every completed run against its previous run: deltas and regressions, stacked."""
    deltas, regressions = [], []
    for run_id in store.run_ids():
        previous = previous_run(store, run_id)
        if previous is None:
            continue
        comparison = compare(store, previous, run_id)
        deltas.append(comparison.to_frame())
        regressions.append(comparison.regressions_frame())
    empty = pd.DataFrame({"run_a": pd.Series(dtype="string"), "run_b": pd.Series(dtype="string")})
    return (
        pd.concat(deltas, ignore_index=True) if deltas else empty,
        pd.concat(regressions, ignore_index=True) if regressions else empty,
    )


# --- Guardrails ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostileSummary:
    leaks: int
    over_blocks: int
    cells: int
    engines: str
    # Each failing cell as "<verdict> <attack> on <engine>/<layer>: <what happened> (<detail>)".
    failures: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return self.leaks == 0 and self.over_blocks == 0


def hostile_report(
    suite: Path,
    warehouse: Path,
    engines: Sequence[str] = ("duckdb", "sqlite"),
    timeout_s: float = 2.0,
    cache: Path | None = None,
) -> HostileSummary:
    """Run the hostile suite on scratch copies of the warehouse, every layer setting.

    The verdict depends only on the suite, the executor's code and the warehouse, so with a
    ``cache`` folder a clean verdict is reused until one of the three changes. A failing one
    is never cached: the next run checks again rather than repeat a verdict nobody can see
    the cause of.
    """
    key = _guard_key(suite, warehouse, engines, timeout_s)
    cached = None if cache is None else cache / f"{key}.json"
    if cached is not None and cached.exists():
        data = json.loads(cached.read_text(encoding="utf-8"))
        summary = HostileSummary(**{**data, "failures": tuple(data.get("failures", ()))})
        if summary.clean:
            return summary
    summary = _run_hostile(suite, warehouse, engines, timeout_s)
    if cached is not None and summary.clean:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(asdict(summary)), encoding="utf-8")
    return summary


def _guard_key(suite: Path, warehouse: Path, engines: Sequence[str], timeout_s: float) -> str:
    import hashlib

    import t2s_pipeline.execution as execution_package

    digest = hashlib.sha256(f"{sorted(engines)}:{timeout_s}".encode())
    package = Path(execution_package.__file__).parent
    sources = sorted([*package.rglob("*.py"), *package.rglob("*.txt"), *package.rglob("*.sql")])
    for path in [*sorted(suite.glob("*.yaml")), *sources]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    stat = warehouse.stat()
    digest.update(f"{warehouse.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def _run_hostile(
    suite: Path, warehouse: Path, engines: Sequence[str], timeout_s: float
) -> HostileSummary:
    import tempfile

    from t2s_pipeline.execution.hostile import LEAK, OVER_BLOCK, run_suite
    from t2s_pipeline.execution.hostile_suite import load_suite
    from t2s_pipeline.execution.hostile_targets import duckdb_target, sqlite_target

    makers = {"duckdb": duckdb_target, "sqlite": sqlite_target}
    with tempfile.TemporaryDirectory(prefix="t2s-guard-check-") as workdir:
        targets = [makers[e](warehouse, Path(workdir)) for e in engines]
        try:
            attacks = load_suite(suite)
            _LOG.info(
                "guardrails check: %d attacks x 3 layer settings on %s (cached afterwards)",
                len(attacks),
                ", ".join(engines),
            )
            report = run_suite(attacks, targets, timeout_s, progress=_LOG.info, parallel=True)
        finally:
            for target in targets:
                target.cleanup()
    verdicts = [c.verdict for c in report.cells]
    failures = tuple(
        f"{c.verdict} {c.attack} on {c.engine}/{c.layer}: {c.how} ({c.detail or 'no detail'}, "
        f"{c.seconds:.2f} s)"
        for c in report.cells
        if c.verdict in (LEAK, OVER_BLOCK)
    )
    return HostileSummary(
        verdicts.count(LEAK),
        verdicts.count(OVER_BLOCK),
        len(verdicts),
        ",".join(engines),
        failures,
    )


def describe_item(store: ResultsStore, run_id: str, item_id: str) -> str:
    """One item's question, both SQL texts, stored rows and every family's figures."""
    items = store.read("items", run_id)
    match = items[items["item_id"] == item_id]
    if match.empty:
        from t2s_pipeline.errors import ConfigError

        raise ConfigError(
            f"no item {item_id!r} in run {run_id}; ids look like <case-id>#<phrasing>"
        )
    item = match.iloc[0]
    lines = [f"item {item_id} ({item['difficulty']}): {item['question']}"]
    responses = store.read("sut_responses", run_id)
    response = responses[responses["item_id"] == item_id].iloc[0]
    lines.append(f"candidate SQL: {response['sql']}")
    if not pd.isna(response["error_class"]):
        lines.append(f"SUT error: {response['error_class']} {response['error_message']}")
    for label, table, key in (
        ("gold", "gold_results", item["case_id"]),
        ("candidate", "candidate_results", item_id),
    ):
        stored = store.read(table, run_id)
        row = stored[stored["key"] == key].iloc[0]
        lines.append(f"{label}: {row['status']} {'' if pd.isna(row['reason']) else row['reason']}")
        lines.append(f"  columns {row['columns_json']}; {row['n_rows']} row(s)")
        for preview in json.loads(str(row["preview_json"]))[:10]:
            lines.append(f"  {preview}")
    joined = joined_items(store, run_id)
    figures = joined[joined["item_id"] == item_id].iloc[0].to_dict()
    for family, metrics in FAMILY_COLUMNS.items():
        shown = [
            f"{metric} {_shown(figures[column])}"
            for metric, column in metrics.items()
            if column in figures
        ]
        if shown:
            lines.append(f"{family}: " + ", ".join(shown))
    for name, label in (
        ("category", "diagnosis"),
        ("ceilings_json", "ceilings"),
        ("pairs_json", "column pairs"),
        ("key_json", "row key"),
    ):
        if name in figures:
            lines.append(f"{label}: {_shown(figures[name])}")
    also = [c for c in _json_list(figures.get("categories_json"))[1:]]
    if also:
        lines.append(f"also holds: {', '.join(map(str, also))}")
    for finding in _json_list(figures.get("findings_json")):
        if isinstance(finding, dict):
            lines.append(f"  finding ({finding.get('category')}): {finding.get('text')}")
    return "\n".join(lines)


def _shown(value: object) -> str:
    """A stored figure for people: ``undefined`` for NULL, three decimals for a fraction.

    >>> [_shown(None), _shown(float("nan")), _shown(0.5), _shown(True), _shown("[]")]
    ['undefined', 'undefined', '0.500', 'True', '[]']
    """
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "undefined"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


# --- One pair of queries, as `t2s score` scores it --------------------------------------------------


@dataclass(frozen=True)
class PairScore:
    """Every family for one gold/candidate pair on one database (SPEC §15)."""

    output: OutputScore
    components: ComponentScores
    required_tables: tuple[str, ...]
    gold: ExecutedResult
    candidate: ExecutedResult
    candidate_parse_error: str | None
    ceilings: tuple[str, ...]
    diagnosis: Diagnosis | None = None

    def to_json(self) -> dict[str, object]:
        data = self.output.to_json()
        data["ceilings"] = list(self.ceilings)
        data["component"] = self.components.to_json()
        data["retrieval"] = {"required": list(self.required_tables)}
        data["gold"] = {
            "status": self.gold.status,
            "reason": self.gold.reason,
            "rows": len(self.gold.rows),
        }
        data["candidate"] = {
            "status": self.candidate.status,
            "reason": self.candidate.reason,
            "rows": len(self.candidate.rows),
            "parse_error": self.candidate_parse_error,
        }
        if self.diagnosis is not None:
            data["diagnosis"] = {
                "primary": self.diagnosis.category,
                "also": list(self.diagnosis.categories[1:]),
                "findings": [f.text for f in self.diagnosis.findings],
            }
        return data


def score_pair(
    target: str,
    gold_sql: str,
    candidate_sql: str,
    dialect: str | None = None,
    allowed_schemas: Sequence[str] | None = None,
    settings: ScorerSettings | None = None,
) -> PairScore:
    """Run both queries through the guarded executor and score every family.

    ``allowed_schemas`` defaults to every schema of the database (a scoring session, not a
    serving one); the database is opened read-only either way.
    """
    from t2s_pipeline.casecheck import live_schema
    from t2s_pipeline.execution import Guard, detect_engine, open_executor

    settings = settings or ScorerSettings()
    engine = detect_engine(target)
    dialect = dialect or {"postgres": "postgres", "sqlite": "sqlite"}.get(engine, "duckdb")
    schema = live_schema(target, engine, allowed_schemas)
    schemas = tuple(allowed_schemas) if allowed_schemas else _schema_names(schema, engine)
    guard = Guard(
        allowed_schemas=schemas, dialect=dialect, row_limit=None, eval_row_cap=settings.eval_row_cap
    )
    with open_executor(target, guard) as executor:
        gold = from_outcome("gold", executor.run(gold_sql))
        candidate = from_outcome("candidate", executor.run(candidate_sql))
    pair = analyse_pair(gold_sql, candidate_sql, dialect, schema)
    analysis = ItemAnalysis(
        item_id="pair",
        case_id="pair",
        required_tables=tuple(sorted(pair.gold.required_tables)),
        gold_columns=pair.gold.output_columns,
        gold_components=pair.gold.components,
        gold_ordered=pair.gold.has_order_by,
        candidate_columns=None if pair.candidate is None else pair.candidate.output_columns,
        candidate_components=None if pair.candidate is None else pair.candidate.components,
        candidate_error=pair.candidate_error,
    )
    output = score_item_output(analysis, gold, candidate, settings)
    return PairScore(
        output=output,
        components=score_components(analysis.gold_components, analysis.candidate_components),
        required_tables=analysis.required_tables,
        gold=gold,
        candidate=candidate,
        candidate_parse_error=pair.candidate_error,
        # The same ceilings a run records for an item (no SUT, so no agent or isolation ones).
        ceilings=tuple(item_ceilings(None, gold, candidate, output, isolated=True, drift=False)),
        diagnosis=pair_diagnosis(analysis, output, gold, candidate),
    )


def pair_diagnosis(
    analysis: ItemAnalysis,
    output: OutputScore,
    gold: ExecutedResult,
    candidate: ExecutedResult,
) -> Diagnosis:
    """The diagnosis a run would store for this pair (no retrieval trace: nothing offered)."""
    stored = {
        **output_row(analysis, output, output.ceilings),
        "gold_status": gold.status,
        "candidate_status": candidate.status,
    }
    found = evidence(
        stored,
        component_row(analysis),
        {},
        candidate_failed=candidate.status != "ok",
        gold_failed=gold.status != "ok",
    )
    return diagnose(found)


def _schema_names(schema: Schema, engine: str) -> tuple[str, ...]:
    return tuple(sorted(schema.tables)) or (("main",) if engine != "postgres" else ("public",))
