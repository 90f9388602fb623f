"""ConText over a note's mentions: which trigger phrases reach each mention, and the attributes they set.

The algorithm is ConText's (Harkema et al., J Biomed Inform 2009), on character offsets:

* every trigger, pseudo-trigger and terminator of the rules is found by ONE regular expression, built as a word
  trie (so the engine branches on the next word, not on each phrase), run once over the note; a pseudo-trigger
  ("no increase") is longer than the trigger inside it and wins at that position, setting nothing;
* sentences are cut once per note (:func:`sentence_starts`); a trigger reaches a mention in its own sentence
  only: a ``forward`` trigger the mentions after it, ``backward`` those before it, ``bidirectional`` both,
  unless a terminator of that attribute ("but") lies between them or the rule's window of words is exceeded;
  an ``around`` trigger has a part before the mention and a part after it ("cross ... off");
* a discontiguous mention is reached when any of its fragments is, and a trigger between its fragments
  ("abdomen: no tenderness" as abdomen ... tenderness) applies to the fragment after it;
* of several triggers of one attribute, the nearest to the mention wins;
* when no trigger sets an attribute, the section the mention is in may (``FAMILY HISTORY:`` sets the subject,
  ``PAST MEDICAL HISTORY:`` DocTime before); sections are the headers :mod:`share_ner.text` finds;
* the body location is the anatomy name :class:`share_ner.attributes.anatomy.AnatomyMatcher` finds for it.

Each value that is not the default keeps its cue's spans, as ShARe/CLEF 2014 Task 2 does.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from typing import Any, Iterable, Sequence

from share_ner.attributes.anatomy import AnatomyMatcher
from share_ner.attributes.patterns import _trie_pattern
from share_ner.attributes.rules import GAP, PSEUDO, TERMINATE, Rule, load_rules, normalize_phrase
from share_ner.document import ATTRIBUTE_VALUES, BODY_LOCATION_NULL, Attributes, Document, Mention, Span
from share_ner.text import find_headers

__all__ = ["ContextMatcher", "sentence_starts"]

# Where a sentence starts: after . ! ? and whitespace before a capital, digit or bracket; after a blank line;
# at a line starting with a capital, digit or bullet; at a numbered list item ("2) ", "3. "); after a run of three
# or more spaces before a capital (a line break flattened into spaces, as in exported report text). The tagger's
# own sentence splitter tokenizes with spaCy first (about 7,000 notes a CPU second): too slow for this step, which
# needs sentence limits only.
_BOUNDARY = re.compile(
    # the lookahead lets the engine skip every other character at once
    r"(?=[.!?\n\r \t])(?:[.!?]+[\"')\]]*[ \t]+(?=[A-Z0-9\[(\"'])|\n[ \t]*(?:\r?\n[ \t]*)+"
    r"|\r?\n[ \t]*(?=[A-Z0-9*•#-])|\s(?=\d{1,2}[.)]\s)|[ \t]{3,}(?=[A-Z0-9*•#]))"
)
_WORD = re.compile(r"\w+")
_DEFAULT = Attributes()
_DEFAULTS = tuple((name, allowed[0]) for name, allowed in ATTRIBUTE_VALUES.items())
_FORWARD = frozenset(("forward", "bidirectional"))
_BACKWARD = frozenset(("backward", "bidirectional"))


def sentence_starts(text: str, headers: Iterable[int] = ()) -> list[int]:
    """Sorted start offsets of the note's sentences (0 first); each section header starts one too."""
    starts = {0, *headers}
    starts.update(m.end() for m in _BOUNDARY.finditer(text))
    return sorted(starts)


