"""Evaluate one run partition without Dagster: every stage of ``STAGES`` in order.

The assets call the same stage functions, so a partition evaluated here has the same tables
as one materialised by Dagster (a test runs a partition both ways and compares every table).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from t2s_pipeline.cases import CaseSet, load_cases
from t2s_pipeline.config import load_config
from t2s_pipeline.progress import Note, Progress
from t2s_pipeline.run.context import RunContext, Stage
from t2s_pipeline.run.lock import run_lock
from t2s_pipeline.run.record import finished_runs
from t2s_pipeline.run.stages import STAGES
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.run.warm import warm_up
from t2s_pipeline.runs import RunSpec, register, spec_for
from t2s_pipeline.scoring.summary import RunSummary
from t2s_pipeline.store import ResultsStore

_WARMED_FOR = ("ask", "gold", "candidates")
"""Stages whose workers or agent :func:`~t2s_pipeline.run.warm.warm_up` starts early."""


@dataclass(frozen=True)
class PlainRun:
    spec: RunSpec
    summary: RunSummary
    seconds: dict[str, float]
    """Wall time of each stage."""
    already_evaluated: bool = False


def run_partition(
    spec: RunSpec,
    case_set: CaseSet,
    store: ResultsStore,
    stages: Sequence[Stage] = STAGES,
    say: Note = print,
    progress: Progress | None = None,
    decisions: Path = Path("decisions"),
) -> dict[str, float]:
    """Run ``stages`` on one registered partition, holding its lock; returns each stage's
    wall time. A failure stops at that stage, with every earlier stage's tables intact."""
    seconds: dict[str, float] = {}

    def progress_for(what: str) -> Progress:
        return progress or (lambda _done, _total: None)

    run = RunContext(
        spec, case_set, store, info=say, warn=say, progress=progress_for, decisions=decisions
    )
    with run_lock(store.run_dir(spec.run_id), spec.run_id):
        if any(stage.name in _WARMED_FOR for stage in stages):
            warm_up(run)
        for index, stage in enumerate(stages, start=1):
            started = time.perf_counter()
            stage.execute(run)
            seconds[stage.name] = time.perf_counter() - started
            say(f"[{index}/{len(stages)}] {stage.name}: {seconds[stage.name]:.2f} s")
    return seconds


def run_config_plainly(
    config_path: Path,
    results: Path,
    registry: Path,
    rerun: bool = False,
    say: Note = print,
    decisions: Path = Path("decisions"),
) -> PlainRun:
    """Register a configuration's run (as ``t2s run`` does) and evaluate it without Dagster.
    A run id that finished before is not evaluated again
    unless ``rerun`` (which gives it a new id ``<run id>-rN``); the last stage compares it
    with its baseline."""
    config = load_config(config_path)
    spec = spec_for(config, config_path)
    store = ResultsStore(results)
    finished = finished_runs(store)
    if spec.run_id in finished:
        if not rerun:
            return PlainRun(spec, summarise_run(store, spec.run_id), {}, already_evaluated=True)
        n = 2
        while f"{spec.run_id}-r{n}" in finished:
            n += 1
        spec = replace(spec, run_id=f"{spec.run_id}-r{n}")
    register(spec, registry)
    seconds = run_partition(
        spec, load_cases(Path(config.cases)), store, say=say, decisions=decisions
    )
    return PlainRun(spec, summarise_run(store, spec.run_id), seconds)
