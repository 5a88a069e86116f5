"""What a PostgreSQL connection's role can reach, read from the catalogue before any use.

The database layer is only as strong as the role it connects as, so :func:`verify_reader`
checks it before serving anything and names every offending object with the fix:

- not a superuser, no BYPASSRLS, CREATEROLE or CREATEDB, no server-file or read/write-all roles;
- no SELECT on any relation outside the allowlisted schemas, no write privilege anywhere, and
  it owns nothing (an owner can grant itself more, or alter what others read);
- nothing it can read depends on a relation outside the allowlist: a view or materialised view
  of an allowed schema that reads a sensitive one, or calls a SECURITY DEFINER function or a
  function off the allowlist, returns the owner's rows through both layers;
- it can execute no SECURITY DEFINER function outside pg_catalog, and none of the
  privilege-bypassing catalogue functions (:data:`BYPASSING_FUNCTIONS`).

:func:`read_catalogue` gives the statement filter the role's effective search path, the
relations on it and the unsafe views of allowed schemas (from ``pg_depend``, so no definition
function is needed).
"""

from __future__ import annotations

from typing import Any

from t2s_pipeline.execution.allowlists import allowed_functions
from t2s_pipeline.execution.catalogue import Catalogue
from t2s_pipeline.execution.engine import POSTGRES
from t2s_pipeline.execution.policy import fold_schema_names

BYPASSING_FUNCTIONS: tuple[str, ...] = (
    "pg_show_all_settings", "pg_show_all_file_settings", "pg_get_viewdef", "pg_get_functiondef",
    "obj_description", "col_description", "shobj_description", "pg_stat_get_activity",
    "pg_stat_get_live_tuples", "pg_stat_get_numscans", "pg_notify", "pg_current_xact_id",
    "txid_current", "inet_server_addr", "pg_try_advisory_lock", "pg_advisory_lock",
    "pg_terminate_backend", "pg_cancel_backend", "pg_read_file", "pg_ls_dir", "lo_create",
    "lo_import", "query_to_xml", "set_config", "pg_sleep", "pg_relation_filepath",
)  # fmt: skip
"""Catalogue functions PUBLIC may call by default that read past privileges or change state;
a reader must not be able to execute any (``t2s demo load-postgres`` revokes them)."""

_POWERFUL_ROLES = (
    "pg_read_server_files", "pg_write_server_files", "pg_execute_server_program",
    "pg_read_all_data", "pg_write_all_data", "pg_read_all_settings", "pg_read_all_stats",
    "pg_monitor", "pg_signal_backend",
)  # fmt: skip

CATALOGUE_COLUMNS: dict[str, tuple[str, ...] | None] = {
    "pg_class": ("oid", "relname", "relnamespace", "relkind", "relowner"),
    "pg_attribute": None,
    "pg_description": None,
    "pg_attrdef": None,
    "pg_constraint": None,
    "pg_index": None,
    "pg_rewrite": ("oid", "ev_class"),
    "pg_proc": ("oid", "proname", "pronamespace", "prosecdef", "proowner"),
    "pg_statistic_ext": None,
    "pg_trigger": None,
    "pg_policy": None,
}
"""What a reader may still select from the catalogue tables that describe relations: the
columns the role check reads (None: nothing). PostgreSQL lets every role read every catalogue
table, so without this a reader learns the column names, comments, row estimates, defaults,
constraints and view text of schemas it cannot enter. ``t2s demo load-postgres`` revokes SELECT
on each table from PUBLIC and grants back these columns."""

