"""``t2s demo``: build the demo warehouse, load it into PostgreSQL, run the demo end to end."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t2s_pipeline.demo.generate import DEFAULT_PATH, build_warehouse


def register(subparsers: argparse._SubParsersAction) -> None:
    demo = subparsers.add_parser("demo", help="the demo ERP warehouse and the demo run")
    sub = demo.add_subparsers(dest="demo_command", required=True)

    build = sub.add_parser("build", help="generate the demo warehouse (deterministic)")
    build.add_argument("--scale", type=float, default=1.0, help="1 = ~100k order lines")
    build.add_argument("--out", type=Path, default=DEFAULT_PATH, help="DuckDB file to write")
    build.set_defaults(func=_build)

    load = sub.add_parser("load-postgres", help="load the warehouse into PostgreSQL")
    load.add_argument("url", help="superuser URL, e.g. postgresql://postgres:pw@localhost/postgres")
    load.add_argument("--warehouse", type=Path, default=DEFAULT_PATH)
    load.add_argument("--database", default="t2s_demo")
    load.add_argument("--role", default="t2s_reader")
    load.add_argument("--password", default="t2s_reader")
    load.set_defaults(func=_load_postgres)

    mysql = sub.add_parser("load-mysql", help="load the warehouse into MySQL or MariaDB")
    mysql.add_argument("url", help="administrator URL, e.g. mysql://root:pw@127.0.0.1:3306/")
    mysql.add_argument("--warehouse", type=Path, default=DEFAULT_PATH)
    mysql.add_argument("--account", default="t2s_reader")
    mysql.add_argument("--password", default="t2s_reader")
    mysql.add_argument("--cases", type=Path, default=Path("cases/erp"), help="cases to copy")
    mysql.add_argument(
        "--cases-out", type=Path, help="also write the cases for MySQL here (gold transpiled)"
    )
    mysql.set_defaults(func=_load_mysql)

    run = sub.add_parser("run", help="what `make demo` runs: build, check cases, evaluate")
    run.add_argument("--cases", type=Path, default=Path("cases/erp"))
    run.add_argument("--config", type=Path, default=Path("configs/baseline.yaml"))
    run.add_argument(
        "--changed",
        type=Path,
        default=Path("configs/baseline-no-notes.yaml"),
        help="the changed configuration compared with --config (a second partition)",
    )
    run.set_defaults(func=_run)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _build(args: argparse.Namespace) -> int:
    report = build_warehouse(args.out, args.scale, progress=_say)
    rows = sum(report.row_counts.values())
    print(
        f"built {report.path} at scale {report.scale}: {rows:,} rows, "
        f"{report.bytes / 1e6:.1f} MB in {report.seconds:.1f} s; snapshot {report.snapshot_hash}"
    )
    return 0


def _load_postgres(args: argparse.Namespace) -> int:
    from t2s_pipeline.demo.postgres import load_postgres

    if not args.warehouse.exists():
        build_warehouse(args.warehouse, progress=_say)
    reader_url = load_postgres(
        args.warehouse, args.url, database=args.database, role=args.role, password=args.password
    )
    print(f"loaded {args.warehouse} into {args.database}; read-only role URL: {reader_url}")
    return 0


def _load_mysql(args: argparse.Namespace) -> int:
    from t2s_pipeline.demo.mysql import load_mysql, reader_url, write_mysql_cases

    if not args.warehouse.exists():
        build_warehouse(args.warehouse, progress=_say)
    url = load_mysql(args.warehouse, args.url, account=args.account, password=args.password)
    shown = reader_url(args.url, args.account, "***", "sales")
    print(f"loaded {args.warehouse} into databases sales, finance, inventory, hr, pii; "
          f"SELECT-only account URL: {shown}")  # fmt: skip
    if args.cases_out is not None:
        database = reader_url(args.url, args.account, "PASSWORD", "sales").replace(
            ":PASSWORD@", ":${T2S_MYSQL_PASSWORD}@", 1
        )
        n = write_mysql_cases(args.cases, args.cases_out, database)
        print(
            f"wrote {n} cases for MySQL to {args.cases_out} (database: {database}); "
            f"export T2S_MYSQL_PASSWORD={args.password!s} before a run"
        )
    del url
    return 0


def _run(args: argparse.Namespace) -> int:
    """Build the warehouse when missing, check the cases, evaluate the baseline and a changed
    configuration (two partitions), then print the baseline's summary and what changed."""
    from t2s_pipeline.assets.launch import run_config
    from t2s_pipeline.assets.resources import T2SSettings
    from t2s_pipeline.casecheck import check_case_set
    from t2s_pipeline.cases import load_cases
    from t2s_pipeline.commands.cases import print_check_report
    from t2s_pipeline.commands.runs import DEFAULT_RESULTS, dagster_home, preflight
    from t2s_pipeline.run.compare import compare

    case_set = load_cases(args.cases)
    warehouse = Path(case_set.domain.database_for())
    if not warehouse.exists():
        _build(argparse.Namespace(out=warehouse, scale=1.0))
    report = check_case_set(case_set)
    print_check_report(report)
    for config in (args.config, args.changed):
        preflight(config)
    home = dagster_home()
    settings = T2SSettings(results_path=str(DEFAULT_RESULTS))
    outcomes = []
    for step, config in enumerate((args.config, args.changed), start=1):
        _say(f"[{step}/2] evaluating {config} (built-in agent on loopback, leave-one-out on)")
        outcome = run_config(config, settings)
        state = (
            "evaluated before with this code and these cases; results kept"
            if outcome.already_evaluated
            else ("succeeded" if outcome.success else "FAILED")
        )
        _say(f"[{step}/2] run {outcome.run_id}: {state}")
        outcomes.append(outcome)
    baseline, changed = outcomes
    print(baseline.summary_markdown)
    if baseline.success and changed.success:
        comparison = compare(settings.store(), baseline.run_id, changed.run_id)
        print(f"\n## What changed: {args.config.name} -> {args.changed.name}\n")
        print(comparison.to_text(top=10))
        print(
            f"\nEvery figure of the changed run: t2s show {changed.run_id}; "
            f"every regressed item: t2s compare {baseline.run_id} {changed.run_id}"
        )
    print(
        f"\nruns {baseline.run_id} and {changed.run_id}; results in {DEFAULT_RESULTS}\n"
        f"See them in the UI: DAGSTER_HOME={home} .venv/bin/dagster dev -w workspace.yaml"
    )
    ok = report.ok and baseline.success and changed.success
    return 0 if ok else 1
