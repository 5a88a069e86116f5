"""What ``t2s run`` shows a person while a run works: one progress line per stage.

On a terminal a stage is a bar redrawn in place (done/total, rate, time left); elsewhere (CI
logs, a pipe) it is a plain line every tenth of the way. The Dagster UI gets the same progress
as log lines from the assets; this console is on only when the command line turns it on, which
also quiets Dagster's step-by-step lines and the libraries' warnings that would interleave.

>>> import io
>>> out = io.StringIO()
>>> bar = Stage("asked", 4, out, tty=False, clock=iter(range(100)).__next__)
>>> for done in range(1, 5):
...     bar.update(done)
>>> print(out.getvalue().strip())
asked: 1/4 (25%)
asked: 2/4 (50%)
asked: 3/4 (75%)
asked: 4/4 (100%) in 4 s
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

_WIDTH = 24
_enabled = False


def enable() -> None:
    """Show stages on standard error, and quiet the loggers whose lines would interleave."""
    global _enabled
    _enabled = True
    for name in ("sqlglot", "t2s.guard"):
        logging.getLogger(name).setLevel(logging.ERROR)


def disable() -> None:
    """Back to silence (the loggers keep their quieter levels)."""
    global _enabled
    _enabled = False


def enabled() -> bool:
    return _enabled


class Stage:
    """One stage's progress (see the module docstring)."""

    def __init__(
        self,
        what: str,
        total: int,
        out: TextIO | None = None,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what, self.total = what, total
        self.out = out or sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        self.clock = clock
        self.started = clock()
        self.next_tenth = 1

    def update(self, done: int) -> None:
        elapsed = max(self.clock() - self.started, 1e-9)
        if self.tty:
            self._bar(done, elapsed)
        elif done >= self.total or done * 10 >= self.next_tenth * self.total:
            while done * 10 >= self.next_tenth * self.total and self.next_tenth <= 10:
                self.next_tenth += 1
            percent = 100 * done // max(self.total, 1)
            tail = f" in {elapsed:.0f} s" if done >= self.total else ""
            self.out.write(f"{self.what}: {done}/{self.total} ({percent}%){tail}\n")
            self.out.flush()

    def _bar(self, done: int, elapsed: float) -> None:
        filled = _WIDTH * done // max(self.total, 1)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else 0.0
        eta = f"{elapsed:.0f} s" if done >= self.total else f"ETA {left:.0f} s"
        line = (
            f"\r{self.what:<11} [{'#' * filled}{'.' * (_WIDTH - filled)}] "
            f"{done}/{self.total}  {rate:.1f}/s  {eta}"
        )
        self.out.write(line + ("\n" if done >= self.total else ""))
        self.out.flush()


def note(text: str) -> None:
    """One line on the console when it is on (a stage without a count)."""
    if _enabled:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def stage(what: str, total: int) -> Stage | None:
    """A stage on the console when it is on, else None."""
    return Stage(what, total) if _enabled else None
