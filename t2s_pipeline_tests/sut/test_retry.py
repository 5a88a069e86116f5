"""Back-off and Retry-After: how long the client waits before trying again."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from t2s_pipeline.sut.retry import RetryPolicy, parse_retry_after, retryable_status


@given(attempt=st.integers(min_value=1, max_value=30), seed=st.integers())
def test_backoff_grows_and_stays_within_its_cap(attempt: int, seed: int) -> None:
    """Equal jitter: between half and all of min(max_s, base_s * 2**(attempt-1))."""
    policy = RetryPolicy(base_s=0.1, max_s=5.0)
    ceiling = min(5.0, 0.1 * 2 ** (attempt - 1))
    delay = policy.delay(attempt, None, random.Random(seed))
    assert ceiling / 2 <= delay <= ceiling


def test_jitter_spreads_simultaneous_retries() -> None:
    """Two clients failing together do not retry in lock-step."""
    policy = RetryPolicy(base_s=1.0)
    rng = random.Random(1)
    assert len({policy.delay(3, None, rng) for _ in range(20)}) > 10


def test_retry_after_wins_over_backoff_and_is_capped() -> None:
    """The server's Retry-After is honoured, up to retry_after_max_s."""
    policy = RetryPolicy(base_s=0.01, retry_after_max_s=30)
    assert policy.delay(1, "7", random.Random(0)) == 7.0
    assert policy.delay(1, "3600", random.Random(0)) == 30.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5", 5.0),
        (" 0.25 ", 0.25),
        ("-3", 0.0),
        ("Wed, 01 Jan 2025 00:00:10 GMT", 10.0),
        ("Tue, 31 Dec 2024 23:00:00 GMT", 0.0),
        ("later", None),
        ("nan", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_reads_seconds_and_http_dates(value: str | None, seconds: float | None) -> None:
    """Both RFC 9110 forms; anything else falls back to the computed back-off."""
    now = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    assert parse_retry_after(value, now) == seconds


@pytest.mark.parametrize(
    ("status", "retry"), [(429, True), (500, True), (503, True), (400, False), (404, False)]
)
def test_only_429_and_5xx_are_retried(status: int, retry: bool) -> None:
    """A 4xx other than 429 is the client's mistake and will not heal by itself."""
    assert retryable_status(status) is retry


def test_at_least_one_attempt() -> None:
    """max_attempts=0 would lose items; it is refused."""
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
