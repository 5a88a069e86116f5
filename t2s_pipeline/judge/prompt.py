"""What the judge is shown, and the two hashes that key its cache.

The judge sees the question, both SQL texts, a compact result diff (status, columns, row counts
and the first rows of each side) and the families' figures. It does not see the deterministic
category: calibration compares two independent readings with the human labels.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from t2s_pipeline.scoring.diagnosis import CATEGORIES

PROMPT_VERSION = "judge-v1"
PREVIEW_ROWS = 5

SYSTEM_PROMPT = f"""\
You review one failed answer of a text-to-SQL system. You get a business question, the gold \
(reference) SQL, the candidate SQL the system wrote, a compact comparison of their results and \
the evaluation figures. Name the one category that best explains why the candidate's answer \
differs from the gold answer, and explain it in one or two short sentences.

Categories:
- correct: the candidate answers the question as well as the gold does (the difference is harmless).
- wrong_table: the candidate reads the wrong source: a table the answer needs is missing, or the \
figure comes from a table that cannot give it.
- no_result: the candidate produced no SQL, was refused, or its query failed.
- wrong_filter: right measure and level of detail, wrong rows: conditions, status codes or time \
window differ.
- wrong_grain: right measure, wrong level of detail: grouped by other or extra columns, a total \
instead of a breakdown (or the reverse), rows listed instead of aggregated.
- wrong_metric: the quantity itself is different: another column or expression, another \
aggregate (count instead of sum, sum instead of average), or an asked-for figure is missing.
- harness_bug: the gold query or the evaluation itself is at fault, not the candidate.
- ambiguous_question: the question, read fairly, admits the candidate's interpretation.

When several apply, name the first that must be fixed, in this order: wrong_table, \
wrong_metric, wrong_grain, wrong_filter.

Reply with exactly one JSON object and nothing else:
{{"category": "<one of: {", ".join(CATEGORIES)}>", "explanation": "<one or two sentences>"}}
({PROMPT_VERSION})"""


@dataclass(frozen=True)
class ResultPreview:
    """One side's executed result, compactly: enough to see how the two differ."""

    status: str  # ok | error | refused | timeout | not_run
    reason: str | None
    columns: tuple[str, ...]
    n_rows: int
    rows: tuple[tuple[object, ...], ...]  # the first PREVIEW_ROWS rows, JSON values


@dataclass(frozen=True)
class JudgeInput:
    """Everything the judge is told about one item."""

    item_id: str
    question: str
    gold_sql: str
    candidate_sql: str | None
    gold: ResultPreview
    candidate: ResultPreview
    scores: tuple[tuple[str, float | None], ...]  # family figures, in a fixed order


def user_message(item: JudgeInput) -> str:
    """The user turn: question, both queries, the result diff and the figures.

    The item id is left out, so identical evidence reads (and caches) identically.
    """
    scores = {name: value for name, value in item.scores}
    parts = [
        f"Question: {item.question}",
        f"Gold SQL:\n{item.gold_sql.strip()}",
        f"Candidate SQL:\n{(item.candidate_sql or '(none)').strip()}",
        "Gold result: " + _describe(item.gold),
        "Candidate result: " + _describe(item.candidate),
        "Figures (null = undefined): " + json.dumps(scores, sort_keys=True),
    ]
    return "\n\n".join(parts)


def _describe(side: ResultPreview) -> str:
    head = f"{side.status}" + (f" ({side.reason})" if side.reason else "")
    if side.status != "ok":
        return head
    rows = "\n".join(json.dumps(list(row), default=str) for row in side.rows)
    return (
        f"{head}; {side.n_rows} row(s); columns {json.dumps(list(side.columns))}; "
        f"first rows:\n{rows or '(none)'}"
    )


def prompt_hash(shape: str) -> str:
    """Hash of the instructions and the request's shape (API, token budget, tool use).

    >>> len(prompt_hash("openai"))
    16
    """
    return _sha(f"{SYSTEM_PROMPT}\n--\n{shape}")


def inputs_hash(item: JudgeInput) -> str:
    """Hash of exactly what the judge reads about this item."""
    return _sha(user_message(item))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
