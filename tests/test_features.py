"""Token features: each group on hand-made sentences, config switches, the term matcher."""

from __future__ import annotations

import pickle
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from share_ner.document import Document, Sentence, Token
from share_ner.errors import ShareNerError
from share_ner.features import (
    GROUPS,
    FeatureConfig,
    FeatureResources,
    TermMatcher,
    document_features,
    sentence_features,
)
from share_ner.features.matcher import fold_plural, term_keys
from share_ner.features.tokens import short_shape, word_shape

ONLY = {g: False for g in GROUPS}


def only(*groups: str) -> FeatureConfig:
    return FeatureConfig(**{**ONLY, **{g: True for g in groups}})


def split(text: str, doc_id: str = "d", section: str = "", start: int = 0, end: int | None = None) -> Sentence:
    """A sentence of the whitespace-separated words of ``text[start:end]`` (document offsets)."""
    end = len(text) if end is None else end
    tokens = tuple(Token(m.group(), m.start(), m.end()) for m in re.finditer(r"\S+", text) if start <= m.start() < end)
    return Sentence(doc_id, tokens, section)


def feats_of(text: str, config: FeatureConfig, resources: FeatureResources = FeatureResources(), section: str = "") -> list[dict]:
    return sentence_features(split(text, section=section), resources, config, text)


# --- word, affix, shape -------------------------------------------------------


def test_word_group_gives_form_and_lowercase_form() -> None:
    f = feats_of("Chest PAIN", only("word"))
    assert f == [{"bias": 1.0, "w": "Chest", "lw": "chest"}, {"bias": 1.0, "w": "PAIN", "lw": "pain"}]


def test_affix_group_gives_prefixes_and_suffixes_shorter_than_the_word() -> None:
    f = feats_of("Edema of", only("affix"))
    assert f[0] == {"bias": 1.0, "p2": "ed", "s2": "ma", "p3": "ede", "s3": "ema", "p4": "edem", "s4": "dema"}
    assert f[1] == {"bias": 1.0}  # "of" is no longer than any affix


def test_shape_group_shapes_and_flags() -> None:
    f = feats_of("Xxxxxxx-2 COPD 120 , x2", only("shape"))
    assert f[0] == {"bias": 1.0, "shape": "Xxxxx-d", "sshape": "Xx-d", "len": "7-10", "has_digit": 1.0, "is_title": 1.0, "has_hyphen": 1.0}
    assert f[1] == {"bias": 1.0, "shape": "XXXX", "sshape": "X", "len": "4-6", "is_upper": 1.0}
    assert f[2] == {"bias": 1.0, "shape": "ddd", "sshape": "d", "len": "3", "is_digit": 1.0}
    assert f[3] == {"bias": 1.0, "shape": ",", "sshape": ",", "len": "1", "is_punct": 1.0}
    assert f[4] == {"bias": 1.0, "shape": "xd", "sshape": "xd", "len": "2", "has_digit": 1.0}


def test_shape_of_non_ascii_letters() -> None:
    assert word_shape("Ménière's") == "Xxxxx'x"  # six lower-case letters, cut to four
    assert short_shape("Ménière's") == "Xx'x"


# --- window and conjunctions ----------------------------------------------------


def test_window_copies_neighbours_lowercase_and_short_shape() -> None:
    f = feats_of("No Acute Distress today", only("window"))
    assert f[1] == {
        "bias": 1.0,
        "-1:lw": "no", "-1:ss": "Xx",
        "+1:lw": "distress", "+1:ss": "Xx",
        "+2:lw": "today", "+2:ss": "x",
    }
    assert set(f[0]) == {"bias", "+1:lw", "+1:ss", "+2:lw", "+2:ss"}
    assert set(f[3]) == {"bias", "-1:lw", "-1:ss", "-2:lw", "-2:ss"}


def test_window_size_is_configurable() -> None:
    config = FeatureConfig.from_dict({**ONLY, "window": True, "window_size": 1})
    f = feats_of("a b c", config)
    assert f[1] == {"bias": 1.0, "-1:lw": "a", "-1:ss": "x", "+1:lw": "c", "+1:ss": "x"}


def test_conjunctions_pad_the_sentence_edges() -> None:
    f = feats_of("Severe Pain", only("conjunctions"))
    assert f[0] == {"bias": 1.0, "lw-1|lw": "<s>|severe", "lw|lw+1": "severe|pain", "ss-1|ss|ss+1": "<s>|Xx|Xx"}
    assert f[1] == {"bias": 1.0, "lw-1|lw": "severe|pain", "lw|lw+1": "pain|</s>", "ss-1|ss|ss+1": "Xx|Xx|</s>"}


