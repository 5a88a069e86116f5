"""Words for schema linking: split, lower-case and stem, keeping where each word came from.

The linker compares a question's words with names, comments and sampled values, so both sides
go through the same :func:`stem`: a few suffix rules (plurals, ``-ed``, ``-ing``, a final
``e``), no stemmer data to download. "invoiced" meets ``invoices``, "cancelled" meets the
value ``'cancelled'`` and "boxed" meets "box".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Words, not SQL: splitting text into word tokens is what regular expressions are for.
_WORD = re.compile(r"[A-Za-z0-9]+")

NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twenty": 20,
    "thirty": 30,
    "zero": 0,
}

# Abbreviations common in warehouse column names, spelled out so questions can meet them.
ABBREVIATIONS = {
    "cd": ("code",),
    "pct": ("percent",),
    "qty": ("quantity",),
    "pt": ("point",),
    "amt": ("amount",),
    "no": ("number",),
    "num": ("number",),
    "nbr": ("number",),
    "dt": ("date",),
    "uom": ("unit", "of", "measure"),
}

SYNONYMS = {"percentag": "percent", "mean": "averag", "avg": "averag", "qty": "quantity"}

# Words that carry no link on their own: question scaffolding and very general nouns.
_FILLER_WORDS = (
    "a",
    "an",
    "the",
    "of",
    "in",
    "on",
    "at",
    "for",
    "to",
    "by",
    "per",
    "with",
    "and",
    "or",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "has",
    "have",
    "had",
    "do",
    "does",
    "did",
    "we",
    "our",
    "us",
    "you",
    "your",
    "they",
    "their",
    "them",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "there",
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "how",
    "many",
    "much",
    "so",
    "far",
    "all",
    "any",
    "each",
    "every",
    "some",
    "me",
    "show",
    "list",
    "give",
    "tell",
    "can",
    "could",
    "would",
    "should",
    "will",
    "from",
    "than",
    "as",
    "into",
    "out",
    "up",
    "about",
    "over",
    "after",
    "before",
    "just",
    "still",
    "ever",
    "yet",
    "also",
    "only",
    "not",
    "no",
    "nor",
    "e",
    "g",
    "s",
    "i",
    "d",
    "code",
    "number",
    "id",
    "data",
    "value",
    "total",
    "count",
    "one",
    "row",
    "within",
    "last",
    "next",
    "previous",
    "current",
    "recent",
)


@dataclass(frozen=True)
class Word:
    """One word of a text: as written, lower-cased, and stemmed."""

    text: str
    lower: str
    stem: str


def stem(word: str) -> str:
    """The linking stem of one word.

    >>> [stem(w) for w in ["invoices", "invoiced", "cancelled", "boxed", "categories", "sites"]]
    ['invoic', 'invoic', 'cancel', 'box', 'category', 'sit']
    >>> stem("cancellation")
    'cancel'

    """
    w = word.lower()
    if len(w) <= 3:
        return SYNONYMS.get(w, w)
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "shes", "ches", "xes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if len(w) > 8 and w.endswith("ation"):
        w = _undouble(w[:-5])  # "cancellation" meets "cancelled"
    elif len(w) > 4 and w.endswith("ed"):
        w = _undouble(w[:-2])
    elif len(w) > 5 and w.endswith("ing"):
        w = _undouble(w[:-3])
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return SYNONYMS.get(w, w)


def _undouble(w: str) -> str:
    # "shipp" -> "ship", "cancell" -> "cancel"; a short "bill" keeps its double l.
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiousz" and (w[-1] != "l" or len(w) > 5):
        return w[:-1]
    return w


def split_words(text: str) -> list[Word]:
    """The words of a text, identifiers split at ``_`` and ``.``.

    >>> [w.stem for w in split_words("order_lines.unit_price")]
    ['order', 'lin', 'unit', 'pric']
    """
    return [Word(t, t.lower(), stem(t)) for t in _WORD.findall(text)]


def name_stems(name: str) -> tuple[str, ...]:
    """Stems of an identifier with abbreviations spelled out: ``status_cd`` -> status, code.

    >>> name_stems("uom_cd")
    ('unit', 'of', 'measur', 'cod')
    """
    out: list[str] = []
    for word in split_words(name):
        out.extend(stem(part) for part in ABBREVIATIONS.get(word.lower, (word.lower,)))
    return tuple(out)


def content(stems: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The stems that can carry a link on their own (no filler)."""
    return tuple(s for s in stems if s not in FILLER_STEMS)


def number(word: Word) -> int | None:
    """The integer a word spells, digits or a small number word.

    >>> number(split_words("ten")[0]), number(split_words("42")[0]), number(split_words("x")[0])
    (10, 42, None)
    """
    if word.lower.isdigit():
        return int(word.lower)
    return NUMBER_WORDS.get(word.lower)


def decimal(word: Word) -> float | None:
    """A number with its decimal point spelled ``p`` (see ``question.normalise``).

    >>> decimal(split_words("7p5")[0]), decimal(split_words("30")[0])
    (7.5, 30.0)
    """
    whole, point, fraction = word.lower.partition("p")
    if whole.isdigit() and (not point or fraction.isdigit()):
        return float(word.lower.replace("p", "."))
    value = number(word)
    return None if value is None else float(value)


FILLER_STEMS = frozenset(stem(w) for w in _FILLER_WORDS)
