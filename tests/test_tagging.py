"""Tagger settings, model-directory checks and training-set checks (no CRF training here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from share_ner.document import Document, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.features import FeatureConfig
from share_ner.model import (
    FILES,
    MODEL_FORMAT_VERSION,
    ModelError,
    read_model_info,
    read_terms,
    write_config,
    write_terms,
)
from share_ner.tagging.config import TaggerConfig, load_config
from share_ner.tagging.training import check_gold, folds_of, mention_terms


def test_config_round_trips_through_dict() -> None:
    config = TaggerConfig(scheme="bio", c1=0.2, c2=0.0, max_iterations=7,
                          features=FeatureConfig(clusters=False, window_size=1))
    again = TaggerConfig.from_dict(json.loads(json.dumps(config.to_dict())))
    assert again == config
    assert again.features.clusters is False and again.features.window_size == 1


def test_config_rejects_unknown_keys_with_allowed_list() -> None:
    with pytest.raises(ShareNerError) as err:
        TaggerConfig.from_dict({"c1": 0.1, "max_iter": 10})
    msg = str(err.value)
    assert "'max_iter'" in msg
    assert "allowed:" in msg and "max_iterations" in msg and "scheme" in msg


def test_config_rejects_unknown_feature_group() -> None:
    with pytest.raises(ShareNerError, match="features:.*'wordz'"):
        TaggerConfig.from_dict({"features": {"wordz": False}})


@pytest.mark.parametrize("data, bad", [
    ({"scheme": "bilou"}, "scheme"),
    ({"algorithm": "sgd"}, "algorithm 'sgd' is not one of pa, lbfgs"),
    ({"c1": -1}, "c1"),
    ({"max_iterations": 0}, "max_iterations"),
    ({"gazetteer_folds": 1.5}, "gazetteer_folds"),
    ({"train_gazetteer": "yes"}, "train_gazetteer"),
    ({"oversample_discontiguous": 0}, "oversample_discontiguous must be an integer >= 1"),
])
def test_config_rejects_bad_values(data: dict, bad: str) -> None:
    with pytest.raises(ShareNerError, match=bad):
        TaggerConfig.from_dict(data)


def test_iterations_default_per_algorithm() -> None:
    assert TaggerConfig().algorithm == "pa" and TaggerConfig().iterations == 30
    assert TaggerConfig(algorithm="lbfgs").iterations == 150
    assert TaggerConfig(algorithm="lbfgs", max_iterations=7).iterations == 7
    # A saved config keeps "no cap given" as null, so it reloads to the same defaults.
    assert TaggerConfig.from_dict(TaggerConfig().to_dict()).max_iterations is None


def test_load_config_reports_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('{\n  "c1": 0.1,\n  "c2": \n}\n', encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}:4: not valid JSON")
    path.write_text('{"c3": 1}', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.json: unknown tagger setting\(s\) 'c3'; allowed: "):
        load_config(path)


def test_check_gold_rejects_mention_past_end_of_note() -> None:
    docs = {"n1": Document("n1", "Chest pain.")}
    check_gold(docs, {"n1": [Mention("n1", ((0, 10),))]})
    with pytest.raises(ShareNerError) as err:
        check_gold(docs, {"n1": [Mention("n1", ((0, 5), (6, 40)))]})
    assert str(err.value) == "gold: span 6-40 of note n1 ends past the note's end (11 characters)"
    with pytest.raises(ShareNerError, match="note n2 but no such note"):
        check_gold(docs, {"n2": [Mention("n2", ((0, 1),))]})


def test_mention_terms_joins_fragments_and_skips_non_words() -> None:
    docs = {"a": Document("a", "Left  atrium is dilated. COPD. x")}
    gold = {"a": [Mention("a", ((0, 12),)), Mention("a", ((0, 4), (16, 23))), Mention("a", ((25, 29),)),
                  Mention("a", ((31, 32),))]}
    assert mention_terms(docs, gold) == {"Left atrium", "Left dilated", "COPD"}


def test_folds_are_deterministic_round_robin() -> None:
    assert folds_of(["c", "a", "b", "d"], 3) == {"a": 0, "b": 1, "c": 2, "d": 0}


def _model_dir(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    d.mkdir()
    (d / FILES.crf).write_bytes(b"")
    write_config(d, {"tagger": {}, "terms": None, "clusters": None, "normalizer": None})
    return d


def test_model_info_requires_the_crf_file(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    assert read_model_info(d).data["format_version"] == MODEL_FORMAT_VERSION
    (d / FILES.crf).unlink()
    with pytest.raises(ModelError) as err:
        read_model_info(d)
    assert str(err.value) == f"{d}: incomplete model directory: missing model.crfsuite"


def test_model_info_requires_listed_parts(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    write_config(d, {"tagger": {}, "terms": {"file": FILES.terms}, "clusters": None, "normalizer": None})
    with pytest.raises(ModelError, match="missing terms.tsv$"):
        read_model_info(d)
    write_config(d, {"tagger": {}, "terms": None, "clusters": None, "normalizer": {"directory": "normalizer"}})
    with pytest.raises(ModelError, match="missing normalizer/$"):
        read_model_info(d)


def test_model_info_missing_directory_and_config(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="model directory does not exist"):
        read_model_info(tmp_path / "nope")
    with pytest.raises(ModelError, match="missing config.json"):
        read_model_info(tmp_path)


def test_model_info_names_both_format_versions(tmp_path: Path) -> None:
    d = _model_dir(tmp_path)
    data = json.loads((d / FILES.config).read_text())
    data.update(format_version=MODEL_FORMAT_VERSION + 1, share_ner_version="9.9.9")
    (d / FILES.config).write_text(json.dumps(data))
    with pytest.raises(ModelError) as err:
        read_model_info(d)
    msg = str(err.value)
    assert "\n" not in msg
    assert f"model format version {MODEL_FORMAT_VERSION + 1} (written by share-ner 9.9.9)" in msg
    assert f"reads model format version {MODEL_FORMAT_VERSION}" in msg


def test_terms_file_round_trip(tmp_path: Path) -> None:
    terms = [("chest pain", "T184"), ("Crohn's\tdisease", "train"), ("a \\ b", "lexicon")]
    path = tmp_path / "terms.tsv"
    assert write_terms(path, terms) == 3
    assert list(read_terms(path)) == [("chest pain", "T184"), ("Crohn's disease", "train"), ("a \\ b", "lexicon")]


def _coordination(sentence: str, terms: list[str], heads: frozenset[str] = frozenset()) -> list[tuple[str, dict]]:
    from share_ner.features import TermMatcher
    from share_ner.features.coordination import coordination_features

    words = sentence.split()
    feats: list[dict] = [{} for _ in words]
    coordination_features(words, feats, TermMatcher.from_terms((t, "train") for t in terms), heads)
    return [(w, f) for w, f in zip(words, feats) if f]


def test_coordination_marks_shared_right_head() -> None:
    marked = _coordination("history of renal , cardiac or liver impairment .", ["renal impairment"])
    assert marked == [("renal", {"co.mod": "B"}), ("impairment", {"co.head": "B"})]


def test_coordination_marks_shared_left_head() -> None:
    marked = _coordination("chronic hepatitis B or C", ["chronic hepatitis C"])
    assert marked == [("chronic", {"co.lhead": "B"}), ("hepatitis", {"co.lhead": "I"}), ("C", {"co.rmod": "B"})]


def test_coordination_stops_at_phrase_breaks_and_needs_a_term() -> None:
    assert _coordination("renal ; or liver impairment", ["renal impairment"]) == []
    assert _coordination("renal or liver impairment", ["kidney impairment"]) == []


def test_coordination_head_words_without_a_term() -> None:
    marked = _coordination("psychiatric or emotional problems", [], frozenset({"problems"}))
    assert marked == [("psychiatric", {"co.hw_mod": 1.0}), ("problems", {"co.hw_head": 1.0})]


def test_a_notes_coordinations_and_lexicon_matches_are_those_of_its_sentences_one_by_one() -> None:
    from collections import defaultdict

    from share_ner.features import TermMatcher
    from share_ner.features.coordination import coordination_features, note_coordination

    terms = ["renal impairment", "chronic hepatitis C", "liver", "impairment of liver", "hepatitis B", "c"]
    matcher = TermMatcher.from_terms((t, "train") for t in terms)
    sentences = ["history of renal , cardiac or liver impairment .".split(),
                 "chronic hepatitis B or C".split(), ["or"], "liver ,".split(),  # coordinators at the edges
                 "impairment of".split(), "liver or renal problems".split(), "no coordination here".split()]
    words = [w for s in sentences for w in s]
    lengths = [len(s) for s in sentences]
    heads = frozenset({"problems"})
    by_note = note_coordination(words, lengths, matcher, heads)
    expected = []
    for s in sentences:
        feats: defaultdict[int, dict] = defaultdict(dict)
        coordination_features(s, feats, matcher, heads)
        expected.append(feats)
    assert by_note == expected and sum(map(bool, expected)) == 3
    # no match crosses a sentence's end ("impairment of" + "liver" would be a term)
    found = dict(matcher.find_sentences(words, lengths))
    assert found == {k: matcher.find(s) for k, s in enumerate(sentences) if matcher.find(s)}
    assert len(found) >= 4


def test_head_words_need_three_multiword_training_terms() -> None:
    from share_ner.tagging.resources import head_words

    terms = [("renal disease", "train"), ("heart disease", "train"), ("lung disease", "train"),
             ("disease", "train"), ("bone pain", "train"), ("liver disease", "T047")]
    assert head_words(terms) == frozenset({"disease"})


def _expand(text: str, spans: list[tuple[int, int]], terms: list[str]) -> list[tuple[str, ...]]:
    from share_ner.document import Sentence, Token
    from share_ner.tagging.repair import expand_coordinations
    from share_ner.tagging.resources import make_resources

    tokens, pos = [], 0
    for word in text.split(" "):
        tokens.append(Token(word, pos, pos + len(word)))
        pos += len(word) + 1
    sentence = Sentence("d", tuple(tokens))
    found = [Mention("d", (span,)) for span in spans]
    resources = make_resources([(t, "train") for t in terms], None)
    out = expand_coordinations(sentence, found, resources)
    return [tuple(text[s:e] for s, e in m.spans) for m in out]


def test_expand_coordination_borrows_right_head() -> None:
    text = "renal or liver impairment"
    # The CRF found only "liver impairment" (9-25); "renal impairment" is a known term.
    assert _expand(text, [(9, 25)], ["renal impairment"]) == [("renal", "impairment"), ("liver impairment",)]
    # Not a known term: nothing added.
    assert _expand(text, [(9, 25)], ["kidney impairment"]) == [("liver impairment",)]


def test_expand_coordination_borrows_left_head_and_replaces_bare_conjunct() -> None:
    text = "hepatitis B or C"
    # The CRF found "hepatitis B" and a bare "C"; "C" alone is no term, so it is replaced.
    got = _expand(text, [(0, 11), (15, 16)], ["hepatitis C"])
    assert got == [("hepatitis", "C"), ("hepatitis B",)]  # sorted by spans


def test_expand_coordination_keeps_a_conjunct_that_is_a_term() -> None:
    text = "asthma or heart failure"
    got = _expand(text, [(0, 6), (10, 23)], ["asthma failure", "asthma"])
    assert got == [("asthma",), ("asthma", "failure"), ("heart failure",)]


def _balance(text: str, spans: list[list[tuple[int, int]]]) -> list[tuple[str, ...]]:
    from share_ner.document import Sentence, Token
    from share_ner.tagging.repair import balance_brackets

    tokens, pos = [], 0
    for word in text.split(" "):
        tokens.append(Token(word, pos, pos + len(word)))
        pos += len(word) + 1
    found = [Mention("d", tuple(s)) for s in spans]
    return [tuple(text[s:e] for s, e in m.spans) for m in balance_brackets(Sentence("d", tuple(tokens)), found)]


def test_balance_brackets_closes_with_the_next_token_or_cuts() -> None:
    text = "polycystic ovary syndrome ( PCOS ) or tricuspid regurgitation ( TR ) here"
    # "polycystic ovary syndrome ( PCOS" -> closed by the next ")".
    assert _balance(text, [[(0, 32)]]) == [("polycystic ovary syndrome ( PCOS )",)]
    start = text.index("tricuspid")
    assert _balance(text, [[(start, text.index("TR") + 2)]]) == [("tricuspid regurgitation ( TR )",)]
    # No ")" follows: the mention is cut before the "(".
    assert _balance("a ( b c", [[(0, 7)]]) == [("a",)]
    assert _balance("heart failure ( NYHA III", [[(0, 24)]]) == [("heart failure",)]
    # A mention that is only the open bracket and what follows disappears.
    assert _balance("( b c", [[(0, 5)]]) == []


def test_balance_brackets_opens_with_the_token_before_or_cuts() -> None:
    assert _balance("metastatic ) malignant melanoma", [[(0, 31)]]) == [("malignant melanoma",)]
    assert _balance("x ( PCOS )", [[(4, 10)]]) == [("( PCOS )",)]
    # Two mentions, each with an unpaired bracket, are each cut.
    assert _balance("a ( b c ) d", [[(0, 5)], [(8, 11)]]) == [("a",), ("d",)]
    # Balanced mentions (also across fragments) are left alone, and so is one whose
    # unpaired bracket is not in the fragment at the end it is checked from.
    assert _balance("a ( b ) c", [[(0, 9)]]) == [("a ( b ) c",)]
    assert _balance("a ( b c ) d", [[(0, 5), (8, 11)]]) == [("a ( b", ") d")]
    assert _balance("( b c d", [[(0, 3), (6, 7)]]) == [("( b", "d")]


def test_lone_fragment_is_dropped_unless_a_known_term() -> None:
    from share_ner.document import Sentence, Token
    from share_ner.tagging.repair import drop_lone_fragments
    from share_ner.tagging.resources import make_resources

    words = ["chronic", "active", "hepatitis", "and", "asthma"]
    tokens, pos = [], 0
    for w in words:
        tokens.append(Token(w, pos, pos + len(w)))
        pos += len(w) + 1
    sentence = Sentence("d", tuple(tokens))
    tags = ["DB", "DI", "O", "O", "DB"]
    found = [Mention("d", ((0, 14),)), Mention("d", ((37, 43),))]  # "chronic active", "asthma": lone D groups
    kept = drop_lone_fragments(sentence, tags, found, make_resources([("asthma", "train")], None))
    assert kept == [Mention("d", ((37, 43),))]


def test_gazetteer_reliability_labels_terms_seen_mostly_unannotated() -> None:
    from share_ner.tagging.training import gazetteer_hits, label_reliability

    docs = {"a": Document("a", "Pregnant women with asthma.\nNot pregnant.\n"),
            "b": Document("b", "Asthma. Pregnant or lactating.\n")}
    gold = {"a": [Mention("a", ((20, 26),)), Mention("a", ((0, 8),))],   # asthma, Pregnant
            "b": [Mention("b", ((0, 6),))]}                               # Asthma
    hits = gazetteer_hits(docs, gold, {"asthma", "pregnant"})
    # "pregnant": 3 occurrences, 1 annotated -> weak; "asthma": 2 of 2 annotated.
    assert label_reliability({"asthma", "pregnant"}, hits, ["a", "b"]) == [("asthma", "train"),
                                                                          ("pregnant", "train-weak")]
    # Counted over note a alone: "pregnant" 1 of 2 annotated -> not weak.
    assert label_reliability({"pregnant"}, hits, ["a"]) == [("pregnant", "train")]


def test_weighted_copies_share_their_notes_fold():
    folds = folds_of(["b", "a", "a~1", "a~2", "c", "b~1"], 2)
    assert folds == {"a": 0, "a~1": 0, "a~2": 0, "b": 1, "b~1": 1, "c": 0}
