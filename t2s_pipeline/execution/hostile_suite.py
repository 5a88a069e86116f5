"""The hostile suite (``t2s_pipeline/suites/hostile/*.yaml``): attacks with the outcome each must get.

Each file holds one attack (a mapping) or several (a list). An attack has an ``id``, a
``category``, the ``sql`` (one string for every engine, or a mapping ``{duckdb, postgres,
sqlite}`` where a missing or null engine means "not applicable") and ``expect``: ``refused``
for an attack, ``allowed`` for a legitimate control that must not be refused. SQL may name
``{source_db}`` (the DuckDB source file), ``{sensitive_db}`` (SQLite's sensitive file),
``{catalog}`` (the database's own name) and ``{scratch}`` (the target's scratch folder); the
runner fills them in per engine.

Optional fields:

- ``description``: one line on what the attack tries.
- ``setup``: ``{engine: [sql, ...]}``, statements the target's *owner* runs, in order and one
  per call, before the attack, to plant what it needs: a view, materialised view, rule or
  SECURITY DEFINER function in an allowlisted schema that reads a sensitive one, a GRANT to the
  reader role (named by the placeholder ``{reader}``). The owner is the PostgreSQL superuser,
  the DuckDB *source* file opened read-write (the runner rebuilds the serving snapshot after
  setup, so whatever the snapshot keeps of the trap is what the database layer serves), and
  the SQLite main file opened read-write. Setup is part of the scenario, not of the attack:
  it runs outside the filter and before the fingerprint the attack is judged by.
- ``teardown``: ``{engine: [sql, ...]}``, run by the owner after the attack to remove what
  setup planted (``DROP ... IF EXISTS``, so it also runs cleanly after a failed setup). Every
  engine with setup needs a teardown.
- ``generate``: ``{kind, size}`` (and optionally ``engines: [...]``, every engine by default)
  instead of ``sql``, for statements too large to keep in YAML: the SQL is built by
  :func:`generated_sql`, deterministically. ``nested_parens`` nests ``size`` parentheses
  around a literal; ``in_list`` is ``SELECT 1 WHERE 1 IN (1, 2, ...)`` of exactly ``size``
  characters; ``garbage`` is ``size`` pseudo-random bytes (1-255, no NUL) read as Latin-1.

Setup, teardown and placeholders: ``{name}`` in setup and teardown must be one of
:data:`PLACEHOLDERS`, so a typo stops the load instead of planting a broken trap.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
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
    "parse_divergence",
    "catalogue",
    "transaction",
    "trap_object",
    "oracle",
    "settings",
    "memory",
    "result_size",
    "malformed",
    "control",
)
RESOURCE = "resource"
PLACEHOLDERS: tuple[str, ...] = ("source_db", "sensitive_db", "catalog", "scratch", "reader")
"""Names the runner fills in as ``{name}``; ``reader`` is the reader role (PostgreSQL)."""

NESTED_PARENS, IN_LIST, GARBAGE = "nested_parens", "in_list", "garbage"
GENERATORS: tuple[str, ...] = (NESTED_PARENS, IN_LIST, GARBAGE)
MAX_GENERATED_CHARS = 64_000_000
"""The longest statement ``generate`` may ask for (characters)."""

_IN_LIST_HEAD, _IN_LIST_TAIL = "SELECT 1 WHERE 1 IN (", ")"
_NESTED_HEAD = "SELECT "
# Attack ids and placeholders are YAML values, not SQL: regular expressions are right here.
_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_FIELDS = {"id", "category", "sql", "expect", "description", "setup", "teardown", "generate"}
_GENERATE_FIELDS = {"kind", "size", "engines"}


@dataclass(frozen=True)
class Generated:
    """A statement built by :func:`generated_sql` instead of written out in YAML."""

    kind: str
    size: int
    engines: tuple[str, ...] = ENGINES


@dataclass(frozen=True)
class Attack:
    """One hostile statement (or legitimate control) and the outcome it must get."""

    id: str
    category: str
    sql: Mapping[str, str | None]
    expect: str
    path: str
    description: str = ""
    setup: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    teardown: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    generate: Generated | None = None

    def sql_for(self, engine: str) -> str | None:
        """The statement for ``engine``, or None when the attack does not apply to it.

        >>> Attack("g", "malformed", {}, "refused", "g.yaml",
        ...        generate=Generated(NESTED_PARENS, 2)).sql_for("sqlite")
        'SELECT ((1))'
        """
        if self.generate is not None:
            if engine not in self.generate.engines:
                return None
            return generated_sql(self.generate.kind, self.generate.size, engine)
        return self.sql.get(engine)

    def setup_for(self, engine: str) -> tuple[str, ...]:
        """What the owner runs on ``engine`` before the attack (empty: nothing)."""
        return self.setup.get(engine, ())

    def teardown_for(self, engine: str) -> tuple[str, ...]:
        """What the owner runs on ``engine`` after the attack (empty: nothing)."""
        return self.teardown.get(engine, ())


@functools.lru_cache(maxsize=16)
def generated_sql(kind: str, size: int, engine: str) -> str:
    """The statement ``generate: {kind, size}`` stands for; the same text on every call.

    ``nested_parens``: ``size`` parentheses deep (``size`` opening ones); ``in_list`` and
    ``garbage``: exactly ``size`` characters. The text is the same for every engine today; the
    engine is an argument so a kind can follow a dialect where one needs it.

    >>> generated_sql("nested_parens", 3, "duckdb")
    'SELECT (((1)))'
    >>> generated_sql("in_list", 30, "postgres")
    'SELECT 1 WHERE 1 IN (1,2,3,4 )'
    >>> len(generated_sql("garbage", 100, "sqlite"))
    100
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; use one of {list(ENGINES)}")
    if kind not in GENERATORS:
        raise ValueError(f"unknown kind {kind!r}; use one of {list(GENERATORS)}")
    if not minimum_size(kind) <= size <= maximum_size(kind):
        raise ValueError(
            f"{kind} size must be {minimum_size(kind)}..{maximum_size(kind)}, not {size}"
        )
    if kind == NESTED_PARENS:
        return f"{_NESTED_HEAD}{'(' * size}1{')' * size}"
    if kind == IN_LIST:
        return _in_list(size)
    # A seed that is a string is hashed the same way in every process and Python version 3.x.
    generator = random.Random(f"t2s-hostile-garbage-{size}")
    return bytes(generator.randrange(1, 256) for _ in range(size)).decode("latin-1")


