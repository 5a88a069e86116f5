"""Every short example in the package's docstrings is executable and must stay true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import t2s_pipeline

# Dagster modules carry no examples; importing them here would only slow collection.
_SKIP_PREFIXES = ("t2s_pipeline.assets", "t2s_pipeline.definitions")


def _modules_with_examples() -> list[str]:
    finder = doctest.DocTestFinder()
    names = []
    for info in pkgutil.walk_packages(t2s_pipeline.__path__, "t2s_pipeline."):
        if info.name.startswith(_SKIP_PREFIXES):
            continue
        module = importlib.import_module(info.name)
        if any(test.examples for test in finder.find(module)):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", _modules_with_examples())
def test_docstring_examples(name: str) -> None:
    """An example that lies is worse than none: run every one, in every module."""
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
