"""A timer that cancels a running statement when its time is up.

DuckDB (``interrupt()``) and PostgreSQL (``cancel()``, besides ``statement_timeout``) are
stopped from another thread. One watchdog thread serves a connection for its whole life, so
arming it per statement costs a lock, not a thread start; it records whether it fired so a
failure can be told apart from a timeout.

Arming does not wake the thread unless the new deadline comes before the thread's next planned
wake-up: with one timeout per connection, each deadline is later than the last, so the thread
wakes at the old deadline, sees the new one and sleeps on. A wake-up per statement would cost
more than a short query (the two threads trading the GIL while the statement runs).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator


class Watchdog:
    """Call the armed ``cancel`` when a statement outlives its deadline.

    >>> dog = Watchdog()
    >>> with dog.armed(60.0, lambda: None):
    ...     pass
    >>> dog.fired, dog.close()
    (False, None)
    """

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._deadline: float | None = None
        self._wake_at: float | None = None  # when the thread will next look (None: on notify)
        self._cancel: Callable[[], None] = lambda: None
        self._fired = False
        self._closed = False
        self._thread = threading.Thread(target=self._watch, name="t2s-watchdog", daemon=True)
        self._thread.start()

    @property
    def fired(self) -> bool:
        """Whether the last armed statement ran out of time and was cancelled."""
        return self._fired

    @contextlib.contextmanager
    def armed(self, seconds: float, cancel: Callable[[], None]) -> Iterator[Watchdog]:
        """Watch the block: ``cancel`` is called if it is still running after ``seconds``."""
        with self._lock:
            self._deadline = time.monotonic() + seconds
            self._cancel = cancel
            self._fired = False
            if self._wake_at is None or self._deadline < self._wake_at:
                self._lock.notify()
        try:
            yield self
        finally:
            with self._lock:  # a cancel under way holds the lock: it ends before we go on
                self._deadline = None

    def close(self) -> None:
        """Stop the watchdog thread."""
        with self._lock:
            self._closed = True
            self._lock.notify()
        self._thread.join()

    def _watch(self) -> None:
        with self._lock:
            while not self._closed:
                if self._deadline is None:
                    self._wake_at = None
                    self._lock.wait()
                    continue
                self._wake_at = self._deadline
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._lock.wait(remaining)
                    continue
                self._deadline = None
                self._fired = True
                with contextlib.suppress(Exception):  # the connection may be gone already
                    self._cancel()
