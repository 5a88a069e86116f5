"""Containment (SPEC section 9.4): every guarded statement runs in a worker process with limits.

A :class:`ContainedExecutor` looks like a :class:`~t2s_pipeline.execution.executor.GuardedExecutor`
but hands each statement to a worker process that holds the real one (filter, database layer,
bounds) under hard limits the statement cannot lift:

- address space (``RLIMIT_AS``, ``Guard.memory_mb``): an allocation past it fails inside the
  worker, whichever engine or library asked for it;
- CPU seconds (``RLIMIT_CPU``, raised before each statement to what it may use): past it the
  kernel ends the worker;
- wall clock: the parent waits ``timeout_s`` plus a grace for the answer, the filter's own time
  included, and kills the worker when none comes;
- result size in bytes (``Guard.max_result_bytes``), counted in the worker before anything is
  sent back.

Exceeding one is a refusal on the ``limits`` layer naming the limit; a dead worker is replaced
(the executor is reopened in a fresh one) and the harness process never holds the result of a
runaway query. Workers are separate interpreters (``python -c ... worker.main``,
so nothing of the caller's main module or threads is inherited) kept warm in a small pool, with
a spare always starting, so a new executor costs a message, not a process start.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from multiprocessing.connection import Connection
from types import TracebackType
from typing import Any

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.guard import LIMITS, Guard
from t2s_pipeline.execution.outcome import QueryOutcome

logger = logging.getLogger("t2s.guard")

WALL_GRACE_S = 2.0
"""How long past ``timeout_s`` the parent waits for an answer before it kills the worker."""
OPEN_TIMEOUT_S = 120.0
"""How long opening a database in a worker may take (a DuckDB snapshot is built on first use)."""
_POOL_SIZE = 4
_AHEAD = 3
"""Statements handed to a worker before the first one's answer is read (see ``run_all``)."""
WORN_SHARE = 0.25
"""A worker that has lost this share of the headroom it had after opening is replaced."""
_MEMORY_WORDS = (
    "out of memory",
    "could not allocate",
    "bad_alloc",
    "memoryerror",
    "failed to allocate",
)


def cpu_budget(guard: Guard) -> float:
    """CPU seconds one statement may use: two busy threads for the whole timeout, and a margin."""
    return 2 * guard.timeout_s + 2.0


