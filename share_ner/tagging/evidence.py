"""A note's mentions checked against the note itself and the lexicon, after the CRF has tagged them.

The CRF sees a window of words; some decisions need the whole note or the whole lexicon. :class:`Evidence`
makes them, each from evidence, never from a list of the words concerned:

1. **Whole names** (:meth:`Evidence.whole_names`). ShARe's span is a disorder's whole name. A mention is
   widened to the left to the longest term of the model's term lexicon (HPO, ICD-10-CM and the disease names of
   HPO's annotations, training mentions) that ends where it ends ("leukemia" → "T-cell prolymphocytic
   leukemia", "calcinosis" → "tumoral calcinosis"), never over a severity, course or certainty word (ShARe leaves
   those out); else it takes in the body sites and disorder adjectives written just before it ("retropharyngeal
   abscess", "gastric ulcer"), as the distant labels the model learnt from do. A generic head alone (:data:`GENERIC_HEADS`: "disease", "syndrome", "illness") that the text names
   more of takes in the eponym before it ("Castleman's disease", "Moya Moya disease") or the words of its noun
   phrase ("liver disease", "posttraumatic stress disorder"); when the word before it is a stop word or a
   severity, course or certainty word ("history of present illness", "no significant disease") it names no
   disorder and is dropped. After a determiner ("the disease") it is the anaphora ShARe annotates, and stays.
2. **Words folded onto short forms** (:meth:`Evidence.acronyms`). A one-word mention written in lower case
   (in a sentence that is not in capitals) that only the term matcher's plural folding made the key of short
   forms written in capitals ("does" folded to "doe", the key of DOE) is the English word, not the short form;
   a short form written in lower case ("copd", "jvd") or its plural ("DVTs") stays.
3. **Short forms** (:meth:`Evidence.short_forms`), by their senses in the clinical abbreviation list
   (``lexicons/data/clinical_abbreviations.tsv``, whose ``sense`` column marks the expansions that are no
   disorder: *coronary artery bypass graft*, *physical examination*, *mental status*). A short form the note
   defines means what the note says: it stays when its long form is a mention. Otherwise a short form with no
   disorder sense (CABG, BKA) is dropped; one with a single sense, a disorder, stays; an ambiguous one (CP: chest
   pain, cerebral palsy, chronic pancreatitis; PE: pulmonary embolism, physical examination; MS) stays only when
   the note supports a disorder sense: a sense's expansion is written in the note and only disorder senses'
   are, or none is and the short form is named among disorders: in a list of mentions ("SOB and CP", "DVT,
   PE") or in a sentence that holds another mention ("CT showed a left MCA CVA and carotid stenosis").
4. **Defined short forms recur** (:meth:`Evidence.defined_short_forms`). A short form the note defines for a
   mention ("T-cell prolymphocytic leukemia (T-PLL)": the Schwartz & Hearst detector, :func:`find_definitions`, or a
   mention followed by a short form in brackets whose letters its words spell) is a mention wherever it
   recurs in the note; the normalizer gives it the long form's CUI. When the long form the short form spells
   starts before the mention, the mention takes it in: the note names the disorder whole.
"""

from __future__ import annotations

import re
import warnings
from bisect import bisect_right
from functools import lru_cache
from typing import Mapping, Sequence

from share_ner.attributes.anatomy import AnatomyMatcher
from share_ner.document import Document, Mention, Sentence, Token
from share_ner.features.abbreviations import find_definitions
from share_ner.features.matcher import TermMatcher, contains_keys, term_keys, token_keys
from share_ner.features.stopwords import MODIFIER_ADJECTIVE, NOT_MODIFIERS, TERM_STOP_WORDS
from share_ner.tagging.resources import TaggerResources, is_acronym

# Heads that name no disorder by themselves when the text names more of it.
GENERIC_HEADS = frozenset({"disease", "diseases", "syndrome", "syndromes", "illness", "illnesses", "disorder",
                           "disorders"})
# Words before a generic head that make it an anaphora ("the disease", "his illness"), not part of a name.
DETERMINERS = frozenset("a an the this that these those his her their its our your my any some no each every "
                        "another such which whose what".split())
# What stands between the items of a list: a short form among them is named as they are.
LIST_JOINERS = frozenset({",", "and", "or", "/", "&", ";"})
_POSSESSIVE = frozenset({"'s", "'", "’s", "’"})
_INSIDE_WORDS = frozenset({"-", *_POSSESSIVE})  # punctuation a term may take in before its head


