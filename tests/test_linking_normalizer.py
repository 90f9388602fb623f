from __future__ import annotations

import json
from pathlib import Path

import pytest

import share_ner.linking.candidates as candidates_mod
import share_ner.linking.normalizer as normalizer_mod
from share_ner.cli import main
from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import ShareNerError
from share_ner.lexicons import Lexicon, LexiconEntry, load_lexicon, write_lexicon
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.fitting import fit_threshold
from share_ner.linking.normalizer import Normalizer

ENTRIES = [
    LexiconEntry("C0020538", "Hypertensive disorder", "SNOMEDCT_US", ("T047",), True),
    LexiconEntry("C0020538", "Hypertension", "SNOMEDCT_US", ("T047",), False),
    LexiconEntry("C0027051", "Myocardial infarction", "SNOMEDCT_US", ("T047",), True),
    LexiconEntry("C0018681", "Headache", "SNOMEDCT_US", ("T184",), True),
    LexiconEntry("C0011849", "Diabetes mellitus", "SNOMEDCT_US", ("T047",), True),
    LexiconEntry("C0006826", "Malignant neoplastic disease", "SNOMEDCT_US", ("T191",), True),
]


@pytest.fixture
def lexicon() -> Lexicon:
    return Lexicon.from_entries(ENTRIES, "fixture")


@pytest.fixture(autouse=True)
def no_clinical_list(monkeypatch):
    # Tests do not depend on the shipped clinical abbreviation list.
    monkeypatch.setattr(normalizer_mod, "_clinical_abbreviations", lambda: {"HA": ["headache"]})


def mention_of(doc: Document, phrase: str, nth: int = 0) -> Mention:
    start = -1
    for _ in range(nth + 1):
        start = doc.text.index(phrase, start + 1)
    return Mention(doc.id, ((start, start + len(phrase)),))


def cui_of(norm: Normalizer, doc: Document, phrase: str, nth: int = 0) -> str:
    return norm.normalize(doc, [mention_of(doc, phrase, nth)])[0].cui


def test_exact_inflected_reordered_misspelled_and_unknown(lexicon):
    norm = Normalizer(lexicon)
    doc = Document("d", "HYPERTENSION. Myocardial infarctions. infarction, myocardial. hypertenson. broken zebra.")
    assert cui_of(norm, doc, "HYPERTENSION") == "C0020538"
    assert cui_of(norm, doc, "Myocardial infarctions") == "C0027051"
    assert cui_of(norm, doc, "infarction, myocardial") == "C0027051"
    assert cui_of(norm, doc, "hypertenson") == "C0020538"
    assert cui_of(norm, doc, "broken zebra") == CUI_LESS


def test_abbreviations_defined_in_note_and_clinical_list(lexicon):
    norm = Normalizer(lexicon)
    doc = Document("d", "History of myocardial infarction (MI). Second MI in 2010. Severe HA today.")
    decisions = norm.decide(doc, [mention_of(doc, "MI", 1), mention_of(doc, "HA")])
    assert [(d.cui, d.method) for d in decisions] == [("C0027051", "abbreviation"), ("C0018681", "abbreviation")]
    off = Normalizer(lexicon, config=NormalizerConfig(use_abbreviations=False, use_tfidf=False))
    assert cui_of(off, doc, "MI", 1) == CUI_LESS


def test_empty_and_whitespace_mentions_are_cuiless(lexicon):
    norm = Normalizer(lexicon)
    doc = Document("d", "a   b")
    out = norm.normalize(doc, [Mention("d", ((1, 4),)), Mention("d", ((10, 12),), "C1")])
    assert [m.cui for m in out] == [CUI_LESS, CUI_LESS]


def test_gazetteer_wins_and_keeps_cuiless_labels(lexicon):
    train = Document("t", "Pt has HTN. Denies pain. Denies pain. HTN.")
    gold = {"t": [mention_of(train, "HTN").with_cui("C0020538"), mention_of(train, "pain").with_cui(CUI_LESS),
                  mention_of(train, "pain", 1).with_cui(CUI_LESS), mention_of(train, "HTN", 1).with_cui("C0020538")]}
    norm = Normalizer.fit(lexicon, {"t": train}, gold)
    doc = Document("d", "htn and pain")
    decisions = norm.decide(doc, [mention_of(doc, "htn"), mention_of(doc, "pain")])
    assert [(d.cui, d.method) for d in decisions] == [("C0020538", "gazetteer"), (CUI_LESS, "gazetteer")]


