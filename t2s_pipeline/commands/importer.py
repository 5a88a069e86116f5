"""``t2s import``: public benchmarks (Spider, BIRD) as case folders, predictions as replay files.

    t2s import spider --tables tables.json --gold dev.json --db-dir database/ --out cases/spider-dev
    t2s import bird --gold dev.json --db-dir dev_databases/ --out cases/bird-dev
    t2s import predictions --format spider --file pred.sql --cases cases/spider-dev \\
        --out preds/spider.jsonl --config configs/spider-model.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from t2s_pipeline.benchmarks.imports import import_bird, import_spider
from t2s_pipeline.benchmarks.predictions import (
    FORMATS,
    convert_predictions,
    write_replay_config,
)
from t2s_pipeline.benchmarks.writer import ImportReport


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "import", help="import Spider/BIRD as gold cases; prediction files as replay files"
    )
    sub = parser.add_subparsers(dest="import_command", required=True)
    spider = sub.add_parser("spider", help="Spider: tables.json + dev.json (+ dev_gold.sql)")
    spider.add_argument("--tables", type=Path, required=True, help="Spider's tables.json")
    spider.add_argument("--gold", type=Path, required=True, help="dev.json: db_id, question, query")
    spider.add_argument("--gold-sql", type=Path, help="dev_gold.sql: 'SQL<TAB>db_id' per line")
    _common(spider, "database/")
    spider.set_defaults(func=_spider)
    bird = sub.add_parser("bird", help="BIRD: dev.json with evidence and difficulty")
    bird.add_argument("--gold", type=Path, required=True, help="dev.json: db_id, question, SQL")
    _common(bird, "dev_databases/")
    bird.set_defaults(func=_bird)
    predictions = sub.add_parser("predictions", help="a prediction file as replay JSONL")
    predictions.add_argument("--format", choices=FORMATS, required=True)
    predictions.add_argument("--file", type=Path, required=True, help="the prediction file")
    predictions.add_argument("--cases", type=Path, required=True, help="the imported case folder")
    predictions.add_argument("--out", type=Path, required=True, help="the replay file to write")
    predictions.add_argument("--config", type=Path, help="also write this run configuration")
    predictions.set_defaults(func=_predictions)


def _common(parser: argparse.ArgumentParser, db_dir: str) -> None:
    parser.add_argument(
        "--db-dir", type=Path, required=True, help=f"e.g. {db_dir} (<db_id>/<db_id>.sqlite)"
    )
    parser.add_argument("--out", type=Path, required=True, help="the case folder to write")
    parser.add_argument(
        "--replace", action="store_true", help="overwrite an earlier import in --out"
    )


def _spider(args: argparse.Namespace) -> int:
    report = import_spider(
        args.tables, args.gold, args.db_dir, args.out, args.gold_sql, replace=args.replace
    )
    return _print_import(report)


def _bird(args: argparse.Namespace) -> int:
    return _print_import(import_bird(args.gold, args.db_dir, args.out, replace=args.replace))


def _print_import(report: ImportReport) -> int:
    print(f"wrote {report.n_cases} case(s) on {report.n_databases} database(s) to {report.folder}")
    for band, count in report.bands.items():
        print(f"  {band:<22} {count:>5}")
    if report.rewritten:
        print(f"  {report.rewritten} gold quer(ies) had double-quoted strings made explicit")
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"next: t2s cases check {report.folder}")
    return 0


def _predictions(args: argparse.Namespace) -> int:
    report = convert_predictions(args.format, args.file, args.cases, args.out)
    print(
        f"wrote {report.n_predictions} prediction(s) for {report.n_cases} case(s) to {report.path}"
    )
    if report.rewritten:
        print(f"  {report.rewritten} prediction(s) had double-quoted strings made explicit")
    if report.missing:
        shown = ", ".join(report.missing[:10])
        print(f"  {len(report.missing)} case(s) without a prediction (item errors): {shown}")
    if args.config is not None:
        config = write_replay_config(args.config, args.cases, args.out, args.format, args.file)
        print(f"wrote {config}; score it with: t2s run --config {config}")
    return 0
