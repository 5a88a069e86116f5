"""Findings (SPEC 11): each concrete difference between the candidate and the reference.

A finding names the category it supports and what differs, in the words a reader acts on:
``missing filter sales.orders.status_cd = 'delivered'``, ``aggregation avg(x) where the
reference has sum(x)``, ``required table finance.payments not offered``. They are read from
the component sets both sides were reduced to (section 7) and the retrieval trace; a missing
and an extra element over the same columns are reported as one changed element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError


@dataclass(frozen=True)
class Finding:
    """One difference and the category it supports."""

    category: str
    text: str


Sets = Mapping[str, Sequence[str]]

NOTE = "note"
"""A finding shown to the reader that supports no category (an extra join nothing reads)."""

# Component set -> (category, the words for one element). Tables are sorted out by what they
# serve (see ``_table_findings``).
_SETS: tuple[tuple[str, str, str], ...] = (
    ("filters", "wrong_filter", "filter"),
    ("group_by", "wrong_grain", "group-by"),
    ("limit", "wrong_grain", "LIMIT"),
    ("aggregations", "wrong_metric", "aggregation"),
)


def component_findings(
    gold: Sets,
    candidate: Sets,
    display: Mapping[str, str] | None = None,
    row_changing: frozenset[str] = frozenset(),
    same_rows: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Differences between the two sides' component sets, one finding each.

    ``display`` maps a (normalised) element to the text as written, for the reader.
    ``row_changing`` and ``same_rows`` are what the data says (``t2s_pipeline.scoring.facts``):
    extra tables whose join changes the rows, and tables on which the two sides' differing
    conditions select the same rows.

    >>> gold = {"filters": ["o.status = 'delivered'", "o.year = 2024"], "tables": ["o"]}
    >>> cand = {"filters": ["o.status = 'placed'", "o.year = 2024"], "tables": ["o", "c"]}
    >>> [f.text for f in component_findings(gold, cand)]
    ['extra table c (joined; nothing reads it)', "filter o.status = 'placed' where the reference has o.status = 'delivered'"]
    """
    shown = display or {}
    found = _table_findings(gold, candidate, row_changing)
    for name, category, noun in _SETS:
        missing, extra = _difference(gold.get(name, ()), candidate.get(name, ()))
        if name == "filters" and same_rows and (missing or extra):
            tables = ", ".join(sorted(same_rows))
            found += (
                Finding(NOTE, f"{text} (selects the same rows of {tables} on this data)")
                for text in _texts(noun, missing, extra, shown)
            )
            continue
        if name == "filters":
            found += _rank_cuts(missing, extra, shown, _is_rank_cut)
        if name == "aggregations":
            found += _conditional_aggregates(missing, extra, shown)
            found += _rank_cuts(missing, extra, shown)
            found += _missing_conditions(missing, gold, candidate, shown)
        found += (Finding(category, text) for text in _texts(noun, missing, extra, shown))
    found += _total_or_rows(gold, candidate)
    if not any(f.category == "wrong_metric" for f in found):
        found += _select_findings(gold, candidate, shown)
    if gold.get("limit"):
        missing, extra = _difference(gold.get("order_by", ()), candidate.get("order_by", ()))
        found += (
            Finding("wrong_grain", text) for text in _texts("ORDER BY", missing, extra, shown)
        )
    # Two elements can read as one text (the bounds of one BETWEEN): say it once.
    return list(dict.fromkeys(found))


