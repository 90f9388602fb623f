"""Learned pairing: which tagged fragments make one mention, and which coordinated conjuncts borrow a head.

The CRF tags fragments (``share_ner.tagging.scheme``: each tag run is a fragment whose tokens belong to the same
mentions); this module joins them. Three kinds of candidate mentions are scored by one logistic-regression model each
(scikit-learn at training time; the weights are stored as JSON and applied with a dot product, so tagging needs no
scikit-learn):

* ``fragments``: a head (``H``) fragment alone, two D/H fragments of a sentence at most :data:`MAX_GAP` tokens
  apart ("aortic root ... dilated", "renal ... failure"), or three with a head among them ("abnormal renal ...
  function"); the same model scores a D fragment left alone with the head of a contiguous mention across a
  coordinator, the CRF's inconsistent tags re-read (:func:`reread_lone`);
* ``lists``: the far conjuncts of a list whose near conjunct the pairing joined with a head ("significant cardiac ,
  vascular , ... , psychiatric , or [metabolic] [disturbances]": the CRF tags the near conjuncts), walked away from
  the head (:func:`extend_lists`);
* ``coordination``: a conjunct next to a coordinator ("renal or [liver impairment]", "[hepatitis B] or C", the
  conjuncts of a list "cardiac, vascular or [metabolic disturbances]") joined with the head of a contiguous mention
  the pairing found: the conjunct's distributed reading, which the CRF often leaves untagged.

Features of a candidate are general cues, never words of one corpus fitted by hand: the fragments' tag families, the
token distance and what lies between the parts (coordinators, commas, brackets, a verb, a colon or semicolon, other
fragments or mentions), the first and last words and the head word, the word shapes and suffixes, and whether the
joined string and each part are lexicon or training-gazetteer terms. Training examples come from the gold mentions
of the training notes, their term lookups from the jackknifed gazetteer of the note's fold (as the CRF's features).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from share_ner.features.coordination import _PHRASE_BREAKS, COORDINATORS
from share_ner.tagging.scheme import _runs
from share_ner.tagging.scheme import fragments as tag_fragments

__all__ = ["MAX_GAP", "PairingModel", "PairingExamples", "coordination_candidates", "extend_lists",
           "fragment_candidates", "list_features", "reread_lone", "train_pairing"]

MAX_GAP = 20  # tokens between two fragments of one candidate mention
MAX_CONJUNCTS = 8  # conjuncts of a list walked away from the mention whose head they borrow
MAX_CONJUNCT_TOKENS = 2  # tokens of one conjunct
THRESHOLD = 0.5  # probability from which a candidate is a mention

_BE = frozenset("is are was were be been being has have had".split())
_GAP_WORDS = COORDINATORS | _PHRASE_BREAKS | _BE | frozenset("of the a an in on to at by from".split())

_CONJUNCTIONS = frozenset({"or", "and", "and/or", "or/and", "nor"})  # coordinators that are words, not punctuation
Runs = tuple[tuple[int, int], ...]  # token runs (first, last) of a candidate, in text order
Lookup = Callable[[str], tuple[str, ...]]


def _bucket(n: int) -> str:
    return str(n) if n < 4 else ("4-5" if n < 6 else ("6-9" if n < 10 else "10+"))


def _shape(word: str) -> str:
    if word.isupper() and len(word) > 1:
        return "AA"
    if word[:1].isupper():
        return "Aa"
    if any(c.isdigit() for c in word):
        return "0"
    return "a" if word.isalpha() else "."


def candidate_features(words: Sequence[str], runs: Runs, kinds: str, lookup: Lookup | None,
                       tags: Sequence[str] | None = None) -> dict[str, float]:
    """The features of one candidate mention: ``runs`` of the sentence's ``words``, ``kinds`` its parts' roles."""
    lower = [w.lower() for w in words]
    f: dict[str, float] = {"bias": 1.0, f"kinds={kinds}": 1.0, f"parts={len(runs)}": 1.0}
    first, last = runs[0][0], runs[-1][1]
    f[f"first={lower[first]}"] = 1.0
    f[f"last={lower[last]}"] = 1.0
    f[f"last_suffix={lower[last][-3:]}"] = 1.0
    f[f"first_shape={_shape(words[first])}"] = 1.0
    for k, (a, b) in enumerate(runs):
        f[f"part{k}_len={_bucket(b - a + 1)}"] = 1.0
        f[f"part{k}_end_suffix={lower[b][-3:]}"] = 1.0
        if a > 0:
            f[f"part{k}_before={lower[a - 1] if lower[a - 1] in _GAP_WORDS else 'w'}"] = 1.0
        if b + 1 < len(words):
            f[f"part{k}_after={lower[b + 1] if lower[b + 1] in _GAP_WORDS else 'w'}"] = 1.0
    for (a1, b1), (a2, b2) in zip(runs, runs[1:]):
        gap = range(b1 + 1, a2)
        f[f"gap={_bucket(len(gap))}"] = 1.0
        content = 0
        for i in gap:
            w = lower[i]
            if w in _GAP_WORDS:
                f[f"gap_has={w}"] = 1.0
            elif any(c.isalnum() for c in w):
                content += 1
                if w.endswith("ed") and len(w) > 4:
                    f["gap_has_ed_word"] = 1.0
            if tags is not None and tags[i] != "O":
                f[f"gap_tag={tags[i][:-1] or 'BI'}"] = 1.0
        f[f"gap_content={_bucket(content)}"] = 1.0
        f[f"pair={lower[b1]}|{lower[b2]}"] = 1.0
    if lookup is not None:
        joined = " ".join(" ".join(words[a:b + 1]) for a, b in runs)
        hit = lookup(joined)
        f["term" if hit else "no_term"] = 1.0
        for st in hit:
            f[f"term_type={st}"] = 1.0
        for k, (a, b) in enumerate(runs):
            if lookup(" ".join(words[a:b + 1])):
                f[f"part{k}_term"] = 1.0
    return f


# ---------------------------------------------------------------- candidates


def fragment_candidates(tags: Sequence[str], max_parts: int = 3) -> list[tuple[Runs, str]]:
    """Candidate mentions from a sentence's D/H fragments: each H alone, each pair at most MAX_GAP tokens apart, and
    (``max_parts`` 3) each triple with an H fragment and at most MAX_GAP tokens between its parts ("[abnormal] renal
    or [liver] [function]": a modifier and a head both shared; 88 of the 630 discontiguous chia/train mentions)."""
    frags = [(fam, a, b) for fam, a, b in tag_fragments(tags) if fam in ("D", "H")]
    out: list[tuple[Runs, str]] = []
    for i, (fam, a, b) in enumerate(frags):
        if fam == "H":
            out.append((((a, b),), "H"))
        for j, (fam2, a2, b2) in enumerate(frags[i + 1:], i + 1):
            if a2 - b - 1 > MAX_GAP:
                break
            out.append((((a, b), (a2, b2)), fam + fam2))
            for fam3, a3, b3 in frags[j + 1:] if max_parts > 2 else ():
                if a3 - b - 1 - (b2 - a2 + 1) > MAX_GAP:
                    break
                if "H" in (fam, fam2, fam3):
                    out.append((((a, b), (a2, b2), (a3, b3)), fam + fam2 + fam3))
    return out


def _conjuncts(lower: Sequence[str], start: int, step: int) -> list[list[tuple[int, int]]]:
    """Conjunct slots of a list walked from token ``start`` (a coordinator) in direction ``step``.

    Each slot is the alternative token runs of one conjunct (1 to MAX_CONJUNCT_TOKENS words, nearest the mention
    first); the walk stops at a phrase break or at a conjunct not followed by another coordinator.
    """
    n = len(lower)

    def content(i: int) -> bool:
        return 0 <= i < n and lower[i] not in COORDINATORS and lower[i] not in _PHRASE_BREAKS \
            and any(c.isalnum() for c in lower[i])

    slots: list[list[tuple[int, int]]] = []
    i = start
    while len(slots) < MAX_CONJUNCTS and 0 <= i < n and lower[i] in COORDINATORS:
        while 0 <= i + step < n and lower[i + step] in COORDINATORS:  # "and / or", ", or"
            i += step
        near = i + step
        if not content(near):
            break
        alts = []
        far = near
        for _ in range(MAX_CONJUNCT_TOKENS):
            if not content(far):
                break
            alts.append((min(near, far), max(near, far)))
            far += step
        slots.append(alts)
        # the next coordinator after the shortest reading's far end
        i = near + step
        if not (0 <= i < n and lower[i] in COORDINATORS):
            i = near + 2 * step  # a two-word conjunct
    return slots


def coordination_candidates(words: Sequence[str], mention: tuple[int, int]) -> list[tuple[Runs, str, int]]:
    """Distributed readings of the conjuncts coordinated with a contiguous mention (tokens s..e): (runs, kinds,
    slot), ``slot`` numbering the conjunct (one reading of each slot at most becomes a mention).

    Head on the right: "X or [s .. e]" gives X + tokens j..e (s < j), and "X or Y [s .. e]" (Y left untagged) X +
    tokens j..e (s <= j); head on the left: "[s .. e] or X" gives tokens s..j + X (j < e), and "[s .. e] Y or X"
    tokens s..j + X (j <= e).
    """
    s, e = mention
    lower = [w.lower() for w in words]
    n = len(lower)
    out: list[tuple[Runs, str, int]] = []
    slot = 0
    for left in (s, s - 1):
        if left < s and not (0 < left and lower[left] not in COORDINATORS and any(c.isalnum() for c in lower[left])):
            continue
        for alts in _conjuncts(lower, left - 1, -1):
            for conj in alts:
                for j in range(left + 1, e + 1):
                    out.append(((conj, (j, e)), "CR", slot))
            slot += 1
    for right in (e, e + 1):
        if right > e and not (right < n - 1 and lower[right] not in COORDINATORS
                              and any(c.isalnum() for c in lower[right])):
            continue
        for alts in _conjuncts(lower, right + 1, 1):
            for conj in alts:
                for j in range(right - 1, s - 1, -1):
                    out.append((((s, j), conj), "CL", slot))
            slot += 1
    return out


def conjunct_status(tags: Sequence[str], run: tuple[int, int]) -> str:
    """How a conjunct's tokens are tagged: ``own`` (exactly a B/I mention of their own), ``free`` (outside or D
    tokens, as the conjuncts of distributed readings are) or ``other``."""
    a, b = run
    part = tags[a:b + 1]
    if part[0] == "B" and all(t == "I" for t in part[1:]) and (b + 1 >= len(tags) or tags[b + 1] != "I"):
        return "own"
    if all(t == "O" or t[0] == "D" for t in part):
        return "free"
    return "other"


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class PairingModel:
    """Logistic-regression weights of the candidate kinds (feature name -> weight), the threshold, and how
    decoding uses them: ``max_parts`` fragments at most in one candidate (:func:`fragment_candidates`), ``reread``
    lone D fragments (:func:`reread_lone`), ``lists``: the list classifier's weights (:func:`extend_lists`; empty:
    no list walk). A ``pairing.json`` without these keys was written before them and decodes as it did (pairs, no
    re-reading, no list walk)."""

    fragments: Mapping[str, float]
    coordination: Mapping[str, float]
    threshold: float = THRESHOLD
    max_parts: int = 3
    reread: bool = True
    lists: Mapping[str, float] = field(default_factory=dict)

    def probability(self, which: str, features: Mapping[str, float]) -> float:
        weights = self.fragments if which == "fragments" else (self.lists if which == "lists" else self.coordination)
        if not weights:
            return 0.0  # a classifier that was not trained accepts nothing
        z = sum(weights.get(k, 0.0) * v for k, v in features.items())
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PairingModel":
        return cls(dict(data["fragments"]), dict(data["coordination"]), float(data.get("threshold", THRESHOLD)),
                   int(data.get("max_parts", 2)), bool(data.get("reread", False)), dict(data.get("lists", {})))

    def to_dict(self) -> dict[str, Any]:
        out = {"threshold": self.threshold, "max_parts": self.max_parts, "reread": self.reread,
               "fragments": dict(sorted(self.fragments.items())),
               "coordination": dict(sorted(self.coordination.items()))}
        if self.lists:  # written only when trained (``list_walk``), so that other models' files stay as they were
            out["lists"] = dict(sorted(self.lists.items()))
        return out

    @classmethod
    def load(cls, path: str | Path) -> "PairingModel":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=0) + "\n", encoding="utf-8")


