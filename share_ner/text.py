"""Tokens with document offsets, and sentences that follow how clinical notes are written.

Tokenization is spaCy's tokenizer with the rules of :mod:`share_ner.token_rules`
(scispaCy's ``combined_rule_tokenizer`` on ``spacy.blank("en")``, rebuilt; it keeps
``h/o``, ``IL-6`` and ``3/12/2020`` whole), built once per process on first use and
shared. On top of it:

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
from bisect import bisect_left, bisect_right
from functools import partial
from itertools import accumulate
from typing import Any

from share_ner.document import Document, Sentence, Token
from share_ner.placeholders import placeholder_regex
from share_ner.spacy_import import import_spacy
from share_ner.token_rules import rule_tokenizer

__all__ = ["PLACEHOLDER_RE", "find_headers", "get_tokenizer", "normalize_section", "split_sentences", "tokenize"]

# [**...**] placeholders of MIMIC-III alone (every style in use: share_ner.placeholders.placeholder_regex()).
PLACEHOLDER_RE = re.compile(r"\[\*\*(?:(?!\*\*\]|\[\*\*)[^\r\n]){0,200}?\*\*\]")

_tokenizer: Any = None
_ATTRS: list[int] = []  # spaCy's IDX, LENGTH, IS_SPACE attribute ids, set with the tokenizer
_lock = threading.Lock()


def english() -> Any:
    """What a tokenizer factory reads of ``spacy.blank("en")``: a new vocab, English's defaults, its token_match
    (``combined_rule_tokenizer`` here; ``spacy.language.create_tokenizer()`` for English's own tokenizer).

    ``spacy.blank`` would also resolve a pipeline config, import every installed package's spaCy factories, and
    build English's own tokenizer (all of its special cases), which the rule tokenizer then replaces. The vocab
    computes only IS_SPACE for a new word (the one attribute read here; boundaries do not depend on the others),
    not English's shape, norm and stop-word getters.
    """
    from types import SimpleNamespace

    from spacy.attrs import IS_SPACE
    from spacy.lang.en import English
    from spacy.vocab import Vocab

    defaults = English.Defaults
    return SimpleNamespace(
        vocab=Vocab(lex_attr_getters={IS_SPACE: str.isspace}),
        Defaults=defaults,
        tokenizer=SimpleNamespace(token_match=defaults.token_match),
    )


def get_tokenizer() -> Any:
    """The process-wide rule tokenizer (:func:`share_ner.token_rules.rule_tokenizer`, built on first use)."""
    global _tokenizer
    if _tokenizer is None:
        with _lock:
            if _tokenizer is None:
                import_spacy()  # without spaCy's command line (start-up time)
                from spacy.attrs import IDX, IS_SPACE, LENGTH

                _ATTRS[:] = [IDX, LENGTH, IS_SPACE]

                with warnings.catch_warnings():
                    # A suffix's character class holds "[" and "|" (as scispaCy's does): re warns of a future change.
                    warnings.simplefilter("ignore", FutureWarning)
                    tokenizer = rule_tokenizer(english())
                pairs = _straddle_pairs(tokenizer)
                _STRADDLE.update(pairs)
                _STRADDLE_LEFT.update(a for a, _ in pairs)
                _STRADDLE_RIGHT.update(b for _, b in pairs)
                _tokenizer = tokenizer
    return _tokenizer


_WS = re.compile(r"\s")
_LONG = 300  # non-space characters from which a run is cut by SIMPLE_TOKEN, not spaCy
_LONG_RUN = re.compile(rf"\S{{{_LONG},}}")
SIMPLE_TOKEN = re.compile(r"\w+|[^\w\s]")  # a word or one punctuation mark (also the unit of tokens/s)
_NONWS = re.compile(r"\S+")
_SPACE_RUN = re.compile(r"(\s+)")
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
# words. "IL-6", "HIV-1", "23-year-old" stay whole. Also a slash ending or
# starting a word ("psychiatric/ mental", "progressive /refractory"), a slash
# after a word ending in letters ("3A/iNHL"), ")" glued before ":" ("(OH):"), a
# hyphen between an upper-case abbreviation and a lower-case word ("ALD-gene")
# and between two lower-case words of five letters or more
# ("syndrome-carrier", "depression-inducer"; "beta-thalassemia" stays whole).
_EXTRA_SPLIT = re.compile(
    # Each alternative starts with its separator so the regex engine can skip
    # straight to candidate characters; conditions follow as lookarounds.
    r",(?<![0-9],)|,(?![0-9])|[.:](?=,)|\uff0c|\)(?=[A-Za-z/:])|/(?<=\)/)|;(?<=[A-Za-z];)(?=[A-Za-z])"
    r"|-(?<=[A-Za-z]{2}-)(?![^\s])|\((?<=[A-Za-z]\()|/(?<=[A-Za-z][A-Za-z0-9]/)(?=[A-Za-z]{2})"
    r"|/(?<=[A-Za-z0-9][A-Za-z]/)(?=[A-Za-z]{2})|/(?<=[A-Za-z0-9]{2}/)(?![^\s])|/(?<![^\s]/)(?=[A-Za-z]{2})"
    r"|-(?<=[A-Z]{2}-)(?=[a-z]{4})|-(?<=[a-z]{5}-)(?=[a-z]{5})"
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


def _mask(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` with every placeholder replaced by as many ``X`` (offsets kept), and the placeholders' spans."""
    placeholders = [(m.start(), m.end()) for m in placeholder_regex().finditer(text)]
    if not placeholders:
        return text, placeholders
    # Same-length mask keeps every offset; "X" runs are never split by the tokenizer.
    parts = []
    pos = 0
    for s, e in placeholders:
        parts.append(text[pos:s])
        parts.append("X" * (e - s))
        pos = e
    parts.append(text[pos:])
    return "".join(parts), placeholders


def tokenize(text: str, extra_splits: bool = True) -> list[Token]:
    """Tokens of ``text`` with their character offsets.

    Whitespace is never part of a token, except inside a de-identification
    placeholder (``[**Last Name (NamePattern1) 123**]``), which is one token.
    ``extra_splits=False`` keeps the rule tokenizer's tokens as they are (for comparison).
    """
    if not text or text.isspace():
        return []
    masked, placeholders = _mask(text)
    tokens = _tokenize_chunks(text, masked) if extra_splits else None
    if tokens is None:
        tokens = _tokenize_whole(text, masked, extra_splits)
    if placeholders:
        tokens = _fix_placeholders(text, tokens, placeholders)
    return tokens


# ---------------------------------------------------------------- tokens, one whitespace-free chunk at a time
#
# spaCy's tokenizer cuts the text at whitespace and tokenizes each chunk on its own (its prefix, suffix and infix
# rules and its special cases see only the chunk); the one exception is its final special-case pass, a phrase
# matcher over the whole Doc whose matches may run across a single space between chunks (see _STRADDLE). So a
# chunk's tokens (with the extra splits, which also look only inside it) are a function of the chunk's string:
# _tokenize_chunks memoizes them per distinct chunk for the process and sends only unseen chunks to spaCy, all of a
# note's in one call. spaCy's own cache stops growing at 10,000 chunks and still builds a Doc per note.

_MEMO_LIMIT = 200_000  # distinct chunks kept (a few tens of MB at most); the memo starts afresh when full
_memo: dict[str, Any] = {}
# (last token of a chunk, first token of the next) pairs that are adjacent tokens of a multi-token pattern of spaCy's
# special-case matcher, and each side's tokens; set with the tokenizer.
_STRADDLE: set[tuple[str, str]] = set()
_STRADDLE_LEFT: set[str] = set()
_STRADDLE_RIGHT: set[str] = set()


def _straddle_pairs(tokenizer: Any) -> set[tuple[str, str]]:
    """Adjacent token pairs of the special-case patterns that spaCy's whole-Doc matcher looks for.

    spaCy adds a special case to that matcher when it has an affix or a space (or always, without
    ``faster_heuristics``); its pattern is the string tokenized without special cases.
    """
    from spacy.tokenizer import Tokenizer

    bare = Tokenizer(
        tokenizer.vocab,
        rules={},
        prefix_search=tokenizer.prefix_search,
        suffix_search=tokenizer.suffix_search,
        infix_finditer=tokenizer.infix_finditer,
        token_match=tokenizer.token_match,
        url_match=tokenizer.url_match,
    )
    pairs = set()
    for rule in tokenizer.rules:
        if tokenizer.faster_heuristics and not (
            tokenizer.find_prefix(rule) or tokenizer.find_infix(rule) or tokenizer.find_suffix(rule) or " " in rule
        ):
            continue
        words = [t.text for t in bare(rule)]
        pairs.update(zip(words, words[1:]))
    return pairs


def _learn(chunks: list[str], memo: dict[str, Any]) -> None:
    """Tokenize ``chunks`` (whitespace-free, new) in one spaCy call and store each one's tokens in ``memo``.

    An entry is the chunk itself when it is one plain token; else (pieces, head, tail, initials): pieces are
    (start, end, text) relative to the chunk, with a fourth field may_be_initial when ``initials``; head/tail are the
    chunk's first/last spaCy token when it can be part of a straddling special case (else None).
    """
    # "\n" between chunks is a token of its own for spaCy, so no special case can run across two of them; and the
    # extra splits look at whitespace or the string's ends alike, so they run once over the joined chunks.
    joined = "\n".join(chunks)
    rows = get_tokenizer()(joined).to_array(_ATTRS).tolist()
    cuts = [m.start() for m in _EXTRA_SPLIT.finditer(joined)]
    cuts.append(len(joined))
    j = 0  # first cut not before the current token
    k = -1
    c = ""
    off = 0
    end = -1  # end of chunk k in joined
    pieces: list[tuple[int, int, str, bool]] = []
    first = ""
    last = ""
    for s, n, space in rows:
        if space:
            continue
        if s >= end:
            if k >= 0:
                _store(memo, c, pieces, first, last)
            k += 1
            c = chunks[k]
            off = end + 1
            end = off + len(c)
            pieces = []
            first = joined[s : s + n]
        e = s + n
        last = joined[s:e]
        while cuts[j] < s:
            j += 1
        a = s - off
        if cuts[j] < e and n > 1:
            pos = s
            while cuts[j] < e:
                x = cuts[j]
                if x > pos:
                    pieces.append((pos - off, x - off, joined[pos:x], False))
                pieces.append((x - off, x + 1 - off, joined[x], False))
                pos = x + 1
                j += 1
            if pos < e:
                pieces.append((pos - off, e - off, joined[pos:e], False))
        else:
            # "A." may be a letter and a sentence end (decided on the note's text, see _tokenize_chunks);
            # a masked placeholder's "X" stands for any character.
            initial = n == 2 and joined[s + 1] in ".X" and joined[s].isupper()
            pieces.append((a, a + n, last, initial))
    _store(memo, c, pieces, first, last)


def _store(memo: dict[str, Any], chunk: str, pieces: list[tuple[int, int, str, bool]], first: str, last: str) -> None:
    """The memo entry of ``chunk`` (see :func:`_learn`); ``first``/``last``: its first and last spaCy token."""
    head = first if first in _STRADDLE_RIGHT else None
    tail = last if last in _STRADDLE_LEFT else None
    initials = any(p[3] for p in pieces)
    if len(pieces) == 1 and not initials and head is None and tail is None:
        memo[chunk] = chunk
    else:
        memo[chunk] = (tuple(pieces) if initials else tuple(p[:3] for p in pieces), head, tail, initials)


def _tokenize_chunks(text: str, masked: str) -> list[Token] | None:
    """Tokens of ``masked`` (``text`` with placeholders masked) chunk by chunk; None if a special case may straddle.

    Token texts come from ``masked``: :func:`_fix_placeholders` gives the tokens in placeholders their own text.
    """
    global _memo
    get_tokenizer()
    memo = _memo
    if len(memo) > _MEMO_LIMIT:
        memo = _memo = {}  # a new dict: another thread may still read the old one
    # chunk, whitespace, chunk, ..., chunk (the first and last may be ""); re's \s is str.isspace, spaCy's whitespace;
    # the text is not all whitespace, so one chunk at least is left
    parts = _SPACE_RUN.split(masked)
    bounds = [0, *accumulate(map(len, parts))]
    chunks = parts[::2]
    starts = bounds[::2]
    ends = bounds[1::2]
    if not chunks[-1]:
        del chunks[-1], starts[-1], ends[-1]
    if not chunks[0]:
        del chunks[0], starts[0], ends[0]
    entries = list(map(memo.get, chunks))
    if None in entries:
        missing = [c for c in set(chunks).difference(memo) if 0 < len(c) < _LONG]
        if missing:
            _learn(missing, memo)
            entries = list(map(memo.get, chunks))
    tokens: list[Token] = []
    append = tokens.append
    tail_end = -1  # end of the last chunk whose last token may start a straddling special case
    prev_tail = ""
    for s, e, entry in zip(starts, ends, entries):
        if entry.__class__ is str:
            append(Token(entry, s, e))
        elif entry is None:
            # spaCy's affix loop is quadratic in a token's length: a run of thousands of non-space characters
            # ("[**[**[**...", a pasted blob) would take minutes. Such runs are cut by a simple regex instead.
            for m in SIMPLE_TOKEN.finditer(masked, s, e):
                a, b = m.span()
                append(Token(text[a:b], a, b))
        else:
            pieces, head, tail, initials = entry
            # one " " after the previous chunk: spaCy's matcher sees the two chunks' tokens as neighbours
            if head is not None and tail_end == s - 1 and masked[tail_end] == " " and (prev_tail, head) in _STRADDLE:
                return None
            if tail is not None:
                tail_end = e
                prev_tail = tail
            if not initials:
                for a, b, t in pieces:
                    append(Token(t, s + a, s + b))
                continue
            for a, b, t, initial in pieces:
                a += s
                b += s
                if initial and text[a + 1] == "." and text[a].isupper() and text[b : b + 1] in ("", "\n", "\r"):
                    # "hemophilia A or B." at a line end: the dot ends the sentence, it is no initial.
                    append(Token(text[a], a, a + 1))
                    append(Token(".", a + 1, b))
                else:
                    append(Token(t, a, b))
    return tokens


def _tokenize_whole(text: str, masked: str, extra_splits: bool) -> list[Token]:
    """Tokens of ``masked`` from one spaCy call over the whole note (before placeholders are made whole).

    The reference that :func:`_tokenize_chunks` reproduces; used when a special case may straddle two chunks.
    """
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
    return tokens


def _fix_placeholders(text: str, tokens: list[Token], placeholders: list[tuple[int, int]]) -> list[Token]:
    """Make every placeholder exactly one token (a mask glued to a word is cut off it), with the text's characters.

    Only tokens that overlap a placeholder change: those are cut at every placeholder boundary inside them.
    """
    starts = [t.start for t in tokens]
    cuts: dict[int, set[int]] = {}  # index of a token overlapping a placeholder -> boundaries strictly inside it
    for ps, pe in placeholders:
        i = bisect_right(starts, ps) - 1
        if i < 0 or tokens[i].end <= ps:
            i += 1
        for k in range(i, bisect_left(starts, pe)):
            tok = tokens[k]
            cuts.setdefault(k, set()).update(x for x in (ps, pe) if tok.start < x < tok.end)
    out: list[Token] = []
    pos = 0
    for k in sorted(cuts):
        out.extend(tokens[pos:k])
        tok = tokens[k]
        bounds = [tok.start, *sorted(cuts[k]), tok.end]
        for a, b in zip(bounds, bounds[1:]):
            out.append(Token(text[a:b], a, b))
        pos = k + 1
    out.extend(tokens[pos:])
    return out


# ---------------------------------------------------------------- sentences

_FUNCTION_WORDS = frozenset("of and or the in on for to with at by a an & / -".split())
# A header: up to 7 words at a line or clause start before a colon; a colon
# followed by a number is a field ("BP: 120/80", "10:30"), not a header.
_HEADER_BODY = r"[ \t]*(?P<h>[A-Za-z][A-Za-z0-9/&'()\-]*(?:[ \t]+[A-Za-z0-9/&'()\-]+){0,6})[ \t]*:(?![ \t]*[0-9])"
_HEADER_AT_START = re.compile(_HEADER_BODY)  # at the text's start
# After a line break or ",.;" (none of them can be inside a header, so matching them instead of looking behind
# finds the same headers, and lets the regex engine skip straight to those characters).
_HEADER_RE = re.compile(r"[\r\n,.;]" + _HEADER_BODY)
_LETTER = re.compile("[A-Za-z]")  # the only letters a header can hold
_LIST_NUMBER = re.compile(r"^(?:\d{1,2}|[a-zA-Z])$")
_BULLETS = frozenset("- * • · ‣ ◦ ▪ o #".split())
_FINAL = frozenset(".?!")
_AFTER_RE = re.compile(r"[.?!,]")  # tokens after which a sentence may end
_BREAK = re.compile(r"[\r\n]+")
WRAP_WIDTH = 50  # a line shorter than this ends its sentence: it was not wrapped by width


def _line_start(text: str, pos: int) -> int:
    """Offset where the line holding ``pos`` starts (after ``\n`` or a lone ``\r``)."""
    return max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1


def normalize_section(header: str) -> str:
    """``"HISTORY OF  PRESENT ILLNESS:"`` → ``"history of present illness"``."""
    return " ".join(header.strip().rstrip(":").split()).lower()


def _is_header(h: str, at_line_start: bool) -> bool:
    words = h.split()
    if not _LETTER.search(h, 1):  # fewer than two letters (the header regex's first character is one)
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
    first = _HEADER_AT_START.match(text)
    matches = _HEADER_RE.finditer(text, first.end() if first else 0)
    for m in [first, *matches] if first else matches:
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
    n = len(tokens)
    starts = [t.start for t in tokens]
    # The rules below can end a sentence before token i only after ". ? ! ,", after a line break, at a header or
    # where a header ends: those tokens are visited, the others just join their sentence.
    # (bisect_right of a ". ? ! ," gives the token after the one it starts; others found are harmless extra visits)
    visit = set(map(partial(bisect_right, starts), [m.start() for m in _AFTER_RE.finditer(text)]))
    after_break = partial(bisect_left, starts)
    visit.update(map(after_break, [m.start() for m in _BREAK.finditer(text)]))
    visit.update(map(after_break, header_at))
    visit.discard(0)
    order = sorted(visit)
    order.append(n)

    sentences: list[Sentence] = []
    doc_id = doc.id
    section = ""
    first = 0  # index of the current sentence's first token
    header_end = -1  # end offset of the header being read, -1 outside a header
    list_marker_at = -1  # 0 when the sentence starts with a list number ("2." or "b)"), else -1
    pending = n  # the first token at or after header_end, visited too
    tok = tokens[0]
    ttext = tok.text
    if tok.start in header_at:
        header_end, section = header_at[tok.start]
        pending = bisect_left(starts, header_end, 1)
    elif n > 1 and _LIST_NUMBER.match(ttext) and tokens[1].text in (".", ")"):
        list_marker_at = 0
    k = 0
    while True:
        i = order[k]
        if pending <= i:
            i = pending
            pending = n
        if i >= n:
            break
        if order[k] == i:
            k += 1
        tok = tokens[i]
        prev = tokens[i - 1]
        ttext = tok.text
        boundary = False
        if header_end >= 0 and tok.start >= header_end:
            if ttext == "," and "\n" not in text[prev.end : tok.start]:
                header_end = tok.end  # mtsamples' "PLAN:," keeps its comma
                pending = i + 1
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
                # "2.  Samples": the dot of a list number is not a sentence end (nor is a sentence's first token).
                if list_marker_at != i - first - 2:
                    lead = ttext[0]
                    if lead.isupper() or ttext in _BULLETS or lead in "\"'([" or (
                        lead in "*_<" and placeholder_regex().fullmatch(ttext)  # "... today. **NAME[X] said"
                    ):
                        boundary = True
                    elif lead.isdigit():
                        # "EC 1. 1. 1. 49": a number's dot before another number is no end.
                        boundary = i - first < 2 or not tokens[i - 2].text.isdigit()
            elif ptext == "," and not gap and _LIST_NUMBER.match(ttext) and i + 1 < n:
                # mtsamples' ",2.  Samples" list items.
                nxt = tokens[i + 1]
                boundary = nxt.text in (".", ")") and nxt.start == tok.end
        if boundary:
            sentences.append(Sentence(doc_id, tuple(tokens[first:i]), section))
            first = i
            list_marker_at = -1
            if tok.start in header_at:
                header_end, section = header_at[tok.start]
                pending = bisect_left(starts, header_end, i + 1)
            elif i + 1 < n and _LIST_NUMBER.match(ttext) and tokens[i + 1].text in (".", ")"):
                list_marker_at = 0
    sentences.append(Sentence(doc_id, tuple(tokens[first:]), section))
    return sentences
