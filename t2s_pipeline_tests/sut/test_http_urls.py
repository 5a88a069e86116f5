"""Where the HTTP client sends each request: the configured paths under the base URL, its
own path prefix kept, on every lane and every attempt (the merged URL is computed once)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from t2s_pipeline.sut.client import build_items
from t2s_pipeline.sut.contract import Paths
from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set


def test_requests_go_to_the_paths_under_a_base_url_with_a_prefix() -> None:
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            asked = self.path.endswith("/ask")
            data = json.dumps({"sql": "SELECT 1"} if asked else {"tables": []}).encode()
            self.send_response(200 if self.path.startswith("/gateway/") else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        items = build_items(sample_case_set(), TWINS)
        settings = HttpSettings(
            f"http://127.0.0.1:{server.server_address[1]}/gateway",
            concurrency=3,
            paths=Paths(ask="/v1/ask", retrieve="v1/retrieve?probe=1"),
        )
        with HttpSutClient(settings) as client:
            outcomes = asyncio.run(client.ask_all(items, "urls"))
    finally:
        server.shutdown()
        server.server_close()
    assert all(o.response is not None and o.error_class is None for o in outcomes)
    assert sorted(set(seen)) == ["/gateway/v1/ask", "/gateway/v1/retrieve?probe=1"]
    assert len(seen) == 2 * len(items)
