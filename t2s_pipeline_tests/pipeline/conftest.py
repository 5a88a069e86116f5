"""A self-contained demo project in a temporary folder: warehouse, cases, configs, settings."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import httpx
import pytest
import yaml

from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.cases import load_cases
from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.suites import HOSTILE_SUITE

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Project:
    root: Path
    settings: T2SSettings

    def config(self, name: str, **overrides: object) -> Path:
        """Write ``configs/<name>.yaml`` (main phrasing only, to keep runs short)."""
        data: dict[str, object] = {
            "name": name,
            "cases": self.settings.cases_dir,
            "phrasings": "main",
            "sut": {"kind": "builtin", "isolate": True},
        }
        data.update(overrides)
        path = Path(self.settings.configs_dir) / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    @property
    def n_cases(self) -> int:
        """How many gold cases the demo folder holds (one item each with ``phrasings: main``)."""
        return len(load_cases(self.settings.cases_dir).cases)

    @property
    def n_wordings(self) -> int:
        """How many items ``phrasings: all`` asks: every wording of every case."""
        return sum(len(case.questions) for case in load_cases(self.settings.cases_dir).cases)


@pytest.fixture(scope="session")
def demo_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The default-scale warehouse the gold cases were frozen on (built in about a second)."""
    return build_warehouse(tmp_path_factory.mktemp("demo") / "warehouse.duckdb").path


@pytest.fixture(scope="session")
def guard_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hostile-suite verdict for every project of the session: the verdict depends only on
    the suite, the executor's code and the warehouse, which they share. The first run with the
    guardrails check runs the suite (a few minutes); the others read its clean verdict, as a
    team's later runs do (the suite itself is tested in ``execution/test_hostile_suite.py``)."""
    return tmp_path_factory.mktemp("guard-cache")


@pytest.fixture
def project(tmp_path: Path, demo_warehouse: Path, guard_cache: Path) -> Project:
    """A copy of the demo cases pointing at the session warehouse, with its own store (and
    the session's hostile-suite verdicts, :func:`guard_cache`)."""
    cases = tmp_path / "cases" / "erp"
    shutil.copytree(REPO / "cases" / "erp", cases)
    domain = yaml.safe_load((cases / "domain.yaml").read_text())
    domain["database"] = str(demo_warehouse)
    (cases / "domain.yaml").write_text(yaml.safe_dump(domain, sort_keys=False))
    settings = T2SSettings(
        cases_dir=str(cases),
        configs_dir=str(tmp_path / "configs"),
        registry_dir=str(tmp_path / ".t2s" / "runs"),
        results_path=str(tmp_path / ".t2s" / "results"),
        decisions_dir=str(tmp_path / "decisions"),
        hostile_dir=str(HOSTILE_SUITE),
        warehouse_path=str(demo_warehouse),
    )
    # The guardrails check keeps its verdicts next to the run registry.
    (tmp_path / ".t2s").mkdir(exist_ok=True)
    (tmp_path / ".t2s" / "guard_cache").symlink_to(guard_cache)
    return Project(tmp_path, settings)


@pytest.fixture
def instance() -> dg.DagsterInstance:
    with dg.instance_for_test() as test_instance:
        yield test_instance


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "dagster_home"
    folder.mkdir()
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return folder


@pytest.fixture
def webserver(home: Path) -> Iterator[str]:
    """dagster-webserver on loopback over the project's workspace.yaml and ``home``."""
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [sys.executable, "-m", "dagster_webserver", "-h", "127.0.0.1", "-p", str(port)]
    process = subprocess.Popen(
        [*command, "-w", str(REPO / "workspace.yaml")],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            pytest.fail("dagster-webserver did not start within 120 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
