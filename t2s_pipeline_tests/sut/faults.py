"""A fault-injecting SUT on real loopback HTTP: each question names the fault it gets.

A question is ``<fault>:<n>``; the server counts attempts per question so a fault can heal
(``flaky500`` fails twice, then answers). It also records the peak number of requests in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

GOOD = {
    "sql": "SELECT 1",
    "refused": False,
    "message": None,
    "retrieval": {"tables": [{"name": "sales.orders", "ddl": "CREATE TABLE sales.orders ()"}],
                  "examples": [{"id": "other"}]},
}  # fmt: skip
PROBE = {"tables": [{"name": "sales.orders", "ddl": "x"}], "examples": []}

# fault -> (expected error class or None, expected attempts with max_attempts=3)
FAULTS: dict[str, tuple[str | None, int]] = {
    "ok": (None, 1),
    "flaky500": (None, 3),
    "always500": ("http_status", 3),
    "r429": (None, 2),
    "hang": ("timeout", 1),
    "slowbody": ("timeout", 1),
    "slowok": (None, 1),
    "garbage": ("invalid_response", 1),
    "badshape": ("invalid_response", 1),
    "r400": ("http_status", 1),
    "truncated": ("connect", 3),
    "probe500": (None, 1),
}


@dataclass
class FaultServer:
    """The state behind the fault app: attempt times per question, requests in flight."""

    hang_s: float = 10.0
    arrivals: dict[str, list[float]] = field(default_factory=dict)
    in_flight: int = 0
    peak: int = 0

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/health", self.health, methods=["GET"]),
                Route("/v1/ask", _Raw(self, "ask"), methods=["POST"]),
                Route("/v1/retrieve", _Raw(self, "retrieve"), methods=["POST"]),
            ]
        )

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "supports_exclusions": True})

    async def respond(
        self, endpoint: str, question: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        fault = question.split(":")[0]
        if endpoint == "retrieve":
            status = 500 if fault == "probe500" else 200
            await JSONResponse(PROBE, status)(scope, receive, send)
            return
        seen = self.arrivals.setdefault(question, [])
        seen.append(time.monotonic())
        if fault == "hang":
            await self._hang(receive)
        await (await self._ask(fault, len(seen)))(scope, receive, send)

    async def _hang(self, receive: Receive) -> None:
        """Say nothing until the client gives up (or ``hang_s`` passes), so a request counts
        as in flight exactly as long as the client keeps it open."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.hang_s):
                while (await receive())["type"] != "http.disconnect":
                    pass

    async def _ask(self, fault: str, attempt: int) -> Response:
        if fault == "flaky500" and attempt < 3 or fault == "always500":
            return JSONResponse({"error": "internal"}, 500)
        if fault == "r429" and attempt == 1:
            return JSONResponse({"error": "slow down"}, 429, headers={"Retry-After": "1"})
        if fault in ("slowbody", "slowok"):
            pause = 0.5 if fault == "slowbody" else 0.02  # 8 chunks: 4 s and 0.16 s
            return StreamingResponse(_trickle(pause), media_type="application/json")
        if fault == "garbage":
            return Response("<html>oops</html>", media_type="text/html")
        if fault == "badshape":
            return JSONResponse({"sql": 5, "refused": "no"})
        if fault == "r400":
            return JSONResponse({"error": "bad"}, 400)
        return JSONResponse(GOOD)


@dataclass(frozen=True)
class _Raw:
    """A raw ASGI endpoint, so the ``truncated`` fault can cut a body off mid-way."""

    server: FaultServer
    endpoint: str

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        question = str((await Request(scope, receive).json())["question"])
        self.server.in_flight += 1
        self.server.peak = max(self.server.peak, self.server.in_flight)
        try:
            if question.startswith("truncated") and self.endpoint == "ask":
                self.server.arrivals.setdefault(question, []).append(time.monotonic())
                await _truncated(send)
            else:
                await self.server.respond(self.endpoint, question, scope, receive, send)
        finally:
            self.server.in_flight -= 1


async def _truncated(send: Send) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", b"500")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b'{"sql": "SEL', "more_body": True})
    raise ConnectionResetError("cut off on purpose")


async def _trickle(pause: float) -> AsyncIterator[bytes]:
    text = bytes(JSONResponse(GOOD).body)
    for start in range(0, len(text), len(text) // 8 + 1):
        await asyncio.sleep(pause)
        yield text[start : start + len(text) // 8 + 1]
