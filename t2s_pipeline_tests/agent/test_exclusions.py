"""Leave-one-out over real HTTP (SPEC section 4): an excluded case and its twins never come back.

Run over the sample cases, and over the whole demo set when ``cases/erp`` holds cases. For the
demo set the twins are the real ones (``find_twins``, when the warehouse is built) plus cases
with the same whitespace-normalised gold SQL, so any case whose SQL could come back verbatim is
excluded together with its twin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path

import pytest

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.errors import T2SError
from t2s_pipeline.sut.client import ItemOutcome, build_items
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set

DEMO = Path(__file__).resolve().parents[2] / "cases" / "erp"


def _text_twins(case_set: CaseSet) -> dict[str, frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for case in case_set.cases:
        groups.setdefault(" ".join(case.gold_sql.lower().split()), set()).add(case.id)
    return {
        case.id: frozenset(groups[" ".join(case.gold_sql.lower().split())] - {case.id})
        for case in case_set.cases
    }


def _canonical_twins(case_set: CaseSet) -> dict[str, frozenset[str]]:
    try:
        from t2s_pipeline.sql.canonical import find_twins

        return find_twins(case_set.cases, case_set.domain)
    except (T2SError, ImportError):  # no warehouse built: text twins only
        return {}


def _demo() -> tuple[CaseSet, Mapping[str, frozenset[str]]] | None:
    if not (DEMO / "domain.yaml").exists():
        return None
    case_set = load_cases(DEMO)
    if not case_set.cases:
        return None
    canonical = _canonical_twins(case_set)
    text = _text_twins(case_set)
    return case_set, {c: text[c] | canonical.get(c, frozenset()) for c in text}


def _run(case_set: CaseSet, twins: Mapping[str, frozenset[str]], k: int) -> list[ItemOutcome]:
    app = build_app(case_set, settings=AgentSettings(tables_k=4, examples_k=k))
    items = build_items(case_set, twins)
    with serve_in_thread(app) as url, HttpSutClient(HttpSettings(url, concurrency=8)) as client:
        outcomes = asyncio.run(client.ask_all(items, "loo"))
    assert [o.item_id for o in outcomes] == [i.item_id for i in items]
    return outcomes


def _assert_isolated(
    case_set: CaseSet, twins: Mapping[str, frozenset[str]], outcomes: list[ItemOutcome]
) -> None:
    sql_of = {case.id: case.gold_sql for case in case_set.cases}
    for outcome in outcomes:
        case_id = outcome.item_id.split("#")[0]
        excluded = {case_id, *twins[case_id]}
        banned = {sql_of[c] for c in excluded}
        assert outcome.response is not None and outcome.probe is not None, outcome.message
        assert outcome.response.retrieval is not None
        used = {e.id for e in outcome.response.retrieval.examples}
        probed = {e.id for e in outcome.probe.examples}
        assert not (used | probed) & excluded, outcome.item_id
        assert not {e.sql for e in outcome.probe.examples} & banned, outcome.item_id
        assert outcome.response.sql not in banned, outcome.item_id


@pytest.mark.parametrize("k", [3, 50])
def test_sample_set_never_returns_an_excluded_case(k: int) -> None:
    """Every phrasing of every sample case, with twins, at the default and a huge k."""
    case_set = sample_case_set()
    _assert_isolated(case_set, TWINS, _run(case_set, TWINS, k))


def test_demo_set_never_returns_an_excluded_case() -> None:
    """The same guarantee over the whole demo gold set, all phrasings."""
    demo = _demo()
    if demo is None:
        pytest.skip("cases/erp has no cases yet")
    case_set, twins = demo
    _assert_isolated(case_set, twins, _run(case_set, twins, 3))


def test_without_isolation_the_case_itself_is_the_nearest_example() -> None:
    """The control: with no exclusions the main question retrieves its own case, which is
    exactly what leave-one-out must prevent."""
    case_set = sample_case_set()
    app = build_app(case_set)
    items = build_items(case_set, TWINS, phrasings="main", isolate=False)
    with serve_in_thread(app) as url, HttpSutClient(HttpSettings(url)) as client:
        outcomes = asyncio.run(client.ask_all(items, "control"))
    own = [
        o.response.retrieval.examples[0].id == o.item_id.split("#")[0]
        for o in outcomes
        if o.response is not None and o.response.retrieval is not None
    ]
    assert len(own) == len(items) and all(own)
