"""ConText attributes: triggers, scope, pseudo-triggers, terminators, sections, discontiguous mentions."""

from __future__ import annotations

import pickle
import re
import subprocess
import sys

import pytest
from helpers import mention_of as mention
from hypothesis import given
from hypothesis import strategies as st

from share_ner.attributes import ContextMatcher, parse_rules
from share_ner.attributes.rules import merge_rules, packaged_rules
from share_ner.document import Attributes, Document, Mention

_MATCHER = ContextMatcher()  # the packaged rules, compiled once for every test here


@pytest.fixture(scope="module")
def matcher() -> ContextMatcher:
    return _MATCHER


def attrs(matcher: ContextMatcher, text: str, *mentions: Mention) -> list[Attributes]:
    return matcher.attributes(Document("d", text), list(mentions))


# ---------------------------------------------------------------- the medspaCy ConText failures of the issue

def test_negative_for_a_slashed_pair_is_negated(matcher):
    text = "Head CT is negative for stroke/cva."
    (a,) = attrs(matcher, text, mention(text, "stroke/cva"))
    assert a.negation == "yes"
    assert text[slice(*a.cues["negation"][0])].lower() in ("negative for", "is negative for")


def test_no_further_after_a_colon_negates(matcher):
    text = "IMPRESSION: No further evidence of pneumonia."
    (a,) = attrs(matcher, text, mention(text, "pneumonia"))
    assert a.negation == "yes"
    assert text[slice(*a.cues["negation"][0])] == "No further"


def test_a_cue_split_around_the_mention(matcher):
    text = "We were able to cross pneumonia off the list."
    (a,) = attrs(matcher, text, mention(text, "pneumonia"))
    assert a.negation == "yes"
    assert [text[s:e] for s, e in a.cues["negation"]] == ["cross", "off"]
    text = "We will cross the bridge when we come to it, pneumonia aside."  # the second part never follows
    (a,) = attrs(matcher, text, mention(text, "pneumonia"))
    assert a.negation == "no"


def test_no_increase_is_a_pseudo_trigger(matcher):
    text = "No increase in pain since yesterday."
    (a,) = attrs(matcher, text, mention(text, "pain"))
    assert a.negation == "no" and "negation" not in a.cues


def test_but_ends_the_scope_of_denies(matcher):
    text = "Patient denies chest pain, but reports dyspnea."
    chest, dyspnea = attrs(matcher, text, mention(text, "chest pain"), mention(text, "dyspnea"))
    assert chest.negation == "yes" and dyspnea.negation == "no"


# ---------------------------------------------------------------- scope

def test_forward_negation_covers_a_list_to_the_sentence_end(matcher):
    text = "No fever, chills or night sweats. Cough is present."
    fever, sweats, cough = attrs(matcher, text, mention(text, "fever"), mention(text, "night sweats"),
                                 mention(text, "Cough"))
    assert (fever.negation, sweats.negation, cough.negation) == ("yes", "yes", "no")


def test_backward_trigger(matcher):
    text = "Pulmonary embolism was ruled out."
    (a,) = attrs(matcher, text, mention(text, "Pulmonary embolism"))
    assert a.negation == "yes" and text[slice(*a.cues["negation"][0])] == "was ruled out"


def test_nothing_found_gives_the_defaults(matcher):
    text = "Patient has pneumonia."
    (a,) = attrs(matcher, text, mention(text, "pneumonia"))
    assert a == Attributes() and a.non_default() == {} and a.doctime == "unknown"


def test_uncertainty_historical_hypothetical_family(matcher):
    text = ("Possible pneumonia. History of DVT. Return to the ED if fever recurs. "
            "Her mother had breast cancer.")
    pna, dvt, fever, cancer = attrs(matcher, text, mention(text, "pneumonia"), mention(text, "DVT"),
                                    mention(text, "fever"), mention(text, "breast cancer"))
    assert pna.uncertainty == "yes" and pna.negation == "no"
    assert dvt.doctime == "before" and text[slice(*dvt.cues["doctime"][0])] == "History of"
    assert fever.conditional == "true"
    assert cancer.subject == "family_member"


