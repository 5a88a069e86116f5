"""The schema-linking agent's knobs (configs' ``sut:`` fields) and what it may read.

The knobs are configuration fields that reach the agent unchanged and each change what it
answers; the agent composes from the offered tables, and a case's gold SQL reaches it only as
an allowed retrieved example, never once the case is excluded.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.documents import demo_tables
from t2s_pipeline.agent.knowledge import read_knowledge
from t2s_pipeline.agent.linking import SchemaLinking
from t2s_pipeline.agent.retrieval import Retriever
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.cases import CaseSet
from t2s_pipeline.config import BUILTIN_KNOBS, load_config
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sut.client import build_items
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set

REPO = Path(__file__).resolve().parents[2]
AS_OF = dt.date(2025, 6, 30)
DOCUMENTS = demo_tables(("sales", "finance", "inventory"))


def _answer(question: str, use_comments: bool = True, date_windows: str = "calendar") -> str:
    """The agent's SQL over the demo tables, no examples and no sampled values."""
    agent = SchemaLinking(read_knowledge(DOCUMENTS, use_comments), "duckdb", AS_OF, date_windows)
    offered = Retriever(DOCUMENTS, (), tables_k=4, examples_k=0).retrieve(question)
    generation = agent.answer(question, offered)
    assert generation.sql is not None, generation.message
    return generation.sql


def _where(sql: str) -> exp.Expr | None:
    where = sqlglot.parse_one(sql, read="duckdb").args.get("where")
    return None if where is None else where.this


def _filtered_columns(sql: str) -> set[str]:
    where = _where(sql)
    return set() if where is None else {c.name for c in where.find_all(exp.Column)}


def _strings(sql: str) -> set[str]:
    where = _where(sql)
    if where is None:
        return set()
    return {lit.this for lit in where.find_all(exp.Literal) if lit.is_string}


def test_baseline_config_uses_the_schema_linking_agent_with_every_knob() -> None:
    """configs/baseline.yaml names the default agent and writes every knob out."""
    config = load_config(REPO / "configs" / "baseline.yaml")
    assert config.sut.kind == "builtin" and config.sut.generation == "schema_linking"
    assert set(BUILTIN_KNOBS) <= config.sut.model_fields_set
    settings = AgentSettings.from_sut(config.sut)
    assert {k: getattr(settings, k) for k in BUILTIN_KNOBS} == {
        k: getattr(config.sut, k) for k in BUILTIN_KNOBS
    }
    nearest = load_config(REPO / "configs" / "inactive" / "nearest-example.yaml")
    assert nearest.sut.generation == "nearest_example" and nearest.sut.isolate


@pytest.mark.parametrize(
    "knob, value",
    [
        ("generation", "nearest_example"),
        ("tables_k", 2),
        ("examples_k", 1),
        ("use_comments", False),
        ("use_examples", False),
        ("date_windows", "rolling"),
    ],
)
def test_each_knob_is_part_of_the_run_id(knob: str, value: object, tmp_path: Path) -> None:
    """Changing one knob is another experiment: another partition, never an overwrite."""
    base = tmp_path / "base.yaml"
    base.write_text("name: k\nsut:\n  kind: builtin\n")
    changed = tmp_path / "changed.yaml"
    changed.write_text(f"name: k\nsut:\n  kind: builtin\n  {knob}: {str(value).lower()}\n")
    assert getattr(load_config(changed).sut, knob) == value
    assert load_config(base).run_id("0" * 64) != load_config(changed).run_id("0" * 64)


@pytest.mark.parametrize("knob", BUILTIN_KNOBS)
def test_knobs_are_refused_for_another_kind_of_sut(knob: str, tmp_path: Path) -> None:
    """An HTTP system under test has its own settings: a built-in knob there is a mistake."""
    value = {"generation": "nearest_example", "date_windows": "rolling"}.get(knob, "2")
    path = tmp_path / "http.yaml"
    path.write_text(f"name: h\nsut:\n  kind: http\n  url: http://127.0.0.1:1\n  {knob}: {value}\n")
    with pytest.raises(ConfigError, match=f"sut.{knob}"):
        load_config(path)


