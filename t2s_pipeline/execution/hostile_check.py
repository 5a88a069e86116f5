"""The run's guardrails check: the hostile suite on scratch copies of the warehouse, cached.

A clean verdict is cached by (suite, executor code, warehouse); runs that start at once (a
backfill) take a lock on the cache folder, so one of them runs the suite and the others read
its verdict instead of each running it.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import t2s_pipeline.execution as execution_package
from t2s_pipeline.execution.hostile import LEAK, OVER_BLOCK, run_suite
from t2s_pipeline.execution.hostile_suite import load_suite
from t2s_pipeline.execution.hostile_targets import duckdb_target, sqlite_target

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class HostileSummary:
    leaks: int
    over_blocks: int
    cells: int
    engines: str
    # Each failing cell as "<verdict> <attack> on <engine>/<layer>: <what happened> (<detail>)".
    failures: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return self.leaks == 0 and self.over_blocks == 0


def hostile_report(
    suite: Path,
    warehouse: Path,
    engines: Sequence[str] = ("duckdb", "sqlite"),
    timeout_s: float = 2.0,
    cache: Path | None = None,
) -> HostileSummary:
    """Run the hostile suite on scratch copies of the warehouse, every layer setting.

    The verdict depends only on the suite, the executor's code and the warehouse, so with a
    ``cache`` folder a clean verdict is reused until one of the three changes. A failing one
    is never cached: the next run checks again rather than repeat a verdict nobody can see
    the cause of.
    """
    key = _guard_key(suite, warehouse, engines, timeout_s)
    if cache is None:
        return _run_hostile(suite, warehouse, engines, timeout_s)
    cached = cache / f"{key}.json"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even on a crash
        found = _read_cached(cached)
        if found is not None:
            return found
        summary = _run_hostile(suite, warehouse, engines, timeout_s)
        if summary.clean:
            temporary = cached.with_suffix(".tmp")
            temporary.write_text(json.dumps(asdict(summary)), encoding="utf-8")
            os.replace(temporary, cached)
    return summary


def _read_cached(path: Path) -> HostileSummary | None:
    """A cached clean verdict, or None (missing, unreadable or not clean: run the suite)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        summary = HostileSummary(**{**data, "failures": tuple(data.get("failures", ()))})
    except (OSError, ValueError, TypeError):
        return None
    return summary if summary.clean else None


def _guard_key(suite: Path, warehouse: Path, engines: Sequence[str], timeout_s: float) -> str:

    digest = hashlib.sha256(f"{sorted(engines)}:{timeout_s}".encode())
    package = Path(execution_package.__file__).parent
    sources = sorted([*package.rglob("*.py"), *package.rglob("*.txt"), *package.rglob("*.sql")])
    for path in [*sorted(suite.glob("*.yaml")), *sources]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    stat = warehouse.stat()
    digest.update(f"{warehouse.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def _run_hostile(
    suite: Path, warehouse: Path, engines: Sequence[str], timeout_s: float
) -> HostileSummary:

    makers = {"duckdb": duckdb_target, "sqlite": sqlite_target}
    with tempfile.TemporaryDirectory(prefix="t2s-guard-check-") as workdir:
        targets = [makers[e](warehouse, Path(workdir)) for e in engines]
        try:
            attacks = load_suite(suite)
            _LOG.info(
                "guardrails check: %d attacks x 3 layer settings on %s (cached afterwards)",
                len(attacks),
                ", ".join(engines),
            )
            report = run_suite(attacks, targets, timeout_s, progress=_LOG.info, parallel=True)
        finally:
            for target in targets:
                target.cleanup()
    verdicts = [c.verdict for c in report.cells]
    failures = tuple(
        f"{c.verdict} {c.attack} on {c.engine}/{c.layer}: {c.how} ({c.detail or 'no detail'}, "
        f"{c.seconds:.2f} s)"
        for c in report.cells
        if c.verdict in (LEAK, OVER_BLOCK)
    )
    return HostileSummary(
        verdicts.count(LEAK),
        verdicts.count(OVER_BLOCK),
        len(verdicts),
        ",".join(engines),
        failures,
    )
