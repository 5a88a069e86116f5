"""``t2s guardrails``: the hostile suite and the legitimate corpus on each engine.

Prints attack x layer x engine for the hostile suite, then, for the legitimate corpus (over a
thousand ordinary read-only statements per engine, :mod:`t2s_pipeline.suites.legitimate`),
how many were served with the bare database's rows per engine and layer and every statement
that was not. Exits 1 when any cell is a leak or an over-block, 0 when every attack was
stopped and every legitimate statement served.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from t2s_pipeline.demo.generate import DEFAULT_PATH
from t2s_pipeline.execution.engine import ENGINES, MYSQL
from t2s_pipeline.execution.hostile import (
    LAYER_SETTINGS,
    NOT_APPLICABLE,
    OK,
    OVER_BLOCK,
    VERDICTS,
    SuiteReport,
    load_suite,
    run_corpus,
    run_suite,
)
from t2s_pipeline.execution.hostile_targets import (
    EngineTarget,
    guard_warehouse,
    target_for,
)
from t2s_pipeline.suites import HOSTILE_SUITE
from t2s_pipeline.suites.legitimate import legitimate_corpus

_HEAVY = frozenset({"resource", "memory", "result_size"})
DEFAULT_PG_URL = "postgresql://postgres:postgres@localhost:5432/postgres"
_SHORT = {
    "refused:filter": "F",
    "refused:database": "D",
    "refused:limits": "L",
    "timeout": "T",
    "failed": "E",
    "truncated": "C",
    "ran": "R",
    "-": "",
}
LEGEND = (
    "F refused by the filter, D refused by the database layer, L stopped by a hard limit "
    "(memory, CPU, wall clock, result bytes), T timed out, E failed (could not "
    "run, e.g. the table is not there), C cut off by the row bound, R ran. "
    "A verdict other than ok is shown in capitals (LEAK, OVER-BLOCK)."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("guardrails", help="run the hostile suite on every engine")
    parser.add_argument("--engine", choices=[*ENGINES, "all"], default="all")
    parser.add_argument(
        "--pg-url",
        default=os.environ.get("T2S_PG_URL", DEFAULT_PG_URL),
        help="PostgreSQL superuser URL (default: $T2S_PG_URL or the local server)",
    )
    parser.add_argument(
        "--mysql-url",
        default=os.environ.get("T2S_MYSQL_URL"),
        help="MySQL/MariaDB administrator URL (default: $T2S_MYSQL_URL). The suite loads the "
        "demo into databases sales, finance, inventory, hr and pii there, replacing them: "
        "give a scratch server. Without one, --engine all skips MySQL and says so.",
    )
    parser.add_argument("--db", type=Path, default=DEFAULT_PATH, help="the DuckDB warehouse")
    parser.add_argument("--suite", type=Path, default=HOSTILE_SUITE)
    parser.add_argument("--timeout-s", type=float, default=2.0)
    parser.add_argument("--row-limit", type=int, default=1000)
    parser.add_argument(
        "--corpus",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the legitimate corpus (default: on)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the scratch targets, run the suite, print the table; 1 on any failure."""
    attacks = load_suite(args.suite)
    engines = list(ENGINES) if args.engine == "all" else [args.engine]
    if args.engine == "all" and MYSQL in engines and not args.mysql_url:
        _say("mysql: skipped (give --mysql-url or $T2S_MYSQL_URL, a scratch server)")
        engines.remove(MYSQL)
    with tempfile.TemporaryDirectory(prefix="t2s-hostile-") as workdir:
        if not args.db.is_file():  # no demo warehouse here: attack a generated scratch one
            print(f"no warehouse at {args.db}: generating a scratch one to attack", file=sys.stderr)
            args.db = guard_warehouse(args.db, Path(workdir) / "generated")
        targets = _targets(engines, args, Path(workdir))
        try:
            report = run_suite(
                attacks, targets, args.timeout_s, args.row_limit, _say, parallel=True
            )
            corpus = _corpus(targets, args) if args.corpus else None
        finally:
            for target in targets:
                target.cleanup()
    print(render_table(report, [t.engine for t in targets]))
    print(render_summary(report))
    if corpus is not None:
        print(render_corpus(corpus))
    failed = report.failures or (corpus.failures if corpus is not None else ())
    return 1 if failed else 0


