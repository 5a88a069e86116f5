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
from types import TracebackType

from t2s_pipeline.execution.duckdb_engine import DuckDBBackend
from t2s_pipeline.execution.engine import (
    DUCKDB,
    POSTGRES,
    Backend,
    DatabaseRefusal,
    QueryFailed,
    detect_engine,
)
from t2s_pipeline.execution.guard import DATABASE, FILTER, Guard, Refusal
from t2s_pipeline.execution.limits import with_row_limit
from t2s_pipeline.execution.outcome import QueryOutcome
from t2s_pipeline.execution.postgres_engine import PostgresBackend
from t2s_pipeline.execution.sqlite_engine import SQLiteBackend
from t2s_pipeline.execution.statement_filter import check_statement

logger = logging.getLogger("t2s.guard")

_STATEMENT_PREVIEW = 500


def open_executor(target: str, guard: Guard) -> GuardedExecutor:
    """Open ``target`` (DuckDB or SQLite file, or ``postgresql://`` URL) under ``guard``.

    Raises ExecutionError when the database cannot be opened or reached (or, with the database
    layer on, when it cannot be opened safely).

    >>> import tempfile, duckdb, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.duckdb")
    >>> duckdb.connect(path).execute("CREATE SCHEMA s; CREATE TABLE s.t AS SELECT 1 AS a").close()
    >>> with open_executor(path, Guard(allowed_schemas=("s",))) as executor:
    ...     executor.run("SELECT a FROM s.t").rows
    [(1,)]
    """
    engine = detect_engine(str(target))
    backend: Backend
    if engine == POSTGRES:
        backend = PostgresBackend(str(target), guard)
    elif engine == DUCKDB:
        backend = DuckDBBackend(str(target), guard)
    else:
        backend = SQLiteBackend(str(target), guard)
    return GuardedExecutor(backend, guard)


class GuardedExecutor:
    """One open database and the guard every statement on it runs under."""

    def __init__(self, backend: Backend, guard: Guard) -> None:
        self._backend = backend
        self.guard = guard

    @property
    def engine(self) -> str:
        """``duckdb``, ``postgres`` or ``sqlite``."""
        return self._backend.engine

    def run(self, sql: str) -> QueryOutcome:
        """Run one statement through the enabled layers and the bounds; never raises for it."""
        started = time.perf_counter()
        verdict = check_statement(sql, self.guard) if FILTER in self.guard.layers else None
        return self._execute(sql, verdict, started)

    def run_all(self, statements: Iterable[str]) -> Iterator[QueryOutcome]:
        """Run statements in order, each exactly as :meth:`run` would; yields their outcomes.

        With the filter on, the filter reads the next statement on a helper thread while the
        database runs the current one: every engine releases the GIL while a statement runs,
        so the filter's parse leaves the critical path. No statement reaches the database
        before its own verdict; only one statement's check overlaps an earlier one's run.
        """
        if FILTER not in self.guard.layers:
            yield from map(self.run, statements)
            return
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="t2s-filter") as pool:
            ahead: deque[tuple[str, Future[Refusal | None]]] = deque()
            for sql in statements:
                ahead.append((sql, pool.submit(check_statement, sql, self.guard)))
                if len(ahead) > 1:
                    yield self._after_verdict(*ahead.popleft())
            while ahead:
                yield self._after_verdict(*ahead.popleft())

    def _after_verdict(self, sql: str, verdict: Future[Refusal | None]) -> QueryOutcome:
        started = time.perf_counter()
        return self._execute(sql, verdict.result(), started)

    def _execute(self, sql: str, verdict: Refusal | None, started: float) -> QueryOutcome:
        """The database layer and the bounds, once the filter (if on) has let ``sql`` through."""
        if verdict is not None:
            return self._refused(sql, FILTER, verdict.reason, started)
        statement = sql
        if self.guard.row_limit is not None:
            statement = with_row_limit(sql, self.guard.dialect, self.guard.row_limit)
        try:
            fetched = self._backend.fetch(statement)
        except DatabaseRefusal as refusal:
            return self._refused(sql, DATABASE, refusal.reason, started, refusal.timed_out)
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
        logger.warning(
            "refused by the %s layer after %.3f s: %s | statement: %s",
            layer,
            seconds,
            reason,
            sql[:_STATEMENT_PREVIEW],
            extra={"statement": sql, "layer": layer, "reason": reason, "seconds": seconds},
        )
        return QueryOutcome(True, layer, reason, (), timed_out=timed_out, seconds=seconds)


def _since(started: float) -> float:
    return time.perf_counter() - started