@lru_cache(maxsize=1)
def body_sites() -> frozenset[str]:
    """The one-word names of the packaged anatomy list (lung, hepatic, renal)."""
    return frozenset(k for k in AnatomyMatcher.load().cuis if " " not in k)


def is_site_or_qualifier(word: str) -> bool:
    """A body site or disorder adjective that belongs to a disorder's name, not a severity, course or certainty
    word (:data:`NOT_MODIFIERS`)."""
    word = word.lower()
    return (word not in NOT_MODIFIERS and word not in TERM_STOP_WORDS
            and (word in body_sites() or bool(MODIFIER_ADJECTIVE.match(word))))


def _names_part(word: str) -> bool:
    """A word that may be part of a disorder's name before its head: a word (hyphens allowed), not a stop word,
    not a determiner, not a severity, course or certainty word (:data:`NOT_MODIFIERS`)."""
    lowered = word.lower()
    return (lowered.replace("-", "").isalpha() and lowered not in TERM_STOP_WORDS and lowered not in DETERMINERS
            and lowered not in NOT_MODIFIERS)


def in_capitals(sentence: Sentence) -> bool:
    """A sentence with letters, none in lower case: case tells nothing there."""
    return not any(c.islower() for t in sentence.tokens for c in t.text)


class Evidence:
    """The checks of the module docstring for one model: its term lexicon and abbreviation list (``resources``)
    and the abbreviation senses that are no disorder (``other``: (abbreviation, expansion) pairs)."""

    def __init__(self, resources: TaggerResources, other: frozenset[tuple[str, str]] = frozenset()) -> None:
        self.matcher: TermMatcher | None = resources.term_matcher
        self.abbreviations: Mapping[str, Sequence[str]] = resources.features.abbreviations or {}
        self.acronym_keys = resources.acronym_keys
        self.other = other

    def check(self, doc: Document, sentences: Sequence[Sentence], mentions: list[Mention]) -> list[Mention]:
        """``mentions`` of ``doc`` (in ``sentences``) after the four checks, sorted."""
        if not mentions:
            return mentions
        where = _TokenIndex(sentences)
        mentions = self.whole_names(sentences, mentions, where)
        mentions = self.acronyms(sentences, mentions, where)
        mentions, definitions = self.definitions(doc, mentions)
        mentions = self.short_forms(doc, sentences, mentions, definitions, where)
        return self.defined_short_forms(doc, mentions, definitions)

    # ------------------------------------------------------------------ 1. whole names

    def whole_names(self, sentences: Sequence[Sentence], mentions: list[Mention],
                    where: _TokenIndex) -> list[Mention]:
        """Mentions widened to the whole name they end, and lone generic heads that name nothing dropped
        (``where``: the :class:`_TokenIndex` of ``sentences``)."""
        taken = {t for m in mentions for t in _tokens_of(m, where)}
        out = []
        for m in mentions:
            run = _contiguous_run(m, where)
            if run is None:
                out.append(m)
                continue
            s, i, j = run
            sentence = sentences[s]
            first = self._lexicon_start(sentence.tokens, s, i, j, taken)
            if first is None:
                first = self._qualifier_start(sentence, s, i, taken)
            if first is None and j == i and sentence.tokens[i].text.lower() in GENERIC_HEADS:
                first = self._name_before(sentence, s, i, taken)
                if first is None:
                    continue  # the words before it name more, but no disorder: not a mention
            if first is not None and first < i:
                taken.update((s, k) for k in range(first, i))
                m = Mention(m.doc_id, ((sentence.tokens[first].start, m.end),), m.cui, m.type)
            out.append(m)
        return sorted(set(out), key=lambda x: (x.spans, x.cui))

    def _lexicon_start(self, tokens: Sequence[Token], s: int, i: int, j: int, taken: set) -> int | None:
        """The first token of the longest term ending at token ``j`` of sentence ``s`` that starts before ``i``
        and takes in no other mention (``taken``: (sentence, token) pairs), no punctuation but inside words, and
        no severity, course or certainty word; None if none."""
        if self.matcher is None:
            return None
        base = max(j - self.matcher.max_words, 0)
        parts = [token_keys(t.text) for t in tokens[i:j + 1]]  # the word keys of tokens k .. j (k from i down)
        best = None
        for k in range(i - 1, base - 1, -1):
            word = tokens[k].text
            keys = token_keys(word)
            if (s, k) in taken or word.lower() in NOT_MODIFIERS or not keys and word not in _INSIDE_WORDS:
                break
            parts.insert(0, keys)
            if keys and self.matcher.lookup_keys(parts):
                best = k
        return best

    @staticmethod
    def _qualifier_start(sentence: Sentence, s: int, i: int, taken: set) -> int | None:
        """Where a mention starting at token ``i`` starts once the body sites and disorder adjectives just before
        it join ("retropharyngeal abscess"); None when there are none."""
        tokens = sentence.tokens
        k = i
        while k > 0 and (s, k - 1) not in taken and is_site_or_qualifier(tokens[k - 1].text):
            k -= 1
        return k if k < i else None

    def _name_before(self, sentence: Sentence, s: int, i: int, taken: set) -> int | None:
        """Where a generic head at token ``i`` starts once the name before it joins: the eponym ("Castleman 's",
        "Moya Moya"), else the words of its noun phrase (sites, qualifiers: "liver disease", "posttraumatic stress
        disorder"); ``i`` when nothing names more (sentence start, punctuation, a determiner: "the disease");
        None when the words before it name more but no disorder: a stop word ("present illness") or a severity,
        course or certainty word ("significant disease")."""
        tokens = sentence.tokens
        k = i
        if not in_capitals(sentence):
            while k > 0 and (s, k - 1) not in taken and (
                    _is_name_word(tokens[k - 1].text)
                    or tokens[k - 1].text in _POSSESSIVE and k > 1 and _is_name_word(tokens[k - 2].text)):
                k -= 1
            if k == 0 and sum(t.text not in _POSSESSIVE for t in tokens[:i]) > 1:
                k = 1  # a sentence's first word is capitalised whatever it is ("Known Moya Moya disease")
            if k < i and tokens[k].text in _POSSESSIVE:
                k += 1
        if k == i:
            while k > 0 and (s, k - 1) not in taken and _names_part(tokens[k - 1].text):
                k -= 1
        if k < i:
            return k
        before = tokens[i - 1].text.lower() if i > 0 else ""
        return i if not before.replace("-", "").isalpha() or before in DETERMINERS else None

    # ------------------------------------------------------------------ 2. acronyms in lower case

    def acronyms(self, sentences: Sequence[Sentence], mentions: list[Mention],
                 where: _TokenIndex) -> list[Mention]:
        """Mentions of one lower-case word whose key only short forms in capitals have, dropped."""
        out = []
        for m in mentions:
            run = _contiguous_run(m, where)
            if run is not None and run[1] == run[2]:
                s, i, _ = run
                word = sentences[s].tokens[i].text
                keys = token_keys(word)
                if is_lower_case_acronym(word, keys, self.acronym_keys, self.abbreviations, sentences[s]):
                    continue
            out.append(m)
        return out

    # ------------------------------------------------------------------ 3. short forms

    def definitions(self, doc: Document, mentions: list[Mention]
                    ) -> tuple[list[Mention], dict[str, list[tuple[tuple[int, int], tuple[int, int]]]]]:
        """The short forms the note defines: short form → its (short-form span, long-form span) occurrences
        (the Schwartz & Hearst detector, and a mention followed by a short form in brackets whose letters its words spell,
        the first at a word's start: "T-cell prolymphocytic leukemia (T-PLL)"), and ``mentions`` with a mention
        widened to the long form that its short form spells when that starts before it ("prolymphocytic
        leukemia" in "T-cell prolymphocytic leukemia (T-PLL)": the note names the disorder whole)."""
        out: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
        text = doc.text
        if "(" not in text:
            return mentions, out
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # spaCy warns when a note defines nothing
                pairs = find_definitions(text)
        except Exception:  # noqa: BLE001 -- a detector failure only costs this evidence
            pairs = []
        for short, long in pairs:
            out.setdefault(text[short[0]:short[1]], []).append((short, long))
        kept = []
        for m in mentions:
            found = None if m.is_discontiguous else _bracketed_short_form(text, m, mentions)
            if found is not None:
                short, at, start = found
                if start < m.start:
                    m = Mention(m.doc_id, ((start, m.end),), m.cui, m.type)
                if short not in out:
                    out[short] = [((k, k + len(short)), (m.start, m.end)) for k in _occurrences(text, short)]
            kept.append(m)
        return kept, out

    def short_forms(self, doc: Document, sentences: Sequence[Sentence], mentions: list[Mention],
                    definitions: Mapping[str, Sequence[tuple[tuple[int, int], tuple[int, int]]]],
                    where: _TokenIndex) -> list[Mention]:
        """Mentions of a short form of the clinical abbreviation list, kept by the evidence for a disorder
        sense (see the module docstring)."""
        note_keys: list[str] | None = None
        out = []
        for m in mentions:
            run = _contiguous_run(m, where)
            text = doc.text[m.start:m.end]
            senses = self.abbreviations.get(text) if run is not None else None
            if senses and text in definitions:
                longs = [lg for _, lg in definitions[text]]
                if any(_overlap(lg, other.spans) for lg in longs for other in mentions if other is not m):
                    out.append(m)
                continue
            if not senses:
                out.append(m)
                continue
            disorders = [e for e in senses if (text, e) not in self.other]
            if not disorders:
                continue
            if len(senses) == 1:
                out.append(m)
                continue
            if note_keys is None:
                note_keys = [k for s in sentences for t in s.tokens for k in token_keys(t.text)]
            written = {e for e in senses if contains_keys(note_keys, term_keys(e))}
            if written & set(disorders) and not written - set(disorders):
                out.append(m)
            elif not written and self._in_context(doc, sentences, run, mentions, where):
                out.append(m)
        return out

    @staticmethod
    def _in_context(doc: Document, sentences: Sequence[Sentence], run: tuple[int, int, int],
                    mentions: Sequence[Mention], where: _TokenIndex) -> bool:
        """The one-word mention at ``run`` is named among disorders: it stands in a list of mentions ("DVT, PE",
        "SOB and CP"), or its sentence holds another mention that is no short form ("CT showed left MCA CVA,
        bilateral carotid stenosis")."""
        s, i, _ = run
        tokens = sentences[s].tokens
        ends = {where[m.end - 1] for m in mentions}
        starts = {where[m.start] for m in mentions}
        before = i >= 2 and tokens[i - 1].text.lower() in LIST_JOINERS and (s, i - 2) in ends
        after = i + 2 < len(tokens) and tokens[i + 1].text.lower() in LIST_JOINERS and (s, i + 2) in starts
        named = any(at is not None and at[0] == s and at[1] != i and not is_acronym(m.text(doc.text))
                    for m in mentions for at in (where[m.start],))
        return before or after or named

    # ------------------------------------------------------------------ 4. defined short forms recur

    @staticmethod
    def defined_short_forms(doc: Document, mentions: list[Mention],
                            definitions: Mapping[str, Sequence[tuple[tuple[int, int], tuple[int, int]]]]
                            ) -> list[Mention]:
        """``mentions`` and every occurrence of a short form the note defines for one of them."""
        added = []
        for occurrences in definitions.values():
            for short, long in occurrences:
                if not any(_overlap(long, m.spans) for m in mentions):
                    continue
                if not any(_overlap(short, m.spans) for m in (*mentions, *added)):
                    added.append(Mention(doc.id, (short,)))
        return sorted([*mentions, *added], key=lambda x: (x.spans, x.cui)) if added else mentions


