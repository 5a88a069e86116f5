"""The guarded executor: the statement filter, then the engine's database layer, then bounds.

Every statement the harness runs goes through :meth:`GuardedExecutor.run`, which never raises
for bad SQL, refusals or timeouts: each is a :class:`QueryOutcome`. Refusals are logged on the
``t2s.guard`` logger with the statement, the layer, the reason and the time taken.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType

from t2s_pipeline.execution.engine import (
    Backend,
    DatabaseRefusal,
    Prepared,
    QueryFailed,
)
from t2s_pipeline.execution.guard import FILTER, LIMITS, Guard, Refusal
from t2s_pipeline.execution.limits import MAX_NESTING, nesting_depth, with_row_limit
from t2s_pipeline.execution.outcome import QueryOutcome
from t2s_pipeline.execution.registry import open_backend
from t2s_pipeline.execution.statement_filter import MAX_STATEMENT_CHARS, StatementFilter
from t2s_pipeline.execution.worker import ContainedExecutor

logger = logging.getLogger("t2s.guard")

_STATEMENT_PREVIEW = 500


def open_executor(
    target: str, guard: Guard, refusal_log_level: int = logging.WARNING
) -> GuardedExecutor | ContainedExecutor:
    """Open ``target`` (DuckDB or SQLite file, or ``postgresql://`` URL) under ``guard``.

    With ``guard.contained`` (the default) the statements run in a worker process under hard
    limits (:mod:`~t2s_pipeline.execution.worker`); otherwise in this process.

    Refusals are logged at ``refusal_log_level``: a warning by default, since a refusal means
    somebody asked for what they must not read; the hostile suite, whose attacks are meant to
    be refused, logs them at DEBUG and reports them in its table instead.

    Raises ExecutionError when the database cannot be opened or reached (or, with the database
    layer on, when it cannot be opened safely).

    >>> import tempfile, duckdb, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.duckdb")
    >>> duckdb.connect(path).execute("CREATE SCHEMA s; CREATE TABLE s.t AS SELECT 1 AS a").close()
    >>> with open_executor(path, Guard(allowed_schemas=("s",))) as executor:
    ...     executor.run("SELECT a FROM s.t").rows
    [(1,)]
    """
    if guard.contained:
        return ContainedExecutor(str(target), guard, refusal_log_level)
    return GuardedExecutor(open_backend(str(target), guard), guard, refusal_log_level)


class GuardedExecutor:
    """One open database and the guard every statement on it runs under."""

    def __init__(
        self, backend: Backend, guard: Guard, refusal_log_level: int = logging.WARNING
    ) -> None:
        self._backend = backend
        self.guard = guard
        self._refusal_log_level = refusal_log_level
        self.statement_filter = StatementFilter(
            guard, getattr(backend, "catalogue", None), getattr(backend, "schema_sql", ())
        )

    @property
    def engine(self) -> str:
        """``duckdb``, ``postgres`` or ``sqlite``."""
        return self._backend.engine

    def run(self, sql: str) -> QueryOutcome:
        """Run one statement through the enabled layers and the bounds; never raises for it."""
        started = time.perf_counter()
        return self.finish(self.ready(sql), started)

    def run_all(self, statements: Iterable[str]) -> Iterator[QueryOutcome]:
        """Run statements in order, each exactly as :meth:`run` would; yields their outcomes.

        A helper thread readies the next statement while the database runs the current one:
        the filter's verdict, the row-limit rewrite, and the database layer's own reading of
        it (DuckDB: its parser and a fresh cursor). Every engine releases the GIL while a
        statement runs, so that work leaves the critical path. A statement is readied only
        after its own verdict, and runs only after it is readied; one statement at most is
        readied ahead, and one the caller abandons is released, never run.
        """
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="t2s-ready") as pool:
            ahead: deque[Future[Ready]] = deque()
            try:
                for sql in statements:
                    ahead.append(pool.submit(self.ready, sql))
                    if len(ahead) > 1:
                        yield self._finish_next(ahead)
                while ahead:
                    yield self._finish_next(ahead)
            finally:
                for future in ahead:
                    if future.exception() is None:
                        self.release(future.result())

    def _finish_next(self, ahead: deque[Future[Ready]]) -> QueryOutcome:
        ready = ahead.popleft().result()
        return self.finish(ready, time.perf_counter())

    def ready(self, sql: str) -> Ready:
        """Everything before ``sql`` runs: the filter (if on), the row limit, the database
        layer's reading. Refusals and ordinary failures are values. What :meth:`run` does
        first; a worker readies the next statement with it while the current one runs."""
        unencodable = _unencodable_at(sql)
        if unencodable is not None:
            reason = (
                f"the statement is not UTF-8 text (a lone surrogate at character {unencodable}); "
                "no database driver can send it"
            )
            return Ready(sql, refusal=Refusal(LIMITS, reason))
        if len(sql) > MAX_STATEMENT_CHARS:
            # Before any reading: tokenizing a 7 MB IN-list to measure its nesting took 2.9 s.
            reason = (
                f"the statement is {len(sql):,} characters; the limit is {MAX_STATEMENT_CHARS:,}"
            )
            return Ready(sql, refusal=Refusal(LIMITS, reason))
        depth = nesting_depth(sql)
        if depth > MAX_NESTING:
            reason = f"the statement nests {depth} parentheses deep; the limit is {MAX_NESTING}"
            return Ready(sql, refusal=Refusal(LIMITS, reason))
        if FILTER in self.guard.layers:
            verdict = self.statement_filter.check(sql)
            if verdict is not None:
                return Ready(sql, refusal=verdict)
        statement = sql
        if self.guard.row_limit is not None:
            statement = with_row_limit(sql, self.guard.dialect, self.guard.row_limit)
        try:
            return Ready(sql, prepared=self._backend.prepare(statement))
        except DatabaseRefusal as refusal:
            return Ready(sql, refusal=Refusal(refusal.layer, refusal.reason, refusal.timed_out))
        except QueryFailed as failure:
            return Ready(sql, error=str(failure))

    def finish(self, ready: Ready, started: float) -> QueryOutcome:
        """Run a readied statement within the bounds (or report why it does not run); its
        time counts from ``started``."""
        if ready.refusal is not None:
            refusal = ready.refusal
            return self._refused(
                ready.sql, refusal.layer, refusal.reason, started, refusal.timed_out
            )
        if ready.prepared is None:
            return QueryOutcome(False, None, None, (), error=ready.error, seconds=_since(started))
        try:
            fetched = self._backend.fetch(ready.prepared)
        except DatabaseRefusal as refusal:
            return self._refused(
                ready.sql, refusal.layer, refusal.reason, started, refusal.timed_out
            )
        except QueryFailed as failure:
            return QueryOutcome(False, None, None, (), error=str(failure), seconds=_since(started))
        return QueryOutcome(
            refused=False,
            layer=None,
            reason=None,
            columns=fetched.columns,
            rows=fetched.rows,
            truncated=fetched.truncated,
            seconds=_since(started),
        )

    def release(self, ready: Ready) -> None:
        """Let go of a readied statement that will not run."""
        if ready.prepared is not None:
            self._backend.release(ready.prepared)

    def close(self) -> None:
        """Close the database connection."""
        self._backend.close()

    def __enter__(self) -> GuardedExecutor:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _refused(
        self, sql: str, layer: str, reason: str, started: float, timed_out: bool = False
    ) -> QueryOutcome:
        seconds = _since(started)
        logger.log(
            self._refusal_log_level,
            "refused by the %s layer after %.3f s: %s | statement: %s",
            layer,
            seconds,
            reason,
            sql[:_STATEMENT_PREVIEW],
            extra={"statement": sql, "layer": layer, "reason": reason, "seconds": seconds},
        )
        return QueryOutcome(True, layer, reason, (), timed_out=timed_out, seconds=seconds)


@dataclass(frozen=True)
class Ready:
    """A statement readied to run (``prepared``), or why it will not: a refusal by either
    layer, or an ordinary failure of the database's reading of it (``error``)."""

    sql: str
    prepared: Prepared | None = None
    refusal: Refusal | None = None
    error: str | None = None


def _since(started: float) -> float:
    return time.perf_counter() - started


def _unencodable_at(sql: str) -> int | None:
    """Position of the first character UTF-8 cannot carry (a lone surrogate), or None.

    >>> _unencodable_at("SELECT 1"), _unencodable_at("SELECT '\\ud800'")
    (None, 8)
    """
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None
