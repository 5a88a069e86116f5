"""A stage runs with the objects alive before it set aside from garbage collection, and gives
them back however it ends."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from t2s_pipeline.run.context import Stage, StageResult, older_objects_frozen


def _seen_during(seen: list[int]) -> Any:
    def materialise(run: Any) -> StageResult:
        seen.append(gc.get_freeze_count())
        return StageResult()

    return materialise


def test_a_stage_sets_older_objects_aside_and_gives_them_back() -> None:
    assert gc.get_freeze_count() == 0
    seen: list[int] = []
    Stage("s", (), _seen_during(seen)).execute(None)  # type: ignore[arg-type]
    assert seen[0] > 1000  # the modules and everything else alive before the stage
    assert gc.get_freeze_count() == 0


def test_a_failing_stage_gives_them_back_and_blocks_nest() -> None:
    def fails(run: Any) -> StageResult:
        raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        Stage("bad", (), fails).execute(None)  # type: ignore[arg-type]
    assert gc.get_freeze_count() == 0
    seen: list[int] = []
    with older_objects_frozen():
        outer = gc.get_freeze_count()
        Stage("inner", (), _seen_during(seen)).execute(None)  # type: ignore[arg-type]
        assert seen == [outer] and gc.get_freeze_count() == outer
    assert gc.get_freeze_count() == 0
