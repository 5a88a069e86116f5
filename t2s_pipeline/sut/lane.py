"""One lane's HTTP/1.1 connection: h11 on asyncio's own streams, answered as httpx answers.

httpx's stack (the client, httpcore's pool, anyio, then h11) cost about 1.1 ms of CPU per
request when asking the built-in agent on loopback: as much as the agent spent answering, so
the harness, not the SUT, bounded the ask stage. A lane needs little of what those layers add:
it posts JSON to one origin, one request at a time, on one kept-alive connection. This
module speaks HTTP/1.1 through h11 (the state machine httpcore itself uses: length-delimited
and chunked bodies, keep-alive, a server that closes or answers HTTP/1.0) directly on
asyncio's streams, and answers with a :class:`Reply` read as an httpx response is (its JSON, its
text in its charset, a gzip or deflate body decoded; httpx's own response object cost a third
of a request's time to build). Failures are raised as httpx's
exception types (``ConnectError``, ``ConnectTimeout``, ``ReadError``, ``RemoteProtocolError``),
so they keep their error classes and retry rules.

:func:`direct_ok` says when a lane may use it: no proxy configured in the environment (httpx
would honour one) and no credentials in the URL. Otherwise the lane is an httpx client, as
before. Not supported here, unlike an httpx client: cookies a SUT sets (a lane does not send
them back) and redirects (neither follows them: httpx does not by default).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from types import TracebackType
from typing import Any

import h11
import httpx

_READ = 65536
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_DEFAULT_HEADERS = httpx.Headers(
    {
        "Accept": "*/*",
        "Accept-Encoding": "gzip, deflate",
        "Connection": "keep-alive",
        "User-Agent": f"python-httpx/{httpx.__version__}",
    }
)
"""What an httpx client sends by default, spelt as httpx spells them: a SUT sees the same
request as before (names keep their case, as the configuration's own headers do: a service
that looks a header up by its exact spelling still finds it)."""


def direct_ok(base_url: str) -> bool:
    """Whether a lane may speak to ``base_url`` itself: http or https, no credentials in the
    URL, and no proxy variable set (any of ``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, in
    either case: httpx would send through it).

    >>> direct_ok("http://127.0.0.1:8900"), direct_ok("http://user:secret@127.0.0.1:8900")
    (True, False)
    """
    url = httpx.URL(base_url)
    if url.scheme not in ("http", "https") or url.userinfo:
        return False
    return not any(
        os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES
    )


def encode_json(payload: object) -> bytes:
    """The request body as httpx writes ``json=``: compact, UTF-8, no NaN."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


