"""The ``runs`` table: one row per run, written when it starts and completed when it ends."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from contextlib import suppress
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import sqlglot

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.execution.registry import engine_named
from t2s_pipeline.runs import RunSpec
from t2s_pipeline.scoring.summary import (
    RunSummary,
)
from t2s_pipeline.store import ResultsStore


@functools.cache
def code_fingerprint() -> str:
    """A hash of the package's source and of the sqlglot release that reads SQL, so runs made by
    different code can be told apart (the run id covers the configuration and the cases, not
    the harness) and an analysis kept under it is never reused by another sqlglot.

    >>> len(code_fingerprint())
    12
    """

    root = Path(__file__).parents[1]  # the whole package
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    digest.update(f"sqlglot {sqlglot.__version__}".encode())
    return digest.hexdigest()[:12]


def record_run_start(store: ResultsStore, spec: RunSpec, case_set: CaseSet) -> None:
    """The ``runs`` row: config and hashes, warehouse snapshot, code version, start."""

    snapshot = None
    read_hash = engine_named(case_set.domain.engine).snapshot_hash
    if read_hash is not None and "{db_id}" not in case_set.domain.database:
        with suppress(Exception):
            snapshot = read_hash(case_set.domain.database_for())
    row = {
        "run_id": spec.run_id,
        "config_name": spec.config.name,
        "config_path": spec.config_path,
        "config_json": json.dumps(spec.config.model_dump(mode="json"), sort_keys=True),
        "config_hash": spec.config_hash,
        "case_set_hash": case_set.content_hash,
        "sut_fingerprint": spec.sut_fingerprint,
        "cases_dir": spec.config.cases,
        "snapshot_hash": snapshot,
        "code_version": f"{version('t2s_pipeline')}+{code_fingerprint()}",
        "started_at": dt.datetime.now(dt.UTC).replace(tzinfo=None),
        "ended_at": pd.NaT,
        "summary_json": None,
    }
    frame_ = pd.DataFrame([row]).astype({"ended_at": "datetime64[us]", "summary_json": "string"})
    store.replace_run("runs", spec.run_id, frame_)


def finished_runs(store: ResultsStore) -> set[str]:
    """Run ids whose evaluation finished (their summary recorded)."""
    runs = store.read("runs")
    if runs.empty:
        return set()
    return set(runs.loc[runs["ended_at"].notna(), "run_id"].astype(str))


def record_run_end(store: ResultsStore, spec: RunSpec, summary: RunSummary) -> None:
    runs = store.read("runs", spec.run_id)
    if runs.empty:
        return
    runs = runs.assign(
        ended_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        summary_json=json.dumps(summary.to_json()),
    )
    store.replace_run("runs", spec.run_id, runs)
