"""``t2s init [DIR]``: scaffold an evaluation project in a team's own repository.

Writes ``t2s.yaml`` (the project marker), ``cases/<domain>/domain.yaml`` with comments, one
example gold case, ``configs/builtin.yaml`` (the built-in agent, runnable at once),
``configs/inactive/my-service.yaml`` (every adapter option for an existing service),
``workspace.yaml`` (Dagster loads the installed code location with this project's paths) and
``.gitignore`` for ``.t2s/``. With ``--database`` the domain points at the team's own SQLite or
DuckDB file and the example case counts the rows of its first table; without, a small example
SQLite database is generated so the first run works before anything is edited. Nothing is
overwritten: an existing file is an error naming it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sqlite3
from contextlib import closing
from pathlib import Path

import sqlglot
from sqlglot import exp

from t2s_pipeline.errors import ConfigError
from t2s_pipeline.execution.engine import SQLITE
from t2s_pipeline.execution.registry import engine_for
from t2s_pipeline.project import PROJECT_FILE

_EXAMPLE_TABLES = """
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL,
                       price REAL NOT NULL);
CREATE TABLE sales (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id),
                    sold_on TEXT NOT NULL, quantity INTEGER NOT NULL);
"""
_PRODUCTS = [
    (1, "Desk lamp", "lighting", 39.0),
    (2, "Floor lamp", "lighting", 89.0),
    (3, "Office chair", "furniture", 149.0),
    (4, "Standing desk", "furniture", 399.0),
    (5, "Monitor arm", "accessories", 59.0),
]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("init", help="scaffold an evaluation project in a folder")
    parser.add_argument("dir", nargs="?", type=Path, default=Path("."))
    parser.add_argument("--domain", default=None, help="domain name (default: the folder's)")
    parser.add_argument(
        "--database",
        type=Path,
        default=None,
        help="your SQLite or DuckDB file (default: a generated example SQLite database)",
    )
    parser.set_defaults(func=run, in_project=False)


def run(args: argparse.Namespace) -> int:
    root = args.dir.absolute()
    domain = _slug(args.domain or "shop")
    cases = root / "cases" / domain
    if args.database is None:
        database_line = "../../data/example.sqlite"
        engine, schemas = SQLITE, ["main"]
        example = _example_case_generated()
    else:
        database = args.database.expanduser().absolute()
        if not database.is_file():
            raise ConfigError(
                f"--database {args.database}: no such file. Fix: give an existing SQLite or "
                "DuckDB file (a PostgreSQL domain is written by hand: see cases/*/domain.yaml)"
            )
        spec = engine_for(str(database))
        engine = spec.name
        if spec.served_over_network:
            raise ConfigError(f"--database {database}: not a database file")
        database_line = str(database)
        schema, table = _first_table(database, engine)
        schemas = [schema]
        example = _example_case_count(table if spec.only_schema else f"{schema}.{table}", engine)
    files = {
        root
        / PROJECT_FILE: f"# A t2s_pipeline project (t2s init). Paths are relative to this folder.\ncases: cases/{domain}\n",
        cases / "domain.yaml": _domain_yaml(domain, engine, database_line, schemas),
        cases / f"{example[0]}.yaml": example[1],
        root / "configs" / "builtin.yaml": _builtin_config(domain),
        root / "configs" / "inactive" / "my-service.yaml": _service_config(domain),
        root / "workspace.yaml": _WORKSPACE,
        root / ".gitignore": ".t2s/\n",
    }
    existing = [path for path in files if path.exists() and path.name != ".gitignore"]
    if existing:
        raise ConfigError(
            f"{existing[0]} already exists; t2s init never overwrites. Fix: init another "
            "folder, or remove the files it would write"
        )
    if args.database is None:
        _write_example_database(root / "data" / "example.sqlite")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.name == ".gitignore" and path.exists():
            current = path.read_text(encoding="utf-8")
            if ".t2s/" not in current.split():
                path.write_text(current.rstrip("\n") + "\n.t2s/\n", encoding="utf-8")
            continue
        path.write_text(text, encoding="utf-8")
    print(f"initialised a t2s project in {root}:")
    for path in files:
        print(f"  {path.relative_to(root)}")
    if args.database is None:
        print("  data/example.sqlite (a small generated example database)")
    where = "" if root == Path.cwd().absolute() else f"  cd {args.dir}\n"
    print(
        f"\nNext:\n{where}"
        f"  t2s cases check cases/{domain}        # validate the gold cases\n"
        "  t2s run --config configs/builtin.yaml   # a first run with the built-in agent\n"
        "  then copy configs/inactive/my-service.yaml into configs/ and point it at your "
        "service (docs/sut.md)"
    )
    return 0


def _slug(name: str) -> str:
    slug = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    if not slug:
        raise ConfigError(f"--domain {name!r}: needs a letter or digit. Fix: e.g. --domain shop")
    return slug


def _first_table(database: Path, engine: str) -> tuple[str, str]:
    """The schema and name of the database's first table (``main`` first, then by name)."""
    from t2s_pipeline.sql.schema import live_schema

    tables = live_schema(str(database), engine).tables
    for schema in sorted(tables, key=lambda name: (name != "main", name)):
        if tables[schema]:
            return schema, sorted(tables[schema])[0]
    raise ConfigError(f"--database {database}: holds no table to write an example case on")