def test_one_cuiless_training_label_does_not_silence_an_exact_lexicon_name(lexicon):
    once = Document("t", "Pt has headache.")
    twice = Document("u", "Headache. Headache again.")
    doc = Document("d", "headache")
    one = Normalizer.fit(lexicon, {"t": once}, {"t": [mention_of(once, "headache").with_cui(CUI_LESS)]})
    assert [(d.cui, d.method) for d in one.decide(doc, [mention_of(doc, "headache")])] == [("C0018681", "normalized")]
    gold = {"u": [mention_of(twice, "Headache").with_cui(CUI_LESS), mention_of(twice, "Headache", 1).with_cui(CUI_LESS)]}
    two = Normalizer.fit(lexicon, {"u": twice}, gold)
    assert [(d.cui, d.method) for d in two.decide(doc, [mention_of(doc, "headache")])] == [(CUI_LESS, "gazetteer")]
    strict = Normalizer.fit(lexicon, {"t": once}, {"t": [mention_of(once, "headache").with_cui(CUI_LESS)]},
                            NormalizerConfig(cuiless_min_count=1))
    assert strict.decide(doc, [mention_of(doc, "headache")])[0].cui == CUI_LESS


def test_fit_threshold_hand_computed():
    # (score, keeping is right, rejecting is right); thresholds tried 0.1 0.2 0.4 0.6 0.8 0.9+:
    # accuracy 3 2 3 4 3 2 -> 0.6, the midpoint between 0.5 and 0.7.
    scores = [0.9, 0.7, 0.5, 0.3, 0.1]
    keep_ok = [True, True, False, False, True]
    reject_ok = [False, False, True, True, False]
    assert fit_threshold(scores, keep_ok, reject_ok) == pytest.approx(0.6)
    assert fit_threshold([], [], [], default=0.42) == 0.42
    # all wrong when kept and right when rejected: reject everything
    assert fit_threshold([0.5, 0.8], [False, False], [True, True]) > 0.8
    # keeping all is best: nothing is rejected, not even a later score below the lowest seen
    assert fit_threshold([0.5, 0.3, 0.8], [True, False, True], [False, False, False]) == 0.0
    assert fit_threshold([0.5, -0.2], [True, True], [False, False]) == -0.2


def test_threshold_turns_weak_tfidf_matches_cuiless(lexicon):
    doc = Document("d", "hypertenson")
    m = mention_of(doc, "hypertenson")
    score = Normalizer(lexicon).explain(doc, m)["score"]
    assert Normalizer(lexicon, threshold=score - 0.01).normalize(doc, [m])[0].cui == "C0020538"
    assert Normalizer(lexicon, threshold=score + 0.01).normalize(doc, [m])[0].cui == CUI_LESS
    no_threshold = NormalizerConfig(use_threshold=False)
    assert Normalizer(lexicon, config=no_threshold, threshold=0.99).normalize(doc, [m])[0].cui == "C0020538"


def test_explain_lists_candidates(lexicon):
    norm = Normalizer(lexicon)
    doc = Document("d", "myocardial infraction")
    info = norm.explain(doc, mention_of(doc, "myocardial infraction"))
    assert info["cui"] == "C0027051" and info["method"] == "tfidf"
    assert info["candidates"][0]["cui"] == "C0027051"
    assert info["candidates"][0]["score"] >= info["candidates"][-1]["score"]
    assert {"cosine", "fuzz", "name", "source"} <= set(info["candidates"][0])


