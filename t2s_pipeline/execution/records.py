"""Executed result sets as stored records: run many queries of a domain, keep them inspectable.

Every gold and candidate query of a run goes through the guarded executor; each outcome is kept
as an :class:`ExecutedResult` whose full rows (up to the evaluation cap) travel in a compressed
payload for scoring, and whose first rows are kept as JSON for people to read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pandas as pd

from t2s_pipeline.cases import Case, Domain
from t2s_pipeline.execution import Guard, QueryOutcome, open_executor
from t2s_pipeline.progress import Progress
from t2s_pipeline.results import pack_rows, unpack_rows
from t2s_pipeline.spread import cores
from t2s_pipeline.sql.cut import CutProbe, cut_probe


@dataclass(frozen=True)
class QueryJob:
    """One query to run: its key (case id or item id), its case (for db_id) and its SQL."""

    key: str
    case: Case
    sql: str | None


@dataclass(frozen=True)
class ExecutedResult:
    """The outcome of one harness query, as stored."""

    key: str
    status: str  # ok | refused | timeout | error | not_run
    layer: str | None
    reason: str | None
    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    truncated: bool
    seconds: float
    cut_tie: bool = False
    """The query's top-k cut falls inside a tie on its ORDER BY keys: which tied rows it kept
    is luck (``t2s_pipeline.sql.cut``)."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def from_outcome(key: str, outcome: QueryOutcome) -> ExecutedResult:
    """Classify a guarded-executor outcome: refusals, timeouts and errors stay distinct."""
    if outcome.timed_out:
        status = "timeout"
    elif outcome.refused:
        status = "refused"
    elif outcome.error is not None:
        status = "error"
    else:
        status = "ok"
    reason = outcome.reason if outcome.refused else outcome.error
    return ExecutedResult(
        key, status, outcome.layer, reason, tuple(outcome.columns), list(outcome.rows),
        outcome.truncated, outcome.seconds,
    )  # fmt: skip


def _probed(key: str, outcome: QueryOutcome, probe: CutProbe) -> ExecutedResult:
    """The result of a query run with one row more than its LIMIT: its own rows, and whether
    its cut falls inside a tie."""
    result = from_outcome(key, outcome)
    if not result.ok:
        return result
    rows, tied = probe.read(result.rows)
    return dataclasses.replace(result, rows=rows, cut_tie=tied)


def not_run(key: str, reason: str) -> ExecutedResult:
    """A query that was never executed (the SUT gave no SQL, or the agent failed)."""
    return ExecutedResult(key, "not_run", None, reason, (), [], False, 0.0)


PARALLEL_FROM = 200
"""A database's batch of this many queries or more is shared between two workers (one core
runs a statement while the other readies the next and reads answers); fewer run in one."""


def execute_jobs(
    domain: Domain,
    jobs: Sequence[QueryJob],
    guard: Guard,
    progress: Progress | None = None,
    refusal_log_level: int = logging.WARNING,
    parallel_from: int = PARALLEL_FROM,
) -> list[ExecutedResult]:
    """Run every job through the guarded executor, in job order; each database's jobs run on
    one executor, or on two at once (every other job each) from ``parallel_from`` jobs when
    the machine has two cores or more.

    Refusals are logged at ``refusal_log_level`` (a test suite's mutants may be refused as a
    matter of course, and log at DEBUG)."""
    results: dict[str, ExecutedResult] = {}
    by_target: dict[str, list[QueryJob]] = {}
    for job in jobs:
        if job.sql is None or not job.sql.strip():
            results[job.key] = not_run(job.key, "no SQL to run")
        else:
            by_target.setdefault(domain.database_for(job.case), []).append(job)
    counted = _Counted(len(jobs), len(results), progress)
    for target, group in by_target.items():
        ways = min(cores(), 2) if len(group) >= parallel_from else 1
        parts = [group[start::ways] for start in range(ways)]

        def run(part: list[QueryJob], target: str = target) -> dict[str, ExecutedResult]:
            return _run_on(target, part, domain.dialect, guard, refusal_log_level, counted)

        if ways == 1:
            results.update(run(group))
            continue
        with ThreadPoolExecutor(max_workers=ways, thread_name_prefix="t2s-execute") as pool:
            for done in pool.map(run, parts):
                results.update(done)
    return [results[job.key] for job in jobs]