def _table_findings(
    gold: Sets, candidate: Sets, row_changing: frozenset[str] = frozenset()
) -> list[Finding]:
    """A table difference is ``wrong_table`` when the answer needs a table the candidate does
    not read (unless the reference uses it only for shown columns and for keys the candidate
    reads elsewhere), when the two sides read no table in common, or when the candidate's
    aggregate reads a table the reference does not. An extra table that only serves a
    condition or a grouping is that element's difference (its own finding says so); one that
    serves only shown columns, or that nothing reads, is a join that leaves the answer alone.

    >>> gold = {"tables": ["s.orders", "s.sites"], "aggregations": ["SUM(orders.amount)"],
    ...         "group_by": ["sites.site_id"]}
    >>> gold["joins"] = ["orders.site_id = sites.site_id"]
    >>> [(f.category, f.text) for f in _table_findings(gold, {"tables": ["s.orders"]})]
    [('note', 'missing table s.sites (its keys are in tables read)')]
    """
    gold_tables, candidate_tables = set(gold.get("tables", ())), set(candidate.get("tables", ()))
    missing, extra = sorted(gold_tables - candidate_tables), sorted(candidate_tables - gold_tables)
    disjoint = bool(gold_tables) and bool(candidate_tables) and not gold_tables & candidate_tables
    found = []
    for table in missing:
        if not disjoint and _replaceable(table, gold, candidate_tables):
            found.append(Finding(NOTE, f"missing table {table} (its keys are in tables read)"))
            continue
        found.append(Finding("wrong_table", f"missing table {table}"))
    for table in extra:
        if table in row_changing:
            words = " (joining it changes the rows it is joined to: they fan out or drop)"
            found.append(Finding("wrong_table", f"extra table {table}{words}"))
            continue
        category, words = _role(table, candidate, disjoint)
        if category == _UNUSED:
            category, words = NOTE, " (joined; nothing reads it)"
        found.append(Finding(category, f"extra table {table}{words}"))
    return found


def _replaceable(table: str, gold: Sets, read: set[str]) -> bool:
    """The reference needs ``table`` only for shown columns and for join keys the candidate
    reads in another table (``GROUP BY sites.site_id`` when ``orders.site_id`` is read), so
    not reading it changes nothing but the descriptive columns."""
    names = {t.rsplit(".", 1)[-1] for t in read}
    keys: set[str] = set()
    for join in gold.get("joins", ()):
        sides = join.split(" = ")
        if len(sides) == 2 and any(c.split(".")[0] in names for c in sides):
            keys |= set(sides)
    grouped = [e for e in gold.get("group_by", ()) if _reads(e, table)]
    # Grouping by a key and the attributes it determines is grouping by the key. A table
    # joined for nothing else (an inner join that keeps only matching rows) is needed.
    by_key = any(_columns(e) <= keys for e in grouped)
    if not by_key:
        return False
    # COUNT(*) per key of the missing table counts the rows of the table holding that key.
    for name in ("aggregations", "filters", "group_by"):
        for element in gold.get(name, ()):
            if not _reads(element, table) or _columns(element) <= keys:
                continue
            if name == "group_by" and by_key:
                continue
            return False
    return True


def _role(table: str, sets: Sets, disjoint: bool) -> tuple[str, str]:
    """(category, words) for what an extra ``table`` serves on the candidate's side.

    A column of ``table`` that the candidate joins on equals the column it is joined to, so
    reading it (``COUNT(DISTINCT items.item_id)`` over ``stock JOIN items ON stock.item_id =
    items.item_id``) reads the other table: it does not make ``table`` serve anything.

    >>> sets = {"joins": ["items.item_id = stock.item_id"],
    ...         "aggregations": ["COUNT(DISTINCT items.item_id)"]}
    >>> _role("sales.items", sets, False)
    ('unused', '')
    """
    if disjoint:
        return "wrong_table", ""
    keys = _join_keys(table, sets)
    uses = {
        name: any(_reads(element, table, keys) for element in sets.get(name, ()))
        for name in ("aggregations", "filters", "group_by", "select")
    }
    if uses["aggregations"]:
        return "wrong_table", ""
    if uses["filters"]:
        return "wrong_filter", " (it serves a condition)"
    if uses["group_by"]:
        return "wrong_grain", " (it serves the grouping)"
    if uses["select"]:
        return NOTE, " (it serves a shown column)"
    return _UNUSED, ""


def _join_keys(table: str, sets: Sets) -> frozenset[str]:
    """Columns of ``table`` joined by equality to a column of another table."""
    name = table.rsplit(".", 1)[-1]
    keys = set()
    for join in sets.get("joins", ()):
        sides = join.split(" = ")
        if len(sides) != 2:
            continue
        owners = [side.split(".")[0] if "." in side else None for side in sides]
        for side, owner, other in zip(sides, owners, reversed(owners), strict=True):
            if owner == name and other not in (None, name):
                keys.add(side)
    return frozenset(keys)


_UNUSED = "unused"


def _reads(element: str, table: str, besides: frozenset[str] = frozenset()) -> bool:
    """Whether ``element`` reads a column of ``table`` other than those in ``besides``."""
    name = table.rsplit(".", 1)[-1]
    return any(
        column.split(".")[0] == name and column not in besides
        for column in _columns(element)
        if "." in column
    )


