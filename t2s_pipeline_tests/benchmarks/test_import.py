"""`t2s import spider|bird`: the fixture benchmarks become case folders that load and run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from t2s_pipeline.benchmarks.imports import import_bird, import_spider
from t2s_pipeline.benchmarks.manifest import read_manifest
from t2s_pipeline.casecheck import run_gold
from t2s_pipeline.cases import load_cases
from t2s_pipeline.cli import main
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sut.client import build_items
from t2s_pipeline_tests.benchmarks.conftest import Benchmark, copy_files


def _spider(spider: Benchmark, out: Path, gold_sql: bool = False) -> None:
    import_spider(
        spider.files / "tables.json",
        spider.files / "dev.json",
        spider.db_dir,
        out,
        spider.files / "dev_gold.sql" if gold_sql else None,
    )


def test_spider_cases_load_without_problems_and_gold_runs(
    spider: Benchmark, tmp_path: Path
) -> None:
    """Every question is a valid case on its own database, and its gold query runs guarded."""
    out = tmp_path / "cases" / "spider-fix"
    _spider(spider, out)
    case_set = load_cases(out)
    questions = json.loads((spider.files / "dev.json").read_text())
    assert case_set.problems == ()
    assert len(case_set.cases) == len(questions)
    assert {c.db_id for c in case_set.cases} == {"concert_hall", "school_club"}
    for case in case_set.cases:
        outcome = run_gold(case_set.domain, case)
        assert outcome.error is None and not outcome.refused, (case.id, outcome)
        assert outcome.rows, f"{case.id}: every fixture gold query returns rows"


def test_spider_case_fields(spider: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "spider-fix"
    _spider(spider, out)
    case = load_cases(out).by_id()["school-club-9"]
    bands = json.loads((spider.files / "expected.json").read_text())["bands"]
    assert case.question == "First names of students older than 20 who major in 600."
    assert case.phrasings == ()
    assert case.difficulty == f"spider:{bands[9]}"
    assert case.db_id == "school_club"
    assert case.tags == ("spider", "school_club")
    assert case.evidence is None


def test_spider_domain_points_at_one_file_per_db_id(spider: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "spider-fix"
    _spider(spider, out)
    domain = load_cases(out).domain
    assert (domain.engine, domain.dialect, domain.allowed_schemas) == (
        "sqlite",
        "sqlite",
        ("main",),
    )
    assert domain.min_phrasings == 0
    case = load_cases(out).by_id()["concert-hall-0"]
    assert Path(domain.database_for(case)) == spider.db_dir / "concert_hall" / "concert_hall.sqlite"


def test_relative_db_dir_is_written_relative_to_the_case_folder(
    spider: Benchmark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project moved as a whole keeps working: the path is relative to the case folder."""
    monkeypatch.chdir(spider.db_dir.parent)
    out = tmp_path / "cases" / "rel"
    import_spider(spider.files / "tables.json", spider.files / "dev.json", Path("database"), out)
    domain = yaml.safe_load((out / "domain.yaml").read_text())
    assert not Path(domain["database"]).is_absolute()
    case_set = load_cases(out)
    assert Path(case_set.domain.database_for(case_set.cases[0])).is_file()


def test_gold_sql_file_gives_the_same_cases(spider: Benchmark, tmp_path: Path) -> None:
    """dev_gold.sql holds the same SQL as dev.json here, so both imports write the same cases."""
    _spider(spider, tmp_path / "a")
    _spider(spider, tmp_path / "b", gold_sql=True)
    for path in sorted((tmp_path / "a").glob("*-*.yaml")):
        assert path.read_text() == (tmp_path / "b" / path.name).read_text()


def test_double_quoted_strings_become_literals(spider: Benchmark, tmp_path: Path) -> None:
    """Spider writes "France" for 'France'; the case keeps SQLite's meaning, stated plainly."""
    _spider(spider, tmp_path / "s")
    case = load_cases(tmp_path / "s").by_id()["concert-hall-1"]
    assert case.gold_sql == "SELECT name FROM singer WHERE country = 'France'"


def test_manifest_records_gold_order(spider: Benchmark, tmp_path: Path) -> None:
    _spider(spider, tmp_path / "s")
    manifest = read_manifest(tmp_path / "s")
    assert manifest.benchmark == "spider"
    assert [e.index for e in manifest.entries] == list(range(14))
    assert manifest.entries[8].case_id == "school-club-8"


def test_tables_json_naming_a_missing_table_is_an_error(spider: Benchmark, tmp_path: Path) -> None:
    files = copy_files(spider.files, tmp_path / "files")
    tables = json.loads((files / "tables.json").read_text())
    tables[0]["table_names_original"].append("ticket")
    (files / "tables.json").write_text(json.dumps(tables))
    with pytest.raises(ConfigError, match=r"tables\.json.*concert_hall: table 'ticket'.*Fix"):
        import_spider(files / "tables.json", files / "dev.json", spider.db_dir, tmp_path / "o")


def test_tables_json_declaring_sqlite_sequence_is_accepted(
    spider: Benchmark, tmp_path: Path
) -> None:
    """Spider's official tables.json declares SQLite's own sqlite_sequence (world_1 does); the
    table is SQLite's bookkeeping, not data the database must hold."""
    files = copy_files(spider.files, tmp_path / "files")
    tables = json.loads((files / "tables.json").read_text())
    entry = tables[0]
    entry["table_names_original"].append("sqlite_sequence")
    position = len(entry["table_names_original"]) - 1
    for column in ("name", "seq"):
        entry["column_names_original"].append([position, column])
    (files / "tables.json").write_text(json.dumps(tables))
    import_spider(files / "tables.json", files / "dev.json", spider.db_dir, tmp_path / "o")
    assert load_cases(tmp_path / "o").cases


