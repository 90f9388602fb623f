"""The normalizer's shortcuts on large lexicons give what the plain computation gives: the search by blocks of
names (its hits and best cosines, bit for bit), the per-string memo of the exact steps and the per-note
parenthesis test."""

from __future__ import annotations

import random

import pytest

import share_ner.linking.normalizer as normalizer_mod
from share_ner.document import Document, Mention
from share_ner.lexicons import blocks as blocks_mod
from share_ner.lexicons import default_lexicon
from share_ner.lexicons import index as index_mod
from share_ner.lexicons.blocks import NameBlocks
from share_ner.lexicons.index import build_index
from share_ner.lexicons.keys import soft_normalize
from share_ner.linking.normalizer import Normalizer


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path_factory.getbasetemp() / "share-ner-cache"))


@pytest.fixture(scope="module")
def hpo_index():
    """The HPO index with name blocks, as an index of more than BLOCKS_MIN_NAMES names has them."""
    index = build_index(default_lexicon())
    assert index.blocks is None and len(index.unique_names) < index_mod.BLOCKS_MIN_NAMES
    index.blocks = NameBlocks(index.postings, index.unique_names)
    return index


def _queries(index) -> list[str]:
    rng = random.Random(5)
    names = rng.sample(index.unique_names, 300)
    typos = [n[:i] + n[i + 1:] for n in names[:100] if (i := rng.randrange(max(len(n), 1))) >= 0]
    shuffled = [" ".join(rng.sample(n.split(), len(n.split()))) for n in names[100:200]]  # same 3-grams: ties
    short = [n.split()[0] for n in names[200:260]]  # one word: many names share its 3-grams
    return names + typos + shuffled + short + ["", "zzqx", "of the", "abnormality of the", "q"]


@pytest.mark.parametrize("block_names, first_blocks, later_blocks", [(16, 16, 8), (5, 16, 8), (16, 1, 1), (5, 2, 3)])
def test_search_by_blocks_is_the_search_by_the_whole_product(hpo_index, monkeypatch, block_names, first_blocks,
                                                             later_blocks):
    # few first blocks and later blocks a few at a time: most queries then score blocks after the first ones
    monkeypatch.setattr(blocks_mod, "BLOCK_NAMES", block_names)
    monkeypatch.setattr(blocks_mod, "FIRST_BLOCKS", first_blocks)
    monkeypatch.setattr(blocks_mod, "LATER_BLOCKS", later_blocks)
    queries = [soft_normalize(q) for q in _queries(hpo_index)]
    built = hpo_index.blocks
    hpo_index.blocks = NameBlocks(hpo_index.postings, hpo_index.unique_names)
    assert hpo_index.blocks.size == block_names
    fallbacks = []
    real_top = NameBlocks.top

    def top(self, vectors, k):
        for found in real_top(self, vectors, k):
            fallbacks.append(found is None)
            yield found

    monkeypatch.setattr(NameBlocks, "top", top)
    hpo_index.forget_searches()
    by_blocks = {k: hpo_index.search(queries, k) for k in (1, 10)}
    tops = hpo_index.top_cosines(queries)
    hpo_index.blocks = None
    try:
        hpo_index.forget_searches()
        whole = {k: hpo_index.search(queries, k) for k in (1, 10)}
        everything = hpo_index.search(queries, len(hpo_index.unique_names))
    finally:
        hpo_index.blocks = built
        hpo_index.forget_searches()
    assert by_blocks == whole  # names, cosines (the same floats) and order
    assert any(fallbacks) and not all(fallbacks)  # ties went to the whole product, most queries did not
    for q, (best, at), hits in zip(queries, tops, everything):
        assert best == (hits[0][1] if hits else 0.0), q
        assert at == sorted(u for u, c in hits if c == best), q  # every name with the best cosine


def mention_of(doc: Document, phrase: str) -> Mention:
    start = doc.text.index(phrase)
    return Mention(doc.id, ((start, start + len(phrase)),))


def test_decisions_with_blocks_and_memo_are_those_of_scoring_everything(hpo_index, monkeypatch):
    monkeypatch.setattr(index_mod, "_MEMORY", {default_lexicon().content_hash: hpo_index})
    text = ("Hx of hypertenson, congestve heart failre and renal insuficiency; breast and ovarian cancer; "
            "non insulin dependant diabetes; zzqx wvuy; atrial fibrilation; chronic kidny disease stage 3; "
            "HA; MI; leg pian; skin rash, itchy; sinus inflamation; heart failure; hypertension")
    doc = Document("d", text)
    phrases = [p.strip() for p in text[6:].replace(";", ",").split(",") if p.strip()]
    ms = [mention_of(doc, p) for p in phrases]
    norm = Normalizer(default_lexicon())
    assert norm._lex is hpo_index and hpo_index.blocks is not None
    for t in (0.0, 0.4, 0.6, 0.75, 0.9, 0.97):
        norm.threshold_ = t
        every = [(d.cui, d.method) for d in norm.decide(doc, ms, trace=True)]  # trace: no shortcut taken
        assert [(d.cui, d.method) for d in norm.decide(doc, ms)] == every, t
        assert [(d.cui, d.method) for d in norm.decide(doc, ms + ms)] == every + every, t  # remembered
    assert norm._steps  # the exact steps were remembered per string ...
    hpo_index.forget_searches()
    norm.decide(doc, ms[:1])
    assert {text for _, text in norm._steps} == {"hypertenson"}  # ... and forgotten with the index's searches


def test_parenthesis_test_per_note_is_the_substring_test():
    def by_substring(mention: str, text: str) -> bool:
        return any(len(w) <= 10 and any(c.isupper() for c in w) and (f"({w}" in text or f"{w} (" in text)
                   for w in mention.split())

    rng = random.Random(3)
    alphabet = "MIab( )\tCHF(x)"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        mention = "".join(rng.choice(alphabet.replace("(", "")) for _ in range(rng.randrange(1, 12)))
        assert normalizer_mod._may_be_defined(mention, text) == by_substring(mention, text), (mention, text)
        runs = normalizer_mod._parenthesis_runs(text)
        assert normalizer_mod._may_be_defined(mention, runs) == by_substring(mention, text), (mention, text)
