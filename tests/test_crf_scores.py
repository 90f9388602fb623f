"""Tagging by emission scores (share_ner.features.scores) and share_ner.tagging.weights' Viterbi against CRFsuite
itself: the model's weights read exactly, each token's scores the sum of the weights of the attributes its
attribute list has, and the tags those of ``pycrfsuite.Tagger.tag`` on those lists, on every sentence of real and
synthetic notes."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pycrfsuite
import pytest

from share_ner.default_model.build import default_model_dir
from share_ner.default_model.markup import load_default_corpus
from share_ner.document import Document
from share_ner.inputs.files import read_notes
from share_ner.model import FILES
from share_ner.pipeline import Pipeline
from share_ner.tagging import crf
from share_ner.tagging.weights import read_weights, viterbi

REPO = Path(__file__).resolve().parent.parent
TAGGER_TEXT = Path(__file__).parent / "fixtures" / "tagger" / "text"
DEV_SPLITS = ("chia/dev", "ncbi_disease/dev", "bc5cdr/dev", "negex_kit/dev")
DEV_NOTES = 80  # per split: enough variety, within the suite's time


@pytest.fixture(scope="module")
def default_pipeline() -> Pipeline:
    return Pipeline.load(default_model_dir())


# Sentences in capitals (caseless word attributes under caseless_capitals) among ordinary ones, in one note
MIXED_CASE = ("HISTORY OF PRESENT ILLNESS: CHEST PAIN AND SHORTNESS OF BREATH.\nThe patient has renal or liver "
              "impairment, and no fever. NO HISTORY OF DIABETES MELLITUS OR HYPERTENSION.\nChest pain (CP) resolved.")


def _notes() -> list[Document]:
    docs = list(read_notes(REPO / "examples" / "notes").values()) + list(read_notes(TAGGER_TEXT).values())
    docs.append(Document("mixed-case", MIXED_CASE))
    corpus, _ = load_default_corpus()
    return docs + list(corpus.values())[:120]


def _old_tags(pipeline: Pipeline, doc: Document) -> list[tuple[list[list[bytes]], list[str]]]:
    """Each sentence's attribute lists and CRFsuite's tags of them: how tagging went before the scores."""
    t = pipeline.tagger
    return [(items, t.crf.tag(items)) for _, items in crf.doc_sequences(doc, t.resources, t.config.features,
                                                                        t.config.coordination)]


def _check(pipeline: Pipeline, docs: list[Document]) -> int:
    """Scores and raw Viterbi tags against the attribute lists and CRFsuite, note by note; tag_many's mentions
    against those decoded from CRFsuite's tags. The number of sentences checked."""
    t = pipeline.tagger
    weights = t.weights
    checked = 0
    for doc in docs:
        old = _old_tags(pipeline, doc)
        sentences, scores, _ = crf.doc_emissions(doc, t.resources, t.config.features, t.scores, t.config.coordination)
        assert len(sentences) == len(old)
        if not old:
            continue
        lengths = np.array([len(s.tokens) for s in sentences])
        labels, unsure = viterbi(scores, lengths, weights.transitions)
        start = 0
        for k, (items, tags) in enumerate(old):
            n = len(items)
            direct = np.zeros((n, len(weights.labels)))
            for i, item in enumerate(items):
                for attribute in item:
                    if attribute in weights.attributes:
                        direct[i] += weights.state[weights.attributes[attribute]]
            assert np.abs(scores[start:start + n] - direct).max() <= 1e-9, (doc.id, k)
            assert [weights.labels[y] for y in labels[start:start + n]] == tags, (doc.id, k, bool(unsure[k]))
            start += n
            checked += 1
        reference, coordinations = t.decoding()
        mentions = [m for s, (_, tags) in zip(sentences, old) if tags.count("O") < len(tags)
                    for m in crf._mentions(s, tags, t.config.scheme, reference, t.config.balance_brackets, t.pairing,
                                           coordinations)]
        if t.evidence is not None:  # the note's mentions checked against the note and the lexicon, as tag_many does
            mentions = t.evidence.check(doc, sentences, mentions)
        assert t.tag(doc) == mentions
    return checked


