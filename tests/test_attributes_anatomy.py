"""Body location: the anatomy lexicons (packaged list, UMLS Anatomy group) and where a mention's site is found."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from share_ner.attributes import AnatomyMatcher, ContextMatcher
from share_ner.cli import main
from share_ner.document import Document, Mention
from share_ner.errors import InputError
from share_ner.formats.share2014 import format_line, read_share2014
from share_ner.lexicons import UmlsFilter, build_umls_lexicon, load_lexicon
from share_ner.lexicons.lexicon import parse_lexicon

META = Path(__file__).parent / "fixtures" / "umls" / "anatomy" / "META"

SITES = parse_lexicon("cui\tname\tsource\tsemtypes\tpreferred\n"
                      "C0024109\tlung\tt\t\tY\n"
                      "C0225897\tleft ventricular\tt\t\tN\n"
                      "CUI-less\tflank\tt\t\tY\n"
                      "C0023884\tliver\tt\t\tY\n", "sites.tsv")


def mention(text: str, phrase: str, *more: str, at: int = 0) -> Mention:
    s = text.index(phrase, at)
    spans = [(s, s + len(phrase))]
    for p in more:
        t = text.index(p, spans[-1][1])
        spans.append((t, t + len(p)))
    return Mention("n", tuple(spans), "C")


def sites(text: str, ms: list[Mention], matcher: AnatomyMatcher | None = None) -> list[tuple[str, str] | None]:
    got = (matcher or AnatomyMatcher(SITES)).locate(text, ms)
    return [None if g is None else (g[0], text[g[1][0]:g[1][1]]) for g in got]


def test_a_site_inside_the_mention_span() -> None:
    text = "Echo: left ventricular hypertrophy. Right lung mass. Flank pain."
    ms = [mention(text, "left ventricular hypertrophy"), mention(text, "lung mass"), mention(text, "Flank pain")]
    assert sites(text, ms) == [("C0225897", "left ventricular"), ("C0024109", "lung"), ("CUI-less", "Flank")]


def test_a_mention_that_is_only_a_site_name_has_no_location() -> None:
    text = "Liver: normal."
    assert sites(text, [mention(text, "Liver")]) == [None]


def test_a_site_near_the_mention_in_its_clause() -> None:
    text = "There is a mass in the left lung and a nodule."
    assert sites(text, [mention(text, "mass"), mention(text, "nodule")]) == [("C0024109", "lung"), None]
    # more than three words between: not its site
    text = "A mass was seen by the radiologist near the lung."
    assert sites(text, [mention(text, "mass")]) == [None]
    # a clause or sentence ends between: not its site
    for text in ("Lung: no mass.", "Lung clear. Mass.", "Mass, liver normal.", "Mass\nliver"):
        assert sites(text, [mention(text, "ass")]) == [None], text
    # before the mention, within the window
    text = "liver with a mass"
    assert sites(text, [mention(text, "mass")]) == [("C0023884", "liver")]


def test_another_mentions_own_site_is_not_taken() -> None:
    text = "mass and lung nodule"
    assert sites(text, [mention(text, "mass"), mention(text, "lung nodule")]) == [None, ("C0024109", "lung")]


def test_discontiguous_mention_and_case() -> None:
    text = "LUNG: WITH MASS. the liver is not enlarged"
    assert sites(text, [mention(text, "LUNG", "MASS"), mention(text, "liver", "enlarged")]) == [
        ("C0024109", "LUNG"), ("C0023884", "liver")]
    text = "İ lung mass"  # lower case changes the length of the note: matched case-insensitively instead
    assert sites(text, [mention(text, "lung mass")]) == [("C0024109", "lung")]


def test_the_packaged_list_and_the_attribute_step() -> None:
    text = "No pleural effusion. Lung mass. Abdominal pain. Pain in the right knee. No pain."
    ms = [mention(text, "pleural effusion"), mention(text, "Lung mass"), mention(text, "Abdominal pain"),
          mention(text, "Pain in"), mention(text, "pain", at=text.index("No pain"))]
    got = [m.attributes for m in ContextMatcher().assign(Document("n", text), ms)]
    assert [a.body_location for a in got] == ["NULL", "C0024109", "C0000726", "C0022742", "NULL"]
    assert [text[s:e] for a in got for s, e in a.cues.get("body_location", ())] == ["Lung", "Abdominal", "knee"]
    assert got[0].negation == "yes" and "body_location" not in got[0].cues
    # the share2014 line carries the site's CUI and its span as the cue
    line = format_line(ms[1].with_attributes(got[1]))
    s = text.index("Lung")
    assert line.split("|")[17:19] == ["C0024109", f"{s}-{s + 4}"]
    assert read_share2014_line(line).attributes.to_dict() == got[1].to_dict()
    # without an anatomy matcher, body location stays NULL; the matcher pickles with its sites
    bare = ContextMatcher(anatomy=None).assign(Document("n", text), ms)
    assert all(m.attributes.body_location == "NULL" for m in bare)
    again = pickle.loads(pickle.dumps(ContextMatcher()))
    assert [m.attributes.body_location for m in again.assign(Document("n", text), ms)] == [a.body_location
                                                                                            for a in got]


def read_share2014_line(line: str) -> Mention:
    from share_ner.formats.share2014 import parse_line

    return parse_line(line)


def test_umls_anatomy_lexicon_from_rrf(tmp_path: Path) -> None:
    out = tmp_path / "anatomy.tsv"
    stats = build_umls_lexicon(META, out, UmlsFilter.anatomy())
    entries = load_lexicon(out).entries
    # hand-counted from the fixture: the disorder (T047) is left out, and of the anatomy concepts' 10 lines the
    # MSH and French strings, the suppressed one and the fully specified name repeating "Abdomen" are dropped
    assert sorted((e.cui, e.name, e.preferred) for e in entries) == [
        ("C0000726", "Abdomen", False), ("C0000726", "Abdominal structure", True),
        ("C0024109", "Lung", False), ("C0024109", "Lung structure", True),
        ("C0225897", "Left ventricle", False), ("C0225897", "Left ventricular structure", True)]
    assert stats.lines_read == 11 and stats.concepts_written == 3
    assert stats.skipped == {"semantic type": 1, "source": 1, "language": 1, "suppressed": 1, "duplicate": 1}
    assert {e.semtypes for e in entries} == {("T029",), ("T023",)}
    # the disorder builder on the same release keeps the disorder only
    build_umls_lexicon(META, tmp_path / "dis.tsv")
    assert [e.name for e in load_lexicon(tmp_path / "dis.tsv").entries] == ["Pneumonia"]


def test_cli_build_then_attributes_with_the_site_anatomy(tmp_path: Path, capsys) -> None:
    lex = tmp_path / "anatomy.tsv"
    assert main(["lexicon", "build", "--umls", str(META), "--anatomy", "--out", str(lex)]) == 0
    assert "6 strings of 3 concepts" in capsys.readouterr().err
    notes = tmp_path / "notes"
    notes.mkdir()
    text = "Hypertrophy of the left ventricle. Liver lesion. Abdomen: no tenderness.\n"
    (notes / "n1.txt").write_text(text)
    ms = [mention(text, "Hypertrophy"), mention(text, "Liver lesion"), mention(text, "tenderness")]
    pipe = tmp_path / "gold.pipe.txt"
    pipe.write_text("".join(f"n1.txt||Disease_Disorder||C||{m.start}||{m.spans[-1][1]}\n" for m in ms))
    for extra, want in (([], ["C0225897", "C0023884", "NULL"]), (["--anatomy", str(lex)], ["C0225897", "NULL", "NULL"])):
        out = tmp_path / ("site" if extra else "packaged")
        assert main(["attributes", str(notes), "--mentions", str(pipe), "--out", str(out), *extra]) == 0
        got = read_share2014(out / "n1.pipe.txt")
        assert [m.attributes.body_location for m in got] == want
        s = text.index("left ventricle")
        assert got[0].attributes.cues["body_location"] == ((s, s + len("left ventricle")),)


def test_bad_anatomy_input_is_one_line_naming_the_file(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("cui\tname\tsource\tsemtypes\tpreferred\nC1\tlung\tx\t\tmaybe\n")
    with pytest.raises(InputError, match=r"bad.tsv:2: preferred flag"):
        AnatomyMatcher.load(bad)
    notes = tmp_path / "n"
    notes.mkdir()
    (notes / "a.txt").write_text("Lung mass.\n")
    assert main(["tag", str(notes), "--anatomy", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "bad.tsv:2: preferred flag" in capsys.readouterr().err
    assert main(["tag", str(notes), "--anatomy", str(bad), "--no-attributes"]) == 2
    assert "cannot go with --no-attributes" in capsys.readouterr().err
    assert main(["lexicon", "build", "--hpo", "--anatomy", "--out", str(tmp_path / "x.tsv")]) == 2
    assert "--anatomy builds from UMLS" in capsys.readouterr().err


def test_tag_annotator_takes_the_site_anatomy(small_model: Path, tmp_path: Path) -> None:
    from share_ner.batch.annotate import load_annotator

    lex = tmp_path / "anatomy.tsv"
    build_umls_lexicon(META, lex, UmlsFilter.anatomy())
    annotate = load_annotator(small_model, anatomy=str(lex))
    context = annotate.pipeline.context
    assert sorted(context.anatomy.cuis) == ["abdomen", "abdominal structure", "left ventricle",
                                            "left ventricular structure", "lung", "lung structure"]
    text = "Mass in the left ventricle. Liver lesion."
    got = context.assign(Document("n", text), [mention(text, "Mass"), mention(text, "Liver lesion")])
    assert [m.attributes.body_location for m in got] == ["C0225897", "NULL"]