# --- section and position ---------------------------------------------------------


def test_section_feature_comes_from_the_sentence() -> None:
    assert feats_of("fever", only("section"), section="past_medical_history")[0] == {"bias": 1.0, "sec": "past_medical_history"}
    assert feats_of("fever", only("section"))[0] == {"bias": 1.0, "sec": "-"}


def test_position_line_start_bullets_and_index() -> None:
    text = "Problems : cough\n- asthma\n2 . fever and rash"
    sentence = split(text)
    f = sentence_features(sentence, FeatureResources(), only("position"), text)
    words = [t.text for t in sentence.tokens]
    assert words == ["Problems", ":", "cough", "-", "asthma", "2", ".", "fever", "and", "rash"]
    assert f[0] == {"bias": 1.0, "BOS": 1.0, "idx": "0", "line_first": 1.0}
    assert f[1] == {"bias": 1.0, "idx": "1"}
    assert f[2] == {"bias": 1.0, "idx": "2", "after_colon": 1.0}
    assert f[3] == {"bias": 1.0, "idx": "3-4", "line_first": 1.0, "bullet": 1.0}
    assert f[4] == {"bias": 1.0, "idx": "3-4", "after_bullet": 1.0}
    assert f[5] == {"bias": 1.0, "idx": "5-9", "line_first": 1.0, "bullet": 1.0}
    assert f[6] == {"bias": 1.0, "idx": "5-9", "bullet": 1.0}
    assert f[7] == {"bias": 1.0, "idx": "5-9", "after_bullet": 1.0}
    assert f[8] == {"bias": 1.0, "idx": "5-9"}
    assert f[9] == {"bias": 1.0, "idx": "5-9", "EOS": 1.0}


def test_sentence_starting_mid_line_is_not_line_first() -> None:
    text = "Denies pain. No fever."
    second = split(text, start=13)
    f = sentence_features(second, FeatureResources(), only("position"), text)
    assert "line_first" not in f[0] and f[0]["BOS"] == 1.0


def test_index_bucket_reaches_ten_plus() -> None:
    f = feats_of(" ".join(["w"] * 11), only("position"))
    assert [x["idx"] for x in f] == ["0", "1", "2", "3-4", "3-4", "5-9", "5-9", "5-9", "5-9", "5-9", "10+"]


# --- lexicon ------------------------------------------------------------------------


@pytest.fixture
def matcher() -> TermMatcher:
    return TermMatcher.from_terms(
        [
            ("heart failure", "Disease or Syndrome"),
            ("congestive heart failure", "Disease or Syndrome"),
            ("Crohn's disease", "Disease or Syndrome"),
            ("pain", "Sign or Symptom"),
            ("pain", "Finding"),
            ("diabetes mellitus, type 2", "Disease or Syndrome"),
        ]
    )


def test_term_matcher_prefers_the_longest_match(matcher: TermMatcher) -> None:
    words = "acute congestive heart failure and heart failure".split()
    assert [(m.start, m.end, m.semtypes) for m in matcher.find(words)] == [
        (1, 4, ("Disease or Syndrome",)),
        (5, 7, ("Disease or Syndrome",)),
    ]


def test_term_matcher_ignores_case_and_punctuation(matcher: TermMatcher) -> None:
    assert [(m.start, m.end) for m in matcher.find(["Crohn", "'s", "Disease"])] == [(0, 3)]
    assert [(m.start, m.end) for m in matcher.find(["Crohn's", "disease"])] == [(0, 2)]
    assert [(m.start, m.end) for m in matcher.find(["Diabetes", "mellitus", "type", "2"])] == [(0, 4)]
    assert matcher.lookup("PAIN") == ("Finding", "Sign or Symptom")
    assert matcher.lookup("heart") == ()


def test_term_matcher_matches_whole_tokens_only(matcher: TermMatcher) -> None:
    # "heart failure-related": the term ends inside the token "failure-related".
    assert matcher.find(["heart", "failure-related"]) == []
    assert matcher.find(["painful"]) == []


