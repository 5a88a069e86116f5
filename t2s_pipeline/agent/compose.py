"""Writing a plan as SQL with sqlglot's expression builder (never by pasting strings).

Joins follow the references between the tables the plan reads, in the plan's order. The
house style comes from the allowed examples (:func:`conventions`): when they round
(``ROUND(x, 2)``), shares, ratios, averages and formulas are rounded the same way; when they
write windows as ``BETWEEN`` ranges, so does the agent; when they sort a grouped answer by
its group keys, so does the agent.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from sqlglot import exp

from t2s_pipeline.agent.dates import is_date_text
from t2s_pipeline.agent.knowledge import ColumnInfo, Knowledge
from t2s_pipeline.agent.plan import Condition, Group, Measure, Plan, Window
from t2s_pipeline.agent.question import Conventions
from t2s_pipeline.agent.templates import example_tree
from t2s_pipeline.sut.contract import RetrievedExample

_FUNCS: dict[str, type[exp.Func]] = {
    "sum": exp.Sum,
    "avg": exp.Avg,
    "min": exp.Min,
    "max": exp.Max,
}
_COMPARE: dict[str, type[exp.Binary]] = {
    "=": exp.EQ,
    "<>": exp.NEQ,
    "<": exp.LT,
    ">": exp.GT,
    "<=": exp.LTE,
    ">=": exp.GTE,
}


def compose(
    plan: Plan,
    knowledge: Knowledge,
    dialect: str,
    style: Conventions | None = None,
    as_of: dt.date | None = None,
) -> str:
    """The SQL of a plan, in the house style of the examples.

    >>> from t2s_pipeline.agent.documents import demo_tables
    >>> from t2s_pipeline.agent.knowledge import read_knowledge
    >>> k = read_knowledge(demo_tables(["sales"]))
    >>> items = k.tables["sales.items"]
    >>> plan = Plan(("sales.items",), (Measure("avg", (items.column("list_price"),)),))
    >>> print(compose(plan, k, "duckdb", Conventions(round_to=2)))
    SELECT
      ROUND(AVG(items.list_price), 2) AS avg_list_price
    FROM sales.items
    """
    style = style or Conventions()
    grouped = bool(plan.groups) and plan.aggregated
    key = _group_keys(style.month_format)
    select = [key(g).as_(_group_alias(g), copy=False) for g in plan.groups]  # fresh keys
    measures = [_measure(m, style.round_to, grouped) for m in plan.measures]
    select += [e.as_(_measure_alias(m)) for e, m in zip(measures, plan.measures, strict=True)]
    if not select:
        select = [exp.Count(this=exp.Star()).as_("count")]
    # The query is built here and shared with nobody, so each step extends it in place
    # (copy=False): the builders' default copied the whole query at every step.
    query = exp.select(*select).from_(_table(plan.base), copy=False)
    for table, on in _joins(plan.tables, knowledge):
        query = query.join(_table(table), on=on, copy=False)
    where = [_condition(c) for c in plan.conditions]
    if plan.window is not None:
        where += _window(plan.window, style.closed_windows, as_of)
    if where:
        query = query.where(exp.and_(*where, copy=False), copy=False)
    if grouped:
        query = query.group_by(*(key(g) for g in plan.groups), copy=False)
    for threshold in plan.having:
        figure = _measure(threshold.measure, None, False)
        query = query.having(
            _compare(threshold.op, figure, _literal(_plain(threshold.value))), copy=False
        )
    if plan.descending is not None and measures:
        order = _measure(plan.order_by, None, grouped) if plan.order_by else measures[0]
        query = query.order_by(exp.Ordered(this=order, desc=plan.descending), copy=False)
        if style.tie_break and grouped:
            query = query.order_by(key(plan.groups[0]), append=True, copy=False)
    elif grouped and style.sorted_groups:
        query = query.order_by(*(key(g) for g in plan.groups), copy=False)
    elif any(g.grain for g in plan.groups):
        query = query.order_by(*(key(g) for g in plan.groups if g.grain), copy=False)
    if plan.limit is not None:
        query = query.limit(plan.limit, copy=False)
    return query.sql(dialect=dialect, pretty=True, copy=False)  # nobody reads it after


def _table(name: str) -> exp.Table:
    """A table node for a qualified name, read once per name (each answer takes a copy)."""
    return _read_table(name).copy()


@lru_cache(maxsize=4096)
def _read_table(name: str) -> exp.Table:
    return exp.to_table(name)


def conventions(examples: Sequence[RetrievedExample], dialect: str) -> Conventions:
    """The house style of the allowed examples: the decimals they round figures to, whether
    they write date windows as closed ``BETWEEN`` ranges, whether they name a row by its key
    and its name together, whether they sort a grouped answer by its group keys.

    >>> sql = ("SELECT s.site_id, s.site_name, ROUND(AVG(x), 2) FROM t "
    ...        "WHERE d BETWEEN '2025-01-01' AND '2025-01-31' GROUP BY 1, 2 ORDER BY s.site_id")
    >>> style = conventions([RetrievedExample(id="a", question="q", sql=sql)], "duckdb")
    >>> style.round_to, style.closed_windows, style.key_with_name, style.sorted_groups
    (2, True, True, True)
    """
    styles = [s for s in (_example_style(e.sql, dialect) for e in examples) if s is not None]
    digits = Counter(d for s in styles for d in s.digits)
    months = Counter(m for s in styles for m in s.months)

    def total(field: str) -> int:
        return sum(int(getattr(s, field)) for s in styles)

    sorted_by_key = sum(1 for s in styles if s.sorted_by_key is True)
    sorted_otherwise = sum(1 for s in styles if s.sorted_by_key is False)
    return Conventions(
        round_to=digits.most_common(1)[0][0] if digits else None,
        closed_windows=total("closed") > total("half_open"),
        key_with_name=total("pairs") > 0,
        sorted_groups=sorted_by_key > sorted_otherwise,
        tie_break=total("tie_broken") > total("single_key"),
        month_format=months.most_common(1)[0][0] if months else None,
    )


@dataclass(frozen=True)
class _ExampleStyle:
    """What one example's SQL says about the house style (counts :func:`conventions` adds)."""

    digits: tuple[int, ...]
    closed: int
    half_open: int
    pairs: int
    months: tuple[str, ...]
    tie_broken: bool
    single_key: bool
    sorted_by_key: bool | None


