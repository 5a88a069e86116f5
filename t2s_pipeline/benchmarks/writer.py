"""Writing benchmark questions as a case folder: ``domain.yaml``, one YAML file per question
and the ``benchmark.json`` import record."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from t2s_pipeline.benchmarks.manifest import (
    FILE,
    Manifest,
    ManifestEntry,
    read_manifest,
    write_manifest,
)
from t2s_pipeline.benchmarks.questions import BenchmarkQuestion
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sql.sqlite_literals import literal_double_quotes


@dataclass(frozen=True)
class ImportReport:
    """What an import wrote: the folder, cases per band, gold queries rewritten, warnings."""

    folder: Path
    n_cases: int
    n_databases: int
    bands: dict[str, int]
    rewritten: int
    warnings: tuple[str, ...] = ()


class _Dumper(yaml.SafeDumper):
    """Multi-line text (long SQL) as a YAML block, readable in a diff."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def write_case_folder(
    questions: Sequence[BenchmarkQuestion],
    out: Path,
    database: str,
    columns: Mapping[str, frozenset[str]],
    sources: Mapping[str, str],
    replace: bool = False,
) -> ImportReport:
    """Write every question as a case of a new domain in ``out``.

    ``database`` is the ``domain.yaml`` entry (with ``{db_id}``); ``columns`` the lower-cased
    column names of each database, used to make SQLite's double-quoted strings explicit.
    """
    if not questions:
        raise ConfigError(f"{sources.get('gold', out)}: no questions. Fix: pass a non-empty file")
    _clear(out, replace)
    out.mkdir(parents=True, exist_ok=True)
    benchmark = questions[0].benchmark
    header = f"# Imported from {benchmark} by `t2s import {benchmark}`; see benchmark.json.\n"
    _dump(out / "domain.yaml", _domain(out, database), header)
    rewritten = 0
    for question in questions:
        gold_sql = literal_double_quotes(question.sql, columns[question.db_id])
        rewritten += gold_sql != question.sql
        _dump(out / f"{question.case_id}.yaml", _case(question, gold_sql))
    entries = tuple(ManifestEntry(q.index, q.case_id, q.db_id) for q in questions)
    write_manifest(out, Manifest(questions[0].benchmark, dict(sources), entries))
    bands = Counter(q.difficulty for q in questions)
    return ImportReport(
        out, len(questions), len({q.db_id for q in questions}), dict(sorted(bands.items())),
        rewritten,
    )  # fmt: skip


def _domain(out: Path, database: str) -> dict[str, Any]:
    return {
        "name": out.name,
        "engine": "sqlite",
        "dialect": "sqlite",
        "database": database,
        "allowed_schemas": ["main"],
        "min_phrasings": 0,
    }


def _case(question: BenchmarkQuestion, gold_sql: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": question.case_id,
        "question": question.question,
        "phrasings": [],
        "gold_sql": gold_sql,
        "difficulty": question.difficulty,
        "db_id": question.db_id,
    }
    if question.evidence is not None:
        data["evidence"] = question.evidence
    data["tags"] = [question.benchmark, question.db_id]
    return data


def _dump(path: Path, data: Mapping[str, Any], header: str = "") -> None:
    text = yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(header + text, encoding="utf-8")


def _clear(out: Path, replace: bool) -> None:
    """Refuse to mix two imports; with ``replace``, remove what the previous import wrote."""
    existing = sorted(out.glob("*.yaml")) if out.is_dir() else []
    if not existing:
        return
    if not replace:
        raise ConfigError(
            f"{out}: already holds {len(existing)} YAML file(s). Fix: choose an empty folder, "
            "or pass --replace to overwrite an earlier import"
        )
    if not (out / FILE).exists():
        raise ConfigError(
            f"{out}: holds cases that no import wrote (no {FILE}). Fix: choose another folder"
        )
    for entry in read_manifest(out).entries:
        (out / f"{entry.case_id}.yaml").unlink(missing_ok=True)
    (out / "domain.yaml").unlink(missing_ok=True)
