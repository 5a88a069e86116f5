"""Loading the YAML fixtures under ``fixtures/sql`` shared by the SQL analysis tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from t2s_pipeline.sql.schema import Schema

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sql"


def load_fixture(name: str) -> Any:
    """The parsed YAML file ``fixtures/sql/<name>``."""
    return yaml.safe_load((FIXTURES / name).read_text())


def shared_schema() -> Schema:
    """The small warehouse of ``schema.yaml``."""
    data = load_fixture("schema.yaml")
    return Schema(data["tables"], data["dialect"])


def entry_schema(entry: dict[str, Any]) -> Schema:
    """The schema an entry names, else the shared one, in the entry's dialect."""
    dialect = entry.get("dialect", "duckdb")
    tables = entry.get("schema") or load_fixture("schema.yaml")["tables"]
    return Schema(tables, dialect)
