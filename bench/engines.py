"""The demo gold cases scored on MariaDB next to DuckDB, for the same SUT answers.

    .venv/bin/python bench/engines.py [--mysql mysql://admin:pw@127.0.0.1:3306/]

1. The built-in agent's baseline run on DuckDB (``configs/baseline.yaml``; evaluated first when
   the store does not hold it) gives the SUT's answers.
2. The demo warehouse is loaded into MariaDB (``t2s demo load-mysql``: one database per demo
   schema, a SELECT-only account) and the case folder is written for MySQL, every gold query
   transpiled from DuckDB by sqlglot.
3. The answers are replayed twice: as recorded on the DuckDB cases, and transpiled the same way
   on the MySQL cases. Both runs go through the guarded executors of their engines.
4. Every headline mean of both runs is printed side by side with its n, then the items whose
   strict EX differs between the engines, each with its gold and candidate result there.

Without ``--mysql`` (or ``$T2S_MYSQL_URL``) a private MariaDB server is started in a temporary
folder (``mariadb-install-db`` + ``mariadbd``; Debian's ``mariadb-server`` package).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from t2s_pipeline.cases import load_cases  # noqa: E402
from t2s_pipeline.demo.mysql import load_mysql, transpile_sql, write_mysql_cases  # noqa: E402
from t2s_pipeline.run.compare import compare  # noqa: E402
from t2s_pipeline.run.runner import run_config_plainly  # noqa: E402
from t2s_pipeline.run.summary import summarise_run  # noqa: E402
from t2s_pipeline.store import ResultsStore  # noqa: E402
from t2s_pipeline_tests.mariadb import start_server  # noqa: E402

PASSWORD_VARIABLE = "T2S_MYSQL_PASSWORD"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mysql", default=os.environ.get("T2S_MYSQL_URL"), help="admin URL")
    parser.add_argument("--config", type=Path, default=ROOT / "configs/baseline.yaml")
    args = parser.parse_args()
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory(prefix="t2s-engines-") as scratch:
        work = Path(scratch)
        with _server(args.mysql, work) as admin_url:
            return _compare(admin_url, args.config, work)


@contextlib.contextmanager
def _server(url: str | None, work: Path) -> Iterator[str]:
    if url:
        yield url
        return
    print("starting a private MariaDB server ...", flush=True)
    os.environ.pop("T2S_MYSQL_URL", None)
    (work / "mariadb").mkdir()
    with start_server(work / "mariadb") as started:
        yield started


def _compare(admin_url: str, config: Path, work: Path) -> int:
    quiet = lambda _message: None  # noqa: E731
    started = time.perf_counter()
    baseline = run_config_plainly(config, ROOT / ".t2s/results", ROOT / ".t2s/runs", say=quiet)
    print(f"SUT answers: run {baseline.spec.run_id} (DuckDB, {config.name})", flush=True)
    answers = _answers(ResultsStore(ROOT / ".t2s/results"), baseline.spec.run_id)
    source = Path(yaml.safe_load(config.read_text())["cases"])
    warehouse = Path(load_cases(source).domain.database_for())

    loaded = time.perf_counter()
    load_mysql(warehouse, admin_url, password="t2s_reader")
    print(f"loaded {warehouse.name} into MariaDB in {time.perf_counter() - loaded:.1f} s")
    database = admin_url.split("@", 1)[1].split("/", 1)[0]
    mysql_cases = work / "erp-mysql"
    n = write_mysql_cases(
        source, mysql_cases, f"mysql://t2s_reader:${{{PASSWORD_VARIABLE}}}@{database}/sales"
    )
    os.environ[PASSWORD_VARIABLE] = "t2s_reader"
    print(f"wrote {n} cases for MySQL (gold transpiled by sqlglot)")

    runs = {}
    results = work / "results"
    for engine, cases, transpile in (("duckdb", source, False), ("mysql", mysql_cases, True)):
        replay = work / f"{engine}.jsonl"
        with replay.open("w") as out:
            for line in answers:
                sql = line["sql"]
                if transpile and sql:
                    sql = _transpiled(sql)
                out.write(json.dumps({**line, "sql": sql}) + "\n")
        run_config = work / f"{engine}.yaml"
        run_config.write_text(
            yaml.safe_dump(
                {
                    "name": f"replay-{engine}",
                    "cases": str(cases),
                    "sut": {"kind": "replay", "file": str(replay), "isolate": True},
                    "phrasings": "all",
                    "labels": {"engine": engine, "answers": baseline.spec.run_id},
                    "scorer": {"ordered_compare": "auto"},
                }
            )
        )
        timer = time.perf_counter()
        done = run_config_plainly(run_config, results, work / "runs", say=quiet)
        runs[engine] = done.spec.run_id
        print(f"scored on {engine}: run {done.spec.run_id} in {time.perf_counter() - timer:.1f} s")
    store = ResultsStore(results)
    _print_families(store, runs)
    _print_differences(store, runs)
    _print_component_differences(store, runs)
    _print_output_differences(store, runs)
    print("\nt2s compare (duckdb -> mysql):")
    print(compare(store, runs["duckdb"], runs["mysql"]).to_text(top=5))
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


def _transpiled(sql: str) -> str:
    try:
        return transpile_sql(sql, "duckdb")
    except Exception:  # an answer sqlglot cannot read is replayed as written
        return sql


def _answers(store: ResultsStore, run_id: str) -> list[dict[str, object]]:
    responses = store.read("sut_responses", run_id)
    items = store.read("items", run_id).set_index("item_id")
    lines = []
    for row in responses.itertuples():
        response = json.loads(row.response_json) if row.response_json else {}
        trace = (response or {}).get("retrieval") or {}
        lines.append(
            {
                "case_id": row.case_id,
                "phrasing": int(items.loc[row.item_id, "phrasing"]),
                "sql": row.sql if isinstance(row.sql, str) else None,
                "refused": bool(row.refused),
                "tables": [t["name"] for t in trace.get("tables", [])] or None,
            }
        )
    return lines


def _print_families(store: ResultsStore, runs: dict[str, str]) -> None:
    summaries = {engine: summarise_run(store, run_id) for engine, run_id in runs.items()}
    print(f"\n{'family / metric':<42}{'duckdb':>18}{'mysql':>18}")
    duck = summaries["duckdb"].families
    for family, metrics in duck.items():
        for metric, mean in metrics.items():
            other = summaries["mysql"].families.get(family, {}).get(metric)
            print(f"{family + ' / ' + metric:<42}{_shown(mean):>18}{_shown(other):>18}")


def _shown(mean: object) -> str:
    value = getattr(mean, "mean", None)
    n = getattr(mean, "n", 0)
    return "undefined" if value is None else f"{value:.3f} (n={n})"


def _print_differences(store: ResultsStore, runs: dict[str, str]) -> None:
    exact = {
        engine: store.read("exact_matches", run_id).set_index("item_id")["exact_match"]
        for engine, run_id in runs.items()
    }
    differ = sorted(
        item
        for item in exact["duckdb"].index
        if bool(exact["duckdb"].get(item)) != bool(exact["mysql"].get(item))
    )
    print(f"\nitems whose strict EX differs between the engines: {len(differ)}")
    for item in differ:
        print(f"  {item}: duckdb {exact['duckdb'].get(item)}, mysql {exact['mysql'].get(item)}")
        for engine, run_id in runs.items():
            _print_item(store, run_id, engine, item)


def _print_component_differences(store: ResultsStore, runs: dict[str, str], top: int = 40) -> None:
    """Items whose component sets differ between the engines, with the sets on each."""
    frames = {
        engine: store.read("component_scores", run_id).set_index("item_id")
        for engine, run_id in runs.items()
    }
    duck, mysql = frames["duckdb"], frames["mysql"]
    differ = []
    for item in duck.index:
        sides = [
            json.loads(f.loc[item, name]) if isinstance(f.loc[item, name], str) else None
            for f in (duck, mysql)
            for name in ("gold_sets_json", "candidate_sets_json")
        ]
        for family in ("filters", "aggregations", "order_by"):
            sets = [None if s is None else s.get(family) for s in sides]
            score_d = duck.loc[item, f"{family}_recall"], duck.loc[item, f"{family}_precision"]
            score_m = mysql.loc[item, f"{family}_recall"], mysql.loc[item, f"{family}_precision"]
            if [str(x) for x in score_d] != [str(x) for x in score_m]:
                differ.append((item, family, sets))
    print(f"\nitem component scores that differ between the engines: {len(differ)}")
    for item, family, sets in differ[:top]:
        print(f"  {item} {family}:")
        for label, value in zip(
            ("duckdb gold", "duckdb cand", "mysql gold", "mysql cand"), sets, strict=True
        ):
            print(f"    {label}: {value}")


def _print_output_differences(store: ResultsStore, runs: dict[str, str]) -> None:
    """Items whose column or cell figures differ between the engines, with both results."""
    metrics = ["columns_precision", "columns_recall", "cells_precision", "cells_recall"]
    frames = {
        engine: store.read("output_scores", run_id).set_index("item_id")[metrics]
        for engine, run_id in runs.items()
    }
    duck, mysql = frames["duckdb"], frames["mysql"]
    differ = [
        item
        for item in duck.index
        if [f"{v:.6f}" for v in duck.loc[item]] != [f"{v:.6f}" for v in mysql.loc[item]]
    ]
    print(f"\nitem output figures that differ between the engines: {len(differ)}")
    for item in differ:
        print(f"  {item}: duckdb {duck.loc[item].round(3).tolist()}, "
              f"mysql {mysql.loc[item].round(3).tolist()}")  # fmt: skip
        for engine, run_id in runs.items():
            _print_item(store, run_id, engine, item)


def _print_item(store: ResultsStore, run_id: str, engine: str, item: str) -> None:
    """The item's candidate SQL and both results' first rows on one engine."""
    responses = store.read("sut_responses", run_id).set_index("item_id")
    case_id = responses.loc[item, "case_id"]
    gold = store.read("gold_results", run_id).set_index("key").loc[case_id]
    candidate = store.read("candidate_results", run_id).set_index("key").loc[item]
    print(f"    {engine} candidate: {' '.join(str(responses.loc[item, 'sql']).split())}")
    for side, row in (("gold", gold), ("candidate", candidate)):
        preview = json.loads(row["preview_json"]) if isinstance(row["preview_json"], str) else None
        print(f"    {engine} {side} ({row['status']}, {row['n_rows']} rows): {str(preview)[:300]}")


if __name__ == "__main__":
    sys.exit(main())
