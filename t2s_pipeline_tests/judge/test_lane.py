"""Judging through the cache: a rerun of the same evidence makes no HTTP call."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.judge.cache import CACHE_TABLE, JudgeCache
from t2s_pipeline.judge.client import JudgeClient
from t2s_pipeline.judge.lane import judge_frame, judge_items
from t2s_pipeline.store import ResultsStore

from .fake_llm import FakeJudge
from .samples import endpoint, judge_input

SCENARIOS = ["valid", "fenced", "unknown", "refused", "slow", "error500"]


def test_rerun_reads_the_cache_and_makes_no_call(tmp_path: Path) -> None:
    """Second pass: every model answer is a hit, zero requests; counts say so."""
    store = ResultsStore(tmp_path / "results.duckdb")
    inputs = [judge_input(s) for s in ["valid", "fenced", "unknown", "refused"]]
    fake = FakeJudge("openai", behave=lambda question: question)
    with serve_in_thread(fake.app()) as url:
        client = JudgeClient(endpoint("openai", url))
        first = judge_items(inputs, client, JudgeCache(store))
        calls_after_first = len(fake.calls)
        second = judge_items(inputs, client, JudgeCache(store))
    assert (first.hits, first.misses, calls_after_first) == (0, 4, 4)
    assert (second.hits, second.misses, len(fake.calls)) == (4, 0, 4)
    assert [i.verdict for i in second.items] == [i.verdict for i in first.items]
    assert len(store.read(CACHE_TABLE)) == 4


def test_transport_failures_are_asked_again(tmp_path: Path) -> None:
    """A timeout or a 5xx is not the model's answer: it is not cached, so a rerun retries it."""
    store = ResultsStore(tmp_path / "results.duckdb")
    inputs = [judge_input(s) for s in SCENARIOS]
    fake = FakeJudge("anthropic", behave=lambda question: question)
    with serve_in_thread(fake.app()) as url:
        client = JudgeClient(endpoint("anthropic", url))
        judge_items(inputs, client, JudgeCache(store))
        before = len(fake.calls)
        again = judge_items(inputs, client, JudgeCache(store))
    retried = {i.item_id for i in again.items if not i.cached}
    assert retried == {"slow#0", "error500#0"}
    assert len(fake.calls) - before == 1 + 3  # one timeout, three 500 attempts


def test_a_different_model_or_prompt_misses(tmp_path: Path) -> None:
    """The cache key holds the model: another model's answers are never reused."""
    store = ResultsStore(tmp_path / "results.duckdb")
    inputs = [judge_input("valid")]
    fake = FakeJudge("openai", behave=lambda question: question)
    with serve_in_thread(fake.app()) as url:
        judge_items(inputs, JudgeClient(endpoint("openai", url)), JudgeCache(store))
        base = endpoint("openai", url)
        other = dataclasses.replace(base, shape=dataclasses.replace(base.shape, model="other"))
        run = judge_items(inputs, JudgeClient(other), JudgeCache(store))
    assert run.misses == 1 and len(fake.calls) == 2


def test_identical_evidence_is_asked_once(tmp_path: Path) -> None:
    """Two items the judge would read identically share one request."""
    store = ResultsStore(tmp_path / "results.duckdb")
    inputs = [judge_input("valid", "x#0"), judge_input("valid", "x#1")]
    fake = FakeJudge("openai", behave=lambda question: question)
    with serve_in_thread(fake.app()) as url:
        run = judge_items(inputs, JudgeClient(endpoint("openai", url)), JudgeCache(store))
    assert len(fake.calls) == 1 and [i.verdict.category for i in run.items] == ["wrong_filter"] * 2


def test_frame_is_typed_even_when_empty() -> None:
    """A disabled judge still writes a typed, empty table (stable column types)."""
    data = judge_frame(None, {})
    assert data.empty and str(data["cached"].dtype) == "boolean"
    assert {"item_id", "category", "explanation", "failure_class", "cached"} <= set(data)