def test_the_weights_are_crfsuites_own(default_pipeline: Pipeline) -> None:
    path = default_pipeline.info.path(FILES.crf)
    weights = read_weights(path)
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    info = tagger.info()  # weights printed with six decimals
    assert dict(zip(weights.labels, map(str, range(len(weights.labels))))) == info.labels
    label = {name: i for i, name in enumerate(weights.labels)}
    assert len(weights.attributes) == len({a for a, _ in info.state_features})
    for (attribute, name), w in info.state_features.items():
        assert abs(weights.state[weights.attributes[attribute.encode()], label[name]] - w) <= 5e-7
    assert np.count_nonzero(weights.state) == len(info.state_features)
    for (a, b), w in info.transitions.items():
        assert abs(weights.transitions[label[a], label[b]] - w) <= 5e-7
    assert np.count_nonzero(weights.transitions) == len(info.transitions)
    assert any(round(w, 6) != w for w in weights.state.ravel())  # the full precision, not the dump's


def test_a_note_mixes_sentences_in_capitals_and_ordinary_ones(default_pipeline: Pipeline) -> None:
    from share_ner.features.scores import capital_sentences

    sentences = crf._sentences(Document("mixed-case", MIXED_CASE))
    words = [t.text for s in sentences for t in s.tokens]
    starts = np.cumsum([0] + [len(s.tokens) for s in sentences[:-1]])
    caps = capital_sentences(words, starts).tolist()
    assert True in caps and False in caps and default_pipeline.tagger.config.features.caseless_capitals
    assert _check(default_pipeline, [Document("mixed-case", MIXED_CASE)]) == len(sentences)


def test_capital_sentences_is_all_capitals_of_each_sentence() -> None:
    from share_ner.features.extract import _all_capitals
    from share_ner.features.scores import capital_sentences

    # ASCII sentences (decided by their joined text) and others (word by word): Greek capitals, "ª" (lower-case
    # with no upper-case form), letters without case, digits and marks only, a lower-case letter after capitals
    sentences = [["CHEST", "X-RAY", ":"], ["Chest", "x-ray"], ["12", ",", "3"], ["ÉTAT", "NORMAL"], ["ÉTAT", "normal"],
                 ["ª"], ["ΑΒΓ", "2"], ["αβ", "Γ"], ["NO", "ACUTE", "DISEASE", "."], ["a"], ["-"], ["日本"]]
    words = [w for s in sentences for w in s]
    starts = np.cumsum([0] + [len(s) for s in sentences[:-1]])
    expected = [_all_capitals(s) for s in sentences]
    assert capital_sentences(words, starts).tolist() == expected
    assert expected.count(True) == 5  # CHEST X-RAY, ÉTAT NORMAL, ΑΒΓ 2, NO ACUTE DISEASE and 日本 (letters, none lower)


def test_scores_and_tags_are_crfsuites_on_notes(default_pipeline: Pipeline, tiny_model: Path) -> None:
    docs = _notes()
    assert _check(default_pipeline, docs) > 1000
    assert _check(Pipeline.load(tiny_model), docs) > 1000  # another feature config (cased, a small lexicon)


def test_scores_stay_crfsuites_when_the_memos_are_emptied(tiny_model: Path, monkeypatch) -> None:
    from share_ner.features import scores

    monkeypatch.setattr(scores, "PAIR_LIMIT", 5)  # the pair and triple memos emptied between most notes
    pipeline = Pipeline.load(tiny_model)
    table = pipeline.tagger.scores
    docs = _notes()[:60]
    assert _check(pipeline, docs[:30]) > 100
    words = {key: len(rows.index) for key, rows in table._words.items()}
    assert len(table._pairs) > 5 and len(table._triples) > 5 and all(words.values())  # from the last note
    table.settle()
    assert not table._pairs and not table._triples
    assert {key: len(rows.index) for key, rows in table._words.items()} == words  # the word rows are kept
    monkeypatch.setattr(scores, "WORD_CACHE_SIZE", 20)  # and the whole table afresh between notes
    assert _check(pipeline, docs[30:]) > 100


