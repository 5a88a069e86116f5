"""Distilled test suites: the neighbours that tell each gold query apart from its near misses.

A suite is built once per (case set, snapshot, seed, settings) and stored next to the snapshot
in ``<stem>.test-suites/<key>/``: the neighbour files, ``suite.json`` (per case: the neighbours
kept, mutants made, missed by the snapshot alone, caught by the suite) and the gold results on
each kept neighbour. Building it:

1. the mutants of every gold query (:mod:`.mutants`) run on the snapshot; a mutant returning the
   gold's rows there is one the snapshot alone misses;
2. a pool of neighbours is generated (:mod:`.neighbours`): random ones, boundary ones at the
   constants the gold queries compare with (:mod:`.boundaries`), and one with a tie at every
   top-k cut over a base table;
3. every gold query and its missed mutants run on every neighbour; per case, a greedy set cover
   keeps the fewest neighbours that tell the gold from every mutant some neighbour tells apart.

Every query goes through the guarded executor, under the evaluation guard.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import logging
import pickle
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from t2s_pipeline.cases import Case, CaseSet, Domain
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.execution.guard import Guard
from t2s_pipeline.execution.records import ExecutedResult, QueryJob, execute_jobs
from t2s_pipeline.execution.registry import engine_for
from t2s_pipeline.progress import Note, Progress
from t2s_pipeline.results import ResultSet
from t2s_pipeline.scoring.encoding import Crosswalk, encode
from t2s_pipeline.scoring.exact import exact_match
from t2s_pipeline.scoring.ordering import OrderKeys, RowOrder, arrange
from t2s_pipeline.sql.analysis import order_keys
from t2s_pipeline.sql.parse import parse_one_query
from t2s_pipeline.sql.schema import domain_schema
from t2s_pipeline.testsuite.boundaries import boundary_terms, top_k_cut
from t2s_pipeline.testsuite.mutants import Mutant, mutate
from t2s_pipeline.testsuite.neighbours import (
    Boundary,
    TableInfo,
    boundary_changes,
    build_neighbour,
    random_changes,
    read_tables,
    tie_changes,
)

_LOG = logging.getLogger("t2s_pipeline.testsuite")
FORMAT = 2
"""Bumped when what a suite holds or how it is built changes, so old suites are rebuilt."""
GOLD_FILE = "gold_results.pickle.zlib"
BOUNDARY_STEPS: tuple[tuple[str, int], ...] = (("below", -1), ("at", 0), ("above", 1))


@dataclass(frozen=True)
class SuiteSettings:
    """How a suite is built: the seed and how many random neighbours the pool holds."""

    seed: int = 0
    random_neighbours: int = 8
    float_decimals: int = 6
    ordered_compare: str | bool = "auto"


@dataclass(frozen=True)
class CaseSuite:
    """One case's part of the suite and how well it tells the gold from its mutants."""

    case_id: str
    neighbours: tuple[str, ...]
    mutants: int
    snapshot_missed: int
    suite_caught: int
    uncaught: tuple[str, ...] = ()
    """What the mutants neither the snapshot nor any neighbour tells apart changed."""
    caught_by_kind: dict[str, int] = field(default_factory=dict)
    missed_by_kind: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class TestSuite:
    """A built suite: where it lives and each case's neighbours."""

    __test__ = False  # not a pytest class

    key: str
    folder: Path
    neighbours: tuple[str, ...]
    cases: dict[str, CaseSuite]

    def neighbour_path(self, name: str) -> Path:
        return self.folder / f"{name}.duckdb"

    def gold_results(self) -> dict[str, ExecutedResult]:
        """The gold results on the kept neighbours, keyed ``case_id@neighbour``."""
        path = self.folder / GOLD_FILE
        if not path.exists():
            return {}
        results: list[ExecutedResult] = pickle.loads(zlib.decompress(path.read_bytes()))  # noqa: S301 - written by _store
        return {r.key: r for r in results}

    def to_json(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "key": self.key,
            "neighbours": list(self.neighbours),
            "cases": {k: dataclasses.asdict(v) for k, v in self.cases.items()},
        }


