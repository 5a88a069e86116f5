"""A lane's own HTTP/1.1 connection against a raw loopback server that answers each path with
bytes written by hand: the shapes of answer other servers give (chunked, HTTP/1.0 read to the
end, Connection: close, an idle connection closed, gzip, a 100 Continue first, a body cut off),
none of them the built-in agent's."""

from __future__ import annotations

import asyncio
import gzip
import json
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from t2s_pipeline.sut.http import HttpSettings, HttpSutClient
from t2s_pipeline.sut.lane import Lane, Reply, direct_ok, encode_json

BODY = b'{"sql": "SELECT 1"}'


def _plain(extra: bytes = b"") -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    return head + b"Content-Length: %d\r\n" % len(BODY) + extra + b"\r\n" + BODY


ANSWERS: dict[str, bytes] = {
    "/plain": _plain(),
    "/chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (BODY[:5], BODY[5:]))
        + b"0\r\n\r\n"
    ),
    "/close": _plain(b"Connection: close\r\n"),
    "/http10": b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY,
    "/gzip": (
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
        % (len(gzip.compress(BODY)), gzip.compress(BODY))
    ),
    "/brotli": b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 4\r\n\r\nxxxx",
    "/continue": b"HTTP/1.1 100 Continue\r\n\r\n" + _plain(),
    "/cut": b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n" + BODY[:7],
    "/latin": (
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=latin-1\r\n"
        b"Retry-After: 2\r\nContent-Length: 4\r\n\r\ncaf\xe9"
    ),
}
CLOSES_AFTER = {"/close", "/http10", "/cut"}


class RawServer:
    """Reads each request (head and Content-Length body) and writes ``ANSWERS[path]``; counts
    connections and keeps the last request's head."""

    def __init__(self) -> None:
        self.connections = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = next(
                    int(line.split(":", 1)[1])
                    for line in lines
                    if line.lower().startswith("content-length:")
                )
                self.heads.append(head)
                self.bodies.append(await reader.readexactly(length))
                path = lines[0].split(" ")[1]
                writer.write(ANSWERS[path])
                await writer.drain()
                if path in CLOSES_AFTER:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _served(test: Callable[[RawServer, str], Awaitable[None]]) -> None:
    async def main() -> None:
        raw = RawServer()
        server = await asyncio.start_server(raw.handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server:
            await test(raw, f"http://127.0.0.1:{port}")

    asyncio.run(main())


def _lane() -> Lane:
    return Lane({"X-Api-Key": "k"}, ssl.create_default_context(), connect_timeout_s=2.0)


def test_a_kept_alive_connection_carries_plain_and_chunked_answers() -> None:
    async def test(raw: RawServer, base: str) -> None:
        async with _lane() as lane:
            for path in ("/plain", "/chunked", "/plain", "/continue"):
                reply = await lane.post(httpx.URL(base + path), encode_json({"q": "é"}))
                assert reply.status_code == 200 and reply.json() == {"sql": "SELECT 1"}
        assert raw.connections == 1
        # Names as written (as httpx sends them): a service may look one up by its spelling.
        assert b"\r\nX-Api-Key: k\r\n" in raw.heads[0]
        assert b"\r\nContent-Type: application/json\r\n" in raw.heads[0]
        head = raw.heads[0].decode("latin-1").lower()
        assert "x-api-key: k" in head and "content-type: application/json" in head
        assert f"host: {base.removeprefix('http://')}" in head
        assert raw.bodies[0] == '{"q":"é"}'.encode()  # compact UTF-8, as httpx writes json=

    _served(test)


def test_a_closed_or_http10_answer_is_read_whole_and_the_next_request_reconnects() -> None:
    async def test(raw: RawServer, base: str) -> None:
        async with _lane() as lane:
            for path in ("/close", "/http10", "/plain"):
                reply = await lane.post(httpx.URL(base + path), b"{}")
                assert reply.content == BODY
        assert raw.connections == 3

    _served(test)


def test_a_connection_the_server_closed_while_idle_is_opened_again() -> None:
    async def test(raw: RawServer, base: str) -> None:
        async with _lane() as lane:
            await lane.post(httpx.URL(base + "/plain"), b"{}")
            raw.writers[0].close()  # the server's idle timeout
            await asyncio.sleep(0.05)
            reply = await lane.post(httpx.URL(base + "/plain"), b"{}")
            assert reply.json() == {"sql": "SELECT 1"}
        assert raw.connections == 2

    _served(test)


def test_codings_charsets_and_failures_read_as_httpx_reads_them() -> None:
    async def test(raw: RawServer, base: str) -> None:
        async with _lane() as lane:
            assert (await lane.post(httpx.URL(base + "/gzip"), b"{}")).content == BODY
            latin = await lane.post(httpx.URL(base + "/latin"), b"{}")
            assert (latin.is_success, latin.text, latin.headers.get("retry-after")) == (
                False,
                "café",
                "2",
            )
            with pytest.raises(httpx.DecodingError):
                await lane.post(httpx.URL(base + "/brotli"), b"{}")
            with pytest.raises(httpx.RemoteProtocolError):
                await lane.post(httpx.URL(base + "/cut"), b"{}")
            assert (await lane.post(httpx.URL(base + "/plain"), b"{}")).content == BODY

    _served(test)


def test_a_refused_connection_is_httpx_connect_error() -> None:
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        async with _lane() as lane:
            with pytest.raises(httpx.ConnectError):
                await lane.post(httpx.URL(f"http://127.0.0.1:{port}/plain"), b"{}")

    asyncio.run(main())


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"])
def test_a_proxy_in_the_environment_leaves_the_lane_to_httpx(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(HttpSutClient(HttpSettings("http://127.0.0.1:9"))._async_client(), Lane)
    monkeypatch.setenv(variable, "http://proxy.invalid:3128")
    assert not direct_ok("http://127.0.0.1:9")
    client: Any = HttpSutClient(HttpSettings("http://127.0.0.1:9"))._async_client()
    assert isinstance(client, httpx.AsyncClient)


def test_reply_json_and_text_match_httpx_response() -> None:
    for content, kind in ((BODY, "application/json"), (b"caf\xc3\xa9", "text/plain")):
        mine = Reply(200, {"content-type": kind}, content)
        theirs = httpx.Response(200, headers={"content-type": kind}, content=content)
        assert mine.text == theirs.text
    assert Reply(200, {}, BODY).json() == httpx.Response(200, content=BODY).json()
    assert (
        encode_json({"a": [1, "ü"]})
        == httpx.Request("POST", "http://x", json={"a": [1, "ü"]}).content
    )
    assert json.loads(encode_json({"a": 1})) == {"a": 1}
