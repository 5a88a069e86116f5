"""One benchmark question as read from its gold file, and the case id it becomes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from t2s_pipeline.errors import ConfigError

# Case ids are file names, not SQL: a regular expression is the right tool.
_NOT_ID = re.compile(r"[^a-z0-9]+")
MAX_ID = 64


@dataclass(frozen=True)
class BenchmarkQuestion:
    """One question of a public benchmark.

    ``index`` is the question's position in the gold file: prediction files refer to it.
    ``band`` is the benchmark's own difficulty band (``easy``, ``simple``, ...).
    """

    benchmark: str
    index: int
    db_id: str
    question: str
    sql: str
    band: str
    evidence: str | None = None

    @property
    def case_id(self) -> str:
        """``<db_id>-<index>`` in the case id alphabet.

        >>> BenchmarkQuestion("spider", 7, "concert_singer", "q", "SELECT 1", "easy").case_id
        'concert-singer-7'
        """
        return case_id(self.db_id, self.index)

    @property
    def difficulty(self) -> str:
        """The case's difficulty: ``<benchmark>:<band>``, e.g. ``spider:easy``."""
        return f"{self.benchmark}:{self.band}"


def case_id(db_id: str, index: int) -> str:
    """The case id of question ``index`` on database ``db_id`` (slug cut to fit 64 characters).

    >>> case_id("Pets_1", 12)
    'pets-1-12'
    """
    suffix = f"-{index}"
    slug = _NOT_ID.sub("-", db_id.lower()).strip("-") or "db"
    return slug[: MAX_ID - len(suffix)].rstrip("-") + suffix


def read_json(path: Path, what: str) -> Any:
    """A JSON file's content; errors name the file and the fix.

    ``what`` says what the file should hold, e.g. ``"a list of questions"``.
    """
    if not path.exists():
        raise ConfigError(f"{path}: no such file. Fix: pass the path of {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path}: line {error.lineno}: not valid JSON ({error.msg}). Fix: pass {what}"
        ) from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text ({error}). Fix: pass {what}") from None


def entries(path: Path, data: Any, what: str) -> list[dict[str, Any]]:
    """The JSON list of objects in ``data``, or an error naming the file and the first bad entry."""
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a JSON list of objects. Fix: pass {what}")
    for index, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: entry [{index}] is not a JSON object. Fix: pass {what}")
    return data


def text_field(path: Path, index: int, entry: dict[str, Any], name: str) -> str:
    """A required non-empty string field of entry ``index``; errors name file, entry and field."""
    value = entry.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(
            f"{path}: entry [{index}]: field '{name}' is missing or not a non-empty string. "
            f"Fix: give every entry a '{name}'"
        )
    return value.strip()
