"""The hostile-suite runner: every attack, against each layer alone and the full stack, per engine.

For each engine target and each layer setting (``filter`` alone, ``database`` alone, ``full``)
every attack runs on a fresh executor, with the target fingerprinted before and after. A cell is:

- ``ok``: an attack was refused or failed harmlessly, or (resource attacks) was cut off by the
  row bound, all within the time bound; or a control ran;
- ``leak``: an attack changed the database, ran to completion, or outlived the time bound;
- ``over-block``: a control was refused or failed;
- ``n/a``: the attack has no SQL for that engine.

With the filter alone, the connection is unprotected (DuckDB and SQLite opened read-write,
PostgreSQL as the owner), so only the filter stands in the way; the time and row bounds apply
in every setting, since they are not an access layer.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from t2s_pipeline.errors import ExecutionError
from t2s_pipeline.execution.executor import open_executor
from t2s_pipeline.execution.guard import DATABASE, FILTER, LAYERS, Guard
from t2s_pipeline.execution.hostile_suite import RESOURCE, Attack, load_suite
from t2s_pipeline.execution.hostile_targets import EngineTarget
from t2s_pipeline.execution.outcome import QueryOutcome
from t2s_pipeline.progress import Note
from t2s_pipeline.suites.legitimate import LegitStatement

__all__ = ["Attack", "Cell", "SuiteReport", "load_suite", "run_suite", "run_corpus", "judge"]

FULL = "full"
LAYER_SETTINGS: dict[str, frozenset[str]] = {
    FILTER: frozenset({FILTER}),
    DATABASE: frozenset({DATABASE}),
    FULL: LAYERS,
}
OK, LEAK, OVER_BLOCK, NOT_APPLICABLE = "ok", "leak", "over-block", "n/a"
VERDICTS: tuple[str, ...] = (OK, LEAK, OVER_BLOCK, NOT_APPLICABLE)
BOUND_SLACK_S = 3.0
"""How far past the timeout a statement may end and still count as bounded."""


@dataclass(frozen=True)
class Cell:
    """The verdict for one attack on one engine under one layer setting."""

    attack: str
    category: str
    engine: str
    layer: str
    verdict: str
    how: str
    detail: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class SuiteReport:
    """Every cell of one run of the suite."""

    cells: tuple[Cell, ...]

    @property
    def failures(self) -> tuple[Cell, ...]:
        """Leaks and over-blocks."""
        return tuple(c for c in self.cells if c.verdict in (LEAK, OVER_BLOCK))

    def counts(self) -> Counter[tuple[str, str, str]]:
        """Cells per (engine, layer, verdict)."""
        return Counter((c.engine, c.layer, c.verdict) for c in self.cells)


def run_suite(
    attacks: Sequence[Attack],
    targets: Sequence[EngineTarget],
    timeout_s: float = 2.0,
    row_limit: int = 1000,
    progress: Note | None = None,
    parallel: bool = False,
) -> SuiteReport:
    """Run every attack on every target under every layer setting.

    With ``parallel``, engines run side by side (one thread each; they share nothing), which
    mostly overlaps their timeouts.
    """

    def one_engine(target: EngineTarget) -> list[Cell]:
        return _run_engine(attacks, target, timeout_s, row_limit, progress)

    if parallel and len(targets) > 1:
        with ThreadPoolExecutor(max_workers=len(targets)) as pool:
            per_engine = list(pool.map(one_engine, targets))
    else:
        per_engine = [one_engine(target) for target in targets]
    return SuiteReport(tuple(cell for cells in per_engine for cell in cells))


def _run_engine(
    attacks: Sequence[Attack],
    target: EngineTarget,
    timeout_s: float,
    row_limit: int,
    progress: Note | None,
) -> list[Cell]:
    cells = []
    for layer in LAYER_SETTINGS:
        if progress is not None:
            progress(f"{target.engine}: {layer} layer")
        fingerprint = target.fingerprint()
        for attack in attacks:
            cell, fingerprint = _run_cell(attack, target, layer, fingerprint, timeout_s, row_limit)
            cells.append(cell)
    return cells


def _run_cell(
    attack: Attack,
    target: EngineTarget,
    layer: str,
    before: str,
    timeout_s: float,
    row_limit: int,
) -> tuple[Cell, str]:
    """One attack on a fresh executor; returns its cell and the target's fingerprint after."""
    sql = attack.sql_for(target.engine)
    if sql is None:
        return Cell(attack.id, attack.category, target.engine, layer, NOT_APPLICABLE, "-"), before
    guard = Guard(
        allowed_schemas=target.allowed_schemas,
        dialect=target.dialect,
        layers=LAYER_SETTINGS[layer],
        timeout_s=timeout_s,
        row_limit=row_limit,
    )
    original = before
    setup = [_fill(s, target) for s in attack.setup_for(target.engine)]
    if setup:  # the scenario, planted by the owner: the attack is judged from here
        target.owner_run(setup)
        before = target.fingerprint()
    outcome = _attempt(target, layer, _fill(sql, target), guard)
    after = target.fingerprint()
    changed = after != before
    teardown = [_fill(s, target) for s in attack.teardown_for(target.engine)]
    if teardown:
        target.owner_run(teardown)
        after = target.fingerprint()
    if after != original:
        target.reset()
        after = target.fingerprint()
    verdict, how = judge(attack, outcome, changed, timeout_s + BOUND_SLACK_S)
    detail = outcome.reason or outcome.error or ("database changed" if changed else "")
    cell = Cell(
        attack.id, attack.category, target.engine, layer, verdict, how, detail, outcome.seconds
    )
    return cell, after


