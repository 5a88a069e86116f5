"""Reading a question against the offered tables: the schema-linking baseline's parser.

The reader makes passes over the question's words, each consuming the words it links, in the
order a person reads an analytics question: the date window and time grain; the aggregate
words ("how many", "average", "what share of"); the top-k cut and thresholds ("more than 30
orders"); what is asked for ("which 3 sites"); filter values (codes from the notes, sampled
values, flags, signs); group-by phrases ("per region", "by product category and month");
other entities; comparisons ("below their reorder point"); last the measure. Tables are
joined along references between offered tables only; what cannot be joined is dropped and
said in the plan's notes.

It is a baseline with the mistakes of one: a country name is not a code, "customers without
orders" is not an anti-join, "for each X, the top 2 Y" is read as one global top 2.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from t2s_pipeline.agent.dates import Period, find_grain, find_period
from t2s_pipeline.agent.knowledge import ColumnInfo, Knowledge, TableInfo, ValueTerm
from t2s_pipeline.agent.plan import Condition, Group, Measure, Plan, Threshold, Window
from t2s_pipeline.agent.words import (
    FILLER_STEMS,
    NUMBER_WORDS,
    Word,
    decimal,
    number,
    split_words,
    stem,
)

_DESC = frozenset(
    {"most", "largest", "biggest", "highest", "greatest", "best", "furthest", "top", "busiest"}
    | {"strongest", "leading"}
)
_ASC = frozenset(
    {"lowest", "least", "fewest", "smallest", "cheapest", "worst", "bottom", "weakest"}
)
_PRICEY = {"expensive": True, "priciest": True, "cheapest": False}
_NEGATIONS = frozenset({"not", "excluding", "exclude", "except", "without", "non", "no", "never"})
_NEGATED_AFTER = frozenset({"excluded", "ignored", "aside", "omitted"})
_INCLUSIVE_BEFORE = frozenset({"including", "incl", "include", "includes", "inclusive"})
_INCLUSIVE_AFTER = frozenset({"included", "including", "too", "also"})
_NETTED_AFTER = frozenset({"deducted", "subtracted", "netted", "removed"})
_NETTED_BEFORE = frozenset({"after", "minus", "less"})
_GROUP_MARKERS = frozenset({"per", "by", "each", "every"})
_GROUP_JOINERS = frozenset({"and", "of", "the", "combination", "their", "our", "its", "a"})
_ASK_WORDS = frozenset({"which", "what", "who", "list", "show", "name"})
_ASK_SKIP = frozenset(
    {"are", "is", "were", "was", "the", "our", "we", "top", "bottom", "of", "all", "have", "had"}
)
_LESS = frozenset({"below", "under", "less", "lower", "fewer", "beneath"})
_MORE = frozenset({"above", "over", "more", "greater", "higher", "exceeding", "exceeds"})
_HAVE = frozenset({"got", "get", "gets", "with", "has", "have", "had", "received", "carry"})
_VALUE_WORDS = frozenset(
    stem(w) for w in ("value", "revenue", "sales", "turnover", "worth", "earned", "income")
)
_MONEY_HINTS = frozenset(stem(w) for w in ("amount", "price", "value", "total", "revenue"))
_GRAINS = frozenset({"day", "week", "month", "quarter", "year"})
_UNIT_WORDS = frozenset({"units", "pieces", "quantity", "quantities"})
_MONEY_WORDS = frozenset(stem(w) for w in ("money", "amount", "value", "revenue", "takings"))
_SHARE_WORDS = frozenset({"percentage", "percent", "share", "proportion", "fraction", "pct"})
_EXCLUDING_PART = frozenset({"before", "excluding", "without", "ex"})
_INCLUDING_PART = frozenset({"including", "incl", "plus", "with", "inc"})
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_THRESHOLD = re.compile(
    r"\b(more than|over|above|greater than|higher than|exceeding|at least|no fewer than"
    r"|fewer than|less than|lower than"
    r"|under|below|at most|no more than)\s+(\d+(?:p\d+)?)\b|\b(\d+(?:p\d+)?) or (more|fewer|less)\b"
)
_THRESHOLD_OPS = {
    "more than": ">",
    "over": ">",
    "above": ">",
    "greater than": ">",
    "higher than": ">",
    "lower than": "<",
    "exceeding": ">",
    "at least": ">=",
    "no fewer than": ">=",
    "fewer than": "<",
    "less than": "<",
    "under": "<",
    "below": "<",
    "at most": "<=",
    "no more than": "<=",
    "more": ">=",
    "fewer": "<=",
    "less": "<=",
}


@dataclass(frozen=True)
class Conventions:
    """House style learnt from the allowed examples (see ``compose.conventions``)."""

    round_to: int | None = None
    closed_windows: bool = False
    key_with_name: bool = False
    sorted_groups: bool = False  # grouped answers ordered by their group keys
    tie_break: bool = False  # a top-k cut breaks ties by the first group key
    month_format: str | None = None  # months written as text, e.g. '%Y-%m'


@dataclass
class _Cue:
    func: str
    at: int


@dataclass
class _Threshold:
    op: str
    value: float
    at: int  # the word after the number


@dataclass
class _State:
    words: list[Word]
    used: list[bool]
    notes: list[str] = field(default_factory=list)

    def free(self, i: int) -> bool:
        return 0 <= i < len(self.words) and not self.used[i]

    def take(self, start: int, end: int) -> None:
        for i in range(max(0, start), min(end, len(self.words))):
            self.used[i] = True

    def lower(self, i: int) -> str:
        return self.words[i].lower if 0 <= i < len(self.words) else ""

    def before(self, i: int, n: int) -> set[str]:
        return {self.words[j].lower for j in range(max(0, i - n), i)}

    def after(self, i: int, n: int) -> set[str]:
        return {self.words[j].lower for j in range(i, min(len(self.words), i + n))}


def read_question(
    question: str,
    knowledge: Knowledge,
    as_of: dt.date,
    date_windows: str = "calendar",
    conventions: Conventions | None = None,
) -> Plan | None:
    """The plan for a question over the offered tables, or None when nothing links.

    >>> from t2s_pipeline.agent.documents import demo_tables
    >>> from t2s_pipeline.agent.knowledge import read_knowledge
    >>> k = read_knowledge(demo_tables(["sales"]))
    >>> plan = read_question("How many orders per sales channel?", k, dt.date(2025, 6, 30))
    >>> plan.base, [m.func for m in plan.measures], [g.column.name for g in plan.groups]
    ('sales.orders', ['count'], ['channel_cd'])
    """
    return _Reader(question, knowledge, as_of, date_windows, conventions or Conventions()).read()


def normalise(question: str) -> str:
    """Spell out what splitting into words would lose: hyphens, ``%``, decimal points, and
    number words.

    >>> normalise("Top five items year-to-date, share above 7.5%")
    'Top 5 items year to date, share above 7p5 percent'
    """
    text = re.sub(r"(\d+)\.(\d+)", r"\1p\2", question)
    text = re.sub(r"(\w)-(?=\w)", r"\1 ", text)
    text = re.sub(r"\s*%", " percent", text)
    return _NUMBER_WORD.sub(lambda m: str(NUMBER_WORDS[m[0].lower()]), text)


class _Reader:
    def __init__(
        self,
        question: str,
        knowledge: Knowledge,
        as_of: dt.date,
        mode: str,
        conventions: Conventions,
    ) -> None:
        self.k = knowledge
        self.conventions = conventions
        text = normalise(question)
        self.period: Period | None = find_period(text, as_of, mode)
        grain = find_grain(text)
        self.grain = grain[0] if grain else None
        for start, end in [s for s in (self.period and self.period.span, grain and grain[1]) if s]:
            text = text[:start] + " " * (end - start) + text[end:]
        self.text = text
        words = split_words(text)
        self.s = _State(words, [False] * len(words))
        self.all_stems = {w.stem for w in words}
        self.asked_plural = False
        self.k_at: int | None = None
        self.netted = False
        self.positive = False
        self.cued = False
        self.counted_columns: dict[int, ColumnInfo] = {}

    # --- the passes ------------------------------------------------------------------------

    def read(self) -> Plan | None:
        if not self.k.tables:
            return None
        cues = self._cues()
        thresholds = self._thresholds()
        limit, descending, price_order = self._top_k()
        asked = self._asked()
        conditions, enumerated = self._values(asked)
        self.counted_columns = self._counted_columns(cues)
        groups, per_table, order_hint = self._groups(enumerated)
        entities = self._entities()
        conditions += self._comparisons()
        if isinstance(asked, ColumnInfo):
            groups = [Group(asked), *groups]
        measures = self._measures(cues, entities, asked, order_hint, price_order, conditions)
        if descending is not None and limit is None and (asked is not None or groups):
            limit = None if self.asked_plural else 1
        if descending is None and limit is not None:
            descending = True
        self.cued = any(c.func != "distinct" for c in cues)
        return self._assemble(
            measures, groups, conditions, asked, entities, per_table, limit, descending, thresholds
        )

    def _cues(self) -> list[_Cue]:
        """Aggregate words; "net of" and "as positive amounts" are noted, not measures."""
        s, cues = self.s, []
        for i, word in enumerate(s.words):
            two = (word.lower, s.lower(i + 1))
            if two == ("how", "many") and s.lower(i + 2) in ("percent", "percentage"):
                cues.append(_Cue("share", i))
                s.take(i, i + 3)
            elif two in {("how", "many"), ("number", "of"), ("how", "often")}:
                cues.append(_Cue("count", i))
                s.take(i, i + 2)
            elif two == ("how", "much"):
                cues.append(_Cue("sum", i))
                s.take(i, i + 2)
            elif two == ("net", "of"):
                self.netted = True
                s.take(i, i + 2)
            elif s.free(i) and (
                (word.lower in _SHARE_WORDS and self._share_said(i))
                or (word.lower == "rate" and i > 0)
            ):
                cues.append(_Cue("share", i))
                s.take(i, i + 1)
            elif word.lower in ("average", "mean", "avg") and s.free(i):
                cues.append(_Cue("avg", i))
                s.take(i, i + 1)
            elif word.lower in ("total", "sum", "overall") and s.free(i):
                cues.append(_Cue("sum", i))
                s.take(i, i + 1)
            elif word.lower == "count" and s.free(i):
                cues.append(_Cue("count", i))
                s.take(i, i + 1)
            elif word.lower in ("maximum", "max", "minimum", "min"):
                cues.append(_Cue("max" if word.lower.startswith("max") else "min", i))
                s.take(i, i + 1)
            elif word.lower in ("distinct", "different", "unique"):
                cues.append(_Cue("distinct", i))
                s.take(i, i + 1)
            elif word.lower == "positive" and s.free(i):
                self.positive = True
                s.take(i, i + 1)
        return cues

    def _units_said(self) -> bool:
        """ "units", "pieces", "quantity" (not "unit price"): a quantity is summed."""
        return any(w.lower in _UNIT_WORDS and self.s.free(i) for i, w in enumerate(self.s.words))

    def _counted_columns(self, cues: list[_Cue]) -> dict[int, ColumnInfo]:
        """ "how many countries", "count the distinct categories": a text column right after
        a count word counts its distinct values."""
        s, found = self.s, {}
        for cue in cues:
            if cue.func != "count":
                continue
            j = cue.at + (1 if s.lower(cue.at) == "count" else 2)
            while j < len(s.words) and (
                s.lower(j) in ("the", "of", "our", "all")
                or (s.used[j] and s.lower(j) in ("distinct", "different", "unique"))
            ):
                j += 1
            if s.lower(j) in _UNIT_WORDS or j >= len(s.words) or s.words[j].stem in FILLER_STEMS:
                continue
            named = self._link_at(j, take=False)
            if isinstance(named, ColumnInfo) and named.kind == "text":
                self._link_at(j)
                found[cue.at] = named
        return found

    def _share_said(self, i: int) -> bool:
        """ "percentage of", "as a share of", "in percent" after another figure: a share;
        "discount percentage" names a column."""
        s = self.s
        if s.lower(i + 1) == "of" or s.lower(i - 1) in ("a", "what", "the"):
            return True
        return s.lower(i - 1) == "in" and any(w in s.after(0, len(s.words)) for w in ("of", "each"))

    def _thresholds(self) -> list[_Threshold]:
        """ "more than 30 orders", "at least 20 customers", "7p5 percent": kept for HAVING or
        a row filter once the figure is known."""
        s, found = self.s, []
        lower = [w.lower for w in s.words]
        text = " ".join(lower)
        for match in _THRESHOLD.finditer(text):
            phrase = match[1] or match[4]
            value = match[2] or match[3]
            words_before = len(text[: match.start()].split())
            width = len(match[0].split())
            number_at = words_before + (width - 1 if match[1] else 0)
            amount_value = decimal(s.words[number_at]) if number_at < len(s.words) else None
            if amount_value is None or value is None:
                continue
            s.take(words_before, words_before + width)
            op = _THRESHOLD_OPS[phrase]
            if (op, amount_value) in ((">=", 1.0), (">", 0.0)):
                continue  # "at least one": the join already says so
            found.append(_Threshold(op, amount_value, words_before + width))
        for i in range(len(s.words) - 1):
            if s.lower(i) == "at" and s.lower(i + 1) in ("least", "most"):
                s.take(i, i + 2)
        return found

    def _top_k(self) -> tuple[int | None, bool | None, bool | None]:
        s = self.s
        descending: bool | None = None
        price_order: bool | None = None
        for i, word in enumerate(s.words):
            if not s.free(i):
                continue
            if word.lower in _PRICEY:
                price_order = _PRICEY[word.lower]
                descending = price_order
                s.take(i, i + 1)
                if s.lower(i - 1) in ("most", "least"):
                    s.take(i - 1, i)
            elif word.lower in _DESC:
                descending = True if descending is None else descending
                s.take(i, i + 1)
            elif word.lower in _ASC:
                descending = False if descending is None else descending
                s.take(i, i + 1)
        if descending is None:
            return None, None, None
        for i, word in enumerate(s.words):
            value = number(word)
            if value is not None and s.free(i) and value < 1000:
                s.take(i, i + 1)
                self.k_at = i
                return value, descending, price_order
        return None, descending, price_order

    def _asked(self) -> ColumnInfo | TableInfo | None:
        """What a which/what/who question asks for, or what a top-k counts ("bottom three
        sites"): a column ("which categories") or the rows of a table ("which 3 sites")."""
        s = self.s
        starts = [i + 1 for i, w in enumerate(s.words) if w.lower in _ASK_WORDS][:1]
        figure = starts and s.lower(starts[0] - 1) == "what" and s.lower(starts[0]) in ("is", "was")
        if figure and not s.after(starts[0], 4) & (_DESC | _ASC | set(_PRICEY)):
            starts = []  # "what is our cancellation rate": a figure is asked for
        if self.k_at is not None:
            starts.append(self.k_at + 1)
        for j in starts:
            while j < len(s.words) and (
                s.lower(j) in _ASK_SKIP
                or number(s.words[j]) is not None
                or s.words[j].lower in _DESC | _ASC
            ):
                j += 1
            if j < len(s.words) and s.used[j]:
                continue  # "what is the average ...": a figure is asked for
            found = self._link_at(j)
            if found is not None:
                return found
        return None

    def _link_at(self, j: int, take: bool = True) -> ColumnInfo | TableInfo | None:
        """The column or table named by the words starting at ``j`` (up to three)."""
        s = self.s
        for width in (3, 2, 1):
            if not all(s.free(i) for i in range(j, j + width)):
                continue
            stems = tuple(s.words[i].stem for i in range(j, j + width))
            if stems[-1] in FILLER_STEMS:
                continue
            column = self._column_named(stems, kinds=("text", "bool", "date"))
            table = self._table_named(stems) or self._table_named(stems[-1:])
            first = self._table_named(stems[:1])
            if width > 1 and first is not None and _plural(s.words[j]):
                column, table, width = None, first, 1  # "customers created today"
            found: ColumnInfo | TableInfo | None = None
            if column is not None and (table is None or width > 1):
                found = column
            elif table is not None and (width == 1 or self._table_named(stems)):
                found = table
            if found is None and table is not None and width == 2 and stems[0] not in FILLER_STEMS:
                found, j, width = table, j + 1, 1  # "delivered orders": the noun
            if found is not None:
                if take:
                    s.take(j, j + width)
                    self.asked_plural = _plural(s.words[j + width - 1])
                return found
        return None

    def _values(self, asked: object) -> tuple[list[Condition], set[str]]:
        """Filter values: codes and flags from the notes, sampled values, signs."""
        s = self.s
        focus = {t.name for t in self._mentioned_tables()}
        if isinstance(asked, TableInfo):
            focus.add(asked.name)
        chosen: list[tuple[ValueTerm, bool]] = []
        i = 0
        while i < len(s.words):
            match = self._term_at(i, focus)
            if match is None:
                i += 1
                continue
            term, width = match
            s.take(i, i + width)
            before, after = s.before(i, 3), s.after(i + width, 2)
            inclusive = before & _INCLUSIVE_BEFORE or after & _INCLUSIVE_AFTER
            netted = term.op != "=" and bool(
                self.netted or after & _NETTED_AFTER or before & _NETTED_BEFORE
            )
            if not inclusive and not netted:
                right = s.lower(i + width), s.lower(i + width + 1)
                negated = bool(before & _NEGATIONS) or (
                    right[0] in _NEGATED_AFTER or right in {("not", "counted"), ("not", "included")}
                )
                chosen.append((term, negated))
                chosen.extend((t, negated) for t in self._elided(i, term))
            i += width
        return self._merge(chosen)

    def _elided(self, i: int, term: ValueTerm) -> list[ValueTerm]:
        """ "credit and debit card": "credit" borrows "card" from the phrase after it."""
        s = self.s
        if len(term.phrase) < 2 or s.lower(i - 1) not in ("and", "or") or i < 2:
            return []
        borrowed = (s.words[i - 2].stem, *term.phrase[1:])
        found = [t for t in self.k.terms if t.column == term.column and t.phrase == borrowed]
        if found:
            s.take(i - 2, i - 1)
        return found[:1]

    def _term_at(self, i: int, focus: set[str]) -> tuple[ValueTerm, int] | None:
        s = self.s
        for width in (4, 3, 2, 1):
            if not all(s.free(j) for j in range(i, i + width)):
                continue
            stems = tuple(s.words[j].stem for j in range(i, i + width))
            texts = tuple(s.words[j].text for j in range(i, i + width))
            if width == 1 and stems[0] in FILLER_STEMS:
                continue
            found = self.k.terms_said(stems, texts)
            found = [t for t in found if t.strength > 0 or self._status_said(i, width)]
            if found:
                return max(found, key=lambda t: self._term_rank(t, focus)), width
        return None

    def _status_said(self, i: int, width: int) -> bool:
        """An initial state ("placed") filters only when the question speaks of a status."""
        s = self.s
        return bool(
            s.lower(i - 1) == "status"
            or s.before(i, 2) & {"still", "currently", "only"}
            or s.lower(i + width) == "status"
        )

    def _term_rank(self, term: ValueTerm, focus: set[str]) -> tuple[int, int, int, int]:
        order = list(self.k.tables)
        return (
            term.strength,
            int(term.column.table in focus),
            {"note": 2, "sample": 1, "name": 0}[term.source],
            -order.index(term.column.table),
        )

    def _merge(self, chosen: list[tuple[ValueTerm, bool]]) -> tuple[list[Condition], set[str]]:
        """One condition per column and polarity: several values become IN, all the values
        of a column a breakdown by it."""
        by_column: dict[tuple[str, bool], list[ValueTerm]] = {}
        for term, negated in chosen:
            by_column.setdefault((term.column.ref, negated), []).append(term)
        conditions, enumerated = [], set()
        for (_, negated), terms in by_column.items():
            column, op = terms[0].column, terms[0].op
            if op in ("<", ">"):
                flipped = {"<": ">=", ">": "<="}[op] if negated else op
                conditions.append(Condition(column, flipped, terms[0].values, kind="sign"))
                continue
            values = tuple(dict.fromkeys(v for t in terms for v in t.values))
            every = self._all_values(column)
            if not negated and len(values) > 1 and every and set(values) >= every:
                enumerated.add(column.ref)
                continue
            if len(values) == 1:
                conditions.append(Condition(column, "<>" if negated else "=", values))
            else:
                conditions.append(Condition(column, "NOT IN" if negated else "IN", values))
        return _without_excluded(conditions), enumerated

    def _all_values(self, column: ColumnInfo) -> set[object]:
        return {v for t in self.k.terms if t.column == column and t.op == "=" for v in t.values}

    def _groups(
        self, enumerated: set[str]
    ) -> tuple[list[Group], TableInfo | None, ColumnInfo | None]:
        """Group-by phrases after per/by/each/every; a measure named after "by" orders."""
        s = self.s
        groups = [Group(self._column_by_ref(ref)) for ref in sorted(enumerated)]
        per_table: TableInfo | None = None
        order_hint: ColumnInfo | None = None
        for i, word in enumerate(s.words):
            if word.lower not in _GROUP_MARKERS or not s.free(i):
                continue
            s.take(i, i + 1)
            j, phrase = i + 1, list[int]()
            while j < len(s.words) and len(phrase) < 7:
                if s.used[j] and word.lower == "by":
                    phrase = []  # "sold by the box": a value, not a breakdown
                    break
                if s.used[j] or (
                    s.words[j].stem in FILLER_STEMS and s.lower(j) not in _GROUP_JOINERS
                ):
                    break
                phrase.append(j)
                j += 1
            for part in _split_and(s, phrase):
                found = None
                for end in range(len(part), 0, -1):  # "region, based on ...": the region
                    found = self._group_part(part[:end])
                    if found is not None:
                        break
                if isinstance(found, Group):
                    groups.append(found)
                elif isinstance(found, TableInfo):
                    if word.lower in ("per", "each") and per_table is None:
                        per_table = found
                    groups.extend(Group(c) for c in self._labels(found))
                elif isinstance(found, ColumnInfo):
                    order_hint = found
        return groups, per_table, order_hint

    def _group_part(self, part: list[int]) -> Group | TableInfo | ColumnInfo | None:
        s = self.s
        stems = tuple(s.words[i].stem for i in part)
        content = tuple(x for x in stems if x not in FILLER_STEMS)
        if not content:
            return None
        if content[-1] in _GRAINS:
            s.take(part[0], part[-1] + 1)
            self.grain = self.grain or content[-1]
            return None
        column = self._column_named(content, kinds=("text", "bool", "date"))
        table = self._table_named(content) or self._table_named(content[-1:])
        measure = self._column_named(content, kinds=("number",))
        found: Group | TableInfo | ColumnInfo | None = None
        if column is not None and (table is None or len(content) > 1):
            found = Group(column)
        elif table is not None:
            found = table
        elif measure is not None:
            found = measure
        if found is not None:
            s.take(part[0], part[-1] + 1)
        return found

    def _entities(self) -> list[tuple[TableInfo, int]]:
        """Tables the question names ("orders", "customers"); in "customer orders" the
        first noun only qualifies the second."""
        s, found = self.s, list[tuple[TableInfo, int]]()
        for i in range(len(s.words)):
            for width in (2, 1):
                if not all(s.free(j) for j in range(i, i + width)):
                    continue
                table = self._table_named(tuple(s.words[j].stem for j in range(i, i + width)))
                if table is not None:
                    s.take(i, i + width)
                    modifier = found and found[-1][1] == i - 1 and found[-1][0] != table
                    if modifier and not _plural(s.words[i - 1]):
                        found.pop()  # "customer orders": the orders of customers
                    found.append((table, i))
                    break
        return found

    def _mentioned_tables(self) -> list[TableInfo]:
        stems = [w.stem for w in self.s.words]
        return [
            t
            for t in self.k.tables.values()
            if any(_contains(stems, phrase) for phrase in t.entity_phrases)
        ]

    def _figure_follows(self, i: int) -> bool:
        """ "discounted line revenue": the adjective qualifies a figure, it filters nothing."""
        after = {w.stem for w in self.s.words[i + 1 : i + 3]}
        return bool(after & (_VALUE_WORDS | _MONEY_WORDS | {"total", "amount"}))

    def _comparisons(self) -> list[Condition]:
        """ "below their reorder point" (two columns), "got a discount" (above zero)."""
        s, out = self.s, []
        for i, word in enumerate(s.words):
            if not s.free(i):
                continue
            if word.lower in _LESS | _MORE:
                j = i + 1
                while j < len(s.words) and s.lower(j) in {"than", "their", "the", "its", "a"}:
                    j += 1
                target = self._column_at(j, ("number",))
                other = None if target is None else self._companion(target[0])
                if target is not None and other is not None:
                    s.take(i, j + target[1])
                    op = "<" if word.lower in _LESS else ">"
                    out.append(Condition(other, op, (), target[0], kind="compare"))
            elif word.lower in ("negative", "positive"):
                target = self._column_at(i + 1, ("number",))
                if target is not None:
                    s.take(i, i + 1 + target[1])
                    op = "<" if word.lower == "negative" else ">"
                    out.append(Condition(target[0], op, (0,), kind="compare"))
            elif (
                word.lower.endswith("ed")
                and not self._figure_follows(i)
                and (
                    (i + 1 < len(s.words) and self._table_named((s.words[i + 1].stem,)) is not None)
                    or s.lower(i - 1) in ("are", "were", "is", "was", "been", "be")
                )
            ):
                target = self._column_at(i, ("number",))  # "discounted lines"
                if target is not None:
                    s.take(i, i + 1)
                    out.append(Condition(target[0], ">", (0,), kind="compare"))
            elif word.lower in _HAVE and s.lower(i + 1) in ("a", "an", "any"):
                target = self._column_at(i + 2, ("number",))
                if target is not None:
                    s.take(i, i + 2 + target[1])
                    out.append(Condition(target[0], ">", (0,), kind="compare"))
        return out

    # --- measures --------------------------------------------------------------------------

    def _measures(
        self,
        cues: list[_Cue],
        entities: list[tuple[TableInfo, int]],
        asked: object,
        order_hint: ColumnInfo | None,
        price_order: bool | None,
        conditions: list[Condition],
    ) -> list[Measure]:
        if order_hint is not None:
            funcs = [c.func for c in cues if c.func != "distinct"]
            if "count" not in funcs:
                return [Measure(funcs[0] if funcs else "sum", (order_hint,))]
        if price_order is not None:
            price = self._best_column(("pric",), entities, asked)
            if price is not None:
                return [Measure("value", (price,))]
        measures = []
        for slot in self._slots(cues):
            measure = self._slot_measure(slot, entities, asked, conditions)
            if measure is not None and measure not in measures:
                measures.append(measure)
        if not cues:
            stems = tuple(w.stem for i, w in enumerate(self.s.words) if self.s.free(i))
            if self._units_said():
                quantity = self._quantity_column(stems, entities, asked)
                if quantity is not None:
                    return [Measure("sum", (quantity,))]
            _, score = self._scored_column(stems, entities, asked)
            counted = self._counted_after_superlative(entities)
            if counted is not None and score < 2:
                return [_rows_of(counted)]
            money = bool(self.all_stems & _MONEY_WORDS)
            measure = self._amount("sum", entities, asked, conditions, required=money)
            if measure is not None:
                measures.append(measure)
        return measures

    def _slots(self, cues: list[_Cue]) -> list[list[_Cue]]:
        """One measure per group of cues; "and" between two cues starts another measure."""
        slots: list[list[_Cue]] = []
        for cue in cues:
            if slots and not ({"and"} & {self.s.lower(j) for j in range(slots[-1][-1].at, cue.at)}):
                slots[-1].append(cue)
            else:
                slots.append([cue])
        return slots

    def _slot_measure(
        self,
        slot: list[_Cue],
        entities: list[tuple[TableInfo, int]],
        asked: object,
        conditions: list[Condition],
    ) -> Measure | None:
        funcs = [c.func for c in slot]
        distinct = "distinct" in funcs
        main = next((f for f in funcs if f != "distinct"), "count")
        start = slot[0].at
        if "share" in funcs:
            return self._share(entities, asked, conditions, funcs)
        if "avg" in funcs and "count" in funcs:
            counted = self._count(start, entities, asked, distinct)
            if counted.func == "sum":
                return Measure("ratio", counted.columns)
            return Measure("ratio", (), formula=counted.formula)
        if main == "count":
            return self._count(start, entities, asked, distinct)
        return self._amount(main, entities, asked, conditions)

    def _count(
        self, start: int, entities: list[tuple[TableInfo, int]], asked: object, distinct: bool
    ) -> Measure:
        """What "how many" counts: units (a quantity summed), a column's distinct values
        ("how many countries"), or the rows of a table."""
        s = self.s
        content = [i for i in range(start, len(s.words)) if s.words[i].stem not in FILLER_STEMS][:3]
        for i in content[:2]:
            if s.free(i) and s.words[i].lower in _UNIT_WORDS:
                stems = tuple(s.words[j].stem for j in range(i, len(s.words)) if s.free(j))
                column = self._quantity_column(stems, entities, asked)
                if column is not None:
                    s.take(i, i + 1)
                    return Measure("sum", (column,))
        if start in self.counted_columns:
            return Measure("count", (self.counted_columns[start],), distinct=True)
        target = next((t for t, at in entities if at == start - 1), None)
        target = target or next((t for t, at in entities if at >= start), None)
        if target is None and isinstance(asked, TableInfo):
            target = asked
        if target is None and entities:
            target = entities[0][0]
        if target is None:
            return Measure("count", (), distinct=distinct)
        if distinct and target.key is not None:
            return Measure("count", (target.key,), distinct=True)
        return _rows_of(target)

    def _share(
        self,
        entities: list[tuple[TableInfo, int]],
        asked: object,
        conditions: list[Condition],
        funcs: list[str],
    ) -> Measure:
        """A percentage: of the rows that meet the question's values, of another measure
        ("VAT as a percentage of net"), or of the grand total across the groups."""
        s = self.s
        stems = tuple(w.stem for i, w in enumerate(s.words) if s.free(i))
        first, score = self._scored_column(stems, entities, asked)
        part = tuple(c for c in conditions if c.kind != "sign")
        mentioned = self._number_columns_in_order()
        if len(mentioned) >= 2 and mentioned[0][1].table == mentioned[1][1].table:
            (first_at, top), (_, whole) = mentioned[:2]
            if self._whole_first(first_at):
                top, whole = whole, top  # "percent of the net amount ... as tax"
            return Measure("share", (top,), whole=(whole,), scale=100)
        if first is None and self.all_stems & _MONEY_WORDS:
            money = self._amount("sum", entities, asked, conditions)
            first = money.columns[0] if money is not None and money.columns else None
            score = 1.0 if first is not None else 0.0
        if first is not None and score >= 1:
            return Measure("share", (first,), part=part, scale=100)
        target = next((t for t, _ in entities), None)
        if target is None and isinstance(asked, TableInfo):
            target = asked
        counted = _rows_of(target) if target is not None else Measure("count")
        return Measure("share", (), part=part, scale=100, formula=counted.formula)

    def _number_columns_in_order(self) -> list[tuple[int, ColumnInfo]]:
        """Number columns a name word links to, in the order the question says them."""
        s, seen = self.s, list[tuple[int, ColumnInfo]]()
        for i in range(len(s.words)):
            if not s.free(i) or s.words[i].stem in FILLER_STEMS:
                continue
            found = self._column_at(i, ("number",))
            known = [c for _, c in seen]
            if found is not None and found[0] not in known and not found[0].is_identifier:
                seen.append((i, found[0]))
        return seen

    def _whole_first(self, at: int) -> bool:
        """Whether the first figure named is the whole: it follows "percentage of" (and
        no "as a" ... "of" puts the whole after it)."""
        s = self.s
        before = [s.lower(j) for j in range(max(0, at - 4), at)]
        return "of" in before and bool(set(before) & _SHARE_WORDS) and "as" not in before

    def _counted_after_superlative(self, entities: list[tuple[TableInfo, int]]) -> TableInfo | None:
        s = self.s
        for table, at in entities:
            if any(s.lower(j) in _DESC | _ASC for j in range(max(0, at - 3), at)):
                return table
        return None

    def _amount(
        self,
        func: str,
        entities: list[tuple[TableInfo, int]],
        asked: object,
        conditions: list[Condition],
        required: bool = True,
    ) -> Measure | None:
        s = self.s
        negate = self.positive and any(c.kind == "sign" and c.op == "<" for c in conditions)
        part_of = self._part_of_total()
        if part_of is not None:
            return Measure(func, (part_of,), negate=negate)
        stems = tuple(w.stem for i, w in enumerate(s.words) if s.free(i))
        if self._units_said():
            quantity = self._quantity_column(stems, entities, asked)
            if quantity is not None:
                return Measure(func, (quantity,), negate=negate)
        derived = self._derived(stems, entities)
        filtered = {c.column.table for c in conditions}
        column, score = self._scored_column(stems, entities, asked, focus=filtered)
        if derived is not None and derived[1] > score:
            measure = derived[0]
            return Measure(func, measure.columns, measure.formula, negate=negate)
        if column is not None and score >= 1:
            return Measure(func, (column,), negate=negate)
        if not required:
            return None
        for condition in conditions:
            if condition.column.kind == "number" and not condition.column.is_identifier:
                return Measure(func, (condition.column,), negate=negate)
        tables = [t for t, _ in entities] + ([asked] if isinstance(asked, TableInfo) else [])
        tables += [self.k.tables[c.column.table] for c in conditions]
        for table in tables:
            money = _money_column(table)
            if money is not None:
                return Measure(func, (money,), negate=negate)
        self.s.notes.append("no measure column linked")
        return None

    def _part_of_total(self) -> ColumnInfo | None:
        """ "including VAT" -> the column whose note adds VAT to another; "before VAT" or
        "excluding tax" -> the other part of that sum."""
        s = self.s
        for i, word in enumerate(s.words):
            including = word.lower in _INCLUDING_PART
            if not (including or word.lower in _EXCLUDING_PART) or not s.free(i + 1):
                continue
            named = self._column_at(i + 1, ("number",))
            if named is None:
                continue
            column, width = named
            for total in self.k.tables[column.table].columns:
                if column.name not in total.summands:
                    continue
                s.take(i, i + 1 + width)
                if including:
                    return total
                other = next(n for n in total.summands if n != column.name)
                return self.k.tables[column.table].column(other)
        return None

    def _derived(
        self, stems: tuple[str, ...], entities: list[tuple[TableInfo, int]]
    ) -> tuple[Measure, float] | None:
        """Line value = quantity x price (x (1 - discount %)) for "value", "revenue", "sales"."""
        spelled = {"quantity", "pric"} <= self.all_stems  # "quantity times unit price"
        after_discount = "discount" in self.all_stems and "after" in self.text.lower().split()
        if not (self.all_stems & _VALUE_WORDS or spelled or after_discount):
            return None
        best: tuple[Measure, float] | None = None
        for table in self.k.tables.values():
            numbers = [c for c in table.columns if c.kind == "number" and not c.is_identifier]
            quantity = next((c for c in numbers if "quantity" in c.name_stems), None)
            price = next((c for c in numbers if "pric" in c.name_stems), None)
            if quantity is None or price is None:
                continue
            score = 1.0 + (1.0 if any(t.name == table.name for t, _ in entities) else 0.0)
            score += 2.0 if spelled else 0.0
            discount = next((c for c in numbers if "discount" in c.name_stems), None)
            measure = Measure("sum", (quantity, price), "product")
            if discount is not None and "discount" in self.all_stems:
                score += 1.0
                measure = Measure("sum", (quantity, price, discount), "discounted")
            if best is None or score > best[1]:
                best = (measure, score)
        return best

    # --- linking helpers -------------------------------------------------------------------

    def _scored_column(
        self,
        stems: Iterable[str],
        entities: list[tuple[TableInfo, int]],
        asked: object,
        exclude: ColumnInfo | None = None,
        focus: Iterable[str] = (),
    ) -> tuple[ColumnInfo | None, float]:
        """The number column the words name best; columns of named (or filtered) tables
        win ties."""
        focus = {t.name for t, _ in entities} | set(focus)
        if isinstance(asked, TableInfo):
            focus.add(asked.name)
        best: tuple[ColumnInfo | None, float, float] = (None, 0.0, 0.0)
        content = [x for x in stems if x not in FILLER_STEMS]
        for column in self.k.columns:
            if column.kind != "number" or column.is_identifier or column == exclude:
                continue
            score = _score(column, self.k.tables[column.table], content)
            if score <= 0:
                continue
            ranked = score + (2.0 if column.table in focus else 0.0)
            if ranked > best[2]:
                best = (column, score, ranked)
        return best[0], best[1]

    def _best_column(
        self, stems: tuple[str, ...], entities: list[tuple[TableInfo, int]], asked: object
    ) -> ColumnInfo | None:
        column, score = self._scored_column(stems, entities, asked)
        return column if score > 0 else None

    def _quantity_column(
        self, stems: tuple[str, ...], entities: list[tuple[TableInfo, int]], asked: object
    ) -> ColumnInfo | None:
        """What "units" counts: a quantity column (by name, or a note that starts "Units")."""
        focus = {t.name for t, _ in entities} | (
            {asked.name} if isinstance(asked, TableInfo) else set()
        )
        best: tuple[ColumnInfo | None, float] = (None, -1.0)
        for column in self.k.columns:
            if column.kind != "number" or column.is_identifier:
                continue
            if "quantity" not in column.name_stems and column.note_stems[:1] != ("unit",):
                continue
            score = _score(column, self.k.tables[column.table], stems)
            score += 0.5 if column.table in focus else 0.0
            if score > best[1]:
                best = (column, score)
        return best[0]

    def _column_named(self, stems: tuple[str, ...], kinds: tuple[str, ...]) -> ColumnInfo | None:
        """The column whose name or note the stems name best (its head word among them, and
        a name word or two note words); keys and labels stand for their table instead."""
        best: tuple[ColumnInfo | None, float] = (None, 0.0)
        content = [x for x in stems if x not in FILLER_STEMS]
        if not content:
            return None
        for column in self.k.columns:
            table = self.k.tables[column.table]
            if column.kind not in kinds or column in table.label or column == table.key:
                continue
            if column.kind == "text" and column.is_identifier:
                continue
            score = _score(column, table, content)
            head = content[-1] in set(column.name_stems) | set(column.note_stems)
            needed = 1 if column.kind == "number" else 2
            if head and score >= needed and score > best[1]:
                best = (column, score)
        return best[0]

    def _column_at(self, j: int, kinds: tuple[str, ...]) -> tuple[ColumnInfo, int] | None:
        s = self.s
        for width in (3, 2, 1):
            if not all(s.free(i) for i in range(j, j + width)):
                continue
            column = self._column_named(tuple(s.words[i].stem for i in range(j, j + width)), kinds)
            if column is not None:
                return column, width
        return None

    def _table_named(self, stems: tuple[str, ...]) -> TableInfo | None:
        for table in self.k.tables.values():
            if stems in table.entity_phrases:
                return table
        return None

    def _companion(self, column: ColumnInfo) -> ColumnInfo | None:
        """The quantity a threshold column is compared with: the table's other number."""
        for other in self.k.tables[column.table].columns:
            if other.kind == "number" and not other.is_identifier and other != column:
                return other
        return None

    def _column_by_ref(self, ref: str) -> ColumnInfo:
        return next(c for c in self.k.columns if c.ref == ref)

    def _labels(self, table: TableInfo) -> tuple[ColumnInfo, ...]:
        """What names a row of the table in an answer: a unique name, else key and name (or
        key and name whenever the examples show both)."""
        label, key = table.label, table.key
        named = bool(label) and label[0] != key
        if named and key is not None:
            unique = f"{table.name}.{label[0].name}" in self.k.unique
            if self.conventions.key_with_name or not unique:
                return (key, label[0])
        return label

    # --- assembling ------------------------------------------------------------------------

    def _assemble(
        self,
        measures: list[Measure],
        groups: list[Group],
        conditions: list[Condition],
        asked: object,
        entities: list[tuple[TableInfo, int]],
        per_table: TableInfo | None,
        limit: int | None,
        descending: bool | None,
        thresholds: list[_Threshold],
    ) -> Plan | None:
        base = self._base(measures, asked, entities, conditions, groups)
        if base is None:
            return None
        counted = [
            t for m in measures if m.func in ("count", "share", "ratio") if (t := _table_of(m))
        ]
        extra = self._events(counted, entities, asked)
        having, conditions = self._apply_thresholds(thresholds, measures, conditions, entities)
        listing = (
            isinstance(asked, TableInfo)
            and not self.cued
            and (not measures or all(_table_of(m) in (None, asked.name) for m in measures))
            and not having
        )
        if (
            isinstance(asked, TableInfo)
            and not listing
            and not any(g.column.table == asked.name for g in groups)
        ):
            groups = [*(Group(c) for c in self._labels(asked)), *groups]
        if listing and isinstance(asked, TableInfo):
            groups = [g for g in groups if g.column.table != asked.name]
            labels = [Group(c) for c in self._labels(asked)]
            values = [Measure("value", m.columns, m.formula) for m in measures if m.columns]
            money = _money_column(asked)
            if descending is not None and not values and money is not None:
                values = [Measure("value", (money,))]
            return self._finish(
                base, values, [*labels, *groups], conditions, limit, descending, extra, ()
            )
        parts = {c for m in measures for c in m.part}
        conditions = [c for c in conditions if c not in parts]
        if having and not measures:
            measures = [h.measure for h in having]
        if per_table is not None and per_table.name == base:
            # "mean discount per order line": an average over the rows of the base itself
            groups = [
                g for g in groups if g.column.table != base or g.column not in per_table.label
            ]
            per_table = None
        if not measures and groups and entities and not self.all_stems & _MONEY_WORDS:
            measures = [_rows_of(entities[0][0])]  # "split the orders by channel"
        measures = self._per_entity(measures, groups, per_table, base)
        if per_table is not None and measures and measures[0].func == "ratio":
            groups = [g for g in groups if g.column.table != per_table.name]
        if not measures and not groups:
            names = self._labels(self.k.tables[base])
            if names:
                return self._finish(
                    base, [], [Group(c) for c in names], conditions, limit, descending, extra, ()
                )
            measures = [Measure("count")]
        return self._finish(
            base, measures, groups, conditions, limit, descending, extra, tuple(having)
        )

    def _per_entity(
        self,
        measures: list[Measure],
        groups: list[Group],
        per_table: TableInfo | None,
        base: str,
    ) -> list[Measure]:
        """ "average amount per invoice", "lines per order on average": a figure divided by
        the number of distinct rows of the table it is per."""
        out = []
        for measure in measures:
            per_entity = measure.func == "ratio" or (
                measure.func == "avg" and per_table is not None
            )
            if not per_entity:
                out.append(measure)
                continue
            table = per_table or self._other_entity(measure, base)
            per = self._key_in(base, table) if table is not None else None
            if per is None:
                out.append(
                    Measure("avg", measure.columns, measure.formula)
                    if measure.columns
                    else Measure("count")
                )
                continue
            formula = "column" if measure.columns else "rows"
            out.append(
                Measure(
                    "ratio",
                    measure.columns,
                    measure.formula if measure.columns else formula,
                    per=per,
                )
            )
        return out

    def _other_entity(self, measure: Measure, base: str) -> TableInfo | None:
        for table in self._mentioned_tables():
            if table.name != base and any(
                r.table == base and r.target == table.name for r in self.k.references
            ):
                return table
        return None

    def _apply_thresholds(
        self,
        thresholds: list[_Threshold],
        measures: list[Measure],
        conditions: list[Condition],
        entities: list[tuple[TableInfo, int]],
    ) -> tuple[list[Threshold], list[Condition]]:
        """A threshold on what is counted or aggregated is a HAVING; one on a plain column
        ("lines with a discount above 30 percent") filters rows."""
        having: list[Threshold] = []
        conditions = list(conditions)
        for threshold in thresholds:
            named = self._column_at(threshold.at, ("number",))
            table = next((t for t, at in entities if threshold.at <= at <= threshold.at + 2), None)
            row_level = named is not None and (
                not self.cued or not any(named[0] in m.columns for m in measures)
            )
            if named is not None and row_level:
                conditions.append(Condition(named[0], threshold.op, (threshold.value,)))
                continue
            aggregated = [m for m in measures if m.func not in ("value",)]
            if table is not None:
                having.append(Threshold(_rows_of(table), threshold.op, threshold.value))
            elif aggregated:
                having.append(Threshold(aggregated[0], threshold.op, threshold.value))
        return having, conditions

    def _events(
        self, counted: list[str], entities: list[tuple[TableInfo, int]], asked: object
    ) -> list[str]:
        """Tables whose rows say what happened to the counted ones ("customers who ordered"):
        another mentioned table that refers to a counted one is read too."""
        asked_name = asked.name if isinstance(asked, TableInfo) else None
        out = []
        for table, _ in entities:
            if table.name in counted or table.name == asked_name:
                continue
            if any(r.table == table.name and r.target in counted for r in self.k.references):
                out.append(table.name)
        return out

    def _key_in(self, base: str, table: TableInfo) -> ColumnInfo | None:
        """The column of ``base`` that names a row of ``table`` (its key, or a reference)."""
        if base == table.name:
            return table.key
        for r in self.k.references:
            if r.table == base and r.target == table.name:
                return self.k.tables[base].column(r.column)
        return table.key

    def _base(
        self,
        measures: list[Measure],
        asked: object,
        entities: list[tuple[TableInfo, int]],
        conditions: list[Condition],
        groups: list[Group],
    ) -> str | None:
        for measure in measures:
            table = _table_of(measure)
            if table is not None:
                return table
        if isinstance(asked, TableInfo):
            return asked.name
        if entities:
            return entities[0][0].name
        for condition in conditions:
            return condition.column.table
        for group in groups:
            return group.column.table
        return None

    def _finish(
        self,
        base: str,
        measures: list[Measure],
        groups: list[Group],
        conditions: list[Condition],
        limit: int | None,
        descending: bool | None,
        extra: list[str],
        having: tuple[Threshold, ...],
    ) -> Plan | None:
        needed = [base, *extra]
        needed += [g.column.table for g in groups] + [c.column.table for c in conditions]
        for measure in [*measures, *(h.measure for h in having)]:
            needed.extend(c.table for c in measure.columns)
            needed.extend(t for t in (_table_of(measure),) if t)
            if measure.per is not None:
                needed.append(measure.per.table)
        tables = self._connect(needed)
        if tables is None:
            return None
        reachable = set(tables)
        kept_groups = [g for g in groups if g.column.table in reachable]
        kept_conditions = [c for c in conditions if c.column.table in reachable]
        if len(kept_groups) < len(groups) or len(kept_conditions) < len(conditions):
            self.s.notes.append("dropped what no offered join path reaches")
        measures = [self._distinct_rows(m, tables) for m in measures]
        having = tuple(
            Threshold(self._distinct_rows(h.measure, tables), h.op, h.value) for h in having
        )
        window = self._window(tables)
        if window is not None and window.column.table not in tables:
            tables = self._connect([*tables, window.column.table]) or tables
        if self.grain is not None:
            date = window.column if window is not None else self._date_column(tables)
            if date is not None:
                kept_groups.append(Group(date, self.grain))
                if date.table not in tables:
                    tables = self._connect([*tables, date.table]) or tables
        return Plan(
            tables=tuple(tables),
            measures=tuple(measures),
            groups=tuple(dict.fromkeys(kept_groups)),
            conditions=tuple(kept_conditions),
            window=window,
            descending=descending,
            limit=limit,
            having=having,
            notes=tuple(self.s.notes),
        )

    def _distinct_rows(self, measure: Measure, tables: Sequence[str]) -> Measure:
        """Counting the rows of a table other joined tables refer to counts each once."""
        if not measure.formula.startswith("rows:"):
            return measure
        table = self.k.tables[measure.formula.split(":", 1)[1]]
        key = table.key
        joined_many = any(
            r.target == table.name and r.table in tables and r.table != table.name
            for r in self.k.references
        )
        if measure.func == "count" and key is not None and (joined_many or tables[0] != table.name):
            return Measure("count", (key,), distinct=True)
        return Measure(
            measure.func,
            measure.columns,
            "rows",
            measure.distinct,
            measure.per,
            measure.part,
            measure.whole,
            measure.scale,
            measure.negate,
        )

    def _window(self, tables: Sequence[str]) -> Window | None:
        if self.period is None:
            return None
        column = self._date_column(tables)
        if column is None:
            self.s.notes.append(f"no date column for {self.period.label}")
            return None
        return Window(column, self.period.start, self.period.end, self.period.label)

    def _date_column(self, tables: Sequence[str]) -> ColumnInfo | None:
        """The date a window applies to: one the question names among the tables read, else
        the base table's, else the nearest joinable table's."""
        stems = [x for x in self.all_stems if x not in FILLER_STEMS and x not in ("dat", "on")]
        candidates = [c for t in tables for c in self.k.tables[t].columns if c.kind == "date"]
        named = [
            (sum(1 for x in stems if x in c.note_stems or x in c.name_stems), -i, c)
            for i, c in enumerate(candidates)
        ]
        named = [n for n in named if n[0] > 0]
        if named:
            return max(named, key=lambda n: (n[0], n[1]))[2]
        if candidates:
            return candidates[0]
        for table in self._by_distance(tables[0]):
            dates = [c for c in self.k.tables[table].columns if c.kind == "date"]
            if dates:
                return dates[0]
        return None

    # --- join paths ------------------------------------------------------------------------

    def _connect(self, needed: Sequence[str]) -> list[str] | None:
        """The tables to read: the needed ones joined along shortest reference paths; an
        unreachable table is left out (and said)."""
        base = needed[0]
        if base not in self.k.tables:
            return None
        tables = [base]
        for target in dict.fromkeys(needed[1:]):
            if target in tables:
                continue
            path = self._path(tables, target)
            if path is None:
                self.s.notes.append(f"no join path to {target}")
                continue
            tables.extend(t for t in path if t not in tables)
        return tables

    def _path(self, start: Sequence[str], target: str) -> list[str] | None:
        """Breadth first from the tables already read, fact tables (those that refer to
        most others) first, so a dimension joins to the event rather than to another
        dimension ("sites of the orders", not "home site of the customer")."""
        order = sorted(start, key=lambda t: -sum(1 for r in self.k.references if r.table == t))
        previous: dict[str, str | None] = {t: None for t in order}
        queue = deque(order)
        while queue:
            table = queue.popleft()
            if table == target:
                path = []
                node: str | None = table
                while node is not None and node not in start:
                    path.append(node)
                    node = previous[node]
                return list(reversed(path))
            for neighbour in self._neighbours(table):
                if neighbour not in previous:
                    previous[neighbour] = table
                    queue.append(neighbour)
        return None

    def _neighbours(self, table: str) -> list[str]:
        out = []
        for r in self.k.references:
            if r.table == table:
                out.append(r.target)
            elif r.target == table:
                out.append(r.table)
        return out

    def _by_distance(self, base: str) -> list[str]:
        seen, queue, order = {base}, deque([base]), []
        while queue:
            table = queue.popleft()
            for neighbour in self._neighbours(table):
                if neighbour not in seen:
                    seen.add(neighbour)
                    order.append(neighbour)
                    queue.append(neighbour)
        return order


def _score(column: ColumnInfo, table: TableInfo, stems: Iterable[str]) -> float:
    """Name words count 2, note words 1; the table's own entity words only break ties."""
    entity = {p for phrase in table.entity_phrases for p in phrase}
    name, note = set(column.name_stems), set(column.note_stems)
    score = 0.0
    for x in set(stems):
        if x in FILLER_STEMS:
            continue
        if x in name:
            score += 0.25 if x in entity else 2.0
        elif x in note:
            score += 0.25 if x in entity else 1.0
    return score


def _money_column(table: TableInfo) -> ColumnInfo | None:
    numbers = [c for c in table.columns if c.kind == "number" and not c.is_identifier]
    for column in numbers:
        if set(column.name_stems) & _MONEY_HINTS:
            return column
    return numbers[0] if numbers else None


def _rows_of(table: TableInfo) -> Measure:
    return Measure("count", (), formula=f"rows:{table.name}")


def _table_of(measure: Measure) -> str | None:
    if measure.formula.startswith("rows:"):
        return measure.formula.split(":", 1)[1]
    return measure.columns[0].table if measure.columns else None


def _plural(word: Word) -> bool:
    return word.lower.endswith("s") and not word.lower.endswith(("ss", "us", "is"))


def _without_excluded(conditions: list[Condition]) -> list[Condition]:
    """ "card payments excluding gift cards": the excluded value leaves the IN list and the
    exclusion itself is then implied."""
    out = []
    for condition in conditions:
        if condition.op in ("<>", "NOT IN"):
            positive = next(
                (c for c in conditions if c.column == condition.column and c.op in ("=", "IN")),
                None,
            )
            if positive is not None:
                continue
        if condition.op == "IN":
            excluded = {
                v
                for c in conditions
                if c.column == condition.column and c.op in ("<>", "NOT IN")
                for v in c.values
            }
            values = tuple(v for v in condition.values if v not in excluded)
            if excluded and values:
                condition = Condition(condition.column, "IN" if len(values) > 1 else "=", values)
        out.append(condition)
    return out


def _contains(stems: Sequence[str], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(tuple(stems[i : i + n]) == phrase for i in range(len(stems) - n + 1))


def _split_and(s: _State, phrase: list[int]) -> list[list[int]]:
    parts: list[list[int]] = [[]]
    for i in phrase:
        if s.lower(i) == "and":
            parts.append([])
        else:
            parts[-1].append(i)
    return [p for p in parts if p]
