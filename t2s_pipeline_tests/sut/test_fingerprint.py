"""The run id covers the SUT: a changed service is a new run, never the old one replaced."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from t2s_pipeline.config import RunConfig, SutSettings
from t2s_pipeline.runs import spec_for
from t2s_pipeline.sut.fingerprint import sut_fingerprint

REPO = Path(__file__).resolve().parents[2]
CASES = str(REPO / "cases" / "erp")


@contextmanager
def service(health: dict[str, object]) -> Iterator[str]:
    """A loopback HTTP service that answers only its health document."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            body = json.dumps(health).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _http(url: str) -> RunConfig:
    return RunConfig(name="svc", cases=CASES, sut=SutSettings(kind="http", url=url))


def test_a_new_service_version_is_a_new_run() -> None:
    """Same configuration (same URL), the service redeployed with another version."""
    health: dict[str, object] = {"status": "ok", "version": "2026.12.1"}
    with service(health) as url:
        old = spec_for(_http(url), "c.yaml")
        again = spec_for(_http(url), "c.yaml")
        health["version"] = "2026.12.2"
        new = spec_for(_http(url), "c.yaml")
    assert old.sut_fingerprint == "http:version:2026.12.1"
    assert old.run_id == again.run_id  # same service, same run
    assert new.sut_fingerprint == "http:version:2026.12.2" and new.run_id != old.run_id


def test_a_service_without_a_version_gets_a_run_of_its_own_each_time() -> None:
    with service({"status": "ok"}) as url:
        first, second = spec_for(_http(url), "c.yaml"), spec_for(_http(url), "c.yaml")
    assert first.sut_fingerprint.startswith("http:nonce:")
    assert first.run_id != second.run_id


def test_replay_and_builtin_fingerprints_follow_their_content(tmp_path: Path) -> None:
    replay = tmp_path / "p.jsonl"
    replay.write_text('{"case_id": "a", "phrasing": 0, "sql": "SELECT 1"}\n')
    config = RunConfig(name="r", cases=CASES, sut=SutSettings(kind="replay", file=str(replay)))
    before = sut_fingerprint(config)
    replay.write_text('{"case_id": "a", "phrasing": 0, "sql": "SELECT 2"}\n')
    assert sut_fingerprint(config) != before and before.startswith("replay:")
    builtin = RunConfig(name="b", cases=CASES)
    assert sut_fingerprint(builtin) == sut_fingerprint(builtin)
