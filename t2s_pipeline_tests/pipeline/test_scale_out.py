"""Runs on Dagster's own engines, in real processes: a backfill of eight partitions at once
under the queued run coordinator on a PostgreSQL instance (plus one run on the multiprocess
executor), and a run whose steps execute on two Celery workers over a real Redis broker. Every
run's tables must equal those of the same configuration evaluated serially.

Each test starts its servers (dagster-daemon, redis-server, Celery workers) as subprocesses of
its own, in a project folder of its own, and stops them however it ends.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import psycopg2
import pytest
import yaml

from t2s_pipeline.config import load_config
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.runs import RunSpec, register, spec_for
from t2s_pipeline.store import ResultsStore

from .conftest import REPO
from .same_tables import differing_tables

BIN = Path(sys.executable).parent
N_CASES = 10
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


@dataclass(frozen=True)
class Team:
    """A project folder with its own Dagster instance (PostgreSQL storage)."""

    root: Path
    home: Path
    env: dict[str, str]

    def instance(self) -> dg.DagsterInstance:
        return dg.DagsterInstance.from_config(str(self.home))

    def configs(self, prefix: str, n: int) -> list[RunSpec]:
        """``n`` configurations, registered with their partitions added (what the sensor does)."""
        specs = []
        for k in range(1, n + 1):
            path = self.root / "configs" / f"{prefix}-{k}.yaml"
            data = {"name": f"{prefix}-{k}", "cases": "cases/erp", "phrasings": "main",
                    "sut": {"kind": "builtin", "isolate": True}}  # fmt: skip
            path.write_text(yaml.safe_dump(data, sort_keys=False))
            spec = spec_for(load_config(path), path.relative_to(self.root))
            register(spec, self.root / ".t2s" / "runs")
            specs.append(spec)
        with self.instance() as instance:
            instance.add_dynamic_partitions("eval_run", [s.run_id for s in specs])
        return specs

    def dagster(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "dagster"), *args], cwd=self.root, env=self.env, capture_output=True,
            text=True, timeout=300, check=False,
        )  # fmt: skip

    @contextmanager
    def process(self, name: str, *args: str) -> Iterator[Path]:
        """A long-running server process, its output in ``<name>.log``; stopped on exit."""
        log = self.root / f"{name}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                list(args), cwd=self.root, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        try:
            yield log
        finally:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)


def _team(
    tmp_path: Path,
    warehouse: Path,
    pg_url: str,
    guard_cache: Path,
    coordinator: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
) -> Team:
    """The team's folder, which becomes the current folder (as for a user in a project)."""
    root = tmp_path / "team"
    cases = root / "cases" / "erp"
    cases.mkdir(parents=True)
    monkeypatch.chdir(root)
    domain = yaml.safe_load((REPO / "cases" / "erp" / "domain.yaml").read_text())
    (cases / "domain.yaml").write_text(yaml.safe_dump({**domain, "database": str(warehouse)}))
    picked = [
        p
        for p in sorted((REPO / "cases" / "erp").glob("*.yaml"))
        if p.name not in ("domain.yaml", "labels.yaml")
    ][:N_CASES]
    for path in picked:
        shutil.copy(path, cases / path.name)
    (root / "configs").mkdir()
    (root / "t2s.yaml").write_text("cases: cases/erp\n")
    shutil.copy(REPO / "workspace.yaml", root / "workspace.yaml")
    (root / "workspace-celery.yaml").write_text(
        "load_from:\n  - python_module:\n      module_name: t2s_pipeline.celery_definitions\n"
        "      working_directory: .\n"
    )
    (root / ".t2s").mkdir()
    (root / ".t2s" / "warehouse.duckdb").symlink_to(warehouse)
    (root / ".t2s" / "guard_cache").symlink_to(guard_cache)
    database = f"t2s_scale_{os.getpid()}_{int(time.time() * 1000) % 10**8}"
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE {database}")
    admin.close()
    storage_url = pg_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg2://")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        yaml.safe_dump(
            {
                "storage": {"postgres": {"postgres_url": f"{storage_url}/{database}"}},
                "run_coordinator": coordinator,
                "telemetry": {"enabled": False},
            }
        )
    )
    env = {**os.environ, "DAGSTER_HOME": str(home), "PATH": f"{BIN}:{os.environ['PATH']}"}
    env.pop("T2S_PROJECT", None)
    return Team(root, home, env)


def _wait_for_runs(team: Team, n: int, timeout_s: float, log: Path) -> list[dg.DagsterRun]:
    deadline = time.monotonic() + timeout_s
    with team.instance() as instance:
        while True:
            runs = instance.get_runs()
            if len(runs) >= n and all(r.status.value in TERMINAL for r in runs):
                return list(runs)
            if time.monotonic() > deadline:
                states = {r.tags.get("dagster/partition"): r.status.value for r in runs}
                pytest.fail(f"runs not finished in {timeout_s:.0f} s: {states}\n"
                            f"{log.read_text()[-3000:]}")  # fmt: skip
            time.sleep(3)


