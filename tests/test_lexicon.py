from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from share_ner.cli import main
from share_ner.document import Document, Mention
from share_ner.errors import InputError, ShareNerError
from share_ner.lexicons import (
    Lexicon,
    LexiconEntry,
    UmlsFilter,
    build_umls_lexicon,
    compile_index,
    default_lexicon,
    gazetteer_lexicon,
    load_lexicon,
    write_lexicon,
)
from share_ner.lexicons import index as index_mod
from share_ner.lexicons.hpo import hpo_filter, hpo_lexicon, hpo_obo_path, parse_obo
from share_ner.lexicons.index import concept_names, make_vectorizer
from share_ner.lexicons.keys import normalized_key, soft_normalize, stem

META = Path(__file__).parent / "fixtures" / "umls" / "META"


# What the fixture gives by default: English, SUPPRESS=N, SNOMEDCT_US, Disorders group, case duplicates dropped,
# fully specified names without their semantic tag ("Diabetes mellitus (disorder)" repeats the preferred term).
DEFAULT_ROWS = [
    ("C0011849", "Diabetes mellitus", True),
    ("C0018681", "Headache", True),
    ("C0020538", "Hypertensive disorder", True),
    ("C0020538", "High blood pressure", False),
    ("C0020538", "Hypertensive disorder, systemic arterial", False),
    ("C0027051", "Myocardial infarction", True),
    ("C0027051", "Heart attack", False),
]


def rows(path: Path) -> list[tuple[str, str, bool]]:
    return [(e.cui, e.name, e.preferred) for e in load_lexicon(path).entries]


def test_umls_default_filter(tmp_path):
    out = tmp_path / "umls.tsv"
    stats = build_umls_lexicon(META, out)
    assert rows(out) == DEFAULT_ROWS
    lex = load_lexicon(out)
    assert lex.entries[0].semtypes == ("T047",) and lex.entries[1].semtypes == ("T184",)
    assert stats.skipped == {"language": 1, "suppressed": 1, "source": 1, "semantic type": 2, "duplicate": 2}
    assert stats.lines_read == 14


def test_semantic_tag_is_dropped_from_snomed_fully_specified_names_only():
    from share_ner.lexicons.umls import SEMANTIC_TAG

    assert SEMANTIC_TAG.sub("", "Fracture of femur (disorder)") == "Fracture of femur"
    assert SEMANTIC_TAG.sub("", "Ulcer (morphologic abnormality)") == "Ulcer"
    assert SEMANTIC_TAG.sub("", "Dialysis (regime/therapy)") == "Dialysis"
    assert SEMANTIC_TAG.sub("", "Hepatitis C (HCV)") == "Hepatitis C (HCV)"  # an abbreviation, not a tag


def test_a_duplicate_that_comes_first_keeps_the_preferred_flag(tmp_path):
    # a fully specified name before its concept's preferred term (MRCONSO is sorted by CUI only)
    shutil.copy(META / "MRSTY.RRF", tmp_path / "MRSTY.RRF")
    (tmp_path / "MRCONSO.RRF").write_text(
        "C0011849|ENG|S|L1276553|PF|S1548463|N|A2988223|121589010|73211009||SNOMEDCT_US|FN|73211009|"
        "Diabetes mellitus (disorder)|9|N|256|\n"
        "C0011849|ENG|P|L0011849|PF|S0030001|Y|A0030001|73211009|73211009||SNOMEDCT_US|PT|73211009|"
        "Diabetes mellitus|9|N|256|\n"
        "C0011849|ENG|S|L0011850|PF|S0030002|Y|A0030002|73211010|73211009||SNOMEDCT_US|SY|73211009|"
        "DM - Diabetes mellitus|9|N|256|\n", encoding="utf-8")
    stats = build_umls_lexicon(tmp_path, tmp_path / "out.tsv")
    assert rows(tmp_path / "out.tsv") == [("C0011849", "Diabetes mellitus", True),
                                          ("C0011849", "DM - Diabetes mellitus", False)]
    assert stats.entries_written == 2 and stats.skipped == {"duplicate": 1}


