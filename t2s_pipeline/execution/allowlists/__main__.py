"""``python -m t2s_pipeline.execution.allowlists ENGINE [URL]``: compare a list with the engine.

Reads the functions the installed engine (or, for PostgreSQL, the server at URL) offers and
prints, for review after an upgrade, the names the engine has that the committed list does not
(``+ name``: unreviewed, refused until added) and the names on the list the engine no longer has
(``- name``: stale; DuckDB does not list its window functions, so ``row_number`` and the other
window functions always show here). Nothing is written: the committed files stay what counts. Exits 0.
"""

from __future__ import annotations

import sqlite3
import sys
from importlib import resources

import duckdb

from t2s_pipeline.execution.allowlists import allowed_functions
from t2s_pipeline.execution.engine import DUCKDB, ENGINES, POSTGRES, SQLITE

_DUCKDB = (
    "SELECT DISTINCT function_name FROM duckdb_functions() "
    "WHERE schema_name IN ('main', 'pg_catalog') AND function_type IN ('scalar', 'aggregate', 'macro')"
)
_SQLITE = "SELECT DISTINCT name FROM pragma_function_list"


def engine_functions(engine: str, url: str | None = None) -> frozenset[str]:
    """The lower-case names of the functions ``engine`` offers (PostgreSQL: the candidates of
    ``postgres_candidates.sql``, which leaves out the privilege-bypassing families)."""
    if engine == DUCKDB:
        rows = duckdb.connect().execute(_DUCKDB).fetchall()
    elif engine == SQLITE:
        rows = sqlite3.connect(":memory:").execute(_SQLITE).fetchall()
    else:
        import psycopg  # lazy: only the PostgreSQL lister needs the driver

        sql = resources.files(__package__).joinpath("postgres_candidates.sql").read_text()
        with psycopg.connect(url or "") as connection:
            rows = connection.execute(sql).fetchall()
    return frozenset(str(row[0]).lower() for row in rows)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ENGINES or (argv[0] == POSTGRES and len(argv) < 2):
        print(
            "usage: python -m t2s_pipeline.execution.allowlists duckdb|sqlite|postgres [URL]\n"
            "  PostgreSQL needs a URL, e.g. postgresql://postgres:postgres@localhost:5432/postgres",
            file=sys.stderr,
        )
        return 2
    engine = argv[0]
    offered = engine_functions(engine, argv[1] if len(argv) > 1 else None)
    listed = allowed_functions(engine)
    new, stale = sorted(offered - listed), sorted(listed - offered)
    print(f"# {engine}: {len(offered)} offered, {len(listed)} listed, {len(new)} unreviewed")
    for name in new:
        print(f"+ {name}")
    for name in stale:
        print(f"- {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
