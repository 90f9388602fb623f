"""Tokens with document offsets, and sentences that follow how clinical notes are written.

Tokenization is scispacy's rule tokenizer (``combined_rule_tokenizer`` on
``spacy.blank("en")``; it keeps ``h/o``, ``IL-6`` and ``3/12/2020`` whole),
built once per process on first use and shared. On top of it:

* de-identification placeholders (MIMIC-III's ``[**Hospital1 18**]``, MIMIC-IV's
  ``___``, ``**NAME[ZZZ]``, ``<PERSON>``; the patterns are data, see
  :mod:`share_ner.placeholders`) are masked before tokenizing, so each is
  exactly one token with its true offsets and never ends a sentence;
* no token contains whitespace (spaCy's whitespace tokens are dropped), except
  a placeholder such as ``[**Last Name (NamePattern1) 123**]``;
* a few extra splits where gold mention boundaries often fall inside a
  scispacy token (see :data:`_EXTRA_SPLIT`; measured by ``benchmarks/bench_ceiling.py``);
* runs of 300+ non-space characters are cut by a simple regex, because
  spaCy's affix loop is quadratic in a token's length.

Sentence boundaries come from line structure as much as from punctuation: a
line break ends a sentence unless the line looks hard-wrapped (the next line
starts lower-case after a line of 50+ characters with no final punctuation);
section headers (``HISTORY OF PRESENT ILLNESS:``, ``Past Medical History:``)
are sentences of their own and set :attr:`Sentence.section` for what follows;
numbered-list items and bullets start a new sentence; ``.``/``?``/``!`` end one
when the next token starts upper-case, with a digit, a bullet or a bracket.
"""

from __future__ import annotations

import re
import threading
import warnings
from bisect import bisect_right
from typing import Any

from share_ner.document import Document, Sentence, Token
from share_ner.placeholders import placeholder_regex

__all__ = ["PLACEHOLDER_RE", "find_headers", "get_tokenizer", "normalize_section", "split_sentences", "tokenize"]

# [**...**] placeholders of MIMIC-III alone (every style in use: share_ner.placeholders.placeholder_regex()).
PLACEHOLDER_RE = re.compile(r"\[\*\*(?:(?!\*\*\]|\[\*\*)[^\r\n]){0,200}?\*\*\]")

_tokenizer: Any = None
_ATTRS: list[int] = []  # spaCy's IDX, LENGTH, IS_SPACE attribute ids, set with the tokenizer
_lock = threading.Lock()


def get_tokenizer() -> Any:
    """The process-wide scispacy rule tokenizer (built on first use, ~0.3 s)."""
    global _tokenizer
    if _tokenizer is None:
        with _lock:
            if _tokenizer is None:
                import spacy
                from scispacy.custom_tokenizer import combined_rule_tokenizer
                from spacy.attrs import IDX, IS_SPACE, LENGTH

                _ATTRS[:] = [IDX, LENGTH, IS_SPACE]

                nlp = spacy.blank("en")
                with warnings.catch_warnings():
                    # scispacy's regexes trigger a harmless FutureWarning in re.
                    warnings.simplefilter("ignore", FutureWarning)
                    _tokenizer = combined_rule_tokenizer(nlp)
    return _tokenizer


_WS = re.compile(r"\s")
_LONG_RUN = re.compile(r"\S{300,}")
SIMPLE_TOKEN = re.compile(r"\w+|[^\w\s]")  # a word or one punctuation mark (also the unit of tokens/s)
_NONWS = re.compile(r"\S+")
# Words after a hyphen that start a new unit: "tumor-associated", "flu-like".
_HYPHEN_SUFFIXES = (
    "associated|related|like|induced|inducing|mediated|dependent|independent|specific|derived|causing|"
    "prone|affected|endemic|susceptibility|suppressor|positive|negative|free|resistant|sensitive|"
    "responsive|type|predominant|predisposing|linked|onset|avid|exposed|treated|naive|degree"
)
# Prefixes a hyphen detaches from the word they modify: "non-smoker", "anti-dementia".
_HYPHEN_PREFIXES = ("non", "anti", "pre", "post", "pseudo", "co", "extra")