@lru_cache(maxsize=8192)
def _example_style(sql: str, dialect: str) -> _ExampleStyle | None:
    """One example's style, read once per SQL text (examples come back for many questions)."""
    tree = example_tree(sql, dialect)
    if tree is None:
        return None
    digits = tuple(
        int(node.args["decimals"].this)
        for node in tree.find_all(exp.Round)
        if isinstance(node.args.get("decimals"), exp.Literal) and node.args["decimals"].is_int
    )
    names = {c.name for c in tree.find_all(exp.Column)}
    months = tuple(
        str(form.this)
        for form in (w.args.get("format") for w in tree.find_all(exp.TimeToStr))
        if isinstance(form, exp.Literal) and "%m" in str(form.this) and "%d" not in str(form.this)
    )
    order = tree.args.get("order")
    # The number of sort keys of a grouped top-k cut; 0 when the query is not one.
    limited = tree.args.get("limit") is not None and bool(tree.args.get("group"))
    keys = len(order.expressions) if order is not None and limited else 0
    return _ExampleStyle(
        digits=digits,
        closed=sum(1 for b in tree.find_all(exp.Between) if _dated(b.args.get("low"))),
        half_open=sum(1 for c in tree.find_all(exp.LT) if _dated(c.expression)),
        pairs=sum(1 for n in names if n.endswith("_name") and n[:-5] + "_id" in names),
        months=months,
        tie_broken=keys > 1,
        single_key=keys == 1,
        sorted_by_key=_sorted_by_group_key(tree),
    )