def test_a_family_history_reaches_its_whole_list(matcher):
    text = "Family history of hypertension, diabetes, coronary artery disease and stroke."
    (stroke,) = attrs(matcher, text, mention(text, "stroke"))
    assert stroke.subject == "family_member" and text[slice(*stroke.cues["subject"][0])] == "Family history of"


def test_a_relative_reaches_back_one_word_or_over_in(matcher):
    text = "Diabetes (mother). Colon cancer in her maternal grandmother."
    dm, cancer = attrs(matcher, text, mention(text, "Diabetes"), mention(text, "Colon cancer"))
    assert dm.subject == "family_member" and cancer.subject == "family_member"
    # a relative farther after the mention is an informant or a visitor
    text = ("She does have a history of febrile seizures and what parents reported. "
            "Thin, tired appearing, wife and daughter present at bedside.")
    seizures, tired = attrs(matcher, text, mention(text, "febrile seizures"), mention(text, "tired"))
    assert seizures.subject == "patient" and tired.subject == "patient"


def test_a_relative_who_has_or_had_reaches_further(matcher):
    text = "His father has a long history of hypertension and heart failure. His sister was seen for a rash."
    hf, rash = attrs(matcher, text, mention(text, "heart failure"), mention(text, "rash"))
    assert hf.subject == "family_member" and text[slice(*hf.cues["subject"][0])] == "father has"
    assert rash.subject == "patient"  # a relative alone reaches three words on


def test_a_relative_who_reports_or_notices_is_an_informant(matcher):
    text = "The parents also noticed no rashes. Mother reported vomiting. Her father had gout."
    rashes, vomiting, gout = attrs(matcher, text, mention(text, "rashes"), mention(text, "vomiting"),
                                   mention(text, "gout"))
    assert rashes.subject == "patient" and rashes.negation == "yes"
    assert vomiting.subject == "patient"
    assert gout.subject == "family_member"


def test_clear_of_rather_than_and_not_suspected_negate(matcher):
    text = ("The lungs are clear of effusion or pneumothorax. It is a fibroid rather than a malignancy. "
            "Tuberculosis is not suspected. He was given heparin rather than warfarin for the thrombosis.")
    names = ("effusion", "pneumothorax", "malignancy", "Tuberculosis", "thrombosis")
    found = attrs(matcher, text, *(mention(text, name) for name in names))
    assert [a.negation for a in found] == ["yes", "yes", "yes", "yes", "no"]  # the window ends "rather than"


def test_did_not_rule_out_is_uncertain_not_negated(matcher):
    text = "The CT did not rule out appendicitis. The scan does not exclude an abscess."
    for a in attrs(matcher, text, mention(text, "appendicitis"), mention(text, "abscess")):
        assert (a.negation, a.uncertainty) == ("no", "yes")


def test_a_second_predicate_after_and_ends_negation(matcher):
    text = ("He was not hypotensive and remained tachycardic. No fever and developed a rash. "
            "History of asthma and developed pneumonia.")
    hypotensive, tachycardic, fever, rash, asthma, pneumonia = attrs(
        matcher, text, *(mention(text, w) for w in ("hypotensive", "tachycardic", "fever", "rash", "asthma",
                                                    "pneumonia")))
    assert (hypotensive.negation, tachycardic.negation) == ("yes", "no")
    assert (fever.negation, rash.negation) == ("yes", "no")
    assert (asthma.doctime, pneumonia.doctime) == ("before", "unknown")  # "developed" still ends "history of"


def test_a_trigger_inside_the_mention_does_not_apply_to_it(matcher):
    text = "Findings: no-reflow phenomenon."
    (a,) = attrs(matcher, text, mention(text, "no-reflow phenomenon"))
    assert a.negation == "no"


