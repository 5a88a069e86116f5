"""One evaluation of a run id at a time: a lock file in the run's results folder.

The lock is a file created exclusively (``O_EXCL``), holding who took it (host, process,
time), so a second launch of the same configuration is told who is already running it. A
lock whose holder process is gone (same host, no such process) is stale and taken over;
one held by a live process, or by another host, is respected.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from t2s_pipeline.errors import T2SError

LOCK_NAME = ".running"


class RunInProgress(T2SError):
    """The run id is being evaluated by someone else; names the holder."""


def _holder() -> dict[str, object]:
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe(holder: dict[str, object]) -> str:
    return f"process {holder.get('pid')} on {holder.get('host')} since {holder.get('since')}"


def read_holder(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def run_lock(folder: Path, run_id: str) -> Iterator[None]:
    """Hold the lock of ``run_id`` (in its results folder) for the duration of the block."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    for _attempt in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            holder = read_holder(path) or {}
            pid = holder.get("pid")
            stale = (
                holder.get("host") == socket.gethostname()
                and isinstance(pid, int)
                and not _alive(pid)
            )
            if not stale:
                raise RunInProgress(
                    f"run {run_id} is already running ({describe(holder)}); wait for it to "
                    f"finish, or if that process is gone for good delete {path}"
                ) from None
            path.unlink(missing_ok=True)
    else:  # pragma: no cover - lost the race to another taker twice
        raise RunInProgress(f"run {run_id} is being started by another process")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(_holder(), handle)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