def suite_folder(domain: Domain, case_set_hash: str, settings: SuiteSettings) -> tuple[str, Path]:
    """The key of a suite and the folder it lives in, next to the domain's snapshot."""
    snapshot = Path(_snapshot_target(domain))
    stat = snapshot.stat() if snapshot.exists() else None
    identity = json.dumps(
        {
            "format": FORMAT,
            "cases": case_set_hash,
            "snapshot": domain.snapshot or (f"{stat.st_size}:{stat.st_mtime_ns}" if stat else ""),
            "settings": dataclasses.asdict(settings),
            "schemas": sorted(domain.allowed_schemas),
        },
        sort_keys=True,
    )
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return key, snapshot.with_name(f"{snapshot.stem}.test-suites") / key


def _snapshot_target(domain: Domain) -> str:
    target = domain.database
    if "{db_id}" in target:
        raise ConfigError(
            f"domain {domain.name}: test suites need one snapshot database; this domain has one "
            "per db_id. Fix: set test_suite.enabled: false in the configuration"
        )
    resolved = domain.database_for(None)
    engine = engine_for(resolved)
    if not engine.test_suites:
        raise ConfigError(
            f"domain {domain.name}: test suites are built from a DuckDB snapshot; "
            f"{engine.shown(resolved)} is {engine.name}. Fix: evaluate on a DuckDB copy of the "
            "warehouse, or set test_suite.enabled: false"
        )
    return resolved


def load_suite(domain: Domain, case_set_hash: str, settings: SuiteSettings) -> TestSuite | None:
    """The stored suite for these inputs, or None when it has not been built."""
    key, folder = suite_folder(domain, case_set_hash, settings)
    index = folder / "suite.json"
    if not index.exists():
        return None
    data = json.loads(index.read_text(encoding="utf-8"))
    cases = {
        k: CaseSuite(
            **{**v, "neighbours": tuple(v["neighbours"]), "uncaught": tuple(v["uncaught"])}
        )
        for k, v in data["cases"].items()
    }
    return TestSuite(key, folder, tuple(data["neighbours"]), cases)


def ensure_suite(
    case_set: CaseSet,
    guard: Guard,
    settings: SuiteSettings,
    info: Note = _LOG.info,
    progress: Progress | None = None,
) -> TestSuite:
    """The suite of ``case_set``: loaded when built before, else built now and stored.

    Concurrent runs wait on one lock per suite folder, so a suite is built once and a run never
    reads a neighbour another build is still writing or pruning."""
    found = load_suite(case_set.domain, case_set.content_hash, settings)
    if found is not None:
        return found
    _, folder = suite_folder(case_set.domain, case_set.content_hash, settings)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even on a crash
        found = load_suite(case_set.domain, case_set.content_hash, settings)
        if found is not None:
            return found
        return build_suite(case_set, guard, settings, info, progress)


# --- building --------------------------------------------------------------------------------


def build_suite(
    case_set: CaseSet,
    guard: Guard,
    settings: SuiteSettings,
    info: Note = _LOG.info,
    progress: Progress | None = None,
) -> TestSuite:
    """Build and store the suite of ``case_set`` (see the module's docstring); ``progress``
    counts the queries run on the snapshot and then on each neighbour."""
    domain = case_set.domain
    key, folder = suite_folder(domain, case_set.content_hash, settings)
    snapshot = Path(_snapshot_target(domain))
    folder.mkdir(parents=True, exist_ok=True)
    cases = list(case_set.cases)
    mutants = {case.id: _mutants(case, domain.dialect) for case in cases}
    info(f"test suite: {sum(map(len, mutants.values()))} mutants of {len(cases)} gold queries")
    numbered = {case_id: list(enumerate(found)) for case_id, found in mutants.items()}
    on_snapshot = _run(domain, snapshot, cases, numbered, guard, progress)
    missed = _missed(cases, mutants, on_snapshot, settings, domain.dialect)
    tables = read_tables(snapshot, domain.allowed_schemas)
    pool = _build_pool(case_set, snapshot, tables, guard, settings, folder, info)
    results: dict[str, dict[str, ExecutedResult]] = {}
    for done, name in enumerate(pool, 1):
        results[name] = _run(domain, folder / f"{name}.duckdb", cases, missed, guard, progress)
        info(f"test suite: neighbour {name} read ({done}/{len(pool)})")
    suites = {
        case.id: _distil(case, mutants[case.id], missed[case.id], results, settings, domain.dialect)
        for case in cases
    }
    _store(folder, key, pool, suites, results)
    info(
        f"test suite {key}: {len(pool)} neighbours; "
        f"{sum(s.snapshot_missed for s in suites.values())} mutants the snapshot misses, "
        f"{sum(s.suite_caught for s in suites.values())} caught by the suite"
    )
    loaded = load_suite(domain, case_set.content_hash, settings)
    assert loaded is not None
    return loaded


