"""The section 14 messages, and field names an existing service may use instead."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.client import Item
from t2s_pipeline.sut.contract import (
    AskRequest,
    AskResponse,
    FieldNames,
    Paths,
    RetrieveResponse,
    from_wire,
    to_wire,
)
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient

RENAMED = FieldNames(
    question="query",
    exclude_examples="skip_ids",
    sql="generated_sql",
    refused="declined",
    retrieval="context",
    table_name="table",
    ddl="schema_text",
    supports_exclusions="can_exclude",
)


def test_default_names_are_section_14() -> None:
    """With no configuration the wire is exactly the contract."""
    request = AskRequest(question="q", exclude_examples=("a", "b"), run_id="r-1")
    assert to_wire(request, FieldNames()) == {
        "question": "q",
        "exclude_examples": ["a", "b"],
        "run_id": "r-1",
    }


def test_evidence_travels_only_when_set() -> None:
    """Strict services that reject unknown fields still work when there is no evidence."""
    request = AskRequest(question="q", evidence="net = before tax")
    assert to_wire(request, FieldNames())["evidence"] == "net = before tax"


def test_renamed_fields_round_trip_nested() -> None:
    """Nested names (a table's name and DDL) are renamed too."""
    wire = {
        "generated_sql": "SELECT 1",
        "declined": False,
        "context": {"tables": [{"table": "sales.orders", "schema_text": "DDL"}], "examples": []},
    }
    response = from_wire(wire, AskResponse, RENAMED)
    assert response.sql == "SELECT 1"
    assert response.retrieval is not None
    assert response.retrieval.tables[0].name == "sales.orders"
    assert to_wire(response, RENAMED) == wire


@pytest.mark.parametrize(
    "wire",
    [
        {},  # sql missing: a misnamed field must not read as "no SQL"
        {"sql": 1},
        {"sql": "x", "refused": "yes"},
        {"sql": "x", "retrieval": {"tables": "sales.orders"}},
        ["SELECT 1"],
        None,
    ],
)
def test_responses_that_do_not_fit_are_rejected(wire: object) -> None:
    """Wrong types are errors (invalid_response), never coerced into an answer."""
    with pytest.raises(ValueError):
        from_wire(wire, AskResponse, FieldNames())


def test_retrieve_response_needs_tables_and_examples() -> None:
    """The probe answer has both lists; an example carries its question and SQL."""
    with pytest.raises(ValueError, match="examples"):
        from_wire({"tables": []}, RetrieveResponse, FieldNames())


def test_unknown_field_role_is_a_configuration_error() -> None:
    """A typo in the field-name mapping is reported with the valid roles."""
    with pytest.raises(SutError, match="quesion"):
        FieldNames.from_mapping({"quesion": "query"})
    assert FieldNames.from_mapping({"sql": "generated_sql"}).sql == "generated_sql"


async def _renamed_ask(request: Request) -> Response:
    body = await request.json()
    if set(body) != {"query", "skip_ids", "run_id"}:
        return JSONResponse({"detail": f"unexpected fields {sorted(body)}"}, 422)
    trace = {"tables": [{"table": "sales.orders", "schema_text": ""}], "examples": []}
    return JSONResponse({"generated_sql": f"-- {body['query']}", "context": trace})


async def _renamed_health(request: Request) -> Response:
    return JSONResponse({"status": "ok", "can_exclude": False})


@pytest.fixture()
def renamed_url() -> Iterator[str]:
    """An existing service with its own field names and paths, and no retrieve endpoint."""
    app = Starlette(
        routes=[
            Route("/api/answer", _renamed_ask, methods=["POST"]),
            Route("/healthz", _renamed_health, methods=["GET"]),
        ]
    )
    with serve_in_thread(app) as url:
        yield url


def test_existing_service_is_evaluated_unchanged(renamed_url: str) -> None:
    """Other field names and paths, no retrieve endpoint: answers read, no probe made."""
    paths = Paths(ask="/api/answer", retrieve=None, health="/healthz")
    client = HttpSutClient(HttpSettings(renamed_url, field_names=RENAMED, paths=paths))
    assert client.health().supports_exclusions is False and client.isolated is False
    items = [Item("a#0", "a", 0, "How many orders?", ("a",))]
    outcome = asyncio.run(client.ask_all(items, "r"))[0]
    client.close()
    assert outcome.response is not None, outcome.message
    assert outcome.response.sql == "-- How many orders?"
    assert outcome.probe is None and outcome.probe_error_class is None


def _health_app() -> Starlette:
    async def broken(request: Request) -> Response:
        return JSONResponse({"error": "down"}, 503)

    async def garbage(request: Request) -> Response:
        return Response("<html>", media_type="text/html")

    async def silent(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    return Starlette(
        routes=[
            Route("/broken", broken, methods=["GET"]),
            Route("/garbage", garbage, methods=["GET"]),
            Route("/silent", silent, methods=["GET"]),
        ]
    )


@pytest.mark.parametrize(("path", "problem"), [("/broken", "HTTP 503"), ("/garbage", "health")])
def test_a_bad_health_stops_the_run_with_a_reason(path: str, problem: str) -> None:
    """A SUT that cannot say it is up is not evaluated: the error names URL and status."""
    with serve_in_thread(_health_app()) as url:
        client = HttpSutClient(HttpSettings(url, paths=Paths(health=path)))
        with pytest.raises(SutError, match=problem):
            client.health()
        client.close()


def test_a_health_that_does_not_mention_exclusions_is_not_isolated() -> None:
    """Silence is not a promise: items count under not_isolated."""
    with serve_in_thread(_health_app()) as url:
        client = HttpSutClient(HttpSettings(url, paths=Paths(health="/silent")))
        client.health()
        client.close()
    assert client.isolated is False
