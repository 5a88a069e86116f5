"""Load the demo warehouse into MySQL or MariaDB and create the SELECT-only account.

In MySQL a schema is a database, so :func:`load_mysql` (re)creates one database per demo
schema (``sales``, ``finance``, ``inventory``, and the sensitive ``hr`` and ``pii``) with the
same tables, keys and comments as DuckDB, copies every row from the DuckDB file in chunks, and
creates an account that can only read the allowlisted databases.

Pointing the harness at a real MySQL/MariaDB warehouse: create a dedicated account and give it
exactly what :func:`grant_reader` gives here, as an administrator::

    CREATE USER 't2s_reader'@'%' IDENTIFIED BY '...';
    GRANT SELECT, SHOW VIEW ON `sales`.* TO 't2s_reader'@'%';   -- per allowlisted database;
                                                                -- escape _ and % in the name
    -- MariaDB: cap every statement of the account, whatever its session asks
    ALTER USER 't2s_reader'@'%' WITH MAX_STATEMENT_TIME 30;     -- MariaDB only

Never grant sensitive databases, a global privilege, a role or a routine: with the database
layer on, the executor checks the account and refuses to open a connection that can read
outside the allowlist or write anything. Use the reader's URL
(``mysql://t2s_reader:...@host:3306/sales``) as the domain's database.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path
from typing import Any

import duckdb
import pymysql
import sqlglot
import yaml
from sqlglot import exp

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, TABLES, TableDef
from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.engine import MYSQL
from t2s_pipeline.execution.mysql_engine import MySQLTarget, mask_password
from t2s_pipeline.sql.analysis import order_keys
from t2s_pipeline.sql.meaning import filter_as_case, sort_keys

CHUNK_ROWS = 5_000
READER = "t2s_reader"
_TYPES = {"VARCHAR": "VARCHAR(255)", "BOOLEAN": "BOOLEAN", "TIMESTAMP": "DATETIME"}


def load_mysql(
    warehouse: Path,
    admin_url: str,
    account: str = READER,
    password: str = READER,
    schemas: tuple[str, ...] | None = None,
) -> str:
    """Load ``warehouse`` into fresh databases and return the read-only account's URL.

    Databases of the demo's schema names are dropped first. The account is (re)created with
    SELECT on the allowlisted databases only. ``schemas`` limits the load (default: all).
    """
    if not Path(warehouse).is_file():
        raise ExecutionError(f"warehouse {warehouse} does not exist; run `t2s demo build`")
    target = MySQLTarget.parse(admin_url)
    try:
        conn = target.connect()
    except pymysql.Error as error:
        raise ExecutionError(
            f"cannot connect to MySQL at {mask_password(admin_url)}: {error.args[-1]}"
        ) from error
    source = duckdb.connect(str(warehouse), read_only=True)
    wanted = [t for t in TABLES if schemas is None or t.schema in schemas]
    try:
        with conn.cursor() as cursor:
            for schema in sorted({t.schema for t in wanted}):
                cursor.execute(f"DROP DATABASE IF EXISTS `{schema}`")
                cursor.execute(f"CREATE DATABASE `{schema}` CHARACTER SET utf8mb4")
            for definition in wanted:
                cursor.execute(create_table(definition))
                _copy_rows(source, cursor, definition)
            grant_reader(cursor, account, password, ALLOWED_SCHEMAS)
    finally:
        source.close()
        conn.close()
    return reader_url(admin_url, account, password, ALLOWED_SCHEMAS[0])


def create_table(definition: TableDef) -> str:
    """``CREATE TABLE`` with MySQL types, the primary key and the comments inline.

    >>> print(create_table(TABLES[0]).splitlines()[1])
      `site_id` VARCHAR(255) COMMENT 'Site code, e.g. ''S01''.',
    """
    columns = [
        f"  `{c.name}` {_TYPES.get(c.type, c.type)}"
        + (f" COMMENT {_quote(c.comment)}" if c.comment else "")
        for c in definition.columns
    ]
    key = ", ".join(f"`{name}`" for name in definition.primary_key)
    # An index per reference column (``*_id`` outside the key), as a warehouse on MySQL has:
    # without one a join is a nested loop over the whole table (one gold query took > 30 s).
    references = [
        f"  KEY (`{c.name}`)"
        for c in definition.columns
        if c.name.endswith("_id") and c.name not in definition.primary_key[:1]
    ]
    body = ",\n".join([*columns, f"  PRIMARY KEY ({key})", *references])
    return (
        f"CREATE TABLE `{definition.schema}`.`{definition.name}` (\n{body}\n)"
        f" COMMENT={_quote(definition.comment)}"
    )


def grant_reader(cursor: Any, account: str, password: str, schemas: tuple[str, ...]) -> None:
    """(Re)create ``account`` with SELECT and SHOW VIEW on ``schemas`` and nothing else."""
    cursor.execute("DROP USER IF EXISTS %s@'%%'", (account,))
    cursor.execute("CREATE USER %s@'%%' IDENTIFIED BY %s", (account, password))
    for schema in schemas:
        escaped = schema.replace("_", "\\_").replace("%", "\\%%")
        cursor.execute(f"GRANT SELECT, SHOW VIEW ON `{escaped}`.* TO %s@'%%'", (account,))


def reader_url(admin_url: str, account: str, password: str, database: str) -> str:
    """``admin_url`` logging in as ``account`` to ``database``.

    >>> reader_url("mysql://root:pw@127.0.0.1:3306/", "r", "s", "sales")
    'mysql://r:s@127.0.0.1:3306/sales'
    """
    parts = urllib.parse.urlsplit(admin_url)
    host = parts.netloc.rsplit("@", 1)[-1]
    login = f"{urllib.parse.quote(account, safe='')}:{urllib.parse.quote(password, safe='')}"
    return urllib.parse.urlunsplit(
        parts._replace(netloc=f"{login}@{host}", path="/" + urllib.parse.quote(database))
    )


def write_mysql_cases(source: Path, out: Path, database: str) -> int:
    """A copy of the case folder ``source`` for MySQL: every gold query transpiled by sqlglot
    from the source domain's dialect, the domain's engine, dialect and ``database`` (a URL,
    ``${NAME}`` for the password) replaced; returns the number of cases written. The expected
    results, phrasings and tags are kept, so the two folders describe the same questions.
    """
    domain = yaml.safe_load((source / "domain.yaml").read_text(encoding="utf-8"))
    read = str(domain["dialect"])
    out.mkdir(parents=True, exist_ok=True)
    domain |= {"name": f"{domain.get('name', source.name)}-mysql", "engine": MYSQL,
               "dialect": MYSQL, "database": database}  # fmt: skip
    domain.pop("snapshot", None)  # a DuckDB file's hash: a server has none
    (out / "domain.yaml").write_text(
        f"# {source.name} on MySQL/MariaDB: written by `t2s demo load-mysql --cases-out`.\n"
        + yaml.safe_dump(domain, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
    written = 0
    for path in sorted(source.glob("*.yaml")):
        if path.name in ("domain.yaml", "labels.yaml"):
            continue
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        case["gold_sql"] = transpile_sql(str(case["gold_sql"]), read) + "\n"
        (out / path.name).write_text(
            yaml.safe_dump(case, sort_keys=False, allow_unicode=True), encoding="utf-8"
        )
        written += 1
    return written


def transpile_sql(sql: str, read: str) -> str:
    """``sql`` written for MySQL by sqlglot (NULL ordering and date literals made explicit;
    an aggregate's ``FILTER (WHERE c)``, which MySQL lacks, becomes ``CASE WHEN c``; the
    ORDER BY and LIMIT of a query with ``QUALIFY`` kept on the outermost query).

    >>> transpile_sql("SELECT order_date FROM sales.orders WHERE order_date >= DATE '2025-01-01'",
    ...               "duckdb")
    "SELECT order_date FROM sales.orders WHERE order_date >= CAST('2025-01-01' AS DATE)"
    >>> transpile_sql("SELECT COUNT(*) FILTER (WHERE a > 1), SUM(x) FILTER (WHERE b) FROM t",
    ...               "duckdb")
    'SELECT COUNT(CASE WHEN a > 1 THEN 1 END), SUM(CASE WHEN b THEN x END) FROM t'
    >>> transpile_sql("SELECT a, SUM(x) AS s FROM t GROUP BY a "
    ...               "QUALIFY RANK() OVER (ORDER BY SUM(x) DESC) <= 2 ORDER BY s DESC", "duckdb")
    'SELECT a, s FROM (SELECT a, s FROM (SELECT a, SUM(x) AS s, RANK() OVER (ORDER BY SUM(x) DESC) AS _w FROM t GROUP BY a) AS _t WHERE _w <= 2) AS _q ORDER BY s DESC'
    """
    trees = [tree for tree in sqlglot.parse(sql, read=read) if tree is not None]
    return ";\n".join(
        _order_outside_qualify(tree).transform(_filter_as_case).sql(MYSQL) for tree in trees
    )


def _filter_as_case(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.AggFunc):
        return filter_as_case(node) or node
    return node


def _order_outside_qualify(tree: exp.Expr) -> exp.Expr:
    """sqlglot writes ``QUALIFY`` for MySQL as a derived table filtered outside and leaves
    ORDER BY and LIMIT inside it, where MySQL does not keep the order: wrap the query so they
    apply to the outermost result, by output name."""
    if not isinstance(tree, exp.Select) or tree.args.get("qualify") is None:
        return tree
    order, limit = tree.args.get("order"), tree.args.get("limit")
    keys = order_keys(tree)
    names = [s.alias_or_name for s in tree.selects]
    if order is None and limit is None or keys is None or len(set(names)) != len(names):
        return tree
    inner = tree.copy()
    for part in ("order", "limit", "offset"):
        inner.set(part, None)
    outer = exp.select(*(exp.column(n) for n in names)).from_(inner.subquery("_q"))
    if order is not None:
        items = [
            exp.Ordered(this=exp.column(names[k]), desc=o.args.get("desc"),
                        nulls_first=o.args.get("nulls_first"))
            for k, o in zip(keys, sort_keys(order), strict=True)
        ]  # fmt: skip
        outer.set("order", exp.Order(expressions=items))
    for part in ("limit", "offset"):
        outer.set(part, tree.args.get(part))
    return outer


def _copy_rows(source: Any, cursor: Any, definition: TableDef) -> None:
    names = [c.name for c in definition.columns]
    listed = ", ".join(f"`{n}`" for n in names)
    marks = ", ".join(["%s"] * len(names))
    insert = f"INSERT INTO `{definition.schema}`.`{definition.name}` ({listed}) VALUES ({marks})"
    result = source.execute(f"SELECT {', '.join(names)} FROM {definition.qualified}")
    while rows := result.fetchmany(CHUNK_ROWS):
        cursor.executemany(insert, rows)


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
