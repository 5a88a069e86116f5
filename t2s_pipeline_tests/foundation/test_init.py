"""``t2s init`` and the project folder: a project anywhere, paths resolved against it."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import duckdb
import pytest
import yaml

from t2s_pipeline.casecheck import check_case_set as check_cases
from t2s_pipeline.cases import load_cases
from t2s_pipeline.cli import main
from t2s_pipeline.config import load_config


def _init(root: Path, *more: str) -> None:
    assert main(["init", str(root), *more]) == 0


def test_init_scaffolds_a_project_whose_example_case_executes(tmp_path: Path) -> None:
    root = tmp_path / "team-repo"
    _init(root)
    for name in (
        "t2s.yaml",
        "workspace.yaml",
        ".gitignore",
        "configs/builtin.yaml",
        "configs/inactive/my-service.yaml",
        "cases/shop/domain.yaml",
        "data/example.sqlite",
    ):
        assert (root / name).is_file(), name
    case_set = load_cases(root / "cases" / "shop")
    assert len(case_set.cases) == 1 and not case_set.problems
    report = check_cases(case_set)
    assert report.ok, report
    # Both configurations load; the inactive one shows every adapter option.
    assert load_config(root / "configs" / "builtin.yaml").cases == "cases/shop"
    service = load_config(root / "configs" / "inactive" / "my-service.yaml")
    assert service.sut.kind == "http" and service.sut.headers and service.sut.extra
    assert ".t2s/" in (root / ".gitignore").read_text()


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _init(tmp_path)
    before = (tmp_path / "cases" / "shop" / "domain.yaml").read_text()
    assert main(["init", str(tmp_path)]) == 2
    assert "already exists; t2s init never overwrites" in capsys.readouterr().err
    assert (tmp_path / "cases" / "shop" / "domain.yaml").read_text() == before


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_init_on_your_own_database(tmp_path: Path, engine: str) -> None:
    database = tmp_path / f"warehouse.{engine}"
    if engine == "sqlite":
        with closing(sqlite3.connect(database)) as con:
            con.executescript("CREATE TABLE accounts (id INTEGER, name TEXT);"
                              "INSERT INTO accounts VALUES (1, 'a'), (2, 'b'), (3, 'c');")  # fmt: skip
            con.commit()
    else:
        con = duckdb.connect(str(database))
        con.execute(
            "CREATE SCHEMA crm; CREATE TABLE crm.accounts AS SELECT range AS id FROM range(3)"
        )
        con.close()
    root = tmp_path / "project"
    _init(root, "--database", str(database), "--domain", "CRM")
    domain = yaml.safe_load((root / "cases" / "crm" / "domain.yaml").read_text())
    assert domain["engine"] == engine
    assert domain["allowed_schemas"] == (["main"] if engine == "sqlite" else ["crm"])
    case_set = load_cases(root / "cases" / "crm")
    assert [c.id for c in case_set.cases] == ["how-many-accounts"]
    report = check_cases(case_set)
    assert report.ok, report


def test_a_missing_database_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "p"), "--database", str(tmp_path / "nope.sqlite")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_command_line_works_from_the_project_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configuration's relative `cases:` and the project's `.t2s/` mean the same from any
    folder: typed from elsewhere, the run gets as far as the SUT (which is not running)."""
    root = tmp_path / "project"
    _init(root)
    config = root / "configs" / "down.yaml"
    config.write_text(
        "name: down\ncases: cases/shop\nsut: {kind: http, url: 'http://127.0.0.1:9'}\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["run", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "the SUT is not ready" in err and "no run was registered" in err
    # T2S_PROJECT names the project explicitly; a typed relative path still means "here".
    monkeypatch.setenv("T2S_PROJECT", str(root))
    assert main(["runs"]) == 0
    assert "no runs in .t2s/results " in capsys.readouterr().out


def test_a_config_whose_cases_are_missing_is_a_setup_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _init(tmp_path)
    config = tmp_path / "configs" / "lost.yaml"
    config.write_text("name: lost\ncases: cases/nowhere\n")
    assert main(["run", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "field 'cases'" in err and "holds no domain.yaml" in err and "Fix" in err


def test_a_missing_database_file_is_a_setup_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _init(tmp_path)
    (tmp_path / "data" / "example.sqlite").unlink()
    assert main(["run", "--config", str(tmp_path / "configs" / "builtin.yaml")]) == 2
    err = capsys.readouterr().err
    assert "field 'database'" in err and "does not exist" in err