_CATALOGUE_SQL = """
SELECT c.relname, a.attname FROM pg_class c
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relnamespace = 'pg_catalog'::regnamespace AND c.relname = ANY(%s)
  AND has_column_privilege(c.oid, a.attnum, 'SELECT')
ORDER BY 1, 2
"""
_ROLE_SQL = """
SELECT rolsuper OR rolbypassrls, rolcreaterole OR rolcreatedb,
       ARRAY(SELECT r.rolname FROM pg_roles r
             WHERE r.rolname = ANY(%s) AND pg_has_role(current_user, r.oid, 'MEMBER'))
FROM pg_roles WHERE rolname = current_user
"""
_RELATIONS_SQL = """
SELECT n.nspname, c.relname,
       has_table_privilege(c.oid, 'SELECT') OR has_any_column_privilege(c.oid, 'SELECT'),
       has_table_privilege(c.oid, 'INSERT,UPDATE,DELETE,TRUNCATE'),
       pg_has_role(c.relowner, 'USAGE')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'f', 'p')
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
ORDER BY 1, 2
"""
_DEPENDENCIES_SQL = """
SELECT vn.nspname, v.relname, dn.nspname, d.relname, 'relation', false
FROM pg_class v JOIN pg_namespace vn ON vn.oid = v.relnamespace
JOIN pg_rewrite r ON r.ev_class = v.oid
JOIN pg_depend dep ON dep.classid = 'pg_rewrite'::regclass AND dep.objid = r.oid
     AND dep.refclassid = 'pg_class'::regclass
JOIN pg_class d ON d.oid = dep.refobjid JOIN pg_namespace dn ON dn.oid = d.relnamespace
WHERE v.relkind IN ('v', 'm') AND d.oid <> v.oid
UNION
SELECT vn.nspname, v.relname, pn.nspname, p.proname, 'function', p.prosecdef
FROM pg_class v JOIN pg_namespace vn ON vn.oid = v.relnamespace
JOIN pg_rewrite r ON r.ev_class = v.oid
JOIN pg_depend dep ON dep.classid = 'pg_rewrite'::regclass AND dep.objid = r.oid
     AND dep.refclassid = 'pg_proc'::regclass
JOIN pg_proc p ON p.oid = dep.refobjid JOIN pg_namespace pn ON pn.oid = p.pronamespace
WHERE v.relkind IN ('v', 'm')
ORDER BY 1, 2, 3, 4
"""
_DEFINERS_SQL = """
SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND has_function_privilege(p.oid, 'EXECUTE')
ORDER BY 1, 2
"""
_BYPASSING_SQL = """
SELECT DISTINCT p.proname FROM pg_proc p
WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = ANY(%s)
  AND has_function_privilege(p.oid, 'EXECUTE')
ORDER BY 1
"""
_OWNED_SQL = """
SELECT 'relation ' || n.nspname || '.' || c.relname FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relowner = current_user::regrole
UNION ALL SELECT 'schema ' || nspname FROM pg_namespace WHERE nspowner = current_user::regrole
UNION ALL SELECT 'function ' || proname FROM pg_proc WHERE proowner = current_user::regrole
ORDER BY 1
"""
_SEARCH_SQL = """
SELECT current_schemas(true), current_database(),
       ARRAY(SELECT n.nspname || '.' || c.relname FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = ANY(current_schemas(true)) AND c.relkind IN ('r','v','m','f','p'))
"""


def read_catalogue(conn: Any, allowed_schemas: tuple[str, ...]) -> Catalogue:
    """The search path, its relations and the unsafe views of allowed schemas, for the filter."""
    allowed = fold_schema_names(allowed_schemas, POSTGRES)
    with conn.cursor() as cursor:
        cursor.execute(_SEARCH_SQL)
        path, database, names = cursor.fetchone()
        cursor.execute(_DEPENDENCIES_SQL)
        dependencies = cursor.fetchall()
    relations = frozenset((s, n) for s, _, n in (str(name).partition(".") for name in names))
    return Catalogue(
        search_path=tuple(str(s) for s in path),
        relations=relations,
        unsafe=tuple(sorted(unsafe_views(dependencies, allowed).items_with_reasons())),
        database=str(database),
    )


def verify_reader(conn: Any, allowed_schemas: tuple[str, ...]) -> list[str]:
    """What makes the connection's role more than a reader of the allowlist (empty if nothing)."""
    allowed = fold_schema_names(allowed_schemas, POSTGRES)
    with conn.cursor() as cursor:
        cursor.execute(_ROLE_SQL, (list(_POWERFUL_ROLES),))
        superuser, creates, powerful = cursor.fetchone()
        cursor.execute(_RELATIONS_SQL)
        relations = cursor.fetchall()
        cursor.execute(_DEPENDENCIES_SQL)
        dependencies = cursor.fetchall()
        cursor.execute(_DEFINERS_SQL)
        definers = [f"{s}.{n}" for s, n in cursor.fetchall()]
        cursor.execute(_BYPASSING_SQL, (list(BYPASSING_FUNCTIONS),))
        bypassing = [str(row[0]) for row in cursor.fetchall()]
        cursor.execute(_OWNED_SQL)
        owned = [str(row[0]) for row in cursor.fetchall()]
    catalogue = _readable_catalogue(conn)
    problems = []
    if superuser:
        problems.append("is a superuser or bypasses row security")
    if creates:
        problems.append("can create roles or databases (and so alter itself)")
    if powerful:
        problems.append(f"is a member of {', '.join(powerful)}")
    readable = [f"{s}.{t}" for s, t, read, _, _ in relations if read and s not in allowed]
    writable = [f"{s}.{t}" for s, t, _, write, _ in relations if write]
    if readable:
        problems.append(f"can read outside the allowlist ({_sample(readable)})")
    if writable:
        problems.append(f"can write ({_sample(writable)})")
    if owned:
        problems.append(f"owns {_sample(owned)} (a reader must own nothing)")
    readable_here = {(s, t) for s, t, read, _, _ in relations if read}
    for (schema, name), why in unsafe_views(dependencies, allowed).reasons.items():
        if (schema, name) in readable_here:
            problems.append(
                f"can read {schema}.{name}, which {why}; revoke SELECT on it or drop it"
            )
    if definers:
        problems.append(
            f"can execute SECURITY DEFINER functions {_sample(definers)}; revoke EXECUTE on them"
        )
    if bypassing:
        problems.append(
            f"can execute the privilege-bypassing functions {_sample(bypassing)}; revoke EXECUTE "
            "on them FROM PUBLIC in this database (t2s demo load-postgres does)"
        )
    if catalogue:
        problems.append(
            f"can read catalogue columns that describe other schemas ({_sample(catalogue)}); "
            "revoke SELECT on those tables FROM PUBLIC and grant back only the columns of "
            "CATALOGUE_COLUMNS (t2s demo load-postgres does)"
        )
    return problems


