"""SQLite's double-quoted strings made explicit: same result, a filter the analysis can see."""

from __future__ import annotations

import pytest

from t2s_pipeline.execution import Guard, open_executor
from t2s_pipeline.sql.sqlite_literals import literal_double_quotes
from t2s_pipeline_tests.benchmarks.conftest import Benchmark

COLUMNS = frozenset({"name", "country", "age", "singer_id"})


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            'SELECT name FROM singer WHERE country = "France" AND name LIKE "M%"',
            "SELECT name FROM singer WHERE country = 'France' AND name LIKE 'M%'",
        ),
        # a double-quoted column name stays a column
        (
            'SELECT "name" FROM singer WHERE "age" > 30',
            'SELECT "name" FROM singer WHERE "age" > 30',
        ),
        # an output alias stays an alias
        (
            'SELECT age AS "years" FROM singer ORDER BY "years"',
            'SELECT age AS "years" FROM singer ORDER BY "years"',
        ),
        # backquotes are always identifiers in SQLite
        ("SELECT `Publication Year` FROM book", "SELECT `Publication Year` FROM book"),
        # qualified names are columns
        ('SELECT s."x" FROM singer AS s', 'SELECT s."x" FROM singer AS s'),
        # what does not parse is left to the pipeline to report
        ('SELECT FROM WHERE "x"', 'SELECT FROM WHERE "x"'),
    ],
)
def test_rewrite(sql: str, expected: str) -> None:
    assert literal_double_quotes(sql, COLUMNS) == expected


def test_rewritten_query_returns_what_sqlite_returned(spider: Benchmark) -> None:
    """The rewrite states SQLite's own reading: the guarded executor gets the same rows."""
    db = spider.db_dir / "concert_hall" / "concert_hall.sqlite"
    sql = 'SELECT name, "x" FROM singer WHERE country = "France" ORDER BY age'
    with open_executor(str(db), Guard(allowed_schemas=("main",), dialect="sqlite")) as executor:
        before = executor.run(sql)
        after = executor.run(literal_double_quotes(sql, COLUMNS))
    assert before.error is None and before.rows
    assert after.rows == before.rows


def test_rewrite_needs_a_database_column_list() -> None:
    """Without the column list every double-quoted word would look like a string."""
    assert literal_double_quotes('SELECT "name" FROM singer', frozenset()) == (
        "SELECT 'name' FROM singer"
    )
