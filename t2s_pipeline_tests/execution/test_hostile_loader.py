"""The hostile-suite loader: setup, teardown and generated statements, and the errors it gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from t2s_pipeline.errors import CaseError
from t2s_pipeline.execution.hostile_suite import (
    CATEGORIES,
    GARBAGE,
    IN_LIST,
    MAX_GENERATED_CHARS,
    NESTED_PARENS,
    Attack,
    Generated,
    generated_sql,
    load_suite,
    maximum_size,
    minimum_size,
)
from t2s_pipeline.suites import HOSTILE_SUITE

SUITE = HOSTILE_SUITE
NEW_CATEGORIES = (
    "parse_divergence", "catalogue", "transaction", "trap_object", "oracle", "settings",
    "memory", "result_size", "malformed",
)  # fmt: skip

TRAP = """\
id: trap-view
category: trap_object
setup:
  postgres:
    - CREATE VIEW sales.pay AS SELECT * FROM hr.salaries
    - GRANT SELECT ON sales.pay TO {reader}
  sqlite:
    - CREATE TABLE hr_salaries (a INTEGER)
teardown:
  postgres: [DROP VIEW IF EXISTS sales.pay]
  sqlite: [DROP TABLE IF EXISTS hr_salaries]
sql:
  duckdb: null
  postgres: SELECT * FROM sales.pay
  sqlite: SELECT * FROM hr_salaries
expect: refused
"""


def _load(tmp_path: Path, text: str) -> tuple[Attack, ...]:
    (tmp_path / "case.yaml").write_text(text)
    return load_suite(tmp_path)


def test_new_categories_are_known() -> None:
    """Every class of the outside review has a category."""
    assert set(NEW_CATEGORIES) <= set(CATEGORIES)


def test_setup_and_teardown_per_engine(tmp_path: Path) -> None:
    """Statements are kept in order, per engine; an engine without any gets nothing."""
    (attack,) = _load(tmp_path, TRAP)
    assert attack.setup_for("postgres") == (
        "CREATE VIEW sales.pay AS SELECT * FROM hr.salaries",
        "GRANT SELECT ON sales.pay TO {reader}",
    )
    assert attack.teardown_for("postgres") == ("DROP VIEW IF EXISTS sales.pay",)
    assert attack.setup_for("sqlite") == ("CREATE TABLE hr_salaries (a INTEGER)",)
    assert attack.setup_for("duckdb") == () == attack.teardown_for("duckdb")
    assert attack.sql_for("duckdb") is None


def test_attacks_without_the_new_fields_are_unchanged(tmp_path: Path) -> None:
    """Existing files keep loading as before: no setup, no teardown, no generator."""
    (attack,) = _load(tmp_path, "id: w\ncategory: write\nsql: DELETE FROM t\nexpect: refused\n")
    assert attack.setup == {} and attack.teardown == {} and attack.generate is None
    assert attack.sql_for("sqlite") == "DELETE FROM t"


def test_positional_construction_still_works() -> None:
    """The runner's doctests and tests build attacks positionally, without the new fields."""
    attack = Attack("c", "control", {"duckdb": "SELECT 1"}, "allowed", "c.yaml")
    assert attack.sql_for("duckdb") == "SELECT 1" and attack.setup_for("duckdb") == ()


@pytest.mark.parametrize(
    ("replace", "by", "field"),
    [
        ("setup:\n  postgres:", "setup:\n  oracle: [X]\n  postgres:", "setup.oracle"),
        ("  sqlite:\n    - CREATE TABLE", "  duckdb: [CREATE VIEW v AS SELECT 1]\n  sqlite:\n"
         "    - CREATE TABLE", "setup.duckdb"),
        ("    - GRANT SELECT ON sales.pay TO {reader}", "    - GRANT SELECT ON sales.pay TO {readr}",
         "setup.postgres[1]"),
        ("    - GRANT SELECT ON sales.pay TO {reader}", "    - 42", "setup.postgres[1]"),
        ("  sqlite: [DROP TABLE IF EXISTS hr_salaries]\n", "", "teardown.sqlite"),
        ("  postgres: [DROP VIEW IF EXISTS sales.pay]", "  postgres: DROP VIEW sales.pay",
         "teardown.postgres"),
        ("  postgres: [DROP VIEW IF EXISTS sales.pay]", "  postgres: []", "teardown.postgres"),
    ],
)  # fmt: skip
def test_bad_setup_or_teardown_names_the_field(
    tmp_path: Path, replace: str, by: str, field: str
) -> None:
    """A bad setup or teardown stops the load, naming the file and the field to fix."""
    assert replace in TRAP
    with pytest.raises(CaseError) as raised:
        _load(tmp_path, TRAP.replace(replace, by))
    assert raised.value.field == field
    assert "case.yaml" in str(raised.value)