def test_discontiguous_mention_is_reached_through_its_fragments(matcher):
    text = "Abdomen: soft, no tenderness."
    # abdomen ... tenderness: the trigger lies between the fragments and reaches the second
    (a,) = attrs(matcher, text, mention(text, "Abdomen", "tenderness"))
    assert a.negation == "yes"
    whole = mention(text, "Abdomen")
    (b,) = attrs(matcher, text, whole)
    assert b.negation == "no"  # the contiguous "Abdomen" before "no" is not in its forward scope


def test_sentence_limits(matcher):
    text = "No fever.\nCough for three days."
    (a,) = attrs(matcher, text, mention(text, "Cough"))
    assert a.negation == "no"
    text = "COMPLICATIONS:  None    DIAGNOSIS:  1) Polyp in the colon  2) Hemorrhoids"
    (b,) = attrs(matcher, text, mention(text, "Hemorrhoids"))
    assert b.negation == "no"


# ---------------------------------------------------------------- sections

def test_section_headers_set_subject_and_doctime(matcher):
    text = ("FAMILY HISTORY:\nDiabetes.\nStroke.\nSOCIAL HX: Tobacco use.\n"
            "HISTORY OF PRESENT ILLNESS: Cough.")
    dm, stroke, tobacco, cough = attrs(matcher, text, mention(text, "Diabetes"), mention(text, "Stroke"),
                                       mention(text, "Tobacco use"), mention(text, "Cough"))
    # sentences after the header's own: the section, not a trigger, sets the subject
    for a in (dm, stroke):
        assert a.subject == "family_member" and text[slice(*a.cues["subject"][0])] == "FAMILY HISTORY:"
    assert tobacco.doctime == "before" and text[slice(*tobacco.cues["doctime"][0])] == "SOCIAL HX:"
    assert tobacco.subject == "patient"
    assert cough == Attributes()  # "history of" inside the header's name is no trigger


def test_a_sentence_trigger_wins_over_the_section(matcher):
    text = "FAMILY HISTORY: The patient's own asthma. Father with diabetes."
    (a,) = attrs(matcher, text, mention(text, "diabetes"))
    assert a.subject == "family_member" and text[slice(*a.cues["subject"][0])] == "Father"


# ---------------------------------------------------------------- rules as data

def test_a_site_rule_adds_and_a_default_value_removes(matcher):
    text = "Pneumonia excluded clinically; afebrile."
    site = parse_rules("clinically\tnegation\tyes\tbackward\t3\n"
                       "excluded\tnegation\tno\tbackward\n", "site.tsv")
    custom = ContextMatcher(merge_rules(packaged_rules(), site))
    (base,) = attrs(matcher, text, mention(text, "Pneumonia"))
    (mine,) = attrs(custom, text, mention(text, "Pneumonia"))
    assert base.negation == "yes" and text[slice(*base.cues["negation"][0])] == "excluded"
    assert mine.negation == "yes" and text[slice(*mine.cues["negation"][0])] == "clinically"


def test_window_limits_the_reach():
    rules = parse_rules("no\tnegation\tyes\tforward\t2\n", "r.tsv")
    m = ContextMatcher(rules)
    text = "no sign at all of pneumonia; no real rash"
    pna, rash = m.attributes(Document("d", text), [mention(text, "pneumonia"), mention(text, "rash")])
    assert pna.negation == "no" and rash.negation == "yes"


def test_matcher_pickles_with_its_rules():
    m = ContextMatcher(parse_rules("nope\tnegation\tyes\tforward\n", "r.tsv"))
    again = pickle.loads(pickle.dumps(m))
    text = "nope fever"
    (a,) = again.attributes(Document("d", text), [mention(text, "fever")])
    assert a.negation == "yes"


def test_assign_keeps_the_mentions_and_their_order(matcher):
    text = "No fever. Cough."
    ms = [mention(text, "Cough"), mention(text, "fever")]
    out = matcher.assign(Document("d", text), ms)
    assert out == ms and [m.attributes.negation for m in out] == ["no", "yes"]


