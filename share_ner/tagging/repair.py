"""Repairs after CRF decoding: brackets left unpaired, D fragments left without a partner, coordinations the CRF
found only in part (:func:`expand_coordinations`).
"""

from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter
from typing import Callable, Iterable, Sequence

from share_ner.document import Mention, Sentence
from share_ner.features.coordination import _PHRASE_BREAKS, COORDINATORS
from share_ner.tagging.resources import TaggerResources


def _token_run_of(sentence: Sentence) -> Callable[[int, int], tuple[int, int] | None]:
    """A function mapping a character span to the (first, last) token indices it covers exactly, else None.

    The first token is found by bisection and the last by a walk from it (tokens are in order and do not overlap;
    a span covers few), so that a sentence's tokens need no index of their own.
    """
    tokens = sentence.tokens
    n = len(tokens)

    def run(start: int, end: int) -> tuple[int, int] | None:
        i = bisect_left(tokens, start, key=_START)
        if i == n or tokens[i].start != start:
            return None
        j = i
        while j < n and tokens[j].end < end:
            j += 1
        return (i, j) if j < n and tokens[j].end == end else None

    return run


_START = attrgetter("start")


def _bracket_depth(text: str) -> int:
    return text.count("(") - text.count(")")


def balance_brackets(sentence: Sentence, mentions: list[Mention]) -> list[Mention]:
    """Repair mentions whose round brackets do not pair up, as gold mentions almost never do.

    An open bracket left unclosed at the end is closed by the next token when it is ``)``
    ("polycystic ovary syndrome (PCOS" + ")"); otherwise the mention is cut before it
    ("tricuspid regurgitation (TR" → "tricuspid regurgitation"). A closing bracket with no
    opening one at the start is matched by the token before when it is ``(``, else the
    mention starts after it ("metastatic) malignant melanoma" → "malignant melanoma").
    A mention left with no tokens is dropped. Gold mentions almost never have unpaired
    brackets (docs/tagger.md counts them).
    """
    tokens = sentence.tokens
    if not any("(" in t.text or ")" in t.text for t in tokens):
        return mentions
    token_run = _token_run_of(sentence)
    out: list[Mention] = []
    changed = False
    for m in mentions:
        runs = []
        for s, e in m.spans:
            run = token_run(s, e)
            if run is None:
                break
            runs.append(list(run))
        depth = sum(_bracket_depth(tokens[k].text) for i, j in runs for k in range(i, j + 1))
        if depth == 0 or len(runs) != len(m.spans):
            out.append(m)
            continue
        changed = True
        if depth > 0:
            i, j = runs[-1]
            if j + 1 < len(tokens) and tokens[j + 1].text == ")" and depth == 1:
                runs[-1][1] = j + 1
            else:
                cut = max((k for k in range(i, j + 1) if "(" in tokens[k].text), default=None)
                if cut is None:  # the open bracket is in an earlier fragment: leave the mention alone
                    out.append(m)
                    continue
                if cut > i:
                    runs[-1][1] = cut - 1
                else:
                    runs.pop()
        else:
            i, j = runs[0]
            if i > 0 and tokens[i - 1].text == "(" and depth == -1:
                runs[0][0] = i - 1
            else:
                cut = min((k for k in range(i, j + 1) if ")" in tokens[k].text), default=None)
                if cut is None:
                    out.append(m)
                    continue
                if cut < j:
                    runs[0][0] = cut + 1
                else:
                    runs.pop(0)
        if runs:
            out.append(Mention(m.doc_id, tuple((tokens[i].start, tokens[j].end) for i, j in runs), m.cui, m.type))
    if not changed:
        return mentions
    return sorted(set(out), key=lambda x: x.spans)


def drop_lone_fragments(sentence: Sentence, tags: Sequence[str], mentions: list[Mention],
                        resources: TaggerResources) -> list[Mention]:
    """Drop a mention made of one D fragment alone (its partner was never tagged) unless it is a known term."""
    if "DB" not in tags and "DI" not in tags:
        return mentions  # no D fragment to drop
    token_run = _token_run_of(sentence)
    out = []
    for m in mentions:
        run = None if m.is_discontiguous else token_run(m.start, m.end)
        if run is not None and all(tags[k] in ("DB", "DI") for k in range(run[0], run[1] + 1)):
            if not resources.term_matcher.lookup(" ".join(t.text for t in sentence.tokens[run[0]:run[1] + 1])):
                continue
        out.append(m)
    return out


