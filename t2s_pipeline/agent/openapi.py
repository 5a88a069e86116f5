"""The agent's OpenAPI 3.1 document, generated from the contract models.

OpenAPI 3.1 schemas are JSON Schema 2020-12, which is what pydantic emits, so the request and
response schemas are the models themselves and cannot drift from what the agent validates.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from t2s_pipeline.sut.contract import (
    AskRequest,
    AskResponse,
    ErrorBody,
    Health,
    Paths,
    RetrieveRequest,
    RetrieveResponse,
)

_REF = "#/components/schemas/{model}"
_ERRORS = {
    "400": "body is not JSON",
    "413": "body too large",
    "422": "body does not match the request schema",
    "502": "the generation backend failed (LLM backend only)",
}


def openapi_document(paths: Paths | None = None, version: str = "0.1.0") -> dict[str, Any]:
    """The OpenAPI document describing health, ask and retrieve."""
    paths = paths or Paths()
    schemas: dict[str, Any] = {}
    for model in (AskRequest, AskResponse, RetrieveRequest, RetrieveResponse, Health, ErrorBody):
        _add_schema(schemas, model)
    operations: dict[str, Any] = {
        paths.health: {
            "get": _operation("health", "Is the agent up; can it exclude?", None, Health)
        },
        paths.ask: {"post": _operation("ask", "Answer one item", AskRequest, AskResponse)},
    }
    if paths.retrieve is not None:
        operations[paths.retrieve] = {
            "post": _operation("retrieve", "The probe", RetrieveRequest, RetrieveResponse)
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": "t2s baseline agent", "version": version},
        "paths": operations,
        "components": {"schemas": schemas},
    }


def _add_schema(schemas: dict[str, Any], model: type[BaseModel]) -> None:
    schema = model.model_json_schema(ref_template=_REF)
    schemas.update(schema.pop("$defs", {}))
    schemas[model.__name__] = schema


def _operation(
    name: str, summary: str, request: type[BaseModel] | None, response: type[BaseModel]
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": _body("OK", response)}
    operation: dict[str, Any] = {"operationId": name, "summary": summary}
    if request is not None:
        operation["requestBody"] = {"required": True, "content": _json(request)}
        responses.update({code: _body(text, ErrorBody) for code, text in _ERRORS.items()})
    operation["responses"] = responses
    return operation


def _body(description: str, model: type[BaseModel]) -> dict[str, Any]:
    return {"description": description, "content": _json(model)}


def _json(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _REF.format(model=model.__name__)}}}