def test_umls_other_source_and_findings(tmp_path):
    out = tmp_path / "umls.tsv"
    build_umls_lexicon(META, out, UmlsFilter.disorders(["SNOMEDCT_US", "MSH"]))
    assert ("C0020538", "Hypertension", False) in rows(out) and len(rows(out)) == 8
    build_umls_lexicon(META, out, UmlsFilter.disorders(include_findings=True))
    assert rows(out) == DEFAULT_ROWS + [("C0262926", "Medical history", True)]


def test_umls_split_and_gzip_files(tmp_path):
    data = (META / "MRCONSO.RRF").read_bytes()
    split = tmp_path / "split"
    split.mkdir()
    shutil.copy(META / "MRSTY.RRF", split / "MRSTY.RRF")
    cut = data.index(b"Heart attack")  # parts cut in the middle of a line
    (split / "MRCONSO.RRF.aa").write_bytes(data[:500])
    (split / "MRCONSO.RRF.ab").write_bytes(data[500:cut])
    (split / "MRCONSO.RRF.ac").write_bytes(data[cut:])
    build_umls_lexicon(split, tmp_path / "a.tsv")
    assert rows(tmp_path / "a.tsv") == DEFAULT_ROWS

    gz = tmp_path / "gz"
    gz.mkdir()
    (gz / "MRCONSO.RRF.gz").write_bytes(gzip.compress(data.replace(b"\n", b"\r\n")))  # CRLF too
    (gz / "MRSTY.RRF.gz").write_bytes(gzip.compress((META / "MRSTY.RRF").read_bytes()))
    build_umls_lexicon(gz, tmp_path / "b.tsv")
    assert rows(tmp_path / "b.tsv") == DEFAULT_ROWS


def test_umls_bad_input(tmp_path):
    with pytest.raises(InputError, match="no MRCONSO.RRF"):
        build_umls_lexicon(tmp_path, tmp_path / "x.tsv")
    shutil.copy(META / "MRCONSO.RRF", tmp_path / "MRCONSO.RRF")
    with pytest.raises(InputError, match="no MRSTY.RRF"):
        build_umls_lexicon(tmp_path, tmp_path / "x.tsv")
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(META / "MRSTY.RRF", bad / "MRSTY.RRF")
    lines = (META / "MRCONSO.RRF").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = lines[3][:40] + "\n"  # truncated line 4
    (bad / "MRCONSO.RRF").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError) as err:
        build_umls_lexicon(bad, tmp_path / "x.tsv")
    assert str(err.value).startswith(f"{bad / 'MRCONSO.RRF'}:4: malformed MRCONSO line")
    assert not (tmp_path / "x.tsv").exists()


@pytest.mark.parametrize("at", [0, 2, 9])
@pytest.mark.parametrize("gz", [False, True])
def test_umls_bad_utf8_names_its_line(tmp_path, at: int, gz: bool):
    """The text reader decodes blocks of many lines; the error names the line of the bad byte, not the block's."""
    lines = (META / "MRCONSO.RRF").read_bytes().splitlines(keepends=True)
    lines[at] = lines[at].replace(b"|ENG|", b"|EN\xffG|", 1)
    data = b"".join(lines)
    (tmp_path / ("MRCONSO.RRF.gz" if gz else "MRCONSO.RRF")).write_bytes(gzip.compress(data) if gz else data)
    shutil.copy(META / "MRSTY.RRF", tmp_path / "MRSTY.RRF")
    with pytest.raises(InputError) as err:
        build_umls_lexicon(tmp_path, tmp_path / "x.tsv")
    assert str(err.value).startswith(f"{tmp_path / ('MRCONSO.RRF.gz' if gz else 'MRCONSO.RRF')}:{at + 1}: not valid UTF-8")


