"""Pipeline.load / annotate: save-load round trip, pickling, and the model-directory errors."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.document import Document
from share_ner.errors import ShareNerError
from share_ner.formats.share import read_pipe_dir
from share_ner.inputs.files import read_notes
from share_ner.model import write_config
from share_ner.pipeline import Pipeline
from share_ner.tagging import crf
from share_ner.tagging.config import TaggerConfig
from share_ner.training import train_model

FIXTURES = Path(__file__).parent / "fixtures" / "tagger"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tagger-only model trained through the library call the default model's build uses."""
    docs = read_notes(FIXTURES / "text")
    gold = read_pipe_dir(FIXTURES / "gold")
    out = tmp_path_factory.mktemp("pipeline") / "model"
    config = TaggerConfig(max_iterations=60, c1=0.0, c2=0.01)
    assert train_model(docs, gold, out, config, fit_normalizer=False) == out
    return out


def test_save_load_round_trip(model: Path) -> None:
    pipeline = Pipeline.load(model)
    assert pipeline.config == TaggerConfig(max_iterations=60, c1=0.0, c2=0.01)
    assert pipeline.normalizer is None
    doc = Document("new", "Abdomen is soft, nontender, nondistended.\nShe reports headache.\n")
    mentions = pipeline.annotate(doc)
    assert {m.text(doc.text) for m in mentions} == {"Abdomen nontender", "Abdomen nondistended", "headache"}
    assert all(m.doc_id == "new" and m.cui == "CUI-less" for m in mentions)
    # A second load of the same directory tags identically.
    assert Pipeline.load(model).annotate(doc) == mentions


def test_pipeline_pickles_as_its_model_directory(model: Path) -> None:
    pipeline = Pipeline.load(model)
    again = pickle.loads(pickle.dumps(pipeline))
    doc = Document("d", "Left atrium is dilated.\nUrinary tract infection.\n")
    assert again.model_dir == pipeline.model_dir
    assert again.annotate(doc) == pipeline.annotate(doc)


def test_retrain_replaces_a_model_directory(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model, copy)
    docs = read_notes(FIXTURES / "text")
    gold = read_pipe_dir(FIXTURES / "gold")
    train_model(docs, gold, copy, TaggerConfig(scheme="bio", max_iterations=20), fit_normalizer=False)
    assert Pipeline.load(copy).config.scheme == "bio"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temporary directory left behind


def test_bio_scheme_flattens_discontiguous_mentions_to_their_hull(tmp_path: Path) -> None:
    docs = read_notes(FIXTURES / "text")
    gold = read_pipe_dir(FIXTURES / "gold")
    out = train_model(docs, gold, tmp_path / "bio", TaggerConfig(scheme="bio", max_iterations=60, c1=0.0, c2=0.01),
                      fit_normalizer=False)
    doc = docs["note03"]
    spans = sorted(m.spans for m in Pipeline.load(out).annotate(doc))
    # "Left atrium is moderately dilated" as one span instead of "Left atrium ... dilated".
    assert ((15, 48),) in spans
    assert all(len(s) == 1 for s in spans)


