"""BM25 retrieval over table documents and the example bank, honouring exclusions.

Only documents that share at least one word with the question are retrieved (a zero BM25 score
is no evidence of relevance). Excluded cases are removed before ranking, so neither their ids
nor their SQL can come back, whatever k is.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence

import bm25s
import numpy as np

from t2s_pipeline.agent.documents import BankEntry, table_text
from t2s_pipeline.agent.tokens import tokenize
from t2s_pipeline.sut.contract import OfferedTable, RetrievedExample, RetrieveResponse

_RECENT = 64
"""Retrievals kept per retriever (the harness asks over a few lanes, then probes each)."""


class Bm25Index:
    """A BM25 index over texts; :meth:`scores` gives one score per text, in text order."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.size = len(texts)
        self._bm25: bm25s.BM25 | None = None
        if texts:
            self._bm25 = bm25s.BM25()
            self._bm25.index([tokenize(text) for text in texts], show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for the query (all zeros when no word is shared)."""
        words = tokenize(query)
        if self._bm25 is None or not self._bm25.get_tokens_ids(words):
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(words))


def ranked(
    scores: np.ndarray, allowed: np.ndarray | None = None, top: int | None = None
) -> list[int]:
    """Indices with a positive score (and allowed), best first; ties keep document order.
    With ``top``, only the start of that ranking: its first ``top`` indices and any that tie
    with the last of them (a bank of 10,000 wordings is then not sorted whole per question).

    >>> ranked(np.array([0.5, 0.0, 2.0, 0.5]))
    [2, 0, 3]
    >>> ranked(np.array([0.5, 0.0, 2.0, 0.5, 0.1]), top=2)
    [2, 0, 3]
    """
    keep = scores > 0 if allowed is None else (scores > 0) & allowed
    candidates = np.flatnonzero(keep)  # ascending, so a stable sort keeps document order
    values = scores[candidates]
    if top is not None and 0 < top < len(candidates):
        # Every candidate at least as good as the top-th best: exactly the ranking's start.
        cut = len(values) - top
        inside = values >= np.partition(values, cut)[cut]
        candidates, values = candidates[inside], values[inside]
    ordered: list[int] = candidates[np.argsort(-values, kind="stable")].tolist()
    return ordered


class Retriever:
    """Top-k tables and top-k examples (one per case) for a question."""

    def __init__(
        self,
        tables: Sequence[OfferedTable],
        bank: Sequence[BankEntry],
        tables_k: int = 4,
        examples_k: int = 3,
    ) -> None:
        self.tables = tuple(tables)
        self.bank = tuple(bank)
        self.tables_k = tables_k
        self.examples_k = examples_k
        self._table_index = Bm25Index([table_text(t) for t in self.tables])
        self._bank_index = Bm25Index([entry.wording for entry in self.bank])
        self._rows: dict[str, list[int]] = {}  # the bank rows of each case (its wordings)
        for row, entry in enumerate(self.bank):
            self._rows.setdefault(entry.case_id, []).append(row)
        # The ranking's first examples_k x (most wordings of a case) rows hold examples_k
        # cases whenever the whole ranking does.
        self._example_rows = examples_k * max((len(r) for r in self._rows.values()), default=1)
        self._recent: OrderedDict[tuple[str, frozenset[str]], RetrieveResponse] = OrderedDict()
        self._lock = threading.Lock()

    def retrieve(self, question: str, exclude: Collection[str] = ()) -> RetrieveResponse:
        """What the retriever offers for a question, never an excluded case. The last few
        answers are kept: the harness probes the retriever with the question and exclusions
        it has just asked with, and the answer is the same (retrieval is deterministic)."""
        key = (question, frozenset(exclude))
        with self._lock:
            found = self._recent.get(key)
            if found is not None:
                self._recent.move_to_end(key)
                return found
        response = RetrieveResponse(
            tables=self.offered_tables(question), examples=self.examples(question, exclude)
        )
        with self._lock:
            self._recent[key] = response
            while len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return response

    def offered_tables(self, question: str) -> tuple[OfferedTable, ...]:
        """The ``tables_k`` best-matching table documents."""
        best = ranked(self._table_index.scores(question), top=self.tables_k)[: self.tables_k]
        return tuple(self.tables[i] for i in best)

    def examples(self, question: str, exclude: Collection[str]) -> tuple[RetrievedExample, ...]:
        """The ``examples_k`` nearest allowed cases, each once (its best wording decides)."""
        allowed = None
        if exclude:  # by row: comparing every bank entry with every excluded id was O(n x k)
            allowed = np.ones(len(self.bank), dtype=bool)
            for case_id in exclude:
                allowed[self._rows.get(case_id, [])] = False
        found: dict[str, BankEntry] = {}
        for i in ranked(self._bank_index.scores(question), allowed, self._example_rows):
            if len(found) >= self.examples_k:
                break
            found.setdefault(self.bank[i].case_id, self.bank[i])
        return tuple(
            RetrievedExample(id=e.case_id, question=e.question, sql=e.sql) for e in found.values()
        )