def test_lexicon_loader_rejects_bad_files(tmp_path):
    p = tmp_path / "l.tsv"
    p.write_text("cui\tname\tsource\tsemtypes\tpreferred\tcolour\n", encoding="utf-8")
    with pytest.raises(InputError, match=r":1: unknown lexicon column\(s\) 'colour'"):
        load_lexicon(p)
    p.write_text("cui\tname\tsource\tsemtypes\tpreferred\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty lexicon"):
        load_lexicon(p)
    p.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="empty lexicon"):
        load_lexicon(p)
    p.write_text("cui\tname\tsource\tsemtypes\tpreferred\nC1\tx\tS\t\tY\nC2\ty\tS\n", encoding="utf-8")
    with pytest.raises(InputError, match=r":3: found 3 tab-separated fields"):
        load_lexicon(p)
    p.write_text("name\tcui\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing lexicon column"):
        load_lexicon(p)


def test_lexicon_round_trip_and_column_order(tmp_path):
    entries = [LexiconEntry("C1", "Tab\tinside", "SRC", ("T047", "T191"), True, 3), LexiconEntry("C2", "b")]
    p = tmp_path / "l.tsv"
    write_lexicon(p, entries)
    lex = load_lexicon(p)
    assert lex.entries[0] == LexiconEntry("C1", "Tab inside", "SRC", ("T047", "T191"), True, 3)
    assert lex.entries[1] == LexiconEntry("C2", "b", "", (), False, 1)
    p.write_text("preferred\tname\tcui\tsemtypes\tsource\nN\tfever\tC0015967\tT184\tX\n", encoding="utf-8")
    assert load_lexicon(p).entries == (LexiconEntry("C0015967", "fever", "X", ("T184",), False),)


def test_index_memos_live_with_the_search_results(tmp_path, monkeypatch):
    import pickle

    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    index = compile_index(Lexicon.from_entries([LexiconEntry("C1", "Heart attack")]), use_cache=False)
    index.memo("derived")["q"] = 1
    assert index.memo("derived") == {"q": 1} and index.memo("other") == {}
    assert pickle.loads(pickle.dumps(index)).memo("derived") == {}  # per process, never pickled
    index.forget_searches()
    assert index.memo("derived") == {}


def test_index_cache_is_written_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(index_mod, "_MEMORY", {})
    lex = Lexicon.from_entries([LexiconEntry("C1", "Heart attack"), LexiconEntry("C2", "Headache")])
    first = compile_index(lex)
    files = list((tmp_path / "cache").glob("index-*.pkl"))
    assert len(files) == 1 and lex.content_hash[:40] in files[0].name
    monkeypatch.setattr(index_mod, "_MEMORY", {})
    second = compile_index(lex)
    assert second is not first and second.unique_names == first.unique_names
    assert second.search(["hart attack"], 2)[0][0][0] == second.unique_names.index("heart attack")


def test_query_vectors_are_those_of_the_fitted_vectorizer_bit_for_bit(tmp_path, monkeypatch):
    import pickle
    import random

    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    index = compile_index(default_lexicon())
    names = random.Random(3).sample(index.unique_names, 3000)
    odd = ["", "a", "zz", "qqqq xxxx", "heart attack", "naïve ß", "fever  ", "x" * 300]
    queries = names + odd + [n[::-1] for n in names[:500]]  # reversed names: 3-grams out of the vocabulary
    fitted = make_vectorizer().fit(index.unique_names)  # scikit-learn's, fitted as the index was
    assert fitted.vocabulary_ == index.vectorizer.vocabulary_
    ours, theirs = index.vectors(queries), fitted.transform(queries)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert (ours != theirs).nnz == 0 and ours.nnz == theirs.nnz
    assert ours[len(names)].nnz == 0  # the empty string has no 3-gram
    # the analyzer built on first use is not written into the cached index
    assert "_analyzer" in index.__dict__ and "_analyzer" not in pickle.loads(pickle.dumps(index)).__dict__


