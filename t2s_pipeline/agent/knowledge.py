"""What the agent knows about the offered tables: columns, schema notes, references.

Everything here is read from the table documents the retriever offers (DDL with comments,
parsed with sqlglot) and, with schema notes on, from the comments: code glossaries
(``N=North``, ``'Card' means CC or DC``, ``delivered (= completed)``), boolean and sign notes
(``False for discontinued items``, ``negative for a refund``), references to other tables
(``sales.customers.customer_id``) and sums (``net_amount + tax_amount``). With notes off the
comments are dropped before anything reads them, so the agent links only through names and
sampled values, as a system given bare DDL would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from t2s_pipeline.agent.values import ValueSample
from t2s_pipeline.agent.words import content, name_stems, split_words, stem
from t2s_pipeline.sut.contract import OfferedTable

# Comments are prose: regular expressions read words in them, never SQL.
_CODE = re.compile(r"\b([A-Z][A-Z0-9]{0,4})=([^,.;]+)")
_MEANS = re.compile(r"'([\w ]+)' means ([A-Z0-9]+(?:(?:,\s*|\s+or\s+|\s+and\s+)[A-Z0-9]+)*)")
_ALIAS = re.compile(r"\b(\w+) \(= ([^)]+)\)")
_FLAG = re.compile(r"\b(True|False) for ([\w -]+?)\s*[.;]")
_SIGN_FOR = re.compile(r"\b(negative|positive) for (?:an? )?([\w -]+?)\s*[.;)]")
_SIGN_ARE = re.compile(r"\b(\w+) are (negative|positive) (\w+)")
_REFERENCE = re.compile(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b")
_HEAD_STOP = re.compile(r"[:;(,.]|\b(?:that|which|who|per|on|at|in|of|against|with|for)\b")
_PAREN = re.compile(r"\(([^)]*)\)")
_EXAMPLE = re.compile(r"\be\.g\.|'")

_NUMBER_TYPES = ("INT", "BIGINT", "SMALLINT", "TINYINT", "DECIMAL", "NUMERIC", "DOUBLE", "FLOAT")
_LABEL_SUFFIXES = ("_name", "_title", "_label")


@dataclass(frozen=True)
class ColumnInfo:
    """One column of an offered table, with its note (empty when notes are off)."""

    table: str
    name: str
    type: str
    note: str = ""

    @property
    def kind(self) -> str:
        """``number``, ``date``, ``bool`` or ``text``."""
        upper = self.type.upper()
        if upper.startswith(_NUMBER_TYPES):
            return "number"
        if upper.startswith(("DATE", "TIMESTAMP")):
            return "date"
        if upper.startswith("BOOL"):
            return "bool"
        return "text"

    @property
    def is_identifier(self) -> bool:
        """Keys, references and ordinals: never a measure."""
        return self.name == "id" or self.name.endswith(("_id", "_no", "_nr"))

    @cached_property
    def name_stems(self) -> tuple[str, ...]:
        return name_stems(self.name)

    @cached_property
    def note_stems(self) -> tuple[str, ...]:
        """Stems of the note's label: what the column is, not its code list."""
        label = _EXAMPLE.split(self.note.split(":")[0].split(";")[0])[0]
        label = _REFERENCE.sub(" ", _CODE.sub(" ", label))
        return tuple(w.stem for w in split_words(label))

    @cached_property
    def summands(self) -> tuple[str, ...]:
        """A note that is the expression ``net_amount + tax_amount``: the two columns this one
        adds up (the note is read with sqlglot; prose is no sum).

        >>> ColumnInfo("f.i", "gross", "DECIMAL", "net_amount + tax_amount.").summands
        ('net_amount', 'tax_amount')
        >>> ColumnInfo("f.i", "net", "DECIMAL", "Amount before tax (net revenue).").summands
        ()
        """
        try:
            tree = sqlglot.parse_one(self.note.strip().rstrip("."))
        except (SqlglotError, ValueError):
            return ()
        if isinstance(tree, exp.Add) and all(
            isinstance(side, exp.Column) and not side.table for side in (tree.this, tree.expression)
        ):
            return (tree.this.name, tree.expression.name)
        return ()

    @property
    def ref(self) -> str:
        """``table.column`` with the table's short name, as SQL refers to it."""
        return f"{self.table.split('.')[-1]}.{self.name}"


