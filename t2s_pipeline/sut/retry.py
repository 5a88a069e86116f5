"""When to try a request again, and how long to wait first.

Retried: HTTP 429, any 5xx, and transport failures before an answer arrived (refused or reset
connections, connect timeouts). Not retried: other 4xx, invalid bodies, and read timeouts —
a slow SUT is usually slow again, and its time is the thing being measured.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryPolicy:
    """Attempts and back-off: ``base_s * 2**(attempt-1)`` capped at ``max_s``, equal jitter.

    ``Retry-After`` (seconds or an HTTP date) is honoured up to ``retry_after_max_s``.
    """

    max_attempts: int = 4
    base_s: float = 0.5
    max_s: float = 10.0
    retry_after_max_s: float = 60.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay(self, attempt: int, retry_after: str | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based).

        >>> RetryPolicy(base_s=1, max_s=8).delay(3, "2", random.Random(0))
        2.0
        """
        asked = parse_retry_after(retry_after)
        if asked is not None:
            return min(asked, self.retry_after_max_s)
        ceiling = min(self.max_s, self.base_s * 2 ** (attempt - 1))
        # Equal jitter: at least half the back-off, so a burst of retries still spreads out.
        return ceiling / 2 + rng.uniform(0, ceiling / 2)


def retryable_status(status: int) -> bool:
    """429 Too Many Requests and every 5xx."""
    return status == 429 or status >= 500


def parse_retry_after(value: str | None, now: dt.datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: delta-seconds (fractions accepted) or an HTTP date.

    >>> parse_retry_after("3"), parse_retry_after("soon")
    (3.0, None)
    """
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return _seconds_until(value, now)
    return max(seconds, 0.0) if seconds == seconds else None  # NaN is not a delay


def _seconds_until(value: str, now: dt.datetime | None) -> float | None:
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    current = now or dt.datetime.now(dt.UTC)
    return max((when - current).total_seconds(), 0.0)
