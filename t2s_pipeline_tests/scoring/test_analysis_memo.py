"""The analysis stage parses each case's gold once, however many phrasings ask it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.run import analyse as ev
from t2s_pipeline.run import items as items_stage
from t2s_pipeline.run.cache_keys import cache_key
from t2s_pipeline.run.items import twins
from t2s_pipeline.sql import pair as pair_sql
from t2s_pipeline.sql.canonical import find_twins
from t2s_pipeline.sql.schema import domain_schemas
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.sut.client import ItemOutcome, build_items
from t2s_pipeline.sut.contract import AskResponse

REPO = Path(__file__).resolve().parents[2]


def demo_cases(warehouse: Path) -> CaseSet:
    """The demo cases read against the session's warehouse (a fresh checkout has no .t2s/)."""
    case_set = load_cases(REPO / "cases" / "erp")
    domain = dataclasses.replace(case_set.domain, database=str(warehouse))
    return dataclasses.replace(case_set, domain=domain)


def _count_pairs(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every gold analysed from here on (``analyse_pair``'s first argument), in order."""
    calls: list[Any] = []
    real = pair_sql.analyse_pair

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(pair_sql, "analyse_pair", counting)
    return calls


def test_safe_analyse_items_shares_one_memo_across_items(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path
) -> None:
    """Three phrasings with the same (absent) SQL are one analysis; the asset path used to
    analyse every item on its own."""
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:5]
    items = [i for i in build_items(case_set, {}, "all") if i.case_id in {c.id for c in cases}]
    assert len(items) == 3 * len(cases)
    calls = _count_pairs(monkeypatch)
    schemas = domain_schemas(cases, case_set.domain)
    analysed = ev.safe_analyse_items(case_set, items, {}, schemas)
    assert not analysed.failed
    assert [a.item_id for a in analysed.analyses] == [i.item_id for i in items]
    assert len(calls) == len(cases) == len(analysed.made) and analysed.reused == 0


def test_a_gold_that_cannot_be_analysed_skips_its_items_only(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path
) -> None:
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:2]
    items = [i for i in build_items(case_set, {}, "all") if i.case_id in {c.id for c in cases}]
    real = pair_sql.analyse_pair

    def failing_first(gold: str, *args: Any, **kwargs: Any) -> Any:
        if gold == cases[0].gold_sql:
            raise ev.SqlAnalysisError("cannot parse")
        return real(gold, *args, **kwargs)

    monkeypatch.setattr(pair_sql, "analyse_pair", failing_first)
    schemas = domain_schemas(cases, case_set.domain)
    analysed = ev.safe_analyse_items(case_set, items, {}, schemas)
    assert analysed.failed == [i.item_id for i in items if i.case_id == cases[0].id]
    assert {a.case_id for a in analysed.analyses} == {cases[1].id}


def test_a_second_run_reuses_the_stored_analyses_of_identical_sql(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path, tmp_path: Path
) -> None:
    """Stored once in the results store, the analyses of a pair are read back, equal, by a
    later run of the same SQL; other SQL, another schema or other code is analysed afresh."""
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:6]
    items = [i for i in build_items(case_set, {}, "main") if i.case_id in {c.id for c in cases}]
    schemas = domain_schemas(cases, case_set.domain)
    store = ResultsStore(tmp_path / "results")
    first = ev.safe_analyse_items(case_set, items, {}, schemas, ev.load_cache(store))
    assert ev.save_cache(store, first.made) == len(cases)
    calls = _count_pairs(monkeypatch)
    again = ev.safe_analyse_items(case_set, items, {}, schemas, ev.load_cache(store))
    assert calls == [] and again.reused == len(cases) and again.made == {}
    assert again.analyses == first.analyses
    response = AskResponse(sql="SELECT 2")
    answered = {
        items[0].item_id: ItemOutcome(items[0].item_id, response, None, None, 200, None, 1, 0.0)
    }
    other = ev.safe_analyse_items(case_set, items, answered, schemas, ev.load_cache(store))
    # the new pair's gold was stored (as the gold with no candidate): only its candidate is read
    assert calls == [] and other.reused == len(cases) - 1 and other.golds_reused == 1
    assert other.analyses == ev.safe_analyse_items(case_set, items, answered, schemas).analyses
    key = cache_key(cases[0].gold_sql, None, "duckdb", schemas[cases[0].db_id], "c")
    assert key != cache_key(cases[0].gold_sql, None, "duckdb", schemas[cases[0].db_id], "d")