def test_search_results_are_remembered_and_the_same_alone_or_in_a_batch(tmp_path, monkeypatch):
    import pickle

    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(index_mod, "_MEMORY", {})
    index = compile_index(default_lexicon())
    queries = ["hart attack", "abnormal heart rhythm", "zzzz", "fever", "hart attack", "renal failure acute"]
    alone = [index.search([q], 10)[0] for q in queries]
    index.forget_searches()
    batch = index.search(queries, 10)
    assert batch == alone and batch[0] == batch[4] and batch[2] == []
    assert all(len(hits) <= 10 and [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)
               for hits in batch)
    assert index.search(queries[:1], 3) == [alone[0][:3]]  # another k is another search
    assert "_found" not in pickle.loads(pickle.dumps(index)).__dict__
    monkeypatch.setattr(index_mod, "SEARCH_MEMO", 2)  # full: a new query empties the memo first
    assert len(index.__dict__["_found"]) == 6 and index.search(["heart attack"], 10)
    assert list(index.__dict__["_found"]) == [("heart attack", 10)]
    assert index.search(queries, 10) == alone
    # full again, with a batch of one remembered query and one new: both come back
    assert index.search(["fever", "heart attack"], 10) == [alone[3], index.search(["heart attack"], 10)[0]]
    # products cut into pieces (down to one query each, empty queries among them) give the same hits
    monkeypatch.setattr(index_mod, "SEARCH_MEMO", 100)
    queries += ["", "zz", "acute renal failure", "q"]
    index.forget_searches()
    whole = index.search(queries, 10)
    for limit in (1, 20_000):
        monkeypatch.setattr(index_mod, "SEARCH_PRODUCT_ENTRIES", limit)
        pieces = list(index._product_chunks(index.vectors(queries)))
        assert pieces[0][0] == 0 and pieces[-1][1] == len(queries) and 1 < len(pieces) <= len(queries)
        assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))
        index.forget_searches()
        assert index.search(queries, 10) == whole


def test_pair_cosines_are_those_of_the_search_and_of_the_query_and_name_vectors(tmp_path, monkeypatch):
    import pickle

    import numpy as np

    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path / "cache"))
    index = compile_index(default_lexicon())
    queries = ["hart attack", "abnormal heart rhythm", "zzzz", "fever", "renal failure acute", ""]
    pairs = [(q, u) for q, hits in zip(queries, index.search(queries, 10)) for u, _ in hits]
    pairs += [(q, u) for q in queries for u in (0, 17, len(index.unique_names) - 1)]  # names sharing nothing too
    got = index.cosines(pairs)
    # the definition: the dot product of the two tf-idf rows, each analysed afresh
    q = index.vectors([p[0] for p in pairs])
    n = index.vectors([index.unique_names[p[1]] for p in pairs])
    assert got == [float(x) for x in np.asarray(q.multiply(n).sum(axis=1)).ravel()]
    found = {(q, u): c for q, hits in zip(queries, index.search(queries, 10)) for u, c in hits}
    assert found and all(abs(got[i] - found[p]) < 1e-6 for i, p in enumerate(pairs) if p in found)
    assert got[-1] == 0.0 and index.cosines([]) == []
    assert "_by_name" not in pickle.loads(pickle.dumps(index)).__dict__  # built on first use, not cached


def test_string_keys():
    assert normalized_key("Cancers of the Breast") == normalized_key("breast cancer")
    assert normalized_key("Tumours, malignant") == normalized_key("malignant tumor")
    assert normalized_key("infected wounds") == normalized_key("wound infected")
    assert soft_normalize("Haemorrhage  (Oedema)") == "hemorrhage edema"
    # plurals fold as in the term matcher: -ys, Greek and Latin plurals
    assert normalized_key("Polycystic kidneys") == normalized_key("polycystic kidney")
    assert normalized_key("bone metastases") == normalized_key("Bone metastasis")
    assert normalized_key("renal calculi") == normalized_key("renal calculus")
    assert stem("cervical") != stem("cervix")  # "cervical" is of the neck as often as of the cervix


OBO = """format-version: 1.2

[Term]
id: HP:0001250
name: Seizure
synonym: "Epilepsy" RELATED layperson []
synonym: "Seizures" EXACT plural_form []
synonym: "Fits" BROAD []
xref: UMLS:C0014544
xref: UMLS:C0036572

[Term]
id: HP:0000001
name: All

[Term]
id: HP:0000002
name: Old term
is_obsolete: true
xref: UMLS:C9999999

[Typedef]
id: part_of
name: part of
"""


