"""A fake judge model speaking the Anthropic Messages and OpenAI chat-completions wire formats.

Each request's behaviour is chosen from the question in its prompt (``behave(question)``), so
one server can answer validly, badly, slowly or not at all, item by item. Requests with the
wrong headers or body shape get the 400/401 the real APIs would give, so a client that speaks
the format wrongly fails its tests. Every request is recorded in ``calls``.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

KEY = "sk-test-judge"
SLOW_S = 3.0

# scenario -> (expected category, expected failure class)
EXPECTED: dict[str, tuple[str | None, str | None]] = {
    "valid": ("wrong_filter", None),
    "fenced": ("wrong_grain", None),
    "rate_then_ok": ("wrong_metric", None),
    "error_then_ok": ("wrong_table", None),
    "prose": (None, "malformed"),
    "truncated": (None, "malformed"),
    "extra_key": (None, "malformed"),
    "unknown": (None, "unknown_category"),
    "refused": (None, "refused"),
    "declined": (None, "refused"),
    "empty": (None, "refused"),
    "rate_always": (None, "rate_limited"),
    "error500": (None, "http_status"),
    "slow": (None, "timeout"),
    "bad_body": (None, "bad_response"),
}


def _answer(category: str) -> str:
    return json.dumps({"category": category, "explanation": f"fake reason for {category}"})


_TEXTS: dict[str, str] = {
    "valid": _answer("wrong_filter"),
    "fenced": "```json\n" + _answer("wrong_grain") + "\n```",
    "rate_then_ok": _answer("wrong_metric"),
    "error_then_ok": _answer("wrong_table"),
    "prose": "The candidate filters on the wrong year.",
    "truncated": '{"category": "wrong_filter", "explanation": "cut',
    "extra_key": json.dumps({"category": "wrong_filter", "explanation": "x", "confidence": 0.9}),
    "unknown": json.dumps({"category": "wrong_join", "explanation": "joins differ"}),
    "declined": "I'm sorry, but I can't help with evaluating this.",
    "empty": "",
}


def question_of(user: str) -> str:
    """The question line of the judge's user message."""
    return user.split("\n", 1)[0].removeprefix("Question: ")


@dataclass
class FakeJudge:
    """The fake model; ``behave`` maps a question to a scenario or to ``answer:<category>``."""

    api: str
    behave: Callable[[str], str]
    calls: list[dict[str, Any]] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)
    whole_message: bool = False  # behave() is given the whole user message, not the question

    def app(self) -> Starlette:
        path = "/v1/messages" if self.api == "anthropic" else "/v1/chat/completions"
        return Starlette(routes=[Route(path, self._handle, methods=["POST"])])

    async def _handle(self, request: Request) -> Response:
        body = await request.json()
        self.calls.append(body)
        problem = self._check(request, body)
        if problem is not None:
            return problem
        user = body["messages"][-1]["content"]
        question = question_of(user)
        self.seen[question] += 1
        scenario = self.behave(user if self.whole_message else question)
        return await self._respond(scenario, self.seen[question], body)

    def _check(self, request: Request, body: dict[str, Any]) -> Response | None:
        if self.api == "anthropic":
            if request.headers.get("x-api-key") != KEY:
                return JSONResponse({"type": "error"}, status_code=401)
            ok = request.headers.get("anthropic-version") and {
                "model",
                "max_tokens",
                "system",
            } <= set(body)
            ok = ok and body["messages"][0]["role"] == "user"
        else:
            if request.headers.get("authorization") != f"Bearer {KEY}":
                return JSONResponse({"error": "auth"}, status_code=401)
            ok = body.get("response_format") == {"type": "json_object"} and "model" in body
            ok = ok and [m["role"] for m in body["messages"]] == ["system", "user"]
        return None if ok else JSONResponse({"error": "bad request shape"}, status_code=400)

    async def _respond(self, scenario: str, attempt: int, body: dict[str, Any]) -> Response:
        if scenario == "rate_then_ok" and attempt == 1:
            return JSONResponse({"error": "slow down"}, 429, headers={"Retry-After": "0.3"})
        if scenario == "rate_always":
            return JSONResponse({"error": "slow down"}, 429, headers={"Retry-After": "0"})
        if scenario == "error500" or (scenario == "error_then_ok" and attempt == 1):
            return PlainTextResponse("overloaded", 500)
        if scenario == "slow":
            await asyncio.sleep(SLOW_S)
        if scenario == "bad_body":
            return PlainTextResponse("<html>gateway</html>", 200)
        if scenario == "refused":
            return JSONResponse(self._refusal(body))
        text = (
            _answer(scenario.split(":", 1)[1])
            if scenario.startswith("answer:")
            else _TEXTS.get(scenario, _TEXTS["valid"])
        )
        return JSONResponse(self._message(text, body))

    def _message(self, text: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.api == "openai":
            return _completion({"role": "assistant", "content": text, "refusal": None}, "stop")
        if "tools" in body and body.get("tool_choice", {}).get("type") == "tool":
            block = {
                "type": "tool_use",
                "id": "toolu_1",
                "name": body["tool_choice"]["name"],
                "input": json.loads(text),
            }
            return _anthropic([block], "tool_use", body)
        return _anthropic([{"type": "text", "text": text}], "end_turn", body)

    def _refusal(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.api == "openai":
            message = {"role": "assistant", "content": None, "refusal": "I can't help with that."}
            return _completion(message, "stop")
        return _anthropic([], "refusal", body)


def _anthropic(content: list[dict[str, Any]], stop: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": stop,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _completion(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