def _serial_equal(team: Team, specs: list[RunSpec]) -> None:
    """Each configuration evaluated again serially, without Dagster: the same tables."""
    serial = team.root / "serial-results"
    concurrent = ResultsStore(team.root / ".t2s" / "results")
    for spec in specs:
        path = Path("configs") / f"{spec.config.name}.yaml"
        done = run_config_plainly(path, serial, team.root / "serial-runs", say=lambda _: None)
        assert done.spec.run_id == spec.run_id
        assert differing_tables(concurrent, ResultsStore(serial), spec.run_id) == []


def _overlapping(team: Team, runs: list[dg.DagsterRun]) -> int:
    """How many runs were executing while the first one to finish was still running."""
    with team.instance() as instance:
        spans = [instance.get_run_stats(r.run_id) for r in runs]
    first_end = min(s.end_time or 0 for s in spans)
    return sum(1 for s in spans if (s.start_time or 0) < first_end)


def test_eight_partitions_backfilled_at_once_and_one_on_the_multiprocess_executor(
    tmp_path: Path,
    demo_warehouse: Path,
    pg_url: str,
    guard_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    coordinator = {
        "module": "dagster._core.run_coordinator",
        "class": "QueuedRunCoordinator",
        "config": {"max_concurrent_runs": 9},
    }
    team = _team(tmp_path, demo_warehouse, pg_url, guard_cache, coordinator, monkeypatch)
    specs = team.configs("backfill", 8)
    multi = team.configs("multiprocess", 1)[0]
    started = time.monotonic()
    backfill = team.dagster(
        "job", "backfill", "-w", "workspace.yaml", "-j", "eval_job", "--noprompt",
        "--partitions", ",".join(s.run_id for s in specs),
    )  # fmt: skip
    assert backfill.returncode == 0, backfill.stderr[-3000:]
    launch = team.dagster(
        "job", "launch", "-w", "workspace.yaml", "-j", "eval_job",
        "--tags", json.dumps({"dagster/partition": multi.run_id}),
        "--config-json",
        json.dumps({"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}}),
    )  # fmt: skip
    assert launch.returncode == 0, launch.stderr[-3000:]
    with team.process("daemon", str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml") as log:
        runs = _wait_for_runs(team, 9, 1500, log)
    elapsed = time.monotonic() - started
    states = {r.tags.get("dagster/partition"): r.status.value for r in runs}
    assert set(states.values()) == {"SUCCESS"}, states
    assert _overlapping(team, runs) >= 4  # executing at once, not one after another
    by_partition = {r.tags.get("dagster/partition"): r for r in runs}
    assert "multiprocess" in by_partition[multi.run_id].run_config["execution"]["config"]
    print(f"9 runs (8 backfilled, 1 multiprocess) finished in {elapsed:.0f} s")
    _serial_equal(team, [*specs, multi])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_run_on_two_celery_workers_over_redis(
    tmp_path: Path,
    demo_warehouse: Path,
    pg_url: str,
    guard_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    redis = shutil.which("redis-server")
    if redis is None:
        if os.environ.get("CI") == "true":
            pytest.fail("redis-server is missing: .ci/run installs it")
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    coordinator = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
    team = _team(tmp_path, demo_warehouse, pg_url, guard_cache, coordinator, monkeypatch)
    port = _free_port()
    broker = {"broker": f"redis://127.0.0.1:{port}/0", "backend": f"redis://127.0.0.1:{port}/1"}
    (team.root / "celery.yaml").write_text(yaml.safe_dump({"execution": {"config": broker}}))
    spec = team.configs("celery", 1)[0]
    with ExitStack() as stack:
        stack.enter_context(team.process(
            "redis", redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no",
        ))  # fmt: skip
        logs = [
            stack.enter_context(
                team.process(
                    name,
                    str(BIN / "dagster-celery"),
                    "worker",
                    "start",
                    "-A",
                    "dagster_celery.app",
                    "-y",
                    "celery.yaml",
                    "-n",
                    f"{name}@%h",
                    "-l",
                    "info",
                )
            )  # fmt: skip
            for name in ("worker-1", "worker-2")
        ]
        deadline = time.monotonic() + 120
        while not all(" ready." in log.read_text() for log in logs):
            assert time.monotonic() < deadline, [log.read_text()[-2000:] for log in logs]
            time.sleep(1)
        launch = team.dagster(
            "job", "launch", "-w", "workspace-celery.yaml", "-j", "eval_job",
            "--tags", json.dumps({"dagster/partition": spec.run_id}),
            "--config-json", json.dumps({"execution": {"config": broker}}),
        )  # fmt: skip
        assert launch.returncode == 0, launch.stderr[-3000:]
        runs = _wait_for_runs(team, 1, 900, logs[0])
        tasks = [log.read_text().count("] succeeded in") for log in logs]
    assert runs[0].status.value == "SUCCESS", [log.read_text()[-3000:] for log in logs]
    assert all(n > 0 for n in tasks) and sum(tasks) >= 13, tasks  # both workers took steps
    _serial_equal(team, [spec])