def test_a_note_whose_lower_case_is_longer_keeps_its_offsets(matcher):
    text = "İstanbul trip. Denies fever."  # "İ".lower() is two characters
    assert len(text.lower()) != len(text)
    (a,) = attrs(matcher, text, mention(text, "fever"))
    assert a.negation == "yes" and text[slice(*a.cues["negation"][0])] == "Denies"


_WORDS = st.sampled_from(["no", "denies", "fever", "but", "history of", "if", ",", ".", "\n", "FAMILY HISTORY:",
                          "not", "pain", "cross", "off", "İ", "  ", "mild", "s/p", "?", "cannot be ruled out"])


@given(st.lists(_WORDS, min_size=1, max_size=40), st.lists(st.tuples(st.integers(0, 400), st.integers(1, 20)),
                                                         min_size=1, max_size=5))
def test_every_mention_gets_attributes_with_cues_inside_the_note(words, raw_spans):
    text = " ".join(words)
    mentions = []
    for s, n in raw_spans:
        s = min(s, len(text) - 1)
        mentions.append(Mention("d", ((s, min(len(text), s + n)),)))
    out = _MATCHER.attributes(Document("d", text), mentions)
    assert len(out) == len(mentions)
    for a in out:
        assert set(a.cues) == set(a.non_default())
        assert all(0 <= s < e <= len(text) for spans in a.cues.values() for s, e in spans)


# ---------------------------------------------------------------- cost: linear in the sentence's length

_LONG = """
import sys
import share_ner.attributes.context as context
from share_ner.attributes import AnatomyMatcher, ContextMatcher, sentence_starts
from share_ner.document import Document, Mention

checks = [0]
counted = context.more_words


def counting(*args):
    checks[0] += 1
    return counted(*args)


context.more_words = counting
unit = "no fever, mild pain, and cough is absent; possible sepsis vs flu; "
text = unit * 1200  # one sentence of 20,400 words and marks
mentions = [Mention("d", ((k + unit.index(w), k + unit.index(w) + len(w)),))
            for k in range(0, len(text), len(unit)) for w in ("fever", "pain", "cough", "sepsis", "flu")]
out = ContextMatcher().attributes(Document("d", text), mentions)
values = {(text[m.start:m.end], a.negation, a.uncertainty, a.severity) for m, a in zip(mentions, out)}
assert values == {("fever", "yes", "no", "unmarked"), ("pain", "yes", "no", "slight"),
                  ("cough", "yes", "no", "unmarked"), ("sepsis", "no", "yes", "unmarked"),
                  ("flu", "no", "yes", "unmarked")}, values
assert checks[0] <= 4 * len(mentions), checks[0]  # word windows looked at a few times per mention, not per pair
# sentence limits and body sites over long runs: each run tried from its start only, each site's reach in words
assert sentence_starts("." * 200_000) == [0] and sentence_starts(" " * 200_000 + "x") == [0]
sites = AnatomyMatcher.load()
text = "lung" + " fever" * 20_000
mentions = [Mention("d", ((k, k + 5),)) for k in range(5, len(text), 6)]
found = sites.locate(text, mentions)
assert found[0] == ("C0024109", (0, 4)) and found[-1] is None
print("ok", len(out))
"""


def test_a_20000_word_sentence_takes_a_moment_not_hours():
    # In a child process with a generous limit: matching that is quadratic or cubic in the sentence's length (every
    # trigger checked against every mention, every terminator between) takes hours here; linear, about a second.
    done = subprocess.run([sys.executable, "-c", _LONG], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "6000"]


@given(st.text(alphabet="ab é,.-\n_1", max_size=40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 6))
def test_more_words_counts_words_as_the_regex_does(text, a, b, n):
    from share_ner.attributes.patterns import more_words

    a, b = sorted((min(a, len(text)), min(b, len(text))))
    assert more_words(text, a, b, n) == (len(re.findall(r"\w+", text[a:b])) > n)