def test_term_matcher_from_lexicon_and_pickle() -> None:
    class Entry:
        def __init__(self, name: str, semtypes: tuple[str, ...]) -> None:
            self.name, self.semtypes = name, semtypes

    class Lex:
        entries = [Entry("Asthma", ("Disease or Syndrome",)), Entry("wheeze", ())]

    m = pickle.loads(pickle.dumps(TermMatcher.from_lexicon(Lex())))
    assert len(m) == 2 and m.max_words == 1
    assert m.lookup("asthma") == ("Disease or Syndrome",)
    assert m.lookup("Wheeze") == ("",)


def test_lexicon_group_gives_b_i_positions_and_types(matcher: TermMatcher) -> None:
    res = FeatureResources(term_matcher=matcher)
    f = feats_of("chronic heart failure with pain", only("lexicon"), res)
    assert f[0] == {"bias": 1.0}
    assert f[1] == {"bias": 1.0, "lex": "B", "lex.type=B-Disease or Syndrome": 1.0}
    assert f[2] == {"bias": 1.0, "lex": "I", "lex.type=I-Disease or Syndrome": 1.0, "lex.last": 1.0}
    assert f[4] == {"bias": 1.0, "lex": "B", "lex.type=B-Finding": 1.0, "lex.type=B-Sign or Symptom": 1.0, "lex.last": 1.0}
    # With the window on, neighbours see the match's tags.
    g = feats_of("chronic heart failure with pain", only("lexicon", "window"), res)
    assert g[0]["+1:lex"] == "B" and g[3]["-1:lex"] == "I" and g[3]["+1:lex"] == "B"


def test_colons_in_words_and_semantic_types_stay_in_their_values_and_keys() -> None:
    res = FeatureResources(term_matcher=TermMatcher.from_terms([("heart failure", "Type:1")]))
    f = feats_of("h/o: heart failure", only("word", "window", "lexicon"), res)
    assert f[0]["w"] == "h/o:" and f[1]["-1:lw"] == "h/o:" and f[0]["+1:lex"] == "B"
    assert f[1]["lex.type=B-Type:1"] == 1.0 and f[2]["lex.type=I-Type:1"] == 1.0
    assert not any(k.startswith("lex.type=B-Type") and k != "lex.type=B-Type:1" for k in f[1])


# --- abbreviations ------------------------------------------------------------------------


def test_abbreviation_list_features(matcher: TermMatcher) -> None:
    res = FeatureResources(
        term_matcher=TermMatcher.from_terms([("congestive heart failure", "Disease or Syndrome")]),
        abbreviations={"CHF": ["congestive heart failure"], "PE": ["pulmonary embolism", "physical examination"]},
    )
    f = feats_of("CHF chf Chf PE pe", only("abbreviation", "lexicon"), res)
    assert f[0] == {"bias": 1.0, "abbr.list": "exact", "abbr.n_exp": "1", "abbr.exp_lex=Disease or Syndrome": 1.0}
    assert f[1] == {"bias": 1.0, "abbr.list": "lower", "abbr.n_exp": "1", "abbr.exp_lex=Disease or Syndrome": 1.0}
    assert f[2] == {"bias": 1.0, "abbr.list": "case", "abbr.n_exp": "1", "abbr.exp_lex=Disease or Syndrome": 1.0}
    assert f[3] == {"bias": 1.0, "abbr.list": "exact", "abbr.n_exp": "2+"}
    # With the lexicon group off, no lexicon knowledge leaks in through the abbreviations.
    g = feats_of("CHF", only("abbreviation"), res)
    assert g[0] == {"bias": 1.0, "abbr.list": "exact", "abbr.n_exp": "1"}


def test_in_note_definitions_mark_long_form_and_every_short_form() -> None:
    text = "History of chronic kidney disease ( CKD ) . CKD stable ."
    doc = Document("n1", text)
    res = FeatureResources(term_matcher=TermMatcher.from_terms([("chronic kidney disease", "Disease or Syndrome")]))
    [f] = document_features(doc, [split(text, "n1")], res, only("abbreviation", "lexicon"))
    words = text.split()
    assert {words[i]: f[i].get("abbr.long") for i in range(2, 6)} == {"chronic": "B", "kidney": "I", "disease": "I", "(": None}
    for i in (6, 9):
        assert words[i] == "CKD"
        assert f[i]["abbr.defined"] == 1.0 and f[i]["abbr.def_lex=Disease or Syndrome"] == 1.0
    assert "abbr.defined" not in f[10]


# --- clusters -------------------------------------------------------------------------------