def test_explain_names_the_other_labels_of_the_matched_name():
    # an HPO-style name citing two CUIs: the tie-break keeps the first, and --explain says what it passed over
    lex = Lexicon.from_entries([LexiconEntry("C0018801", "Congestive heart failure", "HPO", (), True),
                                LexiconEntry("C0018802", "Congestive heart failure", "HPO", (), True),
                                LexiconEntry("C0018681", "Headache", "HPO", (), True)], "two")
    train = Document("t", "Pt has CHF. CHF again.")
    gold = {"t": [mention_of(train, "CHF").with_cui("C0018802"), mention_of(train, "CHF", 1).with_cui("C0018801"),
                  ]}
    norm = Normalizer.fit(lex, {"t": train}, gold, NormalizerConfig(note_consistency=False))
    doc = Document("d", "congestive heart failure; congestive heart failre; CHF; headache")
    exact, fuzzy, trained, single = (norm.explain(doc, mention_of(doc, p)) for p in (
        "congestive heart failure", "congestive heart failre", "CHF", "headache"))
    assert (exact["method"], exact["cui"], exact["other_labels"]) == ("normalized", "C0018801", ["C0018802"])
    assert (fuzzy["method"], fuzzy["cui"], fuzzy["other_labels"]) == ("tfidf", "C0018801", ["C0018802"])
    assert trained["method"] == "gazetteer" and {trained["cui"], *trained["other_labels"]} == {"C0018801", "C0018802"}
    assert len(trained["other_labels"]) == 1 and single["other_labels"] == []


def test_composite_ids_are_labels():
    train = Document("t", "breast and ovarian cancer")
    gold = {"t": [Mention("t", ((0, 25),), "D001943+D010051")]}
    norm = Normalizer.fit(None, {"t": train}, gold)
    doc = Document("d", "Breast and ovarian cancers")
    assert cui_of(norm, doc, "Breast and ovarian cancers") == "D001943+D010051"


def test_config_rejects_unknown_keys():
    with pytest.raises(ShareNerError, match="unknown normalizer setting"):
        NormalizerConfig.from_dict({"use_gazeteer": True})
    assert NormalizerConfig().up_to("normalized").use_tfidf is False


def test_up_to_follows_the_run_order_and_with_steps_switches_exactly_those_on():
    from share_ner.linking.config import STEPS

    assert STEPS.index("abbreviation") < STEPS.index("partial") < STEPS.index("rewrite") < STEPS.index("tfidf")
    c = NormalizerConfig().up_to("partial")
    assert (c.use_abbreviations, c.use_partial, c.use_rewrites, c.use_tfidf) == (True, True, False, False)
    c = NormalizerConfig().with_steps(["gazetteer", "rewrite"])
    assert (c.use_gazetteer, c.use_normalized, c.use_rewrites, c.use_threshold) == (True, False, True, False)
    with pytest.raises(ShareNerError, match="unknown normalizer step"):
        NormalizerConfig().with_steps(["gazeteer"])


def test_save_load_round_trip(tmp_path, lexicon):
    lex_path = tmp_path / "lex.tsv"
    write_lexicon(lex_path, ENTRIES)
    lex = load_lexicon(lex_path)
    train = Document("t", "Pt has HTN.")
    norm = Normalizer.fit(lex, {"t": train}, {"t": [mention_of(train, "HTN").with_cui("C0020538")]})
    norm.threshold_ = 0.55
    norm.save(tmp_path / "model")
    loaded = Normalizer.load(tmp_path / "model")
    assert loaded.threshold_ == 0.55 and loaded.config == norm.config
    doc = Document("d", "HTN, hypertenson, broken zebra")
    ms = [mention_of(doc, p) for p in ("HTN", "hypertenson", "broken zebra")]
    assert loaded.normalize(doc, ms) == norm.normalize(doc, ms)
    # the lexicon file changes: the small copy in the model directory is used
    lex_path.write_text("cui\tname\tsource\tsemtypes\tpreferred\nC9\tzebra\tX\t\tY\n", encoding="utf-8")
    assert Normalizer.load(tmp_path / "model").lexicon.content_hash == lex.content_hash
    (tmp_path / "model" / "lexicon.tsv").unlink()
    with pytest.raises(ShareNerError, match="missing or has changed"):
        Normalizer.load(tmp_path / "model")
    with pytest.raises(ShareNerError, match="not a normalizer directory"):
        Normalizer.load(tmp_path)