class PairingExamples:
    """Training examples gathered sentence by sentence from gold mentions (:meth:`add`), fitted by :meth:`fit`."""

    def __init__(self, coordination: bool = True, lists: bool = False) -> None:
        self.coordination = coordination  # gather the coordination classifier's examples too
        self.lists = lists  # and the list classifier's
        self.data: dict[str, tuple[list[dict[str, float]], list[int]]] = {"fragments": ([], []),
                                                                           "coordination": ([], []),
                                                                           "lists": ([], [])}

    def add(self, words: Sequence[str], tags: Sequence[str], gold: Iterable[tuple[int, ...]],
            lookup: Lookup | None) -> None:
        """Examples of one training sentence: its tags (the fragments encoding of ``gold``) and gold token sets."""
        gold_sets = {frozenset(g) for g in gold}
        if "DB" in tags or "HB" in tags:
            xs, ys = self.data["fragments"]
            for runs, kinds in fragment_candidates(tags):
                xs.append(candidate_features(words, runs, kinds, lookup, tags))
                ys.append(_tokens(runs) in gold_sets)
            xs, ys = self.data["lists"]
            lower = [w.lower() for w in words]
            for g in gold_sets if self.lists else ():
                anchor = _list_anchor(tags, _runs(sorted(g)))
                if anchor is None:
                    continue
                for slot, alts in enumerate(_conjuncts(lower, anchor[2], anchor[3])):
                    labels = [_tokens((alt, anchor[1])) in gold_sets for alt in alts]
                    for alt, label in zip(alts, labels):
                        xs.append(list_features(words, lower, anchor, alt, slot, lookup))
                        ys.append(label)
                    if not any(labels):
                        break  # decoding stops at the first conjunct it rejects
        if self.coordination and not COORDINATORS.isdisjoint(w.lower() for w in words):
            xs, ys = self.data["coordination"]
            for g in gold_sets:
                idx = sorted(g)
                if idx[-1] - idx[0] + 1 != len(idx):
                    continue  # coordinations are completed around contiguous mentions
                for runs, kinds, _ in coordination_candidates(words, (idx[0], idx[-1])):
                    xs.append(_coordination_features(words, runs, kinds, lookup, tags))
                    ys.append(_tokens(runs) in gold_sets)

    def fit(self, threshold: float = THRESHOLD) -> PairingModel:
        """Logistic regression (scikit-learn, L2, C = 1, classes balanced) of each candidate kind; a kind with one
        class only gets a constant weight, a kind with no examples none."""
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression

        weights: dict[str, dict[str, float]] = {}
        for which, (xs, ys) in self.data.items():
            if len(set(ys)) < 2:
                weights[which] = {"bias": 10.0 if ys[0] else -10.0} if ys else {}
                continue
            vec = DictVectorizer()
            x = vec.fit_transform(xs)
            model = LogisticRegression(C=1.0, max_iter=1000, class_weight="balanced")
            model.fit(x, ys)
            w = {name: float(c) for name, c in zip(vec.get_feature_names_out(), model.coef_[0]) if abs(c) > 1e-6}
            w["bias"] = w.get("bias", 0.0) + float(model.intercept_[0])
            weights[which] = w
        return PairingModel(weights["fragments"], weights["coordination"], threshold, lists=weights["lists"])


