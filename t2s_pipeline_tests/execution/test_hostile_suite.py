"""The hostile suite: its shape, its loader, its verdicts, and zero leaks on every engine."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from t2s_pipeline.errors import CaseError
from t2s_pipeline.execution import Guard, QueryOutcome, open_executor
from t2s_pipeline.execution.hostile import (
    LAYER_SETTINGS,
    LEAK,
    NOT_APPLICABLE,
    OK,
    OVER_BLOCK,
    judge,
    load_suite,
)
from t2s_pipeline.execution.hostile_suite import Attack
from t2s_pipeline.execution.hostile_targets import duckdb_target, sqlite_target
from t2s_pipeline_tests.execution.conftest import HostileRun

ENGINES = ("duckdb", "sqlite", "postgres", "mysql")
REQUIRED_CATEGORIES = {
    "write", "ddl", "multi_statement", "dml_in_cte", "select_into", "copy_export", "attach",
    "extension", "file_function", "network_function", "sensitive", "search_path", "role",
    "config", "resource", "control",
}  # fmt: skip


def test_suite_is_large_enough_and_covers_every_category(
    hostile_attacks: tuple[Attack, ...],
) -> None:
    """The issue asks for at least 45 attacks and 8 controls across the listed attack classes."""
    expectations = Counter(a.expect for a in hostile_attacks)
    assert expectations["refused"] >= 45
    assert expectations["allowed"] >= 8
    assert {a.category for a in hostile_attacks} >= REQUIRED_CATEGORIES


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_has_attacks_and_controls(
    hostile_attacks: tuple[Attack, ...], engine: str
) -> None:
    """An engine with no applicable attacks would pass the matrix vacuously."""
    applicable = [a for a in hostile_attacks if a.sql_for(engine)]
    assert sum(a.expect == "refused" for a in applicable) >= 30
    assert sum(a.expect == "allowed" for a in applicable) >= 8


KNOWN_GAPS: dict[tuple[str, str], dict[str, str]] = {}
"""Cells a layer alone does not stop, each with why; listed so a new failure and a fixed gap
both fail the test (the list must stay exact). docs/engines.md repeats them."""


@pytest.mark.parametrize("layer", list(LAYER_SETTINGS))
@pytest.mark.parametrize("engine", ENGINES)
def test_no_leak_and_no_over_block(hostile_run: HostileRun, engine: str, layer: str) -> None:
    """Each layer alone, and both together, must stop every attack and serve every control."""
    cells = [c for c in hostile_run.report(engine).cells if c.layer == layer]
    known = KNOWN_GAPS.get((engine, layer), {})
    failures = [f"{c.attack}: {c.verdict} ({c.how}: {c.detail})" for c in cells if c.verdict
                not in (OK, NOT_APPLICABLE) and c.attack not in known]  # fmt: skip
    assert not failures, "\n".join(failures)
    still = {c.attack for c in cells if c.verdict not in (OK, NOT_APPLICABLE)}
    assert still == set(known), (
        f"known gaps fixed (remove them from KNOWN_GAPS): {set(known) - still}"
    )
    assert len(cells) == len(hostile_run.attacks)


@pytest.mark.parametrize("engine", ENGINES)
def test_nothing_changed_after_any_write_attempt(hostile_run: HostileRun, engine: str) -> None:
    """The fingerprint (file hash or row counts) must be identical after every attack."""
    changed = [c for c in hostile_run.report(engine).cells if "database changed" in c.detail]
    assert not changed


@pytest.mark.parametrize("engine", ENGINES)
def test_filter_refuses_every_non_resource_attack_itself(
    hostile_run: HostileRun, engine: str
) -> None:
    """With both layers on, the filter is the one that refuses (the database is the backstop).

    Except: resource, memory and result-size attacks are the limits' to stop; the limits layer
    refuses too-deep nesting before anything parses it and the wall clock may cut a huge
    statement first; and a trap object makes the database layer refuse to open the target (or
    drop the object from its snapshot, leaving the filter a name that is simply not there)."""
    cells = hostile_run.report(engine).cells
    also = {
        "malformed": {"refused:limits", "timeout"},
        "trap_object": {"failed", "refused:database"},
    }
    skipped = ("resource", "control", "memory", "result_size")
    full = [c for c in cells if c.layer == "full" and c.category not in skipped]
    others = [f"{c.attack}: {c.how} {c.detail}" for c in full if c.verdict != NOT_APPLICABLE
              and c.how not in {"refused:filter", *also.get(c.category, ())}]  # fmt: skip
    assert not others, "\n".join(others)


@pytest.mark.parametrize("engine", ENGINES)
def test_resource_attacks_end_within_the_bound(hostile_run: HostileRun, engine: str) -> None:
    """Runaway queries are stopped by the timer or the row bound, not left running."""
    cells = [c for c in hostile_run.report(engine).cells if c.category == "resource"]
    assert cells and all(c.seconds < 4.0 for c in cells)
    assert all(c.how in ("timeout", "truncated", "refused:filter", "refused:database", "failed")
               for c in cells if c.verdict != NOT_APPLICABLE)  # fmt: skip


def test_fingerprint_sees_a_write_when_no_layer_stops_it(warehouse: Path, tmp_path: Path) -> None:
    """Without this, a zero-leak matrix could just mean the fingerprint is blind."""
    for target in (duckdb_target(warehouse, tmp_path), sqlite_target(warehouse, tmp_path)):
        before = target.fingerprint()
        table = "sales.sites" if target.engine == "duckdb" else "sites"
        guard = Guard(target.allowed_schemas, dialect=target.dialect, layers=frozenset())
        with open_executor(target.unguarded, guard) as executor:
            executor.run(f"DELETE FROM {table} WHERE site_id = 'S01'")
        assert target.fingerprint() != before, target.engine


CONTROL = Attack("c", "control", {"duckdb": "SELECT 1"}, "allowed", "c.yaml")
RESOURCE = Attack("r", "resource", {"duckdb": "SELECT 1"}, "refused", "r.yaml")
WRITE = Attack("w", "write", {"duckdb": "DELETE"}, "refused", "w.yaml")
RAN = QueryOutcome(False, None, None, ("a",), [(1,)])
CUT = QueryOutcome(False, None, None, ("a",), [(1,)], truncated=True)
REFUSED = QueryOutcome(True, "database", "no", ())
FAILED = QueryOutcome(False, None, None, (), error="no such table")
SLOW = QueryOutcome(True, "database", "timed out", (), timed_out=True, seconds=99.0)


@pytest.mark.parametrize(
    ("attack", "outcome", "changed", "verdict"),
    [
        (CONTROL, RAN, False, OK),
        (CONTROL, REFUSED, False, OVER_BLOCK),
        (CONTROL, FAILED, False, OVER_BLOCK),
        (WRITE, REFUSED, False, OK),
        (WRITE, FAILED, False, OK),
        (WRITE, RAN, False, LEAK),
        (WRITE, REFUSED, True, LEAK),
        (WRITE, CUT, False, LEAK),
        (RESOURCE, CUT, False, OK),
        (RESOURCE, SLOW, False, LEAK),
    ],
)
def test_judge(attack: Attack, outcome: QueryOutcome, changed: bool, verdict: str) -> None:
    """The verdict rules: ran or changed is a leak, a refused control is an over-block."""
    assert judge(attack, outcome, changed, bound_s=5.0)[0] == verdict


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("id: x\ncategory: write\nexpect: refused\n", "sql"),
        ("id: x\ncategory: nope\nsql: SELECT 1\nexpect: refused\n", "category"),
        ("id: Bad Id\ncategory: write\nsql: SELECT 1\nexpect: refused\n", "id"),
        ("id: x\ncategory: write\nsql: SELECT 1\nexpect: maybe\n", "expect"),
        ("id: x\ncategory: write\nsql: {oracle: SELECT 1}\nexpect: refused\n", "sql.oracle"),
        ("id: x\ncategory: write\nsql: SELECT 1\nexpect: refused\nsevere: 1\n", "severe"),
        ("- [not, a, mapping]\n", "-"),
        ("id: x\ncategory: write\nsql: 'SELECT 1\n", "-"),
    ],
)
def test_bad_suite_file_names_file_and_field(tmp_path: Path, text: str, field: str) -> None:
    """A broken hostile file must say which file and field to fix, not crash the run."""
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(CaseError) as raised:
        load_suite(tmp_path)
    assert "bad.yaml" in str(raised.value)
    assert raised.value.field == field


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    """Two attacks with one id would hide one of them in the report."""
    entry = "id: same\ncategory: write\nsql: DELETE FROM t\nexpect: refused\n"
    (tmp_path / "a.yaml").write_text(entry)
    (tmp_path / "b.yaml").write_text(entry)
    with pytest.raises(CaseError, match="unique"):
        load_suite(tmp_path)
