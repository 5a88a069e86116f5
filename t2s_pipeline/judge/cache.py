"""The judge's response cache: table ``judge_cache`` keyed by (model, prompt hash, inputs
hash), shared by every run (each run adds a fragment; the latest answer per key wins), so a rerun of the same evidence reads the model's earlier answer.

Only the model's own answers are kept (verdicts, refusals, malformed or unknown categories):
a timeout or a 5xx says nothing about the model and is asked again next time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from t2s_pipeline.judge.verdict import Verdict
from t2s_pipeline.store import ResultsStore

CACHE_TABLE = "judge_cache"
_KEY = ["model", "prompt_hash", "inputs_hash"]
_TEXT = [*_KEY, "category", "explanation", "failure_class", "message", "raw"]


@dataclass(frozen=True)
class CacheKey:
    model: str
    prompt_hash: str
    inputs_hash: str


@dataclass(frozen=True)
class CachedAnswer:
    verdict: Verdict
    raw: str | None


class JudgeCache:
    """Read and extend the cache in one results store.

    >>> cache = JudgeCache(ResultsStore(".t2s/results"))  # doctest: +SKIP
    >>> cache.load("claude-x")[key].verdict.category  # doctest: +SKIP
    'wrong_filter'
    """

    def __init__(self, store: ResultsStore) -> None:
        self.store = store

    def load(self, model: str) -> dict[CacheKey, CachedAnswer]:
        """Every cached answer of one model."""
        data = self.store.read(CACHE_TABLE)
        if data.empty:
            return {}
        # Runs add fragments concurrently; the latest answer for a key wins.
        data = data.sort_values("created_at", kind="stable").drop_duplicates(_KEY, keep="last")
        return {
            CacheKey(r.model, r.prompt_hash, r.inputs_hash): CachedAnswer(
                Verdict(
                    _text(r.category),
                    _text(r.explanation),
                    _text(r.failure_class),
                    _text(r.message),
                ),
                _text(r.raw),
            )
            for r in data[data["model"] == model].itertuples(index=False)
        }

    def save(self, answers: Mapping[CacheKey, CachedAnswer]) -> int:
        """Add answers (a key already present is replaced); returns how many were written."""
        if not answers:
            return 0
        incoming = pd.DataFrame([_row(key, answer) for key, answer in answers.items()])
        incoming = incoming.astype({c: "string" for c in _TEXT})
        return self.store.append(CACHE_TABLE, incoming)


def _row(key: CacheKey, answer: CachedAnswer) -> dict[str, object]:
    verdict = answer.verdict
    return {
        "model": key.model,
        "prompt_hash": key.prompt_hash,
        "inputs_hash": key.inputs_hash,
        "category": verdict.category,
        "explanation": verdict.explanation,
        "failure_class": verdict.failure_class,
        "message": verdict.message,
        "raw": answer.raw,
        "created_at": dt.datetime.now(dt.UTC).replace(tzinfo=None),
    }


def _text(value: object) -> str | None:
    return None if value is None or pd.isna(value) else str(value)
