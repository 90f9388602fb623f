"""The packaged default model (share_ner.default_model.release): current with the code, used without a build, and
rebuilt byte for byte from the MTSamples notes when they are at hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import share_ner.default_model.build as dm
from share_ner.default_model import release
from share_ner.default_model import terms as term_lists
from share_ner.default_model.icd10cm import read_icd10cm
from share_ner.document import Document
from share_ner.errors import ShareNerError
from share_ner.lexicons.hpo import hpo_obo_path, parse_obo
from share_ner.pipeline import Pipeline

MTSAMPLES = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "mtsamples" / "raw" / "notes"


def test_packaged_model_was_built_by_this_code():
    # Fails when a change to the training code, data or settings leaves the packaged model behind.
    expected = dm.model_key(dm.DEFAULT_SYNTH, dm.DEFAULT_TAGGER, dm.DEFAULT_NOTES)
    assert dm.packaged_key() == expected, (
        "the packaged default model is stale: python -m share_ner.default_model.release --notes MTSAMPLES_NOTES")


def test_default_model_dir_is_the_packaged_model_and_builds_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path))
    assert dm.default_model_dir() == dm.PACKAGED_DIR
    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == ""


def test_packaged_model_records_its_notes():
    record = json.loads((dm.PACKAGED_DIR / dm.RELEASE_FILE).read_text(encoding="utf-8"))
    assert record["notes"]["count"] == dm.DEFAULT_NOTES.count
    assert record["settings"] == dm.DEFAULT_NOTES.to_dict()
    assert len(record["notes"]["sha256"]) == 64
    config = json.loads((dm.PACKAGED_DIR / "config.json").read_text(encoding="utf-8"))
    # The tagger learned from the synthetic documents and the distant-labelled notes together.
    assert config["training"]["counts"]["docs"] > dm.DEFAULT_NOTES.count


def test_packaged_model_tags_a_note():
    pipeline = Pipeline.load(dm.PACKAGED_DIR)
    doc = Document("n", "History of congestive heart failure. Denies chest pain. ECG: left ventricular hypertrophy.\n")
    found = {m.text(doc.text): m.cui for m in pipeline.annotate(doc)}
    assert "chest pain" in found
    assert found.get("left ventricular hypertrophy", "CUI-less") != "CUI-less"


def test_no_name_of_hpo_s_other_branches_in_the_default_s_output_or_lexicons():
    # HPO's modifiers and inheritance terms name no disorder: not a mention, not a term feature, not a CUI's name.
    text = hpo_obo_path().read_text(encoding="utf-8")
    others = {e.name.lower() for e in parse_obo(text)} - {e.name.lower() for e in parse_obo(text, ("HP:0000118",))}
    # HPO files a few disorders under its other branches ("Miscarriage", "Eclampsia"): ICD-10-CM and the project's
    # lists name them as disorders, and they may stay
    others -= {name.lower() for name, _ in read_icd10cm()}
    others -= {t.name.lower() for t in (*term_lists.project_terms(), *term_lists.finding_terms())}
    assert {"position", "distal", "acute", "mild", "autosomal dominant inheritance"} <= others
    note = ("She was placed in the supine position. The distal ureter was dissected; the proximal end was clear. "
            "Acute onset of mild, chronic pain. Severity is moderate. Family history: autosomal dominant "
            "inheritance of a severe, progressive, generalized disorder. The lesion is bilateral and episodic.\n")
    pipeline = Pipeline.load(dm.PACKAGED_DIR)
    found = pipeline.annotate(Document("n", note))
    assert any("pain" in m.text(note) for m in found)  # the note's disorder is found
    assert not {m.text(note).lower() for m in found} & others
    assert not {(m.name or "").lower() for m in found} & others
    terms = {line.split("\t")[0].lower() for line in (dm.PACKAGED_DIR / "terms.tsv").read_text(
        encoding="utf-8").splitlines()[1:] if line.endswith("\tlexicon")}
    assert not terms & others
    assert not {e.name.lower() for e in pipeline.normalizer.lexicon.entries} & others


def test_the_default_s_mentions_carry_their_concept_s_name():
    pipeline = Pipeline.load(dm.PACKAGED_DIR)
    doc = Document("n", "Denies chest pain.\n")
    [m] = [m for m in pipeline.annotate(doc) if m.text(doc.text) == "chest pain"]
    assert (m.cui, m.name) == ("C0008031", "Chest pain")


def test_a_stale_packaged_model_is_not_used(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "packaged"
    stale.mkdir()
    for name in ("config.json", "model.crfsuite"):
        (stale / name).write_bytes((dm.PACKAGED_DIR / name).read_bytes())
    (stale / dm.RELEASE_FILE).write_text(json.dumps({"key": "0" * 16}), encoding="utf-8")
    monkeypatch.setattr(dm, "PACKAGED_DIR", stale)
    assert dm.packaged_key(stale) == "0" * 16

    class Built(Exception):
        pass

    def training_data(synth):  # the synthetic-only build starts here; stop it there
        raise Built

    monkeypatch.setattr(dm, "training_data", training_data)
    with pytest.raises(Built):
        dm.default_model_dir(cache=tmp_path / "cache")
    err = capsys.readouterr().err
    assert "was built by other code or data" in err and "share_ner.default_model.release" in err


def test_release_notes_errors(tmp_path):
    with pytest.raises(ShareNerError, match="not a directory"):
        release.release_notes(tmp_path / "missing", 2)
    (tmp_path / "a.txt").write_text("Chest pain.\n", encoding="utf-8")
    with pytest.raises(ShareNerError, match="1 notes, the default model is trained on 2"):
        release.release_notes(tmp_path, 2)
    assert release.main(["--notes", str(tmp_path / "missing"), "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


def test_release_notes_are_the_last_by_id_and_digested(tmp_path):
    for name in ("b", "a", "c"):
        (tmp_path / f"{name}.txt").write_text(f"note {name}\n", encoding="utf-8")
    notes = release.release_notes(tmp_path, 2)
    assert sorted(notes) == ["mts-b", "mts-c"]
    digest = release.notes_digest(notes)
    (tmp_path / "c.txt").write_text("note c changed\n", encoding="utf-8")
    assert release.notes_digest(release.release_notes(tmp_path, 2)) != digest


def test_labelled_sentences_only_blanks_the_rest_in_place():
    from share_ner.document import Mention

    doc = Document("d", "No fever.\r\nChest pain today.\nWalks daily.")
    start = doc.text.index("Chest")
    kept = release.labelled_sentences_only(doc, [Mention("d", ((start, start + 10),), "CUI-less")])
    assert len(kept.text) == len(doc.text)
    assert kept.text[start:start + 10] == "Chest pain"
    assert kept.text.count("\r\n") == 1 and "fever" not in kept.text and "Walks" not in kept.text


@pytest.mark.skipif(not MTSAMPLES.is_dir(), reason="the MTSamples notes (../shared) are not here")
def test_rebuild_from_the_notes_is_identical(tmp_path):
    rebuilt = release.build_release(MTSAMPLES, tmp_path / "model")
    assert release.differing_files(rebuilt, dm.PACKAGED_DIR) == []


def test_the_key_names_files_alike_in_a_checkout_and_in_a_wheel(tmp_path, monkeypatch):
    # A source checkout has features/ beside share_ner/, a wheel has it inside: were the key to name files by
    # their place, an installed package would take its packaged model for a stale one.
    checkout = [dm._logical_name(dm._package_dir("share_ner.features") / "matcher.py"),
                dm._logical_name(Path(dm.__file__).parent / "synthetic.py")]
    wheel = tmp_path / "site-packages" / "share_ner"
    (wheel / "features").mkdir(parents=True)
    (wheel / "default_model").mkdir()
    installed = [wheel / "features" / "matcher.py", wheel / "default_model" / "synthetic.py"]
    for path in installed:
        path.write_text("", encoding="utf-8")
    dirs = {"share_ner": wheel, "share_ner.features": wheel / "features", "share_ner.lexicons": wheel / "lexicons",
            "share_ner.eval": wheel / "eval"}
    monkeypatch.setattr(dm, "_package_dir", dirs.get)
    assert [dm._logical_name(p) for p in installed] == checkout
    assert checkout == ["share_ner.features/matcher.py", "share_ner/default_model/synthetic.py"]


def test_check_compares_the_rebuild_with_the_model(tmp_path, monkeypatch, capsys):
    import shutil

    def rebuild(notes_dir, out, **kwargs):  # the release's training is tested above; here only the comparison
        shutil.copytree(dm.PACKAGED_DIR, out)
        if (Path(notes_dir) / "changed").exists():
            (out / "terms.tsv").write_text("term\tsemtype\n", encoding="utf-8")
        return out

    monkeypatch.setattr(release, "build_release", rebuild)
    assert release.main(["--notes", str(tmp_path), "--check"]) == 0
    assert "identical to the rebuild" in capsys.readouterr().err
    (tmp_path / "changed").write_text("", encoding="utf-8")
    assert release.main(["--notes", str(tmp_path), "--check"]) == 1
    assert "differs from the rebuild in terms.tsv" in capsys.readouterr().err


def test_the_key_covers_the_code_that_composes_and_builds_the_default():
    names = {dm._logical_name(p) for p in dm._training_code()}
    assert {"share_ner/default_model/build.py", "share_ner/default_model/release.py",
            "share_ner/default_model/synthetic.py", "share_ner/training/distant.py", "share_ner.features/matcher.py",
            "share_ner/text.py", "share_ner/token_rules.py", "share_ner.features/abbreviations.py",
            "share_ner/training/__init__.py", "share_ner/tagging/pairing.py"} <= names
