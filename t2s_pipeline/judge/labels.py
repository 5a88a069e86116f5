"""Human labels (``cases/<domain>/labels.yaml``): what a reviewer found wrong with one answer.

Format::

    labels:
      delivered-orders-count#0:              # item id: <case-id>#<phrasing>
        - candidate: 3f0c9a1b2d4e            # fingerprint of the candidate SQL judged
          primary: wrong_table               # the §11 category that comes first by precedence
          also: [wrong_metric]               # optional: the other §11 categories that hold
          reason: counts discontinued items, not orders   # one line, required
        - candidate: 9d1e0b7c44a2            # the same item answered by another system
          primary: correct
          reason: same rows and order as the reference

An item holds one label per candidate answer, so one file serves several systems under test;
a single mapping instead of the list is one label. A label counts only in runs whose candidate
SQL for that item has its fingerprint; a label without ``candidate`` judges whatever the
candidate is. Labels of an item in the run that all name other candidates are *stale*
(counted, never applied), so a label written for one system never judges another's answer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from t2s_pipeline.errors import ConfigError
from t2s_pipeline.scoring.diagnosis import CATEGORIES

LABELS_FILE = "labels.yaml"
_ITEM_ID = re.compile(r"^[a-z0-9][a-z0-9-]*#[0-9]+$")


def _known(value: str) -> str:
    if value not in CATEGORIES:
        raise ValueError(f"{value!r} is not a category of §11 ({', '.join(CATEGORIES)})")
    return value


class Label(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    primary: str
    reason: str
    also: tuple[str, ...] = ()
    candidate: str | None = None

    @field_validator("primary")
    @classmethod
    def _primary_known(cls, value: str) -> str:
        return _known(value)

    @field_validator("also")
    @classmethod
    def _also_known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(_known(v) for v in value)

    @field_validator("reason")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the reason is empty: say in one line why")
        return " ".join(value.split())

    @model_validator(mode="after")
    def _primary_not_also(self) -> Label:
        if self.primary in self.also:
            raise ValueError(f"{self.primary!r} is the primary category; leave it out of 'also'")
        return self

    @property
    def categories(self) -> frozenset[str]:
        """Every category the reviewer found to hold: the primary and ``also``."""
        return frozenset((self.primary, *self.also))


class _LabelFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: dict[str, Label | list[Label]]


@dataclass(frozen=True)
class AppliedLabels:
    """The labels that judge this run's candidates, and the items labelled for others only."""

    categories: dict[str, str]  # item id -> primary category
    sets: dict[str, frozenset[str]]  # item id -> every category the reviewer found
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


def load_labels(path: Path | str) -> dict[str, tuple[Label, ...]]:
    """Read a label file: item id -> its labels. Errors name the file, the field and the fix.
    A missing file means no labels."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        raw = _LabelFile.model_validate(data).labels
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({error}). Fix the YAML syntax") from error
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(
            str(p) for p in first["loc"] if "[" not in str(p) and p not in ("Label", "list")
        )
        fix = "see docs/judge.md for the format"
        if first["type"] == "missing" and first["loc"][-1] == "primary":
            fix = "give the §11 category as 'primary' (the old 'category' field is now 'primary')"
        raise ConfigError(f"{path}: field '{where}': {first['msg']}. Fix: {fix}") from error
    labels = {item: tuple(v) if isinstance(v, list) else (v,) for item, v in raw.items()}
    for item, entries in labels.items():
        if not _ITEM_ID.match(item):
            raise ConfigError(
                f"{path}: field 'labels.{item}': not an item id. Fix: write <case-id>#<phrasing>"
            )
        seen = [e.candidate for e in entries]
        if len(set(seen)) != len(seen):
            raise ConfigError(
                f"{path}: field 'labels.{item}': two labels for the same candidate. "
                "Fix: keep one label per candidate fingerprint"
            )
    return labels


def n_labels(labels: Mapping[str, tuple[Label, ...]]) -> int:
    return sum(len(entries) for entries in labels.values())


def label_for(entries: tuple[Label, ...], sql: str | None) -> Label | None:
    """The label judging this candidate: the one with its fingerprint, else one without any."""
    fingerprint = candidate_fingerprint(sql)
    exact = [e for e in entries if e.candidate == fingerprint]
    return exact[0] if exact else next((e for e in entries if e.candidate is None), None)


def apply_labels(
    labels: Mapping[str, tuple[Label, ...]], candidates: Mapping[str, str | None]
) -> AppliedLabels:
    """The labels of items in this run (``candidates``: item id -> candidate SQL)."""
    categories: dict[str, str] = {}
    sets: dict[str, frozenset[str]] = {}
    stale: list[str] = []
    for item_id, entries in sorted(labels.items()):
        if item_id not in candidates:
            continue
        label = label_for(entries, candidates[item_id])
        if label is None:
            stale.append(item_id)
            continue
        categories[item_id] = label.primary
        sets[item_id] = label.categories
    return AppliedLabels(categories, sets, tuple(stale))


def dump_labels(path: Path, labels: Mapping[str, tuple[Label, ...]], header: str) -> None:
    """Write a label file, items sorted, each item's labels as a list, with a comment header."""
    body = {
        "labels": {
            item: [_entry(label) for label in entries] for item, entries in sorted(labels.items())
        }
    }
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(comment + text, encoding="utf-8")


def _entry(label: Label) -> dict[str, object]:
    out: dict[str, object] = {"candidate": label.candidate, "primary": label.primary}
    if label.also:
        out["also"] = list(label.also)
    out["reason"] = label.reason
    return out if label.candidate else {k: v for k, v in out.items() if k != "candidate"}
