"""The in-process client: a SUT written in Python, called as ``package.module:function``.

A team whose text-to-SQL system is a Python function evaluates it without serving it::

    sut:
      kind: python
      callable: mycompany.t2s.service:answer      # def answer(request: AskRequest) -> ...
      retrieve: mycompany.t2s.service:retrieve    # optional: the probe
      supports_exclusions: true                   # the function honours exclude_examples

The function receives the typed :class:`~t2s_pipeline.sut.contract.AskRequest` (question,
exclusions, run id, evidence, context) and returns an
:class:`~t2s_pipeline.sut.contract.AskResponse` or a mapping read like a JSON answer (the
configuration's ``fields`` apply). It may be sync (run in a worker thread) or async. A raised
exception, a wrong return or a call past the timeout is recorded on its item, and the run goes
on, as for HTTP.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.metadata
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

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
    RetrieveRequest,
    RetrieveResponse,
    from_wire,
)

M = TypeVar("M", bound=BaseModel)
_SNIPPET = 200


def load_callable(target: str) -> Callable[..., Any]:
    """Import ``package.module:function`` (the function may be a dotted attribute path).

    >>> load_callable("json:dumps")([1])
    '[1]'
    >>> load_callable("json")
    Traceback (most recent call last):
    t2s_pipeline.errors.SutError: callable 'json' is not 'package.module:function'; write the module, a colon and the function name
    """
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise SutError(
            f"callable {target!r} is not 'package.module:function'; write the module, a colon "
            "and the function name"
        )
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise SutError(
            f"callable {target!r}: cannot import {module_name!r} ({error}); install the package "
            "or run from the folder that holds it"
        ) from None
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SutError(
                f"callable {target!r}: {module_name} has no attribute {attribute!r}"
            ) from None
    if not callable(value):
        raise SutError(f"callable {target!r} is a {type(value).__name__}, not a function")
    return value  # type: ignore[no-any-return]


def callable_fingerprint(target: str) -> str:
    """What identifies the function's code: its distribution's version when it is installed
    from one, and the hash of the module's source file.

    >>> callable_fingerprint("json:dumps").startswith("json:")
    True
    """
    module_name = target.partition(":")[0]
    module = importlib.import_module(module_name)
    parts = [module_name]
    top = module_name.split(".")[0]
    for distribution in importlib.metadata.packages_distributions().get(top, []):
        try:
            parts.append(f"{distribution}=={importlib.metadata.version(distribution)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    source = getattr(module, "__file__", None)
    if source and Path(source).is_file():
        parts.append(hashlib.sha256(Path(source).read_bytes()).hexdigest()[:12])
    return ":".join(parts)


@dataclass(frozen=True)
class PythonSettings:
    """How to call one in-process SUT; ``timeout_s`` bounds one call."""

    ask: str
    retrieve: str | None = None
    supports_exclusions: bool = False
    concurrency: int = 4
    timeout_s: float = 30.0
    field_names: FieldNames = field(default_factory=FieldNames)
    version: str | None = None


class PythonSutClient(SutClient):
    """SUT client calling Python functions in this process."""

    def __init__(self, settings: PythonSettings) -> None:
        if settings.concurrency < 1:
            raise SutError(f"concurrency must be at least 1, not {settings.concurrency}")
        self.settings = settings
        self._ask = load_callable(settings.ask)
        self._retrieve = None if settings.retrieve is None else load_callable(settings.retrieve)

    def health(self) -> Health:
        """The function is importable (checked at construction); exclusions as configured."""
        self._health = Health(
            status="ok",
            supports_exclusions=self.settings.supports_exclusions,
            version=self.settings.version,
        )
        return self._health

    def close(self) -> None:
        """Nothing to release: the functions live in this process."""

    async def ask_all(
        self, items: Sequence[Item], run_id: str, progress: Progress | None = None
    ) -> list[ItemOutcome]:
        """Call the function for every item over ``concurrency`` lanes; order kept."""
        check_run_id(run_id)
        return await in_lanes(
            items, self.settings.concurrency, lambda _, item: self._item(item, run_id), progress
        )

    async def _item(self, item: Item, run_id: str) -> ItemOutcome:
        request = AskRequest(
            question=item.question,
            exclude_examples=item.exclude,
            run_id=run_id,
            evidence=item.evidence,
            context=item.context,
        )
        started = time.perf_counter()
        response, error_class, message = await self._call(self._ask, request, AskResponse)
        latency = time.perf_counter() - started
        probe: RetrieveResponse | None = None
        probe_error: tuple[str | None, str | None] = (None, None)
        if self._retrieve is not None:
            probe_request = RetrieveRequest(
                question=item.question, exclude_examples=item.exclude, context=item.context
            )
            probe, *rest = await self._call(self._retrieve, probe_request, RetrieveResponse)
            probe_error = (rest[0], rest[1])
        return ItemOutcome(
            item_id=item.item_id,
            response=response,
            probe=probe,
            error_class=error_class,
            status=None,
            message=message,
            attempts=1,
            latency_s=latency,
            probe_error_class=probe_error[0],
            probe_message=probe_error[1],
        )

    async def _call(
        self, function: Callable[..., Any], request: BaseModel, model: type[M]
    ) -> tuple[M | None, str | None, str | None]:
        timeout = self.settings.timeout_s
        try:
            async with asyncio.timeout(timeout):
                if inspect.iscoroutinefunction(function):
                    value = await function(request)
                else:
                    value = await asyncio.to_thread(function, request)
                    if inspect.isawaitable(value):
                        value = await _awaited(value)
        except TimeoutError:
            return None, "timeout", f"no answer within {timeout} s"
        except Exception as error:  # the SUT's own failure, recorded on the item
            return None, "exception", f"{type(error).__name__}: {error}"[:_SNIPPET]
        if isinstance(value, model):
            return value, None, None
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        try:
            return from_wire(value, model, self.settings.field_names), None, None
        except ValueError as error:
            got = type(value).__name__
            return None, "invalid_response", f"returned a {got}, not a {model.__name__}: {error}"


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
