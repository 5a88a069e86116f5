"""Human labels (``cases/<domain>/labels.yaml``): item id -> the §11 category a reviewer chose.

Format::

    labels:
      delivered-orders-count#0:
        category: wrong_table        # one of §11
        reason: counts discontinued items, not orders   # one line, required
        candidate: 3f0c9a1b2d4e      # optional: fingerprint of the candidate SQL judged

A label judges one candidate. With ``candidate:`` set, it counts only in runs whose candidate
SQL for that item has the same fingerprint; otherwise it is *stale* (counted, not used), so a
label written for one system is never silently applied to another's answer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from t2s_pipeline.errors import ConfigError
from t2s_pipeline.scoring.diagnosis import CATEGORIES

LABELS_FILE = "labels.yaml"
_ITEM_ID = re.compile(r"^[a-z0-9][a-z0-9-]*#[0-9]+$")


class Label(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    category: str
    reason: str
    candidate: str | None = None

    @field_validator("category")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"{value!r} is not a category of §11 ({', '.join(CATEGORIES)})")
        return value


class _LabelFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: dict[str, Label]


@dataclass(frozen=True)
class AppliedLabels:
    """The labels that judge this run's candidates, and those written for another candidate."""

    categories: dict[str, str]  # item id -> human category
    stale: tuple[str, ...]


def candidate_fingerprint(sql: str | None) -> str:
    """Twelve hex digits naming a candidate's SQL text, whitespace-insensitive.

    >>> candidate_fingerprint("SELECT  1") == candidate_fingerprint("SELECT 1\\n")
    True
    >>> candidate_fingerprint(None)
    'none'
    """
    if sql is None or not sql.strip():
        return "none"
    return hashlib.sha256(" ".join(sql.split()).encode("utf-8")).hexdigest()[:12]


def load_labels(path: Path | str) -> dict[str, Label]:
    """Read a label file; errors name the file, the item and the fix. Missing file: no labels."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        labels = _LabelFile.model_validate(data).labels
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error}). Fix the YAML syntax") from error
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ConfigError(
            f"{path}: field '{where}': {first['msg']}. Fix: see docs/judge.md for the format"
        ) from error
    bad = [item for item in labels if not _ITEM_ID.match(item)]
    if bad:
        raise ConfigError(
            f"{path}: field 'labels.{bad[0]}': not an item id. Fix: write <case-id>#<phrasing>"
        )
    return labels


def apply_labels(
    labels: Mapping[str, Label], candidates: Mapping[str, str | None]
) -> AppliedLabels:
    """The labels of items in this run (``candidates``: item id -> candidate SQL)."""
    categories: dict[str, str] = {}
    stale: list[str] = []
    for item_id, label in sorted(labels.items()):
        if item_id not in candidates:
            continue
        if label.candidate and label.candidate != candidate_fingerprint(candidates[item_id]):
            stale.append(item_id)
            continue
        categories[item_id] = label.category
    return AppliedLabels(categories, tuple(stale))
