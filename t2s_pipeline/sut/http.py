"""The live client: items over HTTP to a running SUT, with bounded concurrency and retries.

Each item is one ask (``POST`` ask path) and, when the service has a retrieve endpoint, one
probe with the same question and exclusions. Every attempt has a total deadline (so a body
that trickles in slowly still times out); failures are classified, retried when the policy
says so, and recorded on the item. The run always continues.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.client import (
    Item,
    ItemOutcome,
    Progress,
    SutClient,
    check_run_id,
    in_lanes,
)
from t2s_pipeline.sut.contract import (
    AskRequest,
    AskResponse,
    FieldNames,
    Health,
    Paths,
    RequestContext,
    RetrieveRequest,
    RetrieveResponse,
    from_wire,
    put_path,
    to_wire,
)
from t2s_pipeline.sut.lane import Lane, Reply, direct_ok, encode_json
from t2s_pipeline.sut.retry import RetryPolicy, retryable_status

M = TypeVar("M", bound=BaseModel)
_SNIPPET = 200


@dataclass(frozen=True)
class HttpSettings:
    """How to reach one SUT. ``request_timeout_s`` bounds one attempt, body included."""

    base_url: str
    concurrency: int = 4
    connect_timeout_s: float = 5.0
    request_timeout_s: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    field_names: FieldNames = field(default_factory=FieldNames)
    paths: Paths = field(default_factory=Paths)
    headers: Mapping[str, str] = field(default_factory=dict)
    probe: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields added to every request body (keys may be dotted paths); string values may hold
    ``{as_of}``, ``{dialect}``, ``{domain}`` and ``{run_id}``, see :func:`expand_extra`."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise SutError(f"concurrency must be at least 1, not {self.concurrency}")
        if not self.base_url.startswith(("http://", "https://")):
            raise SutError(f"base_url {self.base_url!r} must start with http:// or https://")
        expand_extra(self.extra, None, "")  # an unknown placeholder fails here, not per item


@dataclass(frozen=True)
class _Attempt(Generic[M]):
    value: M | None
    error_class: str | None = None
    status: int | None = None
    message: str | None = None
    retry: bool = False
    retry_after: str | None = None


@dataclass(frozen=True)
class _Call(Generic[M]):
    last: _Attempt[M]
    attempts: int
    latency_s: float


class HttpSutClient(SutClient):
    """SUT client over HTTP (httpx). Use as a context manager or call :meth:`close`.

    >>> client = HttpSutClient(HttpSettings("http://127.0.0.1:8900"))  # doctest: +SKIP
    >>> client.health().supports_exclusions  # doctest: +SKIP
    True
    """

    def __init__(self, settings: HttpSettings, rng: random.Random | None = None) -> None:
        self.settings = settings
        self._rng = rng or random.Random()
        # One TLS context for every lane: building one costs ~20 ms of CPU per client.
        self._tls = ssl.create_default_context()
        self._sync = httpx.Client(
            base_url=settings.base_url,
            timeout=self._timeout(),
            headers=dict(settings.headers),
            verify=self._tls,
        )
        self._urls: dict[str, httpx.URL] = {}
        self._direct = direct_ok(settings.base_url)

    def health(self) -> Health:
        """GET the health path; an unreachable or malformed health is a :class:`SutError`."""
        url = self.settings.base_url.rstrip("/") + self.settings.paths.health
        try:
            response = self._sync.get(url)
            data = response.json() if response.is_success else None
        except (httpx.HTTPError, ValueError) as error:
            raise SutError(
                f"cannot read the SUT health at {url}: {error}; is it running?"
            ) from None
        if data is None:
            raise SutError(f"SUT health at {url} answered HTTP {response.status_code}")
        try:
            self._health = from_wire(data, Health, self.settings.field_names)
        except ValueError as error:
            raise SutError(f"SUT health at {url} is not a health document: {error}") from None
        return self._health

    def close(self) -> None:
        """Close the health connection (ask connections live only inside :meth:`ask_all`)."""
        self._sync.close()

    async def ask_all(
        self, items: Sequence[Item], run_id: str, progress: Progress | None = None
    ) -> list[ItemOutcome]:
        """Ask every item over ``concurrency`` lanes; order kept, nothing dropped.

        Each lane owns one connection and takes the next item when it is free, which bounds
        the requests in flight. One small pool per lane rather than one shared pool: httpcore's
        pool does work proportional to connections x waiting requests on every event, which
        made the client, not the SUT, the bottleneck at concurrency 16.
        """
        check_run_id(run_id)
        return await in_lanes(
            items,
            self.settings.concurrency,
            lambda http, item: self._item(http, item, run_id),
            progress,
            self._async_client,
        )

    def _async_client(self) -> Lane | httpx.AsyncClient:
        """A lane's connection: its own (:mod:`~t2s_pipeline.sut.lane`) when nothing asks for
        more than HTTP/1.1 to one origin, else an httpx client."""
        if self._direct:
            return Lane(self.settings.headers, self._tls, self.settings.connect_timeout_s)
        return httpx.AsyncClient(
            base_url=self.settings.base_url,
            timeout=self._timeout(),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            headers=dict(self.settings.headers),
            verify=self._tls,
        )

    def _timeout(self) -> httpx.Timeout:
        return httpx.Timeout(
            self.settings.request_timeout_s, connect=self.settings.connect_timeout_s
        )

    async def _item(self, http: Lane | httpx.AsyncClient, item: Item, run_id: str) -> ItemOutcome:
        names, paths = self.settings.field_names, self.settings.paths
        ask = AskRequest(
            question=item.question,
            exclude_examples=item.exclude,
            run_id=run_id,
            evidence=item.evidence,
            context=item.context,
        )
        extra = expand_extra(self.settings.extra, item.context, run_id)
        call = await self._call(
            http, paths.ask, with_extra(to_wire(ask, names), extra), AskResponse
        )
        probe: _Call[RetrieveResponse] | None = None
        if paths.retrieve is not None and self.settings.probe:
            request = RetrieveRequest(
                question=item.question, exclude_examples=item.exclude, context=item.context
            )
            payload = with_extra(to_wire(request, names), extra)
            probe = await self._call(http, paths.retrieve, payload, RetrieveResponse)
        return ItemOutcome(
            item_id=item.item_id,
            response=call.last.value,
            probe=None if probe is None else probe.last.value,
            error_class=call.last.error_class,
            status=call.last.status,
            message=call.last.message,
            attempts=call.attempts,
            latency_s=call.latency_s,
            probe_error_class=None if probe is None else probe.last.error_class,
            probe_message=None if probe is None else probe.last.message,
        )

    async def _call(
        self, http: Lane | httpx.AsyncClient, path: str, payload: dict[str, object], model: type[M]
    ) -> _Call[M]:
        policy = self.settings.retry
        start = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            last = await self._attempt(http, path, payload, model)
            if last.value is not None or not last.retry or attempt >= policy.max_attempts:
                return _Call(last, attempt, time.perf_counter() - start)
            await asyncio.sleep(policy.delay(attempt, last.retry_after, self._rng))

    def _url(self, path: str) -> httpx.URL:
        """The absolute URL of ``path`` under the base URL, merged once (as httpx merges it;
        an httpx client parses and merges a relative path again for every request)."""
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = self._sync.build_request("POST", path).url
        return url

    async def _attempt(
        self, http: Lane | httpx.AsyncClient, path: str, payload: dict[str, object], model: type[M]
    ) -> _Attempt[M]:
        deadline = self.settings.request_timeout_s
        response: httpx.Response | Reply
        try:
            async with asyncio.timeout(deadline):
                if isinstance(http, Lane):
                    response = await http.post(self._url(path), encode_json(payload))
                else:
                    response = await http.post(self._url(path), json=payload)
        except TimeoutError:
            return _Attempt(None, "timeout", message=f"no complete answer within {deadline} s")
        except httpx.ConnectTimeout as error:
            return _Attempt(None, "timeout", message=_describe(error), retry=True)
        except httpx.TimeoutException as error:
            return _Attempt(None, "timeout", message=_describe(error))
        except httpx.TransportError as error:
            return _Attempt(None, "connect", message=_describe(error), retry=True)
        except httpx.HTTPError as error:  # e.g. a body that fails its Content-Encoding
            return _Attempt(None, "invalid_response", message=_describe(error))
        return _read(response, model, self.settings.field_names)


PLACEHOLDERS = ("as_of", "dialect", "domain", "run_id")


def expand_extra(
    extra: Mapping[str, Any], context: RequestContext | None, run_id: str
) -> dict[str, Any]:
    """The extra request fields with their placeholders filled in (``{{`` is a brace).

    >>> ctx = RequestContext(as_of="2025-06-30", dialect="duckdb", domain="erp")
    >>> expand_extra({"options": {"today": "{as_of}", "n": 3}, "db": "{domain}"}, ctx, "r1")
    {'options': {'today': '2025-06-30', 'n': 3}, 'db': 'erp'}
    >>> expand_extra({"x": "{today}"}, ctx, "r1")
    Traceback (most recent call last):
    t2s_pipeline.errors.SutError: extra field 'x': unknown placeholder {today}; use {as_of}, {dialect}, {domain} or {run_id} (write {{ for a literal brace)
    """
    values = {
        "as_of": (context.as_of if context else None) or "",
        "dialect": context.dialect if context else "",
        "domain": context.domain if context else "",
        "run_id": run_id,
    }

    def fill(value: Any, where: str) -> Any:
        if isinstance(value, str):
            try:
                return value.format_map(values)
            except KeyError as error:
                raise SutError(
                    f"extra field {where!r}: unknown placeholder {{{error.args[0]}}}; use "
                    + ", ".join(f"{{{n}}}" for n in PLACEHOLDERS[:-1])
                    + f" or {{{PLACEHOLDERS[-1]}}} (write {{{{ for a literal brace)"
                ) from None
            except (ValueError, IndexError) as error:
                raise SutError(f"extra field {where!r}: {error} in {value!r}") from None
        if isinstance(value, Mapping):
            return {k: fill(v, f"{where}.{k}") for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [fill(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    return {key: fill(value, key) for key, value in extra.items()}


def with_extra(payload: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """The request body with the extra fields set (a dotted key is a nested path)."""
    for key, value in extra.items():
        put_path(payload, key, value)
    return payload


def _read(response: httpx.Response | Reply, model: type[M], names: FieldNames) -> _Attempt[M]:
    status = response.status_code
    if not response.is_success:
        return _Attempt(
            None,
            "http_status",
            status,
            f"HTTP {status}: {response.text[:_SNIPPET]}",
            retry=retryable_status(status),
            retry_after=response.headers.get("retry-after"),
        )
    try:
        data = response.json()
    except ValueError:
        return _Attempt(None, "invalid_response", status, f"not JSON: {response.text[:_SNIPPET]!r}")
    try:
        return _Attempt(from_wire(data, model, names), status=status)
    except ValueError as error:
        return _Attempt(None, "invalid_response", status, f"not a {model.__name__}: {error}")


def _describe(error: Exception) -> str:
    text = str(error) or "no detail"
    return f"{type(error).__name__}: {text}"[:_SNIPPET]
