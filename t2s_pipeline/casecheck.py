"""Checks that need the database: gold SQL parses and runs read-only, twins, freezing.

Loading (``cases.py``) is pure file work; this module adds what only the live domain database
can tell. Gold queries run through the guarded executor like every other query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from t2s_pipeline.cases import Case, CaseProblem, CaseSet, Domain, expected_block, write_expected
from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.execution import Guard, QueryOutcome, open_executor
from t2s_pipeline.execution.records import from_outcome
from t2s_pipeline.execution.registry import engine_named
from t2s_pipeline.progress import Note
from t2s_pipeline.scoring.item import gold_drift
from t2s_pipeline.sql.canonical import find_twins


@dataclass
class CheckReport:
    """Everything ``t2s cases check`` finds about a case set."""

    case_set: CaseSet
    problems: list[CaseProblem] = field(default_factory=list)
    twins: list[tuple[str, ...]] = field(default_factory=list)
    snapshot_mismatch: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and self.snapshot_mismatch is None


def run_gold(domain: Domain, case: Case, eval_row_cap: int | None = 100_000) -> QueryOutcome:
    """Run one case's gold SQL through the guarded executor."""
    with open_executor(
        domain.database_for(case),
        Guard.for_evaluation(domain.allowed_schemas, domain.dialect, eval_row_cap),
    ) as ex:
        return ex.run(case.gold_sql)


def check_case_set(case_set: CaseSet, progress: Note | None = None) -> CheckReport:
    """Validate files, run every gold query read-only, report twins and snapshot drift."""
    say = progress or (lambda _m: None)
    report = CheckReport(case_set, problems=list(case_set.problems))
    report.snapshot_mismatch = _snapshot_mismatch(case_set.domain)
    for index, case in enumerate(case_set.cases, start=1):
        say(f"[{index}/{len(case_set.cases)}] {case.id}")
        outcome = run_gold(case_set.domain, case)
        problem = _gold_problem(case, outcome)
        if problem is None and not report.snapshot_mismatch:  # a new snapshot explains drift
            problem = _drift_problem(case, outcome)
        if problem is not None:
            report.problems.append(problem)
    twins = find_twins(case_set.cases, case_set.domain)
    groups = {tuple(sorted(others | {cid})) for cid, others in twins.items() if others}
    report.twins = sorted(groups)
    return report


def freeze_case_set(case_set: CaseSet, progress: Note | None = None) -> list[CaseProblem]:
    """Write each case's live gold result into its file as ``expected_result``."""
    say = progress or (lambda _m: None)
    problems: list[CaseProblem] = []
    for case in case_set.cases:
        outcome = run_gold(case_set.domain, case)
        problem = _gold_problem(case, outcome)
        if problem is not None:
            problems.append(problem)
            continue
        write_expected(Path(case.path), expected_block(outcome.columns, outcome.rows))
        say(f"froze {case.id}: {len(outcome.rows)} row(s)")
    return problems


def _refusal_fix(reason: str) -> str:
    """What to change, by what the guard said (the reasons are the filter's own wording).

    >>> _refusal_fix("cannot parse the statement: Invalid expression")
    'correct the SQL syntax in gold_sql'
    """
    if (
        "cannot parse" in reason
        or "cannot read the statement" in reason
        or "cannot compile" in reason
    ):
        return "correct the SQL syntax in gold_sql"
    if "outside the allowlisted schemas" in reason:
        return "read only allowlisted schemas, or add the schema to allowed_schemas in domain.yaml"
    return "write gold_sql as one read-only statement over the allowlisted schemas"


def _drift_problem(case: Case, outcome: QueryOutcome) -> CaseProblem | None:
    """The frozen ``expected_result`` no longer equals the live gold result (§10 gold_drift)."""
    if case.expected_result is None or not gold_drift(
        case, from_outcome("gold", outcome), ScorerSettings()
    ):
        return None
    return CaseProblem(
        case.path, "expected_result",
        f"differs from the live gold result ({len(case.expected_result.rows)} row(s) frozen, "
        f"{len(outcome.rows)} live)",
        "if the data or the SQL changed on purpose, re-freeze with `t2s cases freeze`",
        case.id,
    )  # fmt: skip


def _gold_problem(case: Case, outcome: QueryOutcome) -> CaseProblem | None:
    if outcome.refused:
        return CaseProblem(
            case.path, "gold_sql", f"refused by the {outcome.layer} layer: {outcome.reason}",
            _refusal_fix(outcome.reason or ""), case.id,
        )  # fmt: skip
    if outcome.error is not None:
        return CaseProblem(
            case.path, "gold_sql", f"does not run: {outcome.error}",
            "correct the query against the live schema", case.id,
        )  # fmt: skip
    if outcome.truncated:
        return CaseProblem(
            case.path, "gold_sql", "result exceeds the evaluation row cap",
            "aggregate or filter so the answer is reviewable", case.id,
        )  # fmt: skip
    return None


def _snapshot_mismatch(domain: Domain) -> str | None:
    read_hash = engine_named(domain.engine).snapshot_hash
    if domain.snapshot is None or read_hash is None or "{db_id}" in domain.database:
        return None
    try:
        live = read_hash(domain.database_for())
    except Exception as error:  # a foreign DuckDB file has no meta.snapshot table
        return f"cannot read the snapshot hash: {error}"
    if live != domain.snapshot:
        return (
            f"warehouse snapshot {live[:12]} differs from the pinned {domain.snapshot[:12]}; "
            "rebuild with `t2s demo build` or re-pin after `t2s cases freeze`"
        )
    return None
