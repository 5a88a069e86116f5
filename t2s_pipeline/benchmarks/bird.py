"""BIRD's question file: a list of ``{question_id, db_id, question, evidence, SQL, difficulty}``.

The databases sit at ``<db-dir>/<db_id>/<db_id>.sqlite``; ``evidence`` is the external
knowledge sentence BIRD gives the system with the question; ``difficulty`` is ``simple``,
``moderate`` or ``challenging`` (a file without it, like BIRD's train split, is ``unrated``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from t2s_pipeline.benchmarks.questions import BenchmarkQuestion, entries, read_json, text_field
from t2s_pipeline.errors import ConfigError

BANDS: tuple[str, ...] = ("simple", "moderate", "challenging")
UNRATED = "unrated"
_QUESTIONS = "BIRD's dev.json (a list of {question_id, db_id, question, evidence, SQL})"


def read_questions(path: Path) -> tuple[BenchmarkQuestion, ...]:
    """Every question of a BIRD file, in file order (the order prediction files index)."""
    raw = entries(path, read_json(path, _QUESTIONS), _QUESTIONS)
    return tuple(_question(path, index, entry) for index, entry in enumerate(raw))


def _question(path: Path, index: int, entry: dict[str, Any]) -> BenchmarkQuestion:
    evidence = entry.get("evidence")
    if evidence is not None and not isinstance(evidence, str):
        raise ConfigError(
            f"{path}: entry [{index}]: field 'evidence' must be a string. Fix: write it as text"
        )
    return BenchmarkQuestion(
        benchmark="bird",
        index=index,
        db_id=text_field(path, index, entry, "db_id"),
        question=text_field(path, index, entry, "question"),
        sql=text_field(path, index, entry, "SQL"),
        band=_band(path, index, entry.get("difficulty")),
        evidence=evidence.strip() if evidence and evidence.strip() else None,
    )


def _band(path: Path, index: int, value: object) -> str:
    if value is None:
        return UNRATED
    if value not in BANDS:
        raise ConfigError(
            f"{path}: entry [{index}]: field 'difficulty' is {value!r}. "
            f"Fix: use one of {', '.join(BANDS)} (or leave it out)"
        )
    return str(value)