def _tokens(runs: Runs) -> frozenset[int]:
    return frozenset(i for a, b in runs for i in range(a, b + 1))


def train_pairing(examples: PairingExamples, threshold: float = THRESHOLD) -> PairingModel:
    return examples.fit(threshold)


# ---------------------------------------------------------------- decoding


def pair_fragments(words: Sequence[str], tags: Sequence[str], model: PairingModel,
                   lookup: Lookup | None) -> tuple[list[tuple[int, ...]], list[tuple[int, int]]]:
    """Token sets of the mentions a sentence's tags hold, joined by ``model``, and the D fragments left alone.

    B/I fragments are mentions. Candidates from D/H fragments (:func:`fragment_candidates`) are taken from the most
    probable down while their probability reaches the threshold; a D fragment joins one mention at most, an H
    fragment any number.
    """
    out: list[tuple[int, ...]] = []
    lone: list[tuple[int, int]] = []
    frags = tag_fragments(tags)
    for fam, a, b in frags:
        if fam == "":
            out.append(tuple(range(a, b + 1)))
    scored = []
    for runs, kinds in fragment_candidates(tags, model.max_parts):
        p = model.probability("fragments", candidate_features(words, runs, kinds, lookup, tags))
        if p >= model.threshold:
            scored.append((p, runs, kinds))
    scored.sort(key=lambda x: -x[0])
    used: set[tuple[int, int]] = set()
    for p, runs, kinds in scored:
        ds = [r for r, k in zip(runs, kinds) if k == "D"]
        if any(r in used for r in ds):
            continue
        used.update(ds)
        out.append(tuple(sorted(_tokens(runs))))
    for fam, a, b in frags:
        if fam == "D" and (a, b) not in used:
            lone.append((a, b))
    return out, lone


