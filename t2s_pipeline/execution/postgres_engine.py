"""PostgreSQL: a least-privilege reader, read-only transactions, timeouts, a work_mem cap.

With the database layer on, the connection must belong to a reader role (see
:mod:`t2s_pipeline.demo.postgres` for how to create one); opening checks that it is not a
superuser, holds none of the server-file roles, can read nothing outside the allowlisted schemas
and can write nothing, and refuses to open otherwise. Every statement runs in a read-only
transaction through a server-side cursor (``DECLARE ... CURSOR FOR``, which PostgreSQL accepts
only for a query), under ``statement_timeout`` and ``work_mem`` set for the session, with a
client-side timer that cancels it at the deadline even if the statement changed the timeout.
The transaction is rolled back and the session reset (``DISCARD ALL``) after each statement, so
no setting, temporary object or lock outlives it. Permission, read-only, resource and timeout
errors are refusals.

With the database layer off, the URL's role runs the statement as it is, in autocommit; only
the timer and the session reset remain.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from typing import Any

import psycopg2
import psycopg2.errors

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.engine import (
    POSTGRES,
    DatabaseRefusal,
    Fetched,
    Prepared,
    QueryFailed,
    first_line,
)
from t2s_pipeline.execution.guard import DATABASE, Guard
from t2s_pipeline.execution.limits import fetch_capped
from t2s_pipeline.execution.postgres_role import verify_reader
from t2s_pipeline.execution.watchdog import Watchdog

WORK_MEM = "64MB"
CONNECT_TIMEOUT_S = 5

_REFUSED_CODES = frozenset({"42501", "25006", "0A000"})
_REFUSED_CLASSES = ("53", "54")
_CANCELED = "57014"


class PostgresBackend:
    """A PostgreSQL connection opened for guarded statements."""

    engine = POSTGRES

    def __init__(self, target: str, guard: Guard) -> None:
        self.url = target
        self.guard = guard
        self.hardened = DATABASE in guard.layers
        self._conn = self._connect()
        self._watchdog = Watchdog()

    def prepare(self, sql: str) -> Prepared:
        """Nothing to read ahead: the database reads the text when it runs."""
        return Prepared(sql)

    def release(self, prepared: Prepared) -> None:
        """Nothing to free."""

    def fetch(self, prepared: Prepared) -> Fetched:
        """Run one statement within the time and row bounds, then reset the session."""
        if self._conn.closed:
            self._conn = self._connect()
        with self._watchdog.armed(self.guard.timeout_s, self._conn.cancel) as dog:
            try:
                return self._run(prepared.statement)
            except psycopg2.Error as error:
                raise _classify(error, dog.fired, self.guard.timeout_s) from error
            finally:
                self._reset()

    def close(self) -> None:
        """Close the connection and stop the watchdog."""
        self._watchdog.close()
        self._conn.close()

    def _run(self, sql: str) -> Fetched:
        cap = self.guard.fetch_cap
        if not self.hardened:
            with self._conn.cursor() as cursor:
                cursor.execute(sql)
                if cursor.description is None:
                    return Fetched(())
                rows, truncated = fetch_capped(cursor.fetchmany, cursor.fetchall, cap)
                return Fetched(_columns(cursor), rows, truncated)
        cursor = self._conn.cursor(name="t2s_guarded")
        try:
            cursor.execute(sql)
        except psycopg2.errors.SyntaxError as error:
            if _rejected_as_cursor(cursor, sql, error):
                raise DatabaseRefusal(
                    "PostgreSQL serves only a query here (a cursor is declared for SELECT, "
                    "VALUES or TABLE)"
                ) from error
            raise
        rows, truncated = fetch_capped(cursor.fetchmany, cursor.fetchall, cap)
        return Fetched(_columns(cursor), rows, truncated)

    def _reset(self) -> None:
        """End the transaction and drop every session change; reconnect if that fails."""
        if self._conn.closed:
            return
        try:
            self._conn.rollback()
            self._conn.autocommit = True
            with self._conn.cursor() as cursor:
                cursor.execute("DISCARD ALL")
            self._conn.autocommit = not self.hardened
        except psycopg2.Error:  # e.g. a late cancel landed here: start afresh next time
            with contextlib.suppress(psycopg2.Error):
                self._conn.close()

    def _connect(self) -> Any:
        try:
            conn = psycopg2.connect(
                self.url,
                options=_session_options(self.guard, self.hardened),
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name="t2s-guard",
            )
        except psycopg2.Error as error:
            raise ExecutionError(
                f"cannot connect to PostgreSQL at {mask_password(self.url)}: "
                f"{connect_error(self.url, error)}"
            ) from error
        conn.autocommit = not self.hardened
        if self.hardened:
            _verify_or_close(conn, self.guard, self.url)
        return conn


def _session_options(guard: Guard, hardened: bool) -> str:
    settings = {"statement_timeout": f"{max(1, int(guard.timeout_s * 1000))}"}
    if hardened:
        settings |= {
            "default_transaction_read_only": "on",
            "work_mem": WORK_MEM,
            "cursor_tuple_fraction": "1",
        }
    return " ".join(f"-c {name}={value}" for name, value in settings.items())


def _verify_or_close(conn: Any, guard: Guard, url: str) -> None:
    try:
        problems = verify_reader(conn, guard.allowed_schemas)
        conn.rollback()
    except psycopg2.Error as error:
        conn.close()
        raise ExecutionError(f"cannot check the role of {mask_password(url)}: {error}") from error
    if problems:
        conn.close()
        raise ExecutionError(
            f"the database layer needs a least-privilege reader, but {mask_password(url)} "
            f"{'; '.join(problems)}. Connect as a role created like t2s_pipeline.demo.postgres "
            "does, or turn the database layer off explicitly (layers={'filter'})."
        )


def _rejected_as_cursor(cursor: Any, sql: str, error: Exception) -> bool:
    """Whether the server's syntax error points at the first word of the statement itself.

    That is where ``DECLARE ... CURSOR FOR`` stops reading anything that is not a query, so the
    statement kind, not a typo inside it, was refused.
    """
    position = getattr(getattr(error, "diag", None), "statement_position", None)
    sent = cursor.query.decode() if isinstance(cursor.query, bytes) else str(cursor.query or "")
    start = sent.rfind(sql)
    if position is None or start < 0:
        return False
    first_word = start + len(sql) - len(sql.lstrip())
    return int(position) - 1 == first_word


def _columns(cursor: Any) -> tuple[str, ...]:
    return tuple(str(d[0]) for d in cursor.description or ())


def _classify(error: psycopg2.Error, fired: bool, timeout_s: float) -> Exception:
    code = error.pgcode or ""
    message = first_line(str(error))
    if code == _CANCELED or fired:
        return DatabaseRefusal(f"timed out after {timeout_s:g} s ({message})", timed_out=True)
    if code in _REFUSED_CODES or code.startswith(_REFUSED_CLASSES):
        return DatabaseRefusal(message)
    return QueryFailed(message)


_UNPARSEABLE = "postgresql://(a URL that cannot be parsed)"


def connect_error(url: str, error: BaseException) -> str:
    """The driver's reason, unless the URL is unparseable: the driver then echoes the whole
    URL, password included, so only "not a valid URL" is said."""
    if mask_password(url) == _UNPARSEABLE:
        return "not a valid PostgreSQL URL"
    return first_line(str(error)) or type(error).__name__


def mask_password(url: str) -> str:
    """The URL with its password replaced by ``***``, for messages.

    >>> mask_password("postgresql://u:secret@localhost:5432/db")
    'postgresql://u:***@localhost:5432/db'
    """
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:  # not even a URL: show nothing of it, it may hold a password
        return _UNPARSEABLE
    if password is None:
        return url
    netloc = parts.netloc.replace(f":{password}@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
