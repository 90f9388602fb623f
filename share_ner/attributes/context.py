"""ConText over a note's mentions: which trigger phrases reach each mention, and the attributes they set.

The algorithm is ConText's (Harkema et al., J Biomed Inform 2009), on character offsets:

* every trigger, pseudo-trigger and terminator of the rules is found by ONE regular expression, built as a word
  trie (so the engine branches on the next word, not on each phrase), run once over the note; a pseudo-trigger
  ("no increase") is longer than the trigger inside it and wins at that position, setting nothing;
* sentences are cut once per note (:func:`sentence_starts`); a trigger reaches the mention fragments of its own
  sentence: a ``forward`` trigger those after it, ``backward`` those before it, ``bidirectional`` both, unless a
  terminator of that attribute lies between them or the rule's window of words is exceeded; a terminator whose
  direction is ``clause`` (", and") ends a forward scope only when no comma lies between the trigger and it (a
  list: "no A, B, and C" reaches C; "no A, and B" does not reach B); an ``around`` trigger has a part before the
  mention and a part after it ("cross ... off");
* a negation trigger that begins a disorder name of the lexicon given as ``names`` (the model's terms, "non-small
  cell lung cancer", "non-Hodgkin lymphoma") is a word of that name, not a cue, for every mention;
* a discontiguous mention is reached when any of its fragments is, and a trigger between its fragments
  ("abdomen: no tenderness" as abdomen ... tenderness) applies to the fragment after it; a trigger inside the
  mention's own spans is not applied to it;
* of several triggers of one attribute, the nearest to the mention wins (on a tie, the earlier in the text, then
  the rule listed first);
* when no trigger sets an attribute, the section the mention is in may (``FAMILY HISTORY:`` sets the subject,
  ``PAST MEDICAL HISTORY:`` DocTime before); sections are the headers :mod:`share_ner.text` finds;
* the body location is the anatomy name :class:`share_ner.attributes.anatomy.AnatomyMatcher` finds for it.

Matching is linear in a sentence's length (:meth:`ContextMatcher._sweep`): one pass forward and one backward over
the sentence's triggers, terminators and mention fragments in text order keeps, per attribute, a stack of the
triggers whose scope is still open. A terminator closes those before it; a trigger found beyond its window is
dropped for good (later fragments are farther still); the top of the stack is the nearest trigger that reaches.
Each trigger is pushed and dropped once, whatever the number of mentions.

Each value that is not the default keeps its cue's spans, as ShARe/CLEF 2014 Task 2 does; cues are listed in the
attributes' order (:data:`share_ner.document.ATTRIBUTE_NAMES`).
"""

from __future__ import annotations

import copy
import functools
import re
from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Sequence

from share_ner.attributes.anatomy import AnatomyMatcher
from share_ner.attributes.patterns import _trie_pattern, more_words
from share_ner.attributes.rules import CLAUSE, GAP, PSEUDO, TERMINATE, TRIGGERS, Rule, load_rules, normalize_phrase
from share_ner.document import (
    ATTRIBUTE_NAMES,
    ATTRIBUTE_VALUES,
    BODY_LOCATION_NULL,
    Attributes,
    Document,
    Mention,
    Span,
)
from share_ner.features.matcher import TermMatcher, fold_plural, is_term, token_keys
from share_ner.tagging.resources import TRAIN_SEMTYPE, WEAK_TRAIN_SEMTYPE
from share_ner.text import find_headers

__all__ = ["ContextMatcher", "sentence_starts"]

