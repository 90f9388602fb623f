"""The spaCy component: spans, fragments and entities equal to ``share-ner tag``'s mentions, token splitting where
a mention boundary falls inside a spaCy token, worker processes, medspaCy's sectionizer, and to_disk/spacy.load."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import spacy

from share_ner.cli import main
from share_ner.document import Document
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes
from share_ner.spacy_component import split_tokens_at

TEXT = Path(__file__).parent / "fixtures" / "tagger" / "text"
# spaCy's English tokenizer keeps "hypertension;chest" and "arthritis(knee" whole; share-ner's splits them.
GLUED = "HISTORY OF PRESENT ILLNESS:\nHe has hypertension;chest pain.\nPAST MEDICAL HISTORY:\narthritis(knee).\n"


def _fragments(doc) -> list[tuple[tuple[int, int], ...]]:
    return [tuple((f.start_char, f.end_char) for f in span._.fragments) for span in doc.spans["share_ner"]]


@pytest.fixture(scope="module")
def nlp(tiny_model: Path):
    nlp = spacy.blank("en")
    nlp.add_pipe("share_ner", config={"model": str(tiny_model)})
    return nlp


@pytest.fixture(scope="module")
def tagged(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """The fixture notes plus the glued note, and what ``share-ner tag`` finds in them."""
    notes_dir = tmp_path_factory.mktemp("notes")
    for doc in read_notes(TEXT).values():
        (notes_dir / f"{doc.id}.txt").write_text(doc.text, encoding="utf-8")
    (notes_dir / "glued.txt").write_text(GLUED, encoding="utf-8")
    out = tmp_path_factory.mktemp("tagged")
    assert main(["tag", str(notes_dir), "--model", str(tiny_model), "--out", str(out), "--format", "jsonl",
                 "--quiet"]) == 0
    return read_notes(notes_dir), read_annotations(out)


def test_the_glued_note_has_boundaries_inside_spacy_tokens(tagged) -> None:
    notes, mentions = tagged
    host = spacy.blank("en").make_doc(notes["glued"].text)
    edges = {t.idx for t in host} | {t.idx + len(t.text) for t in host}
    inside = [b for m in mentions["glued"] for span in m.spans for b in span if b not in edges]
    assert len(inside) >= 2


def test_fragments_equal_share_ner_tag(nlp, tagged) -> None:
    notes, mentions = tagged
    assert any(m.is_discontiguous for ms in mentions.values() for m in ms)
    assert any(m.name for ms in mentions.values() for m in ms)  # the concepts' names travel in the JSONL
    for doc_id, note in notes.items():
        doc = nlp(note.text)
        assert doc.text == note.text
        expected = sorted(mentions[doc_id])
        assert _fragments(doc) == [m.spans for m in expected], doc_id
        assert [s._.cui for s in doc.spans["share_ner"]] == [m.cui for m in expected]
        assert [s._.name for s in doc.spans["share_ner"]] == [m.name for m in expected]  # share-ner tag's JSONL
        assert [s.kb_id_ for s in doc.spans["share_ner"]] == [m.cui for m in expected]
        for span, m in zip(doc.spans["share_ner"], expected):
            assert span.label_ == "Disease_Disorder"
            assert (span.start_char, span.end_char) == (m.start, m.end)  # the hull
            assert [f.text for f in span._.fragments] == [note.text[s:e] for s, e in m.spans]
            assert m.attributes is not None  # the pipeline fills them by default
            assert span._.attributes == m.attributes.to_dict()


def test_ents_are_the_contiguous_mentions_without_overlap(nlp, tagged) -> None:
    notes, mentions = tagged
    for doc_id, note in notes.items():
        doc = nlp(note.text)
        contiguous = {m.spans[0] for m in mentions[doc_id] if not m.is_discontiguous}
        ents = [(e.start_char, e.end_char) for e in doc.ents]
        assert set(ents) <= contiguous
        for (_, e1), (s2, _) in zip(ents, ents[1:]):
            assert e1 <= s2
        # only a contiguous mention overlapping a longer (or earlier, equally long) one is left out
        for span in contiguous - set(ents):
            assert any(s < span[1] and span[0] < e for s, e in ents)
        assert all(e.label_ == "Disease_Disorder" and e._.cui for e in doc.ents)


def test_split_tokens_keep_text_and_split_only_where_needed() -> None:
    doc = spacy.blank("en")("He has hypertension;chest pain.")
    assert [t.text for t in doc][2] == "hypertension;chest"
    assert split_tokens_at(doc, [19, 20, 7, 30]) == 1
    assert [t.text for t in doc] == ["He", "has", "hypertension", ";", "chest", "pain", "."]
    assert doc.text == "He has hypertension;chest pain."
    assert split_tokens_at(doc, [19, 20]) == 0


def test_factory_is_found_through_the_entry_point(tiny_model: Path) -> None:
    code = ("import spacy, sys; nlp = spacy.blank('en'); nlp.add_pipe('share_ner', config={'model': sys.argv[1]}); "
            "doc = nlp('Denies chest pain.'); print([(s.text, s._.cui) for s in doc.spans['share_ner']])")
    out = subprocess.run([sys.executable, "-c", code, str(tiny_model)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[('chest pain', 'C0008031')]"


def test_nlp_pipe_in_two_processes_equals_one_at_a_time(nlp, tagged) -> None:
    notes, _ = tagged
    texts = [n.text for n in notes.values()]
    one = [(_fragments(d), [s._.cui for s in d.spans["share_ner"]], [e.text for e in d.ents]) for d in map(nlp, texts)]
    two = [(_fragments(d), [s._.cui for s in d.spans["share_ner"]], [e.text for e in d.ents])
           for d in nlp.pipe(texts, n_process=2, batch_size=2)]
    assert two == one
    assert sum(len(f) for f, _, _ in one) > 0
    component = pickle.loads(pickle.dumps(nlp.get_pipe("share_ner")))
    assert _fragments(component(nlp.make_doc(texts[0]))) == one[0][0]


def test_to_disk_then_spacy_load_keeps_the_model(nlp, tiny_model: Path, tmp_path: Path) -> None:
    nlp.to_disk(tmp_path / "pipeline")
    saved = json.loads((tmp_path / "pipeline" / "share_ner" / "share_ner.json").read_text())
    assert saved == {"model": str(tiny_model.resolve())}
    again = spacy.load(tmp_path / "pipeline")
    assert again.pipe_names == ["share_ner"]
    assert _fragments(again(GLUED)) == _fragments(nlp(GLUED))


def test_a_relative_model_path_saved_absolute(tiny_model: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tiny_model.parent)
    nlp = spacy.blank("en")
    nlp.add_pipe("share_ner", config={"model": tiny_model.name})
    nlp.to_disk(tmp_path / "pipeline")
    monkeypatch.chdir(tmp_path)
    assert _fragments(spacy.load(tmp_path / "pipeline")("Denies chest pain.")) == [((7, 17),)]


def test_medspacy_sectionizer_ahead_keeps_its_sections(tiny_model: Path) -> None:
    pytest.importorskip("medspacy")
    nlp = spacy.blank("en")
    nlp.add_pipe("medspacy_sectionizer")

    def sections(doc):
        return [(s.category, doc[s.body_start:s.body_end].start_char, doc[s.body_start:s.body_end].end_char)
                for s in doc._.sections]

    before = nlp(GLUED)
    expected, n_tokens = sections(before), len(before)
    nlp.add_pipe("share_ner", config={"model": str(tiny_model)})
    doc = nlp(GLUED)
    assert len(doc) > n_tokens  # tokens were split
    assert sections(doc) == expected
    assert [c for c, _, _ in expected] == ["history_of_present_illness", "past_medical_history"]
    by_text = {s.text: s[0]._.section_category for s in doc.spans["share_ner"]}
    assert by_text["hypertension"] == by_text["chest pain"] == "history_of_present_illness"
    assert [t._.section_category for t in doc if t.text == ";"] == ["history_of_present_illness"]


def test_a_string_model_that_is_missing_fails_on_first_use(tmp_path: Path) -> None:
    from share_ner.errors import ShareNerError

    nlp = spacy.blank("en")
    nlp.add_pipe("share_ner", config={"model": str(tmp_path / "nowhere")})
    with pytest.raises(ShareNerError, match="nowhere: no such model folder"):
        nlp(Document("n", "x").text)


def test_an_extension_name_taken_by_another_component_is_one_line(tiny_model: Path) -> None:
    from spacy.tokens import Span

    from share_ner.errors import ShareNerError
    from share_ner.spacy_component import _register_extensions

    _register_extensions()
    saved = Span.get_extension("fragments")
    Span.set_extension("fragments", default=None, force=True)
    try:
        nlp = spacy.blank("en")
        with pytest.raises(ShareNerError, match="Span._.fragments is already registered by another component"):
            nlp.add_pipe("share_ner", config={"model": str(tiny_model)})
    finally:
        Span.set_extension("fragments", getter=saved[2], force=True)


def test_attributes_and_cues_reach_the_spans(nlp) -> None:
    from share_ner.document import Attributes, Mention

    note = "No chest pain; mild edema."
    negated = Attributes(negation="yes", cues={"negation": ((0, 2),)})
    mentions = [Mention("text", ((3, 13),), "C0008031", attributes=negated), Mention("text", ((20, 25),), "C0013604")]

    class Fixed:  # an annotator whose model computes attributes
        def __call__(self, text: str) -> list[Mention]:
            assert text == note
            return mentions

    component = nlp.get_pipe("share_ner")
    saved, component._annotator = component._annotator, Fixed()
    try:
        doc = nlp(note)
    finally:
        component._annotator = saved
    first, second = doc.spans["share_ner"]
    assert first._.attributes == negated.to_dict() and first._.attributes["cues"] == {"negation": [[0, 2]]}
    assert second._.attributes is None
    assert Attributes.from_dict(first._.attributes) == negated
