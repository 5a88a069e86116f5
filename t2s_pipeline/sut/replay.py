"""The replay client: score a model's recorded outputs without a live service.

The file is JSON Lines, one prediction per line, keyed by case id and phrasing index::

    {"meta": {"supports_exclusions": true}}          <- optional, first line only
    {"case_id": "rev-card-last-month", "phrasing": 0, "sql": "SELECT ...",
     "refused": false, "message": null, "tables": ["sales.orders"], "examples": ["x"],
     "latency_s": 1.2}

Only ``case_id``, ``phrasing`` and ``sql`` are required. Health says ``supports_exclusions``
is **False** unless the header says true: nothing in a recorded file proves the model could
not see the case it was answering, so a replayed run counts as ``not_isolated`` until whoever
recorded it vouches otherwise. A missing item is an error on that item
(``invalid_response``, "no recorded prediction"), never dropped. No probe is made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from t2s_pipeline.errors import SutError
from t2s_pipeline.sut.client import Item, ItemOutcome, Progress, SutClient, check_run_id
from t2s_pipeline.sut.contract import (
    AskResponse,
    ExampleRef,
    Health,
    OfferedTable,
    RetrievalTrace,
    describe_validation,
)

MISSING = "no recorded prediction"
T = TypeVar("T", bound=BaseModel)


class RecordedPrediction(BaseModel):
    """One line of a replay file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: StrictStr
    phrasing: int = Field(ge=0, strict=True)
    sql: StrictStr | None
    refused: StrictBool = False
    message: StrictStr | None = None
    tables: tuple[StrictStr, ...] | None = None
    examples: tuple[StrictStr, ...] | None = None
    latency_s: float = Field(default=0.0, ge=0)

    def response(self) -> AskResponse:
        """The prediction as the SUT would have answered it."""
        trace = None
        if self.tables is not None or self.examples is not None:
            trace = RetrievalTrace(
                tables=tuple(OfferedTable(name=t) for t in self.tables or ()),
                examples=tuple(ExampleRef(id=e) for e in self.examples or ()),
            )
        return AskResponse(
            sql=self.sql, refused=self.refused, message=self.message, retrieval=trace
        )


class ReplayHeader(BaseModel):
    """The optional first-line metadata of a replay file."""

    model_config = ConfigDict(frozen=True, extra="allow")

    supports_exclusions: StrictBool = False


class ReplayClient(SutClient):
    """Answers items from a recorded JSONL file; a malformed file is a :class:`SutError`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.header, self.predictions = read_replay(self.path)

    def health(self) -> Health:
        """Always up; isolated only when the file's header says so."""
        self._health = Health(status="ok", supports_exclusions=self.header.supports_exclusions)
        return self._health

    async def ask_all(
        self, items: Sequence[Item], run_id: str, progress: Progress | None = None
    ) -> list[ItemOutcome]:
        """One outcome per item, from the file; items without a line become errors."""
        check_run_id(run_id)
        outcomes = []
        for done, item in enumerate(items, start=1):
            outcomes.append(self._outcome(item))
            if progress is not None:
                progress(done, len(items))
        return outcomes

    def close(self) -> None:
        """Forget the loaded predictions."""
        self.predictions = {}

    def _outcome(self, item: Item) -> ItemOutcome:
        recorded = self.predictions.get((item.case_id, item.phrasing))
        if recorded is None:
            return ItemOutcome(item.item_id, None, None, "invalid_response", None, MISSING, 0, 0.0)
        return ItemOutcome(
            item.item_id, recorded.response(), None, None, None, None, 1, recorded.latency_s
        )


def read_replay(path: Path) -> tuple[ReplayHeader, dict[tuple[str, int], RecordedPrediction]]:
    """Parse a replay file into its header and predictions keyed by (case id, phrasing)."""
    if not path.exists():
        raise SutError(f"replay file {path} does not exist")
    header = ReplayHeader()
    predictions: dict[tuple[str, int], RecordedPrediction] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        data = _json_line(path, number, line)
        if isinstance(data, dict) and set(data) == {"meta"} and not predictions:
            header = _parse(path, number, data["meta"], ReplayHeader)
            continue
        prediction = _parse(path, number, data, RecordedPrediction)
        key = (prediction.case_id, prediction.phrasing)
        if key in predictions:
            raise SutError(f"{path}:{number}: second prediction for {key[0]}#{key[1]}; keep one")
        predictions[key] = prediction
    if not predictions:
        raise SutError(
            f"replay file {path} holds no predictions; write one JSON object per line with "
            '"case_id", "phrasing" and "sql" (t2s import predictions writes such a file)'
        )
    return header, predictions


def _json_line(path: Path, number: int, line: str) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as error:
        raise SutError(f"{path}:{number}: not JSON ({error}); write one object per line") from None


def _parse(path: Path, number: int, data: object, model: type[T]) -> T:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise SutError(
            f"{path}:{number}: {describe_validation(error)}; "
            'fix the line (required: "case_id", "phrasing", "sql")'
        ) from None
