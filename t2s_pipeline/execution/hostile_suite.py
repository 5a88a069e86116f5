"""The hostile suite (``cases/hostile/*.yaml``): attacks with the outcome each must get.

Each file holds one attack (a mapping) or several (a list). An attack has an ``id``, a
``category``, the ``sql`` (one string for every engine, or a mapping ``{duckdb, postgres,
sqlite}`` where a missing or null engine means "not applicable") and ``expect``: ``refused``
for an attack, ``allowed`` for a legitimate control that must not be refused. SQL may name
``{source_db}`` (the DuckDB source file), ``{sensitive_db}`` (SQLite's sensitive file) and
``{catalog}`` (the database's own name); the runner fills them in per engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from t2s_pipeline.errors import CaseError
from t2s_pipeline.execution.engine import ENGINES

EXPECTATIONS: tuple[str, ...] = ("refused", "allowed")
CATEGORIES: tuple[str, ...] = (
    "write",
    "ddl",
    "multi_statement",
    "dml_in_cte",
    "select_into",
    "copy_export",
    "attach",
    "extension",
    "file_function",
    "network_function",
    "nested_query",
    "sensitive",
    "search_path",
    "role",
    "config",
    "admin",
    "resource",
    "control",
)
RESOURCE = "resource"
# Attack ids are YAML values, not SQL: a regular expression is the right tool here.
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_FIELDS = {"id", "category", "sql", "expect", "description"}


@dataclass(frozen=True)
class Attack:
    """One hostile statement (or legitimate control) and the outcome it must get."""

    id: str
    category: str
    sql: Mapping[str, str | None]
    expect: str
    path: str
    description: str = ""

    def sql_for(self, engine: str) -> str | None:
        """The statement for ``engine``, or None when the attack does not apply to it."""
        return self.sql.get(engine)


def load_suite(folder: Path) -> tuple[Attack, ...]:
    """Every attack under ``folder``, sorted by id; a bad file raises CaseError naming it."""
    files = sorted(Path(folder).glob("*.yaml"))
    if not files:
        raise CaseError(str(folder), "-", "no hostile case files (*.yaml) found", "add attacks")
    attacks: dict[str, Attack] = {}
    for path in files:
        for attack in _load_file(path):
            if attack.id in attacks:
                raise CaseError(
                    str(path), "id", f"{attack.id!r} is also used in {attacks[attack.id].path}",
                    "give every attack a unique id",
                )  # fmt: skip
            attacks[attack.id] = attack
    return tuple(attacks[key] for key in sorted(attacks))


def _load_file(path: Path) -> list[Attack]:
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise CaseError(str(path), "-", f"is not valid YAML ({error})", "fix the syntax") from error
    entries = document if isinstance(document, list) else [document]
    return [_attack(path, entry) for entry in entries]


def _attack(path: Path, entry: Any) -> Attack:
    where = str(path)
    if not isinstance(entry, dict):
        raise CaseError(
            where, "-", "an attack must be a mapping", "write id, category, sql, expect"
        )
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise CaseError(where, unknown[0], "is not a known field", f"use only {sorted(_FIELDS)}")
    attack_id = _required_text(where, entry, "id")
    if not _ID.match(attack_id):
        raise CaseError(where, "id", f"{attack_id!r} is not [a-z0-9-]", "use e.g. write-delete")
    category = _choice(where, entry, "category", CATEGORIES)
    expect = _choice(where, entry, "expect", EXPECTATIONS)
    return Attack(
        id=attack_id,
        category=category,
        sql=_sql(where, entry.get("sql")),
        expect=expect,
        path=where,
        description=str(entry.get("description") or ""),
    )


def _required_text(where: str, entry: dict[str, Any], field: str) -> str:
    value = entry.get(field)
    if not isinstance(value, str) or not value.strip():
        raise CaseError(where, field, "is missing or empty", f"give the attack a {field}")
    return value.strip()


def _choice(where: str, entry: dict[str, Any], field: str, options: tuple[str, ...]) -> str:
    value = _required_text(where, entry, field)
    if value not in options:
        raise CaseError(where, field, f"{value!r} is not one of {list(options)}", "pick one")
    return value


def _sql(where: str, value: Any) -> dict[str, str | None]:
    if isinstance(value, str) and value.strip():
        return {engine: value.strip() for engine in ENGINES}
    if not isinstance(value, dict) or not value:
        raise CaseError(where, "sql", "is missing", "give one string or {duckdb, postgres, sqlite}")
    unknown = sorted(set(value) - set(ENGINES))
    if unknown:
        raise CaseError(where, f"sql.{unknown[0]}", "is not an engine", f"use {list(ENGINES)}")
    statements: dict[str, str | None] = {}
    for engine in ENGINES:
        text = value.get(engine)
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise CaseError(where, f"sql.{engine}", "is empty", "give SQL, or null if n/a")
        statements[engine] = text.strip() if isinstance(text, str) else None
    if not any(statements.values()):
        raise CaseError(where, "sql", "applies to no engine", "give SQL for at least one")
    return statements