def _attempt(target: EngineTarget, layer: str, sql: str, guard: Guard) -> QueryOutcome:
    """One statement on a fresh executor. A database layer that refuses to open the target
    (the role check found a trap) refuses the statement with it."""
    location = target.unguarded if layer == FILTER else target.guarded
    guard = replace(guard, allowed_tables=target.allowed_tables)
    try:
        # The attack is meant to be refused: the cell records the refusal, so it is quiet.
        with open_executor(location, guard, refusal_log_level=logging.DEBUG) as executor:
            return executor.run(sql)
    except ExecutionError as error:
        return QueryOutcome(True, DATABASE, f"refused to open: {error}", ())


def _fill(sql: str, target: EngineTarget) -> str:
    for name, value in target.placeholders.items():
        sql = sql.replace("{" + name + "}", value)
    return sql


def judge(attack: Attack, outcome: QueryOutcome, changed: bool, bound_s: float) -> tuple[str, str]:
    """The verdict and a short account of what happened.

    >>> control = Attack("c", "control", {"duckdb": "SELECT 1"}, "allowed", "c.yaml")
    >>> judge(control, QueryOutcome(True, "filter", "no", ()), False, 5.0)
    ('over-block', 'refused:filter')
    """
    how = describe(outcome)
    if attack.expect == "allowed":
        ran = not outcome.refused and outcome.error is None and not changed
        return (OK if ran else OVER_BLOCK), how
    if changed or outcome.seconds > bound_s:
        return LEAK, how
    if outcome.refused or outcome.error is not None:
        return OK, how
    if attack.category == RESOURCE and outcome.truncated:
        return OK, how
    return LEAK, how


def describe(outcome: QueryOutcome) -> str:
    """``refused:<layer>``, ``timeout``, ``failed``, ``truncated`` or ``ran``."""
    if outcome.timed_out:
        return "timeout"
    if outcome.refused:
        return f"refused:{outcome.layer}"
    if outcome.error is not None:
        return "failed"
    return "truncated" if outcome.truncated else "ran"


def run_corpus(
    corpus: Mapping[str, Sequence[LegitStatement]],
    targets: Sequence[EngineTarget],
    timeout_s: float = 5.0,
    row_limit: int = 1000,
    progress: Note | None = None,
) -> SuiteReport:
    """The legitimate corpus on every target under every layer setting: a cell per statement.

    A statement is ``ok`` when it is served and returns what the bare database returns (the
    owner's connection, no guard, same row bound); a refusal, a failure or other rows are an
    ``over-block``, except a timeout of a statement the bare database itself ran longer than
    the time bound: that is the bound doing its job (``n/a``, detail "slower than the bound on
    the bare database"). One executor per engine and layer setting serves the whole corpus,
    and the target must be unchanged after it.
    """
    cells: list[Cell] = []
    for target in targets:
        statements = corpus.get(target.engine, ())
        if progress is not None:
            progress(f"{target.engine}: legitimate corpus on the bare database ({len(statements)})")
        bare = [_bare(target, s.sql, row_limit) for s in statements]  # before any layer opens it
        slow = {
            s.id: seconds for s, (_rows, seconds) in zip(statements, bare, strict=True)
            if seconds > timeout_s
        }  # fmt: skip
        for layer in LAYER_SETTINGS:
            if progress is not None:
                progress(f"{target.engine}: legitimate corpus, {layer} layer ({len(statements)})")
            rows = [r for r, _seconds in bare]
            layer_cells = _corpus_cells(statements, rows, target, layer, timeout_s, row_limit)
            cells += [_slow(c, slow.get(c.attack), timeout_s) for c in layer_cells]
    return SuiteReport(tuple(cells))