@pytest.mark.parametrize("split", DEV_SPLITS)
def test_scores_and_tags_are_crfsuites_on_dev_splits(default_pipeline: Pipeline, shared_data: Path,
                                                     split: str) -> None:
    text = shared_data / split / "text"
    if not text.is_dir():
        pytest.skip(f"{split} is not present")
    docs = [doc for _, doc in itertools.islice(sorted(read_notes(text).items()), DEV_NOTES)]
    assert _check(default_pipeline, docs) >= len(docs)


def _reference_viterbi(scores: np.ndarray, transitions: np.ndarray) -> list[int]:
    """CRFsuite's crf1dc_viterbi, line by line."""
    n, n_labels = scores.shape
    cur = list(scores[0])
    back = []
    for t in range(1, n):
        prev, cur, step = cur, [], []
        for j in range(n_labels):
            best, arg = -np.inf, 0
            for i in range(n_labels):
                s = prev[i] + transitions[i, j]
                if best < s:
                    best, arg = s, i
            cur.append(best + scores[t, j])
            step.append(arg)
        back.append(step)
    labels = [int(np.argmax(cur))]
    for step in reversed(back):
        labels.append(step[labels[-1]])
    return labels[::-1]


def test_viterbi_is_crfsuites_and_flags_ties() -> None:
    rng = np.random.default_rng(5)
    for _ in range(40):
        lengths = rng.integers(1, 9, size=rng.integers(1, 7))
        n_labels = int(rng.integers(2, 6))
        # small integers: sums are exact, and ties are common
        scores = rng.integers(-2, 3, size=(int(lengths.sum()), n_labels)).astype(float)
        transitions = rng.integers(-2, 3, size=(n_labels, n_labels)).astype(float)
        labels, unsure = viterbi(scores, lengths, transitions)
        start = 0
        for k, n in enumerate(lengths):
            assert labels[start:start + n].tolist() == _reference_viterbi(scores[start:start + n], transitions)
            start += n
        real = scores + rng.normal(0, 0.1, scores.shape)  # no ties left
        labels, unsure = viterbi(real, lengths, transitions)
        assert not unsure.any()
    # a tie on the path: unsure, and the first maximum wins as in CRFsuite
    labels, unsure = viterbi(np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([2]), np.zeros((2, 2)))
    assert unsure.tolist() == [True] and labels.tolist() == [0, 0]


def test_unsure_sentences_are_tagged_by_crfsuite(default_pipeline: Pipeline, monkeypatch) -> None:
    docs = list(read_notes(REPO / "examples" / "notes").values())
    before = [default_pipeline.tag(doc) for doc in docs]
    assert any(before)

    def unsure_of_all(scores, lengths, transitions):
        labels, _ = viterbi(scores, lengths, transitions)
        return np.zeros_like(labels), np.ones(len(lengths), dtype=bool)  # wrong labels, all unsure

    monkeypatch.setattr(crf, "viterbi", unsure_of_all)
    assert default_pipeline.tagger.tag_many(docs) == before


def test_one_note_failing_leaves_the_batch(default_pipeline: Pipeline, monkeypatch) -> None:
    docs = list(read_notes(REPO / "examples" / "notes").values())
    before = default_pipeline.tagger.tag_many(docs)
    real = crf.doc_emissions
    monkeypatch.setattr(crf, "doc_emissions", lambda doc, *a: 1 / 0 if doc.id == docs[1].id else real(doc, *a))
    got = default_pipeline.tagger.tag_many(docs)
    assert isinstance(got[1], ZeroDivisionError)
    assert got[:1] + got[2:] == before[:1] + before[2:]
