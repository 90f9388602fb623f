"""Mentions ↔ token tags: the B/I/O/DB/DI/HB/HI scheme (``"biohd"``) and plain BIO (``"bio"``).

Tags (ShARe/CLEF 2013 overview, Table 5):

* ``B``/``I`` — a contiguous mention; ``O`` — outside;
* ``DB``/``DI`` — a fragment of a discontiguous mention;
* ``HB``/``HI`` — a head fragment shared by several mentions.

Encoding a sentence: each mention is mapped to the tokens covering its spans
(a boundary inside a token is widened to the token and the mention is reported
``inexact``). Mentions that share tokens with no other mention and are
contiguous in tokens get B/I; a discontiguous one gets one DB/DI run per
fragment. In a group of overlapping mentions, tokens in two or more of them are
head (H) tokens, the rest D tokens. The tags are then decoded again; mentions
the sequence cannot give back are removed one at a time (the removal that
keeps most mentions first) and reported ``dropped``, so nothing is lost silently.

Decoding (pairing rules, see docs/encoding.md):

1. A fragment is a ``XB`` followed by its ``XI`` tags; an ``XI`` that does not
   continue a fragment of its family starts one (lenient, like conlleval).
2. ``B``/``I`` fragments are mentions.
3. With H fragments in the sentence, each D fragment is joined with H
   fragments. D fragments separated only by up to 3 O tokens ("or", ",",
   "and/or") form a coordination chain. A chain whose first fragment touches
   an H fragment on its left and/or whose last fragment touches one on its
   right joins every fragment to the touching head(s): "liver or lung
   disease", "fracture of the wrist or ankle", and both heads in "chronic
   kidney / liver disease". Otherwise each fragment takes the nearest H fragment (token
   distance; a tie goes to the H on the right). An H fragment no D fragment
   chose is a mention by itself.
4. Without H fragments, D fragments are grouped in text order, a group
   closing at a B/I fragment; a group of up to 3 fragments is one mention (a
   single fragment: a contiguous one), a group of 4 or more is read as
   consecutive pairs.

Token runs that touch are merged into one span, so ``Becker`` (D) + ``muscular
dystrophy`` (H) decodes to the contiguous span of ``Becker muscular dystrophy``.
Legal transitions are data (:data:`SCHEMES`); :func:`validate` reports the
first illegal one with its position and neighbouring tags.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Iterable, Mapping, NamedTuple, Sequence

from share_ner.document import CUI_LESS, DISORDER, Document, Mention, Sentence, span_past_end, trimmed
from share_ner.errors import ShareNerError
from share_ner.tagging.suspended import distributed_spans
from share_ner.text import split_sentences

__all__ = [
    "TAGS",
    "BIO_TAGS",
    "SCHEMES",
    "Scheme",
    "EncodeResult",
    "check_mentions",
    "round_trip_ceiling",
    "decode",
    "encode",
    "encode_report",
    "fragments",
    "held",
    "get_scheme",
    "mention_tokens",
    "validate",
]

TAGS: tuple[str, ...] = ("O", "B", "I", "DB", "DI", "HB", "HI")
BIO_TAGS: tuple[str, ...] = ("O", "B", "I")


@dataclass(frozen=True)
class Scheme:
    """A tagging scheme as data: its tags and which tag may follow which.

    ``continues[tag]`` is the set of tags an inside tag may follow; a tag absent
    from ``continues`` may follow anything and may start a sentence.
    """

    name: str
    tags: tuple[str, ...]
    continues: Mapping[str, frozenset[str]]

    def allowed(self, prev: str | None, tag: str) -> bool:
        """May ``tag`` follow ``prev`` (``None`` = sentence start)?"""
        need = self.continues.get(tag)
        return need is None or (prev is not None and prev in need)


SCHEMES: dict[str, Scheme] = {
    "biohd": Scheme(
        "biohd",
        TAGS,
        {"I": frozenset({"B", "I"}), "DI": frozenset({"DB", "DI"}), "HI": frozenset({"HB", "HI"})},
    ),
    "bio": Scheme("bio", BIO_TAGS, {"I": frozenset({"B", "I"})}),
}


def get_scheme(scheme: str | Scheme) -> Scheme:
    if isinstance(scheme, Scheme):
        return scheme
    try:
        return SCHEMES[scheme]
    except KeyError:
        raise ShareNerError(f"unknown tagging scheme {scheme!r}; allowed: {', '.join(SCHEMES)}") from None


def validate(tags: Sequence[str], scheme: str | Scheme = "biohd") -> None:
    """Raise :class:`ShareNerError` at the first unknown tag or illegal transition."""
    sch = get_scheme(scheme)
    known = set(sch.tags)
    prev: str | None = None
    for i, tag in enumerate(tags):
        if tag not in known:
            raise ShareNerError(
                f"invalid tag {tag!r} at position {i} ({_context(tags, i)}); "
                f"allowed tags of scheme {sch.name!r}: {', '.join(sch.tags)}"
            )
        if not sch.allowed(prev, tag):
            allowed = ", ".join(sorted(sch.continues[tag]))
            raise ShareNerError(
                f"invalid tag sequence at position {i}: {tag!r} after "
                f"{'sentence start' if prev is None else repr(prev)} ({_context(tags, i)}); "
                f"{tag!r} may only follow {allowed}"
            )
        prev = tag


def _context(tags: Sequence[str], i: int, width: int = 2) -> str:
    lo, hi = max(0, i - width), min(len(tags), i + width + 1)
    parts = [f"[{t}]" if k == i else t for k, t in enumerate(tags[lo:hi], start=lo)]
    return ("... " if lo else "") + " ".join(parts) + (" ..." if hi < len(tags) else "")


# ---------------------------------------------------------------- token mapping


class EncodeResult(NamedTuple):
    """Tags of one sentence, the mentions they cannot hold, and those widened to token boundaries."""

    tags: list[str]
    dropped: list[Mention]
    inexact: list[Mention]


def mention_tokens(sentence: Sentence, mention: Mention) -> tuple[tuple[int, ...], bool, bool] | None:
    """Token indices covering ``mention`` in ``sentence``.

    Returns ``(indices, exact, inside)``: ``exact`` is False when a span boundary
    falls inside a token, ``inside`` False when part of the mention lies outside
    the sentence (or covers no token). ``None`` when the mention does not touch
    the sentence at all.
    """
    tokens = sentence.tokens
    if not tokens or mention.end <= tokens[0].start or mention.start >= tokens[-1].end:
        return None
    starts = [t.start for t in tokens]
    ends = [t.end for t in tokens]
    idx: list[int] = []
    exact = True
    inside = mention.start >= tokens[0].start and mention.end <= tokens[-1].end
    for s, e in mention.spans:
        lo = bisect_right(ends, s)  # first token ending after s
        hi = bisect_left(starts, e)  # tokens starting before e
        if lo >= hi:
            inside = False  # a span of whitespace only, or outside
            continue
        idx.extend(range(lo, hi))
        if starts[lo] != s or ends[hi - 1] != e:
            exact = False
    if not idx:
        return None if not inside else ((), exact, False)
    return tuple(sorted(set(idx))), exact, inside


def _runs(indices: Iterable[int]) -> list[tuple[int, int]]:
    """Maximal runs of consecutive indices as (first, last) pairs."""
    out: list[tuple[int, int]] = []
    for i in sorted(indices):
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _to_mention(sentence: Sentence, indices: Iterable[int]) -> Mention:
    toks = sentence.tokens
    spans = tuple((toks[a].start, toks[b].end) for a, b in _runs(indices))
    return Mention(sentence.doc_id, spans, CUI_LESS, DISORDER)


# ---------------------------------------------------------------- decoding


def fragments(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """(family "", "D" or "H", first, last) runs; lenient about inside tags without a begin."""
    frags: list[tuple[str, int, int]] = []
    fam: str | None = None
    for i, tag in enumerate(tags):
        if tag == "O" or not tag:
            fam = None
            continue
        f, kind = tag[:-1], tag[-1]
        if kind == "I" and fam == f:
            frags[-1] = (f, frags[-1][1], i)
        else:
            frags.append((f, i, i))
            fam = f
    return frags


MAX_CHAIN_GAP = 3  # O tokens ("or", ",", "and/or") that may separate coordinated fragments


def _chains(frags: list[tuple[str, int, int]]) -> list[list[tuple[int, int]]]:
    """D fragments grouped into chains: runs with no other fragment and at most MAX_CHAIN_GAP O tokens between."""
    chains: list[list[tuple[int, int]]] = []
    prev_d = False
    for f, a, b in frags:
        if f == "D":
            if prev_d and a - chains[-1][-1][1] - 1 <= MAX_CHAIN_GAP:
                chains[-1].append((a, b))
            else:
                chains.append([(a, b)])
            prev_d = True
        else:
            prev_d = False
    return chains


def _nearest(heads: list[tuple[int, int]], a: int, b: int) -> int:
    """Index of the head fragment nearest to tokens a..b; a tie goes to the head on the right."""
    best, best_d = 0, None
    for k, (ha, hb) in enumerate(heads):
        d = ha - b if ha > b else a - hb
        if best_d is None or d < best_d or (d == best_d and ha > b):
            best, best_d = k, d
    return best


def _decode_indices(tags: Sequence[str], scheme: Scheme) -> list[tuple[int, ...]]:
    frags = fragments(tags)
    if scheme.name == "bio":
        return [tuple(range(a, b + 1)) for _, a, b in frags]
    out: list[tuple[int, ...]] = []
    heads = [(a, b) for f, a, b in frags if f == "H"]
    if heads:
        used = [False] * len(heads)
        head_at_start = {a: k for k, (a, _) in enumerate(heads)}
        head_at_end = {b: k for k, (_, b) in enumerate(heads)}
        for chain in _chains(frags):
            # A chain of coordinated fragments touching heads belongs to them: "liver or lung
            # disease", "fracture of the wrist or ankle", both heads in "chronic kidney / liver disease".
            touching = [
                k
                for k in (head_at_end.get(chain[0][0] - 1), head_at_start.get(chain[-1][1] + 1))
                if k is not None
            ]
            for a, b in chain:
                chosen = touching or [_nearest(heads, a, b)]
                idx = set(range(a, b + 1))
                for k in chosen:
                    used[k] = True
                    idx.update(range(heads[k][0], heads[k][1] + 1))
                out.append(tuple(sorted(idx)))
        for f, a, b in frags:
            if f == "":
                out.append(tuple(range(a, b + 1)))
        for k, (ha, hb) in enumerate(heads):
            if not used[k]:
                out.append(tuple(range(ha, hb + 1)))
        return out
    group: list[tuple[int, int]] = []
    for f, a, b in frags:
        if f == "D":
            group.append((a, b))
        else:
            out.extend(_join_group(group))
            group = []
            out.append(tuple(range(a, b + 1)))
    out.extend(_join_group(group))
    return out


def _join_group(group: list[tuple[int, int]]) -> list[tuple[int, ...]]:
    """Mentions from a group of D fragments with no head: one mention, or pairs when there are 4 or more.

    Nearly all discontiguous mentions have two fragments (a few have three), so 4+ fragments are read as consecutive pairs ("left atrium
    is dilated and right ventricle is hypertrophied"), an odd last one joining
    the last pair.
    """
    if not group:
        return []
    if len(group) < 4:
        parts = [group]
    else:
        parts = [group[i : i + 2] for i in range(0, len(group) - 1, 2)]
        if len(group) % 2:
            parts[-1] = parts[-1] + [group[-1]]
    return [tuple(i for a, b in part for i in range(a, b + 1)) for part in parts]


def decode(sentence: Sentence, tags: Sequence[str], scheme: str | Scheme = "biohd") -> list[Mention]:
    """Mentions (CUI-less) encoded by ``tags``, one tag per token of ``sentence``, in text order.

    Unknown tags raise :class:`ShareNerError`; an inside tag that does not
    continue a fragment is read as a begin tag.
    """
    sch = get_scheme(scheme)
    if len(tags) != len(sentence.tokens):
        raise ShareNerError(
            f"note {sentence.doc_id}: {len(tags)} tags for a sentence of {len(sentence.tokens)} tokens "
            f"at offset {sentence.start}"
        )
    known = set(sch.tags)
    for i, tag in enumerate(tags):
        if tag not in known:
            raise ShareNerError(
                f"invalid tag {tag!r} at position {i} ({_context(tags, i)}); "
                f"allowed tags of scheme {sch.name!r}: {', '.join(sch.tags)}"
            )
    seen: set[tuple[int, ...]] = set()
    mentions = []
    for idx in _decode_indices(tags, sch):
        if idx and idx not in seen:
            seen.add(idx)
            mentions.append(_to_mention(sentence, idx))
    mentions.sort()
    return mentions


# ---------------------------------------------------------------- encoding


def _tag_fragments(n: int, items: Sequence[tuple[int, ...]]) -> list[str]:
    """Tags in which every fragment (a tag run) holds tokens of the same mentions, so each mention is a union of
    fragments: a new fragment begins wherever the set of mentions covering a token changes. Tokens of two or more
    mentions are H, the other tokens of a mention sharing a token or of several runs D, the rest B/I."""
    owners: list[tuple[int, ...]] = [()] * n
    for k, idx in enumerate(items):
        for i in idx:
            owners[i] = (*owners[i], k)
    special = [any(len(owners[i]) > 1 for i in idx) or len(_runs(idx)) > 1 for idx in items]
    tags = ["O"] * n
    for i, own in enumerate(owners):
        if not own:
            continue
        fam = "H" if len(own) > 1 else ("D" if special[own[0]] else "")
        tags[i] = fam + ("I" if i > 0 and owners[i - 1] == own else "B")
    return tags


def held(tags: Sequence[str], indices: Iterable[int]) -> bool:
    """Is the token set ``indices`` a union of whole fragments of ``tags`` (what a perfect pairing gives back)?"""
    want = set(indices)
    got: set[int] = set()
    for _, a, b in fragments(tags):
        run = set(range(a, b + 1))
        if run <= want:
            got |= run
        elif run & want:
            return False
    return bool(want) and got == want


def _tag_biohd(n: int, items: Sequence[tuple[int, ...]]) -> list[str]:
    tags = ["O"] * n
    count = [0] * n
    for idx in items:
        for i in idx:
            count[i] += 1
    # A mention sharing no token and contiguous in tokens is plain B/I.
    for idx in items:
        shared = any(count[i] > 1 for i in idx)
        runs = _runs(idx)
        for a, b in runs:
            for i in range(a, b + 1):
                if count[i] > 1:
                    fam = "H"
                elif shared or len(runs) > 1:
                    fam = "D"
                else:
                    fam = ""
                prev = tags[i - 1] if i > a else None
                same_run = i > a and prev is not None and prev[:-1] == fam
                tags[i] = fam + ("I" if same_run else "B")
    return tags


def _tag_bio(n: int, items: Sequence[tuple[int, ...]]) -> list[str]:
    tags = ["O"] * n
    for idx in items:
        a, b = idx[0], idx[-1]
        for i in range(a, b + 1):
            tags[i] = "I" if i > a else "B"
    return tags


PAIRINGS = ("learned", "rules")


def encode_report(
    sentence: Sentence, mentions: Iterable[Mention], scheme: str | Scheme = "biohd", pairing: str = "rules"
) -> EncodeResult:
    """Tags for ``sentence`` and what they lose.

    ``mentions`` may be all mentions of the document; those not touching the
    sentence are ignored. ``dropped`` lists mentions the tag sequence cannot
    give back (overlaps one sequence cannot hold, mentions crossing the
    sentence boundary); ``inexact`` lists mentions whose boundary falls inside
    a token (encoded widened to whole tokens).

    ``pairing="rules"`` gives tags the decoding rules (:func:`decode`) read back exactly, dropping mentions they
    cannot; ``pairing="learned"`` gives fragment tags (:func:`held`): every mention is a union of fragments, joined
    again by the learned pairing (``share_ner.tagging.pairing``), so only mentions crossing the sentence are lost.
    """
    if pairing not in PAIRINGS:
        raise ShareNerError(f"unknown pairing {pairing!r}; allowed: {', '.join(PAIRINGS)}")
    sch = get_scheme(scheme)
    n = len(sentence.tokens)
    dropped: list[Mention] = []
    inexact: list[Mention] = []
    items: list[tuple[Mention, tuple[int, ...]]] = []
    seen: set[tuple[int, ...]] = set()
    for m in mentions:
        got = mention_tokens(sentence, m)
        if got is None:
            continue
        idx, exact, inside = got
        if not inside or not idx:
            dropped.append(m)
            continue
        if not exact:
            inexact.append(m)
        if sch.name == "bio":
            idx = tuple(range(idx[0], idx[-1] + 1))  # the hull
        if idx in seen:
            continue  # the same tokens twice (e.g. two CUIs): one tag run holds both
        seen.add(idx)
        items.append((m, idx))
    if sch.name == "bio":
        tags, lost = _encode_bio(n, items)
    elif pairing == "learned":
        tags, lost = _tag_fragments(n, [idx for _, idx in items]), []
    else:
        tags, lost = _encode_biohd(n, items, sch)
    dropped.extend(lost)
    return EncodeResult(tags, dropped, inexact)


def encode(sentence: Sentence, mentions: Iterable[Mention], scheme: str | Scheme = "biohd",
           pairing: str = "rules") -> list[str]:
    """One tag per token of ``sentence`` (see :func:`encode_report` for what is lost)."""
    return encode_report(sentence, mentions, scheme, pairing).tags


def _encode_bio(n: int, items: list[tuple[Mention, tuple[int, ...]]]) -> tuple[list[str], list[Mention]]:
    # Contiguous mentions first (their hull is exact), then longer before shorter.
    order = sorted(items, key=lambda it: (it[0].is_discontiguous, it[1][0] - it[1][-1], it[1][0]))
    taken = [False] * n
    kept, lost = [], []
    for m, idx in order:
        if any(taken[i] for i in idx):
            lost.append(m)
            continue
        for i in idx:
            taken[i] = True
        kept.append(idx)
    return _tag_bio(n, kept), lost


def _encode_biohd(
    n: int, items: list[tuple[Mention, tuple[int, ...]]], sch: Scheme
) -> tuple[list[str], list[Mention]]:
    simple = all(len(_runs(idx)) == 1 for _, idx in items)
    if simple:
        count = [0] * n
        for _, idx in items:
            for i in idx:
                count[i] += 1
        if all(c <= 1 for c in count):
            return _tag_biohd(n, [idx for _, idx in items]), []
    keep = list(items)

    def survivors(cand: list[tuple[Mention, tuple[int, ...]]]) -> tuple[list[str], int, list[bool], int]:
        """Tags for ``cand``, how many of its mentions decode back, which, and how many spurious ones appear."""
        tags = _tag_biohd(n, [idx for _, idx in cand])
        got = set(_decode_indices(tags, sch))
        ok = [idx in got for _, idx in cand]
        extra = len(got - {idx for _, idx in cand})
        return tags, sum(ok), ok, extra

    tags, score, ok, extra = survivors(keep)
    while keep and (score < len(keep) or extra):
        # Remove the mention whose removal leaves most mentions decodable (and fewest spurious ones).
        best = None
        for j in range(len(keep)):
            t, s, o, x = survivors(keep[:j] + keep[j + 1 :])
            # Then prefer removing a mention that did not survive.
            key = (s - x, not ok[j])
            if best is None or key > best[0]:
                best = (key, j, t, s, o, x)
        _, j, tags, score, ok, extra = best  # type: ignore[misc]
        keep = keep[:j] + keep[j + 1 :]
    if not keep:
        tags = ["O"] * n
    kept_ids = {id(m) for m, _ in keep}
    lost = [m for m, _ in items if id(m) not in kept_ids]
    return tags, lost


# ---------------------------------------------------------------- checks


def check_mentions(doc: Document, mentions: Iterable[Mention]) -> None:
    """Raise :class:`ShareNerError` for a mention that does not fit inside ``doc``'s text."""
    for m in mentions:
        if problem := span_past_end(doc, m):
            raise ShareNerError(f"gold: {problem}")


# ---------------------------------------------------------------- ceiling


def _on_whitespace(text: str, sentence: Sentence, mention: Mention) -> bool:
    """Is ``mention`` outside ``sentence``'s tokens only by whitespace at its spans' ends (its spans, stripped of
    it, cover tokens of the sentence and lie within them)?"""
    bare = trimmed(text, mention)
    if bare is None or bare == mention:
        return False
    got = mention_tokens(sentence, bare)
    return got is not None and got[2]


def round_trip_ceiling(
    docs: Mapping[str, Document], gold: Mapping[str, Sequence[Mention]], scheme: str | Scheme = "biohd",
    pairing: str = "learned",
) -> dict:
    """How many gold mentions survive split → encode → decode exactly (strict: same spans).

    With ``pairing="learned"`` (biohd) a mention survives when the fragment tags hold it (:func:`held`: a perfect
    pairing step gives it back); with ``"rules"`` when the decoding rules give it back; with biohd, also when
    the tagger's completion of a suspended prefix gives it back from a mention that survives
    (:func:`share_ner.tagging.suspended.distributed_spans`: "Hyper ... thyroidism" from "hypothyroidism"). Returns
    counts for all
    mentions and for discontiguous ones, and why the others were lost: ``inexact`` (a boundary inside a token),
    ``whitespace`` (a span begins or ends on whitespace beyond the sentence's tokens, as a gold span taking in a
    line's closing ``\r`` does), ``crossing`` (the mention crosses a sentence boundary), ``dropped`` (an overlap the
    tag sequence cannot hold)
    and ``misdecoded`` (encoded, but the decoding rules give it back differently). Gold for a note that is missing
    is an error.
    """
    sch = get_scheme(scheme)
    learned = pairing == "learned" and sch.name == "biohd"
    total = survived = disc = disc_survived = 0
    lost = {"inexact": 0, "whitespace": 0, "crossing": 0, "dropped": 0, "misdecoded": 0}
    tokens = sentences_n = 0
    for doc_id in sorted(gold):
        if doc_id not in docs:
            raise ShareNerError(f"gold names note {doc_id} but there is no {doc_id}.txt among the notes")
        doc = docs[doc_id]
        ms = list(dict.fromkeys(gold[doc_id]))  # a mention listed twice counts once
        check_mentions(doc, ms)
        sents = split_sentences(doc)
        sentences_n += len(sents)
        tokens += sum(len(s.tokens) for s in sents)
        ends = [s.end for s in sents]
        by_sent: dict[int, list[Mention]] = {}
        crossing: set[Mention] = set()
        home: dict[Mention, int] = {}  # the one sentence a mention touches
        for m in ms:
            k = bisect_right(ends, m.start)
            first = k
            while k < len(sents) and sents[k].start < m.end:
                by_sent.setdefault(k, []).append(m)
                k += 1
            if k - first > 1:
                crossing.add(m)
            elif k > first:
                home[m] = first
        decoded: set[tuple[tuple[int, int], ...]] = set()
        inexact: set[Mention] = set()
        dropped: set[Mention] = set()
        for k, sms in by_sent.items():
            res = encode_report(sents[k], sms, sch, pairing if learned else "rules")
            inexact.update(res.inexact)
            dropped.update(res.dropped)
            if not learned:
                decoded.update(m.spans for m in decode(sents[k], res.tags, sch))
                continue
            for m in sms:
                got = mention_tokens(sents[k], m)
                if got is not None and got[1] and got[2] and held(res.tags, got[0]):
                    decoded.add(m.spans)
        if sch.name == "biohd":
            decoded |= distributed_spans(doc.text, decoded)  # the tagger's completion of suspended prefixes
        for m in ms:
            total += 1
            ok = m.spans in decoded
            survived += ok
            if m.is_discontiguous:
                disc += 1
                disc_survived += ok
            if ok:
                continue
            if m in crossing:
                lost["crossing"] += 1
            elif m in inexact:
                lost["inexact"] += 1
            elif m in dropped and m in home and _on_whitespace(doc.text, sents[home[m]], m):
                lost["whitespace"] += 1
            elif m in dropped:
                lost["dropped"] += 1
            else:
                lost["misdecoded"] += 1
    return {
        "scheme": sch.name,
        "pairing": "learned" if learned else "rules",
        "notes": len(gold),
        "sentences": sentences_n,
        "tokens": tokens,
        "mentions": total,
        "survived": survived,
        "ceiling": survived / total if total else 0.0,
        "discontiguous": disc,
        "discontiguous_survived": disc_survived,
        "discontiguous_ceiling": disc_survived / disc if disc else 0.0,
        "lost": lost,
    }
