"""The built-in agent in its own interpreter answers exactly as in a thread, and stops."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from t2s_pipeline.agent import process as agent_process
from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.process import serve_in_process
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.sut.client import ItemOutcome, build_items
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set


def _answers(url: str) -> list[tuple[object, ...]]:
    items = build_items(sample_case_set(), TWINS)
    with HttpSutClient(HttpSettings(url, concurrency=4)) as client:
        outcomes: list[ItemOutcome] = asyncio.run(client.ask_all(items, "own-process"))
    return [(o.item_id, o.response, o.probe, o.error_class) for o in outcomes]


def test_the_agent_in_its_own_process_answers_as_in_a_thread_and_stops() -> None:
    settings = AgentSettings(examples_k=2)
    with serve_in_thread(build_app(sample_case_set(), settings=settings)) as url:
        in_thread = _answers(url)
    with serve_in_process(sample_case_set(), settings) as url:
        in_process = _answers(url)
    assert in_process == in_thread and all(a[1] is not None for a in in_process)
    with pytest.raises(httpx.ConnectError):  # the child stopped with the block
        httpx.get(url + "/v1/health", timeout=5)


def test_a_prestarted_agent_is_taken_by_the_serve_of_the_same_cases_and_settings() -> None:
    """A run that shares its process starts the agent early (``run.warm``); the ask stage
    takes that child only for the same cases and settings, and a child nobody takes is ended."""
    settings = AgentSettings(examples_k=2)
    with serve_in_thread(build_app(sample_case_set(), settings=settings)) as url:
        in_thread = _answers(url)
    agent_process.prestart(sample_case_set(), settings)
    (started,) = agent_process._STARTED.values()
    with serve_in_process(sample_case_set(), settings) as url:
        assert agent_process._STARTED == {} and started.process.poll() is None
        assert _answers(url) == in_thread
    assert started.process.poll() is not None  # ended with the block
    agent_process.prestart(sample_case_set(), AgentSettings(examples_k=1))
    (other,) = agent_process._STARTED.values()
    with serve_in_process(sample_case_set(), settings) as url:
        assert other.process.poll() is not None  # started for other settings: ended, not used
        assert _answers(url) == in_thread


def test_a_forked_child_does_not_own_the_prestarted_agent() -> None:
    """A process forked after the prestart sees no started agent, so its exit cannot end the
    parent's."""
    import os

    agent_process.prestart(sample_case_set(), AgentSettings())
    (started,) = agent_process._STARTED.values()
    pid = os.fork()
    if pid == 0:  # the child: nothing to take, nothing to end
        agent_process._end_started()
        os._exit(0 if not agent_process._STARTED else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert started.process.poll() is None and agent_process._STARTED
    agent_process._end_started()
    assert started.process.poll() is not None
