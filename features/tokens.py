"""Features of a token's text alone (word, affixes, shape), computed once per distinct string.

Clinical notes repeat a small vocabulary, so these are cached by string; the sentence
extractor copies them into each token's feature dict.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

_SHAPE_TABLE = str.maketrans(
    {
        **{c: "X" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
        **{c: "x" for c in "abcdefghijklmnopqrstuvwxyz"},
        **{c: "d" for c in "0123456789"},
    }
)
_LONG_RUN = re.compile(r"(.)\1{4,}")
_ANY_RUN = re.compile(r"(.)\1+")
_DIGIT = re.compile(r"\d")

AFFIX_LENGTHS = (2, 3, 4)
_PREFIX_KEYS = tuple(f"p{n}" for n in AFFIX_LENGTHS)
_SUFFIX_KEYS = tuple(f"s{n}" for n in AFFIX_LENGTHS)


def word_shape(text: str) -> str:
    """Letters as ``X``/``x``, digits as ``d``, other characters kept; runs longer than 4 cut to 4 (``Xxxxx`` → ``Xxxx``)."""
    shape = text.translate(_SHAPE_TABLE)
    if not shape.isascii():
        shape = "".join(
            ("X" if c.isupper() else "x") if c.isalpha() else ("d" if c.isdigit() else c) for c in shape
        )
    return _LONG_RUN.sub(r"\1\1\1\1", shape)


def short_shape(text: str) -> str:
    """The shape with every run collapsed to one character (``Xxxx-dd`` → ``Xx-d``)."""
    return _ANY_RUN.sub(r"\1", word_shape(text))


def _is_punct(text: str) -> bool:
    return all(unicodedata.category(c).startswith(("P", "S")) for c in text)


def _length_bucket(n: int) -> str:
    if n <= 3:
        return str(n)
    if n <= 6:
        return "4-6"
    if n <= 10:
        return "7-10"
    return "11+"


class WordFeatures(NamedTuple):
    """The cached text-only features of one token string, one dict per group."""

    lower: str
    short_shape: str
    word: dict[str, str]
    affix: dict[str, str]
    shape: dict[str, str | float]


@lru_cache(maxsize=200_000)
def word_features(text: str) -> WordFeatures:
    """Word, affix and shape features of ``text`` (the returned dicts are shared: copy, never mutate)."""
    lower = text.lower()
    word: dict[str, str] = {"w": text, "lw": lower}

    affix: dict[str, str] = {}
    n = len(lower)
    for length, pkey, skey in zip(AFFIX_LENGTHS, _PREFIX_KEYS, _SUFFIX_KEYS):
        if n > length:
            affix[pkey] = lower[:length]
            affix[skey] = lower[-length:]

    full = word_shape(text)
    short = _ANY_RUN.sub(r"\1", full)
    shape: dict[str, str | float] = {"shape": full, "sshape": short, "len": _length_bucket(n)}
    if text.isdigit():
        shape["is_digit"] = 1.0
    elif _DIGIT.search(text):
        shape["has_digit"] = 1.0
    if text.isupper():
        shape["is_upper"] = 1.0
    elif text.istitle():
        shape["is_title"] = 1.0
    if _is_punct(text):
        shape["is_punct"] = 1.0
    elif "-" in text:
        shape["has_hyphen"] = 1.0
    return WordFeatures(lower, short, word, affix, shape)
