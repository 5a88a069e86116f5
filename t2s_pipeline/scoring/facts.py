"""What the data says about two structural differences the SQL alone cannot settle (SPEC 11):

- **an extra join**: "an extra join that leaves the result unchanged is not an error", but one
  that fans rows out or drops them changes the answer (``wrong_table``). Whether joining
  ``T`` on ``S.a = T.k`` keeps ``S``'s rows is a fact of the data: the probe counts ``S``'s
  rows with and without the join.
- **a condition spelled differently**: ``order_date >= '2025-06-01'`` and ``order_date BETWEEN
  '2025-06-01' AND '2025-06-30'`` select the same rows when no order is dated later. When every
  condition the two sides disagree on reads one table, the probe counts that table's rows on
  which the two sides' conditions on it disagree; none means the difference selects nothing
  different on this data (the test suite's neighbours are where it may still show). Not when
  either query computes a window function: a condition may then apply after the window read
  the rows it drops.

This module only writes the probes (SQL over the component elements, which are written as
``table.column``) and reads their answers; the diagnose stage runs them through the evaluation
guard. Without facts, the findings are the structural ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlglot import exp

from t2s_pipeline.scoring.findings import element_columns, element_tree

Sets = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class DataFacts:
    """Answers of the probes for one item."""

    row_changing: frozenset[str] = field(default_factory=frozenset)
    """Extra tables (``schema.table``) whose join changes the rows of the table they join."""
    same_rows: frozenset[str] = field(default_factory=frozenset)
    """Tables (``schema.table``) on which the two sides' differing conditions select the same
    rows."""


@dataclass(frozen=True)
class Probe:
    """One counting query and what its answer means."""

    kind: str  # "join" | "filter"
    table: str
    sql: str

    def holds(self, row: Sequence[object]) -> bool:
        """``join``: the join changes the rows; ``filter``: the conditions select the same."""
        if self.kind == "join":
            return len(row) == 2 and row[0] != row[1]
        return len(row) == 1 and row[0] == 0


def probes(gold: Sets, candidate: Sets) -> list[Probe]:
    """The probes one item needs (none when its sets leave nothing to settle).

    >>> gold = {"tables": ["s.orders"], "filters": ["orders.d >= '2025-06-01'",
    ...         "orders.d <= '2025-06-30'"]}
    >>> cand = {"tables": ["s.orders", "s.lines"], "joins": ["lines.oid = orders.id"],
    ...         "filters": ["orders.d >= '2025-06-01'"]}
    >>> [(p.kind, p.table) for p in probes(gold, cand)]
    [('join', 's.lines'), ('filter', 's.orders')]
    >>> print(probes(gold, cand)[0].sql)
    SELECT (SELECT COUNT(*) FROM s.orders AS orders), (SELECT COUNT(*) FROM s.orders AS orders JOIN s.lines AS lines ON lines.oid = orders.id)
    """
    return [*_join_probes(gold, candidate), *_filter_probes(gold, candidate)]


def _names(sets: Sets) -> dict[str, str]:
    return {t.rsplit(".", 1)[-1]: t for t in sets.get("tables", ())}


def _join_probes(gold: Sets, candidate: Sets) -> list[Probe]:
    tables = _names(candidate)
    extra = set(candidate.get("tables", ())) - set(gold.get("tables", ()))
    found = []
    for table in sorted(extra):
        name = table.rsplit(".", 1)[-1]
        partners: dict[str, list[str]] = {}
        for join in candidate.get("joins", ()):
            sides = [s.split(".")[0] for s in join.split(" = ")]
            if len(sides) == 2 and name in sides:
                other = sides[1] if sides[0] == name else sides[0]
                if other != name and other in tables and tables[other] not in extra:
                    partners.setdefault(other, []).append(join)
        if not partners:
            continue
        other = sorted(partners)[0]
        base = f"{tables[other]} AS {other}"
        on = " AND ".join(partners[other])
        sql = (
            f"SELECT (SELECT COUNT(*) FROM {base}), "
            f"(SELECT COUNT(*) FROM {base} JOIN {table} AS {name} ON {on})"
        )
        found.append(Probe("join", table, sql))
    return found


def _filter_probes(gold: Sets, candidate: Sets) -> list[Probe]:
    if _windowed(gold) or _windowed(candidate):
        # A condition may then apply after a window read the rows it drops (QUALIFY, a WHERE
        # around a derived table): the rows feeding the answer are not the rows kept.
        return []
    gold_f, cand_f = list(gold.get("filters", ())), list(candidate.get("filters", ()))
    differing = set(gold_f) ^ set(cand_f)
    if not differing:
        return []
    owners = {_single_table(e) for e in differing}
    if len(owners) != 1 or None in owners:
        return []
    (name,) = owners
    table = {**_names(gold), **_names(candidate)}.get(str(name))
    if table is None:
        return []
    # Every condition on that table, on each side: the two conjunctions are compared whole.
    sides = [[e for e in side if _single_table(e) == name] for side in (gold_f, cand_f)]
    g, c = (" AND ".join(f"({e})" for e in side) or "TRUE" for side in sides)
    sql = (
        f"SELECT COUNT(*) FROM {table} AS {name} "
        f"WHERE COALESCE(({g}), FALSE) <> COALESCE(({c}), FALSE)"
    )
    return [Probe("filter", table, sql)]


def _windowed(sets: Sets) -> bool:
    """Whether the query computes a window function anywhere the sets show."""
    return any(
        (tree := element_tree(e)) is not None and tree.find(exp.Window) is not None
        for name in ("select", "aggregations", "filters")
        for e in sets.get(name, ())
    )


def _single_table(element: str) -> str | None:
    """The one table a plain row condition reads (no aggregate, window or subquery)."""
    tree = element_tree(element)
    if tree is None or tree.find(exp.AggFunc, exp.Window, exp.Subquery, exp.Exists) is not None:
        return None
    owners = {c.split(".")[0] for c in element_columns(element) if "." in c}
    return owners.pop() if len(owners) == 1 else None


def facts_from(answers: Mapping[Probe, bool]) -> DataFacts:
    """The item's facts from its probes' answers (a probe that failed gives no answer)."""
    return DataFacts(
        row_changing=frozenset(p.table for p, held in answers.items() if held and p.kind == "join"),
        same_rows=frozenset(p.table for p, held in answers.items() if held and p.kind == "filter"),
    )
