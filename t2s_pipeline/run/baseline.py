"""Which run a run is compared with (SPEC 13): never merely the one that started before it.

The **baseline** of a run is, in order: its configuration's ``compare_to`` (a run id, or a
configuration name meaning that configuration's latest finished run on the same case folder);
else the **champion** of its case folder, the run last promoted by a recorded decision
(``t2s promote RUN --by WHO --reason WHY`` writes ``decisions/promotions/<run_id>.yaml``);
else none, and the run is compared with nothing.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from t2s_pipeline.errors import ConfigError
from t2s_pipeline.store import ResultsStore

PROMOTIONS = "promotions"


@dataclass(frozen=True)
class Baseline:
    run_id: str | None
    chosen_by: str
    """How it was chosen, in words (``compare_to: baseline``, ``champion, promoted by ...``)."""


@dataclass(frozen=True)
class Promotion:
    run_id: str
    promoted_by: str
    reason: str
    promoted_at: str
    cases: str


def promote(
    store: ResultsStore, run_id: str, by: str, reason: str, decisions: Path
) -> tuple[Promotion, Path]:
    """Record ``run_id`` as the champion of its case folder; returns the decision file."""
    if not by.strip() or not reason.strip():
        raise ConfigError("a promotion says who decided and why. Fix: --by WHO --reason WHY")
    runs = _finished(store)
    if run_id not in set(runs["run_id"]):
        known = ", ".join(sorted(runs["run_id"].astype(str))[-5:]) or "none"
        raise ConfigError(
            f"run {run_id} has not finished in {store.path}. Fix: promote a finished run "
            f"(t2s runs lists them; latest: {known})"
        )
    cases = str(runs.loc[runs["run_id"] == run_id, "cases_dir"].iloc[0])
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    promotion = Promotion(run_id, by.strip(), reason.strip(), now, cases)
    path = decisions / PROMOTIONS / f"{run_id}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(promotion.__dict__, sort_keys=False), encoding="utf-8")
    return promotion, path


def promotions(decisions: Path) -> list[Promotion]:
    """Every recorded promotion, oldest first (a malformed file is named, not skipped)."""
    found = []
    for path in sorted((decisions / PROMOTIONS).glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        missing = [k for k in ("promoted_by", "reason", "promoted_at", "cases") if not data.get(k)]
        if missing:
            raise ConfigError(
                f"{path}: field {missing[0]!r} is missing. Fix: record promotions with t2s promote"
            )
        found.append(
            Promotion(
                path.stem,
                str(data["promoted_by"]),
                str(data["reason"]),
                str(data["promoted_at"]),
                str(data["cases"]),
            )
        )
    return sorted(found, key=lambda p: p.promoted_at)


def champion(store: ResultsStore, cases: str, decisions: Path) -> Promotion | None:
    """The run last promoted on the case folder ``cases`` that is in this store."""
    finished = set(_finished(store)["run_id"])
    eligible = [p for p in promotions(decisions) if p.cases == cases and p.run_id in finished]
    return eligible[-1] if eligible else None


def baseline_for(store: ResultsStore, run_id: str, decisions: Path) -> Baseline:
    """The run ``run_id`` is compared with, and how it was chosen."""
    runs = store.read("runs")
    this = runs[runs["run_id"] == run_id]
    if this.empty:
        return Baseline(None, f"run {run_id} is not recorded")
    row = this.iloc[0]
    finished = _finished(store)
    finished = finished[finished["run_id"] != run_id]
    target = json.loads(str(row["config_json"])).get("compare_to")
    if target:
        return _named(finished, str(target), str(row["cases_dir"]))
    best = champion(store, str(row["cases_dir"]), decisions)
    if best is not None and best.run_id != run_id:
        return Baseline(
            best.run_id, f"champion, promoted by {best.promoted_by} on {best.promoted_at[:10]}"
        )
    return Baseline(
        None,
        "none: set compare_to in the configuration or promote a run (t2s promote RUN --by WHO "
        "--reason WHY)",
    )


def _named(finished: pd.DataFrame, target: str, cases: str) -> Baseline:
    if target in set(finished["run_id"]):
        return Baseline(target, f"compare_to: {target}")
    same = finished[(finished["config_name"] == target) & (finished["cases_dir"] == cases)]
    if same.empty:
        return Baseline(None, f"compare_to: {target}, which has no finished run on {cases} yet")
    latest = str(same.sort_values("ended_at").iloc[-1]["run_id"])
    return Baseline(latest, f"compare_to: {target} (its latest finished run)")


def _finished(store: ResultsStore) -> pd.DataFrame:
    runs = store.read("runs")
    return runs[runs["ended_at"].notna()] if not runs.empty else runs