def test_parse_obo_names_synonyms_xrefs_obsolete():
    got = [(e.cui, e.name, e.preferred) for e in parse_obo(OBO)]
    assert got == [("C0014544", "Seizure", True), ("C0014544", "Epilepsy", False), ("C0014544", "Seizures", False),
                   ("C0036572", "Seizure", True), ("C0036572", "Epilepsy", False), ("C0036572", "Seizures", False)]


BRANCHED_OBO = Path(__file__).parent / "fixtures" / "hpo" / "branches.obo"  # phenotypes, modifier, inheritance


def test_parse_obo_keeps_the_branches_asked_for():
    text = BRANCHED_OBO.read_text(encoding="utf-8")
    everything = [e.name for e in parse_obo(text)]
    assert everything == ["Phenotypic abnormality", "Seizure", "Seizures", "Epileptic seizure",
                          "Autosomal dominant inheritance", "Clinical modifier", "Position", "Location"]
    # the phenotypic abnormalities only: the root itself names no phenotype; inheritance and modifiers left out
    assert [e.name for e in parse_obo(text, ("HP:0000118",))] == ["Seizure", "Seizures", "Epileptic seizure"]
    assert [e.name for e in parse_obo(text, ("HP:0012823",))] == ["Position", "Location"]


def test_hpo_filter_is_data_with_a_reason_per_class(tmp_path):
    keep = hpo_filter()
    assert keep.branches == ("HP:0000118",)
    assert not keep.labels("Abnormality of the kidney") and not keep.labels("Increased serum ferritin")
    assert keep.labels("Seizure") and keep.labels("Abnormally low-pitched voice")
    bad = tmp_path / "filter.tsv"
    bad.write_text("# a comment\nrule\tvalue\treason\nbranch\tHP:0000118\tphenotypes\nkeep\tHP:1\tx\n",
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"filter.tsv:4: expected rule \(branch"):
        hpo_filter(bad)
    bad.write_text("rule\tvalue\treason\nbranch\tHP:0000118\t\n", encoding="utf-8")
    with pytest.raises(InputError, match="filter.tsv:2"):  # a class needs its reason
        hpo_filter(bad)


def test_default_lexicon_has_no_name_of_hpo_s_other_branches():
    text = hpo_obo_path().read_text(encoding="utf-8")
    phenotype_names = {e.name.lower() for e in parse_obo(text, ("HP:0000118",))}
    others = {e.name.lower() for e in parse_obo(text)} - phenotype_names
    assert {"position", "distal", "acute", "chronic", "mild", "severe", "onset",
            "autosomal dominant inheritance"} <= others
    assert not others & {e.name.lower() for e in default_lexicon().entries}
    assert others <= {e.name.lower() for e in hpo_lexicon(all_branches=True).entries}


def test_lexicon_build_hpo_keeps_other_branches_only_when_asked(tmp_path, capsys):
    out = tmp_path / "hpo.tsv"
    assert main(["lexicon", "build", "--hpo", "--out", str(out)]) == 0
    names = {e.name for e in load_lexicon(out).entries}
    assert "Seizure" in names and "Position" not in names and "Autosomal dominant inheritance" not in names
    assert main(["lexicon", "build", "--hpo", "--all-branches", "--out", str(out)]) == 0
    names = {e.name for e in load_lexicon(out).entries}
    assert {"Seizure", "Position", "Autosomal dominant inheritance"} <= names
    assert main(["lexicon", "build", "--umls", str(META), "--all-branches", "--out", str(out)]) == 2
    assert "--all-branches is for --hpo" in capsys.readouterr().err


def test_default_lexicon_is_hpo():
    lex = default_lexicon()
    assert lex.name == "hpo" and lex.path is None
    seizure = {(e.name, e.preferred) for e in lex.entries if e.cui == "C0014544"}
    assert ("Seizure", True) in seizure and ("Epileptic seizure", False) in seizure
    assert 11_000 <= len(lex.cuis) <= 15_000
    assert load_lexicon("hpo") is lex


def test_gazetteer_counts_discontiguous_mentions():
    doc = Document("n1", "Abdomen soft, tender. Abdomen tender.")
    gold = {"n1": [Mention("n1", ((0, 7), (14, 20)), "C0000737"), Mention("n1", ((22, 36),), "C0000737"),
                   Mention("n1", ((22, 29),), "CUI-less")]}
    lex = gazetteer_lexicon({"n1": doc}, gold)
    assert [(e.name, e.cui, e.count) for e in lex.entries] == [
        ("Abdomen tender", "C0000737", 2), ("Abdomen", "CUI-less", 1)]


