"""Turning what was retrieved into SQL: the classic nearest-example baseline.

The SQL of the nearest allowed example is returned as the answer. When no allowed example
shares a word with the question, the agent refuses and says why.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from t2s_pipeline.sut.contract import RetrieveResponse

NOTHING_ALLOWED = "no allowed example shares a word with the question; refusing to guess"


@dataclass(frozen=True)
class Generation:
    """The agent's answer before it goes on the wire."""

    sql: str | None
    refused: bool = False
    message: str | None = None


class GenerationError(Exception):
    """The generation backend failed (the agent answers 502, not a refusal)."""


class Generator(ABC):
    """Writes SQL for a question from what the retriever offered."""

    @abstractmethod
    async def generate(
        self, question: str, evidence: str | None, offered: RetrieveResponse
    ) -> Generation:
        """The SQL (or a refusal) for one question."""


class NearestExample(Generator):
    """Answer with the nearest allowed example's SQL (retrieval is the whole model)."""

    async def generate(
        self, question: str, evidence: str | None, offered: RetrieveResponse
    ) -> Generation:
        if not offered.examples:
            return Generation(None, refused=True, message=NOTHING_ALLOWED)
        nearest = offered.examples[0]
        return Generation(nearest.sql, message=f"nearest example: {nearest.id}")