@dataclass(frozen=True)
class ValueTerm:
    """A phrase that selects rows of a column: a code from the notes, a flag, a sign, or a
    sampled value."""

    column: ColumnInfo
    phrase: tuple[str, ...]
    op: str  # "=" (values), "<" or ">" (against 0)
    values: tuple[object, ...]
    strength: int = 2  # 2 the whole meaning or value, 1 its head word only
    source: str = "note"  # note | name | sample


@dataclass(frozen=True)
class Reference:
    """``table.column`` refers to ``target.target_column`` (a join path)."""

    table: str
    column: str
    target: str
    target_column: str


@dataclass(frozen=True)
class TableInfo:
    """One offered table: its columns, its note and the phrases that name its rows."""

    name: str
    note: str
    columns: tuple[ColumnInfo, ...]

    @property
    def short(self) -> str:
        return self.name.split(".")[-1]

    @cached_property
    def key(self) -> ColumnInfo | None:
        """The column named after the table (``orders`` -> ``order_id``), if any."""
        singular = tuple(stem(w.lower) for w in split_words(self.short))
        for column in self.columns:
            if column.is_identifier and column.name_stems[:-1] == singular:
                return column
        return None

    @cached_property
    def entity_phrases(self) -> tuple[tuple[str, ...], ...]:
        """Stems naming the table's rows: its name (and last word), and with notes the plural
        nouns at the head of its note and any word in parentheses (``(products)``)."""
        words = tuple(w.stem for w in split_words(self.short))
        phrases = {words, words[-1:]}
        head = _HEAD_STOP.split(_PAREN.sub(" ", self.note), maxsplit=1)[0]
        schemas = {self.name.split(".")[0]}
        for word in split_words(head):
            if word.lower in schemas:
                continue  # the schema's name is a namespace, not what a row is
            if word.lower.endswith("s") and not word.lower.endswith("ss") and len(word.lower) > 3:
                phrases.add((word.stem,))
        for inner in _PAREN.findall(self.note):
            inner_words = split_words(inner)
            if len(inner_words) == 1:
                phrases.add((inner_words[0].stem,))
        return tuple(sorted(phrases, key=lambda p: (-len(p), p)))

    @cached_property
    def label(self) -> tuple[ColumnInfo, ...]:
        """What names one row in an answer: a ``*_name`` column, else the key, else the
        identifier columns together."""
        for column in self.columns:
            if column.kind == "text" and column.name.endswith(_LABEL_SUFFIXES):
                return (column,)
        if self.key is not None:
            return (self.key,)
        return tuple(c for c in self.columns if c.is_identifier)  # order_id, line_no

    def column(self, name: str) -> ColumnInfo | None:
        return next((c for c in self.columns if c.name == name), None)


@dataclass(frozen=True)
class Knowledge:
    """The tables the agent can read about, their references and their value notes."""

    tables: Mapping[str, TableInfo]
    references: tuple[Reference, ...] = ()
    terms: tuple[ValueTerm, ...] = ()
    unique: frozenset[str] = frozenset()  # schema.table.column known to identify its rows

    def subset(self, names: Iterable[str]) -> Knowledge:
        """Only the named tables (those offered for one question), in that order."""
        keep = [n for n in names if n in self.tables]
        chosen = set(keep)
        return Knowledge(
            {n: self.tables[n] for n in keep},
            tuple(r for r in self.references if r.table in chosen and r.target in chosen),
            tuple(t for t in self.terms if t.column.table in chosen),
            self.unique,
        )

    @property
    def columns(self) -> tuple[ColumnInfo, ...]:
        return tuple(c for t in self.tables.values() for c in t.columns)

    def terms_said(self, stems: tuple[str, ...], texts: tuple[str, ...]) -> list[ValueTerm]:
        """The terms a run of words says, in :attr:`terms` order: a short sampled code
        (``DE``, ``B2B``) only as written (``texts``, two characters at least), any other
        term by its stems. Looked up by phrase, not by reading every term."""
        hits = [(i, t) for i, t in self._by_phrase.get(stems, ()) if not _as_written(t)]
        if texts and len(texts[0]) >= 2:
            hits += [(i, t) for i, t in self._by_phrase.get(texts, ()) if _as_written(t)]
        return [term for _, term in sorted(hits, key=lambda hit: hit[0])]

    @cached_property
    def _by_phrase(self) -> dict[tuple[str, ...], list[tuple[int, ValueTerm]]]:
        index: dict[tuple[str, ...], list[tuple[int, ValueTerm]]] = {}
        for position, term in enumerate(self.terms):
            index.setdefault(term.phrase, []).append((position, term))
        return index


