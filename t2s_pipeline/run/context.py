"""What every stage of a run is given, and what it gives back.

A stage is a plain function ``materialise(run) -> StageResult``: it reads the tables it needs
from the run's store, writes its own and returns the metadata its asset shows. The Dagster
assets and the plain runner (``python -m t2s_pipeline.run``) call the same functions.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.progress import Note, Progress
from t2s_pipeline.runs import RunSpec
from t2s_pipeline.store import ResultsStore

_LOG = logging.getLogger("t2s_pipeline.run")
# An asset's metadata: plain values (counts, means, text) keyed by name.
Metadata = dict[str, Any]


def _no_progress(_what: str) -> Progress:
    return lambda _done, _total: None


@dataclass(frozen=True)
class RunContext:
    """One run partition being evaluated: its spec, cases and store, and where news goes."""

    spec: RunSpec
    case_set: CaseSet
    store: ResultsStore
    info: Note = _LOG.info
    warn: Note = _LOG.warning
    progress: Callable[[str], Progress] = _no_progress
    """A progress callback for the named piece of work (``asked``, ``gold``...)."""
    decisions: Path = Path("decisions")
    """The recorded decisions (accepted regressions, promotions) the comparison reads."""

    @property
    def run_id(self) -> str:
        return self.spec.run_id


@dataclass(frozen=True)
class StageResult:
    """What a stage reports: metadata per table it wrote, and an optional value (the summary)."""

    metadata: dict[str, Metadata] = field(default_factory=dict)
    value: object = None


@dataclass(frozen=True)
class Stage:
    """One step of a run: a name, the tables it writes (its assets) and its function."""

    name: str
    tables: tuple[str, ...]
    materialise: Callable[[RunContext], StageResult]

    def execute(self, run: RunContext) -> StageResult:
        """:attr:`materialise` with the objects alive before it left out of the garbage
        collector's passes (:func:`older_objects_frozen`)."""
        with older_objects_frozen():
            return self.materialise(run)


_frozen_depth = 0
_frozen_lock = threading.Lock()


@contextmanager
def older_objects_frozen() -> Iterator[None]:
    """While the block runs, the objects alive when it began (the process's modules, Dagster's
    state, earlier stages' tables) are set aside from garbage collection (``gc.freeze``), and
    given back after it. A full collection walked every one of them again: at 1,000 items
    0.9 s of a run's time in five collections, 0.35 s with the stages run like this. Garbage
    among them is collected after the block. Nested blocks give them back at the outermost."""
    global _frozen_depth
    with _frozen_lock:
        if _frozen_depth == 0:
            gc.freeze()
        _frozen_depth += 1
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen_depth -= 1
            if _frozen_depth == 0:
                gc.unfreeze()
