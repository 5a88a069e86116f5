"""The schema-linking baseline: read the question against the offered tables, reuse a close
example when there is one, else compose the SQL.

Deterministic and offline. It sees only what a retrieval-augmented system would: the
offered tables' DDL (with or without their notes), the values sampled at start-up, and the
allowed examples; never a case's gold SQL or result except as one of those examples.
"""

from __future__ import annotations

import datetime as dt

from t2s_pipeline.agent.compose import compose, conventions
from t2s_pipeline.agent.generation import AskContext, Generation, Generator
from t2s_pipeline.agent.knowledge import Knowledge
from t2s_pipeline.agent.plan import Plan
from t2s_pipeline.agent.question import Conventions, read_question
from t2s_pipeline.agent.templates import adapt
from t2s_pipeline.sut.contract import RetrieveResponse

_KEPT_PLANS = 50_000
NOTHING_LINKED = "no offered table links to the question; refusing to guess"


class SchemaLinking(Generator):
    """Plan the query from schema links; an example with the same plan shape is a template."""

    def __init__(
        self,
        knowledge: Knowledge,
        dialect: str,
        as_of: dt.date,
        date_windows: str = "calendar",
        use_examples: bool = True,
    ) -> None:
        self.knowledge = knowledge
        self.dialect = dialect
        self.as_of = as_of
        self.date_windows = date_windows
        self.use_examples = use_examples
        self._plans: dict[tuple[object, ...], Plan | None] = {}

    async def generate(
        self,
        question: str,
        evidence: str | None,
        offered: RetrieveResponse,
        context: AskContext | None = None,
    ) -> Generation:
        return self.answer(question, offered, context)

    def answer(
        self, question: str, offered: RetrieveResponse, context: AskContext | None = None
    ) -> Generation:
        """The same as :meth:`generate`, callable without an event loop."""
        known = self.knowledge.subset(t.name for t in offered.tables)
        as_of = (context.as_of if context else None) or self.as_of
        examples = offered.examples if self.use_examples else ()
        style = conventions(examples, self.dialect)
        plan = read_question(question, known, as_of, self.date_windows, style)
        if plan is None:
            return Generation(None, refused=True, message=NOTHING_LINKED)
        for example in examples:
            shaped = self._example_plan(example.question, known, as_of, style)
            sql = None if shaped is None else adapt(example.sql, shaped, plan, self.dialect)
            if sql is not None:
                return Generation(sql, message=f"adapted example {example.id}")
        sql = compose(plan, known, self.dialect, style, as_of)
        said = f"composed over {', '.join(plan.tables)}"
        return Generation(sql, message="; ".join([said, *plan.notes]))

    def _example_plan(
        self, question: str, known: Knowledge, as_of: dt.date, style: Conventions
    ) -> Plan | None:
        """An example's question read over the offered tables; examples come back for many
        questions, so each reading is kept (a plan depends on nothing else)."""
        key = (question, tuple(known.tables), as_of, style)
        if key not in self._plans:
            if len(self._plans) >= _KEPT_PLANS:
                self._plans.clear()
            self._plans[key] = read_question(question, known, as_of, self.date_windows, style)
        return self._plans[key]
