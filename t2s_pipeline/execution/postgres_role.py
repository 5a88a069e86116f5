"""The check that a PostgreSQL connection belongs to a least-privilege reader.

The database layer is only as strong as the role it connects as, so it checks the role before
serving anything: not a superuser (nor BYPASSRLS), no server-file or read/write-all roles,
no SELECT on any relation outside the allowlisted schemas, and no write privilege anywhere.
"""

from __future__ import annotations

from typing import Any

from t2s_pipeline.execution.policy import fold_schema_names

_POWERFUL_ROLES = (
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_read_all_data",
    "pg_write_all_data",
)

_ROLE_SQL = """
SELECT rolsuper, rolbypassrls,
       ARRAY(SELECT r.rolname FROM pg_roles r
             WHERE r.rolname = ANY(%s) AND pg_has_role(current_user, r.oid, 'MEMBER'))
FROM pg_roles WHERE rolname = current_user
"""

_RELATIONS_SQL = """
SELECT n.nspname, c.relname,
       has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'),
       has_table_privilege(c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p')
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
ORDER BY 1, 2
"""


def verify_reader(conn: Any, allowed_schemas: tuple[str, ...]) -> list[str]:
    """What makes the connection's role more than a reader of the allowlist (empty if nothing)."""
    allowed = fold_schema_names(allowed_schemas, "postgres")
    with conn.cursor() as cursor:
        cursor.execute(_ROLE_SQL, (list(_POWERFUL_ROLES),))
        superuser, bypass_rls, powerful = cursor.fetchone()
        cursor.execute(_RELATIONS_SQL)
        relations = cursor.fetchall()
    problems = []
    if superuser or bypass_rls:
        problems.append("is a superuser or bypasses row security")
    if powerful:
        problems.append(f"is a member of {', '.join(powerful)}")
    readable = [f"{s}.{t}" for s, t, read, _ in relations if read and s not in allowed]
    writable = [f"{s}.{t}" for s, t, _, write in relations if write]
    if readable:
        problems.append(f"can read outside the allowlist ({_sample(readable)})")
    if writable:
        problems.append(f"can write ({_sample(writable)})")
    return problems


def _sample(names: list[str]) -> str:
    shown = ", ".join(names[:3])
    return shown if len(names) <= 3 else f"{shown} and {len(names) - 3} more"
