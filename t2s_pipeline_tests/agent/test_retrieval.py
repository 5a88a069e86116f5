"""BM25 retrieval of the baseline agent: ranking, k, one example per case, exclusions."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from t2s_pipeline.agent.documents import demo_tables, example_bank
from t2s_pipeline.agent.retrieval import Retriever, ranked
from t2s_pipeline.agent.tokens import tokenize
from t2s_pipeline_tests.agent.sample import TWINS, sample_case_set

CASE_SET = sample_case_set()
CASE_IDS = [case.id for case in CASE_SET.cases]


def _retriever(tables_k: int = 4, examples_k: int = 3) -> Retriever:
    tables = demo_tables(CASE_SET.domain.allowed_schemas)
    return Retriever(tables, example_bank(CASE_SET), tables_k, examples_k)


def test_tokens_split_identifiers_and_fold_plurals() -> None:
    """A question's "order lines" must meet the DDL's ``order_lines``."""
    assert tokenize("sales.order_lines") == tokenize("sales order line")
    assert tokenize("Categories of the items") == ["category", "item"]


def test_demo_tables_keep_only_allowed_schemas() -> None:
    """Sensitive schemas (hr, pii) are never offered to the agent's retriever."""
    names = {t.name for t in demo_tables(("sales", "finance"))}
    assert "sales.orders" in names and "finance.invoices" in names
    assert not any(n.startswith(("hr.", "pii.", "inventory.")) for n in names)


def test_the_table_a_question_names_ranks_first() -> None:
    """The DDL comments and names carry the words of the question."""
    offered = _retriever().offered_tables("total net amount of invoices")
    assert offered[0].name == "finance.invoices"
    assert "CREATE TABLE finance.invoices" in offered[0].ddl


def test_k_limits_tables_and_examples() -> None:
    """tables_k and examples_k bound what is offered; 0 offers nothing."""
    assert len(_retriever(tables_k=1).offered_tables("orders and invoices and stock")) == 1
    assert len(_retriever(examples_k=2).examples("how many orders customers items", ())) == 2
    assert _retriever(tables_k=0, examples_k=0).retrieve("orders").tables == ()
    assert _retriever(tables_k=0, examples_k=0).retrieve("orders").examples == ()


def test_each_case_is_one_example_even_with_matching_phrasings() -> None:
    """Several wordings of one case match, but the case is offered once."""
    ids = [e.id for e in _retriever(examples_k=6).examples("number of orders count", ())]
    assert len(ids) == len(set(ids))


def test_nearest_example_is_the_case_whose_wording_matches() -> None:
    """A question identical to a phrasing retrieves that case first."""
    examples = _retriever().examples("Sum the net amount of all invoices.", ())
    assert examples[0].id == "invoice-net"
    assert examples[0].sql == "SELECT sum(net_amount) FROM finance.invoices"


def test_no_shared_word_retrieves_nothing() -> None:
    """A zero BM25 score is not relevance: nothing is offered for an unrelated question."""
    response = _retriever().retrieve("zebra giraffe")
    assert response.tables == () and response.examples == ()


@settings(max_examples=60, deadline=None)
@given(
    question=st.sampled_from([q for case in CASE_SET.cases for q in case.questions]),
    excluded=st.sets(st.sampled_from(CASE_IDS)),
    k=st.integers(min_value=0, max_value=8),
)
def test_excluded_cases_are_never_retrieved(question: str, excluded: set[str], k: int) -> None:
    """Whatever the question, exclusion set and k, no excluded id or SQL comes back."""
    closed = excluded | {t for e in excluded for t in TWINS[e]}
    examples = _retriever(examples_k=k).examples(question, closed)
    banned_sql = {c.gold_sql for c in CASE_SET.cases if c.id in closed}
    assert not {e.id for e in examples} & closed
    assert not {e.sql for e in examples} & banned_sql
    assert len(examples) <= k


@settings(max_examples=300, deadline=None)
@given(
    scores=st.lists(
        st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 3.5]) | st.floats(0, 10, width=32),
        min_size=0,
        max_size=40,
    ),
    mask=st.lists(st.booleans(), min_size=40, max_size=40),
    top=st.integers(0, 45),
)
def test_the_start_of_a_ranking_is_the_start_of_the_whole_ranking(
    scores: list[float], mask: list[bool], top: int
) -> None:
    """Ranking only the best ``top`` (with their ties) gives exactly the first entries of
    ranking everything: same order, ties in document order, exclusions kept out."""
    values = np.asarray(scores, dtype=np.float32)
    allowed = np.asarray(mask[: len(scores)], dtype=bool)
    for kept in (None, allowed):
        whole = ranked(values, kept)
        start = ranked(values, kept, top)
        assert start == whole[: len(start)] and len(start) >= min(top, len(whole))


def test_examples_with_many_wordings_are_those_of_the_whole_ranking() -> None:
    """The example search looks at enough of the ranking's start for k cases even when
    every case has several wordings in the bank."""
    full = _retriever(examples_k=3)
    for question in [c.question for c in CASE_SET.cases] + ["orders per channel", "revenue"]:
        for exclude in ((), CASE_IDS[:2], CASE_IDS[1::2]):
            got = full.examples(question, exclude)
            ranked_all = full._bank_index.scores(question)
            allowed = np.ones(len(full.bank), dtype=bool)
            for case_id in exclude:
                allowed[full._rows.get(case_id, [])] = False
            expected: dict[str, object] = {}
            for i in ranked(ranked_all, allowed):
                if len(expected) >= 3:
                    break
                expected.setdefault(full.bank[i].case_id, full.bank[i])
            assert [e.id for e in got] == list(expected)


def test_a_probe_right_after_an_ask_is_answered_from_the_recent_retrievals() -> None:
    """The harness probes with the question and exclusions it has just asked with: the same
    answer comes back without retrieving again; other exclusions are retrieved anew, and only
    the last few retrievals are kept."""
    retriever = _retriever()
    question = CASE_SET.cases[0].question
    first = retriever.retrieve(question, [CASE_IDS[1]])
    assert retriever.retrieve(question, (CASE_IDS[1],)) is first
    both = {CASE_IDS[0], CASE_IDS[1]}
    assert not both & {e.id for e in retriever.retrieve(question, sorted(both)).examples}
    for n in range(70):
        retriever.retrieve(f"orders per channel {n}")
    again = retriever.retrieve(question, [CASE_IDS[1]])
    assert again is not first and again == first
