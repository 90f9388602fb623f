"""Helpers shared by several test modules (pytest puts this folder on the import path)."""

from __future__ import annotations

from hypothesis import strategies as st

from share_ner.document import Mention


def mention_of(text: str, *phrases: str, doc_id: str = "d") -> Mention:
    """A mention made of ``phrases`` (one fragment each), each found left to right in ``text``."""
    spans, pos = [], 0
    for p in phrases:
        s = text.index(p, pos)
        spans.append((s, s + len(p)))
        pos = s + len(p)
    return Mention(doc_id, tuple(spans))


# Text the abbreviation detector and its screening steps must reason about (tests/test_abbreviations.py, and
# against scispaCy's detector tests/test_scispacy_oracle.py): definitions of every shape ("congestive heart failure
# (CHF)", "CHF (congestive heart failure)"), near-misses, tokens the tokenizer splits inside a word ("cannot",
# "10mg"), whitespace that is a token ("\n", two spaces), brackets glued to words, case folding beyond ASCII.
_WORDS = st.sampled_from(
    [
        "congestive", "heart", "failure", "chronic", "kidney", "disease", "Hypertension", "the", "of", "cannot",
        "10mg", "mg", "non-", "x-ray", "İstanbul", "ΑΣ", "σ", "D&C", "R>L", "C5-6", "s", "a", "see", "below", "2",
    ]
)
_SPACES = st.sampled_from([" ", " ", " ", "", "  ", "\n", "\n\n", " \n", "\t", "\u00a0", ", ", ". "])


@st.composite
def _definition(draw: st.DrawFn) -> str:
    words = draw(st.lists(_WORDS, min_size=1, max_size=6))
    initials = "".join(w[0] for w in words if w[0].isalnum())
    short = draw(st.sampled_from([initials, initials.upper(), initials.lower(), initials[1:], initials + "2",
                                  initials[:1] + "-" + initials[1:], initials[::-1], draw(_WORDS)]))
    long = "".join(w + draw(_SPACES) for w in words).strip()
    opening, closing = draw(st.sampled_from(["(", " (", "\n(", "  (", "((", "( "])), draw(st.sampled_from(
        [")", " )", "))", ") ", ")."]))
    if draw(st.booleans()):
        return long + opening + short + closing
    return short + opening + long + closing


@st.composite
def _abbreviation_text(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(_definition(), _WORDS, st.sampled_from(["(", ")", "(see below)", "(s)"])),
                          max_size=12))
    text = " ".join(parts)
    spaces = draw(st.lists(_SPACES, min_size=1, max_size=3))
    return text.replace(" ", spaces[0]) if len(spaces) == 3 else text  # some texts with other whitespace


ABBREVIATION_TEXTS = _abbreviation_text()

ABBREVIATION_EDGE_CASES = [
    "congestive heart failure (CHF)",  # the long form first
    "CHF (congestive heart failure) and CHF",  # the long form inside, 3 tokens: read as a short form
    "CHF (the congestive heart failure here)",  # 5 tokens inside: a long form
    "(CHF) congestive heart failure (CHF)",  # a "(" that is the first token
    "\n(CHF) congestive heart failure",
    "cannot stay (CS)",  # the short form's first letter starts a token inside the word "cannot"
    "weight 10mg (MG)",  # ... inside "10mg"
    "chronic kidney disease(CKD).",  # brackets glued to the words
    "chronic kidney disease ( CKD ) .",
    "chronic kidney disease\n\n(CKD)",
    "İstanbul ΑΣ (İΣ) and ΑΣ",  # lower case of one character at a time
    "İstanbul D&C\n(Dİc)",  # "İ" in lower case is "i" and a combining mark: not a letter the detector matches
    " ".join(["word"] * 40) + " chronic kidney disease (CKD)",  # beyond the window's 33 runs
    "CKD (chronic kidney disease " + "x " * 40 + ")",  # too many tokens inside
    "heart failure (HF) and home fire (HF); HF",  # a short form defined twice: the first definition is kept
    "a b (c (AB) d) and AB",  # two "(" before one ")": the nearest first
]