def test_cluster_features_use_the_normalized_word() -> None:
    res = FeatureResources(clusters={"fever": "64:3,256:17", "00": "64:9,256:1", "hypoxia": "0110101"})
    f = feats_of("Fever 38 hypoxia cough", only("clusters"), res)
    assert f[0] == {"bias": 1.0, "cl64": "3", "cl256": "17"}
    assert f[1] == {"bias": 1.0, "cl64": "9", "cl256": "1"}  # "38" is looked up as "00"
    assert f[2] == {"bias": 1.0, "cb4": "0110", "cb6": "011010", "cb": "0110101"}
    assert f[3] == {"bias": 1.0}


# --- configuration ------------------------------------------------------------------------------


def groups_of(key: str) -> set[str]:
    """The feature groups a key belongs to (a neighbour's lexicon tag needs both window and lexicon)."""
    if key == "bias":
        return set()
    if key in ("w", "lw"):
        return {"word"}
    if re.fullmatch(r"[ps][234]", key):
        return {"affix"}
    if key in ("shape", "sshape", "len") or key.startswith(("is_", "has_")):
        return {"shape"}
    if key in ("-1:lex", "+1:lex"):
        return {"window", "lexicon"}
    if re.fullmatch(r"[-+]\d:(lw|ss)", key):
        return {"window"}
    if key in ("lw-1|lw", "lw|lw+1", "ss-1|ss|ss+1"):
        return {"conjunctions"}
    if key == "sec":
        return {"section"}
    if key in ("BOS", "EOS", "idx", "line_first", "bullet", "after_bullet", "after_colon"):
        return {"position"}
    if key in ("lex", "lex.last") or key.startswith("lex.type="):
        return {"lexicon"}
    if key.startswith(("abbr.exp_lex=", "abbr.def_lex=")):
        return {"abbreviation", "lexicon"}
    if key.startswith("abbr."):
        return {"abbreviation"}
    if re.fullmatch(r"cl\d+|cb\d*", key):
        return {"clusters"}
    raise AssertionError(f"feature key {key!r} belongs to no known group")


@pytest.mark.parametrize("group", GROUPS)
def test_switching_a_group_off_removes_exactly_its_keys(group: str, matcher: TermMatcher) -> None:
    text = "HISTORY :\n- Congestive heart failure ( CHF ) , pain 3x today"
    doc = Document("d", text)
    res = FeatureResources(matcher, {"pain": "64:1,256:2"}, {"CHF": ["congestive heart failure"]})
    sentence = split(text, section="history")
    full = document_features(doc, [sentence], res, FeatureConfig())[0]
    off = document_features(doc, [sentence], res, FeatureConfig().without(group))[0]
    assert any(group in groups_of(k) for f in full for k in f), f"group {group} fired nowhere on the test sentence"
    for a, b in zip(full, off):
        assert not any(group in groups_of(k) for k in b)
        assert all(group in groups_of(k) for k in set(a) - set(b))
        assert b == {k: v for k, v in a.items() if k in b}


def test_config_from_dict_rejects_unknown_keys_with_the_allowed_list() -> None:
    with pytest.raises(ShareNerError) as err:
        FeatureConfig.from_dict({"word": True, "brown": True})
    message = str(err.value)
    assert "'brown'" in message and "allowed: word, affix, shape" in message and "window_size" in message


def test_config_round_trip_and_type_checks() -> None:
    config = FeatureConfig(clusters=False, window_size=1)
    assert FeatureConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ShareNerError, match="'lexicon' must be true or false"):
        FeatureConfig.from_dict({"lexicon": "yes"})
    with pytest.raises(ShareNerError, match="window_size"):
        FeatureConfig(window_size=9)
    with pytest.raises(ShareNerError, match="unknown feature group"):
        FeatureConfig().without("brown")


def test_feature_values_suit_pycrfsuite(matcher: TermMatcher) -> None:
    import pycrfsuite

    text = "Congestive heart failure ( CHF ) ."
    feats = document_features(Document("d", text), [split(text)], FeatureResources(matcher), FeatureConfig())[0]
    assert all(isinstance(k, str) and isinstance(v, (str, float)) for f in feats for k, v in f.items())
    items = pycrfsuite.ItemSequence(feats)
    assert len(items) == 7
    assert "lw:congestive" in items.items()[0]


def test_empty_sentence_and_no_sentences() -> None:
    assert sentence_features(Sentence("d", ()), FeatureResources(), FeatureConfig()) == []
    assert document_features(Document("d", ""), [], FeatureResources(), FeatureConfig()) == []


