"""The items stage: cases x phrasings, each with its leave-one-out exclusions (the case and
its twins), stored with the request context the SUT is sent."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from t2s_pipeline.cases import CaseSet
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.record import record_run_start
from t2s_pipeline.run.rows import write
from t2s_pipeline.runs import run_tags
from t2s_pipeline.sql.canonical import find_twins
from t2s_pipeline.sut.client import Item, build_items
from t2s_pipeline.sut.contract import RequestContext


def items_rows(items: Sequence[Item], case_set: CaseSet) -> list[dict[str, object]]:
    cases = case_set.by_id()
    return [
        {
            "item_id": item.item_id,
            "case_id": item.case_id,
            "phrasing": item.phrasing,
            "question": item.question,
            "exclude_json": json.dumps(list(item.exclude)),
            "evidence": item.evidence,
            "difficulty": cases[item.case_id].difficulty,
            "context_json": None if item.context is None else item.context.model_dump_json(),
        }
        for item in items
    ]


def items_from_frame(data: pd.DataFrame) -> list[Item]:
    return [
        Item(
            item_id=str(row.item_id),
            case_id=str(row.case_id),
            phrasing=int(row.phrasing),  # type: ignore[arg-type]
            question=str(row.question),
            exclude=tuple(json.loads(str(row.exclude_json))),
            evidence=None if pd.isna(row.evidence) else str(row.evidence),
            context=_context(getattr(row, "context_json", None)),
        )
        for row in data.sort_values(["case_id", "phrasing"]).itertuples(index=False)
    ]


def _context(text: object) -> RequestContext | None:
    """An item's stored request context; None for items stored before contexts were sent."""
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    return RequestContext.model_validate_json(str(text))


def materialise(run: RunContext) -> StageResult:
    """Cases x phrasings, each with its leave-one-out exclusions (the case and its twins)."""
    case_set = run.case_set
    twins = find_twins(case_set.cases, case_set.domain)
    built = build_items(case_set, twins, run.spec.config.phrasings, run.spec.config.sut.isolate)
    n = write(run, "items", items_rows(built, case_set))
    record_run_start(run.store, run.spec, case_set)
    return StageResult(
        {
            "items": {
                "dagster/row_count": n,
                "n_cases": len(case_set.cases),
                "n_twin_cases": sum(1 for t in twins.values() if t),
                "title": title(run),
                **{f"run/{k.removeprefix('t2s/')}": v for k, v in run_tags(run.spec).items()},
            }
        }
    )


def title(run: RunContext) -> str:
    """A readable title: the configuration, its SUT and its labels."""
    config = run.spec.config
    labels = ", ".join(f"{k}={v}" for k, v in config.labels.items())
    sut = f"{config.sut.kind} {run.spec.sut_fingerprint}"
    return f"{config.name} ({sut}){': ' + labels if labels else ''}"
