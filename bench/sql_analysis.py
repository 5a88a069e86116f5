"""Benchmark: SQL analysis time per query as a ratio to sqlglot's own parse time.

Target: ``analyse_query`` (parse + qualify + origins + component sets + canonical form) costs at
most 5x a bare ``sqlglot.parse_one`` of the same text. Run::

    .venv/bin/python bench/sql_analysis.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import sqlglot
import yaml

from t2s_pipeline.sql.analysis import analyse_query
from t2s_pipeline.sql.schema import Schema

ROOT = Path(__file__).resolve().parent.parent
DIALECT = "duckdb"

REALISTIC = (
    """SELECT c.segment_cd, ROUND(AVG(i.net_amount), 2) AS avg_net
       FROM finance.invoices i JOIN sales.orders o ON o.order_id = i.order_id
       JOIN sales.customers c ON c.customer_id = o.customer_id
       GROUP BY c.segment_cd ORDER BY 1""",
    """WITH monthly AS (
         SELECT DATE_TRUNC('month', o.order_date) AS month, SUM(l.qty * l.unit_price) AS revenue
         FROM sales.orders o JOIN sales.order_lines l USING (order_id)
         WHERE o.status_cd = 'delivered' GROUP BY 1)
       SELECT month, revenue, revenue - LAG(revenue) OVER (ORDER BY month) AS delta
       FROM monthly ORDER BY month DESC LIMIT 12""",
    """SELECT s.site_name, COUNT(DISTINCT o.customer_id) AS buyers
       FROM sales.sites s, sales.orders o
       WHERE o.site_id = s.site_id AND o.order_date >= DATE '2025-01-01'
       GROUP BY s.site_name HAVING COUNT(*) > 10 ORDER BY buyers DESC""",
    """SELECT * FROM (SELECT customer_id, SUM(amount) AS paid FROM finance.payments p
       JOIN finance.invoices i ON i.invoice_id = p.invoice_id GROUP BY customer_id) t
       WHERE t.paid > (SELECT AVG(amount) FROM finance.payments)""",
)


@dataclass(frozen=True)
class Timing:
    label: str
    parse_ms: float
    analysis_ms: float

    @property
    def ratio(self) -> float:
        return self.analysis_ms / self.parse_ms


def demo_schema() -> Schema:
    """The demo warehouse schema from its DDL module (no database needed)."""
    from t2s_pipeline.demo.schema import TABLES

    tables: dict[str, dict[str, dict[str, str]]] = {}
    for table in TABLES:
        columns = {column.name: column.type for column in table.columns}
        tables.setdefault(table.schema, {})[table.name] = columns
    return Schema(tables, DIALECT)


def gold_queries() -> list[str]:
    """``gold_sql`` of every demo case, when the case files exist."""
    paths = sorted((ROOT / "cases" / "erp").glob("*.yaml"))
    loaded = (yaml.safe_load(path.read_text()) for path in paths if path.name != "domain.yaml")
    return [case["gold_sql"] for case in loaded if isinstance(case, dict) and "gold_sql" in case]


def wide_schema(tables: int) -> Schema:
    columns = {"id": "INTEGER", "parent_id": "INTEGER", "val": "DOUBLE", "cat": "VARCHAR"}
    return Schema({"main": {f"t{i}": dict(columns) for i in range(tables)}}, DIALECT)


def many_ctes(count: int) -> str:
    """A chain of ``count`` CTEs, each joining the previous one to a base table."""
    ctes = ["c0 AS (SELECT t0.id, t0.cat, SUM(t0.val) AS total FROM t0 GROUP BY t0.id, t0.cat)"]
    for i in range(1, count):
        ctes.append(
            f"c{i} AS (SELECT p.id, t.cat, p.total + SUM(t.val) AS total FROM c{i - 1} p "
            f"JOIN t{i} t ON t.parent_id = p.id WHERE t.val > {i} GROUP BY p.id, t.cat, p.total)"
        )
    last = count - 1
    return f"WITH {', '.join(ctes)} SELECT cat, MAX(total) FROM c{last} GROUP BY cat ORDER BY 2"


def many_joins(count: int) -> str:
    """One SELECT joining ``count + 1`` tables, with filters, grouping and ordering."""
    joins = " ".join(f"JOIN t{i} a{i} ON a{i}.parent_id = a{i - 1}.id" for i in range(1, count + 1))
    filters = " AND ".join(f"a{i}.val > {i}" for i in range(0, count + 1, 3))
    return (
        f"SELECT a0.cat, a{count}.cat AS last_cat, COUNT(*) AS n, SUM(a{count}.val) AS s "
        f"FROM t0 a0 {joins} WHERE {filters} GROUP BY a0.cat, a{count}.cat ORDER BY n DESC LIMIT 50"
    )


def best_ms(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` runs, in milliseconds (after one warm-up run)."""
    action()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def measure(label: str, sql: str, schema: Schema, repeat: int) -> Timing:
    parse_ms = best_ms(lambda: sqlglot.parse_one(sql, read=DIALECT), repeat)
    analysis_ms = best_ms(lambda: analyse_query(sql, DIALECT, schema), repeat)
    return Timing(label, parse_ms, analysis_ms)


def summarise(label: str, timings: Sequence[Timing]) -> str:
    ratios = [t.ratio for t in timings]
    return (
        f"| {label:<28} | {len(timings):>3} | {statistics.mean(t.parse_ms for t in timings):>9.2f} "
        f"| {statistics.mean(t.analysis_ms for t in timings):>12.2f} "
        f"| {statistics.median(ratios):>12.2f} | {max(ratios):>9.2f} |"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    repeat = parser.parse_args(argv).repeat

    demo = demo_schema()
    gold = gold_queries()
    wide = wide_schema(31)
    groups = {
        f"demo gold cases ({'cases/erp' if gold else 'none found'})": [
            measure("gold", sql, demo, repeat) for sql in gold
        ],
        "realistic hand-written": [measure("real", sql, demo, repeat) for sql in REALISTIC],
        "generated: 20 CTEs": [measure("ctes", many_ctes(20), wide, repeat)],
        "generated: 30 joins": [measure("joins", many_joins(30), wide, repeat)],
    }
    header = ("query set", "n", "parse ms", "analysis ms", "median ratio", "max ratio")
    print("| {:<28} | {:>3} | {:>9} | {:>12} | {:>12} | {:>9} |".format(*header))
    print("|" + "|".join("-" * (w + 2) for w in (28, 3, 9, 12, 12, 9)) + "|")
    for label, timings in groups.items():
        if timings:
            print(summarise(label, timings))


if __name__ == "__main__":
    main()