def _slow(cell: Cell, bare_seconds: float | None, timeout_s: float) -> Cell:
    if bare_seconds is None or cell.how != "timeout":
        return cell
    detail = (
        f"slower than the bound on the bare database ({bare_seconds:.1f} s > {timeout_s:g} s): "
        "the time bound, not an access layer"
    )
    return replace(cell, verdict=NOT_APPLICABLE, detail=detail)


def _bare(
    target: EngineTarget, sql: str, row_limit: int
) -> tuple[list[tuple[Any, ...]] | str, float]:
    """The bare database's rows (one more than the bound), or its own failure as text; and
    how long it took."""
    started = time.perf_counter()
    try:
        rows: list[tuple[Any, ...]] | str = target.bare_rows(sql, row_limit + 1)
    except Exception as error:  # the bare database's own failure: the statement is not legitimate
        rows = f"the bare database fails it too: {error}"
    return rows, time.perf_counter() - started


def _corpus_cells(
    statements: Sequence[LegitStatement],
    bare: Sequence[list[tuple[Any, ...]] | str],
    target: EngineTarget,
    layer: str,
    timeout_s: float,
    row_limit: int,
) -> list[Cell]:
    guard = Guard(
        allowed_schemas=target.allowed_schemas,
        dialect=target.dialect,
        layers=LAYER_SETTINGS[layer],
        timeout_s=timeout_s,
        row_limit=row_limit,
        allowed_tables=target.allowed_tables,
    )
    before = target.fingerprint()
    location = target.unguarded if layer == FILTER else target.guarded
    cells = []
    with open_executor(location, guard) as executor:
        for statement, rows, outcome in zip(
            statements, bare, executor.run_all(s.sql for s in statements), strict=True
        ):
            verdict, detail = _served_as_bare(outcome, rows, row_limit)
            cells.append(
                Cell(statement.id, "legitimate", target.engine, layer, verdict,
                     describe(outcome), detail, outcome.seconds)
            )  # fmt: skip
    if target.fingerprint() != before:
        cells.append(Cell("corpus-changed-the-database", "legitimate", target.engine, layer,
                          OVER_BLOCK, "changed", "the target changed while the corpus ran"))  # fmt: skip
        target.reset()
    return cells


def _served_as_bare(
    outcome: QueryOutcome, bare: list[tuple[Any, ...]] | str, row_limit: int
) -> tuple[str, str]:
    if outcome.refused or outcome.error is not None:
        return OVER_BLOCK, outcome.reason or outcome.error or ""
    if isinstance(bare, str):
        return OVER_BLOCK, bare
    served = outcome.rows
    if len(bare) > row_limit:  # both sides were cut: compare how much came back
        same = len(served) == row_limit
    else:
        same = sorted(map(_comparable, served)) == sorted(map(_comparable, bare))
    return (OK, "") if same else (OVER_BLOCK, _difference(served, bare))


def _comparable(row: tuple[Any, ...]) -> str:
    """A row as text: floats to 12 significant digits (a parallel sum's last bits vary), and
    aware timestamps as UTC instants (two drivers name the same zone with different classes)."""
    return repr(tuple(_value(v) for v in row))


def _value(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).isoformat()
    return value


def _difference(served: Sequence[tuple[Any, ...]], bare: Sequence[tuple[Any, ...]]) -> str:
    only_served = sorted(set(map(_comparable, served)) - set(map(_comparable, bare)))
    only_bare = sorted(set(map(_comparable, bare)) - set(map(_comparable, served)))
    first = (
        f"; served {only_served[0]} , bare {only_bare[0] if only_bare else '-'}"
        if only_served
        else ""
    )
    return f"returned {len(served)} rows, bare {len(bare)}{first}"
