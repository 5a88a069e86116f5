"""PostgreSQL: a verified least-privilege reader, one statement per call, read-only, bounded.

With the database layer on, the connection must belong to a reader role (see
:mod:`t2s_pipeline.demo.postgres` for how to create one); opening runs the role check
(:mod:`~t2s_pipeline.execution.postgres_role`) and refuses to open, naming every offending
object, when the role can reach more than the allowlist. Every statement is declared as a
server-side cursor (``DECLARE ... CURSOR FOR``, which PostgreSQL accepts only for a query) over
psycopg 3's **extended protocol**, which carries exactly one statement: a second one, such as
``SELECT 1; COMMIT; BEGIN READ WRITE; ALTER ROLE ...``, cannot run, not merely is refused. It runs
inside a read-only transaction the statement cannot end, under ``statement_timeout`` and
``work_mem`` set for the session, with a client-side timer that cancels it at the deadline. The
transaction is rolled back and the session reset (``DISCARD ALL``) after each statement, so no
setting, temporary object or lock outlives it. Permission, read-only, resource and timeout
errors are refusals.

With the database layer off, the URL's role runs the statement as it is, in autocommit; only
the timer and the session reset remain. Either way the filter gets the role's catalogue
(search path, relations, unsafe views), so names resolve as this server resolves them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import (
    POSTGRES,
    DatabaseRefusal,
    Fetched,
    Prepared,
    QueryFailed,
    first_line,
    masked_url,
)
from t2s_pipeline.execution.guard import DATABASE, Guard
from t2s_pipeline.execution.limits import fetch_capped
from t2s_pipeline.execution.postgres_role import read_catalogue, verify_reader
from t2s_pipeline.execution.watchdog import Watchdog

WORK_MEM = "64MB"
CONNECT_TIMEOUT_S = 5

_REFUSED_CODES = frozenset({"42501", "25006", "0A000", "25001", "2D000", "25P01"})
_REFUSED_CLASSES = ("53", "54")
_CANCELED = "57014"
_CURSOR = "t2s_guarded"


class PostgresBackend:
    """A PostgreSQL connection opened for guarded statements."""

    engine = POSTGRES

    def __init__(self, target: str, guard: Guard) -> None:
        self.url = target
        self.guard = guard
        self.hardened = DATABASE in guard.layers
        self.catalogue: Catalogue | None = None
        self._conn = self._connect()
        self._watchdog = Watchdog()

    def prepare(self, sql: str) -> Prepared:
        """Nothing to read ahead (the database reads the text when it runs), except that libpq
        sends a statement as a C string: past a NUL byte the server would see only a prefix."""
        if "\x00" in sql:
            raise DatabaseRefusal(
                "the statement contains a NUL byte; PostgreSQL would receive part"
            )
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
            except psycopg.Error as error:
                raise _classify(error, dog.fired, self.guard.timeout_s) from error
            except ValueError as error:  # e.g. a NUL byte, which the protocol cannot carry
                raise QueryFailed(f"PostgreSQL cannot receive the statement: {error}") from error
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
                cursor.execute(sql, prepare=False)
                if cursor.description is None:
                    return Fetched(())
                rows, truncated = fetch_capped(cursor.fetchmany, cursor.fetchall, cap)
                return Fetched(_columns(cursor), rows, truncated)
        with self._conn.cursor(name=_CURSOR) as cursor:
            try:
                cursor.execute(sql)
            except psycopg.errors.SyntaxError as error:
                if "multiple commands" in str(error) or _rejected_as_cursor(error, sql):
                    raise DatabaseRefusal(
                        "PostgreSQL serves exactly one query here (a cursor is declared for one "
                        f"SELECT, VALUES or TABLE over the extended protocol): {first_line(str(error))}"
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
            self._conn.execute("DISCARD ALL")
            self._conn.autocommit = not self.hardened
        except psycopg.Error:  # e.g. a late cancel landed here: start afresh next time
            with contextlib.suppress(psycopg.Error):
                self._conn.close()

    def _connect(self) -> Any:
        try:
            conn = psycopg.connect(
                self.url,
                options=_session_options(self.guard, self.hardened),
                connect_timeout=CONNECT_TIMEOUT_S,
                application_name="t2s-guard",
                autocommit=not self.hardened,
            )
        except (psycopg.Error, ValueError) as error:
            raise ExecutionError(
                f"cannot connect to PostgreSQL at {mask_password(self.url)}: "
                f"{connect_error(self.url, error)}"
            ) from error
        if self.hardened:
            _verify_or_close(conn, self.guard, self.url)
        self.catalogue = _catalogue_or_close(conn, self.guard, self.url)
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
    except psycopg.Error as error:
        conn.close()
        raise ExecutionError(f"cannot check the role of {mask_password(url)}: {error}") from error
    if problems:
        conn.close()
        raise ExecutionError(
            f"the database layer needs a least-privilege reader, but {mask_password(url)} "
            f"{'; '.join(problems)}. Connect as a role created like t2s_pipeline.demo.postgres "
            "does, or turn the database layer off explicitly (layers={'filter'})."
        )


def _catalogue_or_close(conn: Any, guard: Guard, url: str) -> Catalogue:
    try:
        catalogue = read_catalogue(conn, guard.allowed_schemas)
        if not conn.autocommit:
            conn.rollback()
        return catalogue
    except psycopg.Error as error:
        conn.close()
        raise ExecutionError(
            f"cannot read the catalogue of {mask_password(url)}: {error}"
        ) from error


def _rejected_as_cursor(error: psycopg.Error, sql: str) -> bool:
    """Whether the server's syntax error points at the statement's first word: that is where
    ``DECLARE ... CURSOR FOR`` stops reading anything that is not a query."""
    position = getattr(error.diag, "statement_position", None)
    if position is None:
        return False
    prefix = f'DECLARE "{_CURSOR}" CURSOR FOR '
    first_word = len(prefix) + len(sql) - len(sql.lstrip())
    return int(position) - 1 == first_word


def _columns(cursor: Any) -> tuple[str, ...]:
    return tuple(str(d.name) for d in cursor.description or ())


def _classify(error: psycopg.Error, fired: bool, timeout_s: float) -> Exception:
    code = error.sqlstate or ""
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
    return masked_url(url, "postgresql")