# Extra separators inside scispacy tokens, each becoming a token of its own,
# where gold mention boundaries fall inside scispacy's tokens on chia, NCBI
# disease and BC5CDR train (measured by benchmarks/bench_ceiling.py):
# commas glued to words (mtsamples-style "fever.,EXAM:,Neck"; not 1,000),
# a dot or colon before such a comma, an opening parenthesis glued to a word
# ("arthritis(knee"), "/" between two words ("MI/CHF", "fibrillation/flutter";
# not "h/o", "w/o", dates, "BRCA1/2"), and "-" before a modifier word or an
# upper-case abbreviation ("seizure-induced", "drug-AKI") or after a prefix
# ("non-smoker"); a hyphen ending a word ("second- or third-degree"); a
# fullwidth comma; ")" glued before a word or "/" ("CKD)stage"); ";" between
# words. "IL-6", "HIV-1", "23-year-old" stay whole.
_EXTRA_SPLIT = re.compile(
    # Each alternative starts with its separator so the regex engine can skip
    # straight to candidate characters; conditions follow as lookarounds.
    r",(?<![0-9],)|,(?![0-9])|[.:](?=,)|\uff0c|\)(?=[A-Za-z/])|/(?<=\)/)|;(?<=[A-Za-z];)(?=[A-Za-z])"
    r"|-(?<=[A-Za-z]{2}-)(?![^\s])|\((?<=[A-Za-z]\()|/(?<=[A-Za-z][A-Za-z0-9]/)(?=[A-Za-z]{2})"
    rf"|-(?<=[A-Za-z]{{2}}-)(?=(?i:{_HYPHEN_SUFFIXES})\b)"
    r"|-(?<=[A-Za-z0-9]-)(?=[A-Z]{2,}(?![a-z]))"
    + "".join(rf"|-(?<=\b(?i:{p})-)(?=[A-Za-z]{{3}})" for p in _HYPHEN_PREFIXES)
)

def _cut(text: str, s: int, e: int, cuts: list[int], out: list[Token]) -> None:
    """Append tokens for text[s:e] with each one-character separator at ``cuts`` a token of its own."""
    pos = s
    for c in cuts:
        if c > pos:
            out.append(Token(text[pos:c], pos, c))
        out.append(Token(text[c], c, c + 1))
        pos = c + 1
    if pos < e:
        out.append(Token(text[pos:e], pos, e))


def tokenize(text: str, extra_splits: bool = True) -> list[Token]:
    """Tokens of ``text`` with their character offsets.

    Whitespace is never part of a token, except inside a de-identification
    placeholder (``[**Last Name (NamePattern1) 123**]``), which is one token.
    ``extra_splits=False`` keeps scispacy's tokens as they are (for comparison).
    """
    if not text or text.isspace():
        return []
    placeholders = [(m.start(), m.end()) for m in placeholder_regex().finditer(text)]
    masked = text
    if placeholders:
        # Same-length mask keeps every offset; "X" runs are never split by the tokenizer.
        parts = []
        pos = 0
        for s, e in placeholders:
            parts.append(text[pos:s])
            parts.append("X" * (e - s))
            pos = e
        parts.append(text[pos:])
        masked = "".join(parts)
    # spaCy's affix loop is quadratic in a token's length: a run of thousands of
    # non-space characters ("[**[**[**...", a pasted blob) would take minutes. Such
    # runs are blanked for spaCy and cut by a simple regex instead.
    long_runs = [(m.start(), m.end()) for m in _LONG_RUN.finditer(masked)]
    if long_runs:
        chars = list(masked)
        for a, b in long_runs:
            chars[a:b] = " " * (b - a)
        for_spacy = "".join(chars)
    else:
        for_spacy = masked
    doc = get_tokenizer()(for_spacy)
    # Reading offsets as one array is much faster than iterating spaCy tokens.
    rows = doc.to_array(_ATTRS).tolist()
    # If non-space tokens hold exactly the text's non-whitespace characters, none contains whitespace.
    check_ws = sum(r[1] for r in rows if not r[2]) != sum(map(len, for_spacy.split()))
    # Every separator is one character; the regex runs once over the note.
    cuts = [m.start() for m in _EXTRA_SPLIT.finditer(masked)] if extra_splits else []
    ncuts = len(cuts)
    j = 0
    tokens: list[Token] = []
    append = tokens.append
    for s, n, space in rows:
        if space:
            continue
        e = s + n
        if check_ws and _WS.search(masked, s, e):
            for m in _NONWS.finditer(text, s, e):
                append(Token(m.group(), m.start(), m.end()))
            continue
        while j < ncuts and cuts[j] < s:
            j += 1
        if j < ncuts and cuts[j] < e and n > 1:
            k = j
            while k < ncuts and cuts[k] < e:
                k += 1
            _cut(text, s, e, cuts[j:k], tokens)
            j = k
        elif n == 2 and text[s + 1] == "." and text[s].isupper() and text[e : e + 1] in ("", "\n", "\r"):
            # "hemophilia A or B." at a line end: the dot ends the sentence, it is no initial.
            append(Token(text[s], s, s + 1))
            append(Token(".", s + 1, e))
        else:
            append(Token(text[s:e], s, e))
    if long_runs:
        for a, b in long_runs:
            tokens.extend(Token(text[m.start() : m.end()], m.start(), m.end()) for m in SIMPLE_TOKEN.finditer(masked, a, b))
        tokens.sort(key=lambda t: t.start)
    if placeholders:
        tokens = _fix_placeholders(text, tokens, placeholders)
    return tokens