def test_a_site_abbreviation_list_comes_before_the_packaged_one_and_is_saved(tmp_path, lexicon):
    # the packaged list (replaced by the autouse fixture) says HA is headache; this site says hypertension
    doc = Document("d", "Hx of HA and MI.")
    ha, mi = mention_of(doc, "HA"), mention_of(doc, "MI")
    plain = Normalizer(lexicon)
    assert plain.explain(doc, ha)["cui"] == "C0018681" and plain.explain(doc, mi)["method"] != "abbreviation"
    site = {"HA": ["hypertension"], "MI": ["myocardial infarction"]}
    norm = Normalizer(lexicon, abbreviations=site)
    got = [norm.explain(doc, m) for m in (ha, mi)]
    assert [(e["cui"], e["method"], e["matched"]) for e in got] == [
        ("C0020538", "abbreviation", "hypertension"),
        ("C0027051", "abbreviation", "myocardial infarction")]
    norm.save(tmp_path / "n")
    assert (tmp_path / "n" / "abbreviations.tsv").is_file()
    loaded = Normalizer.load(tmp_path / "n")
    assert loaded.site_abbreviations == site and loaded.normalize(doc, [ha, mi]) == norm.normalize(doc, [ha, mi])
    loaded.use_site_abbreviations({})  # replaced: back to the packaged list, and saved without a list
    assert loaded.normalize(doc, [ha])[0].cui == "C0018681"
    loaded.save(tmp_path / "n")
    assert not (tmp_path / "n" / "abbreviations.tsv").exists() and Normalizer.load(tmp_path / "n").site_abbreviations == {}
    # fitted with a list: kept, and the cross-validation folds that fit the threshold use it too
    train = Document("t", "Pt has HTN. Pt has HA.")
    seen = []
    real = normalizer_mod.fit_cv
    fitted = None
    try:
        normalizer_mod.fit_cv = lambda *a: seen.append(a[-1]) or real(*a)
        fitted = Normalizer.fit(lexicon, {"t": train}, {"t": [mention_of(train, "HTN").with_cui("C0020538"),
                                                                mention_of(train, "HA").with_cui("C0020538")]},
                                abbreviations=site)
    finally:
        normalizer_mod.fit_cv = real
    assert fitted.site_abbreviations == site and seen == [site]
    # the list says what the short form means here, before a lexicon name equal to it; a note's own
    # definition still comes first
    lex = Lexicon.from_entries([*ENTRIES, LexiconEntry("C0027051", "MI"),
                                LexiconEntry("C0026266", "Mitral insufficiency")], "mi")
    doc = Document("d", "Echo: MI, moderate.")
    assert cui_of(Normalizer(lex), doc, "MI") == "C0027051"
    ward = Normalizer(lex, abbreviations={"MI": ["mitral insufficiency"]})
    assert cui_of(ward, doc, "MI") == "C0026266"
    defined = Document("e", "Myocardial infarction (MI) in 2019; MI again.")
    assert cui_of(ward, defined, "MI", 1) == "C0027051"


def test_hpo_reference_is_by_name(tmp_path):
    from share_ner.lexicons import default_lexicon

    Normalizer(default_lexicon()).save(tmp_path)
    meta = json.loads((tmp_path / "normalizer.json").read_text())
    assert meta["lexicon"]["kind"] == "hpo" and not (tmp_path / "lexicon.tsv").exists()
    doc = Document("d", "Recurrent seizures.")
    assert cui_of(Normalizer.load(tmp_path), doc, "seizures") == "C0014544"


def write_corpus(root: Path, notes: dict[str, str], gold: dict[str, list[str]]) -> tuple[Path, Path]:
    text, pipes = root / "text", root / "gold"
    text.mkdir(parents=True)
    pipes.mkdir(parents=True)
    for doc_id, t in notes.items():
        (text / f"{doc_id}.txt").write_text(t, encoding="utf-8")
        (pipes / f"{doc_id}.pipe.txt").write_text("".join(line + "\n" for line in gold.get(doc_id, [])),
                                                  encoding="utf-8")
    return text, pipes


