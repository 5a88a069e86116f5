"""Judging a run's items through the cache: ask only what the cache does not hold.

Every item ends with a verdict (a category, or a failure class); cache hits and misses are
counted so a rerun can show it made no request.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from t2s_pipeline.judge.cache import CachedAnswer, CacheKey, JudgeCache
from t2s_pipeline.judge.client import JudgeClient, JudgeReply
from t2s_pipeline.judge.prompt import JudgeInput, inputs_hash, prompt_hash
from t2s_pipeline.judge.verdict import Verdict

DIAGNOSES_TABLE = "judge_diagnoses"
_COLUMNS: dict[str, str] = {
    "item_id": "string",
    "case_id": "string",
    "deterministic_category": "string",
    "category": "string",
    "explanation": "string",
    "failure_class": "string",
    "message": "string",
    "cached": "boolean",
    "attempts": "Int64",
    "latency_s": "Float64",
    "model": "string",
    "prompt_hash": "string",
    "inputs_hash": "string",
}


@dataclass(frozen=True)
class JudgedItem:
    item_id: str
    verdict: Verdict
    cached: bool
    attempts: int  # HTTP attempts made for it in this run (0 when cached)
    latency_s: float
    inputs_hash: str


@dataclass(frozen=True)
class JudgeRun:
    """The judge's outcome for one run's items."""

    model: str
    prompt_hash: str
    items: tuple[JudgedItem, ...]

    @property
    def hits(self) -> int:
        return sum(1 for item in self.items if item.cached)

    @property
    def misses(self) -> int:
        return len(self.items) - self.hits

    def failures(self) -> Counter[str]:
        return Counter(i.verdict.failure_class for i in self.items if i.verdict.failure_class)

    def histogram(self) -> dict[str, int]:
        """Items per judged category (failed items are not in it)."""
        found = Counter(i.verdict.category for i in self.items if i.verdict.category)
        return dict(sorted(found.items()))


def judge_items(inputs: Sequence[JudgeInput], client: JudgeClient, cache: JudgeCache) -> JudgeRun:
    """Verdicts for every input: cached answers first, the judge asked once per new evidence."""
    shape = client.endpoint.shape
    p_hash = prompt_hash(shape.describe())
    known = cache.load(shape.model)
    keys = {item.item_id: CacheKey(shape.model, p_hash, inputs_hash(item)) for item in inputs}
    pending: dict[CacheKey, JudgeInput] = {}
    for item in inputs:
        if keys[item.item_id] not in known:
            pending.setdefault(keys[item.item_id], item)
    replies = asyncio.run(client.judge_all(list(pending.values())))
    fresh = dict(zip(pending, replies, strict=True))
    cache.save({k: CachedAnswer(r.verdict, r.raw) for k, r in fresh.items() if r.verdict.cacheable})
    judged = tuple(_judged(item, keys[item.item_id], known, fresh) for item in inputs)
    return JudgeRun(shape.model, p_hash, judged)


def _judged(
    item: JudgeInput,
    key: CacheKey,
    known: Mapping[CacheKey, CachedAnswer],
    fresh: Mapping[CacheKey, JudgeReply],
) -> JudgedItem:
    if key in known:
        return JudgedItem(item.item_id, known[key].verdict, True, 0, 0.0, key.inputs_hash)
    reply = fresh[key]
    return JudgedItem(
        item.item_id, reply.verdict, False, reply.attempts, reply.latency_s, key.inputs_hash
    )


def judge_frame(run: JudgeRun | None, deterministic: Mapping[str, str]) -> pd.DataFrame:
    """The ``judge_diagnoses`` rows (typed even when empty, so the table's types are stable)."""
    rows = [] if run is None else [_row(run, item, deterministic) for item in run.items]
    data = pd.DataFrame(rows, columns=list(_COLUMNS))
    return data.astype(_COLUMNS)


def _row(run: JudgeRun, item: JudgedItem, deterministic: Mapping[str, str]) -> dict[str, object]:
    verdict = item.verdict
    return {
        "item_id": item.item_id,
        "case_id": item.item_id.rsplit("#", 1)[0],
        "deterministic_category": deterministic.get(item.item_id),
        "category": verdict.category,
        "explanation": verdict.explanation,
        "failure_class": verdict.failure_class,
        "message": verdict.message,
        "cached": item.cached,
        "attempts": item.attempts,
        "latency_s": item.latency_s,
        "model": run.model,
        "prompt_hash": run.prompt_hash,
        "inputs_hash": item.inputs_hash,
    }


def judged_categories(stored: pd.DataFrame) -> dict[str, str]:
    """Item id -> the judge's category, from stored ``judge_diagnoses`` rows (failures left out)."""
    if stored.empty:
        return {}
    answered = stored[stored["category"].notna()]
    return dict(zip(answered["item_id"].astype(str), answered["category"].astype(str), strict=True))