def test_tables_json_naming_a_missing_column_is_an_error(spider: Benchmark, tmp_path: Path) -> None:
    files = copy_files(spider.files, tmp_path / "files")
    tables = json.loads((files / "tables.json").read_text())
    tables[1]["column_names_original"].append([0, "gpa"])
    (files / "tables.json").write_text(json.dumps(tables))
    with pytest.raises(ConfigError, match=r"school_club: column student\.gpa"):
        import_spider(files / "tables.json", files / "dev.json", spider.db_dir, tmp_path / "o")


def test_missing_database_is_an_error(spider: Benchmark, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dev\.json.*missing.*concert_hall.*Fix: pass --db-dir"):
        import_spider(
            spider.files / "tables.json", spider.files / "dev.json", tmp_path, tmp_path / "o"
        )


def test_gold_sql_out_of_order_names_the_line(spider: Benchmark, tmp_path: Path) -> None:
    files = copy_files(spider.files, tmp_path / "files")
    lines = (files / "dev_gold.sql").read_text().splitlines()
    lines[2], lines[9] = lines[9], lines[2]
    (files / "dev_gold.sql").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"dev_gold\.sql:3: expected 'SQL<TAB>concert_hall'"):
        _spider(Benchmark(files, spider.db_dir), tmp_path / "o", gold_sql=True)


def test_question_without_field_names_entry_and_field(spider: Benchmark, tmp_path: Path) -> None:
    files = copy_files(spider.files, tmp_path / "files")
    questions = json.loads((files / "dev.json").read_text())
    del questions[4]["question"]
    (files / "dev.json").write_text(json.dumps(questions))
    with pytest.raises(ConfigError, match=r"dev\.json: entry \[4\]: field 'question'"):
        _spider(Benchmark(files, spider.db_dir), tmp_path / "o")


def test_second_import_needs_replace(spider: Benchmark, tmp_path: Path) -> None:
    """An import never mixes with an earlier one; --replace removes what that one wrote."""
    out = tmp_path / "s"
    _spider(spider, out)
    (out / "concert-hall-0.yaml").unlink()
    with pytest.raises(ConfigError, match="--replace"):
        _spider(spider, out)
    import_spider(
        spider.files / "tables.json", spider.files / "dev.json", spider.db_dir, out, replace=True
    )
    assert len(load_cases(out).cases) == 14


def test_bird_cases_keep_evidence_and_bands(bird: Benchmark, tmp_path: Path) -> None:
    out = tmp_path / "bird-fix"
    report = import_bird(bird.files / "dev.json", bird.db_dir, out)
    case_set = load_cases(out)
    questions = json.loads((bird.files / "dev.json").read_text())
    assert case_set.problems == ()
    assert report.bands == {"bird:challenging": 3, "bird:moderate": 4, "bird:simple": 5}
    case = case_set.by_id()["library-0"]
    assert case.evidence == questions[0]["evidence"]
    assert case.difficulty == "bird:simple"
    assert case_set.by_id()["school-club-10"].evidence is None  # empty evidence: none
    for case in case_set.cases:
        outcome = run_gold(case_set.domain, case)
        assert outcome.error is None and not outcome.refused, (case.id, outcome)


def test_bird_evidence_travels_with_the_item(bird: Benchmark, tmp_path: Path) -> None:
    """The SUT receives the evidence sentence with the question (Item.evidence)."""
    import_bird(bird.files / "dev.json", bird.db_dir, tmp_path / "b")
    case_set = load_cases(tmp_path / "b")
    items = {i.case_id: i for i in build_items(case_set, {}, "main")}
    assert items["library-2"].evidence == case_set.by_id()["library-2"].evidence


def test_bird_unknown_difficulty_is_an_error(bird: Benchmark, tmp_path: Path) -> None:
    files = copy_files(bird.files, tmp_path / "files")
    questions = json.loads((files / "dev.json").read_text())
    questions[3]["difficulty"] = "hard"
    (files / "dev.json").write_text(json.dumps(questions))
    with pytest.raises(ConfigError, match=r"entry \[3\]: field 'difficulty' is 'hard'.*simple"):
        import_bird(files / "dev.json", bird.db_dir, tmp_path / "o")


def test_import_commands(
    spider: Benchmark, bird: Benchmark, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command line prints the bands and points at `t2s cases check`; errors exit 2."""
    code = main(
        [
            "import", "spider", "--tables", str(spider.files / "tables.json"),
            "--gold", str(spider.files / "dev.json"), "--db-dir", str(spider.db_dir),
            "--out", str(tmp_path / "s"),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "wrote 14 case(s) on 2 database(s)" in out and "spider:extra" in out
    assert "1 gold quer(ies) had double-quoted strings made explicit" in out
    code = main(
        ["import", "bird", "--gold", str(bird.files / "dev.json"), "--db-dir", str(tmp_path),
         "--out", str(tmp_path / "b")]
    )  # fmt: skip
    assert code == 2
    assert "missing" in capsys.readouterr().err
