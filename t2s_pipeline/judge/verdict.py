"""Reading a judge's reply strictly: one JSON object naming exactly one category of §11.

A reply that is not such an object is never guessed at; it becomes a failure class recorded on
the item (``malformed``, ``unknown_category``, ``refused``), like transport failures do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from t2s_pipeline.scoring.diagnosis import CATEGORIES

# Every way one item's judging can fail; a failed item keeps its class, never fails the run.
FAILURE_CLASSES: tuple[str, ...] = (
    "no_key",  # the configured key variable is not set: nothing was sent
    "connect",  # no connection (refused, reset, DNS) after the retries
    "timeout",  # no complete answer within the timeout
    "rate_limited",  # HTTP 429 on every attempt
    "http_status",  # any other non-2xx status (5xx after the retries)
    "bad_response",  # a 2xx body that is not the API's response document
    "refused",  # the model declined (stop reason, refusal field, empty or declining text)
    "malformed",  # the reply is not one JSON object with a category and an explanation
    "unknown_category",  # the category is not one of §11
)
# Failures that are the model's own answer: cached like verdicts, so a rerun reproduces them.
MODEL_FAILURES: frozenset[str] = frozenset({"refused", "malformed", "unknown_category"})
EXPLANATION_MAX = 600
_FIELDS = frozenset({"category", "explanation"})
_DECLINE = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry|i can(not|'t)|i won'?t|i'?m unable|i am unable)", re.I
)
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)


@dataclass(frozen=True)
class Verdict:
    """One item's outcome: a category and explanation, or a failure class and message."""

    category: str | None
    explanation: str | None
    failure_class: str | None = None
    message: str | None = None

    @classmethod
    def failed(cls, failure_class: str, message: str) -> Verdict:
        assert failure_class in FAILURE_CLASSES, failure_class
        return cls(None, None, failure_class, message[:300])

    @property
    def cacheable(self) -> bool:
        """Whether this is the model's answer (cached) rather than a transport failure."""
        return self.failure_class is None or self.failure_class in MODEL_FAILURES


def parse_reply(text: str | None) -> Verdict:
    """Read a text reply: a JSON object, optionally inside one ```json fence.

    >>> parse_reply('{"category": "wrong_filter", "explanation": "2024 instead of 2025"}')
    Verdict(category='wrong_filter', explanation='2024 instead of 2025', failure_class=None, message=None)
    >>> parse_reply("I'm sorry, I can't help with that.").failure_class
    'refused'
    """
    stripped = (text or "").strip()
    if not stripped:
        return Verdict.failed("refused", "empty reply")
    fenced = _FENCE.match(stripped)
    body = fenced.group(1) if fenced else stripped
    try:
        data = json.loads(body)
    except ValueError:
        kind = "refused" if _DECLINE.match(stripped) else "malformed"
        return Verdict.failed(kind, f"not JSON: {stripped[:200]}")
    return parse_object(data)


def parse_object(data: object) -> Verdict:
    """Check a decoded reply (or a tool call's input): exactly ``category`` and ``explanation``."""
    if not isinstance(data, Mapping):
        return Verdict.failed("malformed", f"expected a JSON object, got {type(data).__name__}")
    keys = set(data)
    if keys != _FIELDS:
        return Verdict.failed("malformed", f"expected keys {sorted(_FIELDS)}, got {sorted(keys)}")
    category, explanation = data["category"], data["explanation"]
    if not isinstance(category, str) or not isinstance(explanation, str):
        return Verdict.failed("malformed", "category and explanation must be strings")
    if category not in CATEGORIES:
        return Verdict.failed("unknown_category", f"category {category!r} is not one of §11")
    if not explanation.strip():
        return Verdict.failed("malformed", "empty explanation")
    return Verdict(category, explanation.strip()[:EXPLANATION_MAX])