@pytest.mark.parametrize("value", ["[a, b]", "CREATE VIEW v AS SELECT 1", "{}"])
def test_setup_must_be_a_mapping(tmp_path: Path, value: str) -> None:
    """setup is {engine: [sql, ...]}, nothing else."""
    text = f"id: x\ncategory: ddl\nsql: SELECT 1\nexpect: refused\nsetup: {value}\n"
    with pytest.raises(CaseError) as raised:
        _load(tmp_path, text)
    assert raised.value.field == "setup"


def test_generate_builds_the_statement(tmp_path: Path) -> None:
    """A generated attack has no stored SQL; sql_for builds it, on the listed engines only."""
    text = (
        "id: deep\ncategory: malformed\nexpect: refused\n"
        "generate: {kind: nested_parens, size: 3000, engines: [sqlite, duckdb]}\n"
    )
    (attack,) = _load(tmp_path, text)
    assert attack.generate == Generated(NESTED_PARENS, 3000, ("duckdb", "sqlite"))
    statement = attack.sql_for("sqlite")
    assert statement is not None and statement.count("(") == 3000
    assert attack.sql_for("duckdb") == statement
    assert attack.sql_for("postgres") is None


def test_generate_defaults_to_every_engine(tmp_path: Path) -> None:
    """Without engines, a generated attack applies everywhere."""
    text = "id: g\ncategory: malformed\nexpect: refused\ngenerate: {kind: garbage, size: 10}\n"
    (attack,) = _load(tmp_path, text)
    assert all(attack.sql_for(e) for e in ("duckdb", "postgres", "sqlite"))


@pytest.mark.parametrize(
    ("generate", "field"),
    [
        ("{kind: fractal, size: 10}", "generate.kind"),
        ("{size: 10}", "generate.kind"),
        ("{kind: in_list}", "generate.size"),
        ("{kind: in_list, size: 5}", "generate.size"),
        ("{kind: garbage, size: -1}", "generate.size"),
        ("{kind: garbage, size: true}", "generate.size"),
        ("{kind: garbage, size: '100'}", "generate.size"),
        (f"{{kind: garbage, size: {MAX_GENERATED_CHARS + 1}}}", "generate.size"),
        ("{kind: garbage, size: 10, engines: [oracle]}", "generate.engines"),
        ("{kind: garbage, size: 10, engines: []}", "generate.engines"),
        ("{kind: garbage, size: 10, engines: [sqlite, sqlite]}", "generate.engines"),
        ("{kind: garbage, size: 10, seed: 3}", "generate.seed"),
        ("nested_parens", "generate"),
    ],
)
def test_bad_generate_names_the_field(tmp_path: Path, generate: str, field: str) -> None:
    """A bad generator stops the load, naming the field."""
    text = f"id: g\ncategory: malformed\nexpect: refused\ngenerate: {generate}\n"
    with pytest.raises(CaseError) as raised:
        _load(tmp_path, text)
    assert raised.value.field == field


def test_generate_and_sql_are_exclusive(tmp_path: Path) -> None:
    """One attack is either written out or generated."""
    text = (
        "id: g\ncategory: malformed\nexpect: refused\nsql: SELECT 1\n"
        "generate: {kind: garbage, size: 10}\n"
    )
    with pytest.raises(CaseError) as raised:
        _load(tmp_path, text)
    assert raised.value.field == "generate"


