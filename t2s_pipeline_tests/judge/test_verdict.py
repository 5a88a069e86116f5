"""Strict reading of a judge's reply: one JSON object, one §11 category, nothing guessed."""

from __future__ import annotations

import pytest

from t2s_pipeline.judge.verdict import Verdict, parse_object, parse_reply


@pytest.mark.parametrize(
    "text, category, failure",
    [
        ('{"category": "wrong_grain", "explanation": "per month"}', "wrong_grain", None),
        ('  {"explanation": "x", "category": "no_result"}\n', "no_result", None),
        ('```json\n{"category": "correct", "explanation": "same"}\n```', "correct", None),
        ('{"category": "Wrong_Grain", "explanation": "x"}', None, "unknown_category"),
        ('{"category": "wrong_grain"}', None, "malformed"),
        ('{"category": "wrong_grain", "explanation": ""}', None, "malformed"),
        ('{"category": ["wrong_grain"], "explanation": "x"}', None, "malformed"),
        ('["wrong_grain", "x"]', None, "malformed"),
        (
            'Category: wrong_grain. {"category": "wrong_grain", "explanation": "x"}',
            None,
            "malformed",
        ),
        ("I cannot assist with that request.", None, "refused"),
        ("   ", None, "refused"),
        (None, None, "refused"),
    ],
)
def test_reply_is_read_strictly(
    text: str | None, category: str | None, failure: str | None
) -> None:
    """Only an exact object with a known category is a verdict; the rest is a failure class."""
    verdict = parse_reply(text)
    assert (verdict.category, verdict.failure_class) == (category, failure)


def test_long_explanation_is_cut_not_rejected() -> None:
    """A verbose but valid answer keeps its category; the stored explanation is bounded."""
    verdict = parse_object({"category": "wrong_filter", "explanation": "x" * 5000})
    assert verdict.category == "wrong_filter" and verdict.explanation == "x" * 600


def test_only_the_models_own_answers_are_cacheable() -> None:
    """Refusals and malformed output are reproducible answers; transport failures are not."""
    assert parse_reply("nope").cacheable
    assert parse_reply('{"category": "wrong_filter", "explanation": "x"}').cacheable
    assert not Verdict.failed("timeout", "slow").cacheable
    assert not Verdict.failed("rate_limited", "429").cacheable
