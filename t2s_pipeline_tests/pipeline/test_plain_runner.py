"""A partition evaluated without Dagster (``python -m t2s_pipeline.run``) has the same tables as
one materialised by the ``eval_run`` assets: both call the same stage functions."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.execution.records import from_frame
from t2s_pipeline.run.lock import LOCK_NAME, RunInProgress, run_lock
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.tables import TABLES

from .conftest import Project

# Wall-clock figures differ between two evaluations of the same partition; nothing else may.
VOLATILE = {"latency_s", "seconds", "started_at", "ended_at", "code_version"}


def _raw_orders(store: ResultsStore, run_id: str) -> dict[str, str]:
    results = from_frame(store.read("candidate_results", run_id))
    return {key: repr(result.rows) for key, result in results.items()}


def _table(store: ResultsStore, name: str, run_id: str, unstable: set[str]) -> pd.DataFrame:
    data = store.read(name, run_id)
    if "payload" in data.columns:
        # An unordered query may return its rows in another order on each execution (DuckDB
        # scans in parallel): compare each result as a multiset of rows.
        results = from_frame(data)
        data = data.assign(
            payload=[repr(sorted(map(repr, results[k].rows))) for k in data["key"]],
            preview_json=[
                json.dumps(sorted(map(json.dumps, json.loads(p)))) for p in data["preview_json"]
            ],
        )
    for column in ("item_id", "key"):
        if column in data.columns:
            data = data[~data[column].isin(unstable)]
    data = data.drop(columns=[c for c in data.columns if c in VOLATILE])
    if name == "runs" and unstable:
        data = data.drop(columns="summary_json")  # its means include the unstable items
    key = [k for k in TABLES[name].key if k in data.columns]
    return data.sort_values(key).reset_index(drop=True)


def test_plain_runner_writes_the_same_tables_as_dagster(
    project: Project, instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    """Every run table equal, row for row, column for column. The only exception is an item
    whose candidate query has no order and came back from the database in another row order
    the second time (the same rows): its order-sensitive figures may differ, so it is left
    out, and such items must stay a small minority."""
    config = project.config("both-ways")
    dagster = run_config(config, project.settings, instance=instance, checks=FAST_CHECKS)
    assert dagster.success
    plain_results = tmp_path / "plain-results"
    plain = run_config_plainly(
        config, plain_results, tmp_path / "plain-registry", say=lambda _: None
    )
    assert plain.spec.run_id == dagster.run_id
    assert set(plain.seconds) >= {"items", "ask", "gold", "output", "summary"}
    a, b = project.settings.store(), ResultsStore(plain_results)
    left_orders, right_orders = _raw_orders(a, dagster.run_id), _raw_orders(b, dagster.run_id)
    unstable = {k for k, rows in left_orders.items() if right_orders.get(k) != rows}
    assert len(unstable) <= len(left_orders) // 10, unstable
    compared, differing = [], []
    for name, declared in TABLES.items():
        if declared.scope != "run":
            continue
        left = _table(a, name, dagster.run_id, unstable)
        right = _table(b, name, dagster.run_id, unstable)
        try:
            pd.testing.assert_frame_equal(left, right, check_dtype=True, obj=name)
        except AssertionError as error:
            print(f"{name}: {str(error)[:3000]}")
            differing.append(name)
        compared.append(name)
    assert differing == []
    assert len(compared) == 14 and len(_table(a, "output_scores", dagster.run_id, set())) > 0


def test_the_same_configuration_twice_at_once_runs_once(project: Project, tmp_path: Path) -> None:
    """While a run id is being evaluated, a second launch says who holds it and runs nothing;
    the first finishes whole."""
    config = project.config("twice")
    store = ResultsStore(project.settings.results_path)
    from t2s_pipeline.config import load_config
    from t2s_pipeline.runs import spec_for

    run_id = spec_for(load_config(config), config).run_id
    with run_lock(store.run_dir(run_id), run_id):
        with pytest.raises(
            RunInProgress, match=rf"run {run_id} is already running \(process \d+ on"
        ):
            run_config_plainly(config, Path(project.settings.results_path), tmp_path / "reg")
        with pytest.raises(RunInProgress, match="already running"):
            run_config(config, T2SSettings(**project.settings.model_dump()))
    assert not (store.run_dir(run_id) / LOCK_NAME).exists()
    done = run_config_plainly(
        config, Path(project.settings.results_path), tmp_path / "reg", say=lambda _: None
    )
    assert done.summary.n_items == project.n_cases


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    """A holder that no longer exists on this host does not block the run forever."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    folder = tmp_path / "runs" / "r-1"
    folder.mkdir(parents=True)
    import socket

    (folder / LOCK_NAME).write_text(
        json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout), "since": "earlier"})
    )
    entered = threading.Event()
    with run_lock(folder, "r-1"):
        entered.set()
    assert entered.is_set() and not (folder / LOCK_NAME).exists()


def test_the_module_runs_from_the_command_line(project: Project, tmp_path: Path) -> None:
    config = project.config("from-module")
    done = subprocess.run(
        [sys.executable, "-m", "t2s_pipeline.run", "--config", str(config),
         "--results", str(tmp_path / "r"), "--registry", str(tmp_path / "reg")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[13/13] summary" in done.stdout and "EX" in done.stdout
    assert ResultsStore(tmp_path / "r").run_ids() != []
