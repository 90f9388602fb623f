"""Properties of tokens and sentences on arbitrary text (hypothesis)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from share_ner.document import Document, Mention
from share_ner.placeholders import placeholder_regex
from share_ner.tagging.scheme import decode, encode_report
from share_ner.text import split_sentences

PIECES = st.sampled_from(
    [
        "pain", "CHF", "h/o", "IL-6", "3/12/2020", "non-smoker", "a,b", "(", ")", ".", ",", ":", "-", "/",
        "HISTORY OF PRESENT ILLNESS:", "Past Medical History:", "1.", "2)", "- ", "Dr.", "[**Hospital1 18**]",
        "[**Last Name (NamePattern1) 123**]", "[**", "**]", " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0",
        "é", "Crohn's", "seizure-induced", "arthritis(knee", "fever.,PLAN:,1.", "=" * 310, "[**" * 101,
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(PIECES, max_size=40))
@example(["[**" * 101, "CHF", "[**Hospital1 18**]"])  # a starred placeholder (**CHF[...]) holding a space
def test_sentences_tile_the_text(pieces):
    text = "".join(pieces)
    sents = split_sentences(Document("p", text))
    placeholders = {(m.start(), m.end()) for m in placeholder_regex().finditer(text)}  # every style in use
    prev_end = 0
    for s in sents:
        assert s.tokens, "no empty sentences"
        for t in s.tokens:
            assert t.start >= prev_end and t.end > t.start
            assert text[t.start : t.end] == t.text
            if (t.start, t.end) not in placeholders:
                assert not any(c.isspace() for c in t.text)
            prev_end = t.end
    # every non-whitespace character is in some token
    covered = sum(len("".join(t.text.split())) for s in sents for t in s.tokens)
    assert covered == len("".join(text.split()))
    if not text.strip():
        assert sents == []


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_contiguous_non_overlapping_mentions_round_trip(data):
    words = data.draw(st.lists(st.sampled_from(["pain", "fever", "no", "and", "chest", "of"]), min_size=1, max_size=15))
    text = " ".join(words)
    (sent,) = split_sentences(Document("p", text))
    n = len(sent.tokens)
    cuts = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=8))) | {0, n})
    mentions = []
    for a, b in zip(cuts, cuts[1:]):
        if data.draw(st.booleans()):
            mentions.append(Mention("p", ((sent.tokens[a].start, sent.tokens[b - 1].end),)))
    for scheme in ("biohd", "bio"):
        res = encode_report(sent, mentions, scheme)
        assert res.dropped == [] and res.inexact == []
        assert decode(sent, res.tags, scheme) == sorted(mentions)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_mentions_come_back_unless_reported(data):
    n = data.draw(st.integers(1, 12))
    text = " ".join(f"w{i}" for i in range(n))
    (sent,) = split_sentences(Document("p", text))
    mentions = set()
    for _ in range(data.draw(st.integers(0, 4))):
        idx = sorted(set(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))))
        runs: list[list[int]] = []
        for i in idx:
            if runs and i == runs[-1][1] + 1:
                runs[-1][1] = i
            else:
                runs.append([i, i])
        mentions.add(Mention("p", tuple((sent.tokens[a].start, sent.tokens[b].end) for a, b in runs)))
    res = encode_report(sent, sorted(mentions))
    kept = mentions - set(res.dropped)
    # what the tags hold comes back exactly, and nothing else does
    assert set(decode(sent, res.tags)) == kept


# Pieces where spaCy's whole-Doc special-case matcher may join two chunks ("Dr ." "it 's" ": )"), initials before a
# line end ("B.\n"), placeholders of every style glued to words, runs too long for spaCy.
CHUNKY = st.sampled_from(
    [
        "Dr", ".", "'s", "it", ":", ")", "(", "-", "a", "A.", "B.", "e.g", "'", "x", "X.", " ", "  ", "\n", "\r", "\t",
        "___", "**NAME[ZZZ]", "<PERSON>", "[**Hospital1 18**]", "word", "fever.,PLAN:,1.", "h/o", "MI/CHF", "1,000",
        "non-smoker", "second-", "IL-6", "\u00a0", "\u3000", "é", "=" * 305, "Crohn's", "a.m.", "p.m", "3a.m.",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(CHUNKY, max_size=30))
def test_tokens_chunk_by_chunk_equal_one_spacy_call_over_the_note(pieces):
    from share_ner import text as text_module

    text = "".join(pieces)
    if not text or text.isspace():
        return
    masked, placeholders = text_module._mask(text)
    whole = text_module._fix_placeholders(text, text_module._tokenize_whole(text, masked, True), placeholders)
    assert text_module.tokenize(text) == whole
