"""Batches through ``GuardedExecutor.run_all``: same outcomes as one by one, verdicts first."""

from __future__ import annotations

import hashlib
import logging
import resource
import shutil
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS
from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.execution.guard import FILTER
from t2s_pipeline.execution.outcome import QueryOutcome
from t2s_pipeline.execution.worker import _AHEAD, _Serving

BATCH = [
    "SELECT count(*) FROM sales.orders",
    "DELETE FROM sales.orders",
    "SELECT * FROM hr.employees",
    "SELECT no_such_column FROM sales.orders",
    "SELECT pm_cd, sum(amount) FROM finance.payments GROUP BY pm_cd ORDER BY pm_cd",
    "DROP TABLE sales.items",
    "SELECT 1",
]


def _summary(outcome: Any) -> tuple[Any, ...]:
    return (outcome.refused, outcome.layer, outcome.reason, outcome.error, outcome.rows)


@pytest.fixture(autouse=True)
def _quiet_refusals() -> Any:
    logging.getLogger("t2s.guard").setLevel(logging.ERROR)
    yield
    logging.getLogger("t2s.guard").setLevel(logging.NOTSET)


@pytest.mark.parametrize("layers", [{"filter", "database"}, {"filter"}, {"database"}])
def test_run_all_gives_the_outcomes_of_run_in_order(warehouse: Path, layers: set[str]) -> None:
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, layers=frozenset(layers))
    with open_executor(str(warehouse), guard) as executor:
        one_by_one = [_summary(executor.run(sql)) for sql in BATCH]
        batched = [_summary(outcome) for outcome in executor.run_all(BATCH)]
    assert batched == one_by_one
    assert batched[0][0] is False and batched[0][4][0][0] > 0
    if FILTER in layers:
        assert [b[1] for b in batched[1:3]] == ["filter", "filter"]


def test_filter_refusals_in_a_batch_never_reach_the_database(
    warehouse: Path, tmp_path: Path
) -> None:
    # Filter only: the source is opened read-write, so the filter is all that stands guard.
    copy = tmp_path / "w.duckdb"
    shutil.copy(warehouse, copy)
    before = hashlib.sha256(copy.read_bytes()).hexdigest()
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, layers=frozenset({"filter"}))
    writes = [f"CREATE TABLE sales.t{i} AS SELECT 1 AS a" for i in range(20)]
    batch = [sql for pair in zip(["SELECT 1"] * 20, writes, strict=True) for sql in pair]
    with open_executor(str(copy), guard) as executor:
        outcomes = list(executor.run_all(batch))
    assert [o.refused for o in outcomes] == [False, True] * 20
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before


def test_each_verdict_is_known_before_its_statement_runs(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    lock = threading.Lock()
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, contained=False)
    statements = [f"SELECT {i} AS n FROM sales.orders LIMIT 1" for i in range(30)]
    with open_executor(str(warehouse), guard) as executor:
        real_check = executor.statement_filter.check

        def recording_check(sql: str) -> Any:
            verdict = real_check(sql)
            with lock:
                events.append(("verdict", sql))
            return verdict

        monkeypatch.setattr(executor.statement_filter, "check", recording_check)
        real_prepare, real_fetch = executor._backend.prepare, executor._backend.fetch
        prepared_sql: dict[int, str] = {}

        def recording_prepare(sql: str) -> Any:
            with lock:
                events.append(("prepare", sql))
            prepared = real_prepare(sql)
            prepared_sql[id(prepared)] = sql
            return prepared

        def recording_fetch(prepared: Any) -> Any:
            with lock:
                events.append(("fetch", prepared_sql[id(prepared)]))
            return real_fetch(prepared)

        monkeypatch.setattr(executor._backend, "prepare", recording_prepare)
        monkeypatch.setattr(executor._backend, "fetch", recording_fetch)
        outcomes = list(executor.run_all(statements))
    assert [o.rows for o in outcomes] == [[(i,)] for i in range(30)]
    for sql in statements:
        verdict, prepare = events.index(("verdict", sql)), events.index(("prepare", sql))
        assert verdict < prepare < events.index(("fetch", sql))


def test_run_all_readies_ahead_on_a_helper_thread(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[str] = set()
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, contained=False)
    with open_executor(str(warehouse), guard) as executor:
        real_check = executor.statement_filter.check

        def recording_check(sql: str) -> Any:
            threads.add(threading.current_thread().name)
            return real_check(sql)

        monkeypatch.setattr(executor.statement_filter, "check", recording_check)
        real_prepare = executor._backend.prepare

        def recording_prepare(sql: str) -> Any:
            threads.add(threading.current_thread().name)
            return real_prepare(sql)

        monkeypatch.setattr(executor._backend, "prepare", recording_prepare)
        list(executor.run_all(["SELECT 1", "SELECT 2"]))
    assert threads and all(name.startswith("t2s-ready") for name in threads)