# Where a sentence starts: after . ! ? and whitespace (or a comma: a line break flattened into ".,", as exported
# transcriptions have it) before a capital, digit or bracket; after a blank line;
# at a line starting with a capital, digit or bullet; at a numbered list item ("2) ", "3. "); after a run of three
# or more spaces before a capital (a line break flattened into spaces, as in exported report text). The tagger's
# own sentence splitter tokenizes with spaCy first (about 7,000 notes a CPU second): too slow for this step, which
# needs sentence limits only. A run of marks or spaces is tried from its first character only (the lookbehinds):
# tried from each, a long run would cost its length squared.
_BOUNDARY = re.compile(
    # the lookahead lets the engine skip every other character at once
    r"(?=[.!?\n\r \t])(?:(?<![.!?])[.!?]+[\"')\]]*(?:[ \t]+|,[ \t]*)(?=[A-Z0-9\[(\"'])|\n[ \t]*(?:\r?\n[ \t]*)+"
    r"|\r?\n[ \t]*(?=[A-Z0-9*•#-])|\s(?=\d{1,2}[.)]\s)|(?<![ \t])[ \t]{3,}(?=[A-Z0-9*•#]))"
)
_KEY = re.compile(r"[^\W_]+")  # a word of a term matcher's key (share_ner.features.matcher)
_DEFAULT = Attributes()
_DEFAULTS = tuple((name, allowed[0]) for name, allowed in ATTRIBUTE_VALUES.items())
_FORWARD = frozenset(("forward", "bidirectional", "around"))
_BACKWARD = frozenset(("backward", "bidirectional"))
_NEGATION = "negation"
_ORDER = {name: k for k, name in enumerate(ATTRIBUTE_NAMES)}  # cues are listed in this order
_TRAINED = frozenset((TRAIN_SEMTYPE, WEAK_TRAIN_SEMTYPE))  # a term matcher's types of training mentions

# One trigger occurrence in a sentence: start, end, the rule's rank among its phrase's rules, the rule, and the
# stack it goes on (its attribute; an around rule: its attribute and phrase, since its tail is its own).
_Cue = tuple[int, int, int, Rule, tuple[str, str]]
# One terminator occurrence: start, end, the attributes it ends, whether it is a clause terminator.
_End = tuple[int, int, frozenset[str], bool]
# The best trigger found for a mention's attribute: (distance, trigger start, rank, fragment), value, cue spans.
_Found = tuple[tuple[int, int, int, int], str, tuple[Span, ...]]


def sentence_starts(text: str, headers: Iterable[int] = ()) -> list[int]:
    """Sorted start offsets of the note's sentences (0 first); each section header starts one too."""
    starts = {0, *headers}
    starts.update(m.end() for m in _BOUNDARY.finditer(text))
    return sorted(starts)


def _drop(stack: list[int], at: list[int], lo: int, hi: int) -> None:
    """Remove from ``stack`` (trigger numbers, ``at`` increasing up the stack) those whose ``at`` is in
    ``(lo, hi]``; the few above ``hi`` (a trigger overlapping the terminator) stay."""
    top = len(stack)
    while top and at[stack[top - 1]] > hi:
        top -= 1
    bottom = top
    while bottom and at[stack[bottom - 1]] > lo:
        bottom -= 1
    if bottom < top:
        del stack[bottom:top]


