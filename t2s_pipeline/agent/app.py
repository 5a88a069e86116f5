"""The baseline agent as a Starlette app serving SPEC section 14 and ``/openapi.json``.

Bad requests get a 4xx with a message (400 not JSON, 413 too large, 422 wrong shape); a failing
LLM backend gets 502; nothing a client sends can cause a 5xx otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from t2s_pipeline.agent.documents import demo_tables, example_bank, table_documents
from t2s_pipeline.agent.generation import GenerationError, Generator, NearestExample
from t2s_pipeline.agent.llm import ChatCompletions, LlmConfig
from t2s_pipeline.agent.openapi import openapi_document
from t2s_pipeline.agent.retrieval import Retriever
from t2s_pipeline.cases import CaseSet, load_cases
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

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class AgentSettings:
    """How many tables and examples to offer, the body limit, and the optional LLM backend."""

    tables_k: int = 4
    examples_k: int = 3
    max_body_bytes: int = 64_000
    llm: LlmConfig | None = None

    def __post_init__(self) -> None:
        if self.tables_k < 0 or self.examples_k < 0:
            raise SutError("tables_k and examples_k must be 0 or more")


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def build_app(
    cases: CaseSet | Path | str,
    tables: Sequence[OfferedTable | tuple[str, str]] | None = None,
    settings: AgentSettings | None = None,
) -> Starlette:
    """The agent for a case set (or its folder); ``tables`` default to the demo DDL documents
    of the domain's allowed schemas.

    >>> app = build_app("cases/erp")  # doctest: +SKIP
    """
    settings = settings or AgentSettings()
    case_set = cases if isinstance(cases, CaseSet) else load_cases(cases)
    documents = (
        demo_tables(case_set.domain.allowed_schemas) if tables is None else table_documents(tables)
    )
    retriever = Retriever(documents, example_bank(case_set), settings.tables_k, settings.examples_k)
    generator: Generator = NearestExample()
    if settings.llm is not None:
        generator = ChatCompletions(settings.llm, case_set.domain.dialect)
    return Starlette(
        routes=_routes(_Agent(retriever, generator, settings.max_body_bytes, openapi_document()))
    )


@dataclass(frozen=True)
class _Agent:
    retriever: Retriever
    generator: Generator
    max_body_bytes: int
    document: dict[str, Any]

    async def health(self, request: Request) -> Response:
        return _json(Health(status="ok", supports_exclusions=True))

    async def openapi(self, request: Request) -> Response:
        return _json(self.document)

    async def retrieve(self, request: Request) -> Response:
        try:
            body = await _read(request, RetrieveRequest, self.max_body_bytes)
        except _BadRequest as bad:
            return _error(bad)
        return _json(self.retriever.retrieve(body.question, body.exclude_examples))

    async def ask(self, request: Request) -> Response:
        try:
            body = await _read(request, AskRequest, self.max_body_bytes)
        except _BadRequest as bad:
            return _error(bad)
        offered = self.retriever.retrieve(body.question, body.exclude_examples)
        try:
            answer = await self.generator.generate(body.question, body.evidence, offered)
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


async def _read(request: Request, model: type[M], limit: int) -> M:
    """Read and validate a JSON body, refusing it before it grows past ``limit`` bytes."""
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
        return model.model_validate(data)
    except ValidationError as error:
        raise _BadRequest(422, describe_validation(error)) from None


def _json(payload: BaseModel | dict[str, Any], status: int = 200) -> Response:
    data = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
    return Response(json.dumps(data), status_code=status, media_type="application/json")


def _error(bad: _BadRequest) -> Response:
    return _json(ErrorBody(error=bad.message), bad.status)
