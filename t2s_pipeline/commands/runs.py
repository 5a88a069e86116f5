"""``t2s run``, ``t2s runs``, ``t2s show`` and ``t2s compare``: evaluation runs from the shell."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from t2s_pipeline.errors import ConfigError
from t2s_pipeline.store import ResultsStore

DEFAULT_HOME = Path(".t2s/dagster_home")
DEFAULT_RESULTS = Path(".t2s/results.duckdb")


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="register a configuration's run and materialise it")
    run.add_argument("--config", type=Path, required=True, help="e.g. configs/baseline.yaml")
    run.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    run.set_defaults(func=run_command)

    runs = subparsers.add_parser("runs", help="list evaluated runs with their summaries")
    runs.add_argument("--json", action="store_true")
    runs.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    runs.set_defaults(func=_runs)

    show = subparsers.add_parser("show", help="a run's summary, or one item's rows and scores")
    show.add_argument("run_id")
    show.add_argument("--item", help="item id, e.g. rev-card-last-month#0")
    show.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    show.set_defaults(func=_show)

    compare = subparsers.add_parser("compare", help="paired deltas and regressions of two runs")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--json", action="store_true")
    compare.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    compare.set_defaults(func=_compare)


def dagster_home() -> Path:
    """``DAGSTER_HOME`` if set, else a project-local instance that ``dagster dev`` can share."""
    home = Path(os.environ.get("DAGSTER_HOME", DEFAULT_HOME)).resolve()
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").touch()  # the default instance: runs and events stored in this folder
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def run_command(args: argparse.Namespace) -> int:
    """Register and materialise one configuration's run; print its summary."""
    from t2s_pipeline.assets.launch import run_config
    from t2s_pipeline.assets.resources import T2SSettings

    home = dagster_home()
    outcome = run_config(args.config, T2SSettings(results_path=str(args.results)))
    print(outcome.summary_markdown)
    print(
        f"\nrun {outcome.run_id}: {'succeeded' if outcome.success else 'FAILED'}; "
        f"results in {args.results}; Dagster instance {home}\n"
        f"See it in the UI: DAGSTER_HOME={home} .venv/bin/dagster dev -w workspace.yaml"
    )
    return 0 if outcome.success else 1


def _runs(args: argparse.Namespace) -> int:
    runs = _summaries(ResultsStore(args.results))
    if args.json:
        print(json.dumps(runs, indent=2, default=str))
        return 0
    for run in runs:
        exact = run["families"].get("exact", {}).get("ex", {})
        ex = "undefined" if exact.get("mean") is None else f"{exact['mean']:.3f}"
        print(f"{run['run_id']:<40} {run['config']:<24} items {run['n_items']:>5}  EX {ex}")
    return 0


def _summaries(store: ResultsStore) -> list[dict[str, Any]]:
    runs = store.read("runs")
    out = []
    for row in runs.sort_values("started_at").itertuples(index=False) if not runs.empty else []:
        summary = json.loads(str(row.summary_json)) if isinstance(row.summary_json, str) else {}
        out.append(
            {
                "run_id": row.run_id,
                "config": row.config_name,
                "started_at": row.started_at,
                "ended_at": row.ended_at,
                "n_items": summary.get("n_items", 0),
                "families": summary.get("families", {}),
                "ceilings": summary.get("ceilings", {}),
                "ex_by_difficulty": summary.get("ex_by_difficulty", {}),
                "diagnoses": summary.get("diagnoses", {}),
                "robustness": summary.get("robustness"),
            }
        )
    return out


def _show(args: argparse.Namespace) -> int:
    from t2s_pipeline import evaluation as ev

    store = ResultsStore(args.results)
    if args.run_id not in store.run_ids():
        raise ConfigError(f"no run {args.run_id!r} in {args.results}; `t2s runs` lists them")
    if args.item is None:
        print(ev.summarise_run(store, args.run_id).to_markdown())
        return 0
    print(ev.describe_item(store, args.run_id, args.item))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from t2s_pipeline import evaluation as ev

    store = ResultsStore(args.results)
    known = set(store.run_ids())
    for run_id in (args.run_a, args.run_b):
        if run_id not in known:
            raise ConfigError(f"no run {run_id!r} in {args.results}; `t2s runs` lists them")
    comparison = ev.compare(store, args.run_a, args.run_b)
    if args.json:
        data = {
            "run_a": comparison.run_a,
            "run_b": comparison.run_b,
            "n_shared": comparison.n_shared,
            "deltas": comparison.to_frame().to_dict("records"),
            "regressions": comparison.regressions_frame().to_dict("records"),
        }
        print(json.dumps(data, indent=2, default=str))
    else:
        print(comparison.to_text())
    sys.stdout.flush()
    return 0
