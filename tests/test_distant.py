"""Distant supervision: lexicon labels, confident relabelling, and the one-line errors of train --distant."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import ShareNerError
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry
from share_ner.training.distant import DistantConfig, cui_matcher, lexicon_labels, relabel

ENTRIES = [
    LexiconEntry("C0008031", "Chest pain", "HPO"),
    LexiconEntry("C0013404", "Dyspnea", "HPO"),
    LexiconEntry("C0000001", "Tic", "HPO"),
]


@pytest.fixture
def lexicon() -> Lexicon:
    return Lexicon.from_entries(ENTRIES, "fixture")


def test_lexicon_labels_are_longest_matches_with_cuis(lexicon: Lexicon) -> None:
    doc = Document("n", "Chest pains and dyspnea. No tic.")
    labels = lexicon_labels({"n": doc}, cui_matcher(lexicon))["n"]
    assert [(m.text(doc.text), m.cui) for m in labels] == [("Chest pains", "C0008031"), ("dyspnea", "C0013404")]
    short = lexicon_labels({"n": doc}, cui_matcher(lexicon), min_chars=3)["n"]
    assert ("tic", "C0000001") in [(m.text(doc.text), m.cui) for m in short]


def test_no_label_for_a_word_folded_onto_a_short_form() -> None:
    lexicon = Lexicon.from_entries([LexiconEntry("C0013404", "DOE"), LexiconEntry("C0020538", "Hypertension")],
                                   "fixture")
    doc = Document("n", "PMH: hypertension, DOE. She does smoke.")
    found = lexicon_labels({"n": doc}, cui_matcher(lexicon), min_chars=3, acronym_keys=frozenset({"doe"}))["n"]
    # "does" folds onto DOE's key but is the verb
    assert [m.text(doc.text) for m in found] == ["hypertension", "DOE"]


def test_relabel_keeps_confident_mentions_and_the_lexicon_labels_they_do_not_overlap() -> None:
    lex = [Mention("n", ((0, 5),), "C1"), Mention("n", ((10, 15),), "C2")]
    confident = [Mention("n", ((0, 9),)), Mention("n", ((20, 25),))]
    merged = relabel(lex, confident, lambda m: "C9" if m.spans == ((20, 25),) else CUI_LESS)
    assert [(m.spans, m.cui) for m in merged] == [(((0, 9),), CUI_LESS), (((10, 15),), "C2"), (((20, 25),), "C9")]


def test_config_rejects_unknown_keys_and_bad_values() -> None:
    with pytest.raises(ShareNerError):
        DistantConfig.from_dict({"round": 1})
    with pytest.raises(ShareNerError):
        DistantConfig(min_confidence=1.5)
    assert DistantConfig.from_dict({"rounds": 2}).rounds == 2


@pytest.mark.parametrize("content, words", [(None, "no .txt notes"), ("The weather is fine.", "matches nothing")])
def test_cli_empty_dir_or_no_match_is_one_line_exit_2(tmp_path: Path, capsys, content, words) -> None:
    from share_ner.cli import main

    notes = tmp_path / "notes"
    notes.mkdir()
    if content:
        (notes / "a.txt").write_text(content, encoding="utf-8")
    lex = tmp_path / "lex.tsv"
    from share_ner.lexicons.lexicon import write_lexicon

    write_lexicon(lex, ENTRIES)
    assert main(["train", "--distant", str(notes), "--lexicon", str(lex), "--model", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and str(notes) in err[0]


def test_cli_distant_config_sets_the_distant_settings(tmp_path: Path, capsys, monkeypatch) -> None:
    import share_ner.training.distant as distant
    from share_ner.cli import main
    from share_ner.lexicons.lexicon import write_lexicon

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.txt").write_text("Chest pain since Monday.\n", encoding="utf-8")
    lex = tmp_path / "lex.tsv"
    write_lexicon(lex, ENTRIES)
    used: list[DistantConfig] = []

    def fake_train(*args, config, **kwargs):  # the settings train_distant gets, without training
        used.append(config)
        raise ShareNerError("stop here")

    monkeypatch.setattr(distant, "train_distant", fake_train)
    settings = tmp_path / "distant.json"
    settings.write_text('{"min_confidence": 0.8, "icd_names": false, "rounds": 2}', encoding="utf-8")
    base = ["train", "--distant", str(notes), "--lexicon", str(lex), "--model", str(tmp_path / "m")]
    assert main([*base, "--distant-config", str(settings)]) == 2
    assert main([*base, "--distant-config", str(settings), "--self-train-rounds", "0"]) == 2
    assert main(base) == 2
    assert [(c.min_confidence, c.icd_names, c.rounds) for c in used] == [(0.8, False, 2), (0.8, False, 0),
                                                                          (0.9, True, 1)]
    capsys.readouterr()
    for text, words in (('{"min_confidence": 0.8,\n "icd_name": false}', "unknown distant setting(s) 'icd_name'"),
                        ('{"rounds": 1,\n "icd_names" 1}', ":2: not valid JSON"), ('{"min_confidence": 2}', "must be in [0, 1]")):
        settings.write_text(text, encoding="utf-8")
        assert main([*base, "--distant-config", str(settings)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(settings) in err[0] and words in err[0], err


def test_distant_training_learns_from_lexicon_labels(tmp_path: Path, lexicon: Lexicon) -> None:
    from share_ner.pipeline import Pipeline
    from share_ner.training.distant import train_distant

    notes = {f"n{i}": Document(f"n{i}", f"Patient reports chest pain and dyspnea since day {i}.\nVitals stable.\n")
             for i in range(8)}
    from share_ner.tagging.config import TaggerConfig
    from share_ner.training.distant import confident_mentions

    messages: list[str] = []
    model = train_distant(notes, lexicon, tmp_path / "model", TaggerConfig(algorithm="lbfgs"),
                          config=DistantConfig(rounds=1, min_confidence=0.5), progress=messages.append)
    doc = Document("t", "She reports dyspnea today.")
    pipeline = Pipeline.load(model)
    assert [m.text(doc.text) for m in pipeline.tag(doc)] == ["dyspnea"]
    kept, ranges = confident_mentions(pipeline, doc, 0.5)
    assert [m.text(doc.text) for m in kept] == ["dyspnea"] and ranges == [(0, len(doc.text))]
    assert confident_mentions(pipeline, doc, 1.0)[0] == []
    assert any("16 confident mentions" in m for m in messages)  # chest pain and dyspnea in each of 8 notes


def test_labels_take_in_body_sites_and_disorder_adjectives_but_not_severity() -> None:
    lex = Lexicon.from_entries([LexiconEntry("C0041582", "Ulcer", "HPO"),
                                LexiconEntry("C0018799", "Heart disease", "HPO")], "fixture")
    doc = Document("n", "Severe gastric ulcer and chronic ischemic heart disease. Skin ulcer.")
    matcher = cui_matcher(lex)
    plain = [m.text(doc.text) for m in lexicon_labels({"n": doc}, matcher)["n"]]
    assert plain == ["ulcer", "heart disease", "ulcer"]
    joined = [m.text(doc.text) for m in lexicon_labels({"n": doc}, matcher, modifiers=True)["n"]]
    # "gastric" (an adjective) and "Skin" (a body site) join; "Severe" and "chronic" (severity, course) do not
    assert joined == ["gastric ulcer", "ischemic heart disease", "Skin ulcer"]


def test_coordinated_modifiers_share_the_head_of_a_match() -> None:
    lex = Lexicon.from_entries([LexiconEntry("C0085605", "Hepatic failure", "HPO"),
                                LexiconEntry("C0008031", "Chest pain", "HPO")], "fixture")
    doc = Document("n", "Renal or hepatic failure. Fever or chest pain. Mild or hepatic failure.")
    matcher = cui_matcher(lex)

    def labels(**options):
        return [(tuple(doc.text[s:e] for s, e in m.spans), m.cui)
                for m in lexicon_labels({"n": doc}, matcher, modifiers=True, **options)["n"]]

    assert labels() == [(("hepatic failure",), "C0085605"), (("chest pain",), "C0008031"),
                        (("hepatic failure",), "C0085605")]
    # "Renal" (a body site) shares "failure"; "Fever" (no modifier) and "Mild" (severity) share nothing
    assert labels(coordinations=True) == [(("hepatic failure",), "C0085605"), (("Renal", "failure"), "CUI-less"),
                                          (("chest pain",), "C0008031"), (("hepatic failure",), "C0085605")]


def test_labelling_terms_add_the_project_lists(lexicon: Lexicon) -> None:
    from share_ner.training.distant import labelling_terms

    only = labelling_terms(lexicon, DistantConfig(project_lists=False, icd_names=False))
    assert only == [(e.name, e.cui) for e in ENTRIES]
    names = {name for name, _ in labelling_terms(lexicon)}
    assert {"Chest pain", "JVD", "CHF", "lethargic"} <= names


def test_labelling_terms_add_icd10cm_names_the_others_lack(lexicon: Lexicon) -> None:
    from share_ner.training.distant import labelling_matcher, labelling_terms

    without = labelling_terms(lexicon, DistantConfig(icd_names=False))
    terms = labelling_terms(lexicon)
    assert terms[:len(without)] == without
    added = dict(terms[len(without):])
    assert {"mumps", "scabies"} <= set(added) and set(added.values()) == {CUI_LESS}
    assert not {name.lower() for name in added} & {name.lower() for name, _ in without}
    doc = Document("n", "Seen for mumps and chest pain.")
    found = lexicon_labels({"n": doc}, labelling_matcher(lexicon))["n"]
    assert [(m.text(doc.text), m.cui) for m in found] == [("mumps", CUI_LESS), ("chest pain", "C0008031")]
    plain = labelling_matcher(lexicon, DistantConfig(icd_names=False))
    assert [m.text(doc.text) for m in lexicon_labels({"n": doc}, plain)["n"]] == ["chest pain"]


def test_hpo_labelling_terms_are_phenotypic_abnormalities_only() -> None:
    from share_ner.lexicons import hpo_lexicon
    from share_ner.training.distant import labelling_terms

    hpo = hpo_lexicon(all_branches=True)
    everything = {e.name for e in hpo.entries}
    assert {"Mild", "Autosomal dominant inheritance"} <= everything  # clinical modifier, mode of inheritance
    names = {name for name, _ in labelling_terms(hpo, DistantConfig(project_lists=False))}
    assert "Seizure" in names and "Mild" not in names and "Autosomal dominant inheritance" not in names


def test_the_model_lexicon_adds_the_project_list_names_with_a_cui(lexicon: Lexicon) -> None:
    from share_ner.training.distant import model_lexicon

    assert model_lexicon(lexicon, DistantConfig(lists_in_lexicon=False)) is lexicon
    combined = model_lexicon(lexicon)
    names = {e.name: e.cui for e in combined.entries}
    assert names["Chest pain"] == "C0008031" and names["CHF"] == "C0018802"  # terms.tsv: CHF with its CUI
    assert all(e.cui != CUI_LESS for e in combined.entries)
    assert combined.name != lexicon.name  # saved with the model as a copy, not reloaded as the bare lexicon


def test_term_features_match_the_label_names_and_the_normalizer_keeps_the_cuis(tmp_path: Path) -> None:
    from share_ner.pipeline import Pipeline
    from share_ner.tagging.config import TaggerConfig
    from share_ner.training.distant import label_lexicon, model_lexicon, train_distant

    lex = Lexicon.from_entries(ENTRIES, "fixture")
    # the fixture lexicon is not HPO, so every name labels; the project's CUI-less list names join (JVD)
    labels = {e.name: e.cui for e in label_lexicon(lex).entries}
    assert labels["Dyspnea"] == "C0013404" and labels["JVD"] == CUI_LESS
    assert "JVD" not in {e.name for e in model_lexicon(lex).entries}
    notes = {f"n{i}": Document(f"n{i}", f"Dyspnea and JVD on day {i}.\n") for i in range(6)}
    model = train_distant(notes, lex, tmp_path / "model", TaggerConfig(), config=DistantConfig(rounds=0))
    terms = (model / "terms.tsv").read_text(encoding="utf-8")
    # a term feature for a CUI-less label name the notes never hold: from the label names, not the mentions
    assert "\nobtunded\t" in terms and "obtunded" not in {e.name for e in model_lexicon(lex).entries}
    normalizer = Pipeline.load(model).normalizer
    assert normalizer is not None and all(e.cui != CUI_LESS for e in normalizer.lexicon.entries)
    assert {"Dyspnea", "CHF"} <= {e.name for e in normalizer.lexicon.entries}
