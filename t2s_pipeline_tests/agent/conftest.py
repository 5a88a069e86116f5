"""Running baseline agents over the sample cases, shared by the HTTP tests of this folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline_tests.agent.sample import sample_case_set


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    """Base URL of the default (schema-linking) agent over the sample cases, on a free
    loopback port."""
    with serve_in_thread(build_app(sample_case_set())) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def nearest_url() -> Iterator[str]:
    """Base URL of the nearest-example agent (``generation: nearest_example``)."""
    settings = AgentSettings(generation="nearest_example")
    with serve_in_thread(build_app(sample_case_set(), settings=settings)) as base_url:
        yield base_url
