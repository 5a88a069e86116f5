"""The SUT HTTP contract (SPEC section 14): typed messages, configurable field names and paths.

The models use the contract's own names. An existing service that names a field differently
("query" instead of "question", "generated_sql" instead of "sql") or nests it
(``data.query.text``) is evaluated unchanged by giving :class:`FieldNames`, whose values are
dotted paths into the JSON; :func:`to_wire` and :func:`from_wire` translate at the boundary.

>>> names = FieldNames(question="query", sql="data.query.text")
>>> to_wire(AskRequest(question="How many orders?", run_id="r1"), names)["query"]
'How many orders?'
>>> from_wire({"data": {"query": {"text": "SELECT 1"}}}, AskResponse, names).sql
'SELECT 1'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from t2s_pipeline.errors import SutError

MAX_QUESTION_CHARS = 4_000
MAX_EXCLUSIONS = 2_000
RUN_ID_PATTERN = r"^[a-z0-9-]{0,64}$"
# One character that is not white space, read alike by the agent's validator (Rust regex,
# where U+0085 is white space) and by OpenAPI clients (ECMAScript, where U+FEFF is).
NOT_BLANK = r"[^\s\u0085\ufeff]"

# pydantic already rejects lone surrogates in strings, so every accepted text encodes as UTF-8.
CaseId = Annotated[StrictStr, Field(max_length=200)]


class _Message(BaseModel):
    """A contract message: immutable; unknown fields are ignored (services add their own)."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class RequestContext(_Message):
    """What every request carries besides the question (SPEC section 14): the pinned
    snapshot's "today" (ISO date; None when the domain pins none), the SQL dialect the answer
    must be written in, and the domain's name."""

    as_of: StrictStr | None = None
    dialect: StrictStr = ""
    domain: StrictStr = ""


class AskRequest(_Message):
    """``POST /v1/ask``: one item, with the cases the SUT must not retrieve."""

    question: StrictStr = Field(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=NOT_BLANK)
    exclude_examples: tuple[CaseId, ...] = Field(default=(), max_length=MAX_EXCLUSIONS)
    run_id: StrictStr = Field(default="", pattern=RUN_ID_PATTERN)
    evidence: StrictStr | None = Field(default=None, max_length=MAX_QUESTION_CHARS)
    context: RequestContext | None = None


class RetrieveRequest(_Message):
    """``POST /v1/retrieve``: the probe, with the same question and exclusions as the item."""

    question: StrictStr = Field(min_length=1, max_length=MAX_QUESTION_CHARS, pattern=NOT_BLANK)
    exclude_examples: tuple[CaseId, ...] = Field(default=(), max_length=MAX_EXCLUSIONS)
    context: RequestContext | None = None


class OfferedTable(_Message):
    """A table whose DDL the retriever offered."""

    name: StrictStr
    ddl: StrictStr = ""


class ExampleRef(_Message):
    """An example (gold case id) the SUT says it used."""

    id: StrictStr


class RetrievalTrace(_Message):
    """What the SUT says it offered itself while answering."""

    tables: tuple[OfferedTable, ...] = ()
    examples: tuple[ExampleRef, ...] = ()


class AskResponse(_Message):
    """The SUT's answer; ``retrieval`` is None when the service reports no trace."""

    sql: StrictStr | None
    refused: StrictBool = False
    message: StrictStr | None = None
    retrieval: RetrievalTrace | None = None


class RetrievedExample(_Message):
    """An example the retriever returned, with its question and SQL."""

    id: StrictStr
    question: StrictStr
    sql: StrictStr


class RetrieveResponse(_Message):
    """What the retriever would offer for a question (the probe's answer)."""

    tables: tuple[OfferedTable, ...]
    examples: tuple[RetrievedExample, ...]


class Health(_Message):
    """``GET /v1/health``; a service that does not say it can exclude is taken as not able to."""

    status: StrictStr
    supports_exclusions: StrictBool = False
    version: StrictStr | None = None
    """The service's own version (build, prompt, model): part of the run id when reported."""


class ErrorBody(_Message):
    """The body of every 4xx the built-in agent returns."""

    error: StrictStr


