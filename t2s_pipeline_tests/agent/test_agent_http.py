"""The agent answers SPEC section 14 shapes over real loopback HTTP, and 4xx for bad input."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import sqlglot
from openapi_spec_validator import validate
from sqlglot import exp

from t2s_pipeline.agent.generation import NOTHING_ALLOWED
from t2s_pipeline.agent.linking import NOTHING_LINKED
from t2s_pipeline.agent.openapi import openapi_document
from t2s_pipeline.sut.client import build_items
from t2s_pipeline.sut.fingerprint import agent_version
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set

ALL_IDS = [case.id for case in sample_case_set().cases]


def test_health_says_the_agent_can_exclude(agent_url: str) -> None:
    """The client reads isolation from health; the agent honours exclusions."""
    body = httpx.get(f"{agent_url}/v1/health").json()
    assert body == {"status": "ok", "supports_exclusions": True, "version": agent_version()}
    assert len(agent_version()) == 12  # a hash of the agent's source: a changed agent, a new run


def test_ask_answers_the_contract_shape(agent_url: str) -> None:
    """Exactly the section 14 fields, with the right JSON types."""
    request = {"question": "What is the number of orders?", "exclude_examples": [], "run_id": "r"}
    response = httpx.post(f"{agent_url}/v1/ask", json=request)
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"sql", "refused", "message", "retrieval"}
    assert isinstance(body["sql"], str) and body["refused"] is False
    assert set(body["retrieval"]) == {"tables", "examples"}
    assert all(set(t) == {"name", "ddl"} for t in body["retrieval"]["tables"])
    assert all(set(e) == {"id"} for e in body["retrieval"]["examples"])
    assert body["retrieval"]["examples"][0]["id"] in {"orders-count", "orders-total"}


def test_retrieve_answers_the_contract_shape(agent_url: str) -> None:
    """The probe endpoint returns tables with DDL and examples with question and SQL."""
    request = {"question": "Sum the net amount of all invoices.", "exclude_examples": []}
    body = httpx.post(f"{agent_url}/v1/retrieve", json=request).json()
    assert set(body) == {"tables", "examples"}
    assert body["tables"][0]["name"] == "finance.invoices"
    assert body["examples"][0] == {
        "id": "invoice-net",
        "question": "What is the total net amount invoiced?",
        "sql": "SELECT sum(net_amount) FROM finance.invoices",
    }


def test_ask_answers_with_the_nearest_allowed_example(nearest_url: str) -> None:
    """The classic baseline (``generation: nearest_example``): the nearest example's gold SQL
    is the answer."""
    request = {"question": "Number of items per category.", "exclude_examples": []}
    body = httpx.post(f"{nearest_url}/v1/ask", json=request).json()
    assert body["sql"] == "SELECT category, count(*) FROM sales.items GROUP BY category"


def test_nearest_example_refuses_when_every_example_is_excluded(nearest_url: str) -> None:
    """With nothing allowed there is nothing to copy: a refusal with its reason."""
    request = {"question": "How many orders were placed?", "exclude_examples": ALL_IDS}
    body = httpx.post(f"{nearest_url}/v1/ask", json=request).json()
    assert body["refused"] is True and body["sql"] is None
    assert body["message"] == NOTHING_ALLOWED
    assert body["retrieval"]["examples"] == []


def test_schema_linking_composes_when_every_example_is_excluded(agent_url: str) -> None:
    """The default agent needs no example: from the offered tables alone it writes its own
    query, which is none of the (excluded) gold queries."""
    request = {"question": "How many orders were placed?", "exclude_examples": ALL_IDS}
    body = httpx.post(f"{agent_url}/v1/ask", json=request).json()
    assert body["refused"] is False and body["retrieval"]["examples"] == []
    assert body["message"].startswith("composed over sales.orders")
    tree = sqlglot.parse_one(body["sql"], read="duckdb")
    assert [f"{t.db}.{t.name}" for t in tree.find_all(exp.Table)] == ["sales.orders"]
    assert [type(e.unalias()) for e in tree.expressions] == [exp.Count]
    assert body["sql"] not in {case.gold_sql for case in sample_case_set().cases}


def test_schema_linking_refuses_when_no_offered_table_links(agent_url: str) -> None:
    """Nothing offered, nothing to link: a refusal with its reason, not a guess."""
    request = {"question": "zebra giraffe", "exclude_examples": []}
    body = httpx.post(f"{agent_url}/v1/ask", json=request).json()
    assert body["refused"] is True and body["sql"] is None
    assert body["message"] == NOTHING_LINKED
    assert body["retrieval"] == {"tables": [], "examples": []}


BAD_BODIES = {
    "malformed json": b'{"question": ',
    "not utf-8": b"\xff\xfe{}",
    "not an object": b'["How many orders?"]',
    "missing question": b'{"exclude_examples": []}',
    "question not a string": b'{"question": 42}',
    "blank question": b'{"question": "   "}',
    "exclusions not a list": b'{"question": "orders", "exclude_examples": "orders-count"}',
    "exclusion not a string": b'{"question": "orders", "exclude_examples": [1]}',
    "deeply nested": b"[" * 50_000,
    "huge question": json.dumps({"question": "orders " * 20_000}).encode(),
    "huge payload": b'{"question": "' + b"x" * 200_000 + b'"}',
    "huge integer": b'{"question": ' + b"9" * 10_000 + b"}",
}


@pytest.mark.parametrize("path", ["/v1/ask", "/v1/retrieve"])
@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_requests_get_a_4xx_with_a_message(agent_url: str, path: str, name: str) -> None:
    """Client mistakes are the client's: a 4xx saying what is wrong, never a 5xx."""
    response = httpx.post(
        f"{agent_url}{path}", content=BAD_BODIES[name], headers={"content-type": "application/json"}
    )
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]


def test_ask_rejects_a_run_id_outside_the_run_id_alphabet(agent_url: str) -> None:
    """run_id is [a-z0-9-] (SPEC section 2); anything else is the caller's mistake."""
    request = {"question": "orders", "run_id": "Run 1!"}
    response = httpx.post(f"{agent_url}/v1/ask", json=request)
    assert response.status_code == 422 and "run_id" in response.json()["error"]


def test_wrong_method_is_a_4xx(agent_url: str) -> None:
    """A GET on ask is a 405, not a crash."""
    assert httpx.get(f"{agent_url}/v1/ask").status_code == 405


def test_openapi_document_is_valid_and_served(agent_url: str) -> None:
    """Tools (schemathesis, client generators) read the served document; it must validate."""
    served = httpx.get(f"{agent_url}/openapi.json").json()
    assert served == json.loads(json.dumps(openapi_document()))
    validate(served)
    assert set(served["paths"]) == {"/v1/ask", "/v1/retrieve", "/v1/health"}
    ask = served["paths"]["/v1/ask"]["post"]
    request_ref = ask["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert request_ref == "#/components/schemas/AskRequest"
    assert served["components"]["schemas"]["AskRequest"]["required"] == ["question"]


def test_http_client_runs_every_item_against_the_agent(agent_url: str) -> None:
    """End to end: every item answered, probe recorded, the agent reported as isolating."""
    items = build_items(sample_case_set(), TWINS)
    with HttpSutClient(HttpSettings(agent_url, concurrency=4)) as client:
        assert client.health().supports_exclusions and client.isolated
        outcomes = asyncio.run(client.ask_all(items, "run-1"))
    assert [o.item_id for o in outcomes] == [i.item_id for i in items]
    assert all(o.ok and o.probe is not None and o.attempts == 1 for o in outcomes)
