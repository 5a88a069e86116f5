"""Overhead of the guarded path against a bare connection, on representative analytic queries.

The queries are the gold SQL of ``cases/erp/*.yaml`` (falling back to a built-in set when no
case files are there), run on the demo warehouse. Each query runs ``--repeat`` times on both
paths, interleaved after one warm-up; the table shows the median time of each path and their
ratio. The guarded path is the evaluation path: both layers (statement filter, serving snapshot
opened read-only and locked down, the bound-plan check, a fresh cursor and an interrupt timer
per statement), the worker process and the 100,000-row fetch cap. Target: median ratio <= 1.2.
The worker's round trip (``SELECT 1``) and the plan check are also timed on their own.

Three guarded figures per query:

- *warm*: one statement at a time, the filter's verdict memoised (a statement seen before);
- *cold*: one statement at a time, the filter parsing every time (a statement never seen);
- *batch*: the whole set through ``run_all`` as the pipeline runs it, verdicts never memoised,
  the next statement readied (filter verdict, DuckDB's own reading, a fresh cursor) on a helper
  thread while the database runs the current one. The time of a query is the gap between two
  outcomes; the bare batch is the same loop without guard. Each round's own median ratio is
  printed too (range and quartiles), to show how far one round's figure moves on a busy machine.

    .venv/bin/python bench/guard.py [--db .t2s/warehouse.duckdb] [--cases cases/erp] [--repeat 15]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import yaml

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS
from t2s_pipeline.execution import Guard, GuardedExecutor, open_executor
from t2s_pipeline.execution.duckdb_plan import check_plan
from t2s_pipeline.execution.duckdb_snapshot import serving_snapshot
from t2s_pipeline.execution.statement_filter import clear_verdict_cache

FALLBACK = (
    "SELECT pm_cd, sum(amount) AS total FROM finance.payments GROUP BY pm_cd ORDER BY pm_cd",
    "SELECT date_trunc('month', invoice_date) AS m, sum(net_amount) FROM finance.invoices "
    "GROUP BY 1 ORDER BY 1",
    "SELECT c.segment_cd, count(DISTINCT o.order_id) FROM sales.orders AS o "
    "JOIN sales.customers AS c USING (customer_id) GROUP BY 1",
    "SELECT i.category, sum(l.quantity * l.unit_price) FROM sales.order_lines AS l "
    "JOIN sales.items AS i USING (item_id) GROUP BY 1 ORDER BY 2 DESC",
)


def gold_queries(folder: Path) -> list[tuple[str, str]]:
    """``(case id, gold SQL)`` of every case file, or the fallback set when there are none."""
    queries = []
    for path in sorted(folder.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        if isinstance(document, dict) and isinstance(document.get("gold_sql"), str):
            queries.append((str(document.get("id", path.stem)), document["gold_sql"]))
    return queries or [(f"builtin-{i}", sql) for i, sql in enumerate(FALLBACK)]


def median_seconds(run: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(
    bare: duckdb.DuckDBPyConnection, guarded: GuardedExecutor, sql: str, repeat: int
) -> tuple[float, float, float, bool]:
    """Median seconds bare, guarded with the filter's verdict memoised (warm) and guarded with
    the filter parsing every time (cold), and whether the guarded path served the query."""
    bare.execute(sql).fetchall()
    served = guarded.run(sql)

    def cold() -> None:
        clear_verdict_cache()
        guarded.run(sql)

    bare_s = median_seconds(lambda: bare.execute(sql).fetchall(), repeat)
    warm_s = median_seconds(lambda: guarded.run(sql), repeat)
    cold_s = median_seconds(cold, repeat)
    return bare_s, warm_s, cold_s, not served.refused and served.error is None


def batch_seconds(
    bare: duckdb.DuckDBPyConnection, guarded: GuardedExecutor, queries: list[str], repeat: int
) -> tuple[list[float], list[float], list[float]]:
    """Median per-query seconds in a bare loop and in a guarded ``run_all`` batch (cold), and
    each round's own median ratio (how much the figure moves from one round to the next)."""
    bare_runs: list[list[float]] = [[] for _ in queries]
    guarded_runs: list[list[float]] = [[] for _ in queries]
    for _ in range(repeat):
        for position, sql in enumerate(queries):
            started = time.perf_counter()
            bare.execute(sql).fetchall()
            bare_runs[position].append(time.perf_counter() - started)
        clear_verdict_cache()
        last = time.perf_counter()
        for position, _outcome in enumerate(guarded.run_all(queries)):
            now = time.perf_counter()
            guarded_runs[position].append(now - last)
            last = now
    rounds = [
        statistics.median(g[r] / b[r] for g, b in zip(guarded_runs, bare_runs, strict=True))
        for r in range(repeat)
    ]
    return (
        [statistics.median(times) for times in bare_runs],
        [statistics.median(times) for times in guarded_runs],
        rounds,
    )


