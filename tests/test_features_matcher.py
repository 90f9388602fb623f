"""The term matcher's pickled form: its trie shares equal keys, type tuples and leaves, and stays correct."""

from __future__ import annotations

import pickle

from share_ner.features.matcher import TermMatcher

TERMS = [("chest pain", "lexicon"), ("back pain", "lexicon"), ("pain", "train"), ("heart failure", "lexicon"),
         ("renal failure", "lexicon"), ("acute renal failure", "lexicon"), ("failure to thrive", "lexicon")]


def test_a_pickled_matcher_matches_as_the_original_and_shares_its_leaves():
    matcher = TermMatcher.from_terms(TERMS)
    loaded = pickle.loads(pickle.dumps(matcher))
    assert loaded.root == matcher.root and len(loaded) == len(matcher) and loaded.max_words == matcher.max_words
    words = "Chest pain and acute renal failure with back pain".split()
    assert [(m.start, m.end) for m in loaded.find(words)] == [(m.start, m.end) for m in matcher.find(words)]
    # the leaves of "chest pain" and "back pain" are one object, and so is the key "failure" under two words
    assert loaded.root["chest"]["pain"] is loaded.root["back"]["pain"]
    heart, renal = loaded.root["heart"], loaded.root["renal"]
    assert next(k for k in heart if k == "failure") is next(k for k in renal if k == "failure")
    assert matcher.root["chest"]["pain"] is not matcher.root["back"]["pain"]  # the original is left as built


def test_adding_to_a_loaded_matcher_changes_only_the_term_added():
    loaded = pickle.loads(pickle.dumps(TermMatcher.from_terms(TERMS)))
    assert loaded.add("chest pain radiating", "lexicon")
    assert loaded.add("back pain", "train")
    assert loaded.lookup("chest pain radiating") == ("lexicon",)
    assert loaded.lookup("back pain") == ("lexicon", "train")
    assert loaded.lookup("chest pain") == ("lexicon",)  # its leaf was shared with "back pain"
    assert loaded.lookup("back pain radiating") == ()
    assert len(loaded) == len(TERMS) + 1