class _Counted:
    """Progress over every job, told from whichever thread finished one."""

    def __init__(self, total: int, done: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, done, progress
        self._lock = threading.Lock()

    def one(self) -> None:
        with self._lock:
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.total)


def _run_on(
    target: str,
    group: Sequence[QueryJob],
    dialect: str,
    guard: Guard,
    refusal_log_level: int,
    counted: _Counted,
) -> dict[str, ExecutedResult]:
    """Run one database's jobs on one executor, in order."""
    results: dict[str, ExecutedResult] = {}
    probes: list[CutProbe | None] = []
    again: list[QueryJob] = []  # a rewritten query that failed runs again as written
    with open_executor(target, guard, refusal_log_level) as executor:
        outcomes = executor.run_all(_statements(group, dialect, probes))
        for index, (job, outcome) in enumerate(zip(group, outcomes, strict=True)):
            probe = probes[index]
            if probe is None:
                results[job.key] = from_outcome(job.key, outcome)
            elif outcome.refused or outcome.error is not None:
                again.append(job)
                continue
            else:
                results[job.key] = _probed(job.key, outcome, probe)
            counted.one()
        for job in again:
            results[job.key] = from_outcome(job.key, executor.run(str(job.sql)))
            counted.one()
    return results


def _statements(
    jobs: Sequence[QueryJob], dialect: str, probes: list[CutProbe | None]
) -> Iterator[str]:
    """Each job's statement as it will run (with its cut probe, appended to ``probes``), read
    only when the executor asks for it, so reading the next overlaps running the one before."""
    for job in jobs:
        probes.append(cut_probe(str(job.sql), dialect))
        yield str(job.sql if probes[-1] is None else probes[-1].sql)


def to_frame(results: Sequence[ExecutedResult], preview_rows: int) -> pd.DataFrame:
    """The stored table: readable preview plus the compressed full rows for scoring."""
    return pd.DataFrame(
        {
            "key": [r.key for r in results],
            "status": [r.status for r in results],
            "layer": pd.Series([r.layer for r in results], dtype="string"),
            "reason": pd.Series([r.reason for r in results], dtype="string"),
            "columns_json": [json.dumps(list(r.columns)) for r in results],
            "n_rows": pd.Series([len(r.rows) for r in results], dtype="Int64"),
            "truncated": [r.truncated for r in results],
            "seconds": [r.seconds for r in results],
            "preview_json": [json.dumps(jsonable(r.rows[:preview_rows])) for r in results],
            "payload": [pack_rows(r.rows) for r in results],
            "cut_tie": [r.cut_tie for r in results],
        }
    )


def from_frame(frame: pd.DataFrame, rows: bool = True) -> dict[str, ExecutedResult]:
    """Read stored results back, keyed by case or item id; without ``rows`` every result's
    rows are left out (empty), for a reader that takes them packed (:func:`packed_rows`)."""
    out: dict[str, ExecutedResult] = {}
    for row in frame.itertuples(index=False):
        out[str(row.key)] = ExecutedResult(
            key=str(row.key),
            status=str(row.status),
            layer=None if pd.isna(row.layer) else str(row.layer),
            reason=None if pd.isna(row.reason) else str(row.reason),
            columns=tuple(json.loads(str(row.columns_json))),
            rows=unpack_rows(bytes(row.payload)) if rows else [],
            truncated=bool(row.truncated),
            seconds=float(row.seconds),
            cut_tie=bool(row.cut_tie) if not pd.isna(row.cut_tie) else False,
        )
    return out


def packed_rows(frame: pd.DataFrame) -> dict[str, bytes]:
    """Each stored result's rows as stored (packed), keyed by case or item id."""
    return {str(k): bytes(p) for k, p in zip(frame["key"], frame["payload"], strict=True)}


def jsonable(value: Any) -> Any:
    """Rows as JSON-ready values (decimals as floats, dates as ISO text, bytes as hex)."""
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
