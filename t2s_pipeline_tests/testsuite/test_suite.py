"""Distilled test suites (issue 22): a suite tells each gold query from its near misses where
the snapshot alone cannot, and is built once and reused."""

from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.execution.guard import Guard
from t2s_pipeline.execution.records import QueryJob, execute_jobs
from t2s_pipeline.testsuite.suite import (
    SuiteSettings,
    TestSuite,
    ensure_suite,
    gold_is_ordered,
    load_suite,
    same_rows,
    told_apart_by,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "testsuite" / "mutants.yaml"
ENTRIES: list[dict[str, Any]] = yaml.safe_load(FIXTURES.read_text(encoding="utf-8"))
SETTINGS = SuiteSettings(seed=0, random_neighbours=3)
WINDOW_GOLD = (
    "SELECT COUNT(*) AS new_customers FROM sales.customers "
    "WHERE created_on BETWEEN DATE '2025-04-02' AND DATE '2025-06-30'"
)
WINDOW_ONE_DAY_WIDE = WINDOW_GOLD.replace("2025-04-02", "2025-04-01")


def _case_id(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60]


@pytest.fixture(scope="module")
def case_set(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> CaseSet:
    """One case per mutant fixture, over a private copy of the session warehouse."""
    root = tmp_path_factory.mktemp("suite")
    shutil.copy(warehouse, root / "w.duckdb")
    folder = root / "cases"
    folder.mkdir()
    (folder / "domain.yaml").write_text(
        "name: t\nengine: duckdb\ndialect: duckdb\ndatabase: ../w.duckdb\n"
        "allowed_schemas: [sales, finance, inventory]\nas_of: 2025-06-30\n"
    )
    for entry in ENTRIES:
        case = {
            "id": _case_id(entry["name"]),
            "question": entry["name"],
            "gold_sql": entry["sql"],
            "difficulty": "filtered_aggregate",
        }
        (folder / f"{case['id']}.yaml").write_text(yaml.safe_dump(case))
    loaded = load_cases(folder)
    assert not loaded.problems, loaded.problems
    return loaded


@pytest.fixture(scope="module")
def guard(case_set: CaseSet) -> Guard:
    return Guard.for_evaluation(case_set.domain.allowed_schemas, case_set.domain.dialect)


@pytest.fixture(scope="module")
def suite(case_set: CaseSet, guard: Guard) -> TestSuite:
    return ensure_suite(case_set, guard, SETTINGS)


def _same_on_snapshot(case_set: CaseSet, case_id: str, sql: str, guard: Guard) -> bool:
    case = case_set.by_id()[case_id]
    gold, candidate = execute_jobs(
        case_set.domain, [QueryJob("g", case, case.gold_sql), QueryJob("c", case, sql)], guard,
        refusal_log_level=logging.DEBUG,
    )  # fmt: skip
    ordered = gold_is_ordered(case.gold_sql, "duckdb", "auto")
    return gold.ok and candidate.ok and same_rows(gold, candidate, ordered, 6)


def test_one_day_too_wide_window_matches_on_the_snapshot_only(
    case_set: CaseSet, suite: TestSuite, guard: Guard
) -> None:
    """The reviewer's case: a window one day too wide returns the gold's rows on the snapshot
    (no account was opened that day) and other rows on a boundary neighbour."""
    case_id = _case_id("a window start one day earlier (the one-day-too-wide window)")
    assert _same_on_snapshot(case_set, case_id, WINDOW_ONE_DAY_WIDE, guard)
    assert told_apart_by(suite, case_set, case_id, WINDOW_ONE_DAY_WIDE, guard, SETTINGS) == (
        "boundary-below"
    )
    assert told_apart_by(suite, case_set, case_id, WINDOW_GOLD, guard, SETTINGS) is None
    assert suite.cases[case_id].snapshot_missed >= 1
    assert suite.cases[case_id].suite_caught == suite.cases[case_id].snapshot_missed


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_every_mutant_class_is_caught(
    entry: dict[str, Any], case_set: CaseSet, suite: TestSuite, guard: Guard
) -> None:
    """Each fixture's mutant differs from its gold on the snapshot or on a suite neighbour."""
    case_id = _case_id(entry["name"])
    on_snapshot = _same_on_snapshot(case_set, case_id, entry["mutant"], guard)
    if on_snapshot:
        assert told_apart_by(suite, case_set, case_id, entry["mutant"], guard, SETTINGS)


def test_the_gold_itself_agrees_everywhere(
    case_set: CaseSet, suite: TestSuite, guard: Guard
) -> None:
    """No suite ever tells a gold query from itself (no false alarm of the comparison)."""
    for case in case_set.cases:
        assert told_apart_by(suite, case_set, case.id, case.gold_sql, guard, SETTINGS) is None


def test_suite_is_stored_and_reused(case_set: CaseSet, suite: TestSuite, guard: Guard) -> None:
    """Built once per (cases, snapshot, seed): the second call loads it; another seed is
    another suite."""
    assert (suite.folder / "suite.json").exists()
    assert suite.folder.parent.parent == Path(case_set.domain.database_for(None)).parent
    before = (suite.folder / "suite.json").stat().st_mtime_ns
    again = ensure_suite(case_set, guard, SETTINGS)
    assert again.key == suite.key
    assert (suite.folder / "suite.json").stat().st_mtime_ns == before
    assert load_suite(case_set.domain, case_set.content_hash, SuiteSettings(seed=1)) is None
    kept = {n for c in suite.cases.values() for n in c.neighbours}
    assert kept == set(suite.neighbours)
    assert all(suite.neighbour_path(n).exists() for n in kept)
