"""The unpartitioned ``gold_cases`` asset: the validated case set and its hash."""
# No `from __future__ import annotations`: Dagster inspects the context annotation at runtime.

import dagster as dg

from t2s_pipeline.assets.resources import T2SSettings


@dg.asset(group_name="gold", description="The gold case set: valid cases, problems, hash.")
def gold_cases(context: dg.AssetExecutionContext, settings: T2SSettings) -> dg.MaterializeResult:
    case_set = settings.case_set()
    for problem in case_set.problems:
        context.log.warning(str(problem))
    metadata: dict[str, dg.MetadataValue | int | str | float] = {
        "case_set_hash": case_set.content_hash,
        "n_cases": len(case_set.cases),
        "n_items": sum(len(c.questions) for c in case_set.cases),
        "n_problems": len(case_set.problems),
        "dagster/row_count": len(case_set.cases),
    }
    for band, count in case_set.counts_by_difficulty().items():
        metadata[f"cases/{band}"] = count
    return dg.MaterializeResult(
        metadata=metadata, data_version=dg.DataVersion(case_set.content_hash[:16])
    )