def is_lower_case_acronym(word: str, keys: Sequence[str], acronym_keys: frozenset[str],
                          abbreviations: Mapping[str, object], sentence: Sentence) -> bool:
    """``word`` (its word ``keys``) is an English word that the term matcher's plural folding made a short form's
    key ("does" onto DOE): its key is not the word, and only short forms in capitals have it (``acronym_keys``);
    not a short form's plural ("DVTs"), not a short form as written (a real one in lower case: "copd", "jvd"),
    not in a sentence in capitals."""
    return (len(keys) == 1 and keys[0] in acronym_keys and keys[0] != word.lower()
            and any(c.islower() for c in word.removesuffix("s")) and word not in abbreviations
            and not in_capitals(sentence))


def _bracketed_short_form(text: str, m: Mention, mentions: Sequence[Mention]) -> tuple[str, int, int] | None:
    """(short form, its offset, where its long form starts) when ``m`` is followed by a short form in brackets
    ("... (T-PLL)") whose letters, in order, the words ending with ``m`` spell from a word's first letter on,
    starting at most as many words before ``m`` as the short form has letters, over no other mention and no
    punctuation but hyphens; else None."""
    after = text[m.end:m.end + 16]
    inner = after.lstrip(" ")
    if not inner.startswith("(") or ")" not in inner:
        return None
    short = inner[1:inner.index(")")].strip()
    letters = [c.lower() for c in short if c.isalnum()]
    if not is_acronym(short) or not letters:
        return None
    at = m.end + len(after) - len(inner) + 1 + inner[1:].index(short)
    others = [o for o in mentions if o is not m]
    starts = [m.start] + [w.start() for w in _WORD_START.finditer(text, max(0, m.start - 80), m.start)][::-1]
    for k, start in enumerate(starts):
        if k > len(letters) or re.search(r"[^\w\s'-]", text[start:m.start]):
            break
        if start < m.start and any(_overlap((start, m.start), o.spans) for o in others):
            break
        if text[start].lower() == letters[0] and _spells(letters, text[start:m.end].lower()):
            return short, at, start
    return None