def test_unknown_knob_values_are_refused(tmp_path: Path) -> None:
    """A misspelt generation or window reading names the field."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: b\nsut:\n  kind: builtin\n  date_windows: fiscal\n")
    with pytest.raises(ConfigError, match="sut.date_windows"):
        load_config(path)


def test_schema_notes_carry_the_codes() -> None:
    """'web shop' is W and 'card' is CC or DC only in the column comments: with notes off the
    agent cannot place those filters."""
    web = "How many orders came through the web shop?"
    assert _filtered_columns(_answer(web)) == {"channel_cd"}
    assert _strings(_answer(web)) == {"W"}
    assert _filtered_columns(_answer(web, use_comments=False)) == set()
    card = "Total card payments received"
    assert _strings(_answer(card)) == {"CC", "DC"}
    assert _strings(_answer(card, use_comments=False)) == set()


def test_date_windows_read_last_month_two_ways() -> None:
    """Calendar: the previous calendar month, half open. Rolling: the 30 days up to as_of."""
    question = "How many orders were there last month?"
    assert _strings(_answer(question)) == {"2025-05-01", "2025-06-01"}
    assert _strings(_answer(question, date_windows="rolling")) == {"2025-06-01"}
    # A period that names its dates reads the same either way.
    named = "How many orders were there in Q1 2025?"
    assert _strings(_answer(named)) == _strings(_answer(named, date_windows="rolling"))


def test_use_examples_off_retrieves_and_adapts_no_example() -> None:
    """With ``use_examples: false`` nothing is retrieved, so nothing can be adapted."""
    case_set = sample_case_set()
    items = build_items(case_set, TWINS, isolate=False)
    for settings, used in ((AgentSettings(), True), (AgentSettings(use_examples=False), False)):
        app = build_app(case_set, settings=settings)
        with serve_in_thread(app) as url, HttpSutClient(HttpSettings(url)) as client:
            outcomes = asyncio.run(client.ask_all(items, "examples"))
        responses = [o.response for o in outcomes if o.response is not None]
        assert len(responses) == len(items)
        examples = [e for r in responses if r.retrieval for e in r.retrieval.examples]
        adapted = [r for r in responses if (r.message or "").startswith("adapted example")]
        assert bool(examples) == used and bool(adapted) == used


def _poisoned(case_set: CaseSet, case_ids: set[str]) -> CaseSet:
    """The same cases, the named ones with another gold SQL."""
    cases = tuple(
        dataclasses.replace(c, gold_sql="SELECT 42 AS poisoned FROM sales.orders")
        if c.id in case_ids
        else c
        for c in case_set.cases
    )
    return dataclasses.replace(case_set, cases=cases)


def _ask(
    case_set: CaseSet, settings: AgentSettings, case_id: str, isolate: bool
) -> list[str | None]:
    items = [i for i in build_items(case_set, TWINS, isolate=isolate) if i.case_id == case_id]
    with (
        serve_in_thread(build_app(case_set, settings=settings)) as url,
        HttpSutClient(HttpSettings(url)) as client,
    ):
        outcomes = asyncio.run(client.ask_all(items, "poison"))
    assert len(outcomes) == len(items)
    return [o.response.sql if o.response else None for o in outcomes]


@pytest.mark.parametrize("generation", ["schema_linking", "nearest_example"])
def test_an_excluded_case_gold_sql_cannot_change_the_answer(generation: str) -> None:
    """Leave-one-out as the agent sees it: change the gold SQL of the case asked (and of its
    twins) and every answer stays the same, because an excluded case is read nowhere."""
    case_set, settings = sample_case_set(), AgentSettings(generation=generation)  # type: ignore[arg-type]
    for case in case_set.cases:
        poisoned = _poisoned(case_set, {case.id, *TWINS[case.id]})
        answers = _ask(case_set, settings, case.id, isolate=True)
        assert answers == _ask(poisoned, settings, case.id, isolate=True), case.id
        assert not any("poisoned" in (sql or "") for sql in answers), case.id


def test_without_exclusions_the_poisoned_sql_does_come_back() -> None:
    """The control of the test above: not excluded, the case is its own nearest example, and
    the nearest-example agent answers with its (poisoned) SQL, so the test above would see a
    leak."""
    case_set = sample_case_set()
    case = case_set.cases[0]
    poisoned = _poisoned(case_set, {case.id})
    answers = _ask(poisoned, AgentSettings(generation="nearest_example"), case.id, isolate=False)
    assert answers and all("poisoned" in (sql or "") for sql in answers)
