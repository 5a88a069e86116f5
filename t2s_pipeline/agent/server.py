"""Run an ASGI app under uvicorn in a background thread on a free loopback port.

The pipeline and the tests start the baseline agent this way; ``t2s agent serve`` runs it in
the foreground instead.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from t2s_pipeline.errors import SutError


@contextmanager
def serve_in_thread(
    app: Any, host: str = "127.0.0.1", start_timeout_s: float = 10.0, shutdown_s: float = 2.0
) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL.

    >>> with serve_in_thread(build_app("cases/erp")) as base_url:  # doctest: +SKIP
    ...     httpx.get(base_url + "/v1/health").json()
    {'status': 'ok', 'supports_exclusions': True}
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, timeout_graceful_shutdown=int(shutdown_s)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        _wait_started(server, thread, start_timeout_s)
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=shutdown_s + 5)
        sock.close()


def _wait_started(server: uvicorn.Server, thread: threading.Thread, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise SutError(f"the server did not start within {timeout_s} s")
        time.sleep(0.01)
