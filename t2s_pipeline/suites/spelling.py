"""How each engine spells the few things the corpus generator writes differently per dialect.

The generator composes one statement shape for every engine; the parts no two engines agree
on (table names in SQLite's single schema, date arithmetic, string aggregation, JSON) come
from here, so each rendered statement is native SQL for its engine, not a transpilation.
MySQL's spellings are MariaDB 10.11's (no ``->>``, no ``FILTER``, no table functions), which
MySQL 8 reads too; a MySQL schema is a database, so tables keep their ``schema.table`` names.

>>> Spelling("sqlite").table("sales.orders"), Spelling("duckdb").table("sales.orders")
('orders', 'sales.orders')
>>> Spelling("mysql").month_text("o.order_date"), Spelling("mysql").concat("'['", "x", "']'")
("DATE_FORMAT(o.order_date, '%Y-%m')", "concat('[', x, ']')")
"""

from __future__ import annotations

from dataclasses import dataclass

# The engine names of t2s_pipeline.execution.engine, repeated so the suites import without
# loading the executor they are run against.
DUCKDB = "duckdb"
POSTGRES = "postgres"
SQLITE = "sqlite"
MYSQL = "mysql"
ENGINES: tuple[str, ...] = (DUCKDB, POSTGRES, SQLITE, MYSQL)


