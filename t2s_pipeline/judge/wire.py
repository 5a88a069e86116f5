"""The two judge APIs' wire formats: building a request, reading a response into a verdict.

Anthropic Messages: ``POST {base}/v1/messages`` with ``x-api-key`` and ``anthropic-version``;
the reply is in ``content`` (a ``text`` block, or a ``tool_use`` block when the structured
variant forces the ``record_diagnosis`` tool); ``stop_reason: "refusal"`` is a refusal.
OpenAI-compatible chat completions: ``POST {base}/v1/chat/completions`` with a Bearer key and
``response_format: json_object``; the reply is ``choices[0].message.content``, and a
``message.refusal`` or ``finish_reason: "content_filter"`` is a refusal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from t2s_pipeline.judge.verdict import Verdict, parse_object, parse_reply
from t2s_pipeline.scoring.diagnosis import CATEGORIES

Api = Literal["anthropic", "openai"]
ANTHROPIC_VERSION = "2023-06-01"
TOOL_NAME = "record_diagnosis"
TOOL_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "explanation": {"type": "string"},
    },
    "required": ["category", "explanation"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request: the path under the base URL, headers and JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, object]


@dataclass(frozen=True)
class Shape:
    """How requests are shaped; part of the prompt hash, since it changes what the model does."""

    api: Api
    model: str
    max_tokens: int = 400
    structured: bool = False  # Anthropic only: ask through a forced tool call

    def describe(self) -> str:
        return f"{self.api}:max_tokens={self.max_tokens}:structured={self.structured}"


def build_request(shape: Shape, key: str | None, system: str, user: str) -> WireRequest:
    """The request for one item, in the shape's API."""
    if shape.api == "anthropic":
        return _anthropic_request(shape, key, system, user)
    return _openai_request(shape, key, system, user)


def _anthropic_request(shape: Shape, key: str | None, system: str, user: str) -> WireRequest:
    headers = {"anthropic-version": ANTHROPIC_VERSION} | ({"x-api-key": key} if key else {})
    body: dict[str, object] = {
        "model": shape.model,
        "max_tokens": shape.max_tokens,
        "temperature": 0,
        "system": system,
        "messages": [{"role": "user", "content": user}],
    }
    if shape.structured:
        body["tools"] = [
            {
                "name": TOOL_NAME,
                "description": "Record the failure category of the candidate and why.",
                "input_schema": TOOL_SCHEMA,
            }
        ]
        body["tool_choice"] = {"type": "tool", "name": TOOL_NAME}
    return WireRequest("/v1/messages", headers, body)


def _openai_request(shape: Shape, key: str | None, system: str, user: str) -> WireRequest:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body: dict[str, object] = {
        "model": shape.model,
        "max_tokens": shape.max_tokens,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    return WireRequest("/v1/chat/completions", headers, body)


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Block(_Loose):
    type: str
    text: str | None = None
    name: str | None = None
    input: Any = None


class _Message(_Loose):
    content: list[_Block]
    stop_reason: str | None = None


class _ChatMessage(_Loose):
    content: str | None = None
    refusal: str | None = None


class _Choice(_Loose):
    message: _ChatMessage
    finish_reason: str | None = None


class _Completion(_Loose):
    choices: list[_Choice]


@dataclass(frozen=True)
class Reading:
    """A response body read: the verdict, and the model's raw answer for the cache."""

    verdict: Verdict
    raw: str | None


def read_response(api: Api, body: bytes) -> Reading:
    """Read a 2xx body; a body that is not the API's document is ``bad_response``."""
    try:
        if api == "anthropic":
            return _read_anthropic(_Message.model_validate_json(body))
        return _read_openai(_Completion.model_validate_json(body))
    except ValidationError as error:
        return Reading(Verdict.failed("bad_response", f"not a {api} response: {error}"), None)


def _read_anthropic(message: _Message) -> Reading:
    text = "".join(b.text or "" for b in message.content if b.type == "text")
    if message.stop_reason == "refusal":
        return Reading(Verdict.failed("refused", f"stop_reason refusal: {text[:200]}"), text)
    for block in message.content:
        if block.type == "tool_use" and block.name == TOOL_NAME:
            raw = _json_text(block.input)
            return Reading(parse_object(block.input), raw)
    return Reading(parse_reply(text), text)


def _read_openai(completion: _Completion) -> Reading:
    if not completion.choices:
        return Reading(Verdict.failed("bad_response", "no choices in the completion"), None)
    choice = completion.choices[0]
    if choice.message.refusal:
        return Reading(Verdict.failed("refused", choice.message.refusal), choice.message.refusal)
    if choice.finish_reason == "content_filter":
        return Reading(Verdict.failed("refused", "finish_reason content_filter"), None)
    return Reading(parse_reply(choice.message.content), choice.message.content)


def _json_text(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)
