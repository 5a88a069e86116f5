"""The generated part of the legitimate corpus: statement shapes composed over the demo schema.

Every shape is a function of a seeded ``random.Random`` and an engine's :class:`Spelling`. The
random draws never depend on the engine, so ``gen-join-0042`` is the same query on every engine
it applies to; a shape that an engine has no syntax for (QUALIFY, PIVOT, LATERAL, DISTINCT ON,
grouping sets outside DuckDB and PostgreSQL, FILTER in MySQL; MySQL's WITH ROLLUP, STRAIGHT_JOIN,
GROUP_CONCAT, REGEXP and back-quoted names elsewhere) returns None there. MySQL has no FULL JOIN:
where the others draw one, it joins LEFT. Joins follow the warehouse's
foreign keys, with at most one one-to-many step so no statement multiplies rows; filters use
the ERP code values the column comments document.

>>> statements = generated_statements("sqlite")
>>> statements == generated_statements("sqlite"), len(statements) > 1000
(True, True)
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from t2s_pipeline.demo.schema import ALLOWED_SCHEMAS, AS_OF, TABLES
from t2s_pipeline.suites.spelling import DUCKDB, MYSQL, POSTGRES, SQLITE, Spelling

ALIASES: dict[str, str] = {
    "sales.sites": "s",
    "sales.customers": "c",
    "sales.items": "i",
    "sales.orders": "o",
    "sales.order_lines": "l",
    "finance.invoices": "v",
    "finance.payments": "p",
    "inventory.stock": "k",
}
COLUMNS: dict[str, tuple[str, ...]] = {
    t.qualified: tuple(c.name for c in t.columns) for t in TABLES if t.schema in ALLOWED_SCHEMAS
}
KEYS: dict[str, str] = {
    "sales.sites": "site_id",
    "sales.customers": "customer_id",
    "sales.items": "item_id",
    "sales.orders": "order_id",
    "sales.order_lines": "order_id",
    "finance.invoices": "invoice_id",
    "finance.payments": "payment_id",
    "inventory.stock": "item_id",
}
"""The column a listing of each table is ordered by."""

SITES = tuple(f"S{n:02d}" for n in range(1, 13))
CODES: dict[str, tuple[str, ...]] = {
    "region_cd": ("N", "S", "E", "W"),
    "site_type_cd": ("ST", "WH"),
    "segment_cd": ("B2B", "B2C", "GOV"),
    "country_cd": ("DE", "FR", "GB", "IT", "ES", "NL"),
    "category": ("Tools", "Garden", "Paint", "Electrical", "Plumbing", "Fasteners", "Safety"),
    "uom_cd": ("EA", "BX", "KG"),
    "status_cd": ("placed", "shipped", "delivered", "cancelled", "returned"),
    "channel_cd": ("W", "S", "P"),
    "pm_cd": ("CC", "DC", "BT", "CS", "GC"),
    "currency_cd": ("EUR",),
    "site_id": SITES,
    "home_site_id": SITES,
}
NUMBERS: dict[str, tuple[int, ...]] = {
    "list_price": (10, 25, 50, 100, 150, 200),
    "quantity": (1, 2, 3, 5, 10),
    "unit_price": (10, 25, 50, 100, 200),
    "discount_pct": (0, 5, 10, 15, 30),
    "net_amount": (100, 250, 500, 1000, 2500),
    "tax_amount": (20, 50, 100, 200),
    "gross_amount": (120, 300, 600, 1200, 3000),
    "amount": (0, 100, 500, 1000),
    "on_hand_qty": (0, 10, 50, 100, 200),
    "reorder_pt": (10, 20, 30, 40),
    "line_no": (1, 2, 3),
}
WHOLE_NUMBERS = ("quantity", "on_hand_qty", "reorder_pt", "line_no")
DATES: dict[str, tuple[str, ...]] = {
    "order_date": ("2023-06-30", "2024-01-01", "2024-06-30", "2025-01-01", "2025-04-01"),
    "invoice_date": ("2023-06-30", "2024-01-01", "2024-06-30", "2025-01-01", "2025-04-01"),
    "paid_on": ("2023-06-30", "2024-01-01", "2024-06-30", "2025-01-01", "2025-04-01"),
    "created_on": ("2020-01-01", "2022-01-01", "2024-01-01"),
    "opened_on": ("2012-01-01", "2015-06-30", "2018-01-01"),
    "counted_on": ("2025-05-15", "2025-06-01", "2025-06-15"),
}
PATTERNS: dict[str, tuple[str, ...]] = {
    "site_name": ("A%", "%en", "%e%", "K%"),
    "customer_name": ("A%", "%son", "%Berg%", "M%", "% K%"),
    "item_name": ("%Pro%", "Tools%", "%Drill%", "%Max%", "Garden%", "%Lite%"),
}
RANGES: dict[str, tuple[tuple[str, str], ...]] = {
    "order_id": (("100001", "100500"), ("100200", "101000"), ("101000", "101800")),
    "invoice_id": (("500001", "500400"), ("500300", "501000")),
    "payment_id": (("900001", "900400"), ("900500", "901200")),
    "customer_id": (("'C000001'", "'C000040'"), ("'C000020'", "'C000080'")),
    "item_id": (("'I0001'", "'I0030'"), ("'I0100'", "'I0160'")),
}

FEW: dict[str, tuple[str, str]] = {
    "customer_id": ("'C000001'", "'C000025'"),
    "order_id": ("100001", "100025"),
    "invoice_id": ("500001", "500025"),
    "item_id": ("'I0001'", "'I0012'"),
}
"""Narrow key ranges for the outer side of correlated subqueries."""


@dataclass(frozen=True)
class Link:
    """A foreign key: ``child.column`` references ``parent.key``."""

    child: str
    column: str
    parent: str
    key: str


LINKS: tuple[Link, ...] = (
    Link("sales.orders", "customer_id", "sales.customers", "customer_id"),
    Link("sales.orders", "site_id", "sales.sites", "site_id"),
    Link("sales.customers", "home_site_id", "sales.sites", "site_id"),
    Link("sales.order_lines", "order_id", "sales.orders", "order_id"),
    Link("sales.order_lines", "item_id", "sales.items", "item_id"),
    Link("finance.invoices", "order_id", "sales.orders", "order_id"),
    Link("finance.payments", "invoice_id", "finance.invoices", "invoice_id"),
    Link("inventory.stock", "site_id", "sales.sites", "site_id"),
    Link("inventory.stock", "item_id", "sales.items", "item_id"),
)
SMALL = ("sales.sites", "sales.items", "inventory.stock")
"""Tables small enough to be the outer side of a correlated subquery on every engine."""

BIG = (
    "sales.customers",
    "sales.orders",
    "sales.order_lines",
    "finance.invoices",
    "finance.payments",
)


def _nested_on_sqlite(d: Spelling, *tables: str) -> bool:
    """Whether SQLite would scan one of two big ``tables`` once per row of the other.

    The SQLite copy has no indexes, and for right and full joins, correlated EXISTS and joins
    to a materialised CTE its planner nests full scans: legitimate, but far too slow to keep.
    """
    return d.sqlite and any(t in BIG for t in tables) and len(tables) > 1


Shape = Callable[[random.Random, Spelling], "str | None"]


def generated_statements(engine: str) -> tuple[tuple[str, str], ...]:
    """``(id, sql)`` for every generated statement on ``engine``: deterministic, distinct."""
    spelling = Spelling(engine)
    seen: set[str] = set()
    statements = []
    for name, (shape, count) in SHAPES.items():
        for index in range(count):
            sql = shape(random.Random(f"{name}:{index}"), spelling)
            if sql is not None and sql not in seen:
                seen.add(sql)
                statements.append((f"gen-{name}-{index:04d}", sql))
    return tuple(statements)


# --- columns and predicates --------------------------------------------------------------


def _kind(column: str) -> str:
    if column in CODES:
        return "code"
    if column in NUMBERS:
        return "number"
    if column in DATES:
        return "date"
    if column in PATTERNS:
        return "text"
    if column in RANGES:
        return "range"
    return "bool" if column == "is_active" else "other"


def _columns(table: str, *kinds: str) -> tuple[str, ...]:
    return tuple(c for c in COLUMNS[table] if _kind(c) in kinds)


def _filterable(table: str) -> tuple[str, ...]:
    return _columns(table, "code", "number", "date", "text", "range", "bool")


def _predicate(rng: random.Random, d: Spelling, alias: str, column: str) -> str:
    """One filter on ``alias.column`` in a form that suits the column's values."""
    ref = f"{alias}.{column}"
    kind = _kind(column)
    if kind == "code":
        values = CODES[column]
        form = rng.choice(("=", "<>", "in", "not in")) if len(values) > 2 else "="
        if form in ("=", "<>"):
            return f"{ref} {form} '{rng.choice(values)}'"
        picked = sorted(rng.sample(values, rng.randint(2, min(3, len(values) - 1))))
        return f"{ref} {form.upper()} ({_quoted(picked)})"
    if kind == "number":
        low, high = sorted(rng.sample(NUMBERS[column], 2))
        form = rng.choice((">", ">=", "<", "<=", "between"))
        if form == "between":
            return f"{ref} BETWEEN {low} AND {high}"
        return f"{ref} {form} {rng.choice((low, high))}"
    if kind == "date":
        first, last = sorted(rng.sample(DATES[column], 2))
        form = rng.choice((">=", "<", "between", "year"))
        if form == "between":
            return f"{ref} BETWEEN {d.date(first)} AND {d.date(last)}"
        if form == "year":
            return f"{d.year(ref)} = {first[:4]}"
        return f"{ref} {form} {d.date(rng.choice((first, last)))}"
    if kind == "text":
        negate = rng.random() < 0.2
        return f"{ref} {'NOT LIKE' if negate else 'LIKE'} '{rng.choice(PATTERNS[column])}'"
    if kind == "range":
        start, stop = rng.choice(RANGES[column])
        return f"{ref} BETWEEN {start} AND {stop}"
    return rng.choice((ref, f"NOT {ref}", f"{ref} = TRUE"))