def test_a_second_configuration_reuses_the_gold_analyses_of_the_first(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path, tmp_path: Path
) -> None:
    """A configuration answering every case differently from the first analyses no gold again:
    each gold's analysis was stored on its own with the first run's pairs, and the pairs made
    from it equal those made from scratch."""
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:12]
    items = [i for i in build_items(case_set, {}, "main") if i.case_id in {c.id for c in cases}]
    schemas = domain_schemas(cases, case_set.domain)

    def answering(sqls: list[str]) -> dict[str, ItemOutcome]:
        return {
            i.item_id: ItemOutcome(i.item_id, AskResponse(sql=sql), None, None, 200, None, 1, 0.0)
            for i, sql in zip(items, sqls, strict=True)
        }

    # answers are other cases' gold queries: rich SQL, most of it wrong for the question
    first_answers = answering([c.gold_sql for c in cases[1:] + cases[:1]])
    second_answers = answering([c.gold_sql for c in cases[2:] + cases[:2]])
    store = ResultsStore(tmp_path / "results")
    first = ev.safe_analyse_items(case_set, items, first_answers, schemas, ev.load_cache(store))
    assert ev.save_cache(store, first.made) == 2 * len(cases)  # each pair, and each gold alone
    fresh = ev.safe_analyse_items(case_set, items, second_answers, schemas)
    calls = _count_pairs(monkeypatch)
    second = ev.safe_analyse_items(case_set, items, second_answers, schemas, ev.load_cache(store))
    assert calls == [] and second.reused == 0 and second.golds_reused == len(cases)
    assert second.analyses == fresh.analyses
    assert any(a.candidate_components for a in second.analyses)


def test_analyses_and_twins_spread_over_processes_equal_those_made_in_one(
    warehouse: Path,
) -> None:
    """A large batch is cut into parts analysed by fresh interpreters: every analysis, every
    failure and every twin comes back in order, equal to the one-process result (here forced
    on the demo's cases; by default from 500 analyses)."""
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:40]
    broken = dataclasses.replace(cases[1], gold_sql="SELECT FROM WHERE (")
    case_set = dataclasses.replace(case_set, cases=(cases[0], broken, *cases[2:]))
    items = build_items(case_set, {}, "all")
    answered = {
        i.item_id: ItemOutcome(i.item_id, AskResponse(sql=sql), None, None, 200, None, 1, 0.0)
        for i, sql in zip(items, ["SELECT 2", "SELECT nonsense FROM", None] * 40, strict=False)
        if sql is not None
    }
    schemas = domain_schemas(case_set.cases, case_set.domain)
    one = ev._analyse_all(case_set, items, answered, schemas, {}, True, spread_from=10**9)
    spread = ev._analyse_all(
        case_set, items, answered, schemas, {}, True, spread_from=0, startup_jobs=0
    )
    assert spread == one and one.failed == [i.item_id for i in items if i.case_id == broken.id]
    assert len(one.analyses) == len(items) - 3
    twins_one = find_twins(case_set.cases, case_set.domain, spread_from=10**9)
    assert find_twins(case_set.cases, case_set.domain, spread_from=0, startup_jobs=0) == twins_one


def test_twins_reuse_the_gold_readings_of_earlier_runs(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path, tmp_path: Path
) -> None:
    """The items stage reads each gold once and keeps its canonical form and its analysis in
    the store: a later run of the same cases reads no gold and finds the same twins; an edited
    gold is read again; the analyse stage then analyses only candidates, and its analyses equal
    those made from scratch."""
    case_set = demo_cases(warehouse)
    store = ResultsStore(tmp_path / "results")
    first, reused = twins(store, case_set)
    assert reused == 0 and first == find_twins(case_set.cases, case_set.domain)
    assert any(first.values())  # the demo has twins, so equality says something
    calls: list[Any] = []
    real = items_stage.read_gold

    def counting(job: Any) -> Any:
        calls.append(job[0])
        return real(job)

    monkeypatch.setattr(items_stage, "read_gold", counting)
    again, reused = twins(store, case_set)
    assert again == first and reused == len(case_set.cases) and calls == []
    twin = next(case for case in case_set.cases if first[case.id])
    edited = dataclasses.replace(twin, gold_sql=twin.gold_sql + " LIMIT 3")
    changed = dataclasses.replace(
        case_set, cases=tuple(edited if c.id == twin.id else c for c in case_set.cases)
    )
    third, reused = twins(store, changed)
    assert calls == [edited.gold_sql] and reused == len(case_set.cases) - 1
    assert third == find_twins(changed.cases, changed.domain) and not third[twin.id]
    items = build_items(case_set, first, "all")
    answered = {
        i.item_id: ItemOutcome(i.item_id, AskResponse(sql=sql), None, None, 200, None, 1, 0.0)
        for i, sql in zip(items, [c.gold_sql for c in case_set.cases[1:]] * 3, strict=False)
    }
    schemas = domain_schemas(case_set.cases, case_set.domain)
    pairs: list[Any] = []
    monkeypatch.setattr(pair_sql, "analyse_pair", lambda *a, **k: pairs.append(a))
    parsed: list[str] = []
    real_parse = pair_sql.parse_one_query

    def parsing(sql: str, dialect: str) -> Any:
        parsed.append(sql)
        return real_parse(sql, dialect)

    monkeypatch.setattr(pair_sql, "parse_one_query", parsing)
    analysed = ev.safe_analyse_items(case_set, items, answered, schemas, ev.load_cache(store))
    assert pairs == [] and analysed.golds_reused > 0
    # Each candidate parsed once; no gold again (its clauses came with its stored analysis).
    asked = {
        (item.case_id, outcome.response.sql)
        for item in items
        if (outcome := answered.get(item.item_id)) is not None and outcome.response is not None
    }
    assert len(parsed) == len(asked)
    monkeypatch.undo()
    fresh = ev.safe_analyse_items(case_set, items, answered, schemas)
    assert (analysed.analyses, analysed.failed) == (fresh.analyses, fresh.failed)
