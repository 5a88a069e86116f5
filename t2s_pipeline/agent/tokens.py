"""Words for BM25: lower-cased, identifiers split at ``_`` and ``.``, light plural folding.

No stemmer with downloaded data: a question's "orders" must meet a column's ``order_id``, and
that is all the folding the baseline needs.
"""

from __future__ import annotations

import re

from bm25s.stopwords import STOPWORDS_EN

# Words, not SQL: splitting text into word tokens is what regular expressions are for.
_WORD = re.compile(r"[^\W_]+")
_STOP = frozenset(STOPWORDS_EN) | {"how", "many", "much", "what", "which", "show", "list", "me"}


def tokenize(text: str) -> list[str]:
    """The BM25 tokens of a text.

    >>> tokenize("How many order_lines were shipped to Categories?")
    ['order', 'line', 'were', 'shipped', 'category']
    """
    return [_fold(word) for word in _WORD.findall(text.lower()) if word not in _STOP]


def _fold(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word
