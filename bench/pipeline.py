"""End-to-end pipeline benchmark: N items (demo cases replicated with fresh ids) through the
built-in agent, every asset materialised. Prints the run's time against its floor (every gold
and candidate query executed once through the bare database plus a plain exact comparison,
timed here) as `end-to-end / floor: X`, the harness's own cost per item, where the time goes,
the machine's CPU time during the run (and the least time that work needs on this machine's
cores, in floors), a second configuration on the same cases, and with several sizes how the
time scales.

    .venv/bin/python bench/pipeline.py --items 1000 10000 [--plain]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import dagster as dg
import duckdb
import yaml

from t2s_pipeline.assets.evaluation import FAST_CHECKS
from t2s_pipeline.assets.launch import run_config
from t2s_pipeline.assets.resources import T2SSettings
from t2s_pipeline.cases import load_cases
from t2s_pipeline.demo.generate import build_warehouse
from t2s_pipeline.run.runner import run_config_plainly
from t2s_pipeline.spread import cores
from t2s_pipeline.store import ResultsStore
from t2s_pipeline.suites import HOSTILE_SUITE

REPO = Path(__file__).resolve().parents[1]
SUT_STEPS = {"sut_responses"}
DB_STEPS = {"gold_results", "candidate_results"}


def replicate_cases(
    target: Path, warehouse: Path, n_items: int, identical_copies: bool = False
) -> None:
    """Copy the demo cases until there are ``n_items`` main-phrasing items, fresh ids each.

    Each copy's gold SQL opens with its own comment line (``-- copy N``), so no two cases share
    a gold text: a cache keyed by SQL text helps this benchmark no more than a project whose
    cases are all different (``identical_copies`` keeps the texts equal, as before)."""
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
        copy = index // len(sources)
        data["id"] = f"{data['id']}-r{copy}"
        if copy and not identical_copies:
            data["gold_sql"] = f"-- copy {copy}\n{data['gold_sql']}"
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


def floor_seconds(store: ResultsStore, run_id: str, cases: Path, warehouse: Path) -> float:
    """The least any harness must spend: every item's gold and candidate query executed once
    through the bare database (no guard, no limits) and their rows compared as multisets."""
    case_set = load_cases(cases)
    gold_sql = {c.id: c.gold_sql for c in case_set.cases}
    responses = store.read("sut_responses", run_id)
    pairs = [
        (gold_sql[str(row.case_id)], row.sql if isinstance(row.sql, str) else None)
        for row in responses.itertuples(index=False)
    ]
    connection = duckdb.connect(str(warehouse), read_only=True)
    started = time.perf_counter()
    for gold, candidate in pairs:
        expected = connection.execute(gold).fetchall()
        try:
            got = connection.execute(candidate).fetchall() if candidate else None
        except duckdb.Error:
            got = None
        _ = got is not None and sorted(map(repr, got)) == sorted(map(repr, expected))
    seconds = time.perf_counter() - started
    connection.close()
    return seconds


def bench_settings(root: Path, cases: Path, config: Path, warehouse: Path) -> T2SSettings:
    return T2SSettings(
        cases_dir=str(cases),
        configs_dir=str(config.parent),
        registry_dir=str(root / "runs"),
        results_path=str(root / "results"),
        hostile_dir=str(HOSTILE_SUITE),
        warehouse_path=str(warehouse),
    )


def write_config(root: Path, name: str, cases: Path, notes: bool = True) -> Path:
    config = root / "configs" / f"{name}.yaml"
    config.parent.mkdir(exist_ok=True)
    sut: dict[str, object] = {"kind": "builtin"}
    if not notes:
        sut["use_comments"] = False
    config.write_text(
        yaml.safe_dump({"name": name, "cases": str(cases), "phrasings": "main", "sut": sut})
    )
    return config


def machine_cpu_seconds() -> float | None:
    """CPU time every process on this machine has used since it started (Linux ``/proc/stat``:
    all but idle and I/O wait), or None where there is no such file."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def dagster_run(
    config: Path, settings: T2SSettings
) -> tuple[str, float, dict[str, float], float | None]:
    """One partition through Dagster; the run id, its wall time, each step's seconds and the
    CPU time the machine used meanwhile (the run's own processes, the SUT's, the guard's
    workers; on an idle machine, nothing else)."""
    with dg.instance_for_test() as instance:
        cpu_before = machine_cpu_seconds()
        started = time.perf_counter()
        outcome = run_config(config, settings, instance, checks=FAST_CHECKS)
        wall = time.perf_counter() - started
        cpu_after = machine_cpu_seconds()
        assert outcome.success, "the benchmark run failed"
        runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": outcome.run_id}))
        steps: dict[str, float] = {}
        for run in runs:
            steps.update(step_seconds(instance, run.run_id))
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return outcome.run_id, wall, steps, cpu