def test_cli_lexicon_build(tmp_path, capsys):
    out = tmp_path / "u.tsv"
    assert main(["lexicon", "build", "--umls", str(META), "--out", str(out), "--sab", "MSH"]) == 0
    assert len(rows(out)) == 8
    assert "8 strings of 4 concepts" in capsys.readouterr().err
    text = tmp_path / "text"
    gold = tmp_path / "gold"
    text.mkdir()
    gold.mkdir()
    (text / "n1.txt").write_text("Pt has HTN.", encoding="utf-8")
    (gold / "n1.pipe.txt").write_text("n1.txt||Disease_Disorder||C0020538||7||10\n", encoding="utf-8")
    assert main(["lexicon", "build", "--gold", str(gold), "--text", str(text), "--out", str(out)]) == 0
    assert [(e.cui, e.name, e.source) for e in load_lexicon(out).entries] == [("C0020538", "HTN", "TRAIN")]


def test_cli_lexicon_errors(tmp_path, capsys):
    assert main(["lexicon", "build", "--umls", str(tmp_path), "--out", str(tmp_path / "x.tsv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no MRCONSO.RRF" in err[0]
    assert main(["lexicon", "build", "--gold", str(tmp_path), "--out", str(tmp_path / "x.tsv")]) == 2
    assert "--gold needs --text" in capsys.readouterr().err
    shutil.copy(META / "MRSTY.RRF", tmp_path / "MRSTY.RRF")
    (tmp_path / "MRCONSO.RRF").write_text((META / "MRCONSO.RRF").read_text(encoding="utf-8") + "C0000001|ENG|P|\n",
                                          encoding="utf-8")
    assert main(["lexicon", "build", "--umls", str(tmp_path), "--out", str(tmp_path / "x.tsv")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{tmp_path / 'MRCONSO.RRF'}:15: malformed MRCONSO line" in err[0]


def test_empty_build_is_an_error(tmp_path):
    with pytest.raises(ShareNerError, match="no MRCONSO string passed"):
        build_umls_lexicon(META, tmp_path / "x.tsv", UmlsFilter.disorders(["NOSUCHSAB"]))


def test_gazetteer_build_names_the_gold_file_and_line_of_a_span_past_the_note(tmp_path):
    from share_ner.lexicons import build_gazetteer_lexicon

    (tmp_path / "text").mkdir()
    (tmp_path / "gold").mkdir()
    (tmp_path / "text" / "n1.txt").write_text("He has chest pain and fever.\n")
    gold = tmp_path / "gold" / "n1.pipe.txt"
    gold.write_text("n1.txt||Disease_Disorder||CUI-less||7||17\nn1.txt||Disease_Disorder||CUI-less||22||27\n"
                    "n1.txt||Disease_Disorder||CUI-less||22||99\n")
    with pytest.raises(InputError) as err:
        build_gazetteer_lexicon(tmp_path / "gold", tmp_path / "text")
    assert str(err.value).startswith(f"{gold}:3: span 22-99 of note n1 ends past the note's end")


def test_concept_names_are_the_preferred_names_and_come_from_the_cache_later(tmp_path, monkeypatch):
    monkeypatch.setenv("SHARE_NER_CACHE", str(tmp_path))
    entries = [LexiconEntry("C1", "heart attack"), LexiconEntry("C1", "Myocardial infarction", preferred=True),
               LexiconEntry("C2", "fever")]
    lexicon = Lexicon.from_entries(entries, "names")
    assert concept_names(lexicon) == {"C1": "Myocardial infarction", "C2": "fever"}

    def unread() -> list[LexiconEntry]:
        raise AssertionError("the entries were read again")

    # the same content, its entries never read: the names come from the cache by content hash
    again = Lexicon(None, lexicon.content_hash, name="names", loader=unread)
    assert concept_names(again) == {"C1": "Myocardial infarction", "C2": "fever"}
