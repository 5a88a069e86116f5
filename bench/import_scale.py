"""Benchmark import at scale: N SQLite databases and M questions in Spider's format, imported
with `t2s import spider`, predictions (about two in three right) converted to a replay file,
and the run scored through the pipeline. Prints items per second for import and scoring, and
the scoring run against its floor (every gold and predicted query executed once through a bare
sqlite3 connection plus a plain multiset comparison, timed here) as `end-to-end / floor: X`,
with the harness's own cost per item.

    .venv/bin/python bench/import_scale.py --databases 20 --items 1034
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from pipeline import machine_cpu_seconds, step_seconds  # bench/pipeline.py: on the path

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.benchmarks.imports import import_spider
from t2s_pipeline.benchmarks.predictions import convert_predictions, write_replay_config
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.spread import cores
from t2s_pipeline.suites import HOSTILE_SUITE

REPO = Path(__file__).resolve().parents[1]
CITIES = ("Lyon", "Porto", "Leeds", "Ghent", "Turin", "Bergen")
CATEGORIES = ("tools", "garden", "kitchen", "toys")
TABLES = {
    "customer": ("customer_id", "name", "city", "age"),
    "product": ("product_id", "name", "category", "price"),
    "orders": ("order_id", "customer_id", "product_id", "quantity", "order_year"),
}


@dataclass(frozen=True)
class Question:
    db_id: str
    question: str
    gold: str
    predicted: str
    right: bool


def build_database(path: Path, rng: random.Random) -> None:
    """One shop database: 60 customers, 30 products, 400 orders."""
    path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(
            "CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INT);"
            "CREATE TABLE product (product_id INTEGER PRIMARY KEY, name TEXT, category TEXT,"
            " price REAL);"
            "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, customer_id INT, product_id INT,"
            " quantity INT, order_year INT);"
        )
        conn.executemany(
            "INSERT INTO customer VALUES (?, ?, ?, ?)",
            [(i, f"c{i}", rng.choice(CITIES), rng.randint(18, 80)) for i in range(60)],
        )
        conn.executemany(
            "INSERT INTO product VALUES (?, ?, ?, ?)",
            [(i, f"p{i}", rng.choice(CATEGORIES), round(rng.uniform(1, 90), 2)) for i in range(30)],
        )
        conn.executemany(
            "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
            [
                (
                    i,
                    rng.randrange(60),
                    rng.randrange(30),
                    rng.randint(1, 9),
                    rng.randint(2019, 2023),
                )
                for i in range(400)
            ],
        )
        conn.commit()


def _templates(rng: random.Random) -> list[Callable[[], tuple[str, str, str]]]:
    """(question, gold, wrong prediction) makers; each wrong one can never match its gold
    (another width, a complementary set, fewer rows, another aggregate of several prices)."""
    city, other = rng.sample(CITIES, 2)
    age, year = rng.randint(25, 70), rng.randint(2019, 2023)
    return [
        lambda: (
            f"How many customers live in {city}?",
            f"SELECT count(*) FROM customer WHERE city = '{city}'",
            f"SELECT count(*), '{city}' FROM customer WHERE city = '{city}'",
        ),
        lambda: (
            f"Names and ages of customers older than {age}, oldest first.",
            f"SELECT name, age FROM customer WHERE age > {age} ORDER BY age DESC",
            f"SELECT name FROM customer WHERE age > {age} ORDER BY age DESC",
        ),
        lambda: (
            "Average price per category.",
            "SELECT category, avg(price) FROM product GROUP BY category",
            "SELECT category, max(price) FROM product GROUP BY category",
        ),
        lambda: (
            f"Products never ordered in {year}.",
            "SELECT name FROM product WHERE product_id NOT IN "
            f"(SELECT product_id FROM orders WHERE order_year = {year})",
            "SELECT name FROM product WHERE product_id IN "
            f"(SELECT product_id FROM orders WHERE order_year = {year})",
        ),
        lambda: (
            f"Top five customers by quantity in {year}.",
            "SELECT T1.name, sum(T2.quantity) FROM customer AS T1 JOIN orders AS T2 ON "
            f"T1.customer_id = T2.customer_id WHERE T2.order_year = {year} "
            "GROUP BY T1.customer_id ORDER BY sum(T2.quantity) DESC, T1.customer_id LIMIT 5",
            "SELECT T1.name, sum(T2.quantity) FROM customer AS T1 JOIN orders AS T2 ON "
            f"T1.customer_id = T2.customer_id WHERE T2.order_year = {year} "
            "GROUP BY T1.customer_id ORDER BY sum(T2.quantity) DESC, T1.customer_id LIMIT 4",
        ),
    ]


def make_questions(n_items: int, db_ids: list[str], rng: random.Random) -> list[Question]:
    questions = []
    for index in range(n_items):
        db_id = db_ids[index % len(db_ids)]
        question, gold, wrong = rng.choice(_templates(rng))()
        right = rng.random() < 2 / 3
        questions.append(Question(db_id, question, gold, gold if right else wrong, right))
    return questions


def write_spider_files(root: Path, db_ids: list[str], questions: list[Question]) -> None:
    tables = [
        {
            "db_id": db_id,
            "table_names_original": list(TABLES),
            "column_names_original": [[-1, "*"]]
            + [[t, c] for t, cols in enumerate(TABLES.values()) for c in cols],
        }
        for db_id in db_ids
    ]
    (root / "tables.json").write_text(json.dumps(tables))
    dev = [{"db_id": q.db_id, "question": q.question, "query": q.gold} for q in questions]
    (root / "dev.json").write_text(json.dumps(dev))
    (root / "pred.sql").write_text("".join(q.predicted + "\n" for q in questions))


def floor_seconds(database: Path, questions: list[Question]) -> float:
    """The least any harness must spend on these items: each gold and predicted query executed
    once through a bare sqlite3 connection (no guard, no limits), rows compared as multisets."""
    connections = {
        db_id: sqlite3.connect(f"file:{database / db_id / db_id}.sqlite?mode=ro", uri=True)
        for db_id in {q.db_id for q in questions}
    }
    started = time.perf_counter()
    for question in questions:
        connection = connections[question.db_id]
        expected = connection.execute(question.gold).fetchall()
        try:
            got = connection.execute(question.predicted).fetchall()
        except sqlite3.Error:
            got = None
        _ = got is not None and sorted(map(repr, got)) == sorted(map(repr, expected))
    seconds = time.perf_counter() - started
    for connection in connections.values():
        connection.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--databases", type=int, default=20)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="t2s-bench-import-") as tmp:
        root = Path(tmp)
        db_ids = [f"shop_{i:02d}" for i in range(args.databases)]
        for db_id in db_ids:
            build_database(root / "database" / db_id / f"{db_id}.sqlite", rng)
        questions = make_questions(args.items, db_ids, rng)
        write_spider_files(root, db_ids, questions)
        cases = root / "cases" / "spider-bench"

        started = time.perf_counter()
        report = import_spider(root / "tables.json", root / "dev.json", root / "database", cases)
        converted = convert_predictions("spider", root / "pred.sql", cases, root / "pred.jsonl")
        import_s = time.perf_counter() - started

        config = write_replay_config(
            root / "configs" / "spider-bench.yaml", cases, root / "pred.jsonl", "spider",
            root / "pred.sql",
        )  # fmt: skip
        settings = T2SSettings(
            cases_dir=str(cases),
            configs_dir=str(config.parent),
            registry_dir=str(root / "runs"),
            results_path=str(root / "results"),
            decisions_dir=str(root / "decisions"),
            hostile_dir=str(HOSTILE_SUITE),
        )
        with dg.instance_for_test() as instance:
            cpu_before = machine_cpu_seconds()
            started = time.perf_counter()
            outcome = run_config(config, settings, instance, checks=FAST_CHECKS)
            score_s = time.perf_counter() - started
            cpu_after = machine_cpu_seconds()
            steps: dict[str, float] = {}
            for run in instance.get_runs():
                steps.update(step_seconds(instance, run.run_id))
        assert outcome.success, "the benchmark run failed"
        summary = summarise_run(settings.store(), outcome.run_id)
        floor = floor_seconds(root / "database", questions)
    expected = sum(q.right for q in questions) / len(questions)
    ex = summary.families["exact"]["ex"].mean
    print(f"{args.items} questions on {args.databases} SQLite databases (Spider format)")
    print(f"bands: {report.bands}")
    print(
        f"import + predictions: {import_s:.2f} s ({converted.n_predictions} predictions) -> "
        f"{args.items / import_s:.0f} items/s"
    )
    print(f"scoring (run_config): {score_s:.1f} s -> {args.items / score_s:.1f} items/s")
    print(f"  floor (bare sqlite3, every gold + prediction once, plain compare): {floor:.2f} s")
    print(f"  end-to-end / floor: {score_s / floor:.2f}")
    print(
        f"  harness per item (run time minus floor): {(score_s - floor) / args.items * 1000:.1f} ms"
    )
    if cpu_before is not None and cpu_after is not None:
        cpu = cpu_after - cpu_before
        print(
            f"  CPU: {cpu:.1f} core-seconds ({cpu / score_s:.2f} of {cores()} cores on average); "
            f"spread perfectly over {cores()} cores at least {cpu / cores():.1f} s, "
            f"{(cpu / cores() - floor) / args.items * 1000:.1f} ms an item besides the floor"
        )
    print(f"EX {ex:.3f} (share of right predictions {expected:.3f})")
    for band, mean in summary.ex_by_difficulty.items():
        print(f"  {band:<16} EX {mean.mean:.3f}  n={mean.n}")
    print("slowest steps (s):")
    for key, seconds in sorted(steps.items(), key=lambda kv: -kv[1])[:6]:
        print(f"  {key:<40}{seconds:>7.2f}")
    assert abs(ex - expected) < 1e-9, "EX differs from the share of right predictions"


if __name__ == "__main__":
    main()