class ContextMatcher:
    """Compiled ConText rules; :meth:`assign` gives mentions their attributes."""

    def __init__(self, rules: Sequence[Rule] | None = None, anatomy: AnatomyMatcher | None | str = "packaged"
                 ) -> None:
        """``anatomy``: the body sites to look for (default: the packaged list); None leaves body location NULL."""
        self.rules = list(load_rules() if rules is None else rules)
        self.anatomy = AnatomyMatcher.load() if anatomy == "packaged" else anatomy
        if isinstance(self.anatomy, str):
            raise TypeError("anatomy: an AnatomyMatcher, None or 'packaged'")
        by_phrase: dict[str, list[Rule]] = {}
        self.sections: dict[str, list[Rule]] = {}
        # Terminators of punctuation only ("," ";"): looked for between trigger and mention when needed, rather
        # than matched everywhere (commas are most of a note's matches).
        self.marks: list[tuple[str, frozenset[str]]] = []
        for rule in self.rules:
            if rule.attribute == TERMINATE and not re.search(r"\w", rule.phrase):
                self.marks.append((rule.phrase, rule.terminates))
            elif rule.direction == "section":
                self.sections.setdefault(rule.phrase, []).append(rule)
            elif rule.direction == "around":
                head, tail = (normalize_phrase(p) for p in rule.phrase.split(GAP))
                by_phrase.setdefault(head, []).append(rule)
                by_phrase.setdefault(tail, [])  # matched, so that _tail finds it; it sets nothing itself
            else:
                by_phrase.setdefault(rule.phrase, []).append(rule)
        # Section names are matched too, by the same regex: a note naming none needs no header search; and the
        # anatomy names, so that a note is scanned once. Where a site name and a trigger overlap, the longer wins.
        self.site_names = frozenset(self.anatomy.cuis) if self.anatomy is not None else frozenset()
        phrases = set(by_phrase) | set(self.sections) | self.site_names
        self.by_phrase = by_phrase
        self._by_section: dict[str, list[Rule]] = {}  # header name -> its section rules, filled as met
        pattern = _trie_pattern(phrases)
        self.regex = re.compile(pattern)  # run over the note in lower case
        self._pattern = pattern

    @functools.cached_property
    def regex_ci(self) -> re.Pattern[str]:
        """The rules' regex ignoring case, for a note whose lower case changes its length (rare: compiled when
        first needed, not at start-up)."""
        return re.compile(self._pattern, re.IGNORECASE)

    @classmethod
    def load(cls, site_file: str | None = None, anatomy_file: str | None = None) -> "ContextMatcher":
        """The packaged rules, with a site's ``--context-rules`` file on top when given; the packaged body sites,
        or a site's ``--anatomy`` lexicon instead."""
        anatomy = AnatomyMatcher.load(anatomy_file) if anatomy_file else "packaged"
        return cls(load_rules(site_file), anatomy)

    def __reduce__(self) -> tuple[Any, tuple[list[Rule], AnatomyMatcher | None]]:
        return (ContextMatcher, (self.rules, self.anatomy))

    # ------------------------------------------------------------------ per note
    def assign(self, doc: Document, mentions: Sequence[Mention]) -> list[Mention]:
        """``mentions`` of ``doc``, the same ones in the same order, each carrying its :class:`Attributes`."""
        return [m.with_attributes(a) for m, a in zip(mentions, self.attributes(doc, mentions))]

    def attributes(self, doc: Document, mentions: Sequence[Mention]) -> list[Attributes]:
        """The attributes of each of ``mentions`` (mentions of ``doc``)."""
        if not mentions:
            return []
        text = doc.text
        lower = text.lower()
        regex, over = (self.regex, lower) if len(lower) == len(text) else (self.regex_ci, text)
        matches = [(m.start(), m.end(), m.group()) for m in regex.finditer(over)]
        # Matches per sentence: (start, end, phrase).
        hits: dict[int, list[tuple[int, int, str]]] = {}
        starts: list[int] = []
        named_section = False
        found_sites: list[tuple[int, int, str]] = []
        if matches:
            lookup, sections, site_names = self.by_phrase, self.sections, self.site_names
            kept = []
            for s, e, phrase in matches:
                phrase = phrase.lower()
                if phrase not in lookup and phrase not in sections and phrase not in site_names:
                    phrase = " ".join(phrase.split())
                if phrase in sections:
                    named_section = True
                if phrase in lookup:  # a trigger, pseudo-trigger, terminator or an around rule's second part
                    kept.append((s, e, phrase))
                if phrase in site_names:
                    found_sites.append((s, e, self.anatomy.cuis[phrase]))
            # Headers matter only in a note naming a section some rule is about (the header search costs more).
            headers = find_headers(text) if named_section and ":" in text else []
            if kept:
                starts = sentence_starts(text, (s for s, _, _ in headers))
                for s, e, phrase in kept:
                    hits.setdefault(bisect_right(starts, s) - 1, []).append((s, e, phrase))
        else:
            headers = []
        section_at = [s for s, _, _ in headers]
        sites = self.anatomy.locate(text, mentions, found=found_sites) if found_sites else None
        out = []
        for k, mention in enumerate(mentions):
            found = self._triggers(text, mention, starts, hits) if hits else {}
            if headers:
                h = bisect_right(section_at, mention.start) - 1
                if h >= 0:
                    hs, he, name = headers[h]
                    for rule in self._section_rules(name):
                        if rule.attribute not in found:
                            found[rule.attribute] = (0, rule.value, ((hs, he),))
            site = sites[k] if sites is not None else None
            if not found and site is None:
                out.append(_DEFAULT)
                continue
            cues = {a: spans for a, (_, _, spans) in found.items()}
            if site is not None:
                cues["body_location"] = (site[1],)
            out.append(_attributes({a: v for a, (_, v, _) in found.items()}, cues,
                                   BODY_LOCATION_NULL if site is None else site[0]))
        return out

    def _section_rules(self, name: str) -> list[Rule]:
        rules = self._by_section.get(name)
        if rules is None:
            rules = self.sections.get(name)
            if rules is None:
                # "past medical history/surgical history": a rule's section name followed by more words
                rules = [r for phrase, rs in self.sections.items() if name.startswith(phrase + " ")
                         or name.startswith(phrase + "/") for r in rs]
            if len(self._by_section) < 10_000:
                self._by_section[name] = rules
        return rules

    def _triggers(self, text: str, mention: Mention, starts: list[int],
                  hits: dict[int, list[tuple[int, int, str]]]) -> dict[str, tuple[int, str, tuple[Span, ...]]]:
        """attribute -> (distance, value, cue spans) of the nearest trigger reaching ``mention``."""
        found: dict[str, tuple[int, str, tuple[Span, ...]]] = {}
        spans = mention.spans
        seen_sentences = []
        for fs, fe in spans:
            k = bisect_right(starts, fs) - 1
            if k in seen_sentences:
                continue
            seen_sentences.append(k)
            sentence = hits.get(k)
            if not sentence:
                continue
            for ts, te, phrase in sentence:
                rules = self.by_phrase.get(phrase)
                if not rules or any(ts < e and s < te for s, e in spans):
                    continue  # a pseudo-trigger, a terminator or an around rule's tail; or inside the mention
                for rule in rules:
                    attribute = rule.attribute
                    if attribute == PSEUDO or attribute == TERMINATE:
                        continue
                    hit = self._reach(text, rule, ts, te, spans, sentence)
                    if hit is None:
                        continue
                    distance, cue = hit
                    old = found.get(attribute)
                    if old is None or distance < old[0]:
                        found[attribute] = (distance, rule.value, cue)
        return found

    def _reach(self, text: str, rule: Rule, ts: int, te: int, spans: tuple[Span, ...],
               sentence: list[tuple[int, int, str]]) -> tuple[int, tuple[Span, ...]] | None:
        """(distance in characters, cue spans) when the trigger at ``ts:te`` reaches one of the mention's
        fragments in this sentence, else None."""
        direction = rule.direction
        best: tuple[int, tuple[Span, ...]] | None = None
        for fs, fe in spans:
            if fs >= te and (direction in _FORWARD or direction == "around"):
                if self._open(text, rule, te, fs, sentence):
                    if direction == "around":
                        tail = self._tail(text, rule, fe, spans[-1][1], sentence)
                        if tail is None:
                            continue
                        cue = ((ts, te), tail)
                    else:
                        cue = ((ts, te),)
                    if best is None or fs - te < best[0]:
                        best = (fs - te, cue)
            elif fe <= ts and direction in _BACKWARD:
                if self._open(text, rule, fe, ts, sentence) and (best is None or ts - fe < best[0]):
                    best = (ts - fe, ((ts, te),))
        return best

    def _open(self, text: str, rule: Rule, a: int, b: int, sentence: list[tuple[int, int, str]]) -> bool:
        """True when nothing between offsets ``a`` and ``b`` ends ``rule``'s scope."""
        if rule.window is not None and len(_WORD.findall(text, a, b)) > rule.window:
            return False
        attribute = rule.attribute
        for mark, ends in self.marks:
            if attribute in ends and text.find(mark, a, b) >= 0:
                return False
        for s, e, phrase in sentence:
            if s >= a and e <= b:
                for other in self.by_phrase.get(phrase, ()):
                    if other.attribute == TERMINATE and attribute in other.terminates:
                        return False
        return True

    def _tail(self, text: str, rule: Rule, a: int, last_end: int,
              sentence: list[tuple[int, int, str]]) -> Span | None:
        """The span of ``rule``'s second part after offset ``a`` in this sentence, within its window."""
        tail = normalize_phrase(rule.phrase.split(GAP)[1])
        for s, e, phrase in sentence:
            if s >= max(a, last_end) and phrase == tail and self._open(text, rule, a, s, sentence):
                return (s, e)
        return None


def _attributes(values: dict[str, str], cues: dict[str, tuple[Span, ...]],
                body_location: str = BODY_LOCATION_NULL) -> Attributes:
    """An :class:`Attributes` from values the rules loader already checked, without checking them again."""
    out = object.__new__(Attributes)
    put = object.__setattr__
    get = values.get
    for name, default in _DEFAULTS:
        put(out, name, get(name, default))
    put(out, "body_location", body_location)
    object.__setattr__(out, "cues", cues)
    return out


def default_attributes() -> Attributes:
    """Every attribute at its default value (nothing found)."""
    return _DEFAULT


def values_of(attributes: Attributes) -> dict[str, str]:
    """The eight classed attributes' values (``body_location`` aside)."""
    return {name: getattr(attributes, name) for name in ATTRIBUTE_VALUES}