class ContainedExecutor:
    """A guarded executor whose statements run in a worker process under hard limits."""

    def __init__(self, target: str, guard: Guard, refusal_log_level: int = logging.WARNING) -> None:
        self.target = target
        self.guard = guard
        self._inner_guard = replace(guard, contained=False)
        self._level = refusal_log_level
        self._worker: _Worker | None = None
        self.engine = self._open()

    @property
    def worker_pid(self) -> int | None:
        """The process the next statement runs in (None: a fresh one is started for it)."""
        return self._worker.process.pid if self._worker is not None else None

    def run(self, sql: str) -> QueryOutcome:
        """Run one statement in the worker; never raises for the statement."""
        return next(self.run_all([sql]))

    def run_all(self, statements: Iterable[str]) -> Iterator[QueryOutcome]:
        """Run statements in order, each exactly as :meth:`run` would; yields their outcomes.

        The next statement is handed to the worker before the current one's answer is read,
        so the worker starts it the moment it answers, while the caller works on the answer
        (and on readying the statement after) on the other side of the pipe. Each statement's
        wall clock starts when the worker is free to start it. A worker that is replaced (lost,
        out of time, or worn) takes the statements handed to it but not answered with it; they
        are handed again to the fresh worker, so each statement runs to one answer.
        """
        if self._worker is not None and self._worker.unanswered:
            self._discard()  # an earlier batch was abandoned: its answers are not ours
        source = iter(statements)
        handed: deque[tuple[str, float]] = deque()  # to this worker, unanswered, and when
        free_at = time.perf_counter()  # when the worker answered the statement before
        try:
            while True:
                while len(handed) < _AHEAD and (sql := next(source, None)) is not None:
                    handed.append((sql, self._hand(sql)))
                if not handed:
                    return
                sql, sent_at = handed.popleft()
                outcome, replaced = self._answer(sql, max(free_at, sent_at))
                free_at = time.perf_counter()
                if replaced:
                    handed = deque((later, self._hand(later)) for later, _ in handed)
                if outcome.refused:
                    self._log_refusal(sql, outcome)
                yield outcome
        finally:
            if handed:  # abandoned by the caller: the worker holds statements nobody reads
                self._discard()

    def _hand(self, sql: str) -> float:
        """Send a statement to the worker (a fresh one when there is none); when it was sent.
        A worker that is gone is noticed when its answer is read."""
        worker = self._worker if self._worker is not None else self._reopen()
        with contextlib.suppress(_WorkerLost):
            worker.send(("run", sql, cpu_budget(self.guard)))
        return time.perf_counter()

    def _answer(self, sql: str, started: float) -> tuple[QueryOutcome, bool]:
        """The worker's answer to the oldest statement handed to it, and whether the worker
        was replaced (every statement handed after it must be handed again)."""
        worker = self._worker if self._worker is not None else self._reopen()
        deadline = self.guard.timeout_s + WALL_GRACE_S
        try:
            reply = worker.receive(deadline, waited_s=_since(started))
        except _WorkerLost as lost:
            self._discard()
            return QueryOutcome(
                True, LIMITS, str(lost), (), timed_out=lost.timed_out, seconds=_since(started)
            ), True
        worn = reply[2]  # its address space stayed near the limit: next time, a fresh worker
        if worn:
            self._discard()
        outcome: QueryOutcome = reply[1]
        return outcome, bool(worn)

    def close(self) -> None:
        """Close the database in the worker and return the worker to the pool (a worker
        still holding statements a caller abandoned is ended instead)."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        if worker.unanswered:
            worker.kill()
            return
        try:
            worker.call(("close",), OPEN_TIMEOUT_S)
        except _WorkerLost:
            return
        _POOL.release(worker)

    def __enter__(self) -> ContainedExecutor:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _open(self) -> str:
        worker = _POOL.acquire(self.guard.memory_mb)
        try:
            # The worker's own refusal log stays silent: this side logs each refusal once.
            message = ("open", self.target, self._inner_guard, logging.DEBUG)
            reply = worker.call(message, OPEN_TIMEOUT_S)
        except _WorkerLost as lost:
            raise ExecutionError(
                f"the worker process could not open {self.target}: {lost}"
            ) from lost
        if reply[0] == "error":
            _POOL.release(worker)
            raise ExecutionError(str(reply[1]))
        self._worker = worker
        return str(reply[1])

    def _reopen(self) -> _Worker:
        self._open()
        assert self._worker is not None
        return self._worker

    def _discard(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.kill()

    def _log_refusal(self, sql: str, outcome: QueryOutcome) -> None:
        logger.log(
            self._level,
            "refused by the %s layer after %.3f s: %s | statement: %s",
            outcome.layer, outcome.seconds, outcome.reason, sql[:500],
            extra={"statement": sql, "layer": outcome.layer, "reason": outcome.reason,
                   "seconds": outcome.seconds},
        )  # fmt: skip


class _WorkerLost(Exception):
    def __init__(self, reason: str, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.unanswered = 0
        """Requests sent and not answered yet."""
        parent, child = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, str(child.fileno()), str(memory_mb)],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the parent, not the worker
        )
        child.close()
        self._conn = Connection(parent.detach())

    def call(self, message: tuple[Any, ...], deadline_s: float) -> tuple[Any, ...]:
        """Send one request and wait for its answer, at most ``deadline_s``."""
        self.send(message)
        return self.receive(deadline_s)

    def send(self, message: tuple[Any, ...]) -> None:
        """Hand the worker a request (it queues behind the one it is working on)."""
        try:
            self._conn.send(message)
            self.unanswered += 1
        except (OSError, BrokenPipeError) as error:
            raise _WorkerLost(self._death(error)) from error

    def receive(self, deadline_s: float, waited_s: float = 0.0) -> tuple[Any, ...]:
        """The answer to the oldest request not answered yet, at most ``deadline_s`` after
        the worker could start it, of which ``waited_s`` have passed already."""
        try:
            if not self._conn.poll(max(deadline_s - waited_s, 0.0)):
                self.kill()
                raise _WorkerLost(
                    f"wall clock: no answer within {deadline_s:g} s; the worker was replaced",
                    timed_out=True,
                )
            reply: tuple[Any, ...] = self._conn.recv()
            self.unanswered -= 1
            return reply
        except (EOFError, OSError, BrokenPipeError) as error:
            raise _WorkerLost(self._death(error)) from error

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError, ValueError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(5)
        with contextlib.suppress(OSError):
            self._conn.close()

    def _death(self, error: BaseException) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(5)
        code = self.process.returncode
        self.kill()
        if code is not None and code < 0:
            cause = {
                signal.SIGXCPU: "CPU time limit reached",
                signal.SIGKILL: "killed (CPU or memory limit)",
                signal.SIGSEGV: "crashed (segmentation fault, likely out of memory)",
                signal.SIGABRT: "aborted (likely out of memory)",
            }.get(signal.Signals(-code), f"ended by {signal.Signals(-code).name}")
            return f"the worker {cause}; it was replaced"
        return f"the worker ended unexpectedly (exit code {code}: {error}); it was replaced"


class _Pool:
    """Idle workers kept warm, per address-space limit."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def acquire(self, memory_mb: int) -> _Worker:
        """An idle worker with this limit, or a new one; a spare is started for the next."""
        with self._lock:
            found = next((w for w in self._idle if w.memory_mb == memory_mb and w.alive()), None)
            if found is not None:
                self._idle.remove(found)
            if not any(w.memory_mb == memory_mb for w in self._idle):
                self._idle.append(_Worker(memory_mb))  # starts importing while this one works
        return found if found is not None else _Worker(memory_mb)

    def prewarm(self, memory_mb: int, count: int) -> None:
        """Start workers with this limit until ``count`` of them (at most the pool's size)
        wait idle; each imports the executor's modules while the caller goes on."""
        with self._lock:
            self._idle = [w for w in self._idle if w.alive()]
            idle = sum(1 for w in self._idle if w.memory_mb == memory_mb)
            for _ in range(min(count, self.size) - idle):
                self._idle.append(_Worker(memory_mb))

    def release(self, worker: _Worker) -> None:
        with self._lock:
            if worker.alive() and len(self._idle) < self.size:
                self._idle.append(worker)
                return
        worker.kill()

    def shutdown(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_POOL = _Pool(_POOL_SIZE)
atexit.register(_POOL.shutdown)


def prewarm(guard: Guard, count: int) -> None:
    """Have ``count`` workers for ``guard`` ready before statements need them: a cold worker
    takes about 0.35 s to open a database, a warm one 0.05 s."""
    if guard.contained:
        _POOL.prewarm(guard.memory_mb, count)


_ENTRY = "import sys; from t2s_pipeline.execution.worker import main; main(sys.argv[1:])"


# --- the worker's side ------------------------------------------------------------------------


def serve(conn: Connection, memory_mb: int) -> None:
    """The worker's loop: open, run and close executors until the pipe closes.

    Requests are served in the order they came. While a statement runs, the next request is
    looked at: when it is a statement too, a helper thread readies it (filter, row limit, the
    database layer's reading) meanwhile, as ``GuardedExecutor.run_all`` does in one process, so
    the checks of one statement overlap the database running the one before."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a worker ends
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="t2s-ready") as pool:
        _Serving(conn, memory_mb, limit, pool).loop()


class _Serving:
    """The worker's state: its open executor, the requests read but not served yet, and the
    readying of the next statement."""

    def __init__(
        self, conn: Connection, memory_mb: int, limit: int, pool: ThreadPoolExecutor
    ) -> None:
        self.conn = conn
        self.memory_mb = memory_mb
        self.limit = limit
        self.pool = pool
        self.executor: Any = None
        self.opened = address_space()
        self.pending: deque[tuple[Any, ...]] = deque()
        self.ahead: Future[Any] | None = None
        """The readying of ``pending[0]``, a statement."""

    def loop(self) -> None:
        while (message := self._next()) is not None:
            kind = message[0]
            if kind == "open":
                self._open(message[1], message[2], message[3])
            elif kind == "run":
                readied, self.ahead = self.ahead, None
                started = time.perf_counter()
                if readied is None:
                    readied = self.pool.submit(self.executor.ready, message[1])
                self._ready_next()
                outcome = _run(self.executor, readied, started, message[2], self.memory_mb)
                self.conn.send(("outcome", outcome, _worn(self.limit, self.opened)))
            elif kind == "close":
                self._close()
                self.conn.send(("closed",))

    def _next(self) -> tuple[Any, ...] | None:
        """The next request (None: the pipe closed)."""
        if self.pending:
            return self.pending.popleft()
        try:
            message: tuple[Any, ...] = self.conn.recv()
        except (EOFError, OSError):
            return None
        return message

    def _ready_next(self) -> None:
        """Start readying the next request when one is waiting and it is a statement."""
        if not self.pending:
            try:
                if self.conn.poll(0):
                    self.pending.append(self.conn.recv())
            except (EOFError, OSError):
                return  # the pipe closed: noticed at the next read
        if self.pending and self.pending[0][0] == "run":
            self.ahead = self.pool.submit(self.executor.ready, self.pending[0][1])

    def _open(self, target: str, guard: Guard, level: int) -> None:
        from t2s_pipeline.execution.executor import open_executor  # the worker imports what it runs

        self._close()
        try:
            self.executor = open_executor(target, guard, level)
            self.opened = address_space()
            self.conn.send(("ok", self.executor.engine))
        except Exception as error:  # every failure to open is reported, never a crash
            self.executor = None
            self.conn.send(("error", str(error) or type(error).__name__))

    def _close(self) -> None:
        if self.executor is not None:
            with contextlib.suppress(Exception):
                self.executor.close()
        self.executor = None


def _run(
    executor: Any, readied: Future[Any], started: float, cpu_s: float, memory_mb: int
) -> QueryOutcome:
    """Finish one readied statement under the CPU, memory and result-size limits."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    soft = int(spent + cpu_s) + 1
    # Only the soft limit moves: past it the kernel sends SIGXCPU, which ends the worker.
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))
    try:
        outcome: QueryOutcome = executor.finish(readied.result(), started)
    except MemoryError:
        return _limits(f"memory limit: the statement needed more than {memory_mb} MB", started)
    text = f"{outcome.reason or ''} {outcome.error or ''}".lower()
    if any(word in text for word in _MEMORY_WORDS):
        return _limits(
            f"memory limit of {memory_mb} MB reached ({outcome.reason or outcome.error})", started
        )
    cap = executor.guard.max_result_bytes
    size = result_bytes(outcome.rows, cap)
    if size > cap:
        return _limits(
            f"result size: more than {cap:,} bytes (the cap); {len(outcome.rows):,} rows", started
        )
    return outcome


