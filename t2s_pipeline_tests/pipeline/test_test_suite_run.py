"""A run with test suites on (issue 22): ``ex_ts`` beside EX, the item that matches on the
snapshot only named with its neighbour and rows, and the diagnosis saying so.

The system under test is a Python function that answers every case with its gold query except
one, where it widens the reviewer's 90-day window by one day (no account was opened on that day,
so the snapshot cannot tell)."""

from __future__ import annotations

import json
from pathlib import Path

from t2s_pipeline.cases import load_cases
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.sut.contract import AskRequest

from .conftest import Project

WIDE = "new-customers-last-90-days"
ANSWERS: dict[str, str] = {}


def answer(request: AskRequest) -> dict[str, object]:
    """The SUT: the gold query of the case the request excludes (its own), except for WIDE."""
    return {"sql": ANSWERS[request.exclude_examples[0]]}


def test_ex_ts_catches_the_one_day_too_wide_window(project: Project, tmp_path: Path) -> None:
    cases = load_cases(project.settings.cases_dir).cases
    ANSWERS.update({case.id: case.gold_sql for case in cases})
    gold = ANSWERS[WIDE]
    assert "DATE '2025-04-02'" in gold
    ANSWERS[WIDE] = gold.replace("DATE '2025-04-02'", "DATE '2025-04-01'")
    config = project.config(
        "suite-on",
        sut={
            "kind": "python",
            "callable": f"{__name__}:answer",
            "supports_exclusions": True,
            "isolate": True,
        },
        test_suite={"enabled": True, "random_neighbours": 2},
    )
    done = run_config_plainly(
        config, tmp_path / "results", tmp_path / "registry", say=lambda _: None
    )
    store = ResultsStore(tmp_path / "results")
    matches = store.read("test_suite_matches", done.spec.run_id).set_index("item_id")
    assert len(matches) == len(cases)
    wide = matches.loc[f"{WIDE}#0"]
    assert bool(wide["exact_match"]) and not bool(wide["ex_ts"])
    assert wide["told_apart_by"] == "boundary-below"
    assert json.loads(wide["reference_json"])["rows"] != json.loads(wide["candidate_json"])["rows"]
    others = matches.drop(index=f"{WIDE}#0")
    assert others["ex_ts"].eq(others["exact_match"]).all()
    diagnosis = store.read("diagnoses", done.spec.run_id).set_index("item_id").loc[f"{WIDE}#0"]
    assert diagnosis["category"] == "wrong_filter"
    texts = [f["text"] for f in json.loads(diagnosis["findings_json"])]
    assert any(
        t.startswith("matches on the snapshot only: on neighbour boundary-below") for t in texts
    )
    summary = done.summary
    assert summary is not None
    ex, ex_ts = summary.families["exact"]["ex"], summary.families["exact"]["ex_ts"]
    assert ex_ts.n == ex.n == len(cases)
    assert ex_ts.mean is not None and ex.mean is not None
    assert round((ex.mean - ex_ts.mean) * ex.n) == 1
