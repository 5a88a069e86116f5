"""What a guarded statement may call: one reviewed function allowlist per engine.

The statement filter lets a function through only when its name is on the engine's list
(``duckdb.txt``, ``postgres.txt``, ``sqlite.txt`` beside this file): aggregates, math, string,
date, JSON and window functions, and the operators' own functions. Anything else is refused,
including every function a newer engine release adds, until somebody reviews it and adds it
here. Settings, statistics, object definitions and comments, other sessions, files, sleeps,
sequences, large objects, locks and notifications are deliberately absent.

Table functions (a function in ``FROM``) come from the smaller :data:`TABLE_FUNCTIONS` list,
and series generators with constant arguments must stay under :data:`MAX_SERIES_ROWS` rows.

``python -m t2s_pipeline.execution.allowlists ENGINE [URL]`` prints a candidate list read off
the engine (for review when the engine is upgraded); the committed files are what counts.
"""

from __future__ import annotations

import functools
from importlib import resources

from t2s_pipeline.execution.engine import DUCKDB, POSTGRES, SQLITE

TABLE_FUNCTIONS: dict[str, frozenset[str]] = {
    DUCKDB: frozenset(
        {"range", "generate_series", "unnest", "json_each", "json_tree", "generate_subscripts"}
    ),
    POSTGRES: frozenset(
        {
            "generate_series",
            "generate_subscripts",
            "unnest",
            "json_each",
            "json_each_text",
            "jsonb_each",
            "jsonb_each_text",
            "json_array_elements",
            "json_array_elements_text",
            "jsonb_array_elements",
            "jsonb_array_elements_text",
            "json_object_keys",
            "jsonb_object_keys",
            "json_to_recordset",
            "jsonb_to_recordset",
            "json_populate_recordset",
            "jsonb_populate_recordset",
            "jsonb_path_query",
            "regexp_matches",
            "regexp_split_to_table",
            "string_to_table",
            "json_to_record",
            "jsonb_to_record",
        }
    ),  # fmt: skip
    SQLITE: frozenset({"json_each", "json_tree"}),
}
"""Functions that may stand in ``FROM``: series, ``unnest`` and JSON expansion only."""

SERIES_FUNCTIONS: frozenset[str] = frozenset({"range", "generate_series"})
MAX_SERIES_ROWS = 10_000_000
"""A series with constant bounds longer than this is refused before it runs."""

POSTGRES_TYPES: frozenset[str] = frozenset(
    {
        "int2", "int4", "int8", "smallint", "integer", "int", "bigint", "numeric", "decimal",
        "float4", "float8", "real", "double precision", "float", "money", "text", "varchar",
        "character varying", "char", "character", "bpchar", "name", "bool", "boolean", "date",
        "time", "timetz", "timestamp", "timestamptz", "interval", "json", "jsonb", "uuid",
        "bytea", "bit", "varbit", "inet", "cidr", "macaddr", "xml", "tsvector", "tsquery",
        "int4range", "int8range", "numrange", "daterange", "tsrange", "tstzrange", "point",
        "oid",
    }
)  # fmt: skip
"""Types a PostgreSQL cast may name. Casting text to ``regclass`` and friends looks an object
up in the catalogue (a privilege-free existence oracle), so those are absent."""


@functools.cache
def allowed_functions(engine: str) -> frozenset[str]:
    """The lower-case function names ``engine`` lets a guarded statement call.

    >>> "sum" in allowed_functions("postgres"), "pg_read_file" in allowed_functions("postgres")
    (True, False)
    >>> "current_setting" in allowed_functions("duckdb")
    False
    """
    text = resources.files(__package__).joinpath(f"{engine}.txt").read_text(encoding="utf-8")
    names = (line.strip() for line in text.splitlines())
    return frozenset(name.lower() for name in names if name and not name.startswith("#"))
