"""MySQL and MariaDB: a verified SELECT-only account, one statement per call, read-only, bounded.

With the database layer on, the connection must belong to a reader account (see
:mod:`t2s_pipeline.demo.mysql` for how to create one); opening runs the account check
(:mod:`~t2s_pipeline.execution.mysql_account`) and refuses to open, naming every offending
grant, when the account can reach more than the allowlist. The client never asks for the
multi-statement capability, so the server reads exactly one statement per call: in
``SELECT 1; DROP TABLE t`` the second part is a syntax error, not a second statement. Each
statement runs in its own ``START TRANSACTION READ ONLY`` under the session's
``max_statement_time`` (``max_execution_time`` on MySQL), with a client-side timer that kills
the query from a second connection at the deadline; afterwards the transaction is rolled back
and the session reset (``COM_RESET_CONNECTION``), so no variable, temporary table or lock
outlives it. Permission, read-only, resource and timeout errors are refusals.

With the filter on, the backend also asks the server how it reads the statement
(``EXPLAIN EXTENDED``; the text it will run, views expanded and every table qualified) before
it runs, and refuses one that reaches outside the allowlist there (the filter's second reading,
:func:`~t2s_pipeline.execution.read_mysql.check_server_reading`).

With the database layer off, the URL's account runs the statement as it is; only the timer,
the session settings and the reset remain.
"""

from __future__ import annotations

import contextlib
import struct
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pymysql
import pymysql.cursors
from pymysql.constants import COMMAND, FIELD_TYPE

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import (
    MYSQL,
    MYSQL_SCHEMES,
    DatabaseRefusal,
    Fetched,
    Prepared,
    QueryFailed,
    first_line,
    masked_url,
)
from t2s_pipeline.execution.guard import DATABASE, FILTER, Guard
from t2s_pipeline.execution.limits import fetch_capped
from t2s_pipeline.execution.mysql_account import read_catalogue, verify_reader
from t2s_pipeline.execution.read_mysql import (
    check_server_effects,
    check_server_reading,
    selected_columns,
    statement_aliases,
)
from t2s_pipeline.execution.reading import Refused
from t2s_pipeline.execution.watchdog import Watchdog

CONNECT_TIMEOUT_S = 5
SQL_MODE = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
"""The session's SQL mode, fixed because it changes how text is read: no ``ANSI_QUOTES``
(a double-quoted text is a string), no ``PIPES_AS_CONCAT``, no ``NO_BACKSLASH_ESCAPES`` —
exactly what sqlglot's MySQL reading assumes."""
_COM_RESET_CONNECTION = 0x1F

_REFUSED_CODES = frozenset(
    {
        1044, 1045, 1142, 1143, 1227, 1370, 1290, 1792, 1211, 1410, 1419,
        1041, 1037, 1038, 1114, 1135, 1206, 1301, 1153, 3024, 1969, 4027,
    }
)  # fmt: skip
"""Access denied (database, table, column, routine, privilege), read-only transaction or server,
out of memory or resources, packet or result too large, and the statement time limit."""
_TIMEOUT_CODES = frozenset({3024, 1969, 1317, 2013})
_SYNTAX = 1064
_HIDDEN_UNDERLYING = 1345
"""EXPLAIN refused: a view reads a table the account has no privilege on."""
_INCOMPLETE_CODES = frozenset({1931, 1260, 1301, 3636})
"""Warnings of a result cut short: recursion limit (MariaDB 1931, MySQL 3636), GROUP_CONCAT
cut (1260), a string past max_allowed_packet returned as NULL (1301)."""


@dataclass(frozen=True)
class MySQLTarget:
    """A ``mysql://`` (or ``mariadb://``) URL read into connection arguments."""

    host: str
    port: int
    user: str
    password: str
    database: str | None

    @classmethod
    def parse(cls, url: str) -> MySQLTarget:
        """The URL's parts (percent-encoded user and password decoded).

        >>> MySQLTarget.parse("mariadb://r:p%40ss@db.example:3307/sales")
        MySQLTarget(host='db.example', port=3307, user='r', password='p@ss', database='sales')
        """
        if not url.startswith(MYSQL_SCHEMES):
            raise ExecutionError(f"not a MySQL URL: {mask_password(url)} (use mysql://...)")
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port or 3306
        except ValueError as error:
            raise ExecutionError(
                "not a valid MySQL URL (mysql://user:pass@host:port/db)"
            ) from error
        return cls(
            host=parts.hostname or "localhost",
            port=port,
            user=urllib.parse.unquote(parts.username or ""),
            password=urllib.parse.unquote(parts.password or ""),
            database=urllib.parse.unquote(parts.path.lstrip("/")) or None,
        )

    def run(self, statements: Sequence[str]) -> None:
        """Run ``statements`` in order as this URL's account (an owner's setup, unguarded)."""
        conn = self.connect()
        try:
            with conn.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            conn.close()

    def connect(self, **options: Any) -> Any:
        """A PyMySQL connection: text protocol, no multi-statement capability, UTF-8."""
        return pymysql.connect(
            host=self.host,
            port=self.port,
            user=self.user,
            password=self.password,
            database=self.database,
            connect_timeout=CONNECT_TIMEOUT_S,
            charset="utf8mb4",
            client_flag=0,  # never CLIENT.MULTI_STATEMENTS
            local_infile=False,
            autocommit=True,
            **options,
        )