def _as_written(term: ValueTerm) -> bool:
    """A short sampled code matches only as written, never by its stem."""
    return term.source == "sample" and len(str(term.values[0])) <= 3


def read_knowledge(
    documents: Sequence[OfferedTable],
    use_comments: bool = True,
    sample: ValueSample | None = None,
) -> Knowledge:
    """Parse the table documents; with ``use_comments`` false every comment is ignored.

    ``sample`` holds the sampled distinct values of short text columns.

    >>> doc = OfferedTable(name="s.t", ddl="CREATE TABLE s.t (\\n  k VARCHAR  -- A=apple\\n);")
    >>> [(t.phrase, t.values) for t in read_knowledge([doc]).terms]
    [(('appl',), ('A',))]
    >>> read_knowledge([doc], use_comments=False).terms
    ()
    """
    tables = {}
    for document in documents:
        table = _parse_document(document, use_comments)
        if table is not None:
            tables[table.name] = table
    sample = sample or ValueSample()
    values = sample.values()
    terms = [term for t in tables.values() for term in _table_terms(t)]
    for table in tables.values():
        for column in table.columns:
            initial = _initial_state(column)
            for value in values.get(f"{table.name}.{column.name}", ()):
                terms.extend(_sample_terms(column, value, initial=value == initial))
    unique = frozenset(name for name, profile in sample.columns.items() if profile.unique)
    return Knowledge(tables, _references(tables), tuple(terms), unique)


def _parse_document(document: OfferedTable, use_comments: bool) -> TableInfo | None:
    try:
        tree = sqlglot.parse_one(document.ddl)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Create):
        return None
    columns = []
    for definition in tree.find_all(exp.ColumnDef):
        kind = definition.args.get("kind")
        note = " ".join(definition.comments or ()).strip() if use_comments else ""
        columns.append(
            ColumnInfo(document.name, definition.name, kind.sql() if kind else "TEXT", note)
        )
    note = " ".join(tree.comments or ()).strip() if use_comments else ""
    return TableInfo(document.name, note, tuple(columns))


def _references(tables: Mapping[str, TableInfo]) -> tuple[Reference, ...]:
    """Join paths: references named in notes, else a column named like another table's key
    (``customer_id``, ``home_site_id``)."""
    found: dict[tuple[str, str], Reference] = {}
    for table in tables.values():
        for column in table.columns:
            for schema, target, target_column in _REFERENCE.findall(column.note):
                qualified = f"{schema}.{target}"
                if qualified in tables and qualified != table.name:
                    found[(table.name, column.name)] = Reference(
                        table.name, column.name, qualified, target_column
                    )
            if (table.name, column.name) in found or not column.is_identifier:
                continue
            for other in tables.values():
                key = other.key
                if other.name == table.name or key is None:
                    continue
                if column.name == key.name or column.name.endswith("_" + key.name):
                    found[(table.name, column.name)] = Reference(
                        table.name, column.name, other.name, key.name
                    )
                    break
    return tuple(found.values())