def reread_lone(words: Sequence[str], tags: Sequence[str], lone: Sequence[tuple[int, int]], model: PairingModel,
                lookup: Lookup | None) -> list[tuple[tuple[int, ...], tuple[int, int]]]:
    """Partners of D fragments the pairing left alone, found in a contiguous mention across a coordinator.

    The CRF's tags are sometimes inconsistent: in "urogenital/DB or uterine/B prolapse/I" the conjunct is tagged as
    a fragment but the mention after the coordinator as a contiguous one, where the gold fragments would be
    "uterine/DB prolapse/HB". Each B/I fragment of two or more tokens next to the coordinator after (or before) a
    lone D fragment is re-read as the D and H fragments it would be ("uterine" + "prolapse", or for "mitral
    regurgitation or stenosis/DB", "mitral" + "regurgitation"), and the pairing model scores the lone fragment
    with that H fragment as a fragment pair in the re-read tags; the best reading at or above the threshold is a
    mention. Returns (token set, lone fragment) pairs; the contiguous mention stays.
    """
    out: list[tuple[tuple[int, ...], tuple[int, int]]] = []
    if not lone or not model.reread:
        return out
    frags = [(a, b) for fam, a, b in tag_fragments(tags) if fam == ""]
    lower = [w.lower() for w in words]
    for a, b in lone:
        best: tuple[float, tuple[int, ...]] | None = None
        for s, e in frags:
            if e == s:
                continue
            if s > b:  # lone D, coordinator(s), contiguous mention: its head on the right
                gap = range(b + 1, s)
                readings = [((s, j - 1), (j, e), ((a, b), (j, e)), "DH") for j in range(s + 1, e + 1)]
            elif e < a:  # contiguous mention, coordinator(s), lone D: its head on the left
                gap = range(e + 1, a)
                readings = [((j + 1, e), (s, j), ((s, j), (a, b)), "HD") for j in range(s, e)]
            else:
                continue
            if not 0 < len(gap) <= 3 or not all(lower[i] in COORDINATORS for i in gap) \
                    or _CONJUNCTIONS.isdisjoint(lower[i] for i in gap):
                continue
            for (d1, d2), (h1, h2), runs, kinds in readings:
                retagged = list(tags)
                for i in range(d1, d2 + 1):
                    retagged[i] = "DB" if i == d1 else "DI"
                for i in range(h1, h2 + 1):
                    retagged[i] = "HB" if i == h1 else "HI"
                p = model.probability("fragments", candidate_features(words, runs, kinds, lookup, retagged))
                if p >= model.threshold and (best is None or p > best[0]):
                    best = (p, tuple(sorted(_tokens(runs))))
        if best is not None:
            out.append((best[1], (a, b)))
    return out


