"""The statement filter on MySQL and MariaDB: sqlglot's reading, then the server's own.

No Python binding exposes the MySQL parser, so the first reading is sqlglot's (dialect
``mysql``), failing closed wherever it and the server could read the text differently:

- comments the server executes (``/*! ... */``, ``/*M! ... */``) or obeys (``/*+ hints */``,
  which can lift ``MAX_EXECUTION_TIME``) are refused, whatever they hold;
- exactly one statement, a query (``SELECT`` and set operations); nothing anywhere that writes,
  locks (``FOR UPDATE``), stores (``INTO``), sets or reads variables (``@x``, ``@@version``) or
  changes the session;
- every function on the MySQL allowlist (a sqlglot function class, or the name sqlglot keeps
  for a function it does not know), never schema-qualified;
- every relation in an allowlisted database (unqualified names resolve to the connection's
  database, which must be allowlisted) or a CTE visible where it is named.

The second reading is the server's: the MySQL backend asks it to ``EXPLAIN`` the statement and
reads back the text it will run (view bodies expanded, every table qualified with its database;
:func:`check_server_reading`), so a name the server resolves elsewhere than sqlglot does, or a
view of an allowlisted database reading another one, is refused before anything runs.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokens import Token, TokenType

from t2s_pipeline.execution.allowlists import allowed_functions
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import MYSQL
from t2s_pipeline.execution.reading import Refused


class _MariaDB(MySQL):
    """sqlglot's MySQL, reading three MariaDB query forms it refuses: ``VALUES`` as a query
    (standalone or a CTE body; MariaDB 10.3) and ``GROUP_CONCAT(... LIMIT n)`` (10.3).
    ``VALUES(col)`` as a function exists only inside ``INSERT ... ON DUPLICATE KEY UPDATE``,
    which is refused anyway, so the word is read as the row constructor."""

    class Parser(MySQLParser):
        FUNC_TOKENS = MySQLParser.FUNC_TOKENS - {TokenType.VALUES}
        FUNCTION_PARSERS = {k: v for k, v in MySQLParser.FUNCTION_PARSERS.items() if k != "VALUES"}
        VALUES_FOLLOWED_BY_PAREN = True

        def _parse_group_concat(self) -> exp.Expr | None:
            node = super()._parse_group_concat()
            if node is None or not self._match(TokenType.LIMIT):
                return node
            count = self._number()
            offset = None
            if self._match(TokenType.COMMA):
                offset, count = count, self._number()
            elif self._match(TokenType.OFFSET):
                offset = self._number()
            node.set("this", exp.Limit(this=node.this, expression=count, offset=offset))
            return node

        def _number(self) -> exp.Expr:
            """A row count: MariaDB takes only an integer literal there."""
            if not self._match(TokenType.NUMBER):
                self.raise_error("expected a number after GROUP_CONCAT's LIMIT")
            return exp.Literal.number(self._prev.text)


_DIALECT = _MariaDB
_OBEYED_COMMENTS = ("!", "M!", "+")
"""Comment openings (after ``/*``) the server executes or obeys."""
_FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = (
    exp.Into, exp.Lock, exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop,
    exp.Alter, exp.Command, exp.Set, exp.SetItem, exp.Use, exp.Transaction, exp.Commit,
    exp.Rollback, exp.Describe, exp.Pragma, exp.Kill, exp.Grant, exp.LoadData, exp.Copy,
    exp.Cache, exp.Uncache, exp.Analyze, exp.Hint, exp.Parameter, exp.SessionParameter,
    exp.Placeholder, exp.Show, exp.Export,
)  # fmt: skip
SERVER_FUNCTIONS_WITH_EFFECTS = frozenset({
    "load_file", "sleep", "benchmark", "get_lock", "release_lock", "release_all_locks",
    "is_free_lock", "is_used_lock", "master_pos_wait", "master_gtid_wait", "source_pos_wait",
    "nextval", "lastval", "setval", "last_insert_id", "connection_id", "user", "current_user",
    "session_user", "system_user", "current_role", "database", "schema", "version",
    "found_rows", "row_count", "uuid_short", "sys_exec", "sys_eval", "wsrep_last_seen_gtid",
    "wsrep_last_written_gtid", "wsrep_sync_wait_upto_gtid", "binlog_gtid_pos",
})  # fmt: skip
"""Built-ins (as the server prints them) that wait, lock, read files, advance sequences or
tell who and where the session is: never in the server's reading of a served statement."""
_SHOWN = {exp.Parameter: "a user variable", exp.SessionParameter: "a system variable",
          exp.Placeholder: "a parameter", exp.Into: "SELECT ... INTO", exp.Lock: "a locking read",
          exp.Hint: "an optimizer hint"}  # fmt: skip


def read_mysql(sql: str, allowed: frozenset[str], catalogue: Catalogue | None) -> None:
    """Raise :class:`Refused` unless ``sql`` is one read-only query over allowed databases.

    >>> read_mysql("SELECT sum(amount) FROM finance.payments", frozenset({"finance"}), None)
    >>> read_mysql("SELECT 1 /*!50000 , (SELECT 1 FROM hr.salaries) */", frozenset(), None)
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: the statement holds a comment the server executes or obeys (/*!...*/, /*M!...*/ or /*+...*/)
    """
    tokens = _tokens(sql)
    _refuse_obeyed_comments(tokens)
    try:
        statements = [s for s in sqlglot.parse(sql, read=_DIALECT) if s is not None]
    except (sqlglot.errors.SqlglotError, RecursionError) as error:
        raise Refused(f"the statement cannot be read as MySQL: {_first(error)}") from error
    if len(statements) != 1:
        raise Refused(f"expected exactly one statement, found {len(statements)}")
    root = statements[0]
    if not isinstance(root, exp.Query | exp.Values):
        raise Refused(f"only read-only queries are allowed, not {_first_word(tokens)}")
    database = catalogue.search_path[0] if catalogue and catalogue.search_path else None
    for node in root.walk():
        _check_node(node, allowed, database, catalogue)


def _check_node(
    node: exp.Expr,
    allowed: frozenset[str],
    database: str | None,
    catalogue: Catalogue | None,
) -> None:
    if isinstance(node, _FORBIDDEN_NODES):
        what = _SHOWN.get(type(node), node.key.upper())
        raise Refused(f"only read-only queries are allowed, not {what}")
    if isinstance(node, exp.Func):
        _check_function(node)
    elif isinstance(node, exp.Table):
        _check_table(node, allowed, database)
        _check_unsafe(node, database, catalogue)


def _check_function(node: exp.Func) -> None:
    name = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
    if isinstance(node.parent, exp.Dot) and node.parent.expression is node:
        raise Refused(f"function {node.parent.sql(_DIALECT)} is qualified; only built-ins run")
    if name not in allowed_functions(MYSQL):
        raise Refused(f"function {name} is not on the MySQL allowlist")


def _check_table(node: exp.Table, allowed: frozenset[str], database: str | None) -> None:
    if isinstance(node.this, exp.JSONTable):
        return  # rows of a JSON value: reads no relation (its arguments are walked as usual)
    if not isinstance(node.this, exp.Identifier):
        raise Refused(f"{node.this.sql(_DIALECT)} is not a table the filter can resolve")
    if node.catalog:
        raise Refused(f"table {node.sql(_DIALECT)} has a catalog part MySQL does not have")
    if node.db:
        if node.db not in allowed:
            raise Refused(
                f"table {node.db}.{node.name} is outside the allowlisted databases {sorted(allowed)}"
            )
        return
    if _is_cte(node):
        return
    if database is None or database not in allowed:
        where = "no database" if database is None else f"database {database}"
        raise Refused(
            f"table {node.name} is unqualified and resolves to {where}, outside the "
            f"allowlisted databases {sorted(allowed)}"
        )


def view_body_problem(
    definition: str, allowed: frozenset[str], catalogue: Catalogue | None = None
) -> str | None:
    """Why a view body (``information_schema.VIEWS``: every table qualified) must not be served,
    or None: the checks a statement gets (allowlisted functions, no stored routine, tables in
    allowed databases). A view runs with its definer's rights, so a body that calls
    ``LOAD_FILE`` or a definer's function reading ``hr`` leaks through a name in ``sales``.

    >>> view_body_problem("select `sales`.`o`.`a` AS `a` from `sales`.`o`", frozenset({"sales"}))
    >>> view_body_problem("select load_file('/etc/passwd') AS `f`", frozenset({"sales"}))
    'function load_file is not on the MySQL allowlist'
    """
    try:
        read_mysql(definition, allowed, catalogue)
    except Refused as refusal:
        return str(refusal)
    return None


def _check_unsafe(node: exp.Table, database: str | None, catalogue: Catalogue | None) -> None:
    """Refuse a view the catalogue found reading outside the allowlist: a materialised
    (``TEMPTABLE`` or aggregating) view is not expanded in the server's reading."""
    if catalogue is None or not isinstance(node.this, exp.Identifier):
        return
    schema = node.db or (None if _is_cte(node) else database)
    why = catalogue.why_unsafe(schema, node.name) if schema else None
    if why is not None:
        raise Refused(f"{schema}.{node.name} {why}")


def _is_cte(table: exp.Table) -> bool:
    """Whether an unqualified name refers to a CTE of a query enclosing it."""
    parent = table.parent
    while parent is not None:
        with_ = parent.args.get("with_") or parent.args.get("with")
        if isinstance(with_, exp.With) and any(
            cte.alias == table.name for cte in with_.expressions
        ):
            return True
        parent = parent.parent
    return False


def check_server_reading(
    text: str, allowed: frozenset[str], databases: frozenset[str], aliases: frozenset[str]
) -> None:
    """Refuse when the server's own reading of a statement reads outside ``allowed``.

    ``text`` is what the server says it will run (MariaDB's ``EXPLAIN EXTENDED`` note 1003):
    every table is written as a back-quoted ``db.table`` (columns as ``db.table.column``), view
    bodies expanded. A back-quoted chain of two or three names whose first name is a database
    the connection can see (``databases``) must name an allowlisted one; derived-table and CTE
    names (``aliases``, from sqlglot's reading) are not databases.

    >>> check_server_reading("select `s`.`t`.`a` AS `a` from `s`.`t`", frozenset({"s"}),
    ...                      frozenset({"s", "hr"}), frozenset())
    >>> check_server_reading("select 1 from `hr`.`salaries`", frozenset({"s"}),
    ...                      frozenset({"s", "hr"}), frozenset())
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: the server reads hr.salaries, outside the allowlisted databases ['s']
    """
    tokens = _tokens(text)
    _refuse_server_calls(tokens)
    for index, token in enumerate(tokens[:-2]):
        if not _quoted_name(token) or tokens[index + 1].token_type != TokenType.DOT:
            continue
        if index > 0 and tokens[index - 1].token_type == TokenType.DOT:
            continue  # the middle of a chain, already seen from its start
        follower = tokens[index + 2]
        if not _quoted_name(follower):
            continue
        first = token.text
        if first in allowed or first in aliases or first not in databases:
            continue
        raise Refused(
            f"the server reads {first}.{follower.text}, outside the allowlisted databases "
            f"{sorted(allowed)}"
        )


def _refuse_server_calls(tokens: list[Token]) -> None:
    """Refuse a stored routine call and a built-in with effects in the server's reading.

    The server prints a stored function back-quoted (`` `f`(...) `` or `` `db`.`f`(...) ``) and a
    built-in bare (``load_file(...)``). An unqualified call of a name MariaDB has no built-in for
    (``any_value``, say) resolves to a stored function of the connection's database, which the
    first reading took for the built-in; and a view body, expanded here, may call what the
    statement itself does not.
    """
    for index, token in enumerate(tokens[:-1]):
        if tokens[index + 1].token_type != TokenType.L_PAREN:
            continue
        if token.token_type == TokenType.IDENTIFIER:
            raise Refused(f"the server calls the stored routine {token.text}")
        if token.text.lower() in SERVER_FUNCTIONS_WITH_EFFECTS:
            raise Refused(f"the server calls {token.text.lower()}(), which is not read-only")


SYSTEM_DATABASES = frozenset({"information_schema", "mysql", "performance_schema", "sys"})


def check_server_effects(text: str) -> None:
    """The database layer's check of the server's own reading of a statement: refuse one that
    reads a system variable (``@@datadir``), a system database, a stored routine or a built-in
    that waits, locks, reads a file or tells who and where the session is. Privileges cannot
    forbid these on MySQL (every account may call ``LOAD_FILE``, ``GET_LOCK`` or read
    ``@@datadir``), so the layer reads what the server will run instead.

    >>> check_server_effects("select `sales`.`o`.`a` AS `a` from `sales`.`o`")
    >>> check_server_effects("select @@datadir AS `@@datadir`")
    Traceback (most recent call last):
    ...
    t2s_pipeline.execution.reading.Refused: the server reads the system variable @@datadir
    """
    tokens = _tokens(text)
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.SESSION_PARAMETER:
            name = tokens[index + 1].text if index + 1 < len(tokens) else ""
            raise Refused(f"the server reads the system variable @@{name}")
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            _quoted_name(token)
            and token.text.lower() in SYSTEM_DATABASES
            and following is not None
            and following.token_type == TokenType.DOT
        ):
            raise Refused(f"the server reads the system database {token.text}")
    _refuse_server_calls(tokens)