@dataclass(frozen=True)
class Spelling:
    """One engine's spelling of tables, literals and the functions the dialects disagree on."""

    engine: str

    @property
    def sqlite(self) -> bool:
        return self.engine == SQLITE

    def table(self, qualified: str) -> str:
        """The name a statement uses: ``schema.table``, or the plain name in SQLite's ``main``."""
        return qualified.split(".", 1)[1] if self.sqlite else qualified

    def date(self, iso: str) -> str:
        """A date literal (SQLite stores dates as ISO text)."""
        return f"'{iso}'" if self.sqlite else f"DATE '{iso}'"

    def year(self, column: str) -> str:
        return {
            DUCKDB: f"year({column})",
            POSTGRES: f"CAST(EXTRACT(YEAR FROM {column}) AS INTEGER)",
            SQLITE: f"CAST(strftime('%Y', {column}) AS INTEGER)",
            MYSQL: f"YEAR({column})",
        }[self.engine]

    def month(self, column: str) -> str:
        """The month a date falls in, as a value to group on."""
        if self.engine == MYSQL:
            return f"DATE_FORMAT({column}, '%Y-%m-01')"
        return f"strftime('%Y-%m', {column})" if self.sqlite else f"date_trunc('month', {column})"

    def month_text(self, column: str) -> str:
        """The month as ``YYYY-MM`` text."""
        return {
            DUCKDB: f"strftime({column}, '%Y-%m')",
            POSTGRES: f"to_char({column}, 'YYYY-MM')",
            SQLITE: f"strftime('%Y-%m', {column})",
            MYSQL: f"DATE_FORMAT({column}, '%Y-%m')",
        }[self.engine]

    def days_between(self, start: str, end: str) -> str:
        return {
            DUCKDB: f"date_diff('day', {start}, {end})",
            POSTGRES: f"({end} - {start})",
            SQLITE: f"CAST(julianday({end}) - julianday({start}) AS INTEGER)",
            MYSQL: f"DATEDIFF({end}, {start})",
        }[self.engine]

    def plus_days(self, column: str, days: int) -> str:
        if self.engine == MYSQL:  # date + 7 is a number there (20240108), not a date
            return f"({column} + INTERVAL {days} DAY)"
        return f"date({column}, '{days:+d} day')" if self.sqlite else f"({column} + {days})"

    def plus_month(self, column: str) -> str:
        return {
            DUCKDB: f"CAST({column} + INTERVAL 1 MONTH AS DATE)",
            POSTGRES: f"CAST({column} + INTERVAL '1 month' AS DATE)",
            SQLITE: f"date({column}, '+1 month')",
            MYSQL: f"({column} + INTERVAL 1 MONTH)",
        }[self.engine]

    def text(self, expression: str) -> str:
        kind = {DUCKDB: "VARCHAR", MYSQL: "CHAR"}.get(self.engine, "TEXT")
        return f"CAST({expression} AS {kind})"

    def integer(self, expression: str) -> str:
        return f"CAST({expression} AS {'SIGNED' if self.engine == MYSQL else 'INTEGER'})"

    def concat(self, *parts: str) -> str:
        """Text joined end to end (``||`` is OR in MySQL's default SQL mode)."""
        return f"concat({', '.join(parts)})" if self.engine == MYSQL else " || ".join(parts)

    def round2(self, expression: str) -> str:
        """Rounded to cents (PostgreSQL rounds to a scale only on NUMERIC)."""
        if self.engine == POSTGRES:
            return f"round(CAST({expression} AS NUMERIC), 2)"
        return f"round({expression}, 2)"

    def greatest(self, first: str, second: str) -> str:
        return f"max({first}, {second})" if self.sqlite else f"greatest({first}, {second})"

    def least(self, first: str, second: str) -> str:
        return f"min({first}, {second})" if self.sqlite else f"least({first}, {second})"

    def position(self, needle: str, haystack: str) -> str:
        return {
            DUCKDB: f"strpos({haystack}, {needle})",
            POSTGRES: f"strpos({haystack}, {needle})",
            SQLITE: f"instr({haystack}, {needle})",
            MYSQL: f"LOCATE({needle}, {haystack})",
        }[self.engine]

    def string_agg(self, expression: str, separator: str) -> str:
        """Distinct values joined by ``separator`` (SQLite's DISTINCT takes one argument)."""
        if self.sqlite:
            return f"group_concat(DISTINCT {expression})"
        if self.engine == MYSQL:
            return (
                f"GROUP_CONCAT(DISTINCT {expression} ORDER BY {expression} SEPARATOR '{separator}')"
            )
        return f"string_agg(DISTINCT {expression}, '{separator}' ORDER BY {expression})"

    def json_object(self, pairs: list[tuple[str, str]]) -> str:
        """A JSON object built from ``(key, expression)`` pairs."""
        name = "json_build_object" if self.engine == POSTGRES else "json_object"
        arguments = ", ".join(f"'{key}', {value}" for key, value in pairs)
        return f"{name}({arguments})"

    def json_text(self, document: str, key: str) -> str:
        """The value at ``key`` of a JSON object, as text."""
        return {
            DUCKDB: f"json_extract_string({document}, '$.{key}')",
            POSTGRES: f"({document} ->> '{key}')",
            SQLITE: f"json_extract({document}, '$.{key}')",
            MYSQL: f"JSON_UNQUOTE(JSON_EXTRACT({document}, '$.{key}'))",
        }[self.engine]

    def json_array_agg(self, expression: str) -> str:
        """A JSON array of the distinct values of ``expression``."""
        if self.engine == POSTGRES:
            return f"json_agg(DISTINCT {expression} ORDER BY {expression})"
        if self.engine == DUCKDB:  # json_group_array is a macro there: no DISTINCT
            return f"to_json(list(DISTINCT {expression} ORDER BY {expression}))"
        if self.engine == MYSQL:
            return f"JSON_ARRAYAGG(DISTINCT {expression} ORDER BY {expression})"
        return f"json_group_array(DISTINCT {expression})"

    def series(self, low: int, high: int, alias: str, column: str) -> str:
        """A FROM item of the integers ``low..high``: a table function, JSON in SQLite, a union
        of constants in MySQL (which has no table function over constants the filter reads)."""
        if self.engine == MYSQL:
            first = f"SELECT {low} AS {column}"
            rest = "".join(f" UNION ALL SELECT {n}" for n in range(low + 1, high + 1))
            return f"({first}{rest}) AS {alias}"
        if self.sqlite:
            values = ",".join(str(n) for n in range(low, high + 1))
            return f"(SELECT value AS {column} FROM json_each('[{values}]')) AS {alias}"
        if self.engine == DUCKDB:
            return f"range({low}, {high + 1}) AS {alias}({column})"
        return f"generate_series({low}, {high}) AS {alias}({column})"
