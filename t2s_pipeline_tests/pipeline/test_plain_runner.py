"""A partition evaluated without Dagster (``python -m t2s_pipeline.run``) has the same tables as
one materialised by the ``eval_run`` assets: both call the same stage functions."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import dagster as dg
import pytest

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.run import output
from t2s_pipeline.run.lock import LOCK_NAME, RunInProgress, run_lock
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.run.stages import STAGES
from t2s_pipeline.store import ResultsStore

from .conftest import Project
from .same_tables import differing_tables


def test_plain_runner_writes_the_same_tables_as_dagster(
    project: Project, instance: dg.DagsterInstance, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every run table equal, row for row, column for column (see ``same_tables``). The plain
    run scores outputs spread over two interpreters (as a large run does), the Dagster run in
    one: the same table."""
    # Test suites on: the suite and ex_ts stages are compared too (the suite is built once).
    config = project.config("both-ways", test_suite={"enabled": True, "random_neighbours": 1})
    dagster = run_config(config, project.settings, instance=instance, checks=FAST_CHECKS)
    assert dagster.success
    plain_results = tmp_path / "plain-results"
    monkeypatch.setattr(output, "SPREAD_FROM", 2)
    monkeypatch.setattr(output, "STARTUP_JOBS", 0)
    plain = run_config_plainly(
        config, plain_results, tmp_path / "plain-registry", say=lambda _: None
    )
    assert plain.spec.run_id == dagster.run_id
    assert set(plain.seconds) >= {"items", "ask", "gold", "output", "summary"}
    store = project.settings.store()
    assert differing_tables(store, ResultsStore(plain_results), dagster.run_id) == []


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
    summary = [s.name for s in STAGES].index("summary") + 1
    assert f"[{summary}/{len(STAGES)}] summary" in done.stdout and "EX" in done.stdout
    assert ResultsStore(tmp_path / "r").run_ids() != []


@pytest.mark.parametrize(
    ("executor", "run_config_", "shared"),
    [
        ("in_process", {}, True),  # dg.materialize, t2s run
        ("execute_in_process_executor", {}, True),
        ("multi_or_in_process_executor", {}, True),  # the eval job's own default
        ("multi_or_in_process_executor", {"execution": {"config": {"in_process": {}}}}, True),
        ("multi_or_in_process_executor", {"execution": {"config": {"multiprocess": {}}}}, False),
        ("celery", {"execution": {"config": {}}}, False),
    ],
)
def test_workers_and_agent_are_started_early_only_when_steps_share_a_process(
    executor: str, run_config_: dict[str, object], shared: bool
) -> None:
    """The items asset starts what later steps use (``run.warm``) only when they will run in
    its process; a step process of the multiprocess or Celery executor ends with its step."""
    from types import SimpleNamespace

    from t2s_pipeline.assets.evaluation import _steps_share_a_process

    context = SimpleNamespace(
        job_def=SimpleNamespace(executor_def=SimpleNamespace(name=executor)),
        run=SimpleNamespace(run_config=run_config_),
    )
    assert _steps_share_a_process(context) is shared  # type: ignore[arg-type]