def _mutants(case: Case, dialect: str) -> list[Mutant]:
    try:
        return mutate(case.gold_sql, dialect)
    except Exception:  # noqa: BLE001 - a gold query sqlglot cannot edit has no mutants
        return []


def _job_key(case_id: str, index: int | None) -> str:
    return f"{case_id}|gold" if index is None else f"{case_id}|m{index}"


def _run(
    domain: Domain,
    target: Path,
    cases: Sequence[Case],
    mutants: Mapping[str, Sequence[tuple[int, Mutant]]],
    guard: Guard,
    progress: Progress | None = None,
) -> dict[str, ExecutedResult]:
    """Every gold query and the given mutants on one database, keyed by :func:`_job_key`."""
    jobs = []
    for case in cases:
        jobs.append(QueryJob(_job_key(case.id, None), case, case.gold_sql))
        for index, mutant in mutants.get(case.id, ()):
            jobs.append(QueryJob(_job_key(case.id, index), case, mutant.sql))
    on = dataclasses.replace(domain, database=str(target))
    results = execute_jobs(on, jobs, guard, progress, refusal_log_level=logging.DEBUG)
    return {r.key: r for r in results}


def _missed(
    cases: Sequence[Case],
    mutants: Mapping[str, list[Mutant]],
    results: Mapping[str, ExecutedResult],
    settings: SuiteSettings,
    dialect: str,
) -> dict[str, list[tuple[int, Mutant]]]:
    """Per case, the mutants that run and return the gold's rows on the snapshot."""
    out: dict[str, list[tuple[int, Mutant]]] = {}
    for case in cases:
        gold = results[_job_key(case.id, None)]
        ordered = gold_is_ordered(case.gold_sql, dialect, settings.ordered_compare)
        out[case.id] = [
            (i, m)
            for i, m in enumerate(mutants[case.id])
            if gold.ok
            and results[_job_key(case.id, i)].ok
            and same_rows(gold, results[_job_key(case.id, i)], ordered, settings.float_decimals)
        ]
    return out


def _build_pool(
    case_set: CaseSet,
    snapshot: Path,
    tables: list[TableInfo],
    guard: Guard,
    settings: SuiteSettings,
    folder: Path,
    info: Note,
) -> list[str]:
    """Write the pool of neighbours into ``folder`` and return their names."""
    names: list[str] = []
    for index in range(settings.random_neighbours):
        name = f"random-{index:02d}"
        build_neighbour(snapshot, folder / f"{name}.duckdb", tables,
                        random_changes(tables, settings.seed * 1000 + index))  # fmt: skip
        names.append(name)
        info(f"test suite: neighbour {name} built")
    boundaries = _boundaries(case_set, snapshot, guard)
    info(f"test suite: {len(boundaries)} boundary values from the gold queries")
    for label, step in BOUNDARY_STEPS:
        name = f"boundary-{label}"
        statements = boundary_changes(tables, boundaries, step, settings.seed)
        build_neighbour(snapshot, folder / f"{name}.duckdb", tables, statements)
        names.append(name)
    cuts = _cuts(case_set)
    if cuts:
        info(f"test suite: {len(cuts)} top-k cuts get a tie")
        build_neighbour(snapshot, folder / "boundary-tie.duckdb", tables, tie_changes(tables, cuts))
        names.append("boundary-tie")
    return names


def _cuts(case_set: CaseSet) -> list[tuple[str, str, str]]:
    """The top-k cuts of the gold queries over one base table (see :func:`top_k_cut`)."""
    domain = case_set.domain
    schema = domain_schema(domain)
    found = (top_k_cut(case.gold_sql, domain.dialect, schema) for case in case_set.cases)
    return list(dict.fromkeys((c.schema, c.table, c.kth_row) for c in found if c is not None))


