"""default_model_dir(): first-use build into the cache, reuse, keying, and the two-process race.

The build runs the real path (training data, HPO lexicon, train_model, rename
into the cache) with a reduced configuration so the test stays fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import share_ner.default_model.build as dm
from share_ner.default_model.synthetic import SynthConfig
from share_ner.document import Document
from share_ner.pipeline import Pipeline

SMALL_SYNTH = SynthConfig(n_docs=10, seed=13)
SMALL_TAGGER = dm.DEFAULT_TAGGER.replace(max_iterations=15, gazetteer_folds=1)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    cache = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("SHARE_NER_CACHE", str(cache))
    try:
        model = dm.default_model_dir(synth=SMALL_SYNTH, tagger=SMALL_TAGGER)
    finally:
        mp.undo()
    return cache, model


def test_builds_into_the_cache_from_env(built):
    cache, model = built
    assert model.parent == cache
    assert model.name.startswith(f"default-model-{dm.__version__}-")
    assert dm.is_complete(model)
    # Only the finished model is left behind: no temporary build directories.
    assert [p for p in cache.iterdir() if p.name.startswith(".default-model")] == []


def test_built_model_tags_a_note(built):
    _, model = built
    pipeline = Pipeline.load(model)
    doc = Document("n", "History of congestive heart failure. Denies chest pain.\n")
    found = {m.text(doc.text) for m in pipeline.annotate(doc)}
    assert "chest pain" in found


def test_second_call_reuses_without_building(built, monkeypatch, capsys):
    cache, model = built
    monkeypatch.setenv("SHARE_NER_CACHE", str(cache))

    def no_training(*args, **kwargs):
        raise AssertionError("the model should have been reused")

    monkeypatch.setattr(dm, "training_data", no_training)
    assert dm.default_model_dir(synth=SMALL_SYNTH, tagger=SMALL_TAGGER) == model
    assert capsys.readouterr().err == ""


def test_key_depends_on_settings():
    assert dm.model_key(SMALL_SYNTH, SMALL_TAGGER) == dm.model_key(SMALL_SYNTH, SMALL_TAGGER)
    assert dm.model_key(SMALL_SYNTH, SMALL_TAGGER) != dm.model_key(SynthConfig(n_docs=11), SMALL_TAGGER)
    assert dm.model_key(SMALL_SYNTH, SMALL_TAGGER) != dm.model_key(SMALL_SYNTH, SMALL_TAGGER.replace(c1=0.1))


def test_cache_location_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dm.cache_root() == tmp_path / "a"
    monkeypatch.delenv("SHARE_NER_CACHE")
    assert dm.cache_root() == tmp_path / "xdg" / "share-ner"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert dm.cache_root() == tmp_path / "home" / ".cache" / "share-ner"


def test_losing_the_race_uses_the_winners_model(built, monkeypatch, tmp_path, capsys):
    """Another process renames its model into place first: ours is discarded, theirs returned."""
    _, model = built
    cache = tmp_path / "race"
    final = cache / f"default-model-{dm.__version__}-{dm.model_key(SMALL_SYNTH, SMALL_TAGGER)}"

    def fake_training_data(synth):
        return {}, {}

    def fake_train_model(docs, gold, out_dir, config, **kwargs):
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_text("{}")
        (out_dir / "model.crfsuite").write_text("ours")
        # The other process wins while we train.
        final.mkdir(parents=True)
        (final / "config.json").write_text("{}")
        (final / "model.crfsuite").write_text("theirs")
        (final / "terms.tsv").write_text("x")  # non-empty directory: our rename must fail
        return out_dir

    monkeypatch.setattr(dm, "training_data", fake_training_data)
    monkeypatch.setattr(dm, "train_model", fake_train_model)
    got = dm.default_model_dir(synth=SMALL_SYNTH, tagger=SMALL_TAGGER, cache=cache)
    assert got == final
    assert (final / "model.crfsuite").read_text() == "theirs"
    assert sorted(p.name for p in cache.iterdir()) == [final.name]
    assert "building the default model into" in capsys.readouterr().err


def test_unwritable_cache_is_one_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(dm.ShareNerError) as info:
        dm.default_model_dir(synth=SMALL_SYNTH, tagger=SMALL_TAGGER, cache=blocker / "cache")
    assert "SHARE_NER_CACHE" in str(info.value)


def test_label_features_match_the_distant_label_names_and_the_normalizer_keeps_the_cuis(built, tmp_path):
    from share_ner.document import CUI_LESS

    _, plain = built
    model = dm.default_model_dir(synth=SynthConfig(n_docs=10, seed=13, label_features=True), tagger=SMALL_TAGGER,
                                 cache=tmp_path)
    terms = (model / "terms.tsv").read_text(encoding="utf-8")
    plain_terms = (plain / "terms.tsv").read_text(encoding="utf-8")
    # the CUI-less finding "obtunded" gives a term feature; HPO's clinical modifier "Mild" none (the default lexicon
    # leaves HPO's modifiers out)
    assert "\nobtunded\t" not in plain_terms and "\nobtunded\t" in terms
    assert "\nMild\t" not in plain_terms and "\nMild\t" not in terms
    normalizer = Pipeline.load(model).normalizer
    assert normalizer is not None and all(e.cui != CUI_LESS for e in normalizer.lexicon.entries)
    assert "Seizure" in {e.name for e in normalizer.lexicon.entries}