def test_cli_normalize(tmp_path, capsys):
    lex_path = tmp_path / "lex.tsv"
    write_lexicon(lex_path, ENTRIES)
    text, gold = write_corpus(tmp_path / "test", {"n1": "Headache and hypertenson. Zebra."},
                              {"n1": ["n1.txt||Disease_Disorder||CUI-less||0||8",
                                      "n1.txt||Disease_Disorder||C0000001||13||24",
                                      "n1.txt||Disease_Disorder||C0000001||26||31"]})
    out = tmp_path / "out"
    assert main(["normalize", str(text), "--mentions", str(gold), "--out", str(out), "--lexicon", str(lex_path),
                 "--explain"]) == 0
    captured = capsys.readouterr()
    lines = (out / "n1.pipe.txt").read_text(encoding="utf-8").splitlines()
    assert [line.split("||")[2] for line in lines] == ["C0018681", "C0020538", CUI_LESS]
    explained = [json.loads(line) for line in captured.out.splitlines()]
    assert [e["method"] for e in explained] == ["normalized", "tfidf", "none"]
    assert "normalized 3 mentions of 1 notes" in captured.err

    ttext, tgold = write_corpus(tmp_path / "train", {"t1": "zebra"}, {"t1": ["t1.txt||Disease_Disorder||C7||0||5"]})
    assert main(["normalize", str(text), "--mentions", str(gold), "--out", str(out), "--lexicon", str(lex_path),
                 "--train-text", str(ttext), "--train-gold", str(tgold)]) == 0
    assert (out / "n1.pipe.txt").read_text(encoding="utf-8").splitlines()[2].split("||")[2] == "C7"


