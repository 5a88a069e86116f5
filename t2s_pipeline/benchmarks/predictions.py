"""Prediction files of published systems, as the replay client's JSON Lines.

- **Spider**: one SQL per line, in gold order (a ``<TAB>db_id`` suffix is allowed and checked).
- **BIRD**: a JSON object from question index to ``"SQL\\t----- bird -----\\tdb_id"``.

Each prediction becomes ``{"case_id", "phrasing": 0, "sql"}`` for the case the import made of
that question (``benchmark.json`` holds the order). No ``meta`` line is written: a recorded
file proves nothing about what the system could see, so every item counts ``not_isolated``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from t2s_pipeline.benchmarks.databases import column_names
from t2s_pipeline.benchmarks.manifest import Manifest, read_manifest
from t2s_pipeline.benchmarks.questions import read_json
from t2s_pipeline.cases import Case, CaseSet, load_cases
from t2s_pipeline.config import load_config
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sql.schema import domain_schema
from t2s_pipeline.sql.sqlite_literals import literal_double_quotes

FORMATS: tuple[str, ...] = ("spider", "bird")
BIRD_SEPARATOR = "\t----- bird -----\t"


@dataclass(frozen=True)
class Prediction:
    """One predicted query: the question's position, the SQL (None when blank), and the
    database the file names for it (None when it names none)."""

    index: int
    sql: str | None
    db_id: str | None
    where: str


@dataclass(frozen=True)
class ReplayReport:
    """What a conversion wrote: the file, counts, and the cases left without a prediction."""

    path: Path
    n_predictions: int
    n_cases: int
    missing: tuple[str, ...]
    rewritten: int


def read_spider_predictions(path: Path) -> list[Prediction]:
    """One prediction per line; a blank line is a question the system did not answer.

    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp()) / "pred.txt"
    >>> _ = file.write_text("SELECT 1\\tdb_a\\n\\nSELECT 2\\n")
    >>> [(p.index, p.sql, p.db_id) for p in read_spider_predictions(file)]
    [(0, 'SELECT 1', 'db_a'), (1, None, None), (2, 'SELECT 2', None)]
    """
    if not path.exists():
        raise ConfigError(f"{path}: no such file. Fix: pass the Spider prediction file")
    lines = path.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    predictions = []
    for index, line in enumerate(lines):
        sql, tab, db_id = line.partition("\t")
        predictions.append(
            Prediction(index, sql.strip() or None, db_id.strip() or None if tab else None,
                       f"{path}:{index + 1}")
        )  # fmt: skip
    return predictions


def read_bird_predictions(path: Path) -> list[Prediction]:
    """The JSON object BIRD's evaluation reads: ``{"0": "SQL\\t----- bird -----\\tdb_id"}``."""
    what = 'a BIRD prediction file ({"<index>": "SQL\\t----- bird -----\\t<db_id>"})'
    data = read_json(path, what)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a JSON object. Fix: pass {what}")
    predictions = []
    for key, value in data.items():
        where = f"{path}: key {key!r}"
        if not (isinstance(key, str) and key.isdigit()) or not isinstance(value, str):
            raise ConfigError(f"{where}: expected a question index and a string. Fix: pass {what}")
        sql, sep, db_id = value.partition(BIRD_SEPARATOR)
        predictions.append(
            Prediction(int(key), sql.strip() or None, db_id.strip() or None if sep else None, where)
        )
    return sorted(predictions, key=lambda p: p.index)


def read_predictions(kind: str, path: Path) -> list[Prediction]:
    """Read a prediction file of format ``kind`` (``spider`` or ``bird``)."""
    if kind not in FORMATS:
        raise ConfigError(f"unknown prediction format {kind!r}. Fix: use one of {FORMATS}")
    return read_spider_predictions(path) if kind == "spider" else read_bird_predictions(path)


