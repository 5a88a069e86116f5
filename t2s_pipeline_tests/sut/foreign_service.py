"""A text-to-SQL service shaped nothing like the built-in agent, served on real loopback HTTP.

Its own routes (``/api/v2/generate``, ``/status``; no retriever endpoint), its own field names,
nested request and response bodies, and an API key header it checks. It answers each question
it knows with the SQL it was given and records every request it receives, so a test can
assert what the harness actually sent.

It also offers the same answers as plain Python functions (sync and async), for ``kind: python``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from t2s_pipeline.sut.contract import AskRequest, AskResponse, RetrieveRequest, RetrieveResponse

API_KEY_HEADER = "X-Api-Key"

# The configuration's `sut:` adapters for this service (kind http).
FIELDS = {
    "question": "prompt",
    "exclude_examples": "options.exclude",
    "context": "meta.context",
    "run_id": "meta.run",
    "sql": "data.query.text",
    "refused": "data.declined",
    "message": "data.note",
    "retrieval": "trace",
    "tables": "used_tables",
    "table_name": "table",
    "examples": "used_examples",
    "example_id": "ref",
    "status": "state",
    "supports_exclusions": "caps.exclusions",
    "version": "build",
}
PATHS = {"ask": "/api/v2/generate", "health": "/status", "retrieve": None}


@dataclass
class ForeignService:
    """What the service knows and what it saw."""

    answers: Mapping[str, str]
    api_key: str
    build: str = "v1"
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers_seen: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    def reply(self, body: Mapping[str, Any]) -> dict[str, Any]:
        sql = self.answers.get(str(body.get("prompt")))
        return {
            "data": {
                "query": {"text": sql},
                "declined": sql is None,
                "note": None if sql else "unknown question",
            },
            "trace": {"used_tables": [{"table": "sales.orders"}], "used_examples": []},
        }


def _handler(service: ForeignService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            service.headers_seen.append(dict(self.headers.items()))
            if self.headers.get(API_KEY_HEADER) != service.api_key:
                self._send(401, {"detail": "bad or missing API key"})
                return False
            return True

        def do_GET(self) -> None:
            if not self._authorised():
                return
            if self.path == "/status":
                self._send(
                    200, {"state": "up", "caps": {"exclusions": True}, "build": service.build}
                )
            else:
                self._send(404, {"detail": "no such route"})

        def do_POST(self) -> None:
            if not self._authorised():
                return
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/api/v2/generate":
                self._send(404, {"detail": "no such route"})
                return
            service.requests.append(body)
            self._send(200, service.reply(body))

    return Handler


@contextmanager
def serve(service: ForeignService) -> Iterator[ForeignService]:
    """Serve on a free loopback port for the block; ``service.url`` is set."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(service))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# --- kind python -----------------------------------------------------------------------------

ANSWERS: dict[str, str] = {}
"""The in-process service's knowledge; a test fills it before the run."""
SEEN: list[AskRequest] = []


def answer(request: AskRequest) -> dict[str, Any]:
    """A sync SUT returning a mapping in its own shape (read with the configured fields)."""
    SEEN.append(request)
    sql = ANSWERS.get(request.question)
    return {"data": {"query": {"text": sql}, "declined": sql is None}}


async def answer_async(request: AskRequest) -> AskResponse:
    """An async SUT returning the typed response."""
    SEEN.append(request)
    sql = ANSWERS.get(request.question)
    return AskResponse(sql=sql, refused=sql is None)


def retrieve(request: RetrieveRequest) -> RetrieveResponse:
    """The in-process probe: this service retrieves nothing, and says so."""
    return RetrieveResponse(tables=(), examples=())


def broken(request: AskRequest) -> AskResponse:
    """A SUT that fails on every question."""
    raise RuntimeError("model backend unavailable")
