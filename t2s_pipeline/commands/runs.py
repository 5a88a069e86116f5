"""``t2s run``, ``t2s runs``, ``t2s show`` and ``t2s compare``: evaluation runs from the shell."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from t2s_pipeline import console
from t2s_pipeline.commands.show import describe_item
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.execution.registry import engine_named
from t2s_pipeline.run.compare import compare
from t2s_pipeline.run.summary import summarise_run
from t2s_pipeline.store import ResultsStore

if TYPE_CHECKING:
    import pandas as pd

    from t2s_pipeline.cases import CaseSet

DEFAULT_HOME = Path(".t2s/dagster_home")
DEFAULT_RESULTS = Path(".t2s/results")
INSTANCE_YAML = """\
# The Dagster instance of this project's runs (written by t2s; edit freely).
telemetry:
  enabled: false
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser("run", help="register a configuration's run and materialise it")
    run.add_argument("--config", type=Path, required=True, help="e.g. configs/baseline.yaml")
    run.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    run.add_argument(
        "--rerun",
        action="store_true",
        help="evaluate again a run that finished before, under a new id (<run id>-rN)",
    )
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

    compare = subparsers.add_parser(
        "compare", help="paired deltas, improvements and regressions of two runs"
    )
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--json", action="store_true")
    compare.add_argument(
        "--top", type=int, default=None, help="list only the N largest improvements/regressions"
    )
    compare.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    compare.set_defaults(func=_compare)

    export = subparsers.add_parser(
        "export", help="one row per item of a run: SQL, status, every family, diagnosis"
    )
    export.add_argument("run_id")
    export.add_argument("--format", choices=("jsonl", "csv", "parquet"), default="jsonl")
    export.add_argument("--out", type=Path, default=None, help="file (default: standard output)")
    export.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    export.set_defaults(func=_export)


def preflight(config_path: Path) -> None:
    """Before a run is registered: the configuration is valid, and the SUT it names can be
    reached (HTTP health) or read (replay file). Raises ConfigError naming the fix.

    A run that starts anyway (from the UI or a sensor) still records each item's failure.
    """
    from t2s_pipeline.config import load_config
    from t2s_pipeline.errors import SutError
    from t2s_pipeline.sut.factory import http_client, python_client
    from t2s_pipeline.sut.replay import read_replay

    config = load_config(config_path)
    _check_cases(config_path, config.cases)
    fixes = {
        "replay": "correct sut.file or the file it names",
        "http": "start the SUT, or correct sut.url",
        "python": "correct sut.callable, or install the package that holds it",
    }
    try:
        if config.sut.kind == "replay" and config.sut.file:
            _check_replay_covers(config, read_replay(Path(config.sut.file))[1])
        elif config.sut.kind == "http" and config.sut.url:
            client = http_client(config, timeout_s=10.0)
            try:
                client.health()
            finally:
                client.close()
        elif config.sut.kind == "python":
            python_client(config).health()
    except SutError as error:
        raise ConfigError(
            f"{config_path}: the SUT is not ready: {str(error).rstrip('.?')}. "
            f"Fix: {fixes[config.sut.kind]}; no run was registered"
        ) from error
    _check_database(config.cases)


def _check_replay_covers(config: Any, predictions: dict[tuple[str, int], Any]) -> None:
    """A replay file answers every item the run will ask, or the run is not started."""
    from t2s_pipeline.cases import load_cases
    from t2s_pipeline.errors import SutError
    from t2s_pipeline.sut.client import build_items

    wanted = build_items(load_cases(config.cases), {}, config.phrasings, isolate=False)
    missing = [i.item_id for i in wanted if (i.case_id, i.phrasing) not in predictions]
    if missing:
        only_main = all(index == 0 for _, index in predictions)
        hint = " (it holds main questions only: set phrasings: main)" if only_main else ""
        raise SutError(
            f"replay file {config.sut.file} has no prediction for {len(missing)} of "
            f"{len(wanted)} items, e.g. {', '.join(missing[:3])}{hint}; record them all"
        )


def _check_cases(config_path: Path, cases: str) -> None:
    """The case folder is a domain with at least one valid case."""
    from t2s_pipeline.cases import load_cases

    folder = Path(cases)
    if not (folder / "domain.yaml").is_file():
        raise ConfigError(
            f"{config_path}: field 'cases': {folder.absolute()} holds no domain.yaml. Fix: "
            "point cases: at a domain folder (relative to the project), or create one with "
            "`t2s init`"
        )
    case_set = load_cases(folder)
    if not case_set.cases:
        raise ConfigError(
            f"{folder}: no valid gold case (problems: {len(case_set.problems)}). Fix: add a "
            "case file, or run `t2s cases check` to see what is wrong with them"
        )