def _sorted_by_group_key(tree: exp.Expr) -> bool | None:
    """For a grouped query without a top-k cut: whether its ORDER BY starts with a group key
    (a key, its alias or its position); None for any other query."""
    if not isinstance(tree, exp.Select) or tree.args.get("limit") is not None:
        return None
    group = tree.args.get("group")
    if group is None or not group.expressions:
        return None
    order = tree.args.get("order")
    if order is None or not order.expressions:
        return False
    projections = [p.unalias().sql() for p in tree.expressions]

    def reading(node: exp.Expr) -> str:
        if isinstance(node, exp.Literal) and node.is_int and 0 < int(node.this) <= len(projections):
            return projections[int(node.this) - 1]
        return node.sql()

    keys = {reading(k) for k in group.expressions}
    aliases = {p.alias for p in tree.expressions if p.alias and p.unalias().sql() in keys}
    first = order.expressions[0].this
    return reading(first) in keys or (isinstance(first, exp.Column) and first.name in aliases)


def _dated(node: object) -> bool:
    if isinstance(node, exp.Cast):
        node = node.this
    return isinstance(node, exp.Literal) and is_date_text(str(node.this))


def _plain(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _col(column: ColumnInfo) -> exp.Column:
    return exp.column(column.name, table=column.table.split(".")[-1])


def _formula(measure: Measure) -> exp.Expr:
    cols = [_col(c) for c in measure.columns]
    if measure.formula == "product":
        return exp.Mul(this=cols[0], expression=cols[1])
    if measure.formula == "discounted":
        share = exp.Sub(
            this=exp.Literal.number(1),
            expression=exp.Div(this=cols[2], expression=exp.Literal.number("100.0")),
        )
        return exp.Mul(this=exp.Mul(this=cols[0], expression=cols[1]), expression=exp.paren(share))
    if measure.formula == "sum":
        return exp.Add(this=cols[0], expression=cols[1])
    if measure.formula == "gap":
        return exp.Sub(this=cols[0], expression=cols[1])
    return cols[0]


def _measure(measure: Measure, round_to: int | None, grouped: bool) -> exp.Expr:
    """The SQL of one figure; shares, ratios, averages and formulas are rounded to the
    examples' decimals."""
    if measure.func == "count":
        return _count(measure)
    value = _formula(measure) if measure.columns else None
    if value is not None and measure.negate:
        value = exp.Neg(this=value if isinstance(value, exp.Column) else exp.paren(value))
    if measure.func == "value" and value is not None:
        return value
    figure: exp.Expr
    if measure.func == "ratio" and measure.per is not None:
        top = exp.Sum(this=value) if value is not None else exp.Count(this=exp.Star())
        per = exp.Count(this=exp.Distinct(expressions=[_col(measure.per)]))
        figure = exp.Div(this=_times(top, 1), expression=per)
    elif measure.func == "share":
        figure = _share(measure, value, grouped)
    else:
        figure = _FUNCS.get(measure.func, exp.Sum)(this=value)
    derived = measure.formula not in ("column", "rows") or measure.func in (
        "avg",
        "ratio",
        "share",
    )
    if round_to is not None and derived:
        return exp.Round(this=figure, decimals=exp.Literal.number(round_to))
    return figure


def _count(measure: Measure) -> exp.Expr:
    if not measure.columns:
        return exp.Count(this=exp.Star())
    inner: exp.Expr = _col(measure.columns[0])
    if measure.distinct:
        inner = exp.Distinct(expressions=[inner])
    return exp.Count(this=inner)


def _share(measure: Measure, value: exp.Expr | None, grouped: bool) -> exp.Expr:
    """``scale * part / whole``: the rows meeting ``part``, another measure, or (across
    groups) the grand total."""
    one: exp.Expr = value if value is not None else exp.Literal.number(1)
    top: exp.Expr
    bottom: exp.Expr
    if measure.whole:
        top = exp.Sum(this=one)
        bottom = exp.Sum(this=_col(measure.whole[0]))
    elif measure.part:
        test = exp.and_(*(_condition(c) for c in measure.part))
        case = exp.Case(ifs=[exp.If(this=test, true=one.copy())], default=exp.Literal.number(0))
        top = exp.Sum(this=case)
        bottom = exp.Sum(this=one) if value is not None else exp.Count(this=exp.Star())
    else:
        top = exp.Sum(this=one) if value is not None else exp.Count(this=exp.Star())
        bottom = exp.Window(this=exp.Sum(this=top.copy())) if grouped else top.copy()
    return exp.Div(this=_times(top, measure.scale), expression=bottom)


def _times(figure: exp.Expr, scale: int) -> exp.Expr:
    """``100.0 * figure`` (or ``1.0 * figure``): a decimal division whatever the types."""
    return exp.Mul(this=exp.Literal.number(f"{scale}.0"), expression=figure)


def _measure_alias(measure: Measure) -> str:
    if measure.func == "count":
        return "count" if not measure.columns else f"distinct_{measure.columns[0].name}"
    if measure.func in ("share", "ratio"):
        return {"share": "pct", "ratio": "per_row"}[measure.func]
    if measure.formula != "column":
        return "value" if measure.func == "value" else f"{measure.func}_value"
    name = measure.columns[0].name
    prefix = {"sum": "total", "value": ""}.get(measure.func, measure.func)
    return f"{prefix}_{name}" if prefix else name


def _group_keys(month_format: str | None) -> Callable[[Group], exp.Expr]:
    """How a group reads: its column, or its date truncated to the grain (a month as text
    when the examples write months so)."""

    def key(group: Group) -> exp.Expr:
        column = _col(group.column)
        if group.grain in (None, "day"):
            return column
        if group.grain == "month" and month_format is not None:
            return exp.TimeToStr(this=column, format=exp.Literal.string(month_format))
        return exp.func("DATE_TRUNC", exp.Literal.string(group.grain), column)

    return key


def _group_alias(group: Group) -> str:
    return group.grain if group.grain not in (None, "day") else group.column.name


def _condition(condition: Condition) -> exp.Expr:
    column = _col(condition.column)
    if condition.other is not None:
        return _compare(condition.op, column, _col(condition.other))
    if condition.column.kind == "bool" and condition.op in ("=", "<>"):
        truth = bool(condition.values[0]) == (condition.op == "=")
        return column if truth else exp.Not(this=column)
    values = [_literal(v) for v in condition.values]
    if condition.op in ("IN", "NOT IN"):
        inside = exp.In(this=column, expressions=values)
        return inside if condition.op == "IN" else exp.Not(this=inside)
    return _compare(condition.op, column, values[0])


def _compare(op: str, left: exp.Expr, right: exp.Expr) -> exp.Expr:
    return _COMPARE[op](this=left, expression=right)


def _literal(value: object) -> exp.Expr:
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def _window(window: Window, closed: bool, as_of: dt.date | None) -> list[exp.Expr]:
    """``start <= d < end`` (an open end runs up to as_of), or ``d BETWEEN start AND last``
    when the examples write closed windows."""
    column = _col(window.column)
    if closed and window.start is not None:
        last = window.end - dt.timedelta(days=1) if window.end is not None else as_of
        if last is not None:
            low, high = _date(window.start.isoformat()), _date(last.isoformat())
            return [exp.Between(this=column, low=low, high=high)]
    out: list[exp.Expr] = []
    if window.start is not None:
        out.append(exp.GTE(this=column, expression=_date(window.start.isoformat())))
    if window.end is not None:
        out.append(exp.LT(this=column.copy(), expression=_date(window.end.isoformat())))
    return out


def _date(text: str) -> exp.Expr:
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("DATE"))


def _joins(tables: Sequence[str], knowledge: Knowledge) -> list[tuple[str, exp.Expr]]:
    """Each table after the base, joined to one already read along a reference."""
    out: list[tuple[str, exp.Expr]] = []
    done = [tables[0]]
    for table in tables[1:]:
        # The table read last is the one the path to this table went through.
        pairs = [
            r
            for other in reversed(done)
            for r in knowledge.references
            if {r.table, r.target} == {table, other}
        ]
        if pairs:
            r = pairs[0]
            left = exp.column(r.column, table=r.table.split(".")[-1])
            right = exp.column(r.target_column, table=r.target.split(".")[-1])
            out.append((table, exp.EQ(this=left, expression=right)))
        done.append(table)
    return out