class MySQLBackend:
    """A MySQL or MariaDB connection opened for guarded statements."""

    engine = MYSQL

    def __init__(self, target: str, guard: Guard) -> None:
        self.url = target
        self.guard = guard
        self.target = MySQLTarget.parse(target)
        self.hardened = DATABASE in guard.layers
        self.catalogue: Catalogue | None = None
        self._databases: frozenset[str] = frozenset()
        self._conn = self._connect()
        self._explainer: Any = None
        self._mariadb = "mariadb" in str(self._conn.get_server_info()).lower()
        self._watchdog = Watchdog()

    def prepare(self, sql: str) -> Prepared:
        """The server's readings of the statement before it runs: with the database layer on,
        its prepare must find one statement returning rows (a query); with the filter on, the
        text it will run must stay inside the allowlist. A NUL byte is refused."""
        if "\x00" in sql:
            raise DatabaseRefusal("the statement contains a NUL byte")
        columns = self._server_prepare(sql) if self.hardened else None
        self._server_reading(sql, columns)
        return Prepared(sql)

    def release(self, prepared: Prepared) -> None:
        """Nothing to free."""

    def fetch(self, prepared: Prepared) -> Fetched:
        """Run one statement within the time and row bounds, then reset the session."""
        if not self._conn.open:
            self._conn = self._connect()
        thread_id = self._conn.thread_id()
        with self._watchdog.armed(self.guard.timeout_s, lambda: self._kill(thread_id)) as dog:
            try:
                fetched = self._run(prepared.statement)
                if dog.fired:  # BENCHMARK() returns a row when killed, not an error
                    raise DatabaseRefusal(
                        f"timed out after {self.guard.timeout_s:g} s", timed_out=True
                    )
                return fetched
            except pymysql.Error as error:
                raise _classify(error, dog.fired, self.guard.timeout_s) from error
            finally:
                self._reset()

    def close(self) -> None:
        """Close the connections and stop the watchdog."""
        self._watchdog.close()
        for conn in (self._conn, self._explainer):
            if conn is not None:
                with contextlib.suppress(pymysql.Error):
                    conn.close()

    def _run(self, sql: str) -> Fetched:
        cap = self.guard.fetch_cap
        if self.hardened:
            self._conn.query("START TRANSACTION READ ONLY")
        cursor = self._conn.cursor(pymysql.cursors.SSCursor)
        cursor.execute(sql)  # no arguments: the text is sent as it is, never %-formatted
        if cursor.description is None:
            return Fetched(())
        columns = tuple(str(d[0]) for d in cursor.description)
        rows, truncated = fetch_capped(cursor.fetchmany, cursor.fetchall, cap)
        rows = as_booleans(rows, cursor.description)
        if truncated:  # the rest is still streaming: drop the connection rather than read it
            if cursor._result is not None:  # and tell PyMySQL not to drain it later
                cursor._result.unbuffered_active = False
            with contextlib.suppress(pymysql.Error):
                self._conn.close()
            return Fetched(columns, rows, truncated)
        warnings = getattr(cursor._result, "warning_count", 0) if cursor._result else 0
        cursor.close()
        if warnings:
            self._refuse_incomplete()
        return Fetched(columns, rows, truncated)

    def _refuse_incomplete(self) -> None:
        """Refuse a result the server says it cut short while still returning it (a recursion
        stopped at ``max_recursive_iterations``, a ``GROUP_CONCAT`` or ``REPEAT`` cut at its
        limit): a silently wrong answer is worse than none."""
        with self._conn.cursor() as cursor:
            cursor.execute("SHOW WARNINGS")
            for _level, code, message in cursor.fetchall():
                if int(code) in _INCOMPLETE_CODES:
                    raise DatabaseRefusal(f"the server cut the result short: ({code}) {message}")

    def _reset(self) -> None:
        """End the transaction and drop every session change; reconnect next time if that fails."""
        if not self._conn.open:
            return
        try:
            self._conn.rollback()
            self._conn._execute_command(_COM_RESET_CONNECTION, b"")
            self._conn._read_ok_packet()
            self._configure(self._conn)
        except pymysql.Error:
            with contextlib.suppress(pymysql.Error):
                self._conn.close()

    def _kill(self, thread_id: int) -> None:
        """Stop the running statement from a second connection (an account may kill its own)."""
        conn = self.target.connect()
        try:
            conn.query(f"KILL QUERY {int(thread_id)}")
        finally:
            conn.close()

    def _server_prepare(self, sql: str) -> int:
        """Prepare the statement on the server (COM_STMT_PREPARE: parsed and resolved, not
        run) and refuse it unless the server reads one statement that returns columns and
        takes no parameters: ``SET``, ``DO``, ``CALL``, ``SELECT ... INTO`` and an empty
        statement return none. PyMySQL has no binary protocol, so the packets are read here."""
        conn = self._explaining()
        try:
            conn._execute_command(COMMAND.COM_STMT_PREPARE, sql)
            reply = conn._read_packet().get_all_data()
            statement_id, columns, parameters = struct.unpack("<IHH", reply[1:9])
            for block in (parameters, columns):
                for _ in range(block + 1 if block else 0):  # definitions, then an EOF packet
                    conn._read_packet()
            conn._execute_command(COMMAND.COM_STMT_CLOSE, struct.pack("<I", statement_id))
        except pymysql.Error as error:
            raise _classify(error, False, self.guard.timeout_s) from error
        if columns == 0:
            raise DatabaseRefusal(
                "the server reads a statement that returns no rows (SET, DO, CALL, SELECT ... "
                "INTO, or nothing at all): only queries are served"
            )
        if parameters:
            raise DatabaseRefusal(f"the statement has {parameters} parameter marker(s)")
        return int(columns)

    def _explaining(self) -> Any:
        """The second connection the server's readings use (statements run on the first)."""
        if self._explainer is None or not self._explainer.open:
            self._explainer = self._open(verify=False)
        return self._explainer

    def _server_reading(self, sql: str, columns: int | None = None) -> None:
        """Ask the server how it reads the statement (``EXPLAIN EXTENDED``: the text it will
        run, views expanded, every table qualified), inside a read-only transaction under the
        time limit (the optimizer may evaluate a constant function). The database layer
        refuses what privileges cannot forbid (system variables and databases, stored routines,
        file, lock and session functions) and a statement the server cannot explain as a query
        (``SHOW``, ``HELP``); the filter refuses a table outside the allowlist."""
        conn = self._explaining()
        verb = "EXPLAIN EXTENDED" if self._mariadb else "EXPLAIN"
        try:
            conn.query("START TRANSACTION READ ONLY")
            with conn.cursor() as cursor:
                cursor.execute(f"{verb} {sql}")
                cursor.fetchall()
                cursor.execute("SHOW WARNINGS")
                notes = [str(row[2]) for row in cursor.fetchall() if int(row[1]) == 1003]
        except pymysql.Error as error:
            raise self._unexplained(error) from error
        finally:
            with contextlib.suppress(pymysql.Error):
                conn.rollback()
        allowed = frozenset(self.guard.allowed_schemas)
        for note in notes:
            if self.hardened:
                _refuse_as(DATABASE, check_server_effects, note)
                selected = selected_columns(note)
                if columns is not None and selected is not None and selected != columns:
                    raise DatabaseRefusal(
                        f"the server's prepared statement returns {columns} column(s) but its "
                        f"reading selects {selected}: a clause left out of the reading (such as "
                        "PROCEDURE) changes the result"
                    )
            if FILTER in self.guard.layers:
                aliases = statement_aliases(sql)
                _refuse_as(FILTER, check_server_reading, note, allowed, self._databases, aliases)

    def _unexplained(self, error: pymysql.Error) -> Exception:
        if _code(error) == _HIDDEN_UNDERLYING:
            return DatabaseRefusal(
                "the server will not show how it reads the statement: a view in it reads a "
                f"table this account cannot see ({_message(error)})",
                layer=FILTER,
            )
        if _code(error) == _SYNTAX and self.hardened:
            # the server prepared it (so it is valid) yet cannot explain it: not a query
            return DatabaseRefusal(
                f"the server does not read the statement as a query ({_message(error)})"
            )
        return _classify(error, False, self.guard.timeout_s)

    def _connect(self) -> Any:
        return self._open(verify=self.hardened)

    def _open(self, verify: bool) -> Any:
        try:
            conn = self.target.connect()
            self._configure(conn)
        except pymysql.Error as error:
            raise ExecutionError(
                f"cannot connect to MySQL at {mask_password(self.url)}: {_message(error)}"
            ) from error
        try:
            if verify:
                problems = verify_reader(conn, self.guard.allowed_schemas)
                if problems:
                    raise ExecutionError(
                        f"the database layer needs a SELECT-only account, but "
                        f"{mask_password(self.url)} {'; '.join(problems)}. Connect as an account "
                        "created like t2s_pipeline.demo.mysql does, or turn the database layer "
                        "off explicitly (layers={'filter'})."
                    )
            if self.catalogue is None:
                self.catalogue = read_catalogue(conn, self.guard.allowed_schemas)
                with conn.cursor() as cursor:
                    cursor.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
                    self._databases = frozenset(str(row[0]) for row in cursor.fetchall())
        except pymysql.Error as error:
            conn.close()
            raise ExecutionError(
                f"cannot check the account of {mask_password(self.url)}: {_message(error)}"
            ) from error
        except ExecutionError:
            conn.close()
            raise
        return conn

    def _configure(self, conn: Any) -> None:
        """The session settings every statement runs under (re-applied after each reset)."""
        seconds = max(0.001, self.guard.timeout_s)
        mariadb = "mariadb" in str(conn.get_server_info()).lower()
        settings = [f"sql_mode = '{SQL_MODE}'", "time_zone = '+00:00'"]
        if mariadb:
            # max_recursive_iterations stays the server's (1000 on MariaDB 10.11): a recursion
            # cut there returns a partial answer with warning 1931, which fetch refuses.
            settings += [f"max_statement_time = {seconds:.3f}"]
        else:
            settings += [f"max_execution_time = {int(seconds * 1000)}"]
        conn.query("SET SESSION " + ", SESSION ".join(settings))
        if self.hardened:
            conn.query("SET SESSION TRANSACTION READ ONLY")


