"""The rule tokenizer's rules: spaCy's ``Tokenizer`` with affixes and infixes for biomedical text.

They are scispaCy 0.6.2's ``combined_rule_tokenizer`` rules, rebuilt here from spaCy's own character classes so
that share-ner needs no scispaCy (whose pins keep it off Python 3.13 and NumPy 2); ``tests/test_scispacy_oracle.py``
checks that the patterns and the tokens are scispaCy's wherever scispaCy installs. Against English's own tokenizer:

* ``/`` is never an infix and a plain hyphen is not one either, so ``h/o``, ``3/12/2020``, ``IL-6`` and
  ``x-ray`` stay whole; an opening bracket is no prefix when a closing one follows with more after it
  (``(s)he``, ``[3H]thymidine``);
* an operator between numbers (``2+3``) and ``×`` are tokens of their own, and so are a dot between a lower-case
  letter and a capital (``mother.He``), a comma or ``:<>=`` between letters (``R>L``) and a dash between words;
* a final dot is split from a number, a lower-case letter, ``%``, ``)``... and from two capitals, but the dot of
  the abbreviations of scientific writing in :data:`DOTTED` stays (``Fig.``, ``et al.``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["DOTTED", "rule_tokenizer"]

# Abbreviations that keep their final dot (special cases added to English's tokenizer exceptions).
DOTTED = tuple(
    f"{word}." for stem in ("sec", "fig", "eq", "no") for word in (stem, stem + "s", stem.title(), stem.title() + "s")
) + ("al.", "gen.", "sp.", "nov.")

# An opening bracket stays on its word when the matching closing bracket is inside the same chunk and not its end.
_KEEP_OPENING = {r"\(": r"\((?![^\(\s]+\)\S+)", r"\[": r"\[(?![^\[\s]+\]\S+)", r"\{": r"\{(?![^\{\s]+\}\S+)"}


def _prefixes(cc: Any) -> list[str]:
    return (["§", "%", "=", r"\+"] + [_KEEP_OPENING.get(p, p) for p in cc.LIST_PUNCT]
            + cc.LIST_ELLIPSES + cc.LIST_QUOTES + cc.LIST_CURRENCY + cc.LIST_ICONS)


def _infixes(cc: Any) -> list[str]:
    dashes = "|".join(h for h in cc.LIST_HYPHENS if h != "-")  # every dash but the plain hyphen
    return cc.LIST_ELLIPSES + cc.LIST_ICONS + [
        r"×",
        r"(?<=[0-9])[+\-\*^](?=[0-9-])",  # arithmetic between numbers
        rf"(?<=[{cc.ALPHA_LOWER}])\.(?=[{cc.ALPHA_UPPER}])",  # a sentence glued to the next
        rf"(?<=[{cc.ALPHA}]),(?=[{cc.ALPHA}])",
        rf'(?<=[{cc.ALPHA}])[?";:=,.]*(?:{dashes})(?=[{cc.ALPHA}])',
        rf'(?<=[{cc.ALPHA}"])[:<>=](?=[{cc.ALPHA}])',
    ]


def _suffixes(cc: Any) -> list[str]:
    quotes = [*cc.LIST_QUOTES, "’"]
    # What may stand before a final dot that is split off: one character of this class (the quotes joined by "|"
    # inside a character class are single characters and "|"; kept as they are, since the class is the rule).
    before_dot = "[0-9" + cc.ALPHA_LOWER + r"%²\-\)\]\+" + "(?:" + "|".join(quotes) + ")]"
    return cc.LIST_PUNCT + cc.LIST_ELLIPSES + quotes + cc.LIST_ICONS + ["'s", "'S", "’s", "’S", "’s", "’S"] + [
        r"(?<=[0-9])\+",
        r"(?<=°[FfCcKk])\.",
        rf"(?<=[0-9])(?:{cc.CURRENCY})",
        rf"(?<=[0-9])(?:{cc.UNITS})",  # "10mg" is "10" "mg"
        rf"(?<={before_dot})\.",
        rf"(?<=[{cc.ALPHA_UPPER}|\d][{cc.ALPHA_UPPER}])\.",  # "ICU." and "1D.": the dot ends a sentence
    ]


def rule_tokenizer(nlp: Any) -> Any:
    """A spaCy ``Tokenizer`` with these rules on ``nlp``'s vocab, English's tokenizer exceptions plus
    :data:`DOTTED`, and ``nlp``'s token_match (``nlp`` is a spaCy ``Language`` or what
    :func:`share_ner.text.english` gives: ``vocab``, ``Defaults`` and ``tokenizer.token_match``)."""
    from spacy.lang import char_classes as cc
    from spacy.symbols import ORTH
    from spacy.tokenizer import Tokenizer
    from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex

    rules = dict(nlp.Defaults.tokenizer_exceptions)
    rules.update({word: [{ORTH: word}] for word in DOTTED})
    return Tokenizer(
        nlp.vocab,
        rules,
        prefix_search=compile_prefix_regex(_prefixes(cc)).search,
        suffix_search=compile_suffix_regex(_suffixes(cc)).search,
        infix_finditer=compile_infix_regex(_infixes(cc)).finditer,
        token_match=nlp.tokenizer.token_match,
    )