def _fix_placeholders(text: str, tokens: list[Token], placeholders: list[tuple[int, int]]) -> list[Token]:
    """Make every placeholder exactly one token (a mask glued to a word is cut off it)."""
    starts = [s for s, _ in placeholders]
    out: list[Token] = []
    for tok in tokens:
        i = bisect_right(starts, tok.end - 1) - 1
        # Placeholders that can intersect tok: those starting before tok.end.
        cuts = set()
        while i >= 0 and placeholders[i][1] > tok.start:
            ps, pe = placeholders[i]
            if ps > tok.start:
                cuts.add(ps)
            if pe < tok.end:
                cuts.add(pe)
            i -= 1
        if not cuts:
            out.append(tok)
            continue
        bounds = [tok.start, *sorted(cuts), tok.end]
        for a, b in zip(bounds, bounds[1:]):
            out.append(Token(text[a:b], a, b))
    return out


# ---------------------------------------------------------------- sentences

_FUNCTION_WORDS = frozenset("of and or the in on for to with at by a an & / -".split())
# A header: up to 7 words at a line or clause start before a colon; a colon
# followed by a number is a field ("BP: 120/80", "10:30"), not a header.
_HEADER_RE = re.compile(
    r"(?:(?<=^)|(?<=[\r\n,.;]))[ \t]*(?P<h>[A-Za-z][A-Za-z0-9/&'()\-]*(?:[ \t]+[A-Za-z0-9/&'()\-]+){0,6})[ \t]*:(?![ \t]*[0-9])",
    re.M,
)
_LIST_NUMBER = re.compile(r"^(?:\d{1,2}|[a-zA-Z])$")
_BULLETS = frozenset("- * • · ‣ ◦ ▪ o #".split())
_FINAL = frozenset(".?!")
WRAP_WIDTH = 50  # a line shorter than this ends its sentence: it was not wrapped by width


def _line_start(text: str, pos: int) -> int:
    """Offset where the line holding ``pos`` starts (after ``\n`` or a lone ``\r``)."""
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def normalize_section(header: str) -> str:
    """``"HISTORY OF  PRESENT ILLNESS:"`` → ``"history of present illness"``."""
    return " ".join(header.strip().rstrip(":").split()).lower()


def _is_header(h: str, at_line_start: bool) -> bool:
    words = h.split()
    letters = [c for c in h if c.isalpha()]
    if len(letters) < 2:
        return False
    if h.upper() == h:
        return True  # ALL CAPS anywhere at a clause start
    if not at_line_start or len(words) > 5:
        return False
    # Title Case at line start: "Past Medical History:", "Vitals:".
    return all(w[0].isupper() or w.lower() in _FUNCTION_WORDS for w in words)