_SELECT_LIST_ENDS = frozenset(
    {TokenType.FROM, TokenType.UNION, TokenType.EXCEPT, TokenType.INTERSECT, TokenType.WHERE,
     TokenType.GROUP_BY, TokenType.HAVING, TokenType.ORDER_BY, TokenType.LIMIT, TokenType.WINDOW}
)  # fmt: skip


def selected_columns(text: str) -> int | None:
    """How many columns the outermost select list of the server's reading names (the first
    ``select`` outside parentheses; ``*`` is already expanded there), or None when it has none.

    >>> selected_columns("with c as (select 1 AS `a`) select `c`.`a` AS `a`,concat('x','y') "
    ...                  "AS `b` from `c` union select 2 AS `2`,3")
    2
    """
    tokens = _tokens(text)
    depth, counting, commas = 0, False, 0
    for token in tokens:
        kind = token.token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and kind == TokenType.SELECT:
            if counting:
                break
            counting = True
        elif depth == 0 and counting and kind in _SELECT_LIST_ENDS:
            break
        elif depth == 0 and counting and kind == TokenType.COMMA:
            commas += 1
    return commas + 1 if counting else None


def statement_aliases(sql: str) -> frozenset[str]:
    """CTE and derived-table names of a statement sqlglot reads (empty when it cannot)."""
    try:
        root = sqlglot.parse_one(sql, read=_DIALECT)
    except (sqlglot.errors.SqlglotError, RecursionError):
        return frozenset()
    names = {cte.alias for cte in root.find_all(exp.CTE)}
    names |= {s.alias for s in root.find_all(exp.Subquery) if s.alias}
    names |= {t.alias for t in root.find_all(exp.Table) if t.alias}
    return frozenset(names)


def _tokens(sql: str) -> list[Token]:
    try:
        return sqlglot.tokenize(sql, read=_DIALECT)
    except (sqlglot.errors.SqlglotError, RecursionError) as error:
        raise Refused(f"the statement cannot be read as MySQL: {_first(error)}") from error


def _refuse_obeyed_comments(tokens: list[Token]) -> None:
    for token in tokens:
        for comment in token.comments:
            if comment.startswith(_OBEYED_COMMENTS):  # sqlglot keeps what follows "/*"
                raise Refused(
                    "the statement holds a comment the server executes or obeys "
                    "(/*!...*/, /*M!...*/ or /*+...*/)"
                )


def _quoted_name(token: Token) -> bool:
    return token.token_type in (TokenType.IDENTIFIER, TokenType.VAR)


def _first_word(tokens: list[Token]) -> str:
    return tokens[0].text.upper() if tokens else "an empty statement"


def _first(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
