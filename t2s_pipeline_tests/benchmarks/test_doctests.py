"""The short examples in the benchmark modules' docstrings are executable and must stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = (
    "t2s_pipeline.benchmarks.databases",
    "t2s_pipeline.benchmarks.hardness",
    "t2s_pipeline.benchmarks.official",
    "t2s_pipeline.benchmarks.predictions",
    "t2s_pipeline.benchmarks.questions",
    "t2s_pipeline.sql.sqlite_literals",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
