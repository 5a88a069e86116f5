"""The run partitions: one dynamic partition of ``eval_run`` per evaluated configuration."""

from __future__ import annotations

import dagster as dg

EVAL_RUN = "eval_run"
eval_run_partitions = dg.DynamicPartitionsDefinition(name=EVAL_RUN)
