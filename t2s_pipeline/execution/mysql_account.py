"""What a MySQL/MariaDB account can reach, read before any use, and how names resolve for it.

The database layer is only as strong as the account it connects as, so :func:`verify_reader`
checks it from ``information_schema`` (which shows an account its own grants) and names every
offending grant with the fix:

- no global privilege but ``USAGE`` (no ``FILE``, ``PROCESS``, ``SUPER``, ``SELECT`` on
  ``*.*``...), no role, no proxy, no routine privilege;
- database, table and column privileges are ``SELECT`` (and ``SHOW VIEW``) on allowlisted
  databases only, named exactly: ``_`` and ``%`` in a database grant are wildcards, so
  ``sales_%`` would also match ``sales_hr``;
- no view of an allowlisted database it can read reads a table of another database (a
  ``SQL SECURITY DEFINER`` view returns its owner's rows through both layers).

:func:`read_catalogue` gives the filter the connection's database (where an unqualified name
resolves), the tables of the allowlisted databases and the unsafe views.
"""

from __future__ import annotations

from typing import Any

from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.read_mysql import view_body_problem

READER_PRIVILEGES = frozenset({"SELECT", "SHOW VIEW"})
_GRANTEE_SQL = (
    "SELECT CONCAT('''', SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '''@''', "
    "SUBSTRING_INDEX(CURRENT_USER(), '@', -1), '''')"
)


def verify_reader(conn: Any, allowed: tuple[str, ...]) -> list[str]:
    """Every reason the account may read or do more than SELECT on ``allowed`` (empty: none)."""
    problems: list[str] = []
    with conn.cursor() as cursor:
        cursor.execute(_GRANTEE_SQL)
        grantee = cursor.fetchone()[0]
        cursor.execute(
            "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = %s",
            (grantee,),
        )
        extra = sorted({row[0] for row in cursor.fetchall()} - {"USAGE"})
        if extra:
            problems.append(f"holds global privileges {extra} (it must hold USAGE only)")
        problems += _scoped_problems(cursor, grantee, allowed)
        cursor.execute("SHOW GRANTS")
        for (line,) in cursor.fetchall():
            if (
                " ON PROCEDURE " in line
                or " ON FUNCTION " in line
                or line.startswith("GRANT PROXY")
            ):
                problems.append(f"has a routine or proxy grant ({line.split(' TO ')[0]})")
            elif not line.startswith("GRANT") or " ON " not in line:
                problems.append(f"is granted a role ({line.split(' TO ')[0]})")
    for schema, name, why in read_catalogue(conn, allowed).unsafe:
        problems.append(f"can read the view {schema}.{name}, which {why}")
    return problems


def _scoped_problems(cursor: Any, grantee: str, allowed: tuple[str, ...]) -> list[str]:
    problems = []
    queries = (
        ("SCHEMA_PRIVILEGES", "TABLE_SCHEMA, '*'"),
        ("TABLE_PRIVILEGES", "TABLE_SCHEMA, TABLE_NAME"),
        ("COLUMN_PRIVILEGES", "TABLE_SCHEMA, TABLE_NAME"),
    )
    for table, columns in queries:
        cursor.execute(
            f"SELECT {columns}, PRIVILEGE_TYPE FROM information_schema.{table} WHERE GRANTEE = %s",
            (grantee,),
        )
        for schema, name, privilege in cursor.fetchall():
            where = f"{schema}.{name}"
            if privilege not in READER_PRIVILEGES:
                problems.append(f"holds {privilege} on {where} (a reader holds SELECT only)")
            elif table == "SCHEMA_PRIVILEGES" and _unescaped(schema) not in allowed:
                problems.append(
                    f"holds {privilege} on {where}, outside the allowlisted databases "
                    f"{sorted(allowed)} (or a wildcard: escape _ and % in database grants)"
                )
            elif table != "SCHEMA_PRIVILEGES" and schema not in allowed:
                problems.append(f"holds {privilege} on {where}, outside {sorted(allowed)}")
    return problems


def _unescaped(pattern: str) -> str | None:
    """A database grant's name with ``\\_`` and ``\\%`` unescaped, or None when it holds an
    unescaped wildcard (then it matches more than one name).

    >>> _unescaped("sales"), _unescaped("t2s\\\\_demo"), _unescaped("t2s_demo")
    ('sales', 't2s_demo', None)
    """
    out, escaped = [], False
    for char in pattern:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "_%":
            return None
        else:
            out.append(char)
    return "".join(out)


def read_catalogue(conn: Any, allowed: tuple[str, ...]) -> Catalogue:
    """The connection's database, the relations of allowlisted databases and unsafe views."""
    with conn.cursor() as cursor:
        cursor.execute("SELECT DATABASE()")
        database = cursor.fetchone()[0]
        marks = ", ".join(["%s"] * len(allowed)) or "NULL"
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            f"WHERE TABLE_SCHEMA IN ({marks})",
            tuple(allowed),
        )
        relations = frozenset((str(s), str(n)) for s, n in cursor.fetchall())
        cursor.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM information_schema.VIEWS "
            f"WHERE TABLE_SCHEMA IN ({marks})",
            tuple(allowed),
        )
        views = cursor.fetchall()
    unsafe = unsafe_views(
        [(str(s), str(n), str(d or "")) for s, n, d in views], frozenset(allowed), database
    )
    return Catalogue(
        search_path=(database,) if database else (),
        relations=relations,
        unsafe=unsafe,
        database=database or "",
    )


def unsafe_views(
    views: list[tuple[str, str, str]], allowed: frozenset[str], database: str | None
) -> tuple[tuple[str, str, str], ...]:
    """``(schema, name, why)`` of every view that must not be served: its body fails the
    checks a statement gets (a table outside the allowlist, a function off the allowlist, a
    stored routine), or reads such a view, to any depth (repeated until nothing changes).

    >>> unsafe_views([("sales", "a", "select `hr`.`s`.`x` AS `x` from `hr`.`s`"),
    ...               ("sales", "b", "select `sales`.`a`.`x` AS `x` from `sales`.`a`")],
    ...              frozenset({"sales"}), "sales")[1][:2]
    ('sales', 'b')
    """
    found: dict[tuple[str, str], str] = {}
    while True:
        catalogue = Catalogue(
            search_path=(database,) if database else (),
            unsafe=tuple((s, n, why) for (s, n), why in found.items()),
        )
        fresh = {
            (schema, name): why
            for schema, name, definition in views
            if (schema, name) not in found
            and (why := _view_problem(definition, allowed, catalogue)) is not None
        }
        if not fresh:
            return tuple((s, n, why) for (s, n), why in found.items())
        found |= fresh


def _view_problem(definition: str, allowed: frozenset[str], catalogue: Catalogue) -> str | None:
    if not definition.strip():
        return "has a definition this account cannot see (grant SHOW VIEW to check it)"
    why = view_body_problem(definition, allowed, catalogue)
    return None if why is None else f"is unsafe: {why}"
