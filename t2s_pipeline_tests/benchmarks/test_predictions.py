"""`t2s import predictions`: Spider and BIRD prediction files become replay files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from t2s_pipeline.benchmarks.imports import import_bird, import_spider
from t2s_pipeline.benchmarks.predictions import convert_predictions, write_replay_config
from t2s_pipeline.cli import main
from t2s_pipeline.config import load_config
from t2s_pipeline.errors import ConfigError
from t2s_pipeline.sut.replay import ReplayClient
from t2s_pipeline_tests.benchmarks.conftest import Benchmark


@pytest.fixture
def spider_cases(spider: Benchmark, tmp_path: Path) -> Path:
    out = tmp_path / "cases" / "spider-fix"
    import_spider(spider.files / "tables.json", spider.files / "dev.json", spider.db_dir, out)
    return out


@pytest.fixture
def bird_cases(bird: Benchmark, tmp_path: Path) -> Path:
    out = tmp_path / "cases" / "bird-fix"
    import_bird(bird.files / "dev.json", bird.db_dir, out)
    return out


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_spider_lines_map_to_cases_in_gold_order(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    out = tmp_path / "preds.jsonl"
    report = convert_predictions("spider", spider.files / "pred.sql", spider_cases, out)
    lines = _lines(out)
    predicted = (spider.files / "pred.sql").read_text().splitlines()
    assert report.n_predictions == len(lines) == 14 and report.missing == ()
    assert lines[9] == {"case_id": "school-club-9", "phrasing": 0, "sql": predicted[9]}
    assert lines[0]["case_id"] == "concert-hall-0"


def test_no_meta_line_so_replay_is_not_isolated(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    """A recorded file proves nothing about isolation: the replay client must say so."""
    out = tmp_path / "preds.jsonl"
    convert_predictions("spider", spider.files / "pred.sql", spider_cases, out)
    assert all("meta" not in line for line in _lines(out))
    assert ReplayClient(out).health().supports_exclusions is False


def test_prediction_strings_are_made_explicit_like_the_gold(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    """Both sides are prepared alike: "France" in a prediction is rewritten as in the gold."""
    out = tmp_path / "preds.jsonl"
    report = convert_predictions("spider", spider.files / "pred.sql", spider_cases, out)
    assert report.rewritten == 1
    assert _lines(out)[3]["sql"] == (
        "SELECT AVG(age), MIN(age), MAX(age) FROM singer WHERE country = 'France'"
    )


def test_spider_line_count_must_match(spider_cases: Path, tmp_path: Path) -> None:
    short = tmp_path / "short.sql"
    short.write_text("SELECT 1\n" * 13)
    with pytest.raises(ConfigError, match=r"short\.sql: 13 prediction line\(s\) for 14"):
        convert_predictions("spider", short, spider_cases, tmp_path / "p.jsonl")


def test_spider_blank_line_is_an_unanswered_question(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    lines = (spider.files / "pred.sql").read_text().splitlines()
    lines[5] = ""
    preds = tmp_path / "blank.sql"
    preds.write_text("\n".join(lines) + "\n")
    convert_predictions("spider", preds, spider_cases, tmp_path / "p.jsonl")
    assert _lines(tmp_path / "p.jsonl")[5] == {
        "case_id": "concert-hall-5",
        "phrasing": 0,
        "sql": None,
    }


def test_spider_db_id_suffix_is_checked(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    lines = (spider.files / "pred.sql").read_text().splitlines()
    lines[2] += "\tschool_club"
    preds = tmp_path / "tagged.sql"
    preds.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"tagged\.sql:3: names database 'school_club'"):
        convert_predictions("spider", preds, spider_cases, tmp_path / "p.jsonl")


def test_bird_keys_map_to_cases_and_missing_ones_are_reported(
    bird: Benchmark, bird_cases: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bird.jsonl"
    report = convert_predictions("bird", bird.files / "predict_dev.json", bird_cases, out)
    lines = _lines(out)
    assert report.missing == ("school-club-11",)
    assert [line["case_id"] for line in lines][:2] == ["library-0", "library-1"]
    assert lines[7]["sql"] == "SELECT COUNT(*) FROM student WHERE sex = 'F'"


def test_bird_index_out_of_range_is_an_error(bird_cases: Path, tmp_path: Path) -> None:
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"40": "SELECT 1\t----- bird -----\tlibrary"}))
    with pytest.raises(ConfigError, match=r"p\.json: key '40': question index 40 is not"):
        convert_predictions("bird", preds, bird_cases, tmp_path / "p.jsonl")


def test_bird_wrong_database_is_an_error(bird_cases: Path, tmp_path: Path) -> None:
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps({"0": "SELECT 1\t----- bird -----\tschool_club"}))
    with pytest.raises(ConfigError, match=r"key '0': names database 'school_club'"):
        convert_predictions("bird", preds, bird_cases, tmp_path / "p.jsonl")


def test_folder_without_import_record_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"benchmark\.json.*Fix: pass the folder written by"):
        convert_predictions("spider", tmp_path / "x", tmp_path, tmp_path / "p.jsonl")


def test_config_replays_the_file(spider: Benchmark, spider_cases: Path, tmp_path: Path) -> None:
    replay = tmp_path / "preds.jsonl"
    convert_predictions("spider", spider.files / "pred.sql", spider_cases, replay)
    path = write_replay_config(
        tmp_path / "configs" / "spider-fix.yaml", spider_cases, replay, "spider",
        spider.files / "pred.sql",
    )  # fmt: skip
    config = load_config(path)
    assert (config.name, config.sut.kind, config.sut.file) == ("spider-fix", "replay", str(replay))
    assert config.cases == str(spider_cases) and config.phrasings == "main"


def test_new_predictions_at_the_same_path_give_a_new_run_id(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    """The predictions' hash is in the config, so a second model never overwrites the first run."""
    replay, config = tmp_path / "preds.jsonl", tmp_path / "c" / "model.yaml"
    convert_predictions("spider", spider.files / "pred.sql", spider_cases, replay)
    first = load_config(write_replay_config(config, spider_cases, replay, "spider", replay))
    replay.write_text(replay.read_text().replace("count(*)", "COUNT(*)"))
    second = load_config(write_replay_config(config, spider_cases, replay, "spider", replay))
    assert first.run_id("h") != second.run_id("h")


def test_bad_config_name_is_refused_and_not_left_behind(
    spider: Benchmark, spider_cases: Path, tmp_path: Path
) -> None:
    replay = tmp_path / "preds.jsonl"
    convert_predictions("spider", spider.files / "pred.sql", spider_cases, replay)
    target = tmp_path / "Spider_Model.yaml"
    with pytest.raises(ConfigError, match="field 'name'"):
        write_replay_config(target, spider_cases, replay, "spider", replay)
    assert not target.exists()


def test_predictions_command(
    bird: Benchmark, bird_cases: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "configs" / "bird-fix.yaml"
    code = main(
        [
            "import", "predictions", "--format", "bird", "--file",
            str(bird.files / "predict_dev.json"), "--cases", str(bird_cases),
            "--out", str(tmp_path / "bird.jsonl"), "--config", str(config),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "wrote 11 prediction(s) for 12 case(s)" in out
    assert "1 case(s) without a prediction (item errors): school-club-11" in out
    assert load_config(config).sut.kind == "replay"