def _spells(letters: Sequence[str], words: str) -> bool:
    """``letters`` appear in ``words`` in order."""
    pos = 0
    for ch in letters:
        pos = words.find(ch, pos) + 1
        if not pos:
            return False
    return True


_WORD_START = re.compile(r"(?<![\w'-])\w")


class _TokenIndex(dict):
    """Offset → the (sentence, token) index of the token of ``sentences`` that starts or ends (its last character)
    there, None for any other offset; ``sentences`` in text order (as :func:`share_ner.text.split_sentences` gives
    them: tokens in order, none overlapping). An offset is looked up when first asked, by bisection over the
    sentences' and then the tokens' starts, and kept: a note's mentions ask about a few of its tokens, and an index
    of them all would cost more than the checks."""

    __slots__ = ("_sentences", "_kept", "_firsts", "_starts")

    def __init__(self, sentences: Sequence[Sentence]) -> None:
        super().__init__()
        self._sentences = sentences
        self._kept = [k for k, sentence in enumerate(sentences) if sentence.tokens]  # the sentences with tokens
        self._firsts = [sentences[k].tokens[0].start for k in self._kept]
        self._starts: dict[int, list[int]] = {}  # sentence -> its tokens' starts, made when first needed

    def __missing__(self, offset: int) -> tuple[int, int] | None:
        found = None
        k = bisect_right(self._firsts, offset) - 1
        if k >= 0:
            s = self._kept[k]
            tokens = self._sentences[s].tokens
            starts = self._starts.get(s)
            if starts is None:
                starts = self._starts[s] = [t.start for t in tokens]
            i = bisect_right(starts, offset) - 1
            if offset == tokens[i].start or offset == tokens[i].end - 1:
                found = (s, i)
        self[offset] = found
        return found


