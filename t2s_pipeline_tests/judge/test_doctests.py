"""The short examples in the judge lane's docstrings are executable and must stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = (
    "t2s_pipeline.judge.verdict",
    "t2s_pipeline.judge.prompt",
    "t2s_pipeline.judge.client",
    "t2s_pipeline.judge.labels",
    "t2s_pipeline.judge.calibration",
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    """An example that lies is worse than none: run every one."""
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
