"""The judge client: one request per item over httpx, bounded concurrency and retries.

Retried, with back-off that honours ``Retry-After`` (the SUT client's policy): HTTP 429, any 5xx
and connection failures. Not retried: other 4xx and timeouts. Whatever happens, each item ends
with a :class:`~t2s_pipeline.judge.verdict.Verdict`: a category, or a failure class. Nothing
is raised out of :meth:`JudgeClient.judge_all`.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from t2s_pipeline.config import JudgeSettings
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.judge.prompt import SYSTEM_PROMPT, JudgeInput, user_message
from t2s_pipeline.judge.verdict import Verdict
from t2s_pipeline.judge.wire import Shape, WireRequest, build_request, read_response
from t2s_pipeline.sut.retry import RetryPolicy, retryable_status

DEFAULT_BASE_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com"}


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where the judge model is and how to talk to it.

    ``key_env`` names the environment variable holding the key; ``api_key`` is its value (None
    when unset, which records ``no_key`` on every item rather than sending unauthenticated).
    """

    shape: Shape
    base_url: str
    key_env: str | None = None
    api_key: str | None = None
    timeout_s: float = 60.0
    connect_timeout_s: float = 5.0
    concurrency: int = 4
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(max_attempts=4))

    @property
    def missing_key(self) -> bool:
        return self.key_env is not None and not self.api_key


def endpoint_from_settings(
    settings: JudgeSettings, environ: Mapping[str, str] | None = None
) -> JudgeEndpoint:
    """The endpoint a run configuration's ``judge:`` block names; the key read from ``environ``.

    >>> endpoint_from_settings(JudgeSettings(model="m"), {}).base_url
    'https://api.openai.com'
    """
    if not settings.model:
        raise ConfigError(
            "field 'judge.model': required when the judge is enabled. Fix: add model: <name>"
        )
    environ = os.environ if environ is None else environ
    base = (settings.base_url or DEFAULT_BASE_URLS[settings.api]).rstrip("/")
    # Accept a base URL given with its /v1 suffix: the paths below add it.
    base = base.removesuffix("/v1")
    key = environ.get(settings.key_env) if settings.key_env else None
    return JudgeEndpoint(Shape(settings.api, settings.model), base, settings.key_env, key)


@dataclass(frozen=True)
class JudgeReply:
    """One item's outcome with its transport facts."""

    verdict: Verdict
    raw: str | None
    attempts: int
    status: int | None
    latency_s: float


@dataclass(frozen=True)
class _Attempt:
    reply: JudgeReply | None  # a final answer (a verdict of any kind)
    verdict: Verdict  # what to record if this turns out to be the last attempt
    status: int | None = None
    retry: bool = False
    retry_after: str | None = None


class JudgeClient:
    """Asks the judge model about items; each :meth:`judge_all` opens and closes its connections.

    >>> replies = asyncio.run(JudgeClient(endpoint).judge_all(inputs))  # doctest: +SKIP
    """

    def __init__(self, endpoint: JudgeEndpoint, rng: random.Random | None = None) -> None:
        self.endpoint = endpoint
        self._rng = rng or random.Random()

    async def judge_all(self, inputs: Sequence[JudgeInput]) -> list[JudgeReply]:
        """One reply per input, in order, over at most ``concurrency`` requests in flight."""
        if self.endpoint.missing_key:
            message = f"environment variable {self.endpoint.key_env} is not set; nothing sent"
            return [JudgeReply(Verdict.failed("no_key", message), None, 0, None, 0.0)] * len(inputs)
        lanes = asyncio.Semaphore(self.endpoint.concurrency)
        async with self._http() as http:

            async def one(item: JudgeInput) -> JudgeReply:
                async with lanes:
                    return await self._judge(http, item)

            return list(await asyncio.gather(*(one(item) for item in inputs)))

    def _http(self) -> httpx.AsyncClient:
        endpoint = self.endpoint
        return httpx.AsyncClient(
            base_url=endpoint.base_url,
            timeout=httpx.Timeout(endpoint.timeout_s, connect=endpoint.connect_timeout_s),
            limits=httpx.Limits(max_connections=endpoint.concurrency),
        )

    async def _judge(self, http: httpx.AsyncClient, item: JudgeInput) -> JudgeReply:
        endpoint = self.endpoint
        request = build_request(endpoint.shape, endpoint.api_key, SYSTEM_PROMPT, user_message(item))
        start = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            last = await self._attempt(http, request)
            if last.reply is not None:
                return _timed(last.reply, attempt, start)
            if not last.retry or attempt >= endpoint.retry.max_attempts:
                return JudgeReply(
                    last.verdict, None, attempt, last.status, time.perf_counter() - start
                )
            await asyncio.sleep(endpoint.retry.delay(attempt, last.retry_after, self._rng))

    async def _attempt(self, http: httpx.AsyncClient, request: WireRequest) -> _Attempt:
        try:
            response = await http.post(request.path, json=request.body, headers=request.headers)
        except httpx.ConnectTimeout as error:
            return _Attempt(None, Verdict.failed("connect", f"{error!r}"), retry=True)
        except httpx.TimeoutException as error:
            # A slow judge is usually slow again: record it rather than wait several times.
            return _Attempt(None, Verdict.failed("timeout", f"{type(error).__name__}"))
        except httpx.TransportError as error:
            return _Attempt(None, Verdict.failed("connect", f"{error!r}"), retry=True)
        status = response.status_code
        if response.is_success:
            reading = read_response(self.endpoint.shape.api, response.content)
            return _Attempt(
                JudgeReply(reading.verdict, reading.raw, 0, status, 0.0), reading.verdict
            )
        kind = "rate_limited" if status == 429 else "http_status"
        verdict = Verdict.failed(kind, f"HTTP {status}: {response.text[:200]}")
        return _Attempt(
            None,
            verdict,
            status,
            retry=retryable_status(status),
            retry_after=response.headers.get("retry-after"),
        )


def _timed(reply: JudgeReply, attempts: int, start: float) -> JudgeReply:
    return JudgeReply(reply.verdict, reply.raw, attempts, reply.status, time.perf_counter() - start)