def expand_coordinations(sentence: Sentence, mentions: list[Mention], resources: TaggerResources) -> list[Mention]:
    """Complete coordination ellipses next to tagged mentions when the distributed reading is a known term.

    "renal or [liver impairment]": the conjunct "renal" before a coordinator that precedes a
    tagged multi-token mention borrows its head when "renal impairment" is a lexicon or
    gazetteer term, giving the discontiguous mention "renal … impairment". "[hepatitis B] or C":
    the conjunct after the coordinator borrows the head on the left ("hepatitis … C"). A
    contiguous mention the CRF gave to the bare conjunct alone ("renal", "C") is replaced.
    """
    tokens = sentence.tokens
    n = len(tokens)
    lower = [t.text.lower() for t in tokens]
    if COORDINATORS.isdisjoint(lower):
        return mentions  # no coordination to complete
    token_run = _token_run_of(sentence)
    lookup = resources.term_matcher.lookup
    spans_taken = {m.spans for m in mentions}
    covered: set[int] = set()
    contiguous: dict[tuple[int, int], Mention] = {}
    for m in mentions:
        for s, e in m.spans:
            run = token_run(s, e)
            if run is not None:
                covered.update(range(run[0], run[1] + 1))
        if not m.is_discontiguous:
            run = token_run(m.start, m.end)
            if run is not None:
                contiguous[run] = m

    def content(i: int) -> bool:
        return 0 <= i < n and lower[i] not in COORDINATORS and lower[i] not in _PHRASE_BREAKS \
            and any(ch.isalnum() for ch in lower[i])

    def words(i: int, j: int) -> str:
        return " ".join(t.text for t in tokens[i:j + 1])

    added: list[Mention] = []
    removed: set[tuple[int, int]] = set()
    doc_id = sentence.doc_id

    def free_conjunct(a: int, b: int) -> bool:
        """Tokens a..b are content words, untagged or a bare contiguous mention of their own."""
        return all(content(k) for k in range(a, b + 1)) \
            and not any(k in covered and (a, b) not in contiguous for k in range(a, b + 1))

    def borrow(readings: Iterable[tuple[tuple[int, int], tuple[int, int]]], conjunct: tuple[int, int]) -> bool:
        """Add the first distributed reading (two token runs in text order) that is a known term; False if none."""
        for first, second in readings:
            if lookup(words(*first) + " " + words(*second)):
                spans = tuple((tokens[a].start, tokens[b].end) for a, b in (first, second))
                if spans not in spans_taken:
                    added.append(Mention(doc_id, spans))
                    spans_taken.add(spans)
                    removed.add(conjunct)
                return True
        return False

    for (s, e), m in sorted(contiguous.items()):
        if e - s < 1:
            continue
        # Head on the right: X <coord> [s .. e] -> X + tokens j..e for the longest known head.
        c = s - 1
        if c >= 1 and lower[c] in COORDINATORS:
            x_end = c - 1
            for x_start in (x_end, x_end - 1):
                x = (x_start, x_end)
                if not free_conjunct(*x) or borrow(((x, (j, e)) for j in range(s + 1, e + 1)), x):
                    break
        # Head on the left: [s .. e] <coord> X -> tokens s..j + X.
        c = e + 1
        if c + 1 < n and lower[c] in COORDINATORS:
            for x_end in (c + 1, c + 2):
                x = (c + 1, x_end)
                if not free_conjunct(*x) or borrow((((s, j), x) for j in range(e - 1, s - 1, -1)), x):
                    break
    if not added:
        return mentions
    # A bare conjunct that is itself a known term ("asthma or COPD") stays a mention too.
    removed = {r for r in removed if r in contiguous and not lookup(words(*r))}
    kept = [m for m in mentions if not any(contiguous.get(r) is m for r in removed)]
    return sorted(kept + added, key=lambda m: m.spans)
