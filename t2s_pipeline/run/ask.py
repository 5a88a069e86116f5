"""The ask stage: every item put to the SUT over its API (and its retriever probed), with each
failure recorded, and whether leave-one-out held for it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager

import pandas as pd

from t2s_pipeline.agent.app import AgentSettings, build_app
from t2s_pipeline.agent.process import serve_in_process
from t2s_pipeline.agent.server import serve_in_thread
from t2s_pipeline.cases import CaseSet
from t2s_pipeline.config import RunConfig
from t2s_pipeline.errors import SutError
from t2s_pipeline.run.context import RunContext, StageResult
from t2s_pipeline.run.items import items_from_frame
from t2s_pipeline.run.rows import write
from t2s_pipeline.spread import SPREAD_FROM, cores
from t2s_pipeline.store import KeptWhileUnchanged, ResultsStore
from t2s_pipeline.sut.client import Item, ItemOutcome, SutClient
from t2s_pipeline.sut.contract import AskResponse, RetrieveResponse
from t2s_pipeline.sut.factory import http_client, http_settings, python_client
from t2s_pipeline.sut.http import HttpSutClient
from t2s_pipeline.sut.replay import ReplayClient


def candidate_sql(outcome: ItemOutcome | None) -> str | None:
    if outcome is None or outcome.response is None or outcome.response.refused:
        return None
    return outcome.response.sql


def outcome_row(outcome: ItemOutcome, item: Item) -> dict[str, object]:
    response = outcome.response
    return {
        "item_id": outcome.item_id,
        "case_id": item.case_id,
        "sql": None if response is None else response.sql,
        "refused": None if response is None else response.refused,
        "message": None if response is None else response.message,
        "error_class": outcome.error_class,
        "status": outcome.status,
        "error_message": outcome.message,
        "attempts": outcome.attempts,
        "latency_s": outcome.latency_s,
        "response_json": None if response is None else response.model_dump_json(),
    }


def probe_row(outcome: ItemOutcome, item: Item) -> dict[str, object]:
    probe = outcome.probe
    return {
        "item_id": outcome.item_id,
        "case_id": item.case_id,
        "tables_json": None if probe is None else json.dumps([t.name for t in probe.tables]),
        "examples_json": None if probe is None else json.dumps([e.id for e in probe.examples]),
        "error_class": outcome.probe_error_class,
        "error_message": outcome.probe_message,
        "probe_json": None if probe is None else probe.model_dump_json(),
    }


# The candidate, analyse, test-suite, output and retrieval stages each read every item's outcome
# back (10,000 items: about 0.5 s without the probes, 1 s with them); stages sharing a process
# read them once while the stored tables are unchanged.
_OUTCOMES: KeptWhileUnchanged[dict[str, ItemOutcome]] = KeptWhileUnchanged(kept=4)


def stored_outcomes(store: ResultsStore, run_id: str, probes: bool) -> Mapping[str, ItemOutcome]:
    """:func:`outcomes_from_frames` of one run's stored responses (and ``probes``), kept while
    those tables are unchanged (read-only: shared by the stages that ask for it)."""
    tables = ("sut_responses", "retrieval_probes") if probes else ("sut_responses",)

    def read() -> dict[str, ItemOutcome]:
        frames = [store.read(name, run_id) for name in tables]
        return outcomes_from_frames(frames[0], frames[1] if probes else pd.DataFrame())

    return _OUTCOMES.get(store, run_id, tables, read, probes)


def outcomes_from_frames(responses: pd.DataFrame, probes: pd.DataFrame) -> dict[str, ItemOutcome]:
    """Rebuild each item's outcome from the stored responses and probes."""

    probe_by_item = (
        {} if probes.empty else {str(r.item_id): r for r in probes.itertuples(index=False)}
    )
    out: dict[str, ItemOutcome] = {}
    for row in responses.itertuples(index=False):
        probe = probe_by_item.get(str(row.item_id))
        out[str(row.item_id)] = ItemOutcome(
            item_id=str(row.item_id),
            response=None
            if pd.isna(row.response_json)
            else AskResponse.model_validate_json(str(row.response_json)),
            probe=None
            if probe is None or pd.isna(probe.probe_json)
            else RetrieveResponse.model_validate_json(str(probe.probe_json)),
            error_class=None if pd.isna(row.error_class) else str(row.error_class),
            status=None if pd.isna(row.status) else int(row.status),  # type: ignore[arg-type]
            message=None if pd.isna(row.error_message) else str(row.error_message),
            attempts=int(row.attempts),  # type: ignore[arg-type]
            latency_s=float(row.latency_s),  # type: ignore[arg-type]
            probe_error_class=None
            if probe is None or pd.isna(probe.error_class)
            else str(probe.error_class),
            probe_message=None
            if probe is None or pd.isna(probe.error_message)
            else str(probe.error_message),
        )
    return out