def _tokens_of(m: Mention, where: _TokenIndex) -> set[tuple[int, int]]:
    """The (sentence, token) indices of the tokens ``m``'s spans cover (spans on token edges)."""
    out: set[tuple[int, int]] = set()
    for s, e in m.spans:
        first, last = where[s], where[e - 1]
        if first is not None and last is not None and first[0] == last[0]:
            out.update((first[0], t) for t in range(first[1], last[1] + 1))
    return out


def _contiguous_run(m: Mention, where: _TokenIndex) -> tuple[int, int, int] | None:
    """(sentence, first token, last token) of a one-span mention on token edges of one sentence, else None."""
    if len(m.spans) != 1:
        return None
    start, end = m.spans[0]
    first, last = where[start], where[end - 1]
    if first is None or last is None or first[0] != last[0]:
        return None
    return first[0], first[1], last[1]


def _is_name_word(word: str) -> bool:
    """A capitalised word that may be (part of) an eponym: "Castleman", "Moya", "Guillain-Barré"; not a stop
    word ("The", "His")."""
    parts = word.split("-")
    return (all(p[:1].isupper() and p[1:].islower() and p.isalpha() for p in parts)
            and word.lower() not in TERM_STOP_WORDS and word.lower() not in DETERMINERS)


def _overlap(span: tuple[int, int], spans: Sequence[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in spans)


def _occurrences(text: str, short: str) -> list[int]:
    """Where ``short`` occurs in ``text`` as a whole word."""
    out = []
    k = text.find(short)
    while k >= 0:
        before = text[k - 1] if k else " "
        after = text[k + len(short)] if k + len(short) < len(text) else " "
        if not before.isalnum() and not after.isalnum():
            out.append(k)
        k = text.find(short, k + 1)
    return out
