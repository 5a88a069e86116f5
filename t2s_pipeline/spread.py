"""Pure work spread over the machine's cores: sqlglot analyses of many queries.

Parsing and analysing SQL holds the GIL, so threads do not help; a batch large enough to pay
for starting interpreters is cut into one part per core, each run by a fresh interpreter
(``python -c``, as the guard's workers: nothing of the caller's threads, connections or main
module is inherited, so a script without a ``__main__`` guard is not run again), and the
results come back in order, the same as one by one. Small batches, and machines with one
core, run in the caller's process.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from threading import Thread
from typing import Any, TypeVar

from t2s_pipeline.errors import T2SError

Job = TypeVar("Job")
Result = TypeVar("Result")

SPREAD_FROM = 500
"""Jobs below this many run in the caller's process."""
STARTUP_JOBS = 100
"""About how many analyses the caller makes while an interpreter starts (about 0.4 s: the work
functions live in modules light to import, ``sql.pair`` and ``sql.canonical``)."""
_MOST = 4
_ENTRY = "from t2s_pipeline.spread import serve; serve()"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def spread(
    work: Callable[[Job], Result],
    jobs: Sequence[Job],
    spread_from: int = SPREAD_FROM,
    startup_jobs: int = STARTUP_JOBS,
) -> list[Result]:
    """``[work(job) for job in jobs]``, over every core when there are ``spread_from`` jobs or
    more. ``work`` must be a module-level function and jobs and results picklable; ``work``
    returns its expected failures as values (anything raised ends the batch).

    The caller works on the first part while the other parts' interpreters start, so its part
    is larger by what they do not reach while starting (``startup_jobs``).

    >>> spread(abs, [-1, 2, -3, 4, -5], spread_from=2, startup_jobs=0) == [1, 2, 3, 4, 5]
    True
    """
    count = min(cores(), _MOST)
    if len(jobs) < spread_from or count < 2:
        return [work(job) for job in jobs]
    own = min(len(jobs), -(-(len(jobs) + (count - 1) * startup_jobs) // count))
    rest = jobs[own:]
    size = -(-len(rest) // (count - 1)) if rest else 1
    chunks = [list(rest[i : i + size]) for i in range(0, len(rest), size)]
    children = [_start(work, chunk) for chunk in chunks]
    try:
        results = [work(job) for job in jobs[:own]]
        for child, _sending in children:
            results.extend(_collect(child, len(jobs)))
        return results
    finally:
        for child, sending in children:
            if child.poll() is None:
                child.kill()
                child.wait()
            sending.join()


def _start(work: Callable[[Any], Any], chunk: list[Any]) -> tuple[subprocess.Popen[bytes], Thread]:
    """A fresh interpreter for one part; the part is written by a thread, so the caller does
    not wait for the interpreter to start."""
    child = subprocess.Popen(
        [sys.executable, "-c", _ENTRY], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    data = pickle.dumps((work, chunk), protocol=pickle.HIGHEST_PROTOCOL)

    def send() -> None:
        assert child.stdin is not None
        with contextlib.suppress(OSError), child.stdin:  # a child that died says so on exit
            child.stdin.write(data)

    sending = Thread(target=send, name="t2s-spread", daemon=True)
    sending.start()
    return child, sending


def _collect(child: subprocess.Popen[bytes], total: int) -> list[Any]:
    assert child.stdout is not None
    with child.stdout:
        data = child.stdout.read()
    if child.wait() != 0 or not data:
        raise T2SError(
            f"a process analysing part of {total} jobs ended with exit code {child.returncode} "
            "(its error is above); the run's earlier stages are kept"
        )
    results: list[Any] = pickle.loads(data)
    return results


def serve() -> None:
    """A child's side: read ``(work, jobs)`` on standard input, write the results on standard
    output (anything the work prints goes to standard error instead)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    work, jobs = pickle.load(sys.stdin.buffer)
    results: list[Any] = [work(job) for job in jobs]
    pickle.dump(results, out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()