def _corpus(targets: Sequence[EngineTarget], args: argparse.Namespace) -> SuiteReport:
    statements = {t.engine: legitimate_corpus(t.engine) for t in targets}
    return run_corpus(statements, targets, max(args.timeout_s, 5.0), args.row_limit, _say)


def render_corpus(report: SuiteReport) -> str:
    """Served and over-blocked statements per engine and layer, then every over-block."""
    counts = report.counts()
    keys = sorted({(engine, layer) for engine, layer, _ in counts})
    lines = ["", "legitimate corpus (engine, layer: served as the bare database, over-block)"]
    for engine, layer in keys:
        served, blocked = counts[(engine, layer, OK)], counts[(engine, layer, OVER_BLOCK)]
        slow = counts[(engine, layer, NOT_APPLICABLE)]
        beyond = f", slower than the bound on the bare database too {slow}" if slow else ""
        lines.append(f"  {engine:8} {layer:8}  served {served}, over-block {blocked}{beyond}")
    for cell in report.failures:
        lines.append(f"  over-block: {cell.attack} on {cell.engine}/{cell.layer}: {cell.detail}")
    for cell in report.cells:
        if cell.verdict == NOT_APPLICABLE:
            lines.append(f"  too slow: {cell.attack} on {cell.engine}/{cell.layer}: {cell.detail}")
    return "\n".join(lines)


def _targets(engines: Sequence[str], args: argparse.Namespace, workdir: Path) -> list[EngineTarget]:
    targets = []
    for engine in engines:
        _say(f"preparing {engine}")
        targets.append(target_for(engine, args.db, workdir, args.pg_url, args.mysql_url))
    return targets


def render_table(report: SuiteReport, engines: Sequence[str]) -> str:
    """One row per attack, one column per engine x layer."""
    columns = [(engine, layer) for engine in engines for layer in LAYER_SETTINGS]
    grid: dict[str, dict[tuple[str, str], str]] = {}
    for cell in report.cells:
        mark = _SHORT.get(cell.how, cell.how)
        if cell.verdict not in (OK, NOT_APPLICABLE):
            mark = f"{cell.verdict.upper()}({mark})"
        grid.setdefault(f"{cell.attack} [{cell.category}]", {})[(cell.engine, cell.layer)] = mark
    header = ["attack [category]"] + [f"{e[:2]}:{layer[:4]}" for e, layer in columns]
    rows = [[name] + [marks.get(c, "") for c in columns] for name, marks in grid.items()]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(t.ljust(w) for t, w in zip(r, widths, strict=True)) for r in [header, *rows]]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join([*lines, "", LEGEND])


def render_summary(report: SuiteReport) -> str:
    """Counts of verdicts per engine and layer, then every leak and over-block."""
    counts = report.counts()
    keys = sorted({(engine, layer) for engine, layer, _ in counts})
    lines = ["", "summary (engine, layer: " + ", ".join(VERDICTS) + ")"]
    for engine, layer in keys:
        numbers = ", ".join(f"{v} {counts[(engine, layer, v)]}" for v in VERDICTS)
        lines.append(f"  {engine:8} {layer:8}  {numbers}")
    total = {v: sum(n for (_, _, verdict), n in counts.items() if verdict == v) for v in VERDICTS}
    lines.append("  total              " + ", ".join(f"{v} {total[v]}" for v in VERDICTS))
    heavy = [c for c in report.cells if c.category in _HEAVY and c.verdict != NOT_APPLICABLE]
    if heavy:
        slowest = max(heavy, key=lambda c: c.seconds)
        lines.append(
            f"  resource, memory and result-size attacks: {len(heavy)} cells, slowest "
            f"{slowest.seconds:.1f} s ({slowest.attack} on {slowest.engine}/{slowest.layer})"
        )
    for cell in report.failures:
        lines.append(
            f"  {cell.verdict}: {cell.attack} on {cell.engine}/{cell.layer}: {cell.detail}"
        )
    return "\n".join(lines)


def _say(message: str) -> None:
    sys.stderr.write(message + "\n")  # one write: engines report from parallel threads
    sys.stderr.flush()