def _check_database(cases: str) -> None:
    """A file engine's database file exists (a server is reached when the gold runs)."""
    from t2s_pipeline.cases import load_cases

    folder = Path(cases)
    domain = load_cases(folder).domain
    if engine_named(domain.engine).served_over_network or "{db_id}" in domain.database:
        return  # a server (reached when the gold runs) or one file per case
    database = Path(domain.database_for())
    if not database.is_file():
        demo = domain.name == "erp" and database.name == "warehouse.duckdb"
        fix = "run `t2s demo build` first" if demo else "correct database: or create the file"
        raise ConfigError(
            f"{folder / 'domain.yaml'}: field 'database': {database} does not exist. Fix: {fix}"
        )


def dagster_home() -> Path:
    """``DAGSTER_HOME`` if set, else a project-local instance that ``dagster dev`` can share.

    The instance's storage is created here under a lock in the folder: two ``t2s run`` started
    at once on a new instance would otherwise both create SQLite's schema tables, and one fails
    (``table alembic_version already exists``) or both stamp a version, which leaves the
    instance unreadable.
    """
    home = Path(os.environ.get("DAGSTER_HOME", DEFAULT_HOME)).resolve()
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    with open(home / ".t2s-instance.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        instance = home / "dagster.yaml"
        if not instance.exists() or not instance.read_text(encoding="utf-8").strip():
            # The default instance (runs and events stored in this folder), without the
            # telemetry notice between a run's lines.
            instance.write_text(INSTANCE_YAML, encoding="utf-8")
        _create_storage()
    return home


def _create_storage() -> None:
    """Open the instance once, touching each storage, so that each creates its schema now."""
    import dagster as dg

    from t2s_pipeline.assets.partitions import EVAL_RUN

    with dg.DagsterInstance.get() as instance:
        instance.get_runs(limit=1)
        instance.get_dynamic_partitions(EVAL_RUN)
        instance.all_instigator_state()
        instance.get_latest_materialization_event(dg.AssetKey("gold_cases"))


def run_command(args: argparse.Namespace) -> int:
    """Register and materialise one configuration's run; print its summary."""
    from t2s_pipeline.assets.launch import run_config
    from t2s_pipeline.assets.resources import T2SSettings

    preflight(args.config)
    home = dagster_home()
    console.enable()
    console.note(f"run {args.config}: the results go to {args.results}")
    try:
        outcome = run_config(
            args.config, T2SSettings(results_path=str(args.results)), rerun=args.rerun
        )
    finally:
        console.disable()
    if outcome.already_evaluated:
        print(
            f"run {outcome.run_id} was evaluated before with this configuration, these cases and "
            "this SUT; its results are kept and nothing ran. Its summary follows; "
            "`t2s run --rerun` evaluates again under a new id.\n",
            file=sys.stderr,
        )
    print(outcome.summary_markdown or "(no summary: the run did not finish)")
    for failure in outcome.failures:
        print(f"step {failure}", file=sys.stderr)
    for failure in outcome.failed_checks:
        print(f"check {failure}", file=sys.stderr)
    print(
        f"\nrun {outcome.run_id}: {'succeeded' if outcome.success else 'FAILED'}; "
        f"results in {args.results}; Dagster instance {home}\n"
        f"See it in the UI: DAGSTER_HOME={home} dagster dev -w workspace.yaml"
    )
    return 0 if outcome.success else 1


def _runs(args: argparse.Namespace) -> int:
    runs = _summaries(ResultsStore(args.results))
    if args.json:
        print(json.dumps(runs, indent=2, default=str))
        return 0
    if not runs:
        print(f"no runs in {args.results} yet; `t2s run --config configs/baseline.yaml` makes one")
    for run in runs:
        unfinished = run["ended_at"] is None or str(run["ended_at"]) in ("NaT", "None")
        state = (
            "  NOT FINISHED (failed or still running; see the Dagster run)" if unfinished else ""
        )
        print(f"{run['run_id']}  (config {run['config']}, {run['n_items']} items){state}")
        print(f"  {'SUT':<17} {run['sut_fingerprint'] or 'not recorded (an older run)'}")
        gold_failed = int(run["ceilings"].get("gold_failed", 0))
        for family, metric, label in _HEADLINES:
            figure = run["families"].get(family, {}).get(metric, {})
            print(f"  {label:<17} {_figure(figure, run['n_items'], gold_failed)}")
        raised = {k: v for k, v in run["ceilings"].items() if v}
        shown = ", ".join(f"{k} {v}" for k, v in sorted(raised.items())) or "none"
        print(f"  {'ceilings':<17} {shown}")
    return 0


_HEADLINES = (
    ("exact", "ex", "EX"),
    ("cells", "recall", "cell recall"),
    ("columns", "recall", "column recall"),
    ("retrieval", "recall", "retrieval recall"),
)


def _figure(figure: dict[str, Any], total: int | None = None, gold_failed: int = 0) -> str:
    """A stored mean as :class:`Mean` prints it, out of ``total`` items when given.

    >>> _figure({"mean": 0.5, "n": 4, "ci": [0.25, 0.75]})
    '0.500 [0.250, 0.750] (n=4)'
    >>> _figure({"mean": 0.5, "n": 4, "ci": None}, total=6, gold_failed=2)
    '0.500 (n=4 of 6, 2 gold failed)'
    >>> _figure({"mean": None, "n": 0, "ci": None})
    'undefined (n=0)'
    """
    from t2s_pipeline.scoring.stats import Mean

    ci = figure.get("ci")
    mean = Mean(figure.get("mean"), int(figure.get("n", 0)), (ci[0], ci[1]) if ci else None)
    return str(mean) if total is None else mean.of(int(total), gold_failed)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


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
                "code_version": getattr(row, "code_version", None),
                "sut_fingerprint": _text(getattr(row, "sut_fingerprint", None)),
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
    store = ResultsStore(args.results)
    if args.run_id not in store.run_ids():
        raise ConfigError(f"no run {args.run_id!r} in {args.results}; `t2s runs` lists them")
    if args.item is None:
        print(summarise_run(store, args.run_id).to_markdown())
        return 0
    print(describe_item(store, args.run_id, args.item))
    return 0


def _compare(args: argparse.Namespace) -> int:
    store = ResultsStore(args.results)
    known = set(store.run_ids())
    for run_id in (args.run_a, args.run_b):
        if run_id not in known:
            raise ConfigError(f"no run {run_id!r} in {args.results}; `t2s runs` lists them")
    comparison = compare(store, args.run_a, args.run_b)
    if args.json:
        data = {
            "run_a": comparison.run_a,
            "run_b": comparison.run_b,
            "n_shared": comparison.n_shared,
            "deltas": _records(comparison.to_frame()),
            "regressions": _records(comparison.regressions_frame()),
            "improvements": _records(comparison.improvements_frame()),
            "ex_by_difficulty": {
                band: {"delta": delta.mean, "ci": delta.ci, "n": delta.n}
                for band, delta in comparison.band_deltas
            },
            "diagnosis": {
                category: {"a": a, "b": b} for category, a, b in comparison.diagnosis_shift
            },
        }
        print(json.dumps(data, indent=2, default=str))
    else:
        print(comparison.to_text(top=args.top))
    sys.stdout.flush()
    return 0


def run_case_set(store: ResultsStore, run_id: str) -> tuple[CaseSet | None, list[str]]:
    """The case set a stored run ran on (today's copy of its folder) and notes on what differs:
    the folder is gone, or its cases changed since (then gold SQL is today's). Raises
    ConfigError for an unknown run."""
    from t2s_pipeline.cases import load_cases

    runs = store.read("runs", run_id)
    if runs.empty:
        raise ConfigError(f"no run {run_id!r} in {store.path}; `t2s runs` lists them")
    run = runs.iloc[0]
    try:
        case_set = load_cases(str(run["cases_dir"]))
    except Exception as error:  # the caller goes on without gold SQL, and says why
        return None, [f"gold SQL left empty: cannot read {run['cases_dir']}: {error}"]
    if case_set.content_hash != run["case_set_hash"]:
        return case_set, [f"the cases in {run['cases_dir']} changed since {run_id} ran; "
                          "gold SQL is today's"]  # fmt: skip
    return case_set, []


def _export(args: argparse.Namespace) -> int:
    from t2s_pipeline.export import export_frame, write_export

    store = ResultsStore(args.results)
    case_set, notes = run_case_set(store, args.run_id)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    frame = export_frame(store, args.run_id, case_set)
    text = write_export(frame, args.format, args.out)
    if text is not None:
        sys.stdout.write(text)
    else:
        print(f"wrote {len(frame)} items of {args.run_id} to {args.out}", file=sys.stderr)
    return 0


def _records(frame: pd.DataFrame) -> list[dict[str, object]]:
    """Rows as JSON-ready dicts: an undefined figure is null, not ``"<NA>"``."""
    cleaned = frame.astype(object).where(frame.notna(), None)
    return [{str(k): v for k, v in row.items()} for row in cleaned.to_dict("records")]