def _conditional_aggregates(
    missing: list[str], extra: list[str], shown: Mapping[str, str]
) -> list[Finding]:
    """Aggregates that differ only in the rows they take (``SUM(CASE WHEN d IN May THEN x
    END)`` or ``SUM(x) FILTER (WHERE ...)`` against ``SUM(x)``): a condition, not a measure.
    The pairs found are taken out of ``missing`` and ``extra``.

    >>> missing, extra = ["SUM(CASE WHEN p.m = 5 THEN p.x ELSE 0 END)"], ["SUM(p.x)"]
    >>> [(f.category, f.text) for f in _conditional_aggregates(missing, extra, {})]
    [('wrong_filter', 'aggregate SUM(p.x) takes other rows than the reference SUM(CASE WHEN p.m = 5 THEN p.x ELSE 0 END)')]
    >>> missing, extra
    ([], [])
    """
    found = []
    paired: set[str] = set()
    for element in list(missing):
        base, condition = _condition_of(element)
        partner = next(
            (e for e in extra if _condition_of(e)[0] == base and _condition_of(e)[1] != condition),
            None,
        )
        if partner is None:
            continue
        missing.remove(element)
        paired.add(partner)
        text = (
            f"aggregate {_show(partner, shown)} takes other rows than the reference "
            f"{_show(element, shown)}"
        )
        found.append(Finding("wrong_filter", text))
    for partner in paired:
        extra.remove(partner)
    return found


def _missing_conditions(
    missing: list[str], gold: Sets, candidate: Sets, shown: Mapping[str, str]
) -> list[Finding]:
    """A reference aggregate that takes only the rows meeting a condition (``SUM(CASE WHEN
    c THEN x END)``, ``COUNT(*) FILTER (WHERE o.id IS NULL)``, an anti-join's test), where the
    candidate tests ``c`` nowhere, in a filter or in an aggregate: the rows selected differ,
    whatever the measure. The aggregate stays missing (its own finding follows). Not when the
    reference also takes the same aggregate over every row: then the condition defines a
    share (``COUNT(*) FILTER (WHERE returned) / COUNT(*)``), a measure.

    >>> cand = {"filters": ["p.amount < 0"], "aggregations": ["SUM(-p.amount)"]}
    >>> missing = ["SUM(CASE WHEN p.q = 2 THEN p.amount END)"]
    >>> gold = {"aggregations": missing}
    >>> [(f.category, f.text) for f in _missing_conditions(missing, gold, cand, {})]
    [('wrong_filter', 'missing condition p.q = 2 (the reference aggregates only those rows in SUM(CASE WHEN p.q = 2 THEN p.amount END))')]
    """
    tested = {_conjunct_text(t) for f in candidate.get("filters", ()) for t in _conjuncts(f)}
    for element in candidate.get("aggregations", ()):
        condition = _condition_of(element)[1]
        if condition is not None:
            tested |= {_conjunct_text(t) for t in _conjuncts(condition)}
    read = {element: _condition_of(element) for element in gold.get("aggregations", ())}
    whole = {base for base, condition in read.values() if not condition}
    found = []
    for element in missing:
        base, condition = read.get(element) or _condition_of(element)
        if condition is None or base in whole:
            continue
        absent = [t for t in _conjuncts(condition) if _conjunct_text(t) not in tested]
        if absent:
            text = (
                f"missing condition {' AND '.join(absent)} (the reference aggregates only "
                f"those rows in {_show(element, shown)})"
            )
            found.append(Finding("wrong_filter", text))
    return found


_GENERIC = Dialect.get_or_raise(None)
_COPY = bool(
    _GENERIC.generator_class.ENSURE_BOOLS
    or _GENERIC.generator_class.EXPRESSIONS_WITHOUT_NESTED_CTES
)
"""Whether writing can change the node: the generic dialect's generator rewrites nothing before
it writes (no boolean rewrites, no nested CTEs moved), so its nodes are written uncopied."""


def _sql(node: exp.Expr) -> str:
    """``node.sql()`` (the generic dialect), without the copy of the node it makes first."""
    return _GENERIC.generate(node, copy=_COPY)


