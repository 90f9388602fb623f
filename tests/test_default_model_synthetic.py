"""The synthetic corpus, its markup converter and the template generator."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from share_ner.default_model.markup import MARKUP_DIR, SHARE_DIR, load_default_corpus, parse_markup, read_markup_dir
from share_ner.default_model.synthetic import SynthConfig, coordination_heads, generate_template_docs
from share_ner.default_model.terms import Term, hpo_terms, read_term_list
from share_ner.document import CUI_LESS, Mention
from share_ner.errors import InputError
from share_ner.formats.share import format_pipe, read_pipe_dir


def texts(doc_text: str, mentions: list[Mention]) -> list[tuple[str, str]]:
    return [(m.text(doc_text, " ... "), m.cui) for m in mentions]


def test_contiguous_markup_offsets():
    doc, mentions = parse_markup("Denies [[chest pain|C0008031]] or [[SOB]].", "n1")
    assert doc.text == "Denies chest pain or SOB."
    assert [m.spans for m in mentions] == [((7, 17),), ((21, 24),)]
    assert texts(doc.text, mentions) == [("chest pain", "C0008031"), ("SOB", CUI_LESS)]
    assert all(m.doc_id == "n1" for m in mentions)


def test_discontiguous_and_shared_head_markup():
    markup = ("The {{la:left atrium}} is moderately {{la:dilated|C0344720}}.\n"
              "The {{ar:aortic root}} and {{aa:ascending aorta}} are mildly {{ar,aa:dilated}}.")
    doc, mentions = parse_markup(markup, "echo")
    assert doc.text == ("The left atrium is moderately dilated.\n"
                        "The aortic root and ascending aorta are mildly dilated.")
    assert texts(doc.text, mentions) == [
        ("left atrium ... dilated", "C0344720"),
        ("aortic root ... dilated", CUI_LESS),
        ("ascending aorta ... dilated", CUI_LESS),
    ]
    # The shared head is one span used by both mentions.
    assert mentions[1].spans[1] == mentions[2].spans[1] == (86, 93)


def test_fragments_split_by_spaces_merge_into_one_span():
    doc, mentions = parse_markup("Severe {{h:hepatic}} or {{c:cardiac}} {{h,c:disease}}", "x")
    assert texts(doc.text, mentions) == [("hepatic ... disease", CUI_LESS), ("cardiac disease", CUI_LESS)]
    assert mentions[0].spans == ((7, 14), (26, 33)) and mentions[1].spans == ((18, 33),)


def test_crlf_is_kept_and_counted():
    doc, mentions = parse_markup("A:\r\n[[fever|C0015967]]\r\n", "crlf")
    assert doc.text == "A:\r\nfever\r\n"
    assert mentions[0].spans == ((4, 9),)


@pytest.mark.parametrize("markup, line, what", [
    ("ok\n[[fever|C12]]", 2, "not C<7 digits>"),
    ("ok\nok\n{{m1:left atrium}} is big", 3, "only one fragment"),
    ("[[ fever]]", 1, "space-padded"),
    ("x\n{{left atrium}}", 2, "needs ids"),
    ("fine\n[[fever", 2, "unbalanced"),
    ("{{a:x|C0000001}} {{a:y|C0000002}}", 1, "two CUIs"),
])
def test_bad_markup_names_file_and_line(markup, line, what):
    with pytest.raises(InputError) as info:
        parse_markup(markup, "bad", "bad.markup")
    assert info.value.line == line
    assert what in str(info.value)
    assert str(info.value).startswith(f"bad.markup:{line}: ")


def test_committed_share_files_match_the_markup():
    docs, gold = read_markup_dir(MARKUP_DIR)
    share_docs, share_gold = load_default_corpus(SHARE_DIR)
    assert set(docs) == set(share_docs)
    for doc_id, doc in docs.items():
        assert share_docs[doc_id].text == doc.text, doc_id
        assert share_gold[doc_id] == gold[doc_id], doc_id
        # The pipe files are exactly what the ShARe writer makes of these mentions.
        pipe = (SHARE_DIR / "gold" / f"{doc_id}.pipe.txt").read_bytes().decode("utf-8")
        assert pipe == format_pipe(gold[doc_id])


def test_every_bracketed_mention_text_is_a_mention():
    """Each ``[[...]]`` of the markup comes out as a one-span mention with that text and CUI."""
    docs, gold = load_default_corpus()
    for path in sorted(MARKUP_DIR.glob("*.markup")):
        doc_id = path.name[: -len(".markup")]
        markup = path.read_bytes().decode("utf-8")
        expected = Counter(
            (m.group(1), m.group(2) or CUI_LESS) for m in re.finditer(r"\[\[(.*?)(?:\|(C\d{7}))?\]\]", markup)
        )
        doc = docs[doc_id]
        got = Counter((m.text(doc.text), m.cui) for m in gold[doc_id] if not m.is_discontiguous)
        assert not expected - got, (doc_id, expected - got)
        for m in gold[doc_id]:
            for s, e in m.spans:
                span = doc.text[s:e]
                assert span and span == span.strip(), (doc_id, m)


def test_corpus_size_and_variety():
    docs, gold = load_default_corpus()
    mentions = [m for ms in gold.values() for m in ms]
    discontiguous = sum(m.is_discontiguous for m in mentions)
    assert len(docs) >= 40
    assert len(mentions) >= 600
    assert discontiguous / len(mentions) >= 0.08
    assert any("\r\n" in d.text for d in docs.values())
    assert any("[**" in d.text for d in docs.values())
    # Shared heads: two mentions ending on the same span.
    assert any(len({m.spans[-1] for m in ms if m.is_discontiguous}) < sum(m.is_discontiguous for m in ms)
               for ms in gold.values())
    prefixes = {doc_id.split("_")[0].rstrip("0123456789") for doc_id in docs}
    assert {"ds", "rad", "echo", "ecg", "prog", "cons", "elig"} <= prefixes


def test_reader_reads_the_gold_directory():
    gold = read_pipe_dir(SHARE_DIR / "gold")
    assert sum(len(v) for v in gold.values()) >= 600


PROJECT = [Term("chest pain", "C0008031"), Term("COPD", "C0024117"), Term("renal failure")]
HPO = [Term("Seizure", "C0036572"), Term("Abnormality of the heart"), Term("Increased serum urate level"),
       Term("Short stature", "C0349588")]


def test_generator_is_deterministic():
    config = SynthConfig(n_docs=20, seed=7)
    a = generate_template_docs(PROJECT, HPO, config)
    b = generate_template_docs(PROJECT, HPO, config)
    assert a == b
    c = generate_template_docs(PROJECT, HPO, SynthConfig(n_docs=20, seed=8))
    assert c != a


def test_generated_mentions_come_from_the_term_pools():
    docs, gold = generate_template_docs(PROJECT, HPO, SynthConfig(n_docs=60, seed=3))
    assert len(docs) == 60
    allowed = {"chest pain", "copd", "renal failure", "seizure", "short stature", "hypersensitivity", "allergy"}
    seen = set()
    cuis = {}
    for doc_id, ms in gold.items():
        text = docs[doc_id].text
        for m in ms:
            if m.is_discontiguous:
                continue
            words = m.text(text)
            if words.lower() in allowed:
                seen.add(words.lower())
                cuis[words.lower()] = m.cui
            else:
                # Shared-head coordinations ("cardiac disease") and site findings ("spleen enlarged").
                assert len(words.split()) == 2, words
    # HPO grouping terms and lab values are never used.
    assert "abnormality of the heart" not in seen and "increased serum urate level" not in seen
    assert {"chest pain", "seizure"} <= seen
    assert cuis["chest pain"] == "C0008031" and cuis.get("renal failure", CUI_LESS) == CUI_LESS
    assert any(m.is_discontiguous for ms in gold.values() for m in ms)
    assert any("\r\n" in d.text for d in docs.values()) and any("\r" not in d.text for d in docs.values())


OBO = Path(__file__).parent / "fixtures" / "hpo" / "branches.obo"  # phenotypes, a modifier, inheritance


def test_hpo_terms_keeps_phenotypic_abnormalities():
    assert hpo_terms(OBO) == [
        Term("Seizure", "C0036572"),
        Term("Seizures", "C0036572"),
        Term("Bilateral tonic-clonic seizure", CUI_LESS),
    ]


def test_term_list_rejects_bad_rows(tmp_path: Path):
    path = tmp_path / "terms.tsv"
    path.write_text("term\tcui\nfever\tC0015967\nrash\tC123\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_term_list(path)
    assert info.value.line == 3
    path.write_text("name\tcui\n", encoding="utf-8")
    with pytest.raises(InputError):
        read_term_list(path)


def test_coordination_heads_from_two_word_names():
    terms = [Term("gastric ulcer"), Term("duodenal ulcer"), Term("peptic ulcer"), Term("renal failure"),
             Term("Gastric ulcer"), Term("skin ulcer of foot")]
    assert coordination_heads(terms) == {"ulcer": ["duodenal", "gastric", "peptic"]}


def test_term_coordinations_are_shared_head_mentions():
    project = [Term("gastric ulcer"), Term("duodenal ulcer")]
    docs, gold = generate_template_docs(project, [], SynthConfig(n_docs=40, seed=1, term_coord_share=1.0,
                                                                 eligibility_share=1.0, filler_share=0.0))
    shared = [m.text(docs[d].text, " ... ") for d, ms in gold.items() for m in ms if m.is_discontiguous]
    assert "gastric ... ulcer" in shared or "duodenal ... ulcer" in shared


def test_same_length_case_changes_keep_offsets():
    from share_ner.default_model.synthetic import same_length_title, same_length_upper

    assert same_length_upper("Straße, h/o copd") == "STRAßE, H/O COPD"
    assert same_length_title("chest pain, h/o COPD. 3rd-degree burn") == "Chest Pain, H/O COPD. 3rd-Degree Burn"


def test_recased_documents_keep_their_mentions_and_words():
    from share_ner.default_model.synthetic import recase_docs

    config = SynthConfig(n_docs=40, seed=5, upper_share=0.3, line_case_share=0.3)
    docs, gold = generate_template_docs(PROJECT, HPO, config)
    recased = recase_docs(docs, config)
    assert recased.keys() == docs.keys()
    changed = [d for d in docs if recased[d].text != docs[d].text]
    capitals = [d for d in docs if recased[d].text == docs[d].text.upper() != docs[d].text]
    assert 0 < len(capitals) < len(changed) < len(docs)
    for d in docs:
        assert recased[d].text.lower() == docs[d].text.lower()
        for m in gold[d]:
            assert m.text(recased[d].text).lower() == m.text(docs[d].text).lower()


def test_upper_copies_of_the_hand_corpus_carry_the_same_mentions():
    from share_ner.default_model.synthetic import training_data

    docs, gold = training_data(SynthConfig(n_docs=0, corpus_upper_share=1.0))
    originals = [d for d in docs if not d.endswith("-upper")]
    assert len(docs) == 2 * len(originals)
    for d in originals:
        copy = f"{d}-upper"
        assert docs[copy].text == docs[d].text.upper() or len(docs[copy].text) == len(docs[d].text)
        assert [m.spans for m in gold[copy]] == [m.spans for m in gold[d]]
        assert all(m.doc_id == copy for m in gold[copy])


def test_abbreviation_terms_are_unambiguous_and_take_the_expansions_cui():
    from share_ner.default_model.terms import abbreviation_terms

    terms = {t.name: t.cui for t in abbreviation_terms([Term("Deep venous thrombosis", "C0149871")],
                                                       [Term("deep vein thrombosis", "C0149871")])}
    assert terms["DVT"] == "C0149871"
    assert "JVD" in terms and terms["JVD"] == CUI_LESS
    assert "LAD" not in terms  # three expansions in the list
    assert all(len(name) >= 3 for name in terms)


def test_finding_templates_use_the_finding_pool():
    from share_ner.default_model.terms import finding_terms

    findings = finding_terms()
    assert {"lethargic", "agitated", "dizzy"} <= {t.name for t in findings}
    config = SynthConfig(n_docs=30, seed=2, eligibility_share=0.0, finding_share=1.0, filler_share=0.0)
    docs, gold = generate_template_docs(PROJECT, HPO, config, findings=findings)
    names = {t.name for t in findings}
    found = [m.text(docs[d].text) for d in docs for m in gold[d]]
    assert found and set(found) <= names
    off = generate_template_docs(PROJECT, HPO, SynthConfig(n_docs=30, seed=2, eligibility_share=0.0), findings=findings)
    assert not names & {m.text(off[0][d].text) for d in off[0] for m in off[1][d]}  # finding_share 0: none


def test_list_coverage_puts_every_listed_name_into_the_training_data():
    from share_ner.default_model.terms import finding_terms

    findings = finding_terms()
    abbreviations = [Term("JVD", CUI_LESS), Term("DVT", "C0149871")]
    config = SynthConfig(n_docs=5, seed=4, list_coverage=2)
    docs, gold = generate_template_docs(PROJECT, HPO, config, abbreviations, findings)
    counts = Counter(m.text(docs[d].text).lower() for d in docs if d.startswith("synth-cov-") for m in gold[d])
    for term in [*PROJECT, *abbreviations, *findings]:
        assert counts[term.name.lower()] >= 2, term.name
    # The random documents are those of the same settings without coverage.
    plain = generate_template_docs(PROJECT, HPO, SynthConfig(n_docs=5, seed=4), abbreviations, findings)
    assert {d: docs[d] for d in plain[0]} == plain[0]


def test_modifier_share_puts_a_body_site_inside_one_word_mentions():
    from share_ner.default_model.terms import body_sites

    sites = set(body_sites())
    assert {"gastric", "renal", "lung"} <= sites
    config = SynthConfig(n_docs=60, seed=3, modifier_share=1.0, filler_share=0.0)
    docs, gold = generate_template_docs([Term("ulcer", "C0041582"), Term("chest pain", "C0008031")], [], config)
    found = [(m.text(docs[d].text).lower(), m.cui) for d in docs for m in gold[d] if not m.is_discontiguous]
    ulcers = [(t, c) for t, c in found if t.endswith("ulcer")]
    assert ulcers and all(t.split()[0] in sites and c == CUI_LESS for t, c in ulcers)
    assert ("chest pain", "C0008031") in found  # two-word names are left as they are


def test_with_list_names_adds_the_lists_names_that_carry_a_cui():
    from share_ner.default_model.terms import with_list_names
    from share_ner.lexicons.lexicon import Lexicon, LexiconEntry

    base = Lexicon.from_entries([LexiconEntry("C0036572", "Seizure", "hpo")], "hpo")
    combined = with_list_names(base)
    names = {e.name: e.cui for e in combined.entries}
    assert names["Seizure"] == "C0036572" and names["CHF"] == "C0018802" and names["lethargic"] == "C0023380"
    assert "JVD" not in names  # CUI-less in the lists
    assert combined.name == "hpo+lists"


def test_no_cui_less_listed_name_is_an_exact_name_of_the_hpo_lexicon():
    # In ShARe, CUI-less means no concept exists: a listed name the lexicon gives a CUI carries that CUI.
    from share_ner.default_model.terms import finding_terms, project_terms
    from share_ner.lexicons import default_lexicon

    names = {e.name.lower() for e in default_lexicon().entries}
    listed = [*project_terms(), *finding_terms()]
    assert sum(t.cui == CUI_LESS for t in listed) > 50  # the lists still hold CUI-less names
    assert [t.name for t in listed if t.cui == CUI_LESS and t.name.lower() in names] == []
    assert {t.name: t.cui for t in project_terms()}["acute kidney injury"] == "C0022660"