class ContextMatcher:
    """Compiled ConText rules; :meth:`assign` gives mentions their attributes."""

    def __init__(self, rules: Sequence[Rule] | None = None, anatomy: AnatomyMatcher | None | str = "packaged",
                 names: TermMatcher | None = None) -> None:
        """``anatomy``: the body sites to look for (default: the packaged list); None leaves body location NULL.
        ``names``: disorder names (a model's term matcher): a negation trigger that begins one ("non-Hodgkin
        lymphoma") is part of the name, no cue; None: every negation trigger is a cue."""
        self.rules = list(load_rules() if rules is None else rules)
        self.anatomy = AnatomyMatcher.load() if anatomy == "packaged" else anatomy
        if isinstance(self.anatomy, str):
            raise TypeError("anatomy: an AnatomyMatcher, None or 'packaged'")
        self.names = names
        self._name_starts: dict[str, Any] = {}  # trigger phrase -> the names' trie node after its words
        by_phrase: dict[str, list[Rule]] = {}
        self.sections: dict[str, list[Rule]] = {}
        # Terminators of punctuation only ("," ";"): looked for in a sentence where a trigger of an attribute they
        # end was found, rather than matched everywhere (commas are most of a note's matches).
        self.marks: list[tuple[str, frozenset[str], bool]] = []
        self._tail: dict[str, str] = {}  # an around rule's phrase -> its second part
        # attribute -> the scopes its triggers end ("@negation<TAB>terminate<TAB>uncertainty")
        self._ended_by: dict[str, frozenset[str]] = {}
        for rule in self.rules:
            if rule.attribute == TERMINATE and rule.phrase.startswith(TRIGGERS):
                of = rule.phrase[len(TRIGGERS):]
                self._ended_by[of] = self._ended_by.get(of, frozenset()) | rule.terminates
            elif rule.attribute == TERMINATE and not re.search(r"\w", rule.phrase):
                self.marks.append((rule.phrase, rule.terminates, rule.direction == CLAUSE))
            elif rule.direction == "section":
                self.sections.setdefault(rule.phrase, []).append(rule)
            elif rule.direction == "around":
                head, tail = (normalize_phrase(p) for p in rule.phrase.split(GAP))
                by_phrase.setdefault(head, []).append(rule)
                by_phrase.setdefault(tail, [])  # matched, so that the tail is found; it sets nothing itself
                self._tail[rule.phrase] = tail
            else:
                by_phrase.setdefault(rule.phrase, []).append(rule)
        # Per phrase: the rules that set an attribute (with their rank, for ties) and the scopes it ends.
        self._cues: dict[str, list[tuple[int, Rule, tuple[str, str], bool, bool]]] = {}  # + forward, backward
        self._ends: dict[str, list[tuple[frozenset[str], bool]]] = {}
        for phrase, rules in by_phrase.items():
            for rank, rule in enumerate(rules):
                if rule.attribute == TERMINATE:
                    self._ends.setdefault(phrase, []).append((rule.terminates, rule.direction == CLAUSE))
                elif rule.attribute != PSEUDO:
                    stack = (rule.attribute, rule.phrase if rule.direction == "around" else "")
                    self._cues.setdefault(phrase, []).append(
                        (rank, rule, stack, rule.direction in _FORWARD, rule.direction in _BACKWARD))
        self._tails = frozenset(self._tail.values())
        # Section names are matched too, by the same regex: a note naming none needs no header search; and the
        # anatomy names, so that a note is scanned once. Where a site name and a trigger overlap, the longer wins.
        self.site_names = frozenset(self.anatomy.cuis) if self.anatomy is not None else frozenset()
        phrases = set(by_phrase) | set(self.sections) | self.site_names
        self.by_phrase = by_phrase
        self._by_section: dict[str, list[Rule]] = {}  # header name -> its section rules, filled as met
        # per phrase the regex matches: a section name?, has rules?, has a trigger?, its site's CUI or None
        self._kinds: dict[str, tuple[bool, bool, bool, str | None]] = {
            phrase: (phrase in self.sections, phrase in by_phrase, phrase in self._cues,
                     self.anatomy.cuis[phrase] if phrase in self.site_names else None) for phrase in phrases}
        pattern = _trie_pattern(phrases)
        self.regex = re.compile(pattern)  # run over the note in lower case
        self._pattern = pattern

    @functools.cached_property
    def regex_ci(self) -> re.Pattern[str]:
        """The rules' regex ignoring case, for a note whose lower case changes its length (rare: compiled when
        first needed, not at start-up)."""
        return re.compile(self._pattern, re.IGNORECASE)

    @classmethod
    def load(cls, site_file: str | None = None, anatomy_file: str | None = None,
             names: TermMatcher | None = None) -> "ContextMatcher":
        """The packaged rules, with a site's ``--context-rules`` file on top when given; the packaged body sites,
        or a site's ``--anatomy`` lexicon instead; ``names`` as for the constructor."""
        anatomy = AnatomyMatcher.load(anatomy_file) if anatomy_file else "packaged"
        return cls(load_rules(site_file), anatomy, names)

    def with_names(self, names: TermMatcher | None) -> "ContextMatcher":
        """The same compiled rules with other disorder ``names`` (see the constructor)."""
        other = copy.copy(self)
        other.names = names
        other._name_starts = {}
        return other

    def __reduce__(self) -> tuple[Any, tuple[list[Rule], AnatomyMatcher | None, TermMatcher | None]]:
        return (ContextMatcher, (self.rules, self.anatomy, self.names))

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
        found: list[dict[str, _Found]] = [{} for _ in mentions]
        headers: list[tuple[int, int, str]] = []
        found_sites: list[tuple[int, int, str]] = []
        kinds = self._kinds
        kept = []
        cued = False  # some match is a trigger (not only pseudo-triggers and terminators)
        named_section = False
        for match in regex.finditer(over):
            s, e = match.span()
            phrase = match.group()
            kind = kinds.get(phrase)
            if kind is None:  # other spacing, or the note's own case
                phrase = " ".join(phrase.lower().split())
                kind = kinds.get(phrase)
                if kind is None:  # a letter whose lower case is another length ("İ")
                    continue
            section, ruled, cue, site = kind
            named_section = named_section or section
            if ruled:  # a trigger, pseudo-trigger, terminator or an around rule's second part
                kept.append((s, e, phrase))
                cued = cued or cue
            if site is not None:
                found_sites.append((s, e, site))
        # Headers matter only in a note naming a section some rule is about (the header search costs more).
        if named_section and ":" in text:
            headers = find_headers(text)
        if cued:
            self._triggers(text, over, sentence_starts(text, (s for s, _, _ in headers)), kept, mentions, found)
        section_at = [s for s, _, _ in headers]
        sites = self.anatomy.locate(text, mentions, found=found_sites) if found_sites else None
        out = []
        for k, mention in enumerate(mentions):
            best = found[k]
            if headers:
                h = bisect_right(section_at, mention.start) - 1
                if h >= 0:
                    hs, he, name = headers[h]
                    for rule in self._section_rules(name):
                        if rule.attribute not in best:
                            best[rule.attribute] = ((0, 0, 0, 0), rule.value, ((hs, he),))
            site = sites[k] if sites is not None else None
            if not best and site is None:
                out.append(_DEFAULT)
                continue
            cues = {a: best[a][2] for a in (sorted(best, key=_ORDER.__getitem__) if len(best) > 1 else best)}
            if site is not None:
                cues["body_location"] = (site[1],)
            out.append(_attributes({a: v for a, (_, v, _) in best.items()}, cues,
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

    def _triggers(self, text: str, over: str, starts: list[int], kept: list[tuple[int, int, str]],
                  mentions: Sequence[Mention], found: list[dict[str, _Found]]) -> None:
        """Fill ``found`` (per mention: attribute -> the nearest trigger reaching it) from the matches ``kept``,
        sentence by sentence."""
        if len(starts) == 1:  # one sentence
            hits = {0: kept}
            fragments = {0: [(fs, fe, i, j) for i, m in enumerate(mentions) for j, (fs, fe) in enumerate(m.spans)]}
        else:
            hits = {}
            for s, e, phrase in kept:
                hits.setdefault(bisect_right(starts, s) - 1, []).append((s, e, phrase))
            cues = self._cues
            for k in [k for k, found in hits.items() if not any(phrase in cues for _, _, phrase in found)]:
                del hits[k]  # a sentence without a trigger sets nothing
            fragments = {}
            for i, mention in enumerate(mentions):
                for j, (fs, fe) in enumerate(mention.spans):
                    k = bisect_right(starts, fs) - 1
                    if k in hits:
                        fragments.setdefault(k, []).append((fs, fe, i, j))
        for k, frags in fragments.items():
            end = starts[k + 1] if k + 1 < len(starts) else len(text)
            self._sentence(text, over, starts[k], end, hits[k], frags, mentions, found)

    def _sentence(self, text: str, over: str, s0: int, s1: int, hits: list[tuple[int, int, str]],
                  frags: list[tuple[int, int, int, int]], mentions: Sequence[Mention],
                  found: list[dict[str, _Found]]) -> None:
        """The triggers of one sentence (``s0:s1``, its matches ``hits``) reaching its mention fragments
        ``frags`` (start, end, mention, fragment number)."""
        cues: list[_Cue] = []
        ends: list[_End] = []
        tails: dict[str, list[Span]] = {}
        forward: list[int] = []  # the cues that reach forward, and backward
        backward: list[int] = []
        present: set[str] = set()
        rules_of, ends_of, ended_by, names, tail_phrases = self._cues, self._ends, self._ended_by, self.names, self._tails
        for ts, te, phrase in hits:
            rules = rules_of.get(phrase)
            if rules:
                named = None
                ending: frozenset[str] | None = None
                for rank, rule, stack, fwd, bwd in rules:
                    attribute = rule.attribute
                    if attribute == _NEGATION and names is not None:
                        if named is None:
                            named = self._begins_name(over, phrase, ts, te, s1)
                        if named:
                            continue  # "non-Hodgkin lymphoma": a word of a name
                    if fwd:
                        forward.append(len(cues))
                    if bwd:
                        backward.append(len(cues))
                    cues.append((ts, te, rank, rule, stack))
                    present.add(attribute)
                    if attribute in ended_by:
                        ending = ended_by[attribute] if ending is None else ending | ended_by[attribute]
                if ending:
                    ends.append((ts, te, ending, False))
            closing = ends_of.get(phrase)
            if closing:
                for attributes, clause in closing:
                    ends.append((ts, te, attributes, clause))
            if phrase in tail_phrases:
                tails.setdefault(phrase, []).append((ts, te))
        if not cues:
            return
        for mark, attributes, clause in self.marks:
            if present.isdisjoint(attributes):
                continue
            size = len(mark)
            p = text.find(mark, s0, s1)
            while p >= 0:
                ends.append((p, p + size, attributes, clause))
                p = text.find(mark, p + size, s1)
        if len(frags) > 1:
            frags.sort()
            last_start, first_end = frags[-1][0], min(fe for _, fe, _, _ in frags)
        else:
            last_start, first_end = frags[0][0], frags[0][1]
        closed = _Closed(ends) if tails else None
        # a pass is needed only when some trigger comes before (forward) or after (backward) some fragment
        if forward and cues[forward[0]][1] <= last_start:
            at = [te for _, te, _, _, _ in cues]
            events = [(e, 0, n) for n, (_, e, _, _) in enumerate(ends)]
            events += [(fs, 2, n) for n, (fs, _, _, _) in enumerate(frags)]
            self._sweep(text, s0, cues, at, forward, events, ends, frags, mentions, found, True, tails, closed)
        if backward and cues[backward[-1]][0] >= first_end:
            at = [-ts for ts, _, _, _, _ in cues]
            events = [(-s, 0, n) for n, (s, _, _, clause) in enumerate(ends) if not clause]
            events += [(-fe, 2, n) for n, (_, fe, _, _) in enumerate(frags)]
            self._sweep(text, s0, cues, at, backward, events, ends, frags, mentions, found, False, tails, closed)

    def _sweep(self, text: str, s0: int, cues: list[_Cue], at: list[int], pushed: list[int],
               events: list[tuple[int, int, int]], ends: list[_End], frags: list[tuple[int, int, int, int]],
               mentions: Sequence[Mention], found: list[dict[str, _Found]], forward: bool,
               tails: dict[str, list[Span]], closed: "_Closed | None") -> None:
        """One pass over a sentence, forward (the triggers ``pushed`` reach fragments after them) or backward.
        Positions are mirrored (negated) backward, so that one loop serves both: a trigger is at ``at``, a
        fragment at its ``events`` position (its start forward, minus its end backward), a terminator where the
        pass leaves it; the trigger reaches the fragment when ``at`` is not past it, the difference apart."""
        # the rules of one trigger pushed last-ranked first, so that on a tie the first-ranked is on top
        events += [(at[n], 1, -n) for n in pushed]
        events.sort()
        stacks: dict[tuple[str, str], list[int]] = {}
        for here, kind, n in events:
            if kind == 0:  # a terminator: the triggers before it no longer reach past it
                if not stacks:
                    continue
                s, e, attributes, clause = ends[n]
                if forward:
                    lo, hi = (text.rfind(",", s0, s) if clause else -1), s
                else:
                    lo, hi = -len(text) - 1, -e
                for key, stack in stacks.items():
                    if stack and key[0] in attributes:
                        _drop(stack, at, lo, hi)
            elif kind == 1:
                n = -n
                stack = stacks.get(cues[n][4])
                if stack is None:
                    stacks[cues[n][4]] = [n]
                else:
                    stack.append(n)
            elif stacks:
                fs, fe, i, j = frags[n]
                self._reach(text, stacks, cues, at, here, fs, fe, mentions[i].spans, j, found[i], forward,
                            tails, closed)

    def _reach(self, text: str, stacks: dict[tuple[str, str], list[int]], cues: list[_Cue], at: list[int],
               here: int, fs: int, fe: int, spans: tuple[Span, ...], j: int, best: dict[str, _Found],
               forward: bool, tails: dict[str, list[Span]], closed: "_Closed | None") -> None:
        """For fragment ``j`` (``fs:fe``, at ``here``) of a mention with ``spans``: the nearest open trigger of
        each stack, kept in ``best`` when nearer than what is there."""
        for (attribute, around), stack in stacks.items():
            if not stack:
                continue
            tail: Span | None = None
            x = len(stack) - 1
            while x >= 0:
                n = stack[x]
                ts, te, rank, rule, _ = cues[n]
                if (ts < spans[0][1] and spans[0][0] < te) if len(spans) == 1 else any(
                        ts < e and s < te for s, e in spans):
                    x -= 1  # inside this mention: no cue of it (but of others)
                    continue
                window = rule.window
                if window is not None and (more_words(text, te, fs, window) if forward
                                           else more_words(text, fe, ts, window)):
                    del stack[x]  # beyond its window here, so also at every later fragment of the pass
                    x -= 1
                    continue
                if around:
                    tail = self._tail_of(text, rule, fe, spans[-1][1], tails, closed)
                    if tail is None:
                        break  # no second part after this fragment: no trigger of this stack reaches it
                key = (here - at[n], ts, rank, j)
                old = best.get(attribute)
                if old is None or key < old[0]:
                    best[attribute] = (key, rule.value, ((ts, te), tail) if tail is not None else ((ts, te),))
                break

    def _tail_of(self, text: str, rule: Rule, fe: int, last_end: int, tails: dict[str, list[Span]],
                 closed: "_Closed | None") -> Span | None:
        """The span of ``rule``'s second part after the fragment ending at ``fe`` (and after the mention's last
        fragment) in this sentence, within the rule's window and with no terminator of its attribute between."""
        found = tails.get(self._tail[rule.phrase])
        if not found or closed is None:
            return None
        k = bisect_left(found, (max(fe, last_end), -1))
        if k == len(found):
            return None
        s, e = found[k]  # the first one: a later one is farther, past whatever closes this one
        if rule.window is not None and more_words(text, fe, s, rule.window):
            return None
        return None if closed.between(rule.attribute, fe, s) else (s, e)

    def _begins_name(self, over: str, phrase: str, ts: int, te: int, end: int) -> bool:
        """True when a lexicon name of :attr:`names` starts at ``ts`` with the trigger ``phrase`` (``ts:te``) and
        runs past it (before ``end``). Training mentions among the names are left out: one may hold its own cue
        ("denies cardiac disease")."""
        names = self.names
        if names is None:
            return False
        node = self._name_starts.get(phrase, False)
        if node is False:  # the trie node after the phrase's own words (None: no name begins with them)
            node = names.root
            for word in _KEY.findall(phrase):
                node = node.get(fold_plural(word)) if node is not None else None
            self._name_starts[phrase] = node
        for m in _KEY.finditer(over, te, end):
            if node is None:
                return False
            for key in token_keys(m.group().lower()):
                node = node.get(key)
                if node is None:
                    return False
            if is_term(node) and not _TRAINED.issuperset(names.lookup(over[ts:m.end()])):
                return True
        return False


class _Closed:
    """Which attributes' scopes a sentence's terminators (not the ``clause`` ones) close between two offsets,
    answered by bisection."""

    def __init__(self, ends: list[_End]) -> None:
        by_attribute: dict[str, list[tuple[int, int]]] = {}
        for s, e, attributes, clause in ends:
            if not clause:
                for attribute in attributes:
                    by_attribute.setdefault(attribute, []).append((s, e))
        self._index: dict[str, tuple[list[int], list[int]]] = {}
        for attribute, spans in by_attribute.items():
            spans.sort()
            least = []  # least end of the terminators from each one on
            m = None
            for _, e in reversed(spans):
                m = e if m is None or e < m else m
                least.append(m)
            least.reverse()
            self._index[attribute] = ([s for s, _ in spans], least)

    def between(self, attribute: str, a: int, b: int) -> bool:
        """True when a terminator of ``attribute`` lies within ``a:b``."""
        index = self._index.get(attribute)
        if index is None:
            return False
        k = bisect_left(index[0], a)
        return k < len(index[0]) and index[1][k] <= b


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