@contextmanager
def open_client(
    config: RunConfig, case_set: CaseSet, items: int = 0, own_process_from: int = SPREAD_FROM
) -> Iterator[SutClient]:
    """The client a configuration names; the built-in agent is served on loopback for the run,
    in its own process (on another core) when ``items`` reach ``own_process_from``."""

    with ExitStack() as stack:
        client: SutClient
        if config.sut.kind == "replay":
            assert config.sut.file is not None
            client = ReplayClient(config.sut.file)
        elif config.sut.kind == "http":
            client = http_client(config)
        elif config.sut.kind == "python":
            client = python_client(config)
        else:
            agent = AgentSettings.from_sut(config.sut)
            if items >= own_process_from and cores() > 1:
                url = stack.enter_context(serve_in_process(case_set, agent))
            else:
                url = stack.enter_context(serve_in_thread(build_app(case_set, settings=agent)))
            client = HttpSutClient(http_settings(config, base_url=url))
        stack.callback(client.close)
        yield client


def item_isolated(honours_exclusions: bool, item: Item, outcome: ItemOutcome) -> bool:
    """Whether this item's case was provably hidden from the SUT while it was asked (§4).

    It was when exclusions were sent (the configuration isolates), the SUT says it honours
    them, and neither its own trace nor the probe returned the case or one of its twins.

    >>> from t2s_pipeline.sut.contract import RetrieveResponse, RetrievedExample
    >>> item = Item("a#0", "a", 0, "q", ("a", "a-twin"))
    >>> leak = RetrieveResponse(tables=(), examples=(RetrievedExample(id="a-twin", question="q",
    ...                                                                sql="SELECT 1"),))
    >>> item_isolated(True, item, ItemOutcome("a#0", None, leak, "http_status", 500, "", 1, 0.1))
    False
    >>> item_isolated(True, item, ItemOutcome("a#0", None, None, "http_status", 500, "", 1, 0.1))
    True
    """
    if not honours_exclusions or not item.exclude:
        return False
    return not excluded_returned(item, outcome)


def response_rows(
    outcomes: Sequence[ItemOutcome], items: Mapping[str, Item], honours_exclusions: bool
) -> tuple[list[dict[str, object]], list[str]]:
    """The ``sut_responses`` rows with each item's isolation, and the ids of items that got
    back an example excluded for them."""
    rows = [
        outcome_row(o, items[o.item_id])
        | {"isolated": item_isolated(honours_exclusions, items[o.item_id], o)}
        for o in outcomes
    ]
    leaked = [o.item_id for o in outcomes if excluded_returned(items[o.item_id], o)]
    return rows, leaked


def excluded_returned(item: Item, outcome: ItemOutcome) -> set[str]:
    """The excluded case ids (the case, its twins) that came back anyway."""
    return set(item.exclude) & returned_examples(outcome)


def returned_examples(outcome: ItemOutcome) -> set[str]:
    """Ids of the examples the SUT said it used and the probe returned."""
    seen = {e.id for e in outcome.probe.examples} if outcome.probe is not None else set()
    response = outcome.response
    if response is not None and response.retrieval is not None:
        seen |= {e.id for e in response.retrieval.examples}
    return seen


def isolation(client: SutClient, warn: Callable[[str], None]) -> bool:
    """Whether the SUT honours exclusions; an unreadable health counts as not isolated.

    A SUT that cannot be asked about its health is still evaluated: each item records its own
    failure, and nothing proves the case was hidden, so every item counts ``not_isolated``.
    """

    try:
        client.health()
    except SutError as error:
        warn(f"{error}; every item counts as not_isolated")
        return False
    return client.isolated


def materialise(run: RunContext) -> StageResult:
    """Ask the SUT every item over its API (and probe its retriever), recording every failure."""
    run_items = items_from_frame(run.store.read("items", run.run_id))
    with open_client(run.spec.config, run.case_set, len(run_items)) as client:
        isolated = isolation(client, run.warn)
        outcomes = asyncio.run(client.ask_all(run_items, run.run_id, run.progress("asked")))
    by_id = {i.item_id: i for i in run_items}
    responses, leaked = response_rows(outcomes, by_id, isolated)
    if leaked:
        run.warn(
            f"{len(leaked)} item(s) got back an example that was excluded (the case or a twin), "
            f"e.g. {leaked[:3]}; they count as not_isolated"
        )
    probes = [probe_row(o, by_id[o.item_id]) for o in outcomes]
    write(run, "sut_responses", responses)
    write(run, "retrieval_probes", probes)
    errors = [o.error_class for o in outcomes if o.error_class]
    return StageResult(
        {
            "sut_responses": {
                "dagster/row_count": len(responses),
                "ceiling/agent_timeout": errors.count("timeout"),
                "ceiling/agent_error": len(errors) - errors.count("timeout"),
                "ceiling/not_isolated": sum(1 for r in responses if not r["isolated"]),
                "excluded_examples_returned": len(leaked),
                "sut_refusals": sum(
                    1 for o in outcomes if o.response is not None and o.response.refused
                ),
            },
            "retrieval_probes": {
                "dagster/row_count": len(probes),
                "probe_errors": sum(1 for o in outcomes if o.probe_error_class),
            },
        }
    )
