"""Spider's files: ``tables.json`` (schemas), ``dev.json`` (questions), ``dev_gold.sql``.

``tables.json`` is a list of ``{db_id, table_names_original, column_names_original, ...}``
where each column is ``[table_index, name]`` and index -1 is the ``*`` pseudo-column.
``dev.json`` is a list of ``{db_id, question, query, ...}``; ``dev_gold.sql`` has one
``SQL<TAB>db_id`` line per question, in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2s_pipeline.benchmarks.hardness import spider_hardness
from t2s_pipeline.benchmarks.questions import BenchmarkQuestion, entries, read_json, text_field
from t2s_pipeline.errors import ConfigError, SqlAnalysisError

UNRATED = "unrated"
_QUESTIONS = "Spider's dev.json (a list of {db_id, question, query})"
_TABLES = "Spider's tables.json (a list of {db_id, table_names_original, column_names_original})"


@dataclass(frozen=True)
class SpiderSchema:
    """The tables and columns ``tables.json`` declares for one database."""

    db_id: str
    tables: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]  # (table, column), "*" left out


@dataclass(frozen=True)
class SpiderQuestions:
    """The questions read, and the ones whose band could not be computed (with why)."""

    questions: tuple[BenchmarkQuestion, ...]
    unrated: tuple[str, ...]


def read_tables(path: Path) -> dict[str, SpiderSchema]:
    """Every database ``tables.json`` declares, by ``db_id``."""
    schemas: dict[str, SpiderSchema] = {}
    for index, entry in enumerate(entries(path, read_json(path, _TABLES), _TABLES)):
        schema = _schema(path, index, entry)
        schemas[schema.db_id] = schema
    return schemas


def _schema(path: Path, index: int, entry: dict[str, Any]) -> SpiderSchema:
    db_id = text_field(path, index, entry, "db_id")
    tables = entry.get("table_names_original")
    columns = entry.get("column_names_original")
    if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
        raise ConfigError(
            f"{path}: entry [{index}] ({db_id}): field 'table_names_original' must be a list of "
            "table names. Fix: use the original tables.json from the Spider release"
        )
    if not isinstance(columns, list) or not all(_column_pair(c, len(tables)) for c in columns):
        raise ConfigError(
            f"{path}: entry [{index}] ({db_id}): field 'column_names_original' must be a list of "
            "[table_index, name] pairs (index -1 for '*'). Fix: use the original tables.json"
        )
    return SpiderSchema(
        db_id=db_id,
        tables=tuple(tables),
        columns=tuple((tables[t], name) for t, name in columns if t >= 0),
    )


def _column_pair(value: object, n_tables: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], int)
        and -1 <= value[0] < n_tables
        and isinstance(value[1], str)
    )


def read_questions(gold: Path, gold_sql: Path | None = None) -> SpiderQuestions:
    """The questions of ``dev.json``, gold SQL from ``dev_gold.sql`` when given, each banded.

    A query whose band cannot be computed (sqlglot cannot parse it) is kept with the band
    ``unrated`` and listed in ``unrated``.
    """
    raw = entries(gold, read_json(gold, _QUESTIONS), _QUESTIONS)
    db_ids = [text_field(gold, i, e, "db_id") for i, e in enumerate(raw)]
    if gold_sql is None:
        sqls = [text_field(gold, i, e, "query") for i, e in enumerate(raw)]
    else:
        sqls = _gold_sql(gold_sql, db_ids, gold)
    questions, unrated = [], []
    for index, entry in enumerate(raw):
        band, problem = _band(sqls[index])
        if problem is not None:
            unrated.append(f"{gold}: entry [{index}]: band not computed: {problem}")
        questions.append(
            BenchmarkQuestion(
                "spider",
                index,
                db_ids[index],
                text_field(gold, index, entry, "question"),
                sqls[index],
                band,
            )  # fmt: skip
        )
    return SpiderQuestions(tuple(questions), tuple(unrated))


def _band(sql: str) -> tuple[str, str | None]:
    try:
        return spider_hardness(sql), None
    except SqlAnalysisError as error:
        return UNRATED, str(error)


def _gold_sql(path: Path, db_ids: Sequence[str], gold: Path) -> list[str]:
    """The SQL of each ``SQL<TAB>db_id`` line, checked against the questions' order."""
    if not path.exists():
        raise ConfigError(f"{path}: no such file. Fix: pass Spider's dev_gold.sql or leave it out")
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) != len(db_ids):
        raise ConfigError(
            f"{path}: {len(lines)} line(s) but {gold} has {len(db_ids)} question(s). "
            "Fix: pass the gold SQL file that belongs to these questions"
        )
    sqls = []
    for number, (line, db_id) in enumerate(zip(lines, db_ids, strict=True), start=1):
        sql, _, line_db = line.rpartition("\t")
        if not sql.strip() or line_db.strip() != db_id:
            raise ConfigError(
                f"{path}:{number}: expected 'SQL<TAB>{db_id}' (the db_id of question "
                f"[{number - 1}] in {gold}), found {line[:80]!r}. Fix: keep both files in order"
            )
        sqls.append(sql.strip())
    return sqls
