"""Overhead of the guarded path against a bare connection, on representative analytic queries.

The queries are the gold SQL of ``cases/erp/*.yaml`` (falling back to a built-in set when no
case files are there), run on the demo warehouse. Each query runs ``--repeat`` times on both
paths, interleaved after one warm-up; the table shows the median time of each path and their
ratio. The guarded path is the evaluation path: both layers (statement filter, serving snapshot
opened read-only and locked down, a fresh cursor and an interrupt timer per statement) and the
100,000-row fetch cap. Target: median ratio <= 1.2.

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
    bare.close()
    print(f"{'query':40} {'bare ms':>8} {'warm ms':>8} {'cold ms':>8} {'warm x':>7} {'cold x':>7}")
    for case_id, bare_s, warm_s, cold_s, _ in rows:
        print(
            f"{case_id[:40]:40} {bare_s * 1e3:8.2f} {warm_s * 1e3:8.2f} {cold_s * 1e3:8.2f} "
            f"{warm_s / bare_s:7.2f} {cold_s / bare_s:7.2f}"
        )
    print(
        f"\n{len(rows)} queries x {args.repeat} runs, served {sum(r[4] for r in rows)}/{len(rows)}"
    )
    for label, index in (("warm (verdict memoised)", 2), ("cold (filter parses)", 3)):
        ratios = [r[index] / r[1] for r in rows]
        total = sum(r[index] for r in rows) / sum(r[1] for r in rows)
        print(
            f"  {label:24} median ratio {statistics.median(ratios):.2f} (target <= 1.2), "
            f"ratio of total time {total:.2f}"
        )


if __name__ == "__main__":
    main()
