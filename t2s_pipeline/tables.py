"""Every stored table, declared once: its columns and their types, its key and its scope.

The results store creates a table's files from these declarations, never from the first frame
written, so a column that is NULL in one run has the same type as in the next, and a row
builder that writes a column nobody declared fails at once, naming the table and the column.

Scopes: ``run`` tables belong to one run partition (``run_id`` is added to every row);
``fragments`` tables are appended to by many runs at once (each write adds a fragment;
readers see their union).

>>> TABLES["exact_matches"].key
('run_id', 'item_id')
>>> TABLES["exact_matches"].to_frame([{"item_id": "a#0", "exact_match": True}]).dtypes["phrasing"]
Int64Dtype()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from t2s_pipeline.errors import T2SError

SqlType = Literal["VARCHAR", "BIGINT", "DOUBLE", "BOOLEAN", "TIMESTAMP", "BLOB"]
Scope = Literal["run", "fragments"]
_PANDAS: dict[str, str] = {
    "VARCHAR": "object",
    "BIGINT": "Int64",
    "DOUBLE": "float64",
    "BOOLEAN": "boolean",
    "TIMESTAMP": "datetime64[us]",
    "BLOB": "object",
}


class TableError(T2SError):
    """A frame that does not fit its table's declaration."""


@dataclass(frozen=True)
class Column:
    name: str
    type: SqlType


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    scope: Scope = "run"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def to_frame(self, rows: Sequence[Mapping[str, object]] | pd.DataFrame) -> pd.DataFrame:
        """Rows (mappings or a frame) as a frame with exactly the declared columns, in the
        declared order and types; a column not declared is an error, a missing one is NULL."""
        data = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        extra = sorted(set(data.columns) - set(self.names))
        if extra:
            raise TableError(
                f"table {self.name} has no column {', '.join(extra)}; declare it in "
                "t2s_pipeline/tables.py or stop writing it"
            )
        data = data.reset_index(drop=True)
        return pd.DataFrame(
            {c.name: _cast(data.get(c.name), c, len(data), self.name) for c in self.columns}
        )

    def from_frame(self, data: pd.DataFrame) -> list[dict[str, object]]:
        """Stored rows back as mappings of the declared columns (NULL as None)."""
        frame = self.to_frame(data[[c for c in data.columns if c in self.names]])
        return [
            {k: (None if _missing(v) else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")
        ]


def _cast(values: object, column: Column, n: int, table: str) -> pd.Series:
    if values is None:
        return pd.Series([None] * n, dtype=_PANDAS[column.type])
    series = pd.Series(values)
    try:
        if column.type == "VARCHAR":
            return series.astype(object).where(series.notna(), None)
        if column.type == "BLOB":
            return series.astype(object).where(series.notna(), None)
        if column.type == "TIMESTAMP":
            return pd.to_datetime(series).astype("datetime64[us]")
        if column.type == "BIGINT":
            return pd.to_numeric(series).astype("Int64")
        if column.type == "DOUBLE":
            return pd.to_numeric(series).astype("float64")
        return series.astype("boolean")
    except (TypeError, ValueError) as error:
        raise TableError(
            f"table {table}, column {column.name}: values do not fit {column.type} ({error})"
        ) from error


def _missing(value: object) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _table(name: str, spec: str, key: tuple[str, ...], scope: Scope = "run") -> Table:
    """A declaration from ``"name TYPE, name TYPE"``; run tables get ``run_id`` first."""
    columns = [Column(n, t) for n, t in (part.split() for part in spec.split(","))]  # type: ignore[arg-type]
    if scope == "run":
        columns.insert(0, Column("run_id", "VARCHAR"))
        key = ("run_id", *key)
    return Table(name, tuple(columns), key, scope)


_RESULT = (
    "key VARCHAR, status VARCHAR, layer VARCHAR, reason VARCHAR, columns_json VARCHAR, "
    "n_rows BIGINT, truncated BOOLEAN, seconds DOUBLE, preview_json VARCHAR, payload BLOB, "
    "cut_tie BOOLEAN"
)
_COMPONENTS = ", ".join(
    f"{n}_{s} DOUBLE"
    for n in (
        "select",
        "tables",
        "joins",
        "filters",
        "group_by",
        "aggregations",
        "order_by",
        "limit",
    )
    for s in ("precision", "recall")
)
# One item's figure that moved against the run's baseline (run_a: the baseline, run_b: the run).
_CHANGE = (
    "run_a VARCHAR, run_b VARCHAR, item_id VARCHAR, family VARCHAR, metric VARCHAR, "
    "before DOUBLE, after DOUBLE"
)

_DECLARED = [
    _table(
        "runs",
        "config_name VARCHAR, config_path VARCHAR, config_json VARCHAR, config_hash VARCHAR, "
        "case_set_hash VARCHAR, sut_fingerprint VARCHAR, cases_dir VARCHAR, "
        "snapshot_hash VARCHAR, code_version VARCHAR, started_at TIMESTAMP, "
        "ended_at TIMESTAMP, summary_json VARCHAR",
        (),
    ),
    _table(
        "items",
        "item_id VARCHAR, case_id VARCHAR, phrasing BIGINT, question VARCHAR, "
        "exclude_json VARCHAR, evidence VARCHAR, difficulty VARCHAR, context_json VARCHAR",
        ("item_id",),
    ),
    _table(
        "sut_responses",
        "item_id VARCHAR, case_id VARCHAR, sql VARCHAR, refused BOOLEAN, message VARCHAR, "
        "error_class VARCHAR, status BIGINT, error_message VARCHAR, attempts BIGINT, "
        "latency_s DOUBLE, response_json VARCHAR, isolated BOOLEAN",
        ("item_id",),
    ),
    _table(
        "retrieval_probes",
        "item_id VARCHAR, case_id VARCHAR, tables_json VARCHAR, examples_json VARCHAR, "
        "error_class VARCHAR, error_message VARCHAR, probe_json VARCHAR",
        ("item_id",),
    ),
    _table("gold_results", f"{_RESULT}, drift BOOLEAN", ("key",)),
    _table("candidate_results", _RESULT, ("key",)),
    _table(
        "sql_analyses",
        "item_id VARCHAR, case_id VARCHAR, required_json VARCHAR, parse_error VARCHAR, "
        "analysis_json VARCHAR",
        ("item_id",),
    ),
    _table(
        "retrieval_scores",
        "item_id VARCHAR, case_id VARCHAR, required_json VARCHAR, recall DOUBLE, "
        "precision DOUBLE, spurious BIGINT, offered_json VARCHAR, missing_json VARCHAR, "
        "probe_recall DOUBLE, probe_precision DOUBLE, probe_spurious BIGINT, "
        "probe_offered_json VARCHAR, probe_missing_json VARCHAR",
        ("item_id",),
    ),
    _table(
        "component_scores",
        f"item_id VARCHAR, case_id VARCHAR, {_COMPONENTS}, parse_error VARCHAR, "
        "gold_sets_json VARCHAR, candidate_sets_json VARCHAR",
        ("item_id",),
    ),
    _table(
        "output_scores",
        "item_id VARCHAR, case_id VARCHAR, exact_match BOOLEAN, columns_precision DOUBLE, "
        "columns_recall DOUBLE, cells_precision DOUBLE, cells_recall DOUBLE, "
        "selectivity DOUBLE, matched_cells BIGINT, reference_rows BIGINT, "
        "candidate_rows BIGINT, pairs_json VARCHAR, key_json VARCHAR, scorer_fault BOOLEAN, "
        "ceilings_json VARCHAR, presentation_json VARCHAR, candidate_status VARCHAR, "
        "gold_status VARCHAR",
        ("item_id",),
    ),
    _table(
        "exact_matches",
        "item_id VARCHAR, case_id VARCHAR, phrasing BIGINT, difficulty VARCHAR, "
        "exact_match BOOLEAN, ex_presentation BOOLEAN, scorer_fault BOOLEAN",
        ("item_id",),
    ),
    _table(
        "test_suite_matches",
        "item_id VARCHAR, case_id VARCHAR, exact_match BOOLEAN, ex_ts BOOLEAN, "
        "neighbours BIGINT, told_apart_by VARCHAR, reference_json VARCHAR, "
        "candidate_json VARCHAR, suite_key VARCHAR",
        ("item_id",),
    ),
    _table(
        "diagnoses",
        "item_id VARCHAR, case_id VARCHAR, category VARCHAR, rule VARCHAR, "
        "categories_json VARCHAR, findings_json VARCHAR",
        ("item_id",),
    ),
    _table(
        "judge_diagnoses",
        "item_id VARCHAR, case_id VARCHAR, deterministic_category VARCHAR, category VARCHAR, "
        "explanation VARCHAR, failure_class VARCHAR, message VARCHAR, cached BOOLEAN, "
        "attempts BIGINT, latency_s DOUBLE, model VARCHAR, prompt_hash VARCHAR, "
        "inputs_hash VARCHAR",
        ("item_id",),
    ),
    _table(
        "judge_calibration",
        "lane VARCHAR, n BIGINT, agreement DOUBLE, kappa DOUBLE, jaccard DOUBLE, "
        "calibrated BOOLEAN, agreement_floor DOUBLE, judge_enabled BOOLEAN, n_labels BIGINT, "
        "n_stale BIGINT, confusion_json VARCHAR",
        ("lane",),
    ),
    _table(
        "judge_cache",
        "model VARCHAR, prompt_hash VARCHAR, inputs_hash VARCHAR, category VARCHAR, "
        "explanation VARCHAR, failure_class VARCHAR, message VARCHAR, raw VARCHAR, "
        "created_at TIMESTAMP",
        ("model", "prompt_hash", "inputs_hash"),
        "fragments",
    ),
    _table(
        "analysis_cache",
        "key VARCHAR, analysis_json VARCHAR, created_at TIMESTAMP",
        ("key",),
        "fragments",
    ),
    _table(
        "canonical_cache",
        "key VARCHAR, canonical VARCHAR, created_at TIMESTAMP",
        ("key",),
        "fragments",
    ),
    _table(
        "run_comparisons",
        "run_a VARCHAR, run_b VARCHAR, family VARCHAR, metric VARCHAR, n BIGINT, "
        "mean_delta DOUBLE, ci_low DOUBLE, ci_high DOUBLE",
        ("family", "metric"),
    ),
    _table("regressions", _CHANGE, ("item_id", "family", "metric")),
    _table("improvements", _CHANGE, ("item_id", "family", "metric")),
]
TABLES: dict[str, Table] = {t.name: t for t in _DECLARED}


def table(name: str) -> Table:
    """The declaration of ``name``; an unknown table is an error naming the known ones."""
    try:
        return TABLES[name]
    except KeyError:
        raise TableError(
            f"no table {name!r} is declared; known tables: {', '.join(sorted(TABLES))}"
        ) from None