def test_missing_model_file_is_one_line(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    (copy / "model.crfsuite").unlink()
    with pytest.raises(ShareNerError) as err:
        Pipeline.load(copy)
    assert str(err.value) == f"{copy}: incomplete model directory: missing model.crfsuite"


def test_missing_terms_file_is_one_line(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    (copy / "terms.tsv").unlink()
    with pytest.raises(ShareNerError, match=r"missing terms\.tsv$"):
        Pipeline.load(copy)


def test_other_format_version_names_both(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    data = json.loads((copy / "config.json").read_text())
    data["format_version"] = 2
    data["share_ner_version"] = "0.9.0"
    write_config(copy, data)  # as that version would write it
    with pytest.raises(ShareNerError) as err:
        Pipeline.load(copy)
    msg = str(err.value)
    assert "model format version 2 (written by share-ner 0.9.0)" in msg and "reads model format version 1" in msg


def test_other_package_version_same_format_loads(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    data = json.loads((copy / "config.json").read_text())
    data["share_ner_version"] = "0.0.1"
    write_config(copy, data)  # as that version would write it
    assert Pipeline.load(copy).annotate(Document("x", "Pneumonia.\n"))


def test_unknown_setting_from_another_version_is_explained(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    data = json.loads((copy / "config.json").read_text())
    data["tagger"]["future_knob"] = 3
    data["share_ner_version"] = "0.5.0"
    write_config(copy, data)  # as that version would write it
    with pytest.raises(ShareNerError) as err:
        Pipeline.load(copy)
    msg = str(err.value)
    assert "'future_knob'" in msg and "share-ner 0.5.0" in msg and "\n" not in msg


def test_corrupt_crf_file_is_one_line(model: Path, tmp_path: Path) -> None:
    copy = tmp_path / "m"
    shutil.copytree(model, copy)
    (copy / "model.crfsuite").write_bytes(b"not a model")
    with pytest.raises(ShareNerError, match="model.crfsuite: 11 bytes where the model.s manifest has"):
        Pipeline.load(copy)


def test_tag_command_with_missing_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The tag command reports a missing model directory as one line."""
    rc = main(["tag", str(FIXTURES / "text"), "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.count("\n") == 0 and "nope" in err


def test_training_does_not_depend_on_earlier_trainings_in_the_process(tmp_path: Path) -> None:
    """CRFsuite's passive-aggressive trainer shuffles with the C library's rand(); train_model reseeds it."""
    docs = read_notes(FIXTURES / "text")
    gold = read_pipe_dir(FIXTURES / "gold")
    config = TaggerConfig(max_iterations=30)
    train_model(docs, gold, tmp_path / "a", config, fit_normalizer=False)
    train_model(docs, gold, tmp_path / "other", TaggerConfig(max_iterations=7), fit_normalizer=False)
    train_model(docs, gold, tmp_path / "b", config, fit_normalizer=False)
    assert (tmp_path / "a" / "model.crfsuite").read_bytes() == (tmp_path / "b" / "model.crfsuite").read_bytes()


def test_annotate_many_is_annotate_note_by_note_and_isolates_failures(model: Path, monkeypatch) -> None:
    from share_ner.linking.normalizer import Normalizer

    pipeline = Pipeline.load(model)
    docs = read_notes(FIXTURES / "text")
    pipeline.normalizer = Normalizer.fit(None, docs, read_pipe_dir(FIXTURES / "gold"))
    notes = [Document("a", "Abdomen is soft, nontender.\nShe reports headache.\n"), Document("b", "No findings.\n"),
             Document("c", "Left atrium is dilated.\nUrinary tract infection.\n"), *list(docs.values())[:3]]
    one_by_one = [pipeline.annotate(d) for d in notes]
    assert any(ms and any(m.cui != "CUI-less" for m in ms) for ms in one_by_one)  # the normalizer had work
    assert pipeline.annotate_many(notes) == one_by_one

    # tagging that fails on one note, then normalizing the batch together fails: each note alone, fault kept
    emissions, normalize = crf.doc_emissions, pipeline.normalizer.normalize
    monkeypatch.setattr(crf, "doc_emissions", lambda d, *a: emissions(d, *a) if d.id != "b" else 1 / 0)
    monkeypatch.setattr(pipeline.normalizer, "normalize_many", lambda batch: 1 / 0)
    monkeypatch.setattr(pipeline.normalizer, "normalize",
                        lambda d, ms: normalize(d, ms) if d.id != "c" else [][0])
    got = pipeline.annotate_many(notes)
    assert isinstance(got[1], ZeroDivisionError) and isinstance(got[2], IndexError)
    assert [g for i, g in enumerate(got) if i not in (1, 2)] == [m for i, m in enumerate(one_by_one) if i not in (1, 2)]


def test_the_tagger_resources_are_cached_by_model_content(model: Path, tmp_path: Path, monkeypatch) -> None:
    # The term trie and the model's attribute set are unpickled from the cache on later loads (start-up time):
    # the same features, so the same mentions; a damaged cache file is rebuilt, a changed model is a new key.
    from share_ner.lexicons.lexicon import cache_dir

    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    doc = Document("n1", "History of congestive heart failure and diabetes mellitus. No chest pain.\n")
    fresh = Pipeline.load(model)
    files = sorted(cache_dir().glob("resources-*.pkl"))
    assert len(files) == 1
    cached = Pipeline.load(model)
    assert pickle.dumps(cached.resources.term_matcher) == pickle.dumps(fresh.resources.term_matcher)
    assert cached.resources.features._known == fresh.resources.features._known is not None
    assert cached.resources.first_keys == fresh.resources.first_keys and cached.resources.head_words == \
        fresh.resources.head_words
    assert cached.tag(doc) == fresh.tag(doc)
    files[0].write_bytes(b"not a pickle")
    assert Pipeline.load(model).tag(doc) == fresh.tag(doc)
    assert files[0].read_bytes() != b"not a pickle"
    other = tmp_path / "other"
    shutil.copytree(model, other)
    with open(other / "terms.tsv", "a", encoding="utf-8") as f:
        f.write("pleural effusion\tlexicon\n")
    data = json.loads((other / "config.json").read_text())
    data["terms"]["rows"] += 1
    del data["files"]  # another model, saved with its own manifest
    write_config(other, data)
    assert Pipeline.load(other).resources.term_matcher.lookup("pleural effusion")
    assert len(list(cache_dir().glob("resources-*.pkl"))) == 2


def test_spacy_is_imported_without_its_command_line_which_still_imports() -> None:
    import subprocess
    import sys

    code = ("import sys\n"
            "from share_ner.text import tokenize\n"
            "print([t.text for t in tokenize('h/o IL-6 on 3/12/2020.')])\n"
            "print(any(m.split('.')[0] in ('jinja2', 'typer', 'weasel') or m.startswith('spacy.cli') "
            "for m in sys.modules))\n"
            "import spacy, spacy.cli\n"
            "print('spacy.cli.download' in sys.modules, callable(spacy.info))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["['h/o', 'IL-6', 'on', '3/12/2020', '.']", "False", "True True"]
