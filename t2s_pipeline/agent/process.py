"""The built-in agent in its own interpreter, for runs large enough to pay for starting one.

Served in a thread, the agent, its HTTP server and the harness's HTTP client share one
interpreter and take turns on one core. In a child interpreter (``python -c``, nothing of the
caller inherited) the agent answers on another core while the harness sends and reads. The
child serves on a free loopback port, says which on its standard output, and is ended at the
end of the block; it stops by itself when its standard input closes (the caller's process ended).
"""

from __future__ import annotations

import contextlib
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
    base URL."""
    child = subprocess.Popen(
        [sys.executable, "-c", _ENTRY],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,  # a Ctrl-C reaches the caller, which ends the child
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        try:
            child.stdin.write(pickle.dumps((cases, settings), protocol=pickle.HIGHEST_PROTOCOL))
            child.stdin.flush()  # kept open: its end tells the child to stop
        except BrokenPipeError:
            raise SutError(
                f"the agent process ended at start (exit code {child.wait()}); its error is above"
            ) from None
        yield f"http://127.0.0.1:{_port(child, start_timeout_s)}"
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()
        # Every answer has been read; the agent keeps nothing to save, so it is ended at once
        # rather than left to shut its server down gracefully (0.4 s of every run).
        child.kill()
        child.wait()
        child.stdout.close()


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