def _table_terms(table: TableInfo) -> list[ValueTerm]:
    entity = {p for phrase in table.entity_phrases for p in phrase}
    terms: list[ValueTerm] = []
    for column in table.columns:
        text = column.note
        for code, meaning in _CODE.findall(text):
            terms.extend(_meaning_terms(column, meaning, (code,)))
        for word, codes in _MEANS.findall(text):
            terms.extend(_meaning_terms(column, word, tuple(re.findall(r"[A-Z0-9]+", codes))))
        for value, alias in _ALIAS.findall(text):
            terms.extend(_meaning_terms(column, alias, (value,)))
        if column.kind == "bool":
            terms.extend(_flag_terms(column, entity))
        if column.kind == "number":
            terms.extend(_sign_terms(column, table.note))
    return terms


def _flag_terms(column: ColumnInfo, entity: set[str]) -> list[ValueTerm]:
    """``is_active``: "active" is TRUE, "inactive" FALSE; a note "False for discontinued
    items" makes "discontinued" FALSE."""
    words = [w for w in column.name.split("_") if w not in ("is", "has", "flag")]
    terms = []
    if len(words) == 1:
        terms.append(ValueTerm(column, (stem(words[0]),), "=", (True,), source="name"))
        for prefix in ("in", "un", "non"):
            terms.append(
                ValueTerm(column, (stem(prefix + words[0]),), "=", (False,), source="name")
            )
    for flag, what in _FLAG.findall(column.note):
        phrase = tuple(s for s in content([w.stem for w in split_words(what)]) if s not in entity)
        if phrase:
            terms.append(ValueTerm(column, phrase, "=", (flag == "True",)))
    return terms


def _sign_terms(column: ColumnInfo, table_note: str) -> list[ValueTerm]:
    """ "negative for a refund" (column note) or "refunds are negative amounts" (table note
    naming the column): "refund" selects ``column < 0``."""
    found: dict[tuple[str, ...], str] = {}
    for sign, what in _SIGN_FOR.findall(column.note):
        found.setdefault(content([w.stem for w in split_words(what)]), sign)
    for what, sign, noun in _SIGN_ARE.findall(table_note):
        if stem(noun) in column.name_stems:
            found.setdefault(content([w.stem for w in split_words(what)]), sign)
    return [
        ValueTerm(column, phrase, "<" if sign == "negative" else ">", (0,))
        for phrase, sign in found.items()
        if phrase
    ]


def _sample_terms(column: ColumnInfo, value: str, initial: bool = False) -> list[ValueTerm]:
    """A sampled value selects its rows; a short code only when written as it is stored.

    The first state a note lists ("Order status: placed, shipped, ...") is one every row went
    through, so as a bare verb ("orders placed last month") it selects nothing: strength 0.
    """
    stems = tuple(w.stem for w in split_words(value))
    if not stems:
        return []
    strength = 0 if initial else 2
    if len(value) <= 3:
        return [ValueTerm(column, (value,), "=", (value,), strength, source="sample")]
    return [ValueTerm(column, stems, "=", (value,), strength, source="sample")]


def _initial_state(column: ColumnInfo) -> str | None:
    """The first value a note enumerates after its label: ``status: placed, shipped, ...``."""
    if ":" not in column.note or column.kind != "text":
        return None
    listed = column.note.split(":", 1)[1].split(",")
    if len(listed) < 3:
        return None
    first = listed[0].strip().rstrip(".")
    return first if first.isalpha() and "=" not in first else None


def _meaning_terms(column: ColumnInfo, meaning: str, values: tuple[object, ...]) -> list[ValueTerm]:
    """A code's meaning as a phrase, and its first and last words as weaker ones ("retail
    store" -> "retail", "store"; "box of 12" -> "box")."""
    main = _PAREN.sub(" ", meaning).split(" of ")[0]
    phrase = content([w.stem for w in split_words(main)])
    if not phrase:
        return []
    terms = [ValueTerm(column, phrase, "=", values)]
    if len(phrase) > 1:
        terms.append(ValueTerm(column, phrase[-1:], "=", values, strength=1))
        terms.append(ValueTerm(column, phrase[:1], "=", values, strength=1))
    return terms
