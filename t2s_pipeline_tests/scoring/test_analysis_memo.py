"""The analysis stage parses each case's gold once, however many phrasings ask it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.run import analyse as ev
from t2s_pipeline.sql.schema import domain_schemas
from t2s_pipeline.sut.client import build_items

REPO = Path(__file__).resolve().parents[2]


def demo_cases(warehouse: Path) -> CaseSet:
    """The demo cases read against the session's warehouse (a fresh checkout has no .t2s/)."""
    case_set = load_cases(REPO / "cases" / "erp")
    domain = dataclasses.replace(case_set.domain, database=str(warehouse))
    return dataclasses.replace(case_set, domain=domain)


def test_safe_analyse_items_shares_one_memo_across_items(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path
) -> None:
    """Three phrasings with the same (absent) SQL are one analysis; the asset path used to
    analyse every item on its own."""
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:5]
    items = [i for i in build_items(case_set, {}, "all") if i.case_id in {c.id for c in cases}]
    assert len(items) == 3 * len(cases)
    calls: list[Any] = []
    real = ev.analyse_pair

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(ev, "analyse_pair", counting)
    schemas = domain_schemas(cases, case_set.domain)
    analyses, failed = ev.safe_analyse_items(case_set, items, {}, schemas)
    assert not failed and [a.item_id for a in analyses] == [i.item_id for i in items]
    assert len(calls) == len(cases)


def test_a_gold_that_cannot_be_analysed_skips_its_items_only(
    monkeypatch: pytest.MonkeyPatch, warehouse: Path
) -> None:
    case_set = demo_cases(warehouse)
    cases = case_set.cases[:2]
    items = [i for i in build_items(case_set, {}, "all") if i.case_id in {c.id for c in cases}]
    real = ev.analyse_pair

    def failing_first(gold: str, *args: Any, **kwargs: Any) -> Any:
        if gold == cases[0].gold_sql:
            raise ev.SqlAnalysisError("cannot parse")
        return real(gold, *args, **kwargs)

    monkeypatch.setattr(ev, "analyse_pair", failing_first)
    schemas = domain_schemas(cases, case_set.domain)
    analyses, failed = ev.safe_analyse_items(case_set, items, {}, schemas)
    assert failed == [i.item_id for i in items if i.case_id == cases[0].id]
    assert {a.case_id for a in analyses} == {cases[1].id}
