"""The baseline agent as a Starlette app serving SPEC section 14 and ``/openapi.json``.

Bad requests get a 4xx with a message (400 not JSON, 413 too large, 422 wrong shape); a failing
LLM backend gets 502; nothing a client sends can cause a 5xx otherwise.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from t2s_pipeline.agent.documents import domain_tables, example_bank, table_documents
from t2s_pipeline.agent.generation import AskContext, GenerationError, Generator, NearestExample
from t2s_pipeline.agent.knowledge import read_knowledge
from t2s_pipeline.agent.linking import SchemaLinking
from t2s_pipeline.agent.llm import ChatCompletions, LlmConfig
from t2s_pipeline.agent.openapi import openapi_document
from t2s_pipeline.agent.retrieval import Retriever
from t2s_pipeline.agent.values import ValueSample, sample_values
from t2s_pipeline.cases import CaseSet, Domain, load_cases
from t2s_pipeline.config import SutSettings
from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.contract import (
    AskRequest,
    AskResponse,
    ErrorBody,
    ExampleRef,
    Health,
    OfferedTable,
    RetrievalTrace,
    RetrieveRequest,
    describe_validation,
)
from t2s_pipeline.sut.fingerprint import agent_version

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class AgentSettings:
    """The agent's knobs: how it generates, how many tables and examples it is offered,
    whether it reads schema notes and uses examples, how it reads relative date windows; the
    body limit and the optional LLM backend (which replaces ``generation``)."""

    generation: Literal["schema_linking", "nearest_example"] = "schema_linking"
    tables_k: int = 4
    examples_k: int = 3
    use_comments: bool = True
    use_examples: bool = True
    date_windows: Literal["calendar", "rolling"] = "calendar"
    max_body_bytes: int = 64_000
    llm: LlmConfig | None = None

    def __post_init__(self) -> None:
        if self.tables_k < 0 or self.examples_k < 0:
            raise SutError("tables_k and examples_k must be 0 or more")
        if self.generation not in ("schema_linking", "nearest_example"):
            raise SutError(
                f"generation {self.generation!r} is unknown: use schema_linking or nearest_example"
            )
        if self.date_windows not in ("calendar", "rolling"):
            raise SutError(
                f"date_windows {self.date_windows!r} is unknown: use calendar or rolling"
            )

    @classmethod
    def from_sut(cls, sut: SutSettings) -> AgentSettings:
        """The built-in agent's settings from a configuration's ``sut:`` block."""
        return cls(
            generation=sut.generation,
            tables_k=sut.tables_k,
            examples_k=sut.examples_k,
            use_comments=sut.use_comments,
            use_examples=sut.use_examples,
            date_windows=sut.date_windows,
        )


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def build_app(
    cases: CaseSet | Path | str,
    tables: Sequence[OfferedTable | tuple[str, str]] | None = None,
    settings: AgentSettings | None = None,
    values: ValueSample | None = None,
) -> Starlette:
    """The agent for a case set (or its folder); ``tables`` default to the documents of the
    domain's allowed schemas (:func:`domain_tables`), ``values`` to a sample read from the
    domain's database.

    >>> app = build_app("cases/erp")  # doctest: +SKIP
    """
    settings = settings or AgentSettings()
    case_set = cases if isinstance(cases, CaseSet) else load_cases(cases)
    documents = domain_tables(case_set.domain) if tables is None else table_documents(tables)
    examples_k = settings.examples_k if settings.use_examples else 0
    retriever = Retriever(documents, example_bank(case_set), settings.tables_k, examples_k)
    return Starlette(
        routes=_routes(
            _Agent(
                retriever,
                _generator(case_set.domain, documents, settings, values),
                settings.max_body_bytes,
                openapi_document(),
            )
        )
    )


def _generator(
    domain: Domain,
    documents: Sequence[OfferedTable],
    settings: AgentSettings,
    values: ValueSample | None,
) -> Generator:
    """The generator behind ``/v1/ask``. It gets the domain (dialect, database, as_of) and the
    table documents, never the cases: gold SQL reaches it only as retrieved, allowed examples."""
    if settings.llm is not None:
        return ChatCompletions(settings.llm, domain.dialect)
    if settings.generation == "nearest_example":
        return NearestExample()
    sample = sample_values(domain) if values is None else values
    knowledge = read_knowledge(documents, settings.use_comments, sample)
    as_of = dt.date.fromisoformat(domain.as_of) if domain.as_of else dt.date.today()
    return SchemaLinking(
        knowledge, domain.dialect, as_of, settings.date_windows, settings.use_examples
    )


@dataclass(frozen=True)
class _Agent:
    retriever: Retriever
    generator: Generator
    max_body_bytes: int
    document: dict[str, Any]

    async def health(self, request: Request) -> Response:
        return _json(Health(status="ok", supports_exclusions=True, version=agent_version()))

    async def openapi(self, request: Request) -> Response:
        return _json(self.document)

    async def retrieve(self, request: Request) -> Response:
        try:
            body, _ = await _read(request, RetrieveRequest, self.max_body_bytes)
        except _BadRequest as bad:
            return _error(bad)
        return _json(self.retriever.retrieve(body.question, body.exclude_examples))

    async def ask(self, request: Request) -> Response:
        try:
            body, raw = await _read(request, AskRequest, self.max_body_bytes)
        except _BadRequest as bad:
            return _error(bad)
        offered = self.retriever.retrieve(body.question, body.exclude_examples)
        context = AskContext.from_body(raw)
        try:
            answer = await self.generator.generate(body.question, body.evidence, offered, context)
        except GenerationError as error:
            return _json(ErrorBody(error=str(error)), 502)
        trace = RetrievalTrace(
            tables=offered.tables, examples=tuple(ExampleRef(id=e.id) for e in offered.examples)
        )
        return _json(
            AskResponse(
                sql=answer.sql, refused=answer.refused, message=answer.message, retrieval=trace
            )
        )


def _routes(agent: _Agent) -> list[Route]:
    return [
        Route("/v1/health", agent.health, methods=["GET"]),
        Route("/v1/ask", agent.ask, methods=["POST"]),
        Route("/v1/retrieve", agent.retrieve, methods=["POST"]),
        Route("/openapi.json", agent.openapi, methods=["GET"]),
    ]


async def _read(request: Request, model: type[M], limit: int) -> tuple[M, dict[str, Any]]:
    """Read and validate a JSON body, refusing it before it grows past ``limit`` bytes; the
    raw object comes back too, for fields the contract model does not hold (``context``)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _BadRequest(413, f"body of {declared} bytes exceeds the limit of {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > limit:
            raise _BadRequest(413, f"body exceeds the limit of {limit} bytes")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as error:
        raise _BadRequest(400, f"body is not JSON: {error}") from None
    try:
        return model.model_validate(data), data if isinstance(data, dict) else {}
    except ValidationError as error:
        raise _BadRequest(422, describe_validation(error)) from None


def _json(payload: BaseModel | dict[str, Any], status: int = 200) -> Response:
    data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
    return Response(json.dumps(data), status_code=status, media_type="application/json")


def _error(bad: _BadRequest) -> Response:
    return _json(ErrorBody(error=bad.message), bad.status)