def convert_predictions(kind: str, path: Path, cases: Path, out: Path) -> ReplayReport:
    """Write the replay file of a prediction file, each prediction on its question's case.

    Spider's file must have exactly one line per question (it is matched by position); BIRD's
    may leave questions out (each becomes an item error "no recorded prediction" in the run).
    """
    manifest = read_manifest(cases)
    case_set = load_cases(cases)
    predictions = read_predictions(kind, path)
    if kind == "spider" and len(predictions) != len(manifest.entries):
        raise ConfigError(
            f"{path}: {len(predictions)} prediction line(s) for {len(manifest.entries)} "
            "question(s); Spider predictions are matched by line. Fix: write one line per "
            "question, in gold order (a blank line for an unanswered one)"
        )
    matched = _match(predictions, manifest, case_set, path)
    lines, rewritten = _replay_lines(matched, case_set)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    answered = {case.id for case, _ in matched}
    missing = tuple(e.case_id for e in manifest.entries if e.case_id not in answered)
    return ReplayReport(out, len(matched), len(manifest.entries), missing, rewritten)


def _match(
    predictions: Sequence[Prediction], manifest: Manifest, case_set: CaseSet, path: Path
) -> list[tuple[Case, Prediction]]:
    entries, cases = manifest.by_index(), case_set.by_id()
    matched = []
    for prediction in predictions:
        entry = entries.get(prediction.index)
        if entry is None:
            raise ConfigError(
                f"{prediction.where}: question index {prediction.index} is not in the imported "
                f"set ({len(entries)} questions). Fix: convert predictions made for this gold file"
            )
        if prediction.db_id is not None and prediction.db_id != entry.db_id:
            raise ConfigError(
                f"{prediction.where}: names database {prediction.db_id!r} but question "
                f"{prediction.index} is on {entry.db_id!r}. Fix: keep the predictions in gold order"
            )
        if entry.case_id not in cases:
            raise ConfigError(
                f"{case_set.domain.folder}: case {entry.case_id} is in benchmark.json but does "
                "not load (see `t2s cases check`). Fix: re-import the benchmark"
            )
        matched.append((cases[entry.case_id], prediction))
    return matched


def _replay_lines(
    matched: Sequence[tuple[Case, Prediction]], case_set: CaseSet
) -> tuple[list[str], int]:
    columns: dict[str | None, frozenset[str]] = {}
    lines, rewritten = [], 0
    for case, prediction in matched:
        sql = prediction.sql
        if sql is not None:
            if case.db_id not in columns:
                columns[case.db_id] = column_names(domain_schema(case_set.domain, case))
            explicit = literal_double_quotes(sql, columns[case.db_id])
            rewritten += explicit != sql
            sql = explicit
        lines.append(json.dumps({"case_id": case.id, "phrasing": 0, "sql": sql}))
    return lines, rewritten


def write_replay_config(config: Path, cases: Path, replay: Path, kind: str, source: Path) -> Path:
    """A run configuration replaying ``replay`` against ``cases`` (paths kept as given, so run
    it from the folder the import ran in). The predictions' hash is a label, so new predictions
    at the same path give a new run id rather than overwrite the old run. Isolation is counted,
    not required (``isolation: warn``): nothing recorded earlier can prove it."""
    digest = hashlib.sha256(replay.read_bytes()).hexdigest()[:16]
    data = {
        "name": config.stem,
        "cases": cases.as_posix(),
        # A recorded file cannot honour exclusions: its items are scored and counted under
        # not_isolated, rather than the blocking isolation check stopping every replay.
        "sut": {"kind": "replay", "file": replay.as_posix(), "isolate": True, "isolation": "warn"},
        "phrasings": "main",
        "labels": {"benchmark": kind, "predictions": source.name, "predictions_sha256": digest},
    }
    header = (
        f"# Replays {source.name} ({kind} predictions) on {cases.as_posix()}; "
        "written by `t2s import predictions`.\n"
    )
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(header + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    try:
        load_config(config)
    except ConfigError:
        config.unlink()
        raise
    return config
