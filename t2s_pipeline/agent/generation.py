"""Turning what was retrieved into SQL: the generators behind ``/v1/ask``.

``NearestExample`` is the classic retrieval baseline: the SQL of the nearest allowed example
is returned as the answer, and when no allowed example shares a word with the question the
agent refuses and says why. ``SchemaLinking`` (``linking.py``) reads the question against the
offered tables; ``ChatCompletions`` (``llm.py``) asks a chat model.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t2s_pipeline.sut.contract import RetrieveResponse

NOTHING_ALLOWED = "no allowed example shares a word with the question; refusing to guess"


@dataclass(frozen=True)
class Generation:
    """The agent's answer before it goes on the wire."""

    sql: str | None
    refused: bool = False
    message: str | None = None


@dataclass(frozen=True)
class AskContext:
    """What the request says about the snapshot (SPEC section 14 ``context``): its "today"."""

    as_of: dt.date | None = None

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> AskContext:
        """Read ``context.as_of`` from a request body; a missing or malformed one is None.

        >>> AskContext.from_body({"context": {"as_of": "2025-06-30"}}).as_of
        datetime.date(2025, 6, 30)
        >>> AskContext.from_body({"context": "today"}).as_of is None
        True
        """
        context = body.get("context")
        value = context.get("as_of") if isinstance(context, Mapping) else None
        if not isinstance(value, str):
            return cls()
        try:
            return cls(dt.date.fromisoformat(value[:10]))
        except ValueError:
            return cls()


class GenerationError(Exception):
    """The generation backend failed (the agent answers 502, not a refusal)."""


class Generator(ABC):
    """Writes SQL for a question from what the retriever offered."""

    @abstractmethod
    async def generate(
        self,
        question: str,
        evidence: str | None,
        offered: RetrieveResponse,
        context: AskContext | None = None,
    ) -> Generation:
        """The SQL (or a refusal) for one question."""


class NearestExample(Generator):
    """Answer with the nearest allowed example's SQL (retrieval is the whole model)."""

    async def generate(
        self,
        question: str,
        evidence: str | None,
        offered: RetrieveResponse,
        context: AskContext | None = None,
    ) -> Generation:
        if not offered.examples:
            return Generation(None, refused=True, message=NOTHING_ALLOWED)
        nearest = offered.examples[0]
        return Generation(nearest.sql, message=f"nearest example: {nearest.id}")
