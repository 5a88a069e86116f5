"""The optional LLM backend against a local fake OpenAI-compatible chat-completions endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.llm import ChatCompletions, LlmConfig, extract_sql
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.errors import SutError
from t2s_pipeline_tests.agent.sample import sample_case_set

KEY_ENV = "T2S_TEST_LLM_KEY"


@dataclass
class FakeChat:
    """Records each chat request and answers with the next scripted reply (or an HTTP error)."""

    replies: list[str | int] = field(default_factory=list)
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)

    async def complete(self, request: Request) -> Response:
        self.requests.append((dict(request.headers), await request.json()))
        reply = self.replies.pop(0)
        if isinstance(reply, int):
            return JSONResponse({"error": {"message": "boom"}}, status_code=reply)
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}}
        return JSONResponse({"id": "x", "object": "chat.completion", "choices": [choice]})


@pytest.fixture()
def fake() -> Iterator[tuple[FakeChat, str]]:
    """A fake chat endpoint on loopback and its OpenAI-style base URL (ending in /v1)."""
    chat = FakeChat()
    app = Starlette(routes=[Route("/v1/chat/completions", chat.complete, methods=["POST"])])
    with serve_in_thread(app) as url:
        yield chat, f"{url}/v1"


def _agent(base_url: str) -> Starlette:
    llm = LlmConfig(base_url=base_url, model="tiny-sql", key_env=KEY_ENV, timeout_s=5)
    return build_app(sample_case_set(), settings=AgentSettings(llm=llm))


def test_llm_answer_comes_from_the_fenced_block(
    fake: tuple[FakeChat, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model sees the offered DDL and allowed examples; its ```sql block is the answer."""
    chat, base_url = fake
    monkeypatch.setenv(KEY_ENV, "sekret")
    chat.replies.append("Sure.\n```sql\nSELECT count(*) FROM sales.orders o\n```\nDone.")
    with serve_in_thread(_agent(base_url)) as url:
        request = {"question": "How many orders were placed?", "exclude_examples": ["orders-count"]}
        body = httpx.post(f"{url}/v1/ask", json=request).json()
    assert body["sql"] == "SELECT count(*) FROM sales.orders o" and body["refused"] is False
    headers, payload = chat.requests[0]
    assert headers["authorization"] == "Bearer sekret"
    assert payload["model"] == "tiny-sql"
    prompt = payload["messages"][-1]["content"]
    assert "CREATE TABLE sales.orders" in prompt
    assert "```sql\nselect COUNT(*)\nfrom sales.orders\n```" in prompt  # orders-total is allowed
    assert "```sql\nSELECT count(*) FROM sales.orders\n```" not in prompt  # orders-count is not
    assert prompt.endswith("Question: How many orders were placed?")


def test_llm_failure_is_a_502_not_a_refusal(
    fake: tuple[FakeChat, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upstream outage is an error the harness records (and retries), not a model answer."""
    chat, base_url = fake
    monkeypatch.setenv(KEY_ENV, "sekret")
    chat.replies.append(500)
    with serve_in_thread(_agent(base_url)) as url:
        response = httpx.post(f"{url}/v1/ask", json={"question": "orders"})
    assert response.status_code == 502 and "chat backend" in response.json()["error"]


def test_llm_reply_without_sql_is_a_refusal(
    fake: tuple[FakeChat, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty reply holds no query: the agent refuses and says so."""
    chat, base_url = fake
    monkeypatch.setenv(KEY_ENV, "sekret")
    chat.replies.append("   ")
    with serve_in_thread(_agent(base_url)) as url:
        body = httpx.post(f"{url}/v1/ask", json={"question": "orders"}).json()
    assert body["refused"] is True and body["sql"] is None and body["message"]


def test_missing_key_variable_is_a_configuration_error() -> None:
    """The key variable is named in config; its absence is reported before serving."""
    with pytest.raises(SutError, match=KEY_ENV):
        ChatCompletions(LlmConfig("http://127.0.0.1:9/v1", "m", key_env=KEY_ENV), "duckdb", {})


@pytest.mark.parametrize(
    ("reply", "sql"),
    [
        ("```sql\nSELECT 1\n```", "SELECT 1"),
        ("```SQL\nSELECT 1\n```", "SELECT 1"),
        ("text ```python\nx = 1\n``` then ```sql\nSELECT 2\n```", "SELECT 2"),
        ("```\nSELECT 3\n```", "SELECT 3"),
        ("```SELECT 4```", "SELECT 4"),
        ("```sql\nSELECT 5", "SELECT 5"),
        ("  SELECT 6 FROM t  ", "SELECT 6 FROM t"),
        ("", None),
    ],
)
def test_sql_is_taken_from_the_reply(reply: str, sql: str | None) -> None:
    """Fenced sql block first, then any fenced block, then the whole text."""
    assert extract_sql(reply) == sql
