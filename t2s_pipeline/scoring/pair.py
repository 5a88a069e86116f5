"""One gold/candidate pair scored on one database, as ``t2s score`` prints it (SPEC 15): both
queries through the evaluation guard, every family, the ceilings and the diagnosis a run would
store for the same pair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.execution.records import ExecutedResult, from_outcome
from t2s_pipeline.execution.registry import engine_for, engine_named
from t2s_pipeline.scoring.components import ComponentScores, score_components
from t2s_pipeline.scoring.diagnosis import Diagnosis, diagnose
from t2s_pipeline.scoring.item import (
    ItemAnalysis,
    component_row,
    evidence,
    item_ceilings,
    output_row,
    score_item_output,
)
from t2s_pipeline.scoring.output import OutputScore
from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline.sql.schema import Schema, live_schema


@dataclass(frozen=True)
class PairScore:
    """Every family for one gold/candidate pair on one database (SPEC §15)."""

    output: OutputScore
    components: ComponentScores
    required_tables: tuple[str, ...]
    gold: ExecutedResult
    candidate: ExecutedResult
    candidate_parse_error: str | None
    ceilings: tuple[str, ...]
    diagnosis: Diagnosis | None = None

    def to_json(self) -> dict[str, object]:
        data = self.output.to_json()
        data["ceilings"] = list(self.ceilings)
        data["component"] = self.components.to_json()
        data["retrieval"] = {"required": list(self.required_tables)}
        data["gold"] = {
            "status": self.gold.status,
            "reason": self.gold.reason,
            "rows": len(self.gold.rows),
        }
        data["candidate"] = {
            "status": self.candidate.status,
            "reason": self.candidate.reason,
            "rows": len(self.candidate.rows),
            "parse_error": self.candidate_parse_error,
        }
        if self.diagnosis is not None:
            data["diagnosis"] = {
                "primary": self.diagnosis.category,
                "also": list(self.diagnosis.categories[1:]),
                "findings": [f.text for f in self.diagnosis.findings],
            }
        return data


def score_pair(
    target: str,
    gold_sql: str,
    candidate_sql: str,
    dialect: str | None = None,
    allowed_schemas: Sequence[str] | None = None,
    settings: ScorerSettings | None = None,
) -> PairScore:
    """Run both queries through the guarded executor and score every family.

    ``allowed_schemas`` defaults to every schema of the database (a scoring session, not a
    serving one); the database is opened read-only either way.
    """

    settings = settings or ScorerSettings()
    spec = engine_for(target)
    engine = spec.name
    dialect = dialect or spec.dialect
    schema = live_schema(target, engine, allowed_schemas)
    schemas = tuple(allowed_schemas) if allowed_schemas else _schema_names(schema, engine)
    guard = Guard(
        allowed_schemas=schemas, dialect=dialect, row_limit=None, eval_row_cap=settings.eval_row_cap
    )
    with open_executor(target, guard) as executor:
        gold = from_outcome("gold", executor.run(gold_sql))
        candidate = from_outcome("candidate", executor.run(candidate_sql))
    pair = analyse_pair(gold_sql, candidate_sql, dialect, schema)
    analysis = ItemAnalysis(
        item_id="pair",
        case_id="pair",
        required_tables=tuple(sorted(pair.gold.required_tables)),
        gold_columns=pair.gold.output_columns,
        gold_components=pair.gold.components,
        gold_ordered=pair.gold.has_order_by,
        candidate_columns=None if pair.candidate is None else pair.candidate.output_columns,
        candidate_components=None if pair.candidate is None else pair.candidate.components,
        candidate_error=pair.candidate_error,
        gold_order_keys=pair.gold.order_keys,
        candidate_order_keys=None if pair.candidate is None else pair.candidate.order_keys,
        gold_clauses=pair.gold.top_clauses,
    )
    output = score_item_output(analysis, gold, candidate, settings)
    return PairScore(
        output=output,
        components=score_components(analysis.gold_components, analysis.candidate_components),
        required_tables=analysis.required_tables,
        gold=gold,
        candidate=candidate,
        candidate_parse_error=pair.candidate_error,
        # The same ceilings a run records for an item (no SUT, so no agent or isolation ones).
        ceilings=tuple(item_ceilings(None, gold, candidate, output, isolated=True, drift=False)),
        diagnosis=pair_diagnosis(analysis, output, gold, candidate),
    )


def pair_diagnosis(
    analysis: ItemAnalysis,
    output: OutputScore,
    gold: ExecutedResult,
    candidate: ExecutedResult,
) -> Diagnosis:
    """The diagnosis a run would store for this pair (no retrieval trace: nothing offered)."""
    stored = {
        **output_row(analysis, output, output.ceilings),
        "gold_status": gold.status,
        "candidate_status": candidate.status,
    }
    found = evidence(
        stored,
        component_row(analysis),
        {},
        candidate_failed=candidate.status != "ok",
        gold_failed=gold.status != "ok",
    )
    return diagnose(found)


def _schema_names(schema: Schema, engine: str) -> tuple[str, ...]:
    return tuple(sorted(schema.tables)) or engine_named(engine).search_path or ("main",)