def _refuse_as(layer: str, check: Callable[..., None], *args: Any) -> None:
    try:
        check(*args)
    except Refused as refusal:
        raise DatabaseRefusal(str(refusal), layer=layer) from refusal


def _code(error: pymysql.Error) -> int:
    return int(error.args[0]) if error.args and isinstance(error.args[0], int) else 0


def _classify(error: pymysql.Error, fired: bool, timeout_s: float) -> Exception:
    code = _code(error)
    message = _message(error)
    if fired or code in (3024, 1969):
        return DatabaseRefusal(f"timed out after {timeout_s:g} s ({message})", timed_out=True)
    if code in _REFUSED_CODES:
        return DatabaseRefusal(message)
    if code in _TIMEOUT_CODES:
        return DatabaseRefusal(f"the statement was stopped ({message})")
    return QueryFailed(message)


def _message(error: BaseException) -> str:
    args = list(getattr(error, "args", ()))
    if len(args) >= 2:
        return f"({args[0]}) {first_line(str(args[1]))}"
    return first_line(str(error)) or type(error).__name__


def mask_password(url: str) -> str:
    """The URL with its password replaced by ``***``, for messages.

    >>> mask_password("mysql://u:secret@localhost:3306/sales")
    'mysql://u:***@localhost:3306/sales'
    """
    return masked_url(url, "mysql")


def as_booleans(rows: list[tuple[Any, ...]], description: Any) -> list[tuple[Any, ...]]:
    """Values of ``BOOLEAN`` columns as booleans, as the other engines return them.

    MySQL stores ``BOOLEAN`` as ``TINYINT(1)`` and sends 0 and 1; the other engines send
    False and True, which the scorer (rightly) does not take for the numbers 0 and 1. A
    ``TINYINT(1)`` value other than 0 or 1 is left as the number it is.

    >>> as_booleans([(1, 7), (0, None)], [("a", 1, None, 1), ("b", 1, None, 4)])
    [(True, 7), (False, None)]
    """
    flags = [i for i, d in enumerate(description) if d[1] == FIELD_TYPE.TINY and d[3] == 1]
    if not flags:
        return rows
    converted = []
    for row in rows:
        values = list(row)
        for i in flags:
            if values[i] in (0, 1) and not isinstance(values[i], bool):
                values[i] = bool(values[i])
        converted.append(tuple(values))
    return converted