@dataclass(frozen=True)
class Reply:
    """A whole HTTP answer, read as :class:`httpx.Response` reads one.

    >>> reply = Reply(200, {"content-type": "application/json"}, b'{"sql": "SELECT 1"}')
    >>> reply.is_success, reply.json(), reply.text
    (True, {'sql': 'SELECT 1'}, '{"sql": "SELECT 1"}')
    >>> Reply(503, {"retry-after": "2"}, b"busy").headers.get("retry-after")
    '2'
    """

    status_code: int
    headers: Mapping[str, str]
    """Names in lower case; a repeated header's values joined with commas."""
    content: bytes
    """The body, its content coding removed."""

    @property
    def is_success(self) -> bool:
        return 200 <= self.status_code < 300

    @property
    def text(self) -> str:
        """The body in the charset its content type names, else UTF-8 (as httpx decodes)."""
        message = Message()
        message["content-type"] = self.headers.get("content-type", "")
        charset = message.get_param("charset")
        try:
            return self.content.decode(str(charset) if charset else "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class Lane:
    """One HTTP/1.1 connection to one origin, opened when first needed and again whenever the
    server closed it; one request at a time. Use as an async context manager."""

    def __init__(
        self,
        headers: Mapping[str, str],
        tls: ssl.SSLContext,
        connect_timeout_s: float,
    ) -> None:
        merged = httpx.Headers(_DEFAULT_HEADERS)
        merged.update(dict(headers))
        self._headers = list(merged.raw)  # as written, not lower-cased
        self._tls = tls
        self._connect_timeout_s = connect_timeout_s
        self._origin: tuple[str, str, int] | None = None
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._state: h11.Connection | None = None

    async def post(self, url: httpx.URL, body: bytes) -> Reply:
        """POST ``body`` (JSON) to ``url`` and read the whole answer."""
        state, reader, writer = await self._connection(url)
        head = h11.Request(
            method=b"POST",
            target=url.raw_path,
            headers=[
                (b"Host", url.netloc),
                *self._headers,
                (b"Content-Length", str(len(body)).encode()),
                (b"Content-Type", b"application/json"),
            ],
        )
        try:
            events = (head, h11.Data(data=body), h11.EndOfMessage())
            writer.write(b"".join(state.send(event) or b"" for event in events))
            await writer.drain()
            response, content = await _answer(state, reader)
        except BaseException as error:  # a failure or a deadline: the connection is spent
            self._drop()
            converted = _as_httpx(error)
            if converted is error:
                raise
            raise converted from error
        if state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
        else:  # Connection: close, HTTP/1.0, or a body read to the end of the connection
            self._drop()
        headers: dict[str, str] = {}
        for name, value in response.headers:
            key, text = name.decode("latin-1"), value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return Reply(response.status_code, headers, _decoded(content, headers))

    async def _connection(
        self, url: httpx.URL
    ) -> tuple[h11.Connection, asyncio.StreamReader, asyncio.StreamWriter]:
        origin = (url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80))
        if self._streams is not None and (
            origin != self._origin or self._streams[0].at_eof() or self._streams[1].is_closing()
        ):
            self._drop()  # closed by the server while idle, or another origin
        if self._streams is None or self._state is None:
            self._streams = await _open(origin, self._tls, self._connect_timeout_s)
            self._state = h11.Connection(h11.CLIENT)
            self._origin = origin
        return self._state, *self._streams

    def _drop(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
        self._streams = self._state = None

    async def aclose(self) -> None:
        self._drop()

    async def __aenter__(self) -> Lane:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()


async def _open(
    origin: tuple[str, str, int], tls: ssl.SSLContext, timeout_s: float
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    scheme, host, port = origin
    secure = tls if scheme == "https" else None
    try:
        return await asyncio.wait_for(
            asyncio.open_connection(
                host, port, ssl=secure, server_hostname=host if secure else None, limit=_READ
            ),
            timeout_s,
        )
    except TimeoutError:
        raise httpx.ConnectTimeout(f"no connection to {host}:{port} within {timeout_s} s") from None
    except (OSError, ssl.SSLError) as error:
        raise httpx.ConnectError(f"{error.__class__.__name__}: {error}") from None


async def _answer(
    state: h11.Connection, reader: asyncio.StreamReader
) -> tuple[h11.Response, bytes]:
    """Read events until the whole response is in (informational responses skipped)."""
    response: h11.Response | None = None
    chunks: list[bytes] = []
    while True:
        event = state.next_event()
        if event is h11.NEED_DATA:
            state.receive_data(await reader.read(_READ))
        elif isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            assert response is not None  # h11 gives the head before the end
            return response, b"".join(chunks)
        elif isinstance(event, h11.ConnectionClosed):
            raise httpx.RemoteProtocolError("the server closed the connection without answering")


def _decoded(content: bytes, headers: Mapping[str, str]) -> bytes:
    """The body without its content coding (gzip and deflate, the ones a lane accepts, as
    httpx removes them); another coding, or a body that fails its own, is a decoding error.

    >>> _decoded(zlib.compress(b"hi"), {"content-encoding": "deflate"})
    b'hi'
    """
    codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        try:
            if coding == "gzip":
                content = zlib.decompress(content, zlib.MAX_WBITS | 16)
            elif coding == "deflate":
                try:
                    content = zlib.decompress(content)
                except zlib.error:  # raw deflate, without zlib's header
                    content = zlib.decompress(content, -zlib.MAX_WBITS)
            else:
                raise httpx.DecodingError(f"the body is in a coding not asked for: {coding}")
        except zlib.error as error:
            raise httpx.DecodingError(f"the body fails its {coding} coding: {error}") from None
    return content


def _as_httpx(error: BaseException) -> BaseException:
    """httpx's type for a transport failure (so it keeps its error class); anything else
    (a cancellation, a deadline) as it is."""
    if isinstance(error, httpx.HTTPError):
        return error
    if isinstance(error, h11.RemoteProtocolError):
        return httpx.RemoteProtocolError(str(error) or "the server broke HTTP/1.1")
    if isinstance(error, (OSError, ssl.SSLError, h11.LocalProtocolError)):
        return httpx.ReadError(f"{error.__class__.__name__}: {error}")
    return error