def _list_anchor(tags: Sequence[str], runs: Sequence[tuple[int, int]]) -> \
        tuple[tuple[int, int], tuple[int, int], int, int] | None:
    """(conjunct, head, coordinator token, step) of a mention made of a D conjunct and an H head with a coordinator
    on the conjunct's far side from the head (the list walked by :func:`extend_lists`), else None."""
    if len(runs) != 2:
        return None
    (a1, b1), (a2, b2) = runs
    first = {tags[i][:1] for i in range(a1, b1 + 1)}
    second = {tags[i][:1] for i in range(a2, b2 + 1)}
    if first == {"D"} and second == {"H"}:
        anchor = ((a1, b1), (a2, b2), a1 - 1, -1)
    elif first == {"H"} and second == {"D"}:
        anchor = ((a2, b2), (a1, b1), b2 + 1, 1)
    else:
        return None
    c = anchor[2]
    return anchor if 0 <= c < len(tags) and tags[c] == "O" else None


def list_features(words: Sequence[str], lower: Sequence[str], anchor: tuple[tuple[int, int], tuple[int, int], int, int],
                  conj: tuple[int, int], slot: int, lookup: Lookup | None) -> dict[str, float]:
    """Features of a conjunct ``conj`` of the list of ``anchor`` (:func:`_list_anchor`) read with the anchor's
    head: its place in the list, its words' shapes and suffixes beside the anchor conjunct's, the words around it,
    and whether the joined string and the conjunct are terms."""
    (a, b), (h1, h2), _, step = anchor
    c1, c2 = conj
    f: dict[str, float] = {
        "bias": 1.0, f"side={'R' if step < 0 else 'L'}": 1.0, f"slot={_bucket(slot)}": 1.0,
        f"len={c2 - c1 + 1}": 1.0, f"anchor_len={b - a + 1}": 1.0}
    near, far = (c2, c1) if step < 0 else (c1, c2)
    f[f"word={lower[near]}"] = 1.0
    f[f"suffix={lower[near][-3:]}"] = 1.0
    f[f"shape={_shape(words[near])}"] = 1.0
    anchor_near = b if step < 0 else a
    if lower[near][-3:] == lower[anchor_near][-3:]:
        f["same_suffix3"] = 1.0
    if lower[near][-2:] == lower[anchor_near][-2:]:
        f["same_suffix2"] = 1.0
    if _shape(words[near]) == _shape(words[anchor_near]):
        f["same_shape"] = 1.0
    if c2 - c1 == b - a:
        f["same_len"] = 1.0
    after = near - step  # the coordinator between the conjunct and the list's next one towards the head
    f[f"next={lower[after] if 0 <= after < len(lower) else '|'}"] = 1.0
    beyond = far + step
    if not 0 <= beyond < len(lower):
        f["beyond=|"] = 1.0
    else:
        f[f"beyond={lower[beyond] if lower[beyond] in _GAP_WORDS else 'w'}"] = 1.0
    f[f"head={lower[h2]}"] = 1.0
    if lookup is not None:
        head = " ".join(words[h1:h2 + 1])
        part = " ".join(words[c1:c2 + 1])
        joined = f"{part} {head}" if step < 0 else f"{head} {part}"
        f["term" if lookup(joined) else "no_term"] = 1.0
        if lookup(part):
            f["conj_term"] = 1.0
    return f