def test_an_abandoned_batch_releases_what_it_readied(
    warehouse: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller that stops reading a batch must not leave a prepared cursor open."""
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, contained=False)
    with open_executor(str(warehouse), guard) as executor:
        released: list[Any] = []
        real_release = executor._backend.release

        def recording_release(prepared: Any) -> None:
            released.append(prepared)
            real_release(prepared)

        monkeypatch.setattr(executor._backend, "release", recording_release)
        batch = executor.run_all(["SELECT 1", "SELECT 2", "SELECT 3"])
        assert next(batch).rows == [(1,)]
        batch.close()
        assert len(released) == 1
        with pytest.raises(Exception, match="closed"):
            released[0].cursor.execute("SELECT 1")
        assert executor.run("SELECT 4").rows == [(4,)]


def test_a_contained_batch_hands_the_next_statement_ahead_and_survives_a_replaced_worker(
    warehouse: Path,
) -> None:
    """The worker gets the next statement before the caller reads the current answer; when
    the worker is replaced after a memory attack, the statement already handed to it runs
    again in the fresh worker, and every outcome is what one-by-one gives."""
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, layers=frozenset({"database"}), timeout_s=10)
    attack = "SELECT length(string_agg(repeat('x', 1000), '')) FROM range(2000000)"
    batch = ["SELECT count(*) FROM sales.sites", attack, *BATCH]
    with open_executor(str(warehouse), guard) as executor:
        one_by_one = [_summary(executor.run(sql)) for sql in batch]
        outcomes = executor.run_all(batch)
        first = _summary(next(outcomes))
        assert executor._worker is not None and executor._worker.unanswered == _AHEAD - 1
        batched = [first, *(_summary(o) for o in outcomes)]
    assert batched[1][0] is True and batched[1][1] == "limits"
    assert batched == one_by_one
    assert batched[2][4][0][0] > 0


def test_an_abandoned_contained_batch_leaves_no_stale_answer(warehouse: Path) -> None:
    """A caller that stops reading a batch early: the worker holding the statement handed
    ahead is ended, so the next statement gets its own answer, not the abandoned one's."""
    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, layers=frozenset({"database"}))
    with open_executor(str(warehouse), guard) as executor:
        outcomes = executor.run_all(["SELECT 1", "SELECT 2", "SELECT 3"])
        assert next(outcomes).rows == [(1,)]
        kept = executor.run_all(["SELECT 4"])  # not started: the first batch is still open
        assert next(kept).rows == [(4,)]
        outcomes.close()
        assert executor.run("SELECT 5").rows == [(5,)]
    with open_executor(str(warehouse), guard) as executor:
        assert executor.run("SELECT 6").rows == [(6,)]


def test_the_worker_readies_the_next_statement_while_one_runs() -> None:
    """Inside the worker, a statement waiting in the pipe is readied on the helper thread while
    the one before runs: the first statement's run waits for the second's readying (it would
    time out if the readying only started after it), and answers come back in order."""
    second_readied = threading.Event()
    calls: list[tuple[str, str]] = []

    class Executor:
        guard = Guard(allowed_schemas=ALLOWED_SCHEMAS)

        def ready(self, sql: str) -> str:
            calls.append(("ready", sql))
            if sql == "second":
                second_readied.set()
            return sql

        def finish(self, ready: str, started: float) -> QueryOutcome:
            calls.append(("finish", ready))
            waited = second_readied.wait(10) if ready == "first" else True
            return QueryOutcome(False, None, None, ("waited",), rows=[(waited,)])

    parent, child = socket.socketpair()
    ours, theirs = Connection(parent.detach()), Connection(child.detach())
    for sql in ("first", "second"):
        ours.send(("run", sql, 1e6))
    ours.send(("close",))
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            serving = _Serving(theirs, 1024, 1 << 40, pool)
            serving.executor = Executor()
            server = threading.Thread(target=serving.loop)
            server.start()
            answers = [ours.recv() for _ in range(3)]
            ours.close()
            server.join(10)
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    assert [a[1].rows for a in answers[:2]] == [[(True,)], [(True,)]]
    assert answers[2] == ("closed",)
    assert calls.index(("ready", "second")) < calls.index(("finish", "second"))


def test_prewarmed_workers_are_the_ones_the_executors_take(warehouse: Path) -> None:
    """``prewarm`` starts workers a run's execute stages take later (``run.warm``); each
    answers as a fresh one would, and one is started again for the pool when taken."""
    from t2s_pipeline.execution import worker

    guard = Guard(allowed_schemas=ALLOWED_SCHEMAS, memory_mb=3072)  # a limit no other test uses
    worker._POOL.shutdown()  # idle workers of earlier tests would fill the pool
    worker.prewarm(guard, 2)
    waiting = {w.process.pid for w in worker._POOL._idle if w.memory_mb == 3072}
    assert len(waiting) == 2
    with open_executor(str(warehouse), guard) as one, open_executor(str(warehouse), guard) as two:
        assert {one.worker_pid, two.worker_pid} == waiting
        assert (
            one.run("SELECT count(*) FROM sales.orders").rows
            == two.run("SELECT count(*) FROM sales.orders").rows
        )
    idle = {w.process.pid for w in worker._POOL._idle if w.memory_mb == 3072}
    assert waiting < idle  # both given back, and a spare started when the last was taken
    worker.prewarm(guard, 2)  # enough wait already: nothing more is started
    assert {w.process.pid for w in worker._POOL._idle if w.memory_mb == 3072} == idle