def _conjuncts(condition: str) -> list[str]:
    tree = _tree(condition)
    if tree is None:
        return [condition]
    terms = tree.flatten() if isinstance(tree, exp.And) else [tree]
    return [_sql(t) for t in terms]


def _conjunct_text(term: str) -> str:
    tree = _tree(term)
    return term if tree is None else _sql(tree)


_RANKS = (exp.Rank, exp.DenseRank, exp.RowNumber)


def _rank_cuts(
    missing: list[str],
    extra: list[str],
    shown: Mapping[str, str],
    is_cut: Callable[[str], bool] | None = None,
) -> list[Finding]:
    """A ranking window (``RANK() OVER (ORDER BY ...)``) serves a top-k cut, so one on a side
    only is a grain difference (a cut with or without ties), not another measure; so is the
    condition that cuts on it (``QUALIFY RANK() OVER (...) <= 3``, or MySQL's ``WHERE _w <=
    3`` around a derived table), not another filter. The elements found are taken out of
    ``missing`` and ``extra``.

    >>> missing, extra = ["RANK() OVER (ORDER BY COUNT(*) DESC)"], []
    >>> [(f.category, f.text) for f in _rank_cuts(missing, extra, {})]
    [('wrong_grain', 'missing top-k cut by RANK() OVER (ORDER BY COUNT(*) DESC)')]
    """
    found = []
    for side, elements in (("missing", missing), ("extra", extra)):
        for element in [e for e in elements if (is_cut or _is_rank)(e)]:
            elements.remove(element)
            found.append(Finding("wrong_grain", f"{side} top-k cut by {_show(element, shown)}"))
    return found


def _is_rank(element: str) -> bool:
    tree = _tree(element)
    return isinstance(tree, exp.Window) and isinstance(tree.this, _RANKS)


def _is_rank_cut(element: str) -> bool:
    """A comparison of a ranking window with a constant (``RANK() OVER (...) <= 3``)."""
    tree = _tree(element)
    if not isinstance(tree, (exp.LT, exp.LTE, exp.EQ, exp.GT, exp.GTE, exp.Between)):
        return False
    sides = [tree.this, tree.expression] if not isinstance(tree, exp.Between) else [tree.this]
    return any(isinstance(side, exp.Window) and isinstance(side.this, _RANKS) for side in sides)


def _condition_of(element: str) -> tuple[str, str | None]:
    """(the aggregate without its row condition, the condition) of one aggregate's text."""
    tree = _tree(element)
    if tree is None:
        return element, None
    if isinstance(tree, exp.Filter) and isinstance(tree.expression, exp.Where):
        return _sql(_count_star(tree.this)), _sql(tree.expression.this)
    if isinstance(tree, exp.AggFunc) and isinstance(tree.this, exp.Case):
        case = tree.this
        ifs = case.args.get("ifs") or []
        default = case.args.get("default")
        quiet = (
            default is None
            or isinstance(default, exp.Null)
            or (isinstance(default, exp.Literal) and default.this in ("0", "0.0"))
        )
        if len(ifs) == 1 and quiet:
            stripped = tree.copy()
            stripped.set("this", ifs[0].args["true"].copy())
            return _sql(_count_star(stripped)), _sql(ifs[0].this)
    return _sql(tree), None


def _count_star(tree: exp.Expr) -> exp.Expr:
    """``COUNT(1)`` and ``SUM(1)`` count rows: ``COUNT(*)``."""
    if isinstance(tree, (exp.Count, exp.Sum)) and isinstance(tree.this, exp.Literal):
        return exp.Count(this=exp.Star())
    return tree


def _total_or_rows(gold: Sets, candidate: Sets) -> list[Finding]:
    """Neither side groups, and one aggregates to a single total while the other lists rows."""
    if gold.get("group_by") or candidate.get("group_by"):
        return []
    gold_total, candidate_total = (
        bool(gold.get("aggregations")),
        bool(candidate.get("aggregations")),
    )
    if gold_total == candidate_total:
        return []
    text = (
        "one total where the reference lists rows"
        if candidate_total
        else "rows listed where the reference gives one total"
    )
    return [Finding("wrong_grain", text)]


