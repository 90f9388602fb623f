"""Suspended prefixes ("hyper- or hypothyroidism"): found in the text, completed after tagging, held by the ceiling."""

from __future__ import annotations

from share_ner.document import Document, Mention
from share_ner.pipeline import Pipeline
from share_ner.tagging.scheme import round_trip_ceiling
from share_ner.tagging.suspended import complete_suspended, distributed_spans, suspended_prefixes


def _spans(text: str, *parts: str) -> tuple[tuple[int, int], ...]:
    """The spans of ``parts``, each found after the previous one."""
    out, pos = [], 0
    for part in parts:
        start = text.index(part, pos)
        out.append((start, start + len(part)))
        pos = start + len(part)
    return tuple(out)


def test_suspended_prefixes_give_the_prefix_the_later_word_and_its_stem():
    text = "Hyper- or hypothyroidism; intra- and Extrahepatic ducts; tachy- and/or bradycardia"
    found = suspended_prefixes(text)
    assert [(text[a:b], text[w:stem]) for (a, b), w, stem in found] == [
        ("Hyper", "hypo"), ("intra", "Extra"), ("tachy", "brady")]


def test_no_suspended_prefix_without_both_prefixes_a_coordinator_on_one_line_or_a_stem():
    for text in ("muscle- or brainstem", "nonhyper- or hypotension", "hypo-\nor hypertension",
                 "hyper- but hypotension", "pre- and post-natal", "hyper- or hypo", "hyper- or hypoxa"):
        assert suspended_prefixes(text) == [], text


def test_a_mention_of_the_whole_word_gets_its_distributed_reading():
    text = "Hyper- or hypothyroidism (subjects requiring treatment)"
    whole = Mention("n1", _spans(text, "hypothyroidism"))
    out = complete_suspended(text, [whole])
    assert [m.spans for m in out] == [_spans(text, "Hyper", "thyroidism"), whole.spans]
    assert all(m.doc_id == "n1" for m in out)
    # given again, nothing is added twice
    assert complete_suspended(text, out) == out


def test_the_distributed_reading_keeps_the_mention_s_words_after_the_stem():
    text = "pre- and postnatal growth retardation"
    whole = _spans(text, "postnatal growth retardation")
    assert distributed_spans(text, [whole]) == {_spans(text, "pre", "natal growth retardation")}
    # a mention that does not start at the later word, or ends inside its prefix, is left alone
    assert distributed_spans(text, [_spans(text, "growth retardation")]) == set()
    assert distributed_spans(text, [((text.index("post"), text.index("post") + 4),)]) == set()


def test_the_ceiling_holds_a_suspended_prefix_mention_through_the_whole_word():
    text = "Hyper- or hypothyroidism\n"
    doc = Document("n1", text)
    gold = {"n1": [Mention("n1", _spans(text, "Hyper", "thyroidism")), Mention("n1", _spans(text, "hypothyroidism"))]}
    report = round_trip_ceiling({"n1": doc}, gold)
    assert (report["survived"], report["discontiguous_survived"], report["lost"]["inexact"]) == (2, 1, 0)
    # without the whole word among the mentions, the distributed one has a boundary inside a token
    alone = {"n1": gold["n1"][:1]}
    report = round_trip_ceiling({"n1": doc}, alone)
    assert (report["survived"], report["lost"]["inexact"]) == (0, 1)


def test_the_tagger_completes_the_suspended_prefixes_of_its_mentions(small_model, monkeypatch):
    text = "History of hyper- or hypotension.\n"
    tagger = Pipeline.load(small_model).tagger
    whole = Mention("n1", _spans(text, "hypotension"))
    monkeypatch.setattr(tagger, "_decode", lambda *args, **kwargs: [whole])
    assert [m.spans for m in tagger.tag(Document("n1", text))] == [_spans(text, "hyper", "tension"), whole.spans]


def test_the_words_of_a_suspended_prefix_mention_read_as_one_word():
    text = "No hyper- or hypothyroidism; renal or hepatic failure."
    assert Mention("n1", _spans(text, "hyper", "thyroidism")).text(text) == "hyperthyroidism"
    assert Mention("n1", _spans(text, "renal", "failure")).text(text) == "renal failure"
    assert Mention("n1", _spans(text, "renal", "failure")).text(text, " … ") == "renal … failure"
    # a span starting inside a word without a suspended prefix before it (a missing space) is joined as any other
    typo = "Active CNS or epiduraltumor"
    assert Mention("n1", _spans(typo, "CNS", "tumor")).text(typo) == "CNS tumor"


def test_a_suspended_prefix_mention_reads_back_with_or_without_a_space(tmp_path):
    import json

    from share_ner.formats import read_annotations, write_annotations

    text = "No hyper- or hypothyroidism.\n"
    doc = Document("n1", text)
    mention = Mention("n1", _spans(text, "hyper", "thyroidism"))
    for fmt in ("jsonl", "bioc"):
        out = tmp_path / fmt
        out.mkdir()
        write_annotations(out, doc, [mention], fmt)
        assert read_annotations(out, {"n1": doc}) == {"n1": [mention]}, fmt
    path = next((tmp_path / "jsonl").iterdir())
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["mentions"][0]["text"] == "hyperthyroidism"
    record["mentions"][0]["text"] = "hyper thyroidism"  # as a tool that joins fragments with a space writes it
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert read_annotations(tmp_path / "jsonl", {"n1": doc}) == {"n1": [mention]}