def test_term_matcher_skips_stop_word_terms() -> None:
    m = TermMatcher.from_terms([("All", ""), ("Normal", ""), ("all fours", "x"), ("fever", "Finding")])
    assert len(m) == 2
    assert [(x.start, x.end) for x in m.find(["all", "fever"])] == [(1, 2)]
    assert [(x.start, x.end) for x in m.find(["all", "fours"])] == [(0, 2)]


def test_lexicon_without_semantic_types_gives_position_only() -> None:
    res = FeatureResources(term_matcher=TermMatcher.from_terms([("seizure", "")]))
    assert feats_of("seizure", only("lexicon"), res)[0] == {"bias": 1.0, "lex": "B", "lex.last": 1.0}


def test_resources_pickle_without_their_cache(matcher: TermMatcher) -> None:
    res = FeatureResources(matcher, {"pain": "64:1"}, {"CHF": ["congestive heart failure"]})
    before = feats_of("CHF pain", FeatureConfig(), res)
    copy = pickle.loads(pickle.dumps(res))
    assert copy._items == {} and copy.clusters == res.clusters
    assert feats_of("CHF pain", FeatureConfig(), copy) == before


def test_term_matcher_folds_plurals_on_both_sides() -> None:
    m = TermMatcher.from_terms([("pleural effusion", "Finding"), ("food allergies", "Finding"), ("aortic stenosis", "Finding")])
    assert [(x.start, x.end) for x in m.find(["Pleural", "effusions"])] == [(0, 2)]
    assert [(x.start, x.end) for x in m.find(["food", "allergy"])] == [(0, 2)]
    assert [(x.start, x.end) for x in m.find(["aortic", "stenosis"])] == [(0, 2)]
    assert m.find(["aortic", "stenosi"]) == []


@pytest.mark.parametrize("singular, plural", [
    ("rash", "rashes"), ("mass", "masses"), ("abscess", "abscesses"), ("headache", "headaches"),
    ("metastasis", "metastases"), ("thrombosis", "thromboses"), ("virus", "viruses"), ("bruise", "bruises"),
    ("calculus", "calculi"), ("rhonchus", "rhonchi"), ("bulla", "bullae"), ("apex", "apices"),
    ("varix", "varices"), ("device", "devices"), ("reflex", "reflexes"), ("crisis", "crises"),
    ("injury", "injuries"), ("lesion", "lesions")])
def test_a_singular_and_its_plural_share_one_key(singular: str, plural: str) -> None:
    assert fold_plural(singular) == fold_plural(plural)
    m = TermMatcher.from_terms([(f"pulmonary {singular}", "Finding")])
    assert [(x.start, x.end) for x in m.find(["Pulmonary", plural.upper()])] == [(0, 2)]


def test_plural_folding_keeps_words_apart_that_differ() -> None:
    keys = {fold_plural(w) for w in ("ileus", "ileum", "mass", "mast", "case", "cast", "sinus", "sine")}
    assert len(keys) == 8


# Words made of the letters and endings the folding rules read ("aasise" once folded twice to two keys).
_FOLDABLE = st.lists(st.sampled_from(["a", "b", "c", "e", "h", "i", "l", "s", "u", "x", "y", "es", "is", "ies", "ices",
                                      "sis", "ae", "che", "ise", "use", "ex", "does", "this"]), min_size=1, max_size=6)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_FOLDABLE.map("".join),
                 st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzéß")), min_size=1, max_size=12)))
def test_a_key_is_its_own_key(word: str) -> None:
    # lookup() folds the keys it is given again: a second fold must change nothing
    assert fold_plural(fold_plural(word)) == fold_plural(word)


def test_a_key_is_its_own_key_where_one_folding_step_was_not() -> None:
    # "aasise" → "aasis" (the -ise rule), whose "-sis" a second step reads: the key is where the steps stop
    assert fold_plural("aasise") == fold_plural("aasis") == fold_plural(fold_plural("aasise")) == "aase"


@pytest.mark.parametrize("word", [
    "does", "was", "has", "its", "this", "gas", "status", "diabetes", "pancreas", "herpes",
    "always", "perhaps", "whereas", "towards", "yours", "themselves", "ascites", "caries", "feces", "species"])
def test_real_words_ending_like_a_plural_are_their_own_key(word: str) -> None:
    assert fold_plural(word) == word
    assert term_keys(word.upper()) == [word]


