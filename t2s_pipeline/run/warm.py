"""What a run's later stages use, started as the run begins.

When a run's stages execute one after another in one process (the plain runner, Dagster's
in-process executor), the guard's database workers (a cold one takes about 0.35 s to open a
database) and the built-in agent's interpreter (about 0.85 s to import and index 1,000 cases)
are started before the first stage, on a core it leaves free for part of its time, rather than
when the execute and ask stages first need them. Under an executor that runs each step in its
own process nothing is started: the step's process would end with it.
"""

from __future__ import annotations

from t2s_pipeline.agent.app import AgentSettings
from t2s_pipeline.agent.process import prestart
from t2s_pipeline.execution.records import PARALLEL_FROM
from t2s_pipeline.execution.worker import prewarm
from t2s_pipeline.run.context import RunContext
from t2s_pipeline.run.execute import guard
from t2s_pipeline.spread import SPREAD_FROM, cores


def warm_up(run: RunContext) -> None:
    """Start the workers the execute stages will take and, for a built-in agent asked in its
    own process (:func:`~t2s_pipeline.run.ask.open_client`), the agent."""
    if cores() < 2:
        return
    n_cases = len(run.case_set.cases)
    prewarm(guard(run), 2 if n_cases >= PARALLEL_FROM else 1)
    sut = run.spec.config.sut
    if sut.kind == "builtin" and n_cases >= SPREAD_FROM:
        prestart(run.case_set, AgentSettings.from_sut(sut))
