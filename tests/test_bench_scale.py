"""eval/bench_scale.py's own parts: the composed names and the model copy that links against a large lexicon."""

from __future__ import annotations

from pathlib import Path

import pytest

from share_ner.document import Document
from share_ner.lexicons import LexiconEntry, load_lexicon, write_lexicon

TAGGER_FIXTURES = Path(__file__).parent / "fixtures" / "tagger"
HPO = [LexiconEntry("C1", "Abnormality of the kidney", "HPO", (), True),
       LexiconEntry("C2", "Abnormality of femur", "HPO", (), True),
       LexiconEntry("C3", "Abnormality of the liver physiology", "HPO", (), True),  # a function, not a site
       LexiconEntry("C4", "Renal cyst", "HPO", (), True)]


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path_factory.getbasetemp() / "share-ner-cache"))


def test_composed_names_name_one_site_and_morphology_each():
    from share_ner.eval.bench_scale import composed_entries

    entries = composed_entries(HPO, 300)
    assert 300 <= len(entries) <= 301 and entries == composed_entries(HPO, 300)  # seeded
    by_label: dict[str, list[str]] = {}
    for e in entries:
        by_label.setdefault(e.cui, []).append(e.name)
    assert all(1 <= len(names) <= 2 for names in by_label.values())
    assert len({tuple(names) for names in by_label.values()}) == len(by_label)  # one concept per combination
    for names in by_label.values():
        assert " of " in names[0] and names[0][0].isupper()
        assert ("kidney" in names[0]) != ("femur" in names[0]) and "physiology" not in names[0]
    assert any(len(names) == 2 for names in by_label.values())


def test_model_copy_links_the_default_models_normalizer_against_the_lexicon(tmp_path, monkeypatch):
    tagger = pytest.importorskip("share_ner.tagger")
    import share_ner.default_model as default_model
    from share_ner.eval.bench_scale import composed_entries, write_model
    from share_ner.formats.share import read_pipe_dir
    from share_ner.notes import read_notes
    from share_ner.pipeline import Pipeline

    small = tagger.train_model(read_notes(TAGGER_FIXTURES / "text"), read_pipe_dir(TAGGER_FIXTURES / "gold"),
                               tmp_path / "small")
    monkeypatch.setattr(default_model, "default_model_dir", lambda: small)
    lexicon_file = tmp_path / "large.tsv"
    write_lexicon(lexicon_file, HPO + composed_entries(HPO, 200))
    write_model(tmp_path / "large", lexicon_file)
    large, original = Pipeline.load(tmp_path / "large"), Pipeline.load(small)
    assert large.normalizer.lexicon.content_hash == load_lexicon(lexicon_file).content_hash
    assert original.normalizer.lexicon is None  # the copy's change stays in the copy
    assert large.normalizer.threshold_ == original.normalizer.threshold_
    doc = Document("n", "Renal cyst and fever.")
    assert [m.spans for m in large.annotate(doc)] == [m.spans for m in original.annotate(doc)]