def _example_case_count(table: str, dialect: str) -> tuple[str, str]:
    name = table.split(".")[-1]
    sql = exp.select(exp.Count(this=exp.Star()).as_("n")).from_(sqlglot.to_table(table))
    case_id = _slug(f"how-many-{name}")
    return case_id, (
        f"# One gold case: a question, the SQL that answers it, and how hard it is.\n"
        f"# Write more cases like it, one file each (see the demo's cases/erp for many).\n"
        f"id: {case_id}\n"
        f"question: How many rows does the {name} table hold?\n"
        f"phrasings:\n  - Count the {name} records.\n"
        f"gold_sql: |\n  {sql.sql(dialect=dialect)}\n"
        f"difficulty: simple_aggregate\n"
        f"tags: [example]\n"
    )


def _example_case_generated() -> tuple[str, str]:
    return "lighting-units-sold", (
        "# One gold case: a question, the SQL that answers it, and how hard it is.\n"
        "# Write more cases like it, one file each (see the demo's cases/erp for many).\n"
        "id: lighting-units-sold\n"
        "question: How many lighting units did we sell in total?\n"
        "phrasings:\n  - What is the total quantity sold of lighting products?\n"
        "gold_sql: |\n"
        "  SELECT SUM(s.quantity) AS units\n"
        "  FROM sales AS s\n"
        "  JOIN products AS p ON p.id = s.product_id\n"
        "  WHERE p.category = 'lighting'\n"
        "difficulty: filtered_aggregate\n"
        "tags: [example]\n"
    )


def _write_example_database(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as con:
        con.executescript(_EXAMPLE_TABLES)
        con.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", _PRODUCTS)
        sales = [
            (i, 1 + (i * 7) % 5, f"2026-0{1 + i % 9}-{10 + i % 18}", 1 + (i * 3) % 4)
            for i in range(1, 61)
        ]
        con.executemany("INSERT INTO sales VALUES (?, ?, ?, ?)", sales)
        con.commit()


def _domain_yaml(domain: str, engine: str, database: str, schemas: list[str]) -> str:
    return (
        f"# The domain: where the data is, how to read it, and what the SUT may read.\n"
        f"name: {domain}\n"
        f"# duckdb | sqlite | postgres; the dialect must be the engine's (the guard reads SQL\n"
        f"# as the database does).\n"
        f"engine: {engine}\n"
        f"dialect: {engine}\n"
        f"# A file path (relative to this folder) or a postgresql:// URL.\n"
        f"database: {database}\n"
        f"# Only these schemas may be read; everything else is refused (SPEC 9).\n"
        f"allowed_schemas: [{', '.join(schemas)}]\n"
        f'# "Today" for time-window questions; sent to the SUT as context.as_of.\n'
        f"as_of: {dt.date.today().isoformat()}\n"
    )


def _builtin_config(domain: str) -> str:
    return (
        "# The built-in agent on this project's domain: a first run with nothing else to set up.\n"
        "name: builtin\n"
        f"cases: cases/{domain}\n"
        "sut:\n"
        "  kind: builtin\n"
        "  isolate: true\n"
    )


def _service_config(domain: str) -> str:
    return f"""\
# Your own text-to-SQL service. Copy this file into configs/ and edit it (docs/sut.md).
name: my-service
cases: cases/{domain}
sut:
  kind: http                      # http | python (callable: package.module:function) | replay
  url: http://127.0.0.1:8080
  isolate: true                   # the case and its twins are sent as exclusions
  paths:                          # your routes (retrieve: null when there is no retriever)
    ask: /v1/ask
    health: /v1/health
    retrieve: null
  probe: false                    # no retriever endpoint: items count under no_probe
  fields:                         # contract field -> your name or dotted path
    question: question
    sql: sql                      # e.g. data.query.text for a nested answer
  headers:                        # ${{VAR}} is read from the environment at run time
    Authorization: Bearer ${{MY_SERVICE_TOKEN}}
  extra:                          # added to every request; {{as_of}} {{dialect}} {{domain}} {{run_id}}
    database: "{{domain}}"
client:
  concurrency: 4
  timeout_s: 30
"""


_WORKSPACE = """\
# Dagster loads the installed t2s_pipeline code location with this folder's paths:
#   DAGSTER_HOME=$PWD/.t2s/dagster_home dagster dev -w workspace.yaml
load_from:
  - python_module:
      module_name: t2s_pipeline.definitions
      working_directory: .
"""
