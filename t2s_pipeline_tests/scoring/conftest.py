"""Helpers for the output-family tests: the YAML fixture loader and small builders."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import yaml

from t2s_pipeline.results import Column, ResultSet

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "output"


class _Loader(yaml.SafeLoader):
    """SafeLoader plus the driver types YAML has no literal for."""


def _decimal(loader: yaml.SafeLoader, node: yaml.Node) -> decimal.Decimal:
    return decimal.Decimal(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


def _nan(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    return float("nan")


def _bytes(loader: yaml.SafeLoader, node: yaml.Node) -> bytes:
    return bytes.fromhex(str(loader.construct_scalar(node)))  # type: ignore[arg-type]


_Loader.add_constructor("!decimal", _decimal)
_Loader.add_constructor("!nan", _nan)
_Loader.add_constructor("!bytes", _bytes)


def load_scenarios(name: str) -> list[dict[str, Any]]:
    """Entries of one fixture file under ``fixtures/output``."""
    with (FIXTURES / name).open(encoding="utf-8") as handle:
        entries: list[dict[str, Any]] = yaml.load(handle, Loader=_Loader)  # noqa: S506
    return entries


def result_set(entry: dict[str, Any] | None) -> ResultSet | None:
    """A fixture side (``columns`` + ``rows``) as a result set; ``None`` stays a failure."""
    if entry is None:
        return None
    columns = tuple(_column(c) for c in entry["columns"])
    return ResultSet(columns, [tuple(row) for row in entry["rows"]])


def _column(spec: str | dict[str, str] | None) -> Column:
    if isinstance(spec, dict):
        return Column(spec.get("name"), spec.get("origin"), spec.get("expression"))
    return Column(spec)