def _find_headers(text: str) -> list[tuple[int, int, str]]:
    """(start, end incl. colon, normalized name) of section headers in ``text``."""
    out = []
    for m in _HEADER_RE.finditer(text):
        s = m.start("h")
        before = text[_line_start(text, s) : s]
        # Line start, or glued to a comma as in mtsamples' ",Neck:  Supple".
        line_start = not before.strip() or before.endswith(",")
        if _is_header(m.group("h"), line_start):
            out.append((s, m.end(), normalize_section(m.group("h"))))
    return out


find_headers = _find_headers  # the section headers split_sentences uses, for other steps (attributes)


def split_sentences(doc: Document) -> list[Sentence]:
    """Sentences of ``doc`` with tokens carrying document offsets and the section each falls under."""
    text = doc.text
    tokens = tokenize(text)
    if not tokens:
        return []
    headers = _find_headers(text) if ":" in text else []
    header_at: dict[int, tuple[int, str]] = {}  # token start -> (header end, name)
    for s, e, name in headers:
        header_at[s] = (e, name)

    sentences: list[Sentence] = []
    section = ""
    current: list[Token] = []
    header_end = -1  # end offset of the header being read, -1 outside a header
    list_marker_at = -1  # index (in current) of a list number token at sentence start
    doc_id = doc.id
    n = len(tokens)

    def flush() -> None:
        nonlocal current
        if current:
            sentences.append(Sentence(doc_id, tuple(current), section))
            current = []

    prev: Token | None = None
    for i in range(n):
        tok = tokens[i]
        ttext = tok.text
        if prev is not None:
            boundary = False
            if header_end >= 0 and tok.start >= header_end:
                if ttext == "," and "\n" not in text[prev.end : tok.start]:
                    header_end = tok.end  # mtsamples' "PLAN:," keeps its comma
                else:
                    boundary = True  # the header sentence ends at its colon
                    header_end = -1
            elif tok.start in header_at:
                boundary = True
            else:
                gap = text[prev.end : tok.start]
                ptext = prev.text
                breaks = gap.count("\n") or gap.count("\r")  # old Mac files end lines with \r alone
                if breaks:
                    # A line continues the sentence only when it looks hard-wrapped: it
                    # starts lower-case (or with a placeholder) after a long line with no
                    # final punctuation.
                    if (
                        breaks > 1
                        or ptext[-1] in ".?!:;"
                        or not (ttext[0].islower() or placeholder_regex().fullmatch(ttext))
                        or ttext in _BULLETS
                        or prev.end - _line_start(text, prev.end) < WRAP_WIDTH
                    ):
                        boundary = True
                elif ptext in _FINAL and gap:
                    # "2.  Samples": the dot of a list number is not a sentence end.
                    if not (list_marker_at == len(current) - 2):
                        first = ttext[0]
                        if first.isupper() or ttext in _BULLETS or first in "\"'([" or (
                            first in "*_<" and placeholder_regex().fullmatch(ttext)  # "... today. **NAME[X] said"
                        ):
                            boundary = True
                        elif first.isdigit():
                            # "EC 1. 1. 1. 49": a number's dot before another number is no end.
                            boundary = len(current) < 2 or not current[-2].text.isdigit()
                elif ptext == "," and not gap and _LIST_NUMBER.match(ttext) and i + 1 < n:
                    # mtsamples' ",2.  Samples" list items.
                    nxt = tokens[i + 1]
                    boundary = nxt.text in (".", ")") and nxt.start == tok.end
            if boundary:
                flush()
        if not current:
            list_marker_at = -1
            if tok.start in header_at:
                header_end, section = header_at[tok.start]
            elif i + 1 < n and _LIST_NUMBER.match(ttext) and tokens[i + 1].text in (".", ")"):
                list_marker_at = 0
        current.append(tok)
        prev = tok
    flush()
    return sentences
