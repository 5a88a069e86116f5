"""Guarded execution: every query the harness runs goes through the same guarded executor.

Two independent access layers (SPEC 9): the statement filter (sqlglot, pure) and the database
layer (one module per engine), plus time and row bounds that always apply.

>>> from t2s_pipeline.execution import Guard, check_statement
>>> check_statement("DROP TABLE sales.orders", Guard(allowed_schemas=("sales",))).layer
'filter'
"""

from __future__ import annotations

from t2s_pipeline.execution.engine import ENGINES, detect_engine
from t2s_pipeline.execution.executor import GuardedExecutor, open_executor
from t2s_pipeline.execution.guard import DATABASE, FILTER, LAYERS, Guard, Refusal
from t2s_pipeline.execution.outcome import QueryOutcome, json_safe
from t2s_pipeline.execution.statement_filter import check_statement

__all__ = [
    "DATABASE",
    "ENGINES",
    "FILTER",
    "LAYERS",
    "Guard",
    "GuardedExecutor",
    "QueryOutcome",
    "Refusal",
    "check_statement",
    "detect_engine",
    "json_safe",
    "open_executor",
]
