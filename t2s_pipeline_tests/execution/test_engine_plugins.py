"""An engine installed as a plugin (entry-point group ``t2s_pipeline.engines``) is found,
claims its targets, serves through the guarded executor with its own filter reader, and is a
valid engine for domain.yaml."""

from __future__ import annotations

import sqlite3
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from t2s_pipeline.cases import load_domain
from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.execution.guard import FILTER
from t2s_pipeline.execution.registry import (
    ENTRY_POINT_GROUP,
    engine_for,
    engine_names,
    plugins,
)

PLUGIN = '''
"""A toy engine: a SQLite file behind a fakesql:// URL, statements read as T-SQL."""
import sqlglot
from sqlglot import exp

from t2s_pipeline.execution.reading import Refused
from t2s_pipeline.execution.registry import EngineSpec
from t2s_pipeline.execution.schema_rows import open_sqlite, sqlite_rows
from t2s_pipeline.execution.sqlite_engine import SQLiteBackend

READS = []


def read(sql, allowed, catalogue):
    READS.append(sql)
    tree = sqlglot.parse_one(sql, read="tsql")
    if not isinstance(tree, exp.Select):
        raise Refused("the toy engine serves one SELECT")
    for table in tree.find_all(exp.Table):
        if table.name not in ("kept",):
            raise Refused(f"table {table.name} is not the toy's")


def open_backend(target, guard):
    return SQLiteBackend(target.removeprefix("fakesql://"), guard)


ENGINE = EngineSpec(
    name="fakesql",
    dialect="tsql",
    claims=lambda target: target.startswith("fakesql://"),
    open=open_backend,
    open_catalog=lambda target: open_sqlite(target.removeprefix("fakesql://")),
    schema_rows=sqlite_rows,
    read=read,
    served_over_network=True,
)
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy engine installed on sys.path with its entry point; a SQLite file to serve."""
    site = tmp_path / "site"
    info = site / "t2s_fake_engine-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "t2s_fake_engine.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: t2s-fake-engine\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nfakesql = t2s_fake_engine:ENGINE\n"
    )
    monkeypatch.syspath_prepend(str(site))
    plugins.cache_clear()
    database = tmp_path / "toy.db"
    con = sqlite3.connect(database)
    con.executescript("CREATE TABLE kept (a INTEGER); INSERT INTO kept VALUES (1), (2);")
    con.executescript("CREATE TABLE secret (s TEXT); INSERT INTO secret VALUES ('x');")
    con.close()
    yield database
    plugins.cache_clear()


def test_a_plugin_engine_is_found_and_claims_its_targets(plugin: Path) -> None:
    assert "fakesql" in engine_names()
    assert engine_for(f"fakesql://{plugin}").name == "fakesql"
    assert engine_for(str(plugin)).name == "sqlite"  # the built-ins keep their own targets


def test_a_plugin_engine_serves_through_its_own_filter_reader(plugin: Path) -> None:
    import t2s_fake_engine  # type: ignore[import-not-found]  # installed by the fixture

    guard = Guard(allowed_schemas=("main",), dialect="tsql", contained=False)
    with open_executor(f"fakesql://{plugin}", guard) as executor:
        served = executor.run("SELECT a FROM kept ORDER BY a")
        refused = executor.run("SELECT s FROM secret")
    assert served.rows == [(1,), (2,)]
    assert refused.refused and refused.layer == FILTER
    assert "secret is not the toy's" in str(refused.reason)
    assert "SELECT s FROM secret" in t2s_fake_engine.READS


def test_a_domain_may_name_a_plugin_engine(plugin: Path, tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "domain.yaml").write_text(
        textwrap.dedent(
            f"""\
            engine: fakesql
            dialect: tsql
            database: fakesql://{plugin}
            allowed_schemas: [main]
            """
        )
    )
    assert load_domain(folder).engine == "fakesql"


def test_an_unknown_engine_names_the_installed_ones(tmp_path: Path) -> None:
    folder = tmp_path / "nope"
    folder.mkdir()
    (folder / "domain.yaml").write_text(
        "engine: snowflake\ndialect: snowflake\ndatabase: x\nallowed_schemas: [a]\n"
    )
    with pytest.raises(Exception, match=r"unknown engine 'snowflake'.*mysql.*docs/engines.md"):
        load_domain(folder)