def _boundaries(case_set: CaseSet, snapshot: Path, guard: Guard) -> list[Boundary]:
    """The values gold queries compare columns with, worked out by the database."""
    domain = case_set.domain
    schema = domain_schema(domain)
    terms = {
        case.id: boundary_terms(case.gold_sql, domain.dialect, schema) for case in case_set.cases
    }
    cases = case_set.by_id()
    jobs = [
        QueryJob(case_id, cases[case_id], "SELECT " + ", ".join(t.constant for t in found))
        for case_id, found in terms.items()
        if found
    ]
    on = dataclasses.replace(domain, database=str(snapshot))
    values = {r.key: r for r in execute_jobs(on, jobs, guard, refusal_log_level=logging.DEBUG)}
    out: list[Boundary] = []
    for case_id, found in terms.items():
        result = values.get(case_id)
        if result is None or not result.ok or not result.rows:
            continue
        for term, value in zip(found, result.rows[0], strict=False):
            if value is not None:
                out.append(Boundary(term.schema, term.table, term.column, value))
    return list(dict.fromkeys(out))


def _distil(
    case: Case,
    mutants: list[Mutant],
    missed: list[tuple[int, Mutant]],
    results: Mapping[str, Mapping[str, ExecutedResult]],
    settings: SuiteSettings,
    dialect: str,
) -> CaseSuite:
    """The fewest neighbours telling the gold from every missed mutant some neighbour tells
    apart (greedy set cover, largest first; ties by neighbour name)."""
    ordered = gold_is_ordered(case.gold_sql, dialect, settings.ordered_compare)
    gold_key = _job_key(case.id, None)
    catches: dict[str, set[int]] = {}
    for name, on in results.items():
        gold = on.get(gold_key)
        if gold is None or not gold.ok:
            continue
        catches[name] = {
            i
            for i, _ in missed
            if not (on[_job_key(case.id, i)].ok
                    and same_rows(gold, on[_job_key(case.id, i)], ordered, settings.float_decimals))
        }  # fmt: skip
    coverable = set().union(*catches.values()) if catches else set()
    chosen: list[str] = []
    left = set(coverable)
    while left:
        best = max(sorted(catches), key=lambda n: len(catches[n] & left))
        chosen.append(best)
        left -= catches[best]
    kinds = {i: m.kind for i, m in missed}
    return CaseSuite(
        case_id=case.id,
        neighbours=tuple(chosen),
        mutants=len(mutants),
        snapshot_missed=len(missed),
        suite_caught=len(coverable),
        uncaught=tuple(m.change for i, m in missed if i not in coverable),
        caught_by_kind=_count(kinds[i] for i in coverable),
        missed_by_kind=_count(kinds.values()),
    )


def _count(kinds: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(kinds).items()))


def _store(
    folder: Path,
    key: str,
    pool: list[str],
    suites: Mapping[str, CaseSuite],
    results: Mapping[str, Mapping[str, ExecutedResult]],
) -> None:
    kept = {
        f"{case_id}@{name}": dataclasses.replace(results[name][_job_key(case_id, None)],
                                                 key=f"{case_id}@{name}")
        for case_id, suite in suites.items()
        for name in suite.neighbours
    }  # fmt: skip
    tmp_gold = folder / f"{GOLD_FILE}.tmp"
    tmp_gold.write_bytes(zlib.compress(pickle.dumps(list(kept.values()))))
    tmp_gold.replace(folder / GOLD_FILE)
    for name in pool:
        if not any(name in s.neighbours for s in suites.values()):
            (folder / f"{name}.duckdb").unlink(missing_ok=True)
    used = [n for n in pool if any(n in s.neighbours for s in suites.values())]
    index = TestSuite(key, folder, tuple(used), dict(suites)).to_json()
    tmp = folder / "suite.json.tmp"
    tmp.write_text(json.dumps(index, indent=1, sort_keys=True), encoding="utf-8")
    tmp.replace(folder / "suite.json")


# --- comparing ------------------------------------------------------------------------------


