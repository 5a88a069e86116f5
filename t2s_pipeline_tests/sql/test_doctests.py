"""The short examples in the SQL analysis docstrings are executable and must stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = (
    "t2s_pipeline.sql.analysis",
    "t2s_pipeline.sql.canonical",
    "t2s_pipeline.sql.clean",
    "t2s_pipeline.sql.components",
    "t2s_pipeline.sql.names",
    "t2s_pipeline.sql.pair",
    "t2s_pipeline.sql.parse",
    "t2s_pipeline.sql.qualify",
    "t2s_pipeline.sql.render",
    "t2s_pipeline.sql.resolve",
    "t2s_pipeline.sql.schema",
    "t2s_pipeline.scoring.components",
    "t2s_pipeline.scoring.retrieval",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    """An example that lies is worse than none: run every one."""
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
