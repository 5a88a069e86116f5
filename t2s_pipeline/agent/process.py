"""The built-in agent in its own interpreter, for runs large enough to pay for starting one.

Served in a thread, the agent, its HTTP server and the harness's HTTP client share one
interpreter and take turns on one core. In a child interpreter (``python -c``, nothing of the
caller inherited) the agent answers on another core while the harness sends and reads. The
child serves on a free loopback port, says which on its standard output, and is ended at the
end of the block; it stops by itself when its standard input closes (the caller's process ended).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import pickle
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.cases import CaseSet
from t2s_pipeline.errors import SutError

_ENTRY = "from t2s_pipeline.agent.process import serve_child; serve_child()"


@contextmanager
def serve_in_process(
    cases: CaseSet, settings: AgentSettings, start_timeout_s: float = 120.0
) -> Iterator[str]:
    """Serve the agent for ``cases`` in a child interpreter until the block ends; yields its
    base URL. A child :func:`prestart` began for the same cases and settings is taken."""
    payload = pickle.dumps((cases, settings), protocol=pickle.HIGHEST_PROTOCOL)
    child = _take(hashlib.sha256(payload).digest())
    _end_started()  # one started for other cases or settings will not be taken now
    child = child or _Child(payload)
    try:
        child.check_sent()
        yield f"http://127.0.0.1:{_port(child.process, start_timeout_s)}"
    finally:
        child.end()


def prestart(cases: CaseSet, settings: AgentSettings) -> None:
    """Start the agent for ``cases`` now, for the next :func:`serve_in_process` of the same
    cases and settings to take: a run whose stages share a process starts it as the run
    begins, so importing the agent and indexing the cases (about 0.85 s at 1,000 cases) happen
    on a core the first stages leave free. One child is kept; one never taken is ended when
    another is started or this process exits."""
    payload = pickle.dumps((cases, settings), protocol=pickle.HIGHEST_PROTOCOL)
    key = hashlib.sha256(payload).digest()
    with _LOCK:
        for earlier in _STARTED.values():
            earlier.end()
        _STARTED.clear()
        _STARTED[key] = _Child(payload)


def _take(key: bytes) -> _Child | None:
    """The child started for ``key``, while it is still alive."""
    with _LOCK:
        child = _STARTED.pop(key, None)
    if child is not None and child.process.poll() is not None:
        child.end()
        return None
    return child


def _end_started() -> None:
    with _LOCK:
        started = list(_STARTED.values())
        _STARTED.clear()
    for child in started:
        child.end()


class _Child:
    """An agent interpreter being given its cases and settings (a thread writes them: the
    child reads them only once its imports are done)."""

    def __init__(self, payload: bytes) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _ENTRY],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C reaches the caller, which ends the child
        )
        self._broken = False
        self._sending = threading.Thread(
            target=self._send, args=(payload,), name="t2s-agent-start", daemon=True
        )
        self._sending.start()

    def _send(self, payload: bytes) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(payload)
            self.process.stdin.flush()  # kept open: its end tells the child to stop
        except (BrokenPipeError, ValueError, OSError):
            self._broken = True

    def check_sent(self) -> None:
        """Wait until the child has its cases; a child that ended first is a SutError."""
        self._sending.join()
        if self._broken:
            raise SutError(
                f"the agent process ended at start (exit code {self.process.wait()}); "
                "its error is above"
            )

    def end(self) -> None:
        """End the child at once: every answer has been read, and the agent keeps nothing to
        save (a graceful shutdown of its server took 0.4 s of every run)."""
        self.process.kill()
        self.process.wait()
        self._sending.join()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()


_STARTED: dict[bytes, _Child] = {}
_LOCK = threading.Lock()
atexit.register(_end_started)


def _forget_in_child() -> None:
    """A forked child does not own the agent its parent started: it neither takes nor ends
    it (and a lock another thread held at the fork is not inherited held)."""
    global _LOCK
    _LOCK = threading.Lock()
    _STARTED.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _port(child: subprocess.Popen[bytes], timeout_s: float) -> int:
    """The port the child announces once it serves."""
    assert child.stdout is not None
    deadline = time.monotonic() + timeout_s
    readable, _, _ = select.select([child.stdout], [], [], timeout_s)
    line = child.stdout.readline() if readable else b""
    if not line.strip().isdigit():
        waited = timeout_s - max(0.0, deadline - time.monotonic())
        state = "is still starting" if child.poll() is None else f"exit code {child.poll()}"
        raise SutError(
            f"the agent process did not start serving within {waited:.0f} s ({state}); "
            "its error, if any, is above"
        )
    return int(line)


def serve_child() -> None:
    """The child's side: read the cases and settings, serve, stop when standard input ends."""
    cases, settings = pickle.load(sys.stdin.buffer)
    stopped = threading.Event()

    def watch() -> None:
        sys.stdin.buffer.read()  # returns at end of input: the caller closed it or ended
        stopped.set()

    threading.Thread(target=watch, name="t2s-agent-stdin", daemon=True).start()
    with serve_in_thread(build_app(cases, settings=settings)) as url:
        sys.stdout.write(f"{url.rsplit(':', 1)[1]}\n")
        sys.stdout.flush()
        stopped.wait()