def test_cli_normalize_training_gazetteer_alone_over_several_splits(tmp_path, capsys):
    # --lexicon none: the CUIs come from the training strings only; a second --train-text/--train-gold pair adds
    # its notes to the first's (as the benchmark fits NCBI disease and BC5CDR on train + dev).
    text, gold = write_corpus(tmp_path / "test", {"n1": "zebra pox. yak fever. headache."},
                              {"n1": ["n1.txt||Disease_Disorder||CUI-less||0||9",
                                      "n1.txt||Disease_Disorder||CUI-less||11||20",
                                      "n1.txt||Disease_Disorder||CUI-less||22||30"]})
    t1, g1 = write_corpus(tmp_path / "train", {"t1": "zebra pox"}, {"t1": ["t1.txt||Disease_Disorder||D1||0||9"]})
    t2, g2 = write_corpus(tmp_path / "dev", {"t2": "yak fever"}, {"t2": ["t2.txt||Disease_Disorder||D2||0||9"]})
    out = tmp_path / "out"
    args = ["normalize", str(text), "--mentions", str(gold), "--out", str(out), "--lexicon", "none"]
    assert main(args + ["--train-text", str(t1), "--train-gold", str(g1),
                        "--train-text", str(t2), "--train-gold", str(g2)]) == 0
    labels = [line.split("||")[2] for line in (out / "n1.pipe.txt").read_text(encoding="utf-8").splitlines()]
    assert labels[:2] == ["D1", "D2"] and labels[2] != "C0018681"  # no HPO: "headache" has no CUI to get
    assert main(args + ["--train-text", str(t1), "--train-gold", str(g1)]) == 0
    labels = [line.split("||")[2] for line in (out / "n1.pipe.txt").read_text(encoding="utf-8").splitlines()]
    assert labels[0] == "D1" and labels[1] != "D2"
    capsys.readouterr()
    assert main(args) == 2
    assert "--lexicon none needs --train-text and --train-gold" in capsys.readouterr().err
    assert main(args + ["--train-text", str(t1), "--train-gold", str(g1), "--train-text", str(t2)]) == 2
    assert "as many of one as of the other" in capsys.readouterr().err
    assert main(args + ["--train-text", str(t1), "--train-gold", str(g1),
                        "--train-text", str(t1), "--train-gold", str(g1)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{t1 / 't1.txt'}: note id 't1' also used by {t1 / 't1.txt'}" in err[0]


def test_cli_normalize_errors(tmp_path, capsys):
    text, gold = write_corpus(tmp_path / "c", {"n1": "x"}, {"n1": ["n2.txt||Disease_Disorder||C1||0||1"]})
    bad_lex = tmp_path / "bad.tsv"
    bad_lex.write_text("cui\tname\tsource\tsemtypes\tpreferred\tweight\n", encoding="utf-8")
    args = ["normalize", str(text), "--mentions", str(gold), "--out", str(tmp_path / "o")]
    assert main(args + ["--lexicon", str(bad_lex)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown lexicon column(s) 'weight'" in err[0] and f"{bad_lex}:1" in err[0]
    assert main(args + ["--model", str(tmp_path)]) == 2
    assert "not a normalizer directory" in capsys.readouterr().err
    assert main(args + ["--lexicon", "hpo", "--train-text", str(text)]) == 2
    assert "go together" in capsys.readouterr().err


def test_cli_normalize_with_a_site_abbreviation_list(tmp_path, capsys):
    lex_path = tmp_path / "lex.tsv"
    write_lexicon(lex_path, ENTRIES)
    text, gold = write_corpus(tmp_path / "test", {"n1": "Hx of MI."}, {"n1": ["n1.txt||Disease_Disorder||C1||6||8"]})
    site = tmp_path / "site.tsv"
    site.write_text("# our ward\nabbreviation\texpansion\nMI\tmyocardial infarction\n", encoding="utf-8")
    args = ["normalize", str(text), "--mentions", str(gold), "--out", str(tmp_path / "o"), "--lexicon", str(lex_path)]
    assert main(args + ["--abbreviations", str(site)]) == 0
    assert (tmp_path / "o" / "n1.pipe.txt").read_text(encoding="utf-8").split("||")[2] == "C0027051"
    capsys.readouterr()
    site.write_text("abbreviation\texpansion\nMI\tmyocardial infarction\nCHF\n", encoding="utf-8")
    assert main(args + ["--abbreviations", str(site)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{site}:3" in err[0] and "expected 2 tab-separated fields" in err[0]


def test_cli_normalize_span_past_the_note_is_one_line_naming_file_and_line(tmp_path, capsys):
    text, gold = write_corpus(tmp_path / "c", {"n1": "fever"}, {"n1": ["n1.txt||Disease_Disorder||C1||0||5",
                                                                     "n1.txt||Disease_Disorder||C1||0||50"]})
    args = ["normalize", str(text), "--out", str(tmp_path / "o"), "--lexicon", "hpo"]
    expected = f"{gold / 'n1.pipe.txt'}:2: span 0-50 of note n1 ends past the note's end (5 characters)"
    assert main(args + ["--mentions", str(gold)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"share-ner: error: {expected}"]
    assert not (tmp_path / "o" / "n1.pipe.txt").exists()
    # the training gold of --train-text/--train-gold is checked the same way
    ok_text, ok_gold = write_corpus(tmp_path / "ok", {"n1": "fever"}, {"n1": ["n1.txt||Disease_Disorder||C1||0||5"]})
    assert main(args + ["--mentions", str(ok_gold), "--train-text", str(text), "--train-gold", str(gold)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"share-ner: error: {expected}"]


def test_coordination_and_suffix_partial_matches():
    train = Document("t", "breast cancer; ovarian cancer; Wilms tumor")
    gold = {"t": [mention_of(train, "breast cancer").with_cui("D001943"),
                  mention_of(train, "ovarian cancer").with_cui("D010051"),
                  mention_of(train, "Wilms tumor").with_cui("D009396")]}
    norm = Normalizer.fit(None, {"t": train}, gold)
    doc = Document("d", "breast and ovarian cancers; sporadic Wilms tumours; breast, ovarian, or skin cancer")
    decisions = norm.decide(doc, [mention_of(doc, "breast and ovarian cancers"),
                                  mention_of(doc, "sporadic Wilms tumours")])
    assert [(d.cui, d.method) for d in decisions] == [("D001943+D010051", "partial"), ("D009396", "partial")]
    # "skin cancer" is unknown, so the coordination is not resolved part by part: tf-idf decides
    assert norm.decide(doc, [mention_of(doc, "breast, ovarian, or skin cancer")])[0].method == "tfidf"


def test_caches_are_prepared_once_for_the_workers(tmp_path, monkeypatch, capfd):
    from share_ner.batch.processes import in_child
    from share_ner.lexicons import index as index_mod
    from share_ner.linking.store import caches_ready, prepare_caches

    write_lexicon(tmp_path / "lex.tsv", ENTRIES)
    train = Document("t", "Pt has HTN.")
    norm = Normalizer.fit(load_lexicon(tmp_path / "lex.tsv"), {"t": train},
                          {"t": [mention_of(train, "HTN").with_cui("C0020538")]})
    norm.save(tmp_path / "model")
    # another machine, or a cleared cache: nothing compiled yet
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(index_mod, "_MEMORY", {})
    assert not caches_ready(tmp_path / "model")
    assert in_child(prepare_caches, tmp_path / "model")  # in another process: this one stays small
    assert caches_ready(tmp_path / "model")
    assert len(list((tmp_path / "empty-cache").glob("index-*"))) == 2  # the lexicon's and the gazetteer's
    # what cannot be read is left to loading, which says what is wrong; a failure in the child prints nothing
    assert caches_ready(tmp_path / "no-model")
    capfd.readouterr()
    assert not in_child(prepare_caches, tmp_path / "no-model")
    assert capfd.readouterr().err == ""


def test_optional_ranker_is_fitted_saved_and_loaded(tmp_path):
    from share_ner.linking.candidates import FEATURES

    names = [("heart attack", "C1"), ("hart attack", "C1"), ("heart atack", "C1"), ("headache", "C2"),
             ("head ache", "C2"), ("hedache", "C2")]
    docs = {f"d{i}": Document(f"d{i}", n) for i, (n, _) in enumerate(names)}
    gold = {f"d{i}": [Mention(f"d{i}", ((0, len(n)),), c)] for i, (n, c) in enumerate(names)}
    norm = Normalizer.fit(None, docs, gold, NormalizerConfig(use_ranker=True, folds=3))
    assert norm.ranker_ is not None and len(norm.ranker_[0]) == len(FEATURES)
    assert norm.fit_report_["decisions"] == 6  # every held-out string is new to the other folds
    norm.save(tmp_path)
    loaded = Normalizer.load(tmp_path)
    assert loaded.ranker_ == norm.ranker_
    doc = Document("x", "heart attak; headake")
    ms = [mention_of(doc, "heart attak"), mention_of(doc, "headake")]
    assert [m.cui for m in loaded.normalize(doc, ms)] == ["C1", "C2"]


def test_short_forms_defined_by_the_mentions_themselves(lexicon):
    # "DM" does not line up letter by letter with "myotonic dystrophy" as an acronym, but the mentions pair up.
    lex = Lexicon.from_entries(ENTRIES + [LexiconEntry("C0027126", "Myotonic dystrophy")], "fixture2")
    norm = Normalizer(lex)
    doc = Document("d", "Myotonic dystrophy (DM) is inherited. Congenital DM is severe. DM.")
    ms = [mention_of(doc, "Myotonic dystrophy"), mention_of(doc, "DM"), mention_of(doc, "DM", 2)]
    decisions = norm.decide(doc, ms)
    assert [d.cui for d in decisions] == ["C0027126", "C0027126", "C0027126"]
    assert decisions[2].method == "abbreviation"


def test_a_defined_short_form_gets_the_decision_of_its_long_form_past_the_exact_steps():
    # "Duchenne muscular dystrophy" is no lexicon name; the partial step finds its head "muscular dystrophy", and
    # the short form the note defines for it must get that concept too, not a tf-idf search from "DMD".
    lex = Lexicon.from_entries(ENTRIES + [LexiconEntry("C0026850", "Muscular dystrophy")], "fixture3")
    norm = Normalizer(lex)
    norm.threshold_ = 0.95  # as fitted on clinical notes: tf-idf from the long form alone does not reach it
    doc = Document("d", "A boy with Duchenne muscular dystrophy (DMD). DMD was confirmed by testing.")
    ms = [mention_of(doc, "Duchenne muscular dystrophy"), mention_of(doc, "DMD"), mention_of(doc, "DMD", 1)]
    decisions = norm.decide(doc, ms)
    assert decisions[0].method == "partial"
    assert [d.cui for d in decisions] == ["C0026850"] * 3
    # a short form the note does not define stays as it was
    other = Document("e", "DMD was confirmed by testing.")
    assert cui_of(norm, other, "DMD") == CUI_LESS


def test_the_long_form_of_a_short_form_is_the_fuller_of_the_mention_and_the_letters():
    merged = normalizer_mod._merged_definitions(
        {"C7D": "Complement C7 deficiency", "HIT": "thrombocytopenia", "XY": "foo bar"},
        {"C7D": "C7 deficiency", "HIT": "heparin-induced thrombocytopenia", "WFS": "Wolfram syndrome"})
    assert merged == {"C7D": "Complement C7 deficiency", "HIT": "heparin-induced thrombocytopenia",
                      "XY": "foo bar", "WFS": "Wolfram syndrome"}


def test_normalizer_pickles(lexicon):
    import pickle

    norm = Normalizer(lexicon)
    doc = Document("d", "History of myocardial infarction (MI). Second MI. hypertenson.")
    ms = [mention_of(doc, "MI", 1), mention_of(doc, "hypertenson")]
    before = norm.normalize(doc, ms)
    assert pickle.loads(pickle.dumps(norm)).normalize(doc, ms) == before == [
        ms[0].with_cui("C0027051"), ms[1].with_cui("C0020538")]


def test_queries_that_cannot_reach_the_threshold_are_not_scored_and_nothing_changes(monkeypatch):
    from share_ner.lexicons import default_lexicon

    text = ("Hx of hypertenson, congestve heart failre and renal insuficiency; breast and ovarian cancer; "
            "non insulin dependant diabetes; zzqx wvuy; atrial fibrilation; chronic kidny disease stage 3; "
            "HA; MI; leg pian; skin rash, itchy; sinus inflamation")
    doc = Document("d", text)
    phrases = [p.strip() for p in text[6:].replace(";", ",").split(",") if p.strip()]
    ms = [mention_of(doc, p) for p in phrases]
    train = Document("t", "Pt has hypertension. Pt has MI.")
    gold = {"t": [mention_of(train, "hypertension").with_cui("C0020538"), mention_of(train, "MI").with_cui("C0027051")]}
    calls = []
    real = candidates_mod.word_coverage
    monkeypatch.setattr(candidates_mod, "word_coverage", lambda q, n: calls.append(q) or real(q, n))
    norm = Normalizer.fit(default_lexicon(), {"t": train}, gold)
    scored = {}
    for t in (0.0, 0.4, 0.6, 0.75, 0.9, 0.97):
        norm.threshold_ = t
        calls.clear()
        fast = [(d.cui, d.method) for d in norm.decide(doc, ms)]
        scored[t] = len(calls)
        assert fast == [(d.cui, d.method) for d in norm.decide(doc, ms, trace=True)], t  # trace scores every query
    assert scored[0.97] < scored[0.0] and any(m == "threshold" for _, m in fast)


def test_an_ambiguous_short_form_means_the_sense_the_note_writes_out(monkeypatch):
    monkeypatch.setattr(normalizer_mod, "_clinical_abbreviations",
                        lambda: {"CP": ["chest pain", "cerebral palsy"], "RA": ["rheumatoid arthritis"]})
    lex = Lexicon.from_entries([LexiconEntry("C0008031", "Chest pain", "HPO", (), True),
                                LexiconEntry("C0007789", "Cerebral palsy", "HPO", (), True),
                                LexiconEntry("C0007789", "CP", "HPO", (), False),
                                LexiconEntry("C0003873", "Rheumatoid arthritis", "HPO", (), True),
                                LexiconEntry("C0003873", "RA", "HPO", (), False)], "hpo-like")
    norm = Normalizer(lex, None, NormalizerConfig(use_threshold=False))

    def cui(text: str, phrase: str) -> str:
        doc = Document("n", text)
        return norm.normalize(doc, [mention_of(doc, phrase)])[0].cui

    # the lexicon's own short form would say cerebral palsy; the note names one of the list's senses
    assert cui("Cerebral palsy since birth; CP stable.", "CP") == "C0007789"
    assert cui("Chest pain on exertion; CP today.", "CP") == "C0008031"
    assert cui("c/o SOB and CP.", "CP") == "C0008031"  # nothing written out: the list's first sense
    assert cui("Known RA.", "RA") == "C0003873"  # one sense: the lexicon's short form as before


def test_mentions_carry_their_concept_s_preferred_name(lexicon):
    doc = Document("n", "hypertension and a headache and xyzzy")
    found = Normalizer(lexicon, None, NormalizerConfig(use_threshold=False, use_tfidf=False)).normalize(
        doc, [mention_of(doc, "hypertension"), mention_of(doc, "headache"), mention_of(doc, "xyzzy")])
    assert [(m.cui, m.name) for m in found] == [("C0020538", "Hypertensive disorder"), ("C0018681", "Headache"),
                                                (CUI_LESS, None)]
    gazetteer = Lexicon.from_entries([LexiconEntry("C0000001", "xyzzy", count=2),
                                      LexiconEntry("C0000001", "xyzzies", count=1)], "gazetteer")
    assert Normalizer(lexicon, gazetteer).name_of("C0000001") == "xyzzy"  # the lexicon lacks it: training's