def minimum_size(kind: str) -> int:
    """The smallest ``size`` a generator accepts.

    >>> minimum_size("in_list")
    23
    """
    return len(_IN_LIST_HEAD) + 1 + len(_IN_LIST_TAIL) if kind == IN_LIST else 1


def maximum_size(kind: str) -> int:
    """The largest ``size`` a generator accepts (the statement stays within
    :data:`MAX_GENERATED_CHARS`)."""
    if kind == NESTED_PARENS:
        return (MAX_GENERATED_CHARS - len(_NESTED_HEAD) - 1) // 2
    return MAX_GENERATED_CHARS


def _in_list(size: int) -> str:
    """``SELECT 1 WHERE 1 IN (1,2,...,n)`` padded with spaces before ``)`` to ``size`` chars."""
    room = size - len(_IN_LIST_HEAD) - len(_IN_LIST_TAIL)
    parts: list[str] = []
    used, number = -1, 1  # -1: the first element has no comma before it
    while used + 1 + len(str(number)) <= room:
        parts.append(str(number))
        used += 1 + len(str(number))
        number += 1
    body = ",".join(parts)
    return f"{_IN_LIST_HEAD}{body}{' ' * (room - len(body))}{_IN_LIST_TAIL}"


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
    generate = _generate(where, entry)
    sql: dict[str, str | None] = dict.fromkeys(ENGINES)
    if generate is None:
        sql = _sql(where, entry.get("sql"))
    applies = {e for e in ENGINES if sql[e]} if generate is None else set(generate.engines)
    setup = _statements(where, entry.get("setup"), "setup", applies)
    teardown = _statements(where, entry.get("teardown"), "teardown", applies)
    for engine in setup:
        if engine not in teardown:
            raise CaseError(
                where, f"teardown.{engine}", f"is missing: setup plants objects on {engine} "
                "that nothing removes", f"add teardown.{engine} dropping them (DROP ... IF EXISTS)",
            )  # fmt: skip
    return Attack(
        id=attack_id,
        category=category,
        sql=sql,
        expect=expect,
        path=where,
        description=str(entry.get("description") or ""),
        setup=setup,
        teardown=teardown,
        generate=generate,
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
        raise CaseError(
            where, "sql", "is missing",
            "give one string, {duckdb, postgres, sqlite}, or generate: {kind, size}",
        )  # fmt: skip
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


def _statements(where: str, value: Any, name: str, applies: set[str]) -> dict[str, tuple[str, ...]]:
    """``setup`` or ``teardown``: ``{engine: [sql, ...]}``; a null engine means none."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not value:
        raise CaseError(where, name, "must be a mapping {engine: [sql, ...]}", "e.g. "
                        f"{name}: {{postgres: [CREATE VIEW ...]}}, or leave {name} out")  # fmt: skip
    unknown = sorted(set(value) - set(ENGINES))
    if unknown:
        raise CaseError(where, f"{name}.{unknown[0]}", "is not an engine", f"use {list(ENGINES)}")
    result: dict[str, tuple[str, ...]] = {}
    for engine in ENGINES:
        statements = value.get(engine)
        if statements is None:
            continue
        label = f"{name}.{engine}"
        if engine not in applies:
            raise CaseError(where, label, f"is given, but the attack has no SQL for {engine}",
                            f"remove {label} or give the attack SQL for {engine}")  # fmt: skip
        if not isinstance(statements, list) or not statements:
            raise CaseError(where, label, "must be a non-empty list of SQL statements",
                            "write one statement per list item, or null for none")  # fmt: skip
        texts = []
        for index, text in enumerate(statements):
            if not isinstance(text, str) or not text.strip():
                raise CaseError(where, f"{label}[{index}]", "is not a SQL statement",
                                "give the statement as a string")  # fmt: skip
            unknown_names = sorted(set(_PLACEHOLDER.findall(text)) - set(PLACEHOLDERS))
            if unknown_names:
                raise CaseError(where, f"{label}[{index}]",
                                f"names an unknown placeholder {{{unknown_names[0]}}}",
                                f"use one of {['{' + p + '}' for p in PLACEHOLDERS]}")  # fmt: skip
            texts.append(text.strip())
        result[engine] = tuple(texts)
    return result


def _generate(where: str, entry: dict[str, Any]) -> Generated | None:
    value = entry.get("generate")
    if value is None:
        return None
    if entry.get("sql") is not None:
        raise CaseError(where, "generate", "is given together with sql",
                        "give either sql or generate, not both")  # fmt: skip
    if not isinstance(value, dict):
        raise CaseError(where, "generate", "must be a mapping {kind, size}",
                        f"e.g. generate: {{kind: {NESTED_PARENS}, size: 3000}}")  # fmt: skip
    unknown = sorted(set(value) - _GENERATE_FIELDS)
    if unknown:
        raise CaseError(where, f"generate.{unknown[0]}", "is not a known field",
                        f"use only {sorted(_GENERATE_FIELDS)}")  # fmt: skip
    kind = value.get("kind")
    if kind not in GENERATORS:
        raise CaseError(where, "generate.kind", f"{kind!r} is not one of {list(GENERATORS)}",
                        "pick one")  # fmt: skip
    size = value.get("size")
    low, high = minimum_size(kind), maximum_size(kind)
    if isinstance(size, bool) or not isinstance(size, int) or not low <= size <= high:
        raise CaseError(where, "generate.size", f"{size!r} is not a whole number in {low}..{high}",
                        f"give the {'depth' if kind == NESTED_PARENS else 'length'} as an integer")  # fmt: skip
    engines = value.get("engines", list(ENGINES))
    if (
        not isinstance(engines, list)
        or not engines
        or any(e not in ENGINES for e in engines)
        or len(set(engines)) != len(engines)
    ):
        raise CaseError(where, "generate.engines", f"{engines!r} is not a list of engines",
                        f"list some of {list(ENGINES)} once each, or leave it out for all")  # fmt: skip
    return Generated(kind, size, tuple(e for e in ENGINES if e in engines))
