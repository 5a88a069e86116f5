"""The reviewed function allowlists and the command that compares them with the engine."""

from __future__ import annotations

import pytest

from t2s_pipeline.execution.allowlists import allowed_functions
from t2s_pipeline.execution.allowlists.__main__ import engine_functions, main

WINDOW_ONLY = {"cume_dist", "dense_rank", "fill", "first_value", "lag", "last_value", "lead",
               "nth_value", "ntile", "percent_rank", "rank", "rank_dense", "row_number"}  # fmt: skip
"""DuckDB's window functions, which ``duckdb_functions()`` does not list."""


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_every_listed_function_exists_in_the_installed_engine(engine: str) -> None:
    """A stale name on a list would be harmless, but it means nobody reviewed the upgrade
    (``unnest`` is listed for its scalar use in the select list; DuckDB files it as a table
    function)."""
    assert allowed_functions(engine) - engine_functions(engine) <= WINDOW_ONLY | {"unnest"}


def test_the_comparison_shows_settings_functions_as_unreviewed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """current_setting is offered by DuckDB and deliberately left off: it shows as ``+``."""
    assert main(["duckdb"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "+ current_setting" in lines and "+ sum" not in lines


def test_postgres_needs_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["postgres"]) == 2
    assert "needs a URL" in capsys.readouterr().err