def gold_is_ordered(gold_sql: str, dialect: str, ordered_compare: str | bool) -> bool:
    """Whether row order counts (SPEC 8): forced, or ``auto`` and the gold sorts its result."""
    if isinstance(ordered_compare, bool):
        return ordered_compare
    try:
        return parse_one_query(gold_sql, dialect).args.get("order") is not None
    except Exception:  # noqa: BLE001 - an unparsable gold compares as a multiset
        return False


def row_order(
    gold_sql: str, candidate_sql: str | None, dialect: str, ordered_compare: str | bool
) -> RowOrder | None:
    """Both queries' ORDER BY keys when order counts under ``auto`` (SPEC 8); None when the
    rows are compared as returned (``ordered_compare: true``) or order does not count."""
    if ordered_compare != "auto":
        return None
    return RowOrder(_order_keys(gold_sql, dialect), _order_keys(candidate_sql, dialect))


def _order_keys(sql: str | None, dialect: str) -> OrderKeys:
    if sql is None:
        return None
    try:
        return order_keys(parse_one_query(sql, dialect))
    except Exception:  # noqa: BLE001 - unparsable: its rows are compared as returned
        return None


def same_rows(
    reference: ExecutedResult,
    candidate: ExecutedResult,
    ordered: bool,
    float_decimals: int,
    order: RowOrder | None = None,
) -> bool:
    """Exact match (SPEC 8) of two executed results, as EX compares them."""
    if candidate.cut_tie:  # which tied rows it kept is luck
        return False
    left = ResultSet.from_names(list(reference.columns), reference.rows)
    right = ResultSet.from_names(list(candidate.columns), candidate.rows)
    undetermined = False
    if ordered and order is not None:
        arranged = arrange(left, right, order, float_decimals)
        left, right, undetermined = arranged.reference, arranged.candidate, arranged.undetermined
    crosswalk = Crosswalk(encode(left, float_decimals), encode(right, float_decimals))
    return exact_match(crosswalk, ordered=ordered, order_undetermined=undetermined).match


@dataclass(frozen=True)
class Difference:
    """Where a candidate and the gold part: the neighbour and what each returned there."""

    neighbour: str
    reference: ExecutedResult
    candidate: ExecutedResult


def first_difference(
    case_id: str,
    neighbours: Sequence[str],
    gold: Mapping[str, ExecutedResult],
    candidate_on: Callable[[str], ExecutedResult | None],
    ordered: bool,
    float_decimals: int,
    order: RowOrder | None = None,
) -> Difference | None:
    """The first neighbour on which the candidate (``candidate_on(name)``) and the stored gold
    differ, a failure of the candidate counting as a difference; None when they agree on every
    neighbour (``ex_ts`` holds when EX does)."""
    for name in neighbours:
        reference, candidate = gold.get(f"{case_id}@{name}"), candidate_on(name)
        if reference is None or candidate is None:
            continue
        if not candidate.ok or not same_rows(reference, candidate, ordered, float_decimals, order):
            return Difference(name, reference, candidate)
    return None


def told_apart_by(
    suite: TestSuite, case_set: CaseSet, case_id: str, sql: str, guard: Guard,
    settings: SuiteSettings,
) -> str | None:  # fmt: skip
    """The first neighbour of the case's suite on which ``sql`` and the gold differ; None when
    they agree on every one: ``ex_ts`` for one query beside its EX on the snapshot (the run
    stage does the same for many items at once, one executor per neighbour)."""
    case = case_set.by_id()[case_id]
    ordered = gold_is_ordered(case.gold_sql, case_set.domain.dialect, settings.ordered_compare)

    def candidate_on(name: str) -> ExecutedResult:
        on = dataclasses.replace(case_set.domain, database=str(suite.neighbour_path(name)))
        [result] = execute_jobs(on, [QueryJob(case_id, case, sql)], guard,
                                refusal_log_level=logging.DEBUG)  # fmt: skip
        return result

    order = row_order(case.gold_sql, sql, case_set.domain.dialect, settings.ordered_compare)
    found = first_difference(case_id, suite.cases[case_id].neighbours, suite.gold_results(),
                             candidate_on, ordered, settings.float_decimals, order)  # fmt: skip
    return None if found is None else found.neighbour