def _quoted(values: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


def _filter(rng: random.Random, d: Spelling, alias: str, table: str) -> str:
    return _predicate(rng, d, alias, rng.choice(_filterable(table)))


def _where(rng: random.Random, d: Spelling, alias: str, table: str) -> str:
    """A WHERE clause of one or two filters (AND, OR), or none."""
    roll = rng.random()
    if roll < 0.2:
        return ""
    first = _filter(rng, d, alias, table)
    if roll < 0.7:
        return f" WHERE {first}"
    second = _filter(rng, d, alias, table)
    joiner = rng.choice(("AND", "OR", "AND NOT"))
    if joiner == "OR":
        return f" WHERE ({first} OR {second})"
    return f" WHERE {first} {joiner} {second}"


def _from(d: Spelling, table: str, alias: str | None = None) -> str:
    return f"{d.table(table)} AS {alias or ALIASES[table]}"


def _grouped(table: str) -> tuple[str, ...]:
    """Number columns with few distinct values, good to group on."""
    return tuple(c for c in COLUMNS[table] if c in ("line_no", "discount_pct", "uom_cd"))


def _partitions(table: str) -> tuple[str, ...]:
    """Columns to partition or group rows of ``table`` by."""
    return _columns(table, "code") or _grouped(table)


def _group_key(rng: random.Random, d: Spelling, alias: str, table: str) -> str:
    """Something to group by: a code column, or the year or month of a date column."""
    column = rng.choice(_columns(table, "code", "date") + _grouped(table))
    ref = f"{alias}.{column}"
    if _kind(column) == "date":
        return d.year(ref) if rng.random() < 0.5 else d.month(ref)
    return ref


def _aggregate(
    rng: random.Random, d: Spelling, alias: str, table: str, rounded: bool = True
) -> str:
    """One aggregate over ``table``; ``rounded=False`` keeps it a bare call (for FILTER)."""
    numbers = _columns(table, "number")
    codes = _columns(table, "code")
    options = ["count(*)"]
    if numbers:
        column = f"{alias}.{rng.choice(numbers)}"
        average = d.round2(f"avg({column})") if rounded else f"avg({column})"
        options += [f"sum({column})", average, f"min({column})"]
        options += [f"max({column})", f"count({column})"]
    if codes:
        code = f"{alias}.{rng.choice(codes)}"
        options += [f"count(DISTINCT {code})", d.string_agg(code, ",")]
    dates = _columns(table, "date")
    if dates:
        options.append(f"max({alias}.{rng.choice(dates)})")
    return rng.choice(options)


def _limit(rng: random.Random, optional: bool = True) -> str:
    roll = rng.random()
    if roll < 0.15 and optional:
        return ""
    if roll < 0.25:
        return f" LIMIT {rng.choice((10, 20))} OFFSET {rng.choice((5, 10))}"
    return f" LIMIT {rng.choice((5, 10, 20, 25, 50, 100))}"


# --- shapes ------------------------------------------------------------------------------


def _project(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    alias = ALIASES[table]
    picked = rng.sample(COLUMNS[table], rng.randint(2, 4))
    columns = [c for c in COLUMNS[table] if c in picked]
    distinct = "DISTINCT " if rng.random() < 0.15 else ""
    if distinct:
        columns = [c for c in columns if _kind(c) == "code"] or [rng.choice(_filterable(table))]
    listed = ", ".join(f"{alias}.{c}" for c in columns)
    where = _where(rng, d, alias, table)
    order = ", ".join(f"{alias}.{c}" for c in columns) if distinct else f"{alias}.{KEYS[table]}"
    direction = rng.choice(("", " DESC", " ASC"))
    return f"SELECT {distinct}{listed} FROM {_from(d, table)}{where} ORDER BY {order}{direction}{_limit(rng, optional=False)}"


def _aggregate_shape(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    alias = ALIASES[table]
    keys = list(dict.fromkeys(_group_key(rng, d, alias, table) for _ in range(rng.randint(1, 2))))
    aggregates = list(dict.fromkeys(_aggregate(rng, d, alias, table) for _ in range(3)))
    named = [f"{a} AS m{n}" for n, a in enumerate(aggregates, 1)]
    where = _where(rng, d, alias, table)
    having = ""
    if rng.random() < 0.4:
        having = f" HAVING count(*) > {rng.choice((1, 5, 10, 50, 100))}"
    elif rng.random() < 0.3:
        having = f" HAVING {aggregates[0]} IS NOT NULL"
    grouping = ", ".join(str(n) for n in range(1, len(keys) + 1))
    if rng.random() < 0.5:
        grouping = ", ".join(keys)
    order = rng.choice(("1", "m1 DESC", f"{len(keys) + 1} DESC, 1"))
    # Every group key ends the ORDER BY, so a LIMIT always cuts the same rows.
    positions = [str(n) for n in range(1, len(keys) + 1)]
    order = ", ".join(dict.fromkeys([*order.split(", "), *positions]))
    select = ", ".join([*keys, *named])
    return (
        f"SELECT {select} FROM {_from(d, table)}{where} GROUP BY {grouping}{having} "
        f"ORDER BY {order}{_limit(rng)}"
    )


def _join_path(rng: random.Random) -> list[tuple[Link, str]]:
    """Two or three tables along foreign keys: ``(link, table joined by it)`` after the first.

    Joining a parent never adds rows; a child may be joined only to the first table, once, so
    no statement multiplies rows twice (sites -> orders -> customers, not orders -> sites ->
    customers).
    """
    link = rng.choice(LINKS)
    start, joined = (link.parent, link.child) if rng.random() < 0.5 else (link.child, link.parent)
    path = [(Link(start, "", start, ""), start), (link, joined)]
    fanned = joined == link.child
    if rng.random() < 0.55:
        present = {table for _, table in path}
        options = [
            (candidate, candidate.parent if candidate.child in present else candidate.child)
            for candidate in LINKS
            if (candidate.child in present) != (candidate.parent in present)
            and (candidate.child in present or (not fanned and candidate.parent == start))
        ]
        if options:
            path.append(rng.choice(options))
    return path


def _equality(link: Link) -> str:
    return f"{ALIASES[link.child]}.{link.column} = {ALIASES[link.parent]}.{link.key}"


def _on(rng: random.Random, d: Spelling, link: Link, joined: str, outer: bool) -> str:
    """A join condition: the key equality, often compounded (AND, OR, AND NOT, BETWEEN).

    The OR of two branches that each repeat the equality is kept to inner joins: engines
    factor the equality out there, but an outer join on it falls back to a nested loop.
    """
    equality = _equality(link)
    if rng.random() < 0.3:
        other = f"{ALIASES[link.parent]}.{link.key} = {ALIASES[link.child]}.{link.column}"
        equality = other if rng.random() < 0.5 else equality
    form = rng.choice(("plain", "and", "and", "and-or", "and-not", "between", "or"))
    side = joined if rng.random() < 0.7 else (link.child if joined == link.parent else link.parent)
    alias = ALIASES[side]
    first = _filter(rng, d, alias, side)
    second = _filter(rng, d, alias, side)
    if form == "plain":
        return equality
    if form == "and":
        return f"{equality} AND {first}"
    if form == "and-or":
        return f"{equality} AND ({first} OR {second})"
    if form == "and-not":
        return f"{equality} AND NOT {first}"
    if form == "between":
        ranged = _columns(side, "number", "date", "range")
        if not ranged:
            return f"{equality} AND {first}"
        column = rng.choice(ranged)
        bound = _predicate(random.Random(rng.random()), d, alias, column)
        if " BETWEEN " not in bound:
            bound = _between(rng, d, alias, column)
        return f"{equality} AND {bound}"
    if outer:
        return f"{equality} AND ({first} OR NOT {second})"
    if _nested_on_sqlite(d, link.child, link.parent):
        return f"{equality} AND ({first} OR {second})"
    # (eq AND a) OR (eq AND b): every branch keeps the key equality, as people write it.
    return f"({equality} AND {first}) OR ({equality} AND {second})"


def _between(rng: random.Random, d: Spelling, alias: str, column: str) -> str:
    ref = f"{alias}.{column}"
    if column in NUMBERS:
        low, high = sorted(rng.sample(NUMBERS[column], 2))
        return f"{ref} BETWEEN {low} AND {high}"
    if column in DATES:
        first, last = sorted(rng.sample(DATES[column], 2))
        return f"{ref} BETWEEN {d.date(first)} AND {d.date(last)}"
    start, stop = rng.choice(RANGES[column])
    return f"{ref} BETWEEN {start} AND {stop}"


def _join(rng: random.Random, d: Spelling) -> str | None:
    path = _join_path(rng)
    start = path[0][1]
    clauses = [_from(d, start)]
    nested = False
    for link, table in path[1:]:
        kind = rng.choice(("JOIN", "INNER JOIN", "JOIN", "LEFT JOIN", "LEFT JOIN", "RIGHT JOIN"))
        if rng.random() < 0.12:
            kind = "LEFT JOIN" if d.engine == MYSQL else "FULL JOIN"  # MySQL has no FULL JOIN
        on = _on(rng, d, link, table, outer=kind not in ("JOIN", "INNER JOIN"))
        clauses.append(f"{kind} {_from(d, table)} ON {on}")
        if kind in ("RIGHT JOIN", "FULL JOIN"):
            nested = nested or _nested_on_sqlite(d, link.child, link.parent)
    tables = [table for _, table in path]
    where = _where(rng, d, ALIASES[start], start)
    if nested:
        return None
    if rng.random() < 0.5:
        key_table = rng.choice(tables)
        key = _group_key(rng, d, ALIASES[key_table], key_table)
        measure_table = rng.choice(tables)
        measure = _aggregate(rng, d, ALIASES[measure_table], measure_table)
        return (
            f"SELECT {key} AS grp, count(*) AS n, {measure} AS m FROM {' '.join(clauses)}{where} "
            f"GROUP BY {key} ORDER BY n DESC, grp{_limit(rng)}"
        )
    listed = []
    for table in tables:
        column = rng.choice(COLUMNS[table])
        listed.append(f"{ALIASES[table]}.{column}")
    listed = list(dict.fromkeys(listed))
    order = ", ".join(listed)
    if nested:
        return None
    return f"SELECT {', '.join(listed)} FROM {' '.join(clauses)}{where} ORDER BY {order} LIMIT {rng.choice((10, 20, 50, 100))}"


SHARED_KEYS: tuple[tuple[str, str, str], ...] = (
    ("sales.orders", "sales.customers", "customer_id"),
    ("sales.orders", "sales.order_lines", "order_id"),
    ("sales.orders", "finance.invoices", "order_id"),
    ("finance.invoices", "finance.payments", "invoice_id"),
    ("sales.order_lines", "sales.items", "item_id"),
    ("inventory.stock", "sales.items", "item_id"),
    ("inventory.stock", "sales.sites", "site_id"),
    ("sales.orders", "sales.sites", "site_id"),
    ("finance.invoices", "sales.order_lines", "order_id"),
)
"""Pairs of tables whose only common column is the key they join on (USING, NATURAL)."""


def _shared_join(rng: random.Random, d: Spelling, natural: bool) -> str | None:
    left, right, key = rng.choice(SHARED_KEYS)
    if rng.random() < 0.5:
        left, right = right, left
    kind = rng.choice(("JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN", "RIGHT JOIN"))
    if kind == "RIGHT JOIN" and _nested_on_sqlite(d, left, right):
        return None
    a, b = ALIASES[left], ALIASES[right]
    if natural:
        join = f"{_from(d, left)} NATURAL {kind.replace('INNER ', '')} {_from(d, right)}"
    else:
        join = f"{_from(d, left)} {kind} {_from(d, right)} USING ({key})"
    where = _where(rng, d, a, left)
    if rng.random() < 0.5:
        group = _group_key(rng, d, b, right)
        measure = _aggregate(rng, d, a, left)
        return (
            f"SELECT {group} AS grp, count({key}) AS n, {measure} AS m FROM {join}{where} "
            f"GROUP BY {group} ORDER BY grp{_limit(rng)}"
        )
    first = rng.choice([c for c in COLUMNS[left] if c != key])
    second = rng.choice([c for c in COLUMNS[right] if c != key])
    return (
        f"SELECT {key}, {a}.{first}, {b}.{second} FROM {join}{where} "
        f"ORDER BY {key}, {a}.{first}, {b}.{second} LIMIT {rng.choice((10, 20, 50))}"
    )


def _using(rng: random.Random, d: Spelling) -> str | None:
    return _shared_join(rng, d, natural=False)


def _natural(rng: random.Random, d: Spelling) -> str | None:
    return _shared_join(rng, d, natural=True)


WINDOWED = (
    "inventory.stock",
    "sales.items",
    "finance.invoices",
    "sales.orders",
    "finance.payments",
    "sales.order_lines",
    "sales.customers",
)
RANKING = ("row_number()", "rank()", "dense_rank()", "ntile(4)", "percent_rank()", "cume_dist()")


def _window(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(WINDOWED)
    alias = ALIASES[table]
    partition = f"{alias}.{rng.choice(_partitions(table))}"
    ordered = f"{alias}.{rng.choice(_columns(table, 'number', 'date', 'range'))}"
    key = f"{alias}.{KEYS[table]}"
    direction = rng.choice(("", " DESC"))
    where = _where(rng, d, alias, table)
    spec = f"PARTITION BY {partition} ORDER BY {ordered}{direction}, {key}"
    form = rng.choice(("rank", "rank", "value", "running", "named", "aggregated"))
    if form == "rank":
        function = rng.choice(RANKING)
        inner = (
            f"SELECT {partition} AS grp, {key} AS id, {ordered} AS x, {function} OVER ({spec}) AS w "
            f"FROM {_from(d, table)}{where}"
        )
        bound = "<= 3" if function in ("row_number()", "rank()", "dense_rank()") else "<= 1"
        if function == "percent_rank()":
            bound = "< 0.1"
        if function == "cume_dist()":
            bound = "<= 0.05"
        return f"SELECT grp, id, x, w FROM ({inner}) AS ranked WHERE w {bound} ORDER BY grp, w, id LIMIT 100"
    if form == "value":
        function = rng.choice(
            (
                f"lag({ordered}) OVER ({spec})",
                f"lead({ordered}, 1) OVER ({spec})",
                f"first_value({ordered}) OVER ({spec})",
                f"last_value({ordered}) OVER ({spec} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
                f"nth_value({ordered}, 2) OVER ({spec} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)",
            )
        )
        return (
            f"SELECT {key}, {partition}, {ordered}, {function} AS w FROM {_from(d, table)}{where} "
            f"ORDER BY {key}, {partition}, {ordered} LIMIT {rng.choice((20, 50))}"
        )
    numbers = _columns(table, "number")
    # Tables without amounts (orders, customers) count their keys instead of summing them.
    measure = f"{alias}.{rng.choice(numbers)}" if numbers else key
    summed = "sum" if numbers else "count"
    if form == "running":
        frame = rng.choice(
            (
                "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW",
                "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING",
                "",
            )
        )
        function = rng.choice(("sum", "avg", "count", "max", "min"))
        if not numbers and function in ("sum", "avg"):
            function = "count"
        over = f"{spec} {frame}".strip()
        if rng.random() < 0.3:
            over = f"PARTITION BY {partition}"
        return (
            f"SELECT {key}, {partition}, {measure}, {function}({measure}) OVER ({over}) AS w "
            f"FROM {_from(d, table)}{where} ORDER BY {partition}, {key} LIMIT {rng.choice((20, 50))}"
        )
    if form == "named":
        function = rng.choice(RANKING[:3])
        return (
            f"SELECT {key}, {partition}, {function} OVER w AS pos, {summed}({measure}) OVER w AS running "
            f"FROM {_from(d, table)}{where} WINDOW w AS ({spec}) ORDER BY {partition}, pos, {key} LIMIT 50"
        )
    group = _group_key(rng, d, alias, table)
    function = rng.choice(("rank()", "dense_rank()", "row_number()"))
    return (
        f"SELECT {group} AS grp, {summed}({measure}) AS total, "
        f"{function} OVER (ORDER BY {summed}({measure}) DESC, {group}) AS pos "
        f"FROM {_from(d, table)}{where} GROUP BY {group} ORDER BY pos, grp"
    )


FACTS: tuple[Link, ...] = LINKS


def _cte(rng: random.Random, d: Spelling) -> str | None:
    link = rng.choice(FACTS)
    fact, dim = link.child, link.parent
    f, m = ALIASES[fact], ALIASES[dim]
    measure = _aggregate(rng, d, f, fact)
    where = _where(rng, d, f, fact)
    name = rng.choice(("totals", "per_key", "summary", "agg", "rollup_src"))
    cte = (
        f"{name} AS (SELECT {f}.{link.column} AS ref, count(*) AS n, {measure} AS m "
        f"FROM {_from(d, fact)}{where} GROUP BY {f}.{link.column})"
    )
    label = rng.choice([c for c in COLUMNS[dim] if c != link.key])
    form = rng.choice(("join", "join", "chain", "self", "filter"))
    if form == "join":
        dim_where = _where(rng, d, m, dim)
        if _nested_on_sqlite(d, fact, dim):
            return None
        return (
            f"WITH {cte} SELECT {m}.{link.key}, {m}.{label}, t.n, t.m FROM {name} AS t "
            f"JOIN {_from(d, dim)} ON {m}.{link.key} = t.ref{dim_where} "
            f"ORDER BY t.n DESC, {m}.{link.key}{_limit(rng)}"
        )
    if form == "chain":
        threshold = rng.choice((1, 2, 5, 10))
        return (
            f"WITH {cte}, busy AS (SELECT ref, n FROM {name} WHERE n > {threshold}) "
            f"SELECT count(*) AS busy_keys, max(n) AS most, min(n) AS least_busy FROM busy"
        )
    if form == "self":
        return (
            f"WITH {cte} SELECT a.ref, a.n, (SELECT max(b.n) FROM {name} AS b) AS top "
            f"FROM {name} AS a WHERE a.n >= (SELECT avg(c2.n) FROM {name} AS c2) "
            f"ORDER BY a.n DESC, a.ref LIMIT 20"
        )
    keys = "`keys`" if d.engine == MYSQL else "keys"  # a reserved word in MySQL
    return (
        f"WITH {cte} SELECT {m}.{label}, count(*) AS {keys} FROM {_from(d, dim)} "
        f"WHERE {m}.{link.key} IN (SELECT ref FROM {name} WHERE n > 1) GROUP BY {m}.{label} "
        f"ORDER BY {keys} DESC, {m}.{label} LIMIT 20"
    )


COUNTED: tuple[tuple[str, str, int, int], ...] = (
    ("sales.order_lines", "line_no", 1, 6),
    ("sales.order_lines", "quantity", 1, 12),
    ("inventory.stock", "reorder_pt", 5, 50),
    ("sales.order_lines", "discount_pct", 0, 30),
)
"""Whole-number columns a small series can be joined to: (table, column, low, high)."""


def _recursive(rng: random.Random, d: Spelling) -> str:
    if rng.random() < 0.35:
        start = rng.choice(("2024-01-01", "2024-07-01", "2025-01-01"))
        months = rng.randint(3, 6)
        stop = f"{start[:5]}{int(start[5:7]) + months - 1:02d}-01"
        table, column = rng.choice(
            (
                ("sales.orders", "order_date"),
                ("finance.invoices", "invoice_date"),
                ("finance.payments", "paid_on"),
            )
        )
        a = ALIASES[table]
        return (
            f"WITH RECURSIVE m(month_start) AS (SELECT {d.date(start)} UNION ALL "
            f"SELECT {d.plus_month('month_start')} FROM m WHERE month_start < {d.date(stop)}) "
            f"SELECT m.month_start, count({a}.{column}) AS n FROM m LEFT JOIN {_from(d, table)} "
            f"ON {a}.{column} >= m.month_start AND {a}.{column} < {d.plus_month('m.month_start')} "
            f"GROUP BY m.month_start ORDER BY m.month_start"
        )
    table, column, low, high = rng.choice(COUNTED)
    a = ALIASES[table]
    top = rng.randint(low + 2, min(high, low + 9))
    extra = f" AND {_filter(rng, d, a, table)}" if rng.random() < 0.4 else ""
    name = rng.choice(("n", "seq", "steps"))
    return (
        f"WITH RECURSIVE {name}(k) AS (SELECT {low} UNION ALL SELECT k + 1 FROM {name} WHERE k < {top}) "
        f"SELECT {name}.k, count({a}.{column}) AS n FROM {name} LEFT JOIN {_from(d, table)} "
        f"ON {a}.{column} = {name}.k{extra} GROUP BY {name}.k ORDER BY {name}.k"
    )


KEY_SOURCES: dict[str, tuple[tuple[str, str], ...]] = {
    "site": (
        ("sales.sites", "site_id"),
        ("sales.orders", "site_id"),
        ("inventory.stock", "site_id"),
        ("sales.customers", "home_site_id"),
    ),
    "customer": (("sales.customers", "customer_id"), ("sales.orders", "customer_id")),
    "item": (
        ("sales.items", "item_id"),
        ("sales.order_lines", "item_id"),
        ("inventory.stock", "item_id"),
    ),
    "order": (
        ("sales.orders", "order_id"),
        ("sales.order_lines", "order_id"),
        ("finance.invoices", "order_id"),
    ),
    "invoice": (("finance.invoices", "invoice_id"), ("finance.payments", "invoice_id")),
}


def _setop(rng: random.Random, d: Spelling) -> str:
    sources = KEY_SOURCES[rng.choice(tuple(KEY_SOURCES))]
    branches = []
    for _ in range(3 if rng.random() < 0.25 else 2):
        table, column = rng.choice(sources)
        a = ALIASES[table]
        branches.append(
            f"SELECT {a}.{column} FROM {_from(d, table)} WHERE {_filter(rng, d, a, table)}"
        )
    text = branches[0]
    for branch in branches[1:]:
        text += f" {rng.choice(('UNION', 'UNION ALL', 'INTERSECT', 'EXCEPT'))} {branch}"
    if rng.random() < 0.3:
        return f"SELECT count(*) AS n FROM ({text}) AS combined"
    return f"{text} ORDER BY 1{_limit(rng)}"


def _subquery(rng: random.Random, d: Spelling) -> str | None:
    link = rng.choice(FACTS)
    fact, dim = link.child, link.parent
    f, m = ALIASES[fact], ALIASES[dim]
    inner_where = _filter(rng, d, f, fact)
    label = rng.choice([c for c in COLUMNS[dim] if c != link.key])
    outer = f"SELECT {m}.{link.key}, {m}.{label} FROM {_from(d, dim)}"
    order = f" ORDER BY {m}.{link.key} LIMIT {rng.choice((10, 20, 50))}"
    form = rng.choice(("in", "not in", "exists", "not exists", "scalar", "compare"))
    if form in ("in", "not in"):
        return f"{outer} WHERE {m}.{link.key} {form.upper()} (SELECT {f}.{link.column} FROM {_from(d, fact)} WHERE {inner_where}){order}"
    if form in ("exists", "not exists"):
        if _nested_on_sqlite(d, fact, dim):
            return None
        return (
            f"{outer} WHERE {form.upper()} (SELECT 1 FROM {_from(d, fact)} "
            f"WHERE {f}.{link.column} = {m}.{link.key} AND {inner_where}){order}"
        )
    if form == "scalar":
        # A correlated scalar subquery runs once per outer row: keep the outer side small.
        if dim == "sales.sites" or fact == "inventory.stock":
            restrict = _where(rng, d, m, dim)
        else:
            low, high = FEW[link.key]
            restrict = f" WHERE {m}.{link.key} BETWEEN {low} AND {high}"
        measure = _aggregate(rng, d, f, fact)
        return (
            f"SELECT {m}.{link.key}, (SELECT {measure} FROM {_from(d, fact)} "
            f"WHERE {f}.{link.column} = {m}.{link.key}) AS m FROM {_from(d, dim)}{restrict} "
            f"ORDER BY {m}.{link.key}"
        )
    numbers = _columns(fact, "number")
    if not numbers:
        return f"{outer} WHERE {m}.{link.key} IN (SELECT {f}.{link.column} FROM {_from(d, fact)} WHERE {inner_where} AND {f}.{link.column} IS NOT NULL){order}"
    column = rng.choice(numbers)
    inner = ALIASES[fact] + "2"
    correlate = ""
    if fact in SMALL and rng.random() < 0.6:
        code = rng.choice(_columns(fact, "code"))
        correlate = f" WHERE {inner}.{code} = {f}.{code}"
        if d.sqlite:  # 2,880 scans of the 2,880 stock rows without an index
            return None
    return (
        f"SELECT {f}.{KEYS[fact]}, {f}.{column} FROM {_from(d, fact)} "
        f"WHERE {f}.{column} > (SELECT avg({inner}.{column}) FROM {_from(d, fact, inner)}{correlate}) "
        f"ORDER BY {f}.{column} DESC, {f}.{KEYS[fact]} LIMIT 20"
    )


def _case(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    a = ALIASES[table]
    numbers = _columns(table, "number")
    codes = _columns(table, "code")
    form = rng.choice(("band", "map", "conditional"))
    if form == "band" and numbers:
        column = rng.choice(numbers)
        low, high = sorted(rng.sample(NUMBERS[column], 2))
        ref = f"{a}.{column}"
        band = f"CASE WHEN {ref} < {low} THEN 'low' WHEN {ref} < {high} THEN 'mid' ELSE 'high' END"
        return f"SELECT {band} AS band, count(*) AS n, sum({ref}) AS total FROM {_from(d, table)}{_where(rng, d, a, table)} GROUP BY 1 ORDER BY 1"
    if form == "map" and codes:
        column = rng.choice(codes)
        values = CODES[column][: rng.randint(1, min(3, len(CODES[column])))]
        whens = " ".join(f"WHEN '{v}' THEN '{v.lower()}-{n}'" for n, v in enumerate(values))
        mapped = f"CASE {a}.{column} {whens} ELSE 'other' END"
        return f"SELECT {mapped} AS label, count(*) AS n FROM {_from(d, table)}{_where(rng, d, a, table)} GROUP BY {mapped} ORDER BY n DESC, label"
    condition = _filter(rng, d, a, table)
    measure = f"{a}.{numbers[0]}" if numbers else "1"
    group = _group_key(rng, d, a, table)
    return (
        f"SELECT {group} AS grp, sum(CASE WHEN {condition} THEN {measure} ELSE 0 END) AS hit, "
        f"count(CASE WHEN NOT ({condition}) THEN 1 END) AS miss FROM {_from(d, table)} "
        f"GROUP BY {group} ORDER BY grp{_limit(rng)}"
    )


def _function(rng: random.Random, d: Spelling, a: str, column: str) -> str:
    ref = f"{a}.{column}"
    kind = _kind(column)
    if kind in ("text", "code") or column.endswith("_id") and column not in RANGES:
        return rng.choice(
            (
                f"upper({ref})",
                f"lower({ref})",
                f"length({ref})",
                f"substr({ref}, 1, 3)",
                f"replace({ref}, 'a', 'o')",
                f"trim({ref})",
                d.concat("'['", ref, "']'"),
                f"coalesce(nullif({ref}, 'S01'), 'none')",
                d.position("'e'", ref),
            )
        )
    if kind == "number":
        options = [
            d.round2(f"{ref} * 1.2"),
            f"abs({ref})",
            f"floor({ref})",
            f"ceil({ref})",
            d.integer(ref),
            f"coalesce({ref}, 0)",
            f"nullif({ref}, 0)",
            d.greatest(ref, "10"),
            d.least(ref, "100"),
            f"CAST({ref} AS DECIMAL(12, 2))",
        ]
        if column in WHOLE_NUMBERS:
            options.append(f"{ref} % 7")
        return rng.choice(options)
    if kind == "date":
        return rng.choice(
            (
                d.year(ref),
                d.month_text(ref),
                d.days_between(ref, d.date(AS_OF)),
                d.plus_days(ref, rng.choice((7, 30, -1))),
                d.text(ref),
            )
        )
    if kind == "bool":
        return f"CASE WHEN {ref} THEN 'active' ELSE 'inactive' END"
    return d.text(ref)


def _functions(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    a = ALIASES[table]
    columns = rng.sample(COLUMNS[table], rng.randint(2, 3))
    expressions = list(dict.fromkeys(_function(rng, d, a, c) for c in columns))
    listed = ", ".join(f"{e} AS f{n}" for n, e in enumerate(expressions, 1))
    return (
        f"SELECT {a}.{KEYS[table]}, {listed} FROM {_from(d, table)}{_where(rng, d, a, table)} "
        f"ORDER BY {a}.{KEYS[table]} LIMIT {rng.choice((10, 20, 50))}"
    )


def _series(rng: random.Random, d: Spelling) -> str:
    if rng.random() < 0.3:
        table, column = rng.choice(
            (("sales.orders", "order_date"), ("finance.invoices", "invoice_date"))
        )
        a = ALIASES[table]
        years = d.series(2023, 2025, "g", "yr")
        return (
            f"SELECT g.yr, count({a}.{column}) AS n FROM {years} LEFT JOIN {_from(d, table)} "
            f"ON {d.year(f'{a}.{column}')} = g.yr GROUP BY g.yr ORDER BY g.yr"
        )
    table, column, low, high = rng.choice(COUNTED)
    a = ALIASES[table]
    top = rng.randint(low + 2, min(high, low + 9))
    extra = f" AND {_filter(rng, d, a, table)}" if rng.random() < 0.5 else ""
    return (
        f"SELECT g.n, count({a}.{column}) AS hits FROM {d.series(low, top, 'g', 'n')} "
        f"LEFT JOIN {_from(d, table)} ON {a}.{column} = g.n{extra} GROUP BY g.n ORDER BY g.n"
    )


def _json(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    a = ALIASES[table]
    picked = rng.sample(COLUMNS[table], rng.randint(2, 3))
    columns = [c for c in COLUMNS[table] if c in picked]
    document = d.json_object([(c, f"{a}.{c}") for c in columns])
    key = f"{a}.{KEYS[table]}"
    form = rng.choice(("object", "extract", "array"))
    restrict = f" WHERE {_filter(rng, d, a, table)}"
    if form == "object":
        return f"SELECT {key}, {document} AS doc FROM {_from(d, table)}{restrict} ORDER BY {key} LIMIT {rng.choice((5, 10, 20))}"
    if form == "extract":
        chosen = rng.choice(columns)
        return f"SELECT {key}, {d.json_text(document, chosen)} AS picked FROM {_from(d, table)}{restrict} ORDER BY {key} LIMIT {rng.choice((5, 10, 20))}"
    group = f"{a}.{rng.choice(_partitions(table))}"
    listed = f"{a}.{rng.choice([c for c in COLUMNS[table] if _kind(c) == 'code'] or [KEYS[table]])}"
    return (
        f"SELECT {group} AS grp, {d.json_array_agg(listed)} AS members "
        f"FROM {_from(d, table)}{restrict} AND {key} IS NOT NULL GROUP BY {group} ORDER BY grp LIMIT 10"
    )


def _filter_clause(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    a = ALIASES[table]
    group = _group_key(rng, d, a, table)
    measures = []
    for _ in range(rng.randint(1, 3)):
        measures.append(
            f"{_aggregate(rng, d, a, table, rounded=False)} FILTER (WHERE {_filter(rng, d, a, table)})"
        )
    listed = ", ".join(f"{m} AS m{n}" for n, m in enumerate(dict.fromkeys(measures), 1))
    return f"SELECT {group} AS grp, count(*) AS n, {listed} FROM {_from(d, table)} GROUP BY {group} ORDER BY grp{_limit(rng)}"


def _only(engines: tuple[str, ...], shape: Shape) -> Shape:
    """``shape`` on ``engines``; None (not applicable) elsewhere."""

    def restricted(rng: random.Random, d: Spelling) -> str | None:
        return shape(rng, d) if d.engine in engines else None

    return restricted


def _distinct_on(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(WINDOWED)
    a = ALIASES[table]
    group = f"{a}.{rng.choice(_partitions(table))}"
    ordered = f"{a}.{rng.choice(_columns(table, 'number', 'date', 'range'))}"
    return (
        f"SELECT DISTINCT ON ({group}) {group}, {a}.{KEYS[table]}, {ordered} FROM {_from(d, table)}"
        f"{_where(rng, d, a, table)} ORDER BY {group}, {ordered}{rng.choice(('', ' DESC'))}, {a}.{KEYS[table]}"
    )


def _qualify(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(WINDOWED)
    a = ALIASES[table]
    group = f"{a}.{rng.choice(_partitions(table))}"
    ordered = f"{a}.{rng.choice(_columns(table, 'number', 'date', 'range'))}"
    function = rng.choice(RANKING[:3])
    return (
        f"SELECT {group}, {a}.{KEYS[table]}, {ordered} FROM {_from(d, table)}{_where(rng, d, a, table)} "
        f"QUALIFY {function} OVER (PARTITION BY {group} ORDER BY {ordered} DESC, {a}.{KEYS[table]}) "
        f"<= {rng.randint(1, 3)} "
        f"ORDER BY {group}, {ordered} DESC, {a}.{KEYS[table]} LIMIT 100"
    )


LATERAL_OUTERS: tuple[tuple[Link, str], ...] = tuple(
    (link, restrict)
    for link in LINKS
    for restrict in ("",)
    if link.parent in ("sales.sites", "sales.items") and link.child != "sales.order_lines"
) + (
    (LINKS[0], " WHERE c.customer_id BETWEEN 'C000001' AND 'C000030'"),
    (LINKS[4], " WHERE i.item_id BETWEEN 'I0001' AND 'I0012'"),
)


def _lateral(rng: random.Random, d: Spelling) -> str:
    link, restrict = rng.choice(LATERAL_OUTERS)
    fact, dim = link.child, link.parent
    f, m = ALIASES[fact], ALIASES[dim]
    ordered = f"{f}.{rng.choice(_columns(fact, 'number', 'date', 'range'))}"
    correlated = f"{f}.{link.column} = {m}.{link.key}"
    if rng.random() < 0.5:
        inner = (
            f"SELECT {f}.{KEYS[fact]} AS ref, {ordered} AS x FROM {_from(d, fact)} "
            f"WHERE {correlated} ORDER BY {ordered} DESC, {f}.{KEYS[fact]} LIMIT {rng.randint(1, 3)}"
        )
    else:
        inner = (
            f"SELECT count(*) AS ref, max({ordered}) AS x FROM {_from(d, fact)} WHERE {correlated}"
        )
    form = rng.choice((", LATERAL", " CROSS JOIN LATERAL", " LEFT JOIN LATERAL"))
    on = " ON TRUE" if form == " LEFT JOIN LATERAL" else ""
    return (
        f"SELECT {m}.{link.key}, t.ref, t.x FROM {_from(d, dim)}{form} ({inner}) AS t{on}{restrict} "
        f"ORDER BY {m}.{link.key}, t.x DESC, t.ref"
    )


def _pivot(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(t for t in COLUMNS if len(_columns(t, "code")) >= 2))
    a = ALIASES[table]
    rows, spread = rng.sample(_columns(table, "code"), 2)
    numbers = _columns(table, "number")
    measure = rng.choice(
        ("count(*)", *(f"sum({n})" for n in numbers), *(f"max({n})" for n in numbers))
    )
    source = f"(SELECT {a}.* FROM {_from(d, table)}{_where(rng, d, a, table)})"
    # Always an IN list: without one DuckDB runs a PIVOT as two statements, which the guard
    # refuses by design (the refusal names this fix). The draw stays, so the sequence does too.
    every_value = rng.random() >= 0.4
    values = f" IN ({_quoted(CODES[spread] if every_value else CODES[spread][:2])})"
    if rng.random() < 0.3:
        return (
            f"UNPIVOT (SELECT {a}.{KEYS[table]}, {a}.{rows}, {a}.{spread} FROM {_from(d, table)} "
            f"LIMIT 50) ON {rows}, {spread} INTO NAME code VALUE value"
        )
    return f"SELECT * FROM (PIVOT {source} ON {spread}{values} USING {measure} GROUP BY {rows}) AS pv ORDER BY 1"


def _grouping(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(t for t in COLUMNS if len(_columns(t, "code")) >= 2))
    a = ALIASES[table]
    first, second = (f"{a}.{c}" for c in rng.sample(_columns(table, "code"), 2))
    measure = _aggregate(rng, d, a, table)
    form = rng.choice(
        (
            f"ROLLUP ({first}, {second})",
            f"CUBE ({first}, {second})",
            f"GROUPING SETS (({first}, {second}), ({first}), ())",
            f"GROUPING SETS (({first}), ({second}))",
        )
    )
    return (
        f"SELECT {first}, {second}, grouping({first}) AS g1, count(*) AS n, {measure} AS m "
        f"FROM {_from(d, table)}{_where(rng, d, a, table)} GROUP BY {form} ORDER BY 1, 2"
    )


# --- MySQL-only shapes -------------------------------------------------------------------


def _conditional(rng: random.Random, d: Spelling) -> str:
    """Conditional aggregates, MySQL's way (no FILTER): a sum of a condition, IF, CASE."""
    table = rng.choice(tuple(COLUMNS))
    a = ALIASES[table]
    group = _group_key(rng, d, a, table)
    numbers = _columns(table, "number")
    measures = []
    for _ in range(rng.randint(1, 3)):
        condition = _filter(rng, d, a, table)
        measure = f"{a}.{rng.choice(numbers)}" if numbers else "1"
        measures.append(
            rng.choice(
                (
                    f"sum({condition})",
                    f"count(IF({condition}, 1, NULL))",
                    f"sum(IF({condition}, {measure}, 0))",
                    f"avg(CASE WHEN {condition} THEN {measure} END)",
                    f"max(IF({condition}, {measure}, NULL))",
                )
            )
        )
    listed = ", ".join(f"{m} AS m{n}" for n, m in enumerate(dict.fromkeys(measures), 1))
    return (
        f"SELECT {group} AS grp, count(*) AS n, {listed} FROM {_from(d, table)} "
        f"GROUP BY {group} ORDER BY grp{_limit(rng)}"
    )


def _rollup(rng: random.Random, d: Spelling) -> str:
    """``GROUP BY ... WITH ROLLUP``: subtotals, ordered by the grouping (MariaDB refuses an
    ORDER BY beside ROLLUP, so an ordered one sorts a derived table)."""
    table = rng.choice(tuple(t for t in COLUMNS if len(_columns(t, "code")) >= 2))
    a = ALIASES[table]
    first, second = rng.sample(_columns(table, "code"), 2)
    keys = [f"{a}.{first}", f"{a}.{second}"][: rng.randint(1, 2)]
    measure = _aggregate(rng, d, a, table)
    inner = (
        f"SELECT {', '.join(keys)}, count(*) AS n, {measure} AS m FROM {_from(d, table)}"
        f"{_where(rng, d, a, table)} GROUP BY {', '.join(keys)} WITH ROLLUP"
    )
    if rng.random() < 0.5:
        return inner
    return f"SELECT * FROM ({inner}) AS r ORDER BY n DESC, m"


def _group_concat(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(t for t in COLUMNS if _partitions(t)))
    a = ALIASES[table]
    group = f"{a}.{rng.choice(_partitions(table))}"
    listed = f"{a}.{rng.choice([c for c in COLUMNS[table] if _kind(c) in ('code', 'text')] or [KEYS[table]])}"
    distinct = rng.choice(("", "DISTINCT "))
    separator = rng.choice(("", " SEPARATOR ', '", " SEPARATOR '|'", " SEPARATOR ';'"))
    key = f"{a}.{KEYS[table]}"
    order = listed if distinct else f"{listed}, {key}"
    concat = f"GROUP_CONCAT({distinct}{listed} ORDER BY {order}{separator})"
    if rng.random() < 0.3:
        concat = f"substring_index({concat}, '{separator[-2:-1] or ','}', 3)"
    return (
        f"SELECT {group} AS grp, {concat} AS members, count(*) AS n FROM {_from(d, table)}"
        f"{_where(rng, d, a, table)} GROUP BY {group} ORDER BY grp LIMIT {rng.choice((5, 10, 20))}"
    )


def _mysql_function(rng: random.Random, d: Spelling, a: str, column: str) -> str:
    ref = f"{a}.{column}"
    kind = _kind(column)
    if kind in ("text", "code") or column.endswith("_id") and column not in RANGES:
        return rng.choice(
            (
                f"IFNULL({ref}, '-')",
                f"CONCAT_WS('/', {ref}, 'x')",
                f"LEFT({ref}, 2)",
                f"RIGHT({ref}, 2)",
                f"LPAD({ref}, 12, '.')",
                f"SUBSTRING_INDEX({ref}, ' ', 1)",
                f"CHAR_LENGTH({ref})",
                f"INSTR({ref}, 'a')",
                f"UCASE({ref})",
                f"IF({ref} LIKE 'S%', 'yes', 'no')",
                f"REVERSE({ref})",
                f"FIELD({ref}, 'N', 'S', 'E', 'W')",
            )
        )
    if kind == "number":
        return rng.choice(
            (
                f"IFNULL({ref}, 0)",
                f"TRUNCATE({ref}, 0)",
                f"{ref} DIV 3",
                f"MOD({ref}, 4)",
                f"IF({ref} > 50, 'big', 'small')",
                f"FORMAT({ref}, 2)",
                f"CAST({ref} AS UNSIGNED)",
                f"POW({ref}, 2)",
                f"SIGN({ref} - 10)",
            )
        )
    if kind == "date":
        return rng.choice(
            (
                f"DATE_FORMAT({ref}, '%d/%m/%Y')",
                f"DATE_FORMAT({ref}, '%b %Y')",
                f"DAYNAME({ref})",
                f"LAST_DAY({ref})",
                f"DATE_ADD({ref}, INTERVAL 2 WEEK)",
                f"DATE_SUB({ref}, INTERVAL 1 MONTH)",
                f"TIMESTAMPDIFF(MONTH, {ref}, {d.date(AS_OF)})",
                f"WEEKDAY({ref})",
                f"QUARTER({ref})",
                f"DAYOFYEAR({ref})",
                f"TO_DAYS({ref})",
                f"{ref} + INTERVAL 1 YEAR",
            )
        )
    if kind == "bool":
        return f"IF({ref}, 'active', 'inactive')"
    return f"IFNULL({ref}, 0)"


def _mysql_functions(rng: random.Random, d: Spelling) -> str:
    table = rng.choice(tuple(COLUMNS))
    a = ALIASES[table]
    columns = rng.sample(COLUMNS[table], rng.randint(2, 3))
    expressions = list(dict.fromkeys(_mysql_function(rng, d, a, c) for c in columns))
    listed = ", ".join(f"{e} AS f{n}" for n, e in enumerate(expressions, 1))
    return (
        f"SELECT {a}.{KEYS[table]}, {listed} FROM {_from(d, table)}{_where(rng, d, a, table)} "
        f"ORDER BY {a}.{KEYS[table]} LIMIT {rng.choice((10, 20, 50))}"
    )


def _backticks(rng: random.Random, d: Spelling) -> str:
    """A listing with every identifier back-quoted, paged with ``LIMIT offset, count``."""
    table = rng.choice(tuple(COLUMNS))
    alias = ALIASES[table]
    picked = rng.sample(COLUMNS[table], rng.randint(2, 4))
    columns = [c for c in COLUMNS[table] if c in picked]
    schema, name = table.split(".")
    listed = ", ".join(f"`{alias}`.`{c}`" for c in columns)
    where = _where(rng, d, alias, table)
    for column in COLUMNS[table]:
        where = where.replace(f"{alias}.{column}", f"`{alias}`.`{column}`")
    page = f"{rng.choice((0, 5, 10, 20))}, {rng.choice((5, 10, 25))}"
    return (
        f"SELECT {listed} FROM `{schema}`.`{name}` AS `{alias}`{where} "
        f"ORDER BY `{alias}`.`{KEYS[table]}` LIMIT {page}"
    )


def _straight_join(rng: random.Random, d: Spelling) -> str:
    """A join whose order the statement fixes: ``STRAIGHT_JOIN`` as modifier or operator."""
    link = rng.choice(LINKS)
    child, parent = ALIASES[link.child], ALIASES[link.parent]
    key_table = rng.choice((link.child, link.parent))
    key = _group_key(rng, d, ALIASES[key_table], key_table)
    measure = _aggregate(rng, d, child, link.child)
    where = _where(rng, d, child, link.child)
    if rng.random() < 0.5:
        joined = (
            f"{_from(d, link.parent)} STRAIGHT_JOIN {_from(d, link.child)} ON {_equality(link)}"
        )
        modifier = ""
    else:
        joined = f"{_from(d, link.child)} JOIN {_from(d, link.parent)} ON {_equality(link)}"
        modifier = "STRAIGHT_JOIN "
    return (
        f"SELECT {modifier}{key} AS grp, count({parent}.{link.key}) AS n, {measure} AS m "
        f"FROM {joined}{where} GROUP BY {key} ORDER BY grp{_limit(rng)}"
    )


def _regexp(rng: random.Random, d: Spelling) -> str:
    table, column = rng.choice(
        (("sales.sites", "site_name"), ("sales.customers", "customer_name"),
         ("sales.items", "item_name"), ("sales.items", "category"))
    )  # fmt: skip
    a = ALIASES[table]
    ref = f"{a}.{column}"
    pattern = rng.choice(("^A", "en$", "(Pro|Max)", "^[A-M]", "[0-9]", "e.*e", "^(Tools|Garden)"))
    operator = rng.choice(("REGEXP", "RLIKE", "NOT REGEXP"))
    extra = rng.choice(
        (
            "",
            f", REGEXP_REPLACE({ref}, '[aeiou]', '') AS consonants",
            f", REGEXP_SUBSTR({ref}, '[A-Za-z]+') AS first_word",
            f", REGEXP_INSTR({ref}, '[ -]') AS first_gap",
        )
    )
    return (
        f"SELECT {a}.{KEYS[table]}, {ref}{extra} FROM {_from(d, table)} "
        f"WHERE {ref} {operator} '{pattern}' ORDER BY {a}.{KEYS[table]} LIMIT {rng.choice((10, 20))}"
    )


DEFAULT_DATABASE = "sales"
"""The database a MySQL reader connects to: unqualified names resolve there."""


def _default_database(rng: random.Random, d: Spelling) -> str:
    """A statement naming tables of the connection's database (``sales``) without it."""
    table = rng.choice([t for t in COLUMNS if t.startswith(f"{DEFAULT_DATABASE}.")])
    alias = ALIASES[table]
    plain = table.split(".", 1)[1]
    where = _where(rng, d, alias, table)
    if rng.random() < 0.5:
        key = _group_key(rng, d, alias, table)
        measure = _aggregate(rng, d, alias, table)
        return (
            f"SELECT {key} AS grp, count(*) AS n, {measure} AS m FROM {plain} AS {alias}{where} "
            f"GROUP BY {key} ORDER BY grp{_limit(rng)}"
        )
    picked = rng.sample(COLUMNS[table], 2)
    listed = ", ".join(f"{alias}.{c}" for c in COLUMNS[table] if c in picked)
    return (
        f"SELECT {listed} FROM {plain} AS {alias}{where} ORDER BY {alias}.{KEYS[table]}"
        f"{_limit(rng, optional=False)}"
    )


_BOTH = (DUCKDB, POSTGRES)
SHAPES: dict[str, tuple[Shape, int]] = {
    "project": (_project, 100),
    "aggregate": (_aggregate_shape, 110),
    "join": (_join, 270),
    "using": (_using, 60),
    "natural": (_natural, 40),
    "window": (_window, 100),
    "cte": (_cte, 80),
    "recursive": (_recursive, 40),
    "setop": (_setop, 80),
    "subquery": (_subquery, 110),
    "case": (_case, 60),
    "functions": (_functions, 80),
    "series": (_series, 30),
    "json": (_json, 40),
    "filter": (_only((DUCKDB, POSTGRES, SQLITE), _filter_clause), 30),
    "distinct-on": (_only(_BOTH, _distinct_on), 30),
    "qualify": (_only((DUCKDB,), _qualify), 30),
    "lateral": (_only(_BOTH, _lateral), 40),
    "pivot": (_only((DUCKDB,), _pivot), 30),
    "grouping": (_only(_BOTH, _grouping), 30),
    "conditional": (_only((MYSQL,), _conditional), 40),
    "rollup": (_only((MYSQL,), _rollup), 30),
    "group-concat": (_only((MYSQL,), _group_concat), 30),
    "mysql-functions": (_only((MYSQL,), _mysql_functions), 50),
    "backticks": (_only((MYSQL,), _backticks), 30),
    "straight-join": (_only((MYSQL,), _straight_join), 20),
    "regexp": (_only((MYSQL,), _regexp), 30),
    "default-database": (_only((MYSQL,), _default_database), 30),
}
"""Every shape and how many statements it draws (before duplicates are dropped)."""
