"""Keys of the caches runs share (``analysis_cache``, ``canonical_cache``): what a stored
result depends on, hashed: the harness's code, the dialect, the schema and the SQL."""

from __future__ import annotations

import hashlib
import json

from t2s_pipeline.sql.schema import Schema


def cache_key(gold_sql: str, candidate: str | None, dialect: str, schema: Schema, code: str) -> str:
    """What an analysis depends on: both SQL texts, the dialect, the schema and the code.

    >>> schema = Schema({"s": {"t": {"a": "INTEGER"}}}, "duckdb")
    >>> cache_key("SELECT 1", None, "duckdb", schema, "c1") == cache_key(
    ...     "SELECT 1", None, "duckdb", schema, "c2")
    False
    """
    return sql_key(code, dialect, schema_hash(schema), gold_sql, candidate)


def sql_key(code: str, dialect: str, shape: str, gold_sql: str, candidate: str | None) -> str:
    """:func:`cache_key` with the schema's hash (``shape``) already taken."""
    digest = hashlib.sha256()
    for part in (code, dialect, shape, gold_sql, candidate or "\0none"):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def schema_hash(schema: Schema) -> str:
    text = json.dumps([schema.tables, schema.dialect, list(schema.search_path)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()
