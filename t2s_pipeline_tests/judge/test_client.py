"""The judge client against a fake model in each API's wire format: every item ends with a
category or a recorded failure class, and nothing is raised."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.judge.client import JudgeClient, JudgeReply

from .fake_llm import EXPECTED, SLOW_S, FakeJudge
from .samples import endpoint, judge_input

APIS = ("anthropic", "openai")


@pytest.fixture(scope="module")
def replies() -> Iterator[dict[str, dict[str, JudgeReply]]]:
    """Every scenario judged once per API, concurrently (api -> scenario -> reply)."""
    out: dict[str, dict[str, JudgeReply]] = {}
    for api in APIS:
        fake = FakeJudge(api, behave=lambda question: question)
        with serve_in_thread(fake.app()) as url:
            client = JudgeClient(endpoint(api, url))
            got = asyncio.run(client.judge_all([judge_input(s) for s in EXPECTED]))
        out[api] = dict(zip(EXPECTED, got, strict=True))
    yield out


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
@pytest.mark.parametrize("api", APIS)
def test_every_scenario_ends_in_a_category_or_a_failure_class(
    replies: dict[str, dict[str, JudgeReply]], api: str, scenario: str
) -> None:
    """Valid, malformed, unknown, refused, 429, 500 and timeout each map to one outcome."""
    category, failure = EXPECTED[scenario]
    verdict = replies[api][scenario].verdict
    assert (verdict.category, verdict.failure_class) == (category, failure), verdict
    assert (verdict.explanation is not None) == (category is not None)


@pytest.mark.parametrize("api", APIS)
def test_rate_limit_is_retried_after_the_asked_delay(
    replies: dict[str, dict[str, JudgeReply]], api: str
) -> None:
    """A 429 with Retry-After 0.3 is retried once, no sooner than asked."""
    reply = replies[api]["rate_then_ok"]
    assert reply.attempts == 2 and reply.latency_s >= 0.3


@pytest.mark.parametrize("api", APIS)
def test_retries_are_bounded(replies: dict[str, dict[str, JudgeReply]], api: str) -> None:
    """Persistent 429 and 5xx stop after max_attempts; a timeout is not retried."""
    assert replies[api]["rate_always"].attempts == 3
    assert replies[api]["error500"].attempts == 3
    assert replies[api]["error500"].status == 500
    assert replies[api]["error_then_ok"].attempts == 2
    assert replies[api]["slow"].attempts == 1
    assert replies[api]["slow"].latency_s < SLOW_S


def test_anthropic_structured_variant_reads_the_tool_call() -> None:
    """Asked through a forced tool, the verdict comes from the tool_use block's input."""
    fake = FakeJudge("anthropic", behave=lambda question: "answer:wrong_metric")
    with serve_in_thread(fake.app()) as url:
        client = JudgeClient(endpoint("anthropic", url, structured=True))
        (reply,) = asyncio.run(client.judge_all([judge_input("q")]))
    assert reply.verdict.category == "wrong_metric"
    assert fake.calls[0]["tool_choice"] == {"type": "tool", "name": "record_diagnosis"}


@pytest.mark.parametrize("api", APIS)
def test_missing_key_sends_nothing_and_records_no_key(api: str) -> None:
    """A key variable that is not set is a per-item failure, and no request leaves."""
    fake = FakeJudge(api, behave=lambda question: "valid")
    with serve_in_thread(fake.app()) as url:
        client = JudgeClient(endpoint(api, url, key=None))
        got = asyncio.run(client.judge_all([judge_input("a"), judge_input("b")]))
    assert [r.verdict.failure_class for r in got] == ["no_key", "no_key"]
    assert fake.calls == []


@pytest.mark.parametrize("api", APIS)
def test_wrong_key_is_an_http_status_failure(api: str) -> None:
    """A rejected key (401) is recorded on the item, not retried and not raised."""
    fake = FakeJudge(api, behave=lambda question: "valid")
    with serve_in_thread(fake.app()) as url:
        client = JudgeClient(endpoint(api, url, key="wrong"))
        (reply,) = asyncio.run(client.judge_all([judge_input("a")]))
    assert reply.verdict.failure_class == "http_status"
    assert reply.status == 401 and reply.attempts == 1


def test_unreachable_judge_is_a_connect_failure() -> None:
    """Nothing listening: every item records ``connect`` after the bounded retries."""
    client = JudgeClient(endpoint("openai", "http://127.0.0.1:9"))
    (reply,) = asyncio.run(client.judge_all([judge_input("a")]))
    assert reply.verdict.failure_class == "connect" and reply.attempts == 3