def extend_lists(words: Sequence[str], tags: Sequence[str], found: Sequence[tuple[int, ...]], model: PairingModel,
                 lookup: Lookup | None) -> list[tuple[int, ...]]:
    """More conjuncts of a list for the discontiguous mentions found: "significant cardiac , vascular , ... ,
    [psychiatric] , or metabolic [disturbances]" (the CRF tags the last conjuncts of a long list, seldom the far
    ones).

    For each mention made of one conjunct (a D fragment) and a head on the far side of it with a coordinator before
    the conjunct (:func:`_list_anchor`), the list is walked away from the head (:func:`_conjuncts`); the pairing's
    list classifier scores each untagged conjunct's readings with the head (:func:`list_features`), the best one
    at or above the threshold is a mention, and the walk stops at the first conjunct with none (a conjunct tagged
    as a D fragment already is passed). Returns the token sets of the mentions added.
    """
    out: list[tuple[int, ...]] = []
    if not model.lists:
        return out
    lower = [w.lower() for w in words]
    taken = {tuple(idx) for idx in found}
    for idx in found:
        anchor = _list_anchor(tags, _runs(idx))
        if anchor is None:
            continue
        for slot, alts in enumerate(_conjuncts(lower, anchor[2], anchor[3])):
            if all(tags[i][:1] == "D" for i in range(alts[0][0], alts[0][1] + 1)):
                continue  # a conjunct tagged already: the list goes on
            best: tuple[float, tuple[int, int]] | None = None
            for alt in alts:
                if any(tags[i] != "O" for i in range(alt[0], alt[1] + 1)):
                    break
                p = model.probability("lists", list_features(words, lower, anchor, alt, slot, lookup))
                if p >= model.threshold and (best is None or p > best[0]):
                    best = (p, alt)
            if best is None:
                break
            key = tuple(sorted(_tokens((best[1], anchor[1]))))
            if key not in taken:
                taken.add(key)
                out.append(key)
    return out