def report(
    label: str,
    n_items: int,
    wall: float,
    floor: float,
    steps: dict[str, float],
    cpu: float | None = None,
) -> None:
    sut = sum(v for k, v in steps.items() if k in SUT_STEPS)
    database = sum(v for k, v in steps.items() if k in DB_STEPS)
    print(f"\n{label}: {n_items} items end to end in {wall:.1f} s ({n_items / wall:.1f} items/s)")
    print(f"  floor (bare database, every gold + candidate once, plain compare): {floor:.2f} s")
    print(f"  end-to-end / floor: {wall / floor:.2f}")
    if cpu is not None:
        n_cores = cores()
        print(
            f"  CPU: {cpu:.1f} core-seconds ({cpu / wall:.2f} of {n_cores} cores on average); "
            f"this work spread perfectly over {n_cores} cores takes at least "
            f"{cpu / n_cores:.1f} s ({cpu / n_cores / floor:.2f} floors)"
        )
    print(f"  harness per item (run time minus floor): {(wall - floor) / n_items * 1000:.1f} ms")
    print(
        f"  harness per item (run time minus floor and SUT): "
        f"{(wall - floor - sut) / n_items * 1000:.1f} ms"
    )
    print(f"  SUT {sut:.1f} s, guarded database steps {database:.1f} s")
    print("  per step (s):")
    for key, seconds in sorted(steps.items(), key=lambda kv: -kv[1]):
        print(f"    {key:<38}{seconds:>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, nargs="+", default=[1000])
    parser.add_argument(
        "--identical-copies",
        action="store_true",
        help="copies of a case keep its gold SQL text (caches keyed by text then hit)",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="also evaluate without Dagster (python -m t2s_pipeline.run)",
    )
    args = parser.parse_args()
    walls: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="t2s-bench-pipeline-") as tmp:
        base = Path(tmp)
        warehouse = build_warehouse(base / "warehouse.duckdb").path
        for n_items in args.items:
            root = base / f"n{n_items}"
            cases = root / "cases" / "bench"
            replicate_cases(cases, warehouse, n_items, args.identical_copies)
            config = write_config(root, "bench", cases)
            settings = bench_settings(root, cases, config, warehouse)
            run_id, wall, steps, cpu = dagster_run(config, settings)
            walls[n_items] = wall
            floor = floor_seconds(settings.store(), run_id, cases, warehouse)
            report("Dagster", n_items, wall, floor, steps, cpu)
            # A second configuration on the same cases: each gold's reading (analysis, canonical
            # form) and the analyses of identical pairs come from the first run's caches; the
            # gold queries themselves run live again.
            second = write_config(root, "bench-no-notes", cases, notes=False)
            run_b, wall_b, steps_b, cpu_b = dagster_run(second, settings)
            report("second configuration", n_items, wall_b,
                   floor_seconds(settings.store(), run_b, cases, warehouse), steps_b, cpu_b)  # fmt: skip
            if args.plain:
                started = time.perf_counter()
                plain = run_config_plainly(
                    write_config(root, "bench-plain", cases), root / "plain", root / "plain-runs",
                    say=lambda _: None,
                )  # fmt: skip
                plain_wall = time.perf_counter() - started
                report("plain runner", n_items, plain_wall, floor, plain.seconds)
            shutil.rmtree(root, ignore_errors=True)
    if len(walls) > 1:
        small, large = min(walls), max(walls)
        print(
            f"\n{large} items / {small} items: {walls[large] / walls[small]:.2f}x the time "
            f"for {large / small:.0f}x the items"
        )


if __name__ == "__main__":
    main()
