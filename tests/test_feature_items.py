"""CRFsuite attribute lists (share_ner.features.items) and the feature dicts read from them: pycrfsuite makes the
lists again of the dicts, so a model trained on either is the same."""

from __future__ import annotations

from collections import defaultdict

import pycrfsuite
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from share_ner.document import Document
from share_ner.features import FeatureConfig, FeatureResources, TermMatcher, document_features
from share_ner.features.coordination import coordination_features
from share_ner.features.items import add_features, attribute_name, document_items
from share_ner.tagging.weights import read_weights
from share_ner.text import split_sentences

TEXT = (
    "HISTORY OF PRESENT ILLNESS:\n1. Congestive heart failure (CHF) with SOB, CHF worse.\n"
    "- renal or liver impairment; hepatitis B or C\n"
    "LEFT ATRIAL SIZE IS ENLARGED.\nMeds: aspirin 81 mg. Patient has chronic kidney disease and Crohn's disease.\n"
    "   2) Diabetes mellitus type 2, h/o MI/CHF.  Denies chest pain:  none.\r\nPlan: f/u in 2-3 weeks"
)
TERMS = [("congestive heart failure", "disease"), ("heart failure", "disease"), ("renal impairment", "train"),
         ("liver impairment", "train"), ("hepatitis c", "disease"), ("chronic kidney disease", ""),
         ("crohn's disease", "disease"), ("diabetes mellitus type 2", "train"), ("chest pain", "finding")]
CLUSTERS = {"heart": "64:1,256:7,1024:99", "failure": "64:2,256:9,1024:100", "disease": "0110101101",
            "0": "64:3,256:4,1024:5"}
ABBREVIATIONS = {"CHF": ["congestive heart failure"], "SOB": ["shortness of breath"], "MI": ["myocardial infarction",
                 "mitral insufficiency"], "h/o": ["history of"]}


def resources() -> FeatureResources:
    return FeatureResources(TermMatcher.from_terms(TERMS), CLUSTERS, ABBREVIATIONS)


def as_attributes(features: dict) -> list[bytes]:
    """What pycrfsuite makes of one feature dict: ``key:value`` for a string value, ``key`` for a weight."""
    return [(f"{k}:{v}" if isinstance(v, str) else k).encode() for k, v in features.items()]


CONFIGS = [FeatureConfig(), FeatureConfig(caseless_capitals=True), FeatureConfig(window_size=3),
           FeatureConfig(window_size=1).without("conjunctions"), FeatureConfig().without("window", "position"),
           FeatureConfig().without("lexicon"), FeatureConfig().without("abbreviation", "shape")]


@pytest.mark.parametrize("config", CONFIGS, ids=range(len(CONFIGS)))
def test_items_are_the_dicts_attributes_in_order(config: FeatureConfig) -> None:
    doc = Document("d", TEXT)
    sentences = [s for s in split_sentences(doc) if s.tokens]
    res = resources()
    dicts = document_features(doc, sentences, res, config)
    items = document_items(doc, sentences, res, config)
    assert [[as_attributes(f) for f in sent] for sent in dicts] == items
    # the features this text was written to reach are all there
    flat = {a for sent in items for item in sent for a in item}
    expected = {b"abbr.defined", b"abbr.long:B", b"lex:B", b"bullet", b"line_first", b"cl64:1", b"cb4:0110"}
    if config == FeatureConfig():
        assert expected <= flat


def test_coordination_marks_append_after_the_features() -> None:
    doc = Document("d", "Risk of renal or liver impairment and hepatitis B or C.")
    sentences = [s for s in split_sentences(doc) if s.tokens]
    res = resources()
    [dicts] = document_features(doc, sentences, res, FeatureConfig())
    [items] = document_items(doc, sentences, res, FeatureConfig())
    words = [t.text for t in sentences[0].tokens]
    coordination_features(words, dicts, res.term_matcher)
    extra: defaultdict[int, dict] = defaultdict(dict)
    coordination_features(words, extra, res.term_matcher)
    assert extra  # "renal ... impairment" is a known term
    add_features(items, extra)
    assert [as_attributes(f) for f in dicts] == items


def test_keep_only_drops_just_the_attributes_a_model_lacks(tmp_path) -> None:
    doc = Document("d", TEXT)
    sentences = [s for s in split_sentences(doc) if s.tokens]
    res = resources()
    full = document_items(doc, sentences, res, FeatureConfig())
    # a model trained on the first sentence knows its attributes only
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.append(full[1], ["B"] + ["O"] * (len(full[1]) - 1))
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    known = frozenset(read_weights(tmp_path / "m.crfsuite").attributes)  # what CrfTagger.load keeps
    assert known and known <= {a for item in full[1] for a in item} < {a for sent in full for item in sent for a in item}
    res.keep_only(known)
    kept = document_items(doc, sentences, res, FeatureConfig())
    assert kept == [[[a for a in item if a in known] for item in sent] for sent in full]
    assert [tagger.tag(s) for s in kept] == [tagger.tag(s) for s in full]
    res.keep_only(None)
    assert document_items(doc, sentences, res, FeatureConfig()) == full


def test_attribute_name_is_pycrfsuites() -> None:
    assert attribute_name("lw", "pain") == b"lw:pain"
    assert attribute_name("BOS", 1.0) == b"BOS"
    with pytest.raises(ValueError):
        attribute_name("x", 0.5)
    seq = pycrfsuite.ItemSequence([{"lw": "pain", "BOS": 1.0}])
    assert seq.items() == pycrfsuite.ItemSequence([[b"lw:pain", b"BOS"]]).items()


PIECES = [*"aB1 .,:;()-/\n\r\t", "CHF", "heart", "failure", "renal", " or ", "Ünïcode", "2)", "- "]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_any_text_gives_the_dicts_attributes(text: str) -> None:
    doc = Document("d", text)
    sentences = [s for s in split_sentences(doc) if s.tokens]
    res = resources()
    for config in (FeatureConfig(), FeatureConfig(caseless_capitals=True)):
        dicts = document_features(doc, sentences, res, config)
        assert [[as_attributes(f) for f in sent] for sent in dicts] == document_items(doc, sentences, res, config)
