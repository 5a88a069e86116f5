"""What the guard denies by name: functions, table functions, and each dialect's default schema.

One list serves every layer that checks names (the statement filter and the SQLite authorizer),
and it is the union over engines: a function that reads files in DuckDB is denied in every
dialect, since a name that is harmless in one engine is rarely needed in another.

Decisions:

- ``current_setting`` is allowed: it only reads a setting, and the server already hides
  privileged ones from a non-superuser. ``set_config`` is denied: it writes one.
- Table functions in ``FROM`` are allowed only from :data:`TABLE_FUNCTIONS` (series and
  ``unnest``). They can still be asked for a huge range; that is bounded by the executor's timer
  and row cap, not by the filter, which does not estimate cost.
"""

from __future__ import annotations

import functools

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

DENIED_FUNCTIONS: frozenset[str] = frozenset(
    {
        # DuckDB: files, network, nested queries, environment, extensions
        "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "parquet_metadata",
        "parquet_schema", "parquet_file_metadata", "parquet_kv_metadata", "read_json",
        "read_json_auto", "read_json_objects", "read_json_objects_auto", "read_ndjson",
        "read_ndjson_auto", "read_ndjson_objects", "read_text", "read_blob", "read_xlsx",
        "glob", "sniff_csv", "query", "query_table", "getenv", "iceberg_scan", "delta_scan",
        "sqlite_scan", "sqlite_attach", "postgres_scan", "postgres_attach", "postgres_query",
        "postgres_execute", "mysql_scan", "mysql_query", "st_read", "load_extension",
        "checkpoint", "force_checkpoint", "duckdb_secrets", "which_secret", "sleep_ms",
        # PostgreSQL: server files, large objects, remote links, sleep, admin, settings
        "pg_read_file", "pg_read_binary_file", "pg_stat_file", "pg_file_write",
        "pg_file_rename", "pg_file_unlink", "lo_import", "lo_export", "lo_create", "lo_creat",
        "lo_from_bytea", "lo_put", "lo_unlink", "lowrite", "pg_sleep", "pg_sleep_for",
        "pg_sleep_until", "pg_terminate_backend", "pg_cancel_backend", "pg_reload_conf",
        "pg_rotate_logfile", "pg_promote", "pg_switch_wal", "set_config", "nextval", "setval",
        "pg_notify", "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
        "cursor_to_xml", "cursor_to_xmlschema", "table_to_xml", "table_to_xmlschema",
        "table_to_xml_and_xmlschema", "schema_to_xml", "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema", "database_to_xml", "database_to_xmlschema",
        "database_to_xml_and_xmlschema", "pg_import_system_collations", "txid_current",
        # SQLite: extensions and file I/O (fileio), the shell's edit()
        "readfile", "writefile", "edit", "fts3_tokenizer",
    }
)  # fmt: skip

DENIED_PREFIXES: tuple[str, ...] = (
    "dblink",
    "pg_ls_",
    "pg_read_",
    "pg_advisory",
    "pg_try_advisory",
    "pg_create_",
    "pg_drop_",
    "pg_replication_",
    "pg_logical_",
    "pg_backup_",
    "pg_stat_reset",
    "lo_",
    "read_",
)

TABLE_FUNCTIONS: frozenset[str] = frozenset(
    # sqlglot reads PostgreSQL's generate_series in FROM as "exploding_generate_series".
    {"range", "generate_series", "exploding_generate_series", "unnest", "generate_subscripts"}
)

DEFAULT_SCHEMAS: dict[str, str] = {"duckdb": "main", "postgres": "public", "sqlite": "main"}
"""Where an unqualified table name resolves in each dialect (``main`` when not listed)."""


def is_denied_function(name: str) -> bool:
    """Whether a function name (any case) is on the denylist.

    >>> is_denied_function("PG_READ_FILE"), is_denied_function("dblink_exec")
    (True, True)
    >>> is_denied_function("sum")
    False
    """
    folded = name.lower()
    return folded in DENIED_FUNCTIONS or folded.startswith(DENIED_PREFIXES)


def default_schema(dialect: str) -> str:
    """The schema an unqualified table name resolves to in ``dialect``.

    >>> default_schema("postgres"), default_schema("sqlite")
    ('public', 'main')
    """
    return DEFAULT_SCHEMAS.get(dialect, "main")


def fold_schema_names(names: tuple[str, ...] | list[str], dialect: str) -> frozenset[str]:
    """Allowlisted schema names folded as the dialect folds an unquoted identifier.

    >>> sorted(fold_schema_names(("Sales", "hr"), "postgres"))
    ['hr', 'sales']
    """
    return frozenset(fold_identifier(n, False, dialect) for n in names)


@functools.lru_cache(maxsize=8192)
def fold_identifier(name: str, quoted: bool, dialect: str) -> str:
    """An identifier as the dialect resolves it (quoted names keep their case where it matters).

    >>> fold_identifier("Orders", False, "postgres"), fold_identifier("Orders", True, "postgres")
    ('orders', 'Orders')
    >>> fold_identifier("Orders", True, "duckdb")
    'orders'
    """
    engine = Dialect.get_or_raise(dialect)
    return engine.normalize_identifier(exp.Identifier(this=name, quoted=quoted)).name
