"""``share-ner attributes`` (Task 2a on given spans) and the attributes of ``share-ner tag`` / the pipeline."""

from __future__ import annotations

import json
from pathlib import Path

from share_ner.cli import main
from share_ner.formats import read_annotations
from share_ner.inputs.files import read_notes

FIX = Path(__file__).parent / "fixtures" / "share2014"
TAGGER_FIXTURES = Path(__file__).parent / "fixtures" / "tagger"


def test_attributes_on_gold_spans_writes_share2014(tmp_path: Path, capsys):
    out = tmp_path / "out"
    assert main(["attributes", str(FIX / "text"), "--mentions", str(FIX / "gold"), "--out", str(out)]) == 0
    assert "filled the attributes of 4 mentions of 1 notes" in capsys.readouterr().err
    raw = (out / "note1.pipe.txt").read_text(encoding="utf-8")
    assert raw.count("\n") == 4 and raw.split("\n")[0].count("|") == 21
    gold = read_annotations(FIX / "gold")["note1"]
    got = read_annotations(out)["note1"]
    assert got == gold  # the same spans and CUIs
    by_cui = {m.cui: m.attributes for m in got}
    assert by_cui["C0149871"].doctime == "before"            # History of DVT
    assert by_cui["C0008031"].negation == "yes"              # Denies chest pain,
    assert by_cui["C0013404"].negation == "no"               # but reports dyspnea
    assert by_cui["C0006142"].subject == "family_member"     # FAMILY HISTORY: Mother with breast cancer
    # and share-ner evaluate scores it against the gold attributes
    assert main(["evaluate", "--gold", str(FIX / "gold"), "--pred", str(out), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)["attributes"]
    assert scores["negation"]["accuracy"] == 1.0 and scores["subject"]["accuracy"] == 1.0


def test_attributes_jsonl_and_a_site_rules_file(tmp_path: Path):
    rules = tmp_path / "site.tsv"
    rules.write_text("reports\tuncertainty\tyes\tforward\t2\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["attributes", str(FIX / "text"), "--mentions", str(FIX / "gold"), "--out", str(out),
                 "--format", "jsonl", "--context-rules", str(rules)]) == 0
    rec = json.loads((out / "note1.jsonl").read_text(encoding="utf-8"))
    dyspnea = next(m for m in rec["mentions"] if m["text"] == "dyspnea")
    assert dyspnea["attributes"]["uncertainty"] == "yes" and "uncertainty" in dyspnea["cues"]


def test_a_span_outside_its_note_is_the_usual_error(tmp_path: Path, capsys):
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "note1.pipe.txt").write_text("note1.txt||Disease_Disorder||CUI-less||5||900\n",
                                                      encoding="utf-8")
    code = main(["attributes", str(FIX / "text"), "--mentions", str(tmp_path / "gold"), "--out",
                 str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "ends past the note's end" in err and err.count("\n") == 1


def test_pipeline_fills_attributes_and_they_never_change_the_mentions(small_model: Path):
    from share_ner.attributes import ContextMatcher
    from share_ner.pipeline import Pipeline

    docs = list(read_notes(TAGGER_FIXTURES / "text").values())
    with_attrs = Pipeline.load(small_model)
    without = Pipeline.load(small_model)
    without.use_attributes(None)
    a = [with_attrs.annotate(d) for d in docs]
    b = [without.annotate(d) for d in docs]
    assert a == b and sum(map(len, a)) > 0
    assert all(m.attributes is not None for ms in a for m in ms)
    assert all(m.attributes is None for ms in b for m in ms)
    many = with_attrs.annotate_many(docs)
    assert many == a and [[m.attributes for m in ms] for ms in many] == [[m.attributes for m in ms] for ms in a]
    # the attributes are the matcher's on the same mentions, with the model's terms as disorder names
    matcher = ContextMatcher(names=with_attrs.resources.term_matcher)
    assert with_attrs.context is not None and with_attrs.context.names is with_attrs.resources.term_matcher
    for doc, ms in zip(docs, a):
        assert [m.attributes for m in ms] == matcher.attributes(doc, ms)


def test_tag_jsonl_has_attributes_unless_no_attributes(small_model: Path, tmp_path: Path):
    args = ["tag", str(TAGGER_FIXTURES / "text"), "--model", str(small_model), "--format", "jsonl", "--quiet"]
    assert main(args + ["--out", str(tmp_path / "with")]) == 0
    assert main(args + ["--out", str(tmp_path / "without"), "--no-attributes"]) == 0

    def mentions(d: Path) -> list[dict]:
        return [m for f in sorted(d.glob("*.jsonl")) for line in f.read_text().splitlines()
                for m in json.loads(line)["mentions"]]

    with_, without = mentions(tmp_path / "with"), mentions(tmp_path / "without")
    assert [m["spans"] for m in with_] == [m["spans"] for m in without] and with_
    assert all("attributes" in m for m in with_) and not any("attributes" in m for m in without)


def test_tag_rejects_a_bad_rules_file_before_any_work(small_model: Path, tmp_path: Path, capsys):
    rules = tmp_path / "r.tsv"
    rules.write_text("no\tnegation\tyes\n", encoding="utf-8")
    code = main(["tag", str(TAGGER_FIXTURES / "text"), "--model", str(small_model), "--out", str(tmp_path / "o"),
                 "--context-rules", str(rules)])
    assert code == 2 and f"{rules}:1: expected 4 or 5 tab-separated columns" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_attributes_take_the_model_terms_as_names(tmp_path: Path, small_model: Path):
    # "non-Hodgkin lymphoma" is a name of the default model's lexicon (HPO): its "non" negates nothing; a model
    # without that name leaves "non" a negation of what follows
    (tmp_path / "text").mkdir()
    text = "History of non-Hodgkin lymphoma with night sweats.\n"
    (tmp_path / "text" / "n1.txt").write_text(text, encoding="utf-8")
    s = text.index("night sweats")
    (tmp_path / "gold").mkdir()
    (tmp_path / "gold" / "n1.pipe.txt").write_text(f"n1.txt||Disease_Disorder||CUI-less||{s}||{s + 12}\n",
                                                   encoding="utf-8")
    negation = {}
    for label, extra in (("default", []), ("small", ["--model", str(small_model)])):
        out = tmp_path / label
        assert main(["attributes", str(tmp_path / "text"), "--mentions", str(tmp_path / "gold"), "--out", str(out),
                     *extra]) == 0
        negation[label] = read_annotations(out)["n1"][0].attributes.negation
    assert negation == {"default": "no", "small": "yes"}