def test_every_english_function_word_is_its_own_key() -> None:
    from spacy.lang.en.stop_words import STOP_WORDS

    words = {w for w in STOP_WORDS if w.isalpha()}
    assert len(words) > 300 and {w for w in words if fold_plural(w) != w} == set()
    # which they were not by the suffix rules alone ("does" → "doe" matched a term): the exception is needed
    assert {w for w in words if len(w) > 3 and w.endswith("s") and w[-2] not in "sui"} >= {"does", "always", "yours"}


def test_a_function_word_does_not_match_a_term_of_its_stem() -> None:
    m = TermMatcher.from_terms([("doe", "Finding"), ("diabete", "Finding")])
    assert m.find(["does"]) == [] and m.find(["diabetes"]) == []


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab CHF(),.-:\n\r1é•")), max_size=60))
def test_any_text_gives_one_str_keyed_dict_per_token(text: str) -> None:
    doc = Document("h", text)
    sentences = [split(text, "h", section="s")]
    res = FeatureResources(
        TermMatcher.from_terms([("ab", "T1"), ("chf", "T2")]), {"ab": "2:1"}, {"CHF": ["congestive heart failure"]}
    )
    [feats] = document_features(doc, sentences, res, FeatureConfig())
    assert len(feats) == len(sentences[0].tokens)
    for f in feats:
        assert f["bias"] == 1.0
        assert all(isinstance(k, str) and isinstance(v, (str, float)) for k, v in f.items())


def test_caseless_capitals_drops_case_features_only_in_sentences_in_capitals():
    from share_ner.document import Document
    from share_ner.features import FeatureConfig
    from share_ner.text import split_sentences

    on = FeatureConfig(caseless_capitals=True)
    caps = split_sentences(Document("d", "LEFT ATRIUM IS ENLARGED 2X."))[0]
    lower = split_sentences(Document("d", "left atrium is enlarged 2x."))[0]
    f_caps, f_lower = sentence_features(caps, config=on), sentence_features(lower, config=on)
    atrium = f_caps[1]
    assert "w" not in atrium and "is_upper" not in atrium
    assert atrium["lw"] == "atrium" and atrium["shape"] == f_lower[1]["shape"] == "xxxx"
    assert f_caps[4]["shape"] == "dx" and f_caps[4]["has_digit"] == 1.0
    assert atrium == {k: v for k, v in f_lower[1].items() if k != "w"}  # as if written in lower case
    mixed = split_sentences(Document("d", "LEFT ATRIUM is enlarged."))[0]
    assert sentence_features(mixed, config=on) == sentence_features(mixed, config=FeatureConfig())
    assert "w" in sentence_features(caps, config=FeatureConfig())[1]


WORDS = ["heart", "Heart", "failure", "failures", "congestive", "Crohn", "'s", "Crohn's", "disease", "(", ",", "-",
         "pain", "type", "2", "diabetes", "mellitus", "ΟΔΟΣ", "Σ'", "a b", "[**Name 1**]", "_", ""]


def _flat_find(matcher: TermMatcher, words: list[str]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Longest matches by walking the flattened word keys, checking every key position (the plain reading)."""
    keys = [(i, j, k) for i, w in enumerate(words) for j, k in enumerate(term_keys(w))]
    out, k = [], 0
    while k < len(keys):
        best = None
        if keys[k][1] == 0:
            for m in range(k + 1, len(keys) + 1):
                ends_token = m == len(keys) or keys[m][1] == 0
                if ends_token and matcher.lookup(" ".join(kk for _, _, kk in keys[k:m])):
                    best = m
        if best is None:
            k += 1
        else:
            out.append((keys[k][0], keys[best - 1][0] + 1, matcher.lookup(" ".join(kk for _, _, kk in keys[k:best]))))
            k = best
    return out


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(WORDS), max_size=12))
def test_term_matcher_walks_agree_with_the_joined_text(words: list[str]) -> None:
    matcher = TermMatcher.from_terms([("heart failure", "a"), ("congestive heart failure", "b"), ("Crohn's disease", "a"),
                                      ("pain", "c"), ("diabetes mellitus, type 2", "a"), ("heart", "d"), ("οδος", "e")])
    # lookup_keys of the words' keys is lookup of the words joined by spaces
    assert matcher.lookup_keys([tuple(term_keys(w)) for w in words]) == matcher.lookup(" ".join(words))
    # find's token walk gives the longest matches the flattened keys give
    assert [(m.start, m.end, m.semtypes) for m in matcher.find(words)] == _flat_find(matcher, words)