def _readable_catalogue(conn: Any) -> list[str]:
    """Catalogue columns the role can select beyond :data:`CATALOGUE_COLUMNS`.

    The check itself needs ``pg_attribute``, which a proper reader cannot read: it is then
    asked table by table with ``has_column_privilege`` on the columns it might name.
    """
    tables = sorted(CATALOGUE_COLUMNS)
    with conn.cursor() as cursor:
        if _can_select(cursor, "pg_catalog.pg_attribute", "attname"):
            cursor.execute(_CATALOGUE_SQL, (tables,))
            readable = [(str(t), str(c)) for t, c in cursor.fetchall()]
        else:
            readable = [
                (table, column)
                for table in tables
                for column in _PROBE_COLUMNS.get(table, ())
                if _can_select(cursor, f"pg_catalog.{table}", column)
            ]
    return [
        f"{table}.{column}"
        for table, column in readable
        if column not in (CATALOGUE_COLUMNS.get(table) or ())
    ]


def _can_select(cursor: Any, table: str, column: str) -> bool:
    cursor.execute("SELECT has_column_privilege(%s, %s, 'SELECT')", (table, column))
    return bool(cursor.fetchone()[0])


_PROBE_COLUMNS: dict[str, tuple[str, ...]] = {
    "pg_class": ("reltuples", "relpages", "relacl", "reloptions"),
    "pg_attribute": ("attname", "atttypid"),
    "pg_description": ("description",),
    "pg_attrdef": ("adbin",),
    "pg_constraint": ("conname", "conbin"),
    "pg_index": ("indexprs", "indkey"),
    "pg_rewrite": ("ev_action", "ev_qual"),
    "pg_proc": ("prosrc", "proargnames"),
    "pg_statistic_ext": ("stxname",),
    "pg_trigger": ("tgname",),
    "pg_policy": ("polqual",),
}
"""Columns that give a catalogue table away, probed when ``pg_attribute`` cannot be read."""


class UnsafeViews:
    """Views of allowed schemas and why each must not be served."""

    def __init__(self) -> None:
        self.reasons: dict[tuple[str, str], str] = {}

    def items_with_reasons(self) -> list[tuple[str, str, str]]:
        return [(s, n, why) for (s, n), why in self.reasons.items()]


def unsafe_views(dependencies: list[tuple[Any, ...]], allowed: frozenset[str]) -> UnsafeViews:
    """Views (and materialised views) of allowed schemas whose reads or calls leave the allowlist.

    A view that reads an unsafe view is unsafe too; the check repeats until nothing changes.
    """
    functions = allowed_functions(POSTGRES)
    found = UnsafeViews()
    changed = True
    while changed:
        changed = False
        for view_schema, view, schema, name, kind, definer in dependencies:
            key = (str(view_schema), str(view))
            if key in found.reasons or key[0] not in allowed:
                continue
            why = _why(str(schema), str(name), str(kind), bool(definer), allowed, functions, found)
            if why is not None:
                found.reasons[key] = why
                changed = True
    return found


def _why(
    schema: str,
    name: str,
    kind: str,
    definer: bool,
    allowed: frozenset[str],
    functions: frozenset[str],
    found: UnsafeViews,
) -> str | None:
    if kind == "relation":
        if schema not in allowed:
            return f"reads {schema}.{name}, outside the allowlist"
        if (schema, name) in found.reasons:
            return f"reads the unsafe view {schema}.{name}"
        return None
    if definer:
        return f"calls the SECURITY DEFINER function {schema}.{name}"
    if schema != "pg_catalog" or name not in functions:
        return f"calls {schema}.{name}, which is not on the function allowlist"
    return None


def _sample(names: list[str]) -> str:
    shown = ", ".join(names[:3])
    return shown if len(names) <= 3 else f"{shown} and {len(names) - 3} more"
