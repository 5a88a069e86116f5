"""Bad case files are reported with file, field and fix; the valid ones still load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from t2s_pipeline.cases import expected_block, load_cases, parse_case, write_expected
from t2s_pipeline.errors import CaseError

DOMAIN = """\
name: t
engine: duckdb
dialect: duckdb
database: w.duckdb
allowed_schemas: [sales]
as_of: 2025-06-30
min_phrasings: 2
"""

GOOD = """\
id: {id}
question: How many orders are there?
phrasings:
  - Count the orders.
  - What is the number of orders?
gold_sql: |
  SELECT count(*) FROM sales.orders
difficulty: simple_aggregate
traps: []
tags: [sales]
"""


def _domain(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "domain.yaml").write_text(DOMAIN)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


BAD_FILES = {
    "syntax": ("id: [unclosed\n", "-", "not valid YAML"),
    "not-mapping": ("- just\n- a list\n", "-", "not a YAML mapping"),
    "missing-gold": (GOOD.format(id="x").replace("gold_sql: |\n  SELECT count(*) FROM sales.orders\n", ""), "gold_sql", "missing"),
    "bad-id": (GOOD.format(id="Bad_Id"), "id", "is not [a-z0-9-]"),
    "bad-difficulty": (GOOD.format(id="x").replace("simple_aggregate", "hard"), "difficulty", "unknown difficulty"),
    "few-phrasings": (GOOD.format(id="x").replace("  - What is the number of orders?\n", ""), "phrasings", "at least 2"),
    "phrasings-not-list": (GOOD.format(id="x").replace("phrasings:\n  - Count the orders.\n  - What is the number of orders?\n", "phrasings: one\n"), "phrasings", "list of non-empty strings"),
    "unknown-field": (GOOD.format(id="x") + "colour: blue\n", "colour", "unknown field"),
    "bad-expected": (GOOD.format(id="x") + "expected_result:\n  columns: [a]\n  rows: [[1, 2]]\n", "expected_result.rows", "length differs"),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_file_is_reported_and_others_load(tmp_path: Path, kind: str) -> None:
    """Each kind of bad file names its field and a fix, without hiding the good cases."""
    text, field, problem = BAD_FILES[kind]
    folder = _domain(tmp_path, {"good.yaml": GOOD.format(id="good"), "bad.yaml": text})
    case_set = load_cases(folder)
    assert [c.id for c in case_set.cases] == ["good"]
    assert len(case_set.problems) == 1
    reported = case_set.problems[0]
    assert reported.path.endswith("bad.yaml")
    assert reported.field == field
    assert problem in reported.problem
    assert "Fix:" in str(reported)


def test_a_file_that_is_not_utf8_is_reported_and_others_load(tmp_path: Path) -> None:
    folder = _domain(tmp_path, {"good.yaml": GOOD.format(id="good")})
    (folder / "bad.yaml").write_bytes(b"\xff\xfeid: x\n")
    case_set = load_cases(folder)
    assert [c.id for c in case_set.cases] == ["good"]
    assert "not UTF-8" in case_set.problems[0].problem


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda p: (p / "domain.yaml").write_text(DOMAIN + "name: [oops\n"),
            "not valid UTF-8 YAML",
        ),
        (lambda p: None, "the domain file is missing"),
    ],
)
def test_a_bad_domain_or_folder_is_a_case_error(tmp_path: Path, make: Any, message: str) -> None:
    make(tmp_path)
    with pytest.raises(CaseError, match=message):
        load_cases(tmp_path)
    with pytest.raises(CaseError, match="the case folder does not exist"):
        load_cases(tmp_path / "nope")


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("dialect: duckdb", "dialect: oracle", "dialect"),
        ("dialect: duckdb", "dialect: postgres", "dialect"),
        ("as_of: 2025-06-30", "as_of: yesterday", "as_of"),
    ],
)
def test_domain_fields_are_checked(tmp_path: Path, old: str, new: str, field: str) -> None:
    """A dialect the engine does not speak (the filter would read SQL differently from the
    database) and an as_of that is not a date stop the load with the field named."""
    (tmp_path / "domain.yaml").write_text(DOMAIN.replace(old, new))
    with pytest.raises(CaseError, match=f"field '{field}'"):
        load_cases(tmp_path)


def test_duplicate_ids_are_reported(tmp_path: Path) -> None:
    """Two files claiming one id would make leave-one-out exclude the wrong case."""
    folder = _domain(tmp_path, {"a.yaml": GOOD.format(id="same"), "b.yaml": GOOD.format(id="same")})
    case_set = load_cases(folder)
    assert len(case_set.cases) == 1
    assert case_set.problems[0].field == "id" and "duplicate" in case_set.problems[0].problem


def test_content_hash_follows_the_files(tmp_path: Path) -> None:
    """The case-set hash must change when any case changes (it triggers new runs)."""
    folder = _domain(tmp_path, {"a.yaml": GOOD.format(id="a")})
    before = load_cases(folder).content_hash
    (folder / "a.yaml").write_text(GOOD.format(id="a").replace("Count", "Tally"))
    assert load_cases(folder).content_hash != before


def test_freezing_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    """Freezing rewrites only the expected_result block, twice in a row."""
    path = tmp_path / "a.yaml"
    path.write_text("# a comment\n" + GOOD.format(id="a"))
    write_expected(path, expected_block(["n"], [[3]]))
    write_expected(path, expected_block(["n"], [[4]]))
    case, problems = parse_case(path)
    assert problems == [] and case is not None and case.expected_result is not None
    assert case.expected_result.rows == ((4,),)
    assert path.read_text().startswith("# a comment\n")


def test_a_yml_file_is_reported_not_skipped(tmp_path: Path) -> None:
    folder = _domain(tmp_path, {"good.yaml": GOOD.format(id="good"), "other.yml": GOOD})
    case_set = load_cases(folder)
    assert [c.id for c in case_set.cases] == ["good"]
    assert [(p.path.endswith("other.yml"), p.fix) for p in case_set.problems] == [
        (True, "rename it other.yaml")
    ]


def test_a_case_file_edited_between_loads_is_read_again(tmp_path: Path) -> None:
    """Loading is memoised on each file's bytes: an edit (even one keeping the file's size and
    modification second) gives the new case, and the same bytes give the same case."""
    folder = _domain(tmp_path, {"a.yaml": GOOD.format(id="a")})
    first = load_cases(folder).cases[0]
    (folder / "a.yaml").write_text(GOOD.format(id="a").replace("orders are", "orders were"))
    edited = load_cases(folder).cases[0]
    assert edited.question == "How many orders were there?" and first.question.endswith(
        "are there?"
    )
    (folder / "a.yaml").write_text(GOOD.format(id="a"))
    assert load_cases(folder).cases[0] == first


def test_an_unchanged_folder_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder whose files' stat records are unchanged gives the case set it gave before,
    without reading a file; any edit, new file or removed file is read again."""
    import t2s_pipeline.cases as cases_module

    monkeypatch.setattr(cases_module, "_RACY_NS", 0)  # files written just now may be kept
    folder = _domain(tmp_path, {"a.yaml": GOOD.format(id="a"), "b.yaml": GOOD.format(id="b")})
    first = load_cases(folder)
    reads: list[Path] = []
    real_read_bytes = Path.read_bytes

    def counted(path: Path) -> bytes:
        reads.append(path)
        return real_read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", counted)
    assert load_cases(folder) is first and reads == []
    (folder / "a.yaml").write_text(GOOD.format(id="a").replace("orders are", "orders were"))
    edited = load_cases(folder)
    assert edited.cases[0].question == "How many orders were there?"
    assert edited.content_hash != first.content_hash and reads
    (folder / "c.yaml").write_text(GOOD.format(id="c"))
    assert [c.id for c in load_cases(folder).cases] == ["a", "b", "c"]
    (folder / "b.yaml").unlink()
    assert [c.id for c in load_cases(folder).cases] == ["a", "c"]


def test_a_folder_changed_just_now_is_read_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file changed within the file system clock's tick could change again with the same
    stat record, so a folder changed just now is not kept."""
    folder = _domain(tmp_path, {"a.yaml": GOOD.format(id="a")})
    first = load_cases(folder)
    assert load_cases(folder) is not first