def _select_findings(gold: Sets, candidate: Sets, shown: Mapping[str, str]) -> list[Finding]:
    """Output expressions that differ as measures (``wrong_metric``): one shown where the
    reference has another over the same columns, or an aggregate missing or extra. A grouping
    column shown or not is the grouping's difference, a rounding is how a value is shown, and a
    plain column missing or extra is a descriptive column: those are notes.

    >>> gold = {"select": ["ROUND(AVG(i.net), 2)", "i.id"], "aggregations": ["AVG(i.net)"]}
    >>> cand = {"select": ["AVG(i.net)"], "aggregations": ["AVG(i.net)"]}
    >>> [(f.category, f.text) for f in _select_findings(gold, cand, {})]
    [('note', 'output ROUND(AVG(i.net), 2) is rounded differently'), ('note', 'missing output column i.id')]
    """
    grouping = set(gold.get("group_by", ())) | set(candidate.get("group_by", ()))
    missing, extra = _difference(
        [e for e in gold.get("select", ()) if e not in grouping],
        [e for e in candidate.get("select", ()) if e not in grouping],
    )
    found = []
    for element in list(missing):
        same = [e for e in extra if _unrounded(e) == _unrounded(element)]
        if same:
            missing.remove(element)
            extra.remove(same[0])
            found.append(Finding(NOTE, f"output {_show(element, shown)} is rounded differently"))
    for element in list(missing):
        partner = _partner(element, extra)
        if partner is not None:
            missing.remove(element)
            extra.remove(partner)
            text = (
                f"output expression {_show(partner, shown)} where the reference has "
                f"{_show(element, shown)}"
            )
            found.append(Finding("wrong_metric", text))
    for side, elements in (("missing", missing), ("extra", extra)):
        for element in elements:
            if _aggregates(element):
                found.append(Finding("wrong_metric", f"{side} output {_show(element, shown)}"))
            else:
                found.append(Finding(NOTE, f"{side} output column {_show(element, shown)}"))
    return found


def _aggregates(element: str) -> bool:
    tree = _tree(element)
    return tree is None or tree.find(exp.AggFunc) is not None


def _unrounded(element: str) -> str:
    """The expression without ROUND(...) wrappers, as text."""
    tree = _tree(element)
    if tree is None:
        return element
    while isinstance(tree, exp.Round):
        tree = tree.this
    return _sql(tree)


def retrieval_findings(not_offered: Sequence[str]) -> list[Finding]:
    """A required table the SUT's retriever did not offer.

    >>> retrieval_findings(["finance.payments"])[0].text
    'required table finance.payments not offered'
    """
    return [Finding("wrong_table", f"required table {t} not offered") for t in not_offered]


def _difference(gold: Sequence[str], candidate: Sequence[str]) -> tuple[list[str], list[str]]:
    gold_set, candidate_set = set(gold), set(candidate)
    return sorted(gold_set - candidate_set), sorted(candidate_set - gold_set)


def _texts(
    noun: str, missing: list[str], extra: list[str], shown: Mapping[str, str]
) -> Iterator[str]:
    """``X where the reference has Y`` for a missing and an extra element over the same columns
    (one each), else ``missing``/``extra`` one by one."""
    extra_left = list(extra)
    for element in missing:
        partner = _partner(element, extra_left)
        if partner is not None:
            extra_left.remove(partner)
            yield f"{noun} {_show(partner, shown)} where the reference has {_show(element, shown)}"
        else:
            yield f"missing {noun} {_show(element, shown)}"
    for element in extra_left:
        yield f"extra {noun} {_show(element, shown)}"


def _show(element: str, shown: Mapping[str, str]) -> str:
    return shown.get(element, element)


def _partner(element: str, candidates: list[str]) -> str | None:
    """The one candidate element over exactly the same columns, if there is exactly one."""
    columns = _columns(element)
    if not columns:
        return None
    same = [c for c in candidates if _columns(c) == columns]
    return same[0] if len(same) == 1 else None


@lru_cache(maxsize=4096)
def _columns(element: str) -> frozenset[str]:
    tree = _tree(element)
    if tree is None:
        return frozenset()
    return frozenset(_sql(column) for column in tree.find_all(exp.Column))


@lru_cache(maxsize=8192)
def _tree(element: str) -> exp.Expr | None:
    """One element's parse, shared by every reader here and memoised (none of them changes
    it: a reader that needs a changed tree copies it first); None when sqlglot cannot read it.
    """
    try:
        return sqlglot.parse_one(element)
    except SqlglotError:
        return None


element_columns = _columns
element_tree = _tree
