"""Importing a benchmark: read its files, check its databases, write the case folder."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace as replace_fields
from pathlib import Path

from t2s_pipeline.benchmarks import bird, spider
from t2s_pipeline.benchmarks.databases import (
    check_declared,
    column_names,
    domain_database,
    read_schemas,
    require_databases,
)
from t2s_pipeline.benchmarks.questions import BenchmarkQuestion
from t2s_pipeline.benchmarks.writer import ImportReport, write_case_folder
from t2s_pipeline.sql.schema import Schema


def import_spider(
    tables: Path,
    gold: Path,
    db_dir: Path,
    out: Path,
    gold_sql: Path | None = None,
    replace: bool = False,
) -> ImportReport:
    """Spider's ``tables.json`` + ``dev.json`` (+ ``dev_gold.sql``) as a case folder.

    >>> import_spider(Path("tables.json"), Path("dev.json"), Path("database"),
    ...               Path("cases/spider-dev")).n_cases  # doctest: +SKIP
    1034
    """
    read = spider.read_questions(gold, gold_sql)
    files = require_databases(db_dir, (q.db_id for q in read.questions), gold)
    live = read_schemas(files)
    check_declared(spider.read_tables(tables), live, tables)
    sources = {"tables": str(tables), "gold": str(gold), "db_dir": str(db_dir)}
    if gold_sql is not None:
        sources["gold_sql"] = str(gold_sql)
    report = _write(read.questions, db_dir, out, live, sources, replace)
    return replace_fields(report, warnings=report.warnings + read.unrated)


def import_bird(gold: Path, db_dir: Path, out: Path, replace: bool = False) -> ImportReport:
    """BIRD's ``dev.json`` (questions, evidence, SQL, difficulty) as a case folder.

    >>> import_bird(Path("dev.json"), Path("dev_databases"),
    ...             Path("cases/bird-dev")).n_cases  # doctest: +SKIP
    1534
    """
    questions = bird.read_questions(gold)
    live = read_schemas(require_databases(db_dir, (q.db_id for q in questions), gold))
    sources = {"gold": str(gold), "db_dir": str(db_dir)}
    return _write(questions, db_dir, out, live, sources, replace)


def _write(
    questions: tuple[BenchmarkQuestion, ...],
    db_dir: Path,
    out: Path,
    live: Mapping[str, Schema],
    sources: dict[str, str],
    replace: bool,
) -> ImportReport:
    columns = {db_id: column_names(schema) for db_id, schema in live.items()}
    return write_case_folder(
        questions, out, domain_database(db_dir, out), columns, sources, replace
    )
