"""share-ner's rule tokenizer and abbreviation detector are scispaCy 0.6.2's, wherever scispaCy installs.

scispaCy pins NumPy < 2 and Python < 3.13, so it is no dependency: these tests run in a venv of its own with
``pip install -e '.[test,oracle]'`` (``.ci/run`` makes one) and are skipped elsewhere. The note-by-note comparison
on the repository's notes and every public corpus is ``benchmarks/bench_scispacy_oracle.py``, run here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from functools import cache
from pathlib import Path

import pytest
from helpers import ABBREVIATION_EDGE_CASES, ABBREVIATION_TEXTS
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("scispacy", reason="scispaCy is the oracle only where it installs (pip install '.[oracle]')")

from share_ner.features import abbreviations  # noqa: E402
from share_ner.text import get_tokenizer  # noqa: E402

ROOT = Path(__file__).parent.parent


@cache
def _scispacy_tokenizer():
    import spacy
    from scispacy.custom_tokenizer import combined_rule_tokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return combined_rule_tokenizer(spacy.blank("en"))


@cache
def _scispacy_detector():
    import scispacy.abbreviation  # noqa: F401  (registers the "abbreviation_detector" factory)
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("abbreviation_detector")
    return nlp


def _scispacy_pairs(text: str) -> list:
    """What ``find_definitions`` returns, from scispaCy's detector as its documentation runs it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\[W036\]")
        doc = _scispacy_detector()(text)
    return sorted({((s.start_char, s.end_char), (s._.long_form.start_char, s._.long_form.end_char))
                   for s in doc._.abbreviations})


def test_the_rule_tokenizer_has_scispacys_patterns_special_cases_and_token_match():
    ours, theirs = get_tokenizer(), _scispacy_tokenizer()
    for attribute in ("prefix_search", "suffix_search", "infix_finditer"):
        assert getattr(ours, attribute).__self__.pattern == getattr(theirs, attribute).__self__.pattern, attribute
    assert list(ours.rules.items()) == list(theirs.rules.items())
    assert ours.token_match == theirs.token_match and ours.url_match == theirs.url_match is None
    text = "Pt's h/o CHF (EF 35%), s/p CABG x3 on 3/12/2020; BP 120/80 mmHg, 2.5mg q.d. e.g. Dr. A's 10a.m. :) \n\t x"
    assert [(t.text, t.idx) for t in ours(text)] == [(t.text, t.idx) for t in theirs(text)]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*"aAzZ09 .,;:-/()[]{}+*^×=<>\"'’%°$#&…—_\n\tçΣ", "Fig.", "al.", "mg", "e.g.", "'s", "1D",
                                  "h/o", "IL-6"]), max_size=30).map("".join))
def test_the_rule_tokenizer_gives_scispacys_tokens(text):
    assert [(t.idx, t.text) for t in get_tokenizer()(text)] == [(t.idx, t.text) for t in _scispacy_tokenizer()(text)]


@settings(max_examples=400, deadline=None)
@given(ABBREVIATION_TEXTS)
def test_the_detector_finds_scispacys_pairs(text):
    assert abbreviations._detect(text) == _scispacy_pairs(text)
    assert abbreviations.find_definitions(text) == _scispacy_pairs(text)


@pytest.mark.parametrize("text", ABBREVIATION_EDGE_CASES)
def test_the_detector_finds_scispacys_pairs_on_edge_cases(text):
    assert abbreviations._detect(text) == _scispacy_pairs(text)


def test_tokens_and_pairs_are_scispacys_on_every_note_of_the_repository_and_the_corpora():
    """Every note of the repository, and of every public corpus when ``../shared/data`` is there; the script
    prints each difference."""
    shared = ROOT.parent / "shared" / "data"
    args = [] if (shared / "mtsamples").is_dir() or os.environ.get("SHARE_NER_DATA") else ["--repository-only"]
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_scispacy_oracle.py"), "--no-write", *args],
                          capture_output=True, text=True, cwd=ROOT)
    print(done.stdout)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "| all |" in done.stdout