def address_space() -> int:
    """This process's mapped address space in bytes (what ``RLIMIT_AS`` bounds)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _worn(limit: int, opened: int) -> bool:
    """Whether the worker has used up :data:`WORN_SHARE` of the headroom it had after opening.

    An allocator keeps what a failed huge statement mapped: after memory attacks a worker sat at
    4.18 GB of its 4 GB limit, and the next ordinary statement that needed a block failed.
    """
    return limit - address_space() < (1 - WORN_SHARE) * (limit - opened)


def _limits(reason: str, started: float) -> QueryOutcome:
    return QueryOutcome(True, LIMITS, reason, (), seconds=_since(started))


def _since(started: float) -> float:
    return time.perf_counter() - started


def result_bytes(rows: list[tuple[Any, ...]], cap: int) -> int:
    """The size of a result's cells (text and bytes by length, other values 8), up to ``cap + 1``.

    >>> result_bytes([("abc", 1), (b"xy", None)], 100)
    21
    """
    total = 0
    for row in rows:
        for cell in row:
            total += len(cell) if isinstance(cell, str | bytes | bytearray) else 8
        if total > cap:
            return total
    return total


def main(argv: list[str]) -> None:
    """The worker process's entry: ``FD MEMORY_MB`` (the socket it serves, its memory limit).

    The executor's modules are imported first, while the worker waits in the pool as a spare,
    so opening a database later costs only the database (0.1 s instead of 0.3 s)."""
    import t2s_pipeline.execution.executor  # noqa: F401  # the worker imports what it runs

    serve(Connection(int(argv[0])), int(argv[1]))