def _coordination_features(words: Sequence[str], runs: Runs, kinds: str, lookup: Lookup | None,
                           tags: Sequence[str]) -> dict[str, float]:
    f = candidate_features(words, runs, kinds, lookup)
    f[f"conjunct={conjunct_status(tags, runs[0 if kinds == 'CR' else 1])}"] = 1.0
    return f


def expand(words: Sequence[str], tags: Sequence[str], mentions: Sequence[tuple[int, int]], taken: set[frozenset[int]],
           model: PairingModel, lookup: Lookup | None) -> list[tuple[Runs, str]]:
    """Distributed mentions of the conjuncts coordinated with the contiguous ``mentions`` (token runs), the best
    reading of each conjunct when it reaches the threshold (:func:`coordination_candidates`), with their kinds
    (``"CR"``: the conjunct is the first run, ``"CL"``: the second)."""
    added: list[tuple[Runs, str]] = []
    for mention in mentions:
        best: dict[int, tuple[float, Runs, str]] = {}
        for runs, kinds, slot in coordination_candidates(words, mention):
            p = model.probability("coordination", _coordination_features(words, runs, kinds, lookup, tags))
            if p >= model.threshold and (slot not in best or p > best[slot][0]):
                best[slot] = (p, runs, kinds)
        for _, runs, kinds in best.values():
            key = _tokens(runs)
            if key not in taken:
                taken.add(key)
                added.append((runs, kinds))
    return added