def test_neither_sql_nor_generate_is_a_missing_sql(tmp_path: Path) -> None:
    """The error for an attack with no statement at all still names sql."""
    with pytest.raises(CaseError) as raised:
        _load(tmp_path, "id: g\ncategory: malformed\nexpect: refused\n")
    assert raised.value.field == "sql"


def test_setup_needs_the_engine_to_apply_for_generated_attacks(tmp_path: Path) -> None:
    """Setup is checked against the generator's engines, like against sql's."""
    text = (
        "id: g\ncategory: malformed\nexpect: refused\n"
        "generate: {kind: garbage, size: 10, engines: [sqlite]}\n"
        "setup: {duckdb: [CREATE TABLE t (a INTEGER)]}\nteardown: {duckdb: [DROP TABLE t]}\n"
    )
    with pytest.raises(CaseError) as raised:
        _load(tmp_path, text)
    assert raised.value.field == "setup.duckdb"


@pytest.mark.parametrize("kind", [NESTED_PARENS, IN_LIST, GARBAGE])
@pytest.mark.parametrize("engine", ["duckdb", "postgres", "sqlite"])
def test_generated_sql_is_deterministic(kind: str, engine: str) -> None:
    """The same text on every call and in every process (no hash randomisation)."""
    first = generated_sql(kind, 5000, engine)
    generated_sql.cache_clear()
    assert generated_sql(kind, 5000, engine) == first


@pytest.mark.parametrize("size", [23, 24, 30, 1000, 7_000_000])
def test_in_list_has_exactly_the_requested_length(size: int) -> None:
    """in_list is a valid query of exactly ``size`` characters, whatever the size."""
    statement = generated_sql(IN_LIST, size, "postgres")
    assert len(statement) == size
    assert statement.startswith("SELECT 1 WHERE 1 IN (1") and statement.endswith(")")
    numbers = statement[len("SELECT 1 WHERE 1 IN (") : -1].strip().split(",")
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)]


@pytest.mark.parametrize("size", [1, 3000, 30000])
def test_nested_parens_has_the_requested_depth(size: int) -> None:
    """nested_parens opens and closes exactly ``size`` parentheses around one literal."""
    statement = generated_sql(NESTED_PARENS, size, "duckdb")
    assert statement == "SELECT " + "(" * size + "1" + ")" * size


@pytest.mark.parametrize("size", [1, 256, 65536])
def test_garbage_has_the_requested_length_and_no_nul(size: int) -> None:
    """garbage is ``size`` Latin-1 characters, never NUL (NUL has attacks of its own)."""
    statement = generated_sql(GARBAGE, size, "sqlite")
    assert len(statement) == size
    assert "\0" not in statement
    assert statement.encode("latin-1").decode("latin-1") == statement


def test_garbage_differs_by_size() -> None:
    """Different sizes are different byte strings, not prefixes of one another."""
    assert not generated_sql(GARBAGE, 200, "duckdb").startswith(
        generated_sql(GARBAGE, 100, "duckdb")
    )


@pytest.mark.parametrize(
    ("kind", "size", "engine"),
    [
        ("fractal", 10, "duckdb"),
        (GARBAGE, 10, "oracle"),
        (IN_LIST, minimum_size(IN_LIST) - 1, "duckdb"),
        (NESTED_PARENS, maximum_size(NESTED_PARENS) + 1, "duckdb"),
        (GARBAGE, 0, "duckdb"),
    ],
)
def test_generated_sql_rejects_bad_arguments(kind: str, size: int, engine: str) -> None:
    """Called directly, the generator refuses what the loader would refuse."""
    with pytest.raises(ValueError):
        generated_sql(kind, size, engine)


def test_the_shipped_suite_has_every_class_of_the_outside_review() -> None:
    """The packaged hostile suite holds attacks of each new class; catalogue attacks exist for DuckDB and
    PostgreSQL, whose catalogues any reader can query."""
    attacks = load_suite(SUITE)
    assert set(NEW_CATEGORIES) <= {a.category for a in attacks}
    catalogue = [a for a in attacks if a.category == "catalogue"]
    assert all(any(a.sql_for(engine) for a in catalogue) for engine in ("duckdb", "postgres"))
