"""A top-k cut through a tie (SPEC 8): the harness asks for one row more than the LIMIT, keeps
the query's own rows and says when the cut falls inside a tie; EX then does not depend on which
of the tied rows the engine kept."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from t2s_pipeline.cases import Case, Domain, load_cases
from t2s_pipeline.config import ScorerSettings
from t2s_pipeline.execution import Guard
from t2s_pipeline.execution.records import ExecutedResult, QueryJob, execute_jobs
from t2s_pipeline.scoring.item import CUT_TIE, ItemAnalysis, item_ceilings, score_item_output
from t2s_pipeline.sql.cut import cut_probe, parsed_cut_probe
from t2s_pipeline.sql.pair import analyse_pair
from t2s_pipeline.suites.legitimate import legitimate_corpus

# Units per item: I3 and I4 tie at 152 for the second place.
ROWS = [("I1", 192), ("I2", 174), ("I3", 152), ("I4", 152), ("I5", 90)]
GOLD = "SELECT item_id, units FROM s.units ORDER BY units DESC, item_id LIMIT 3"
NO_TIE_BREAK = "SELECT item_id, units FROM s.units ORDER BY units DESC LIMIT 3"
CLEAN_CUT = "SELECT item_id, units FROM s.units ORDER BY units DESC LIMIT 2"


@pytest.fixture(scope="module")
def domain(tmp_path_factory: pytest.TempPathFactory) -> Domain:
    folder = tmp_path_factory.mktemp("cut")
    with duckdb.connect(str(folder / "w.duckdb")) as con:
        con.execute("CREATE SCHEMA s; CREATE TABLE s.units (item_id VARCHAR, units INTEGER)")
        con.executemany("INSERT INTO s.units VALUES (?, ?)", ROWS)
    return Domain("cut", folder, "duckdb", "duckdb", str(folder / "w.duckdb"), ("s",))


def _run(domain: Domain, *sqls: str):
    case = Case("c", "q", (), GOLD, "top_k")
    guard = Guard.for_evaluation(domain.allowed_schemas, domain.dialect)
    jobs = [QueryJob(str(i), case, sql) for i, sql in enumerate(sqls)]
    return execute_jobs(domain, jobs, guard)


def test_a_cut_inside_a_tie_is_seen_and_the_querys_own_rows_kept(domain: Domain) -> None:
    gold, candidate, clean = _run(domain, GOLD, NO_TIE_BREAK, CLEAN_CUT)
    assert (gold.cut_tie, candidate.cut_tie, clean.cut_tie) == (False, True, False)
    assert len(candidate.rows) == 3 and len(clean.rows) == 2
    assert [r[0] for r in gold.rows] == ["I1", "I2", "I3"]


@pytest.mark.parametrize("kept", ["I3", "I4"])
def test_the_verdict_does_not_depend_on_which_tied_row_was_kept(domain: Domain, kept: str) -> None:
    gold, candidate = _run(domain, GOLD, NO_TIE_BREAK)
    # Whichever of the tied rows the engine kept, the answer is not a match, and says why.
    rows = [r for r in candidate.rows[:2]] + [(kept, 152)]
    candidate = type(candidate)(**{**candidate.__dict__, "rows": rows})
    pair = analyse_pair(GOLD, NO_TIE_BREAK, "duckdb", None)
    analysis = ItemAnalysis(
        "c#0", "c", (), pair.gold.output_columns, pair.gold.components, True,
        pair.candidate.output_columns, pair.candidate.components, None,
        pair.gold.order_keys, pair.candidate.order_keys,
    )  # fmt: skip
    score = score_item_output(analysis, gold, candidate, ScorerSettings())
    assert score.exact_match is False and score.presentation == ()
    # The column and cell figures of rows kept by luck are undefined, not luck themselves.
    assert score.metrics == (None, None, None, None)
    assert CUT_TIE in item_ceilings(None, gold, candidate, score, True, False)


def test_a_limit_without_order_by_keeps_any_rows(domain: Domain) -> None:
    cut, whole, same = _run(
        domain,
        "SELECT item_id FROM s.units LIMIT 2",
        "SELECT item_id FROM s.units LIMIT 9",
        "SELECT 1 AS one FROM s.units LIMIT 2",
    )
    assert (cut.cut_tie, whole.cut_tie, same.cut_tie) == (True, False, False)
    assert (len(cut.rows), len(whole.rows), len(same.rows)) == (2, 5, 2)


def test_a_query_the_probe_cannot_read_runs_as_written(domain: Domain, tmp_path: Path) -> None:
    (result,) = _run(domain, "SELECT item_id FROM s.units ORDER BY units DESC LIMIT 2")
    assert result.ok and not result.cut_tie and len(result.rows) == 2


def test_a_batch_shared_between_two_workers_gives_what_one_gives(domain: Domain) -> None:
    """From ``parallel_from`` queries a database's batch runs on two executors at once (every
    other query each): outcomes, their order, refusals, failures, cut probes (including a
    rewritten query that fails and runs again as written) and progress are those of one."""
    case = Case("c", "q", (), GOLD, "top_k")
    guard = Guard.for_evaluation(domain.allowed_schemas, domain.dialect)
    sqls = [
        GOLD, NO_TIE_BREAK, CLEAN_CUT, None, "DELETE FROM s.units", "SELECT nope FROM s.units",
        "SELECT * FROM duckdb_tables()", "SELECT count(*) FROM s.units", "  ",
        "SELECT nope FROM s.units ORDER BY 1 LIMIT 2",  # its probe fails: run again as written
    ] * 3  # fmt: skip
    jobs = [QueryJob(str(i), case, sql) for i, sql in enumerate(sqls)]
    told: list[tuple[int, int]] = []
    one = execute_jobs(domain, jobs, guard, parallel_from=10**9)
    two = execute_jobs(domain, jobs, guard, lambda d, n: told.append((d, n)), parallel_from=0)

    def seen(result: ExecutedResult) -> tuple[object, ...]:
        return (result.key, result.status, result.layer, result.reason, result.columns,
                result.rows, result.truncated, result.cut_tie)  # fmt: skip

    assert [seen(r) for r in two] == [seen(r) for r in one]
    assert {r.status for r in one} == {"ok", "refused", "error", "not_run"}
    not_run = sum(1 for sql in sqls if sql is None or not sql.strip())
    assert told == [(done, len(jobs)) for done in range(not_run + 1, len(jobs) + 1)]


def _corpus() -> list[tuple[str, str]]:
    """(SQL, dialect) pairs nobody wrote for the cut probe: the legitimate-SQL corpus of each
    engine, the Spider and BIRD fixture queries, and the demo cases' gold SQL."""
    dialects = {"duckdb": "duckdb", "postgres": "postgres", "sqlite": "sqlite", "mysql": "mysql"}
    pairs = [(s.sql, d) for e, d in dialects.items() for s in legitimate_corpus(e)]
    benchmarks = Path(__file__).resolve().parents[1] / "fixtures" / "benchmarks"
    for name in ("spider/dev_gold.sql", "spider/pred.sql"):
        text = (benchmarks / name).read_text()
        pairs += [(line.split("\t")[0], "sqlite") for line in text.splitlines() if line.strip()]
    bird = json.loads((benchmarks / "bird/dev.json").read_text())
    pairs += [(entry["SQL"], "sqlite") for entry in bird]
    cases = load_cases(Path(__file__).resolve().parents[2] / "cases" / "erp")
    return pairs + [(case.gold_sql, "duckdb") for case in cases.cases]


def test_the_token_check_only_skips_queries_without_a_probe() -> None:
    """``cut_probe`` reads the tokens before parsing and parses only text with a LIMIT, TOP or
    FETCH; on every query of the corpora (and the same texts read as T-SQL, where TOP limits)
    it answers exactly as parsing every query does."""
    corpus = _corpus()
    corpus += [(sql, "tsql") for sql, _ in corpus[:400]] + [
        ("SELECT TOP 3 a FROM t ORDER BY a", "tsql"),
        ("SELECT a FROM t ORDER BY a FETCH FIRST 3 ROWS ONLY", "postgres"),
    ]
    assert len(corpus) > 4000
    probed = 0
    for sql, dialect in corpus:
        expected = parsed_cut_probe(sql, dialect)
        assert cut_probe(sql, dialect) == expected, (dialect, sql)
        probed += expected is not None
    assert 0 < probed < len(corpus)  # both paths are taken
