"""End-to-end pipeline benchmark: N items (demo cases replicated with fresh ids) through the
built-in agent, every asset materialised. Prints items per second and where the time goes:
the SUT (asking), the database (gold and candidate execution) and the harness (the rest).

    .venv/bin/python bench/pipeline.py --items 1000
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import dagster as dg
import yaml

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.suites import HOSTILE_SUITE

REPO = Path(__file__).resolve().parents[1]
SUT_STEPS = {"sut_responses"}
DB_STEPS = {"gold_results", "candidate_results"}


def replicate_cases(target: Path, warehouse: Path, n_items: int) -> None:
    """Copy the demo cases until there are ``n_items`` main-phrasing items, fresh ids each."""
    target.mkdir(parents=True)
    domain = yaml.safe_load((REPO / "cases/erp/domain.yaml").read_text())
    domain["database"] = str(warehouse)
    (target / "domain.yaml").write_text(yaml.safe_dump(domain))
    sources = sorted(
        p
        for p in (REPO / "cases/erp").glob("*.yaml")
        if p.name not in ("domain.yaml", "labels.yaml")
    )
    for index in range(n_items):
        source = sources[index % len(sources)]
        data = yaml.safe_load(source.read_text())
        data["id"] = f"{data['id']}-r{index // len(sources)}"
        (target / f"{data['id']}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def step_seconds(instance: dg.DagsterInstance, run_id: str) -> dict[str, float]:
    """Duration of every step of one Dagster run, from its event log."""
    started: dict[str, float] = {}
    durations: dict[str, float] = {}
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is None or record.step_key is None:
            continue
        if event.event_type_value == "STEP_START":
            started[record.step_key] = record.timestamp
        elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
            durations[record.step_key] = record.timestamp - started.get(
                record.step_key, record.timestamp
            )
    return durations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="t2s-bench-pipeline-") as tmp:
        root = Path(tmp)
        warehouse = build_warehouse(root / "warehouse.duckdb").path
        cases = root / "cases" / "bench"
        replicate_cases(cases, warehouse, args.items)
        config = root / "configs" / "bench.yaml"
        config.parent.mkdir()
        config.write_text(
            yaml.safe_dump(
                {
                    "name": "bench",
                    "cases": str(cases),
                    "phrasings": "main",
                    "sut": {"kind": "builtin"},
                }
            )
        )
        settings = T2SSettings(
            cases_dir=str(cases),
            configs_dir=str(config.parent),
            registry_dir=str(root / "runs"),
            results_path=str(root / "results"),
            hostile_dir=str(HOSTILE_SUITE),
            warehouse_path=str(warehouse),
        )
        with dg.instance_for_test() as instance:
            started = time.perf_counter()
            outcome = run_config(config, settings, instance, checks=FAST_CHECKS)
            wall = time.perf_counter() - started
            assert outcome.success, "the benchmark run failed"
            runs = instance.get_runs(
                filters=dg.RunsFilter(tags={"dagster/partition": outcome.run_id})
            )
            steps: dict[str, float] = {}
            for run in runs:
                steps.update(step_seconds(instance, run.run_id))
        shutil.rmtree(root, ignore_errors=True)
    total_steps = sum(steps.values())
    sut = sum(v for k, v in steps.items() if k in SUT_STEPS)
    database = sum(v for k, v in steps.items() if k in DB_STEPS)
    harness = wall - sut - database
    print(f"{args.items} items end to end in {wall:.1f} s: {args.items / wall:.1f} items/s")
    print(f"{'share':<28}{'seconds':>9}{'share':>8}")
    for label, seconds in (
        ("SUT (asking the agent)", sut),
        ("database (gold + candidate)", database),
        ("harness (everything else)", harness),
    ):
        print(f"{label:<28}{seconds:>9.1f}{seconds / wall:>8.0%}")
    print("\nper step (s):")
    for key, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
        print(f"  {key:<40}{seconds:>7.2f}")
    print(f"  {'(sum of steps)':<40}{total_steps:>7.2f}")


if __name__ == "__main__":
    main()
