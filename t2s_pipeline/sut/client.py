"""Items sent to the system under test, what came back for each, and the abstract client.

An **item** is one (case, phrasing) pair; its exclusion list is the case and its twins
(SPEC section 4). Every item ends with exactly one :class:`ItemOutcome`: a response, or a
recorded error class with status, message, attempts and latency. Nothing is dropped.
"""

from __future__ import annotations

import asyncio
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.errors import SutError
from t2s_pipeline.progress import Progress
from t2s_pipeline.sut.contract import (
    RUN_ID_PATTERN,
    AskResponse,
    Health,
    RequestContext,
    RetrieveResponse,
)

ERROR_CLASSES: tuple[str, ...] = (
    "timeout",
    "connect",
    "http_status",
    "invalid_response",
    "exception",  # a Python SUT (kind python) raised
)
PHRASINGS: tuple[str, ...] = ("all", "main")


@dataclass(frozen=True)
class Item:
    """One (case, phrasing) pair sent to the SUT; ``item_id`` is ``<case_id>#<phrasing>``."""

    item_id: str
    case_id: str
    phrasing: int
    question: str
    exclude: tuple[str, ...]
    evidence: str | None = None
    context: RequestContext | None = None
    """The domain's pinned today, dialect and name, sent with every request (SPEC 14)."""


@dataclass(frozen=True)
class ItemOutcome:
    """What one item ended with.

    Exactly one of ``response`` and ``error_class`` is set. ``latency_s`` covers every attempt
    of the ask, back-off waits included. The probe is independent: ``probe`` is its answer,
    ``probe_error_class``/``probe_message`` its failure, and both are None when no probe was
    made (no retrieve endpoint, or a replayed run).
    """

    item_id: str
    response: AskResponse | None
    probe: RetrieveResponse | None
    error_class: str | None
    status: int | None
    message: str | None
    attempts: int
    latency_s: float
    probe_error_class: str | None = None
    probe_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.response is not None


class SutClient(ABC):
    """A way to put items to a system under test (live HTTP, or a replayed file).

    Call :meth:`health` first: it tells whether the SUT honours exclusions, exposed as
    :attr:`isolated` (False means every item counts under the ceiling ``not_isolated``).
    """

    _health: Health | None = None

    @abstractmethod
    def health(self) -> Health:
        """Ask the SUT whether it is up and can exclude examples; remembers the answer."""

    @abstractmethod
    async def ask_all(
        self, items: Sequence[Item], run_id: str, progress: Progress | None = None
    ) -> list[ItemOutcome]:
        """One outcome per item, in item order; ``progress(done, total)`` after each."""

    @abstractmethod
    def close(self) -> None:
        """Release connections and memory held by the client."""

    @property
    def isolated(self) -> bool:
        """Whether the SUT said it honours ``exclude_examples``; needs :meth:`health` first."""
        if self._health is None:
            raise SutError("call health() before reading isolated")
        return self._health.supports_exclusions

    def __enter__(self) -> SutClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def in_lanes(
    items: Sequence[Item],
    concurrency: int,
    ask: Callable[[Any, Item], Awaitable[ItemOutcome]],
    progress: Progress | None = None,
    lane_resource: Callable[[], AbstractAsyncContextManager[Any]] = nullcontext,
) -> list[ItemOutcome]:
    """Ask every item over ``concurrency`` lanes; order kept, nothing dropped.

    Each lane holds one ``lane_resource`` (an HTTP connection; nothing for an in-process SUT)
    and takes the next item when it is free, which bounds the requests in flight;
    ``ask(resource, item)`` answers one item.
    """
    outcomes: list[ItemOutcome | None] = [None] * len(items)
    queue = iter(enumerate(items))  # shared by the lanes; next() never awaits
    done = 0

    async def lane() -> None:
        nonlocal done
        async with lane_resource() as resource:
            for index, item in queue:
                outcomes[index] = await ask(resource, item)
                done += 1
                if progress is not None:
                    progress(done, len(items))

    await asyncio.gather(*(lane() for _ in range(min(concurrency, len(items)))))
    finished = [outcome for outcome in outcomes if outcome is not None]
    assert len(finished) == len(items)  # every lane ran to the end, or gather raised
    return finished


def check_run_id(run_id: str) -> None:
    """Raise :class:`SutError` unless ``run_id`` is ``[a-z0-9-]``, at most 64 characters."""
    if not run_id or not re.fullmatch(RUN_ID_PATTERN, run_id):
        raise SutError(f"run_id {run_id!r} must be 1-64 characters of [a-z0-9-]")


def item_id(case_id: str, phrasing: int) -> str:
    """The item key: ``<case_id>#<phrasing index>``, phrasing 0 being the main question."""
    return f"{case_id}#{phrasing}"


def build_items(
    case_set: CaseSet,
    twins: Mapping[str, frozenset[str]],
    phrasings: str = "all",
    isolate: bool = True,
) -> list[Item]:
    """The items of a case set, case by case, phrasing 0 first.

    Each item excludes its case and the case's twins (sorted), or nothing when ``isolate`` is
    False. ``phrasings="main"`` keeps phrasing 0 only. A case with two alternative
    phrasings gives the items ``<id>#0``, ``<id>#1`` and ``<id>#2``.
    """
    if phrasings not in PHRASINGS:
        raise SutError(f"phrasings must be one of {PHRASINGS}, not {phrasings!r}")
    domain = case_set.domain
    context = RequestContext(as_of=domain.as_of, dialect=domain.dialect, domain=domain.name)
    items: list[Item] = []
    for case in case_set.cases:
        exclude = tuple(sorted({case.id, *twins.get(case.id, frozenset())})) if isolate else ()
        questions = case.questions if phrasings == "all" else case.questions[:1]
        for index, question in enumerate(questions):
            items.append(
                Item(
                    item_id(case.id, index),
                    case.id,
                    index,
                    question,
                    exclude,
                    case.evidence,
                    context,
                )
            )
    return items