class FieldNames(BaseModel):
    """The wire name of each contract field, defaulting to SPEC section 14's names.

    A name may be a dotted path into nested JSON (``data.query.text``): read by walking the
    objects, written by building them. Names inside a list element are relative to the
    element: ``table_name`` and ``ddl`` inside a table, ``example_id``, ``example_question``
    and ``example_sql`` inside an example; ``retrieval``/``tables``/``examples`` locate the
    lists.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str = "question"
    exclude_examples: str = "exclude_examples"
    run_id: str = "run_id"
    evidence: str = "evidence"
    context: str = "context"
    sql: str = "sql"
    refused: str = "refused"
    message: str = "message"
    retrieval: str = "retrieval"
    tables: str = "tables"
    examples: str = "examples"
    table_name: str = "name"
    ddl: str = "ddl"
    example_id: str = "id"
    example_question: str = "question"
    example_sql: str = "sql"
    status: str = "status"
    supports_exclusions: str = "supports_exclusions"
    version: str = "version"

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str]) -> FieldNames:
        """Build from ``{role: wire name}``; an unknown role is a :class:`SutError`."""
        unknown = sorted(set(mapping) - set(cls.model_fields))
        if unknown:
            raise SutError(
                f"unknown field name role(s) {unknown}; use some of {sorted(cls.model_fields)}"
            )
        empty = sorted(role for role, name in mapping.items() if not str(name).strip("."))
        if empty:
            raise SutError(f"field name role(s) {empty} are empty; give a name or a dotted path")
        return cls(**dict(mapping))


class Paths(BaseModel):
    """Endpoint paths; ``retrieve=None`` when the service has no probe endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ask: str = "/v1/ask"
    retrieve: str | None = "/v1/retrieve"
    health: str = "/v1/health"


M = TypeVar("M", bound=BaseModel)

# model -> attribute -> (FieldNames role, nested model or None)
_LAYOUT: dict[type[BaseModel], dict[str, tuple[str, type[BaseModel] | None]]] = {
    AskRequest: {
        "question": ("question", None),
        "exclude_examples": ("exclude_examples", None),
        "run_id": ("run_id", None),
        "evidence": ("evidence", None),
        "context": ("context", None),
    },
    RetrieveRequest: {
        "question": ("question", None),
        "exclude_examples": ("exclude_examples", None),
        "context": ("context", None),
    },
    OfferedTable: {"name": ("table_name", None), "ddl": ("ddl", None)},
    ExampleRef: {"id": ("example_id", None)},
    RetrievalTrace: {"tables": ("tables", OfferedTable), "examples": ("examples", ExampleRef)},
    AskResponse: {
        "sql": ("sql", None),
        "refused": ("refused", None),
        "message": ("message", None),
        "retrieval": ("retrieval", RetrievalTrace),
    },
    RetrievedExample: {
        "id": ("example_id", None),
        "question": ("example_question", None),
        "sql": ("example_sql", None),
    },
    RetrieveResponse: {
        "tables": ("tables", OfferedTable),
        "examples": ("examples", RetrievedExample),
    },
    Health: {
        "status": ("status", None),
        "supports_exclusions": ("supports_exclusions", None),
        "version": ("version", None),
    },
}


def to_wire(message: BaseModel, names: FieldNames) -> dict[str, Any]:
    """The JSON object of a message under the service's field names; None fields are left out.

    Leaving out unset optionals (``evidence``) keeps strict services that reject unknown or
    null fields working.
    """
    wire: dict[str, Any] = {}
    for attr, (role, nested) in _LAYOUT[type(message)].items():
        value = getattr(message, attr)
        if value is None:
            continue
        if nested is not None and isinstance(value, tuple):
            value = [to_wire(v, names) for v in value]
        elif nested is not None:
            value = to_wire(value, names)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, BaseModel):  # the context: sent with its contract names
            value = value.model_dump(mode="json")
        put_path(wire, getattr(names, role), value)
    return wire


def put_path(target: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        child = target.setdefault(part, {})
        if not isinstance(child, dict):
            raise SutError(f"field path {path!r} crosses the non-object field {part!r}")
        target = child
    target[leaf] = value


_MISSING = object()


def _get(data: Mapping[str, Any], path: str) -> Any:
    if path in data:  # a flat key that happens to hold a dot wins over a path
        return data[path]
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def from_wire(data: Any, model: type[M], names: FieldNames) -> M:
    """Read a message from a JSON value under the service's field names.

    Raises :class:`ValueError` (message names the wire fields) when the value does not fit.
    """
    try:
        return model.model_validate(_canonical(data, model, names))
    except ValidationError as error:
        raise ValueError(describe_validation(error)) from None


def describe_validation(error: ValidationError, limit: int = 3) -> str:
    """A short one-line account of the first few validation problems."""
    parts = []
    for item in error.errors()[:limit]:
        where = ".".join(str(p) for p in item["loc"]) or "body"
        parts.append(f"{where}: {item['msg']}")
    more = len(error.errors()) - limit
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _canonical(data: Any, model: type[BaseModel], names: FieldNames) -> Any:
    if not isinstance(data, dict):
        return data  # pydantic reports the wrong type
    canonical: dict[str, Any] = {}
    for attr, (role, nested) in _LAYOUT[model].items():
        value = _get(data, getattr(names, role))
        if value is _MISSING:
            continue
        if nested is not None and isinstance(value, list):
            value = [_canonical(v, nested, names) for v in value]
        elif nested is not None:
            value = _canonical(value, nested, names)
        canonical[attr] = value
    return canonical