def plan_check_seconds(db: Path, queries: list[str], repeat: int) -> list[float]:
    """Median seconds of the database layer's plan check (parse tree and bound plan) per query,
    on the serving snapshot as the guarded path opens it."""
    snapshot = serving_snapshot(db, ALLOWED_SCHEMAS)
    con = duckdb.connect(str(snapshot), read_only=True)
    try:
        return [median_seconds(lambda sql=sql: check_plan(con, sql), repeat) for sql in queries]
    finally:
        con.close()


def main() -> None:
    """Print the per-query table and the summary ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=Path(".t2s/warehouse.duckdb"))
    parser.add_argument("--cases", type=Path, default=Path("cases/erp"))
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    logging.getLogger("t2s.guard").setLevel(logging.ERROR)
    queries = gold_queries(args.cases)
    bare = duckdb.connect(str(args.db), read_only=True)
    rows = []
    with open_executor(str(args.db), Guard(allowed_schemas=ALLOWED_SCHEMAS)) as guarded:
        for case_id, sql in queries:
            rows.append((case_id, *measure(bare, guarded, sql, args.repeat)))
        batch_bare, batch_guarded, batch_rounds = batch_seconds(
            bare, guarded, [sql for _, sql in queries], args.repeat
        )
        round_trip = median_seconds(lambda: guarded.run("SELECT 1"), args.repeat * 4)
    bare_trip = median_seconds(lambda: bare.execute("SELECT 1").fetchall(), args.repeat * 4)
    plan_s = plan_check_seconds(args.db, [sql for _, sql in queries], args.repeat)
    bare.close()
    print(
        f"{'query':40} {'bare ms':>8} {'warm ms':>8} {'cold ms':>8} {'warm x':>7} {'cold x':>7}"
        f" {'batch x':>8}"
    )
    for (case_id, bare_s, warm_s, cold_s, _), b_bare, b_guarded in zip(
        rows, batch_bare, batch_guarded, strict=True
    ):
        print(
            f"{case_id[:40]:40} {bare_s * 1e3:8.2f} {warm_s * 1e3:8.2f} {cold_s * 1e3:8.2f} "
            f"{warm_s / bare_s:7.2f} {cold_s / bare_s:7.2f} {b_guarded / b_bare:8.2f}"
        )
    print(
        f"\n{len(rows)} queries x {args.repeat} runs, served {sum(r[4] for r in rows)}/{len(rows)}"
    )
    figures = [
        ("warm (verdict memoised)", [r[2] for r in rows], [r[1] for r in rows]),
        ("cold (filter parses)", [r[3] for r in rows], [r[1] for r in rows]),
        ("batch (cold, run_all)", batch_guarded, batch_bare),
    ]
    for label, guarded_s, bare_s in figures:
        ratios = [g / b for g, b in zip(guarded_s, bare_s, strict=True)]
        print(
            f"  {label:24} median ratio {statistics.median(ratios):.2f} (target <= 1.2), "
            f"ratio of total time {sum(guarded_s) / sum(bare_s):.2f}"
        )
    print(
        f"  worker round trip (SELECT 1, verdict memoised): {round_trip * 1e3:.2f} ms guarded, "
        f"{bare_trip * 1e3:.2f} ms bare"
    )
    print(
        f"  DuckDB database layer's bound-plan check alone: median {statistics.median(plan_s) * 1e3:.2f} ms "
        f"per query (max {max(plan_s) * 1e3:.2f} ms)"
    )
    low, middle, high = (
        statistics.quantiles(batch_rounds, n=4) if len(batch_rounds) > 1 else batch_rounds * 3
    )
    print(
        f"  batch, one round at a time: median ratio {min(batch_rounds):.2f} to "
        f"{max(batch_rounds):.2f} (quartiles {low:.2f} / {middle:.2f} / {high:.2f})"
    )


if __name__ == "__main__":
    main()
