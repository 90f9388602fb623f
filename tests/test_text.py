"""Tokenizer and sentence splitter on hand-written clinical snippets."""

from __future__ import annotations

from share_ner.document import Document
from share_ner.text import normalize_section, split_sentences, tokenize


def words(sentences):
    return [[t.text for t in s.tokens] for s in sentences]


def test_tokens_carry_exact_offsets_and_no_whitespace():
    text = "Pt  h/o IL-6\televation on 3/12/2020,\u00a0no\r\nfever."
    toks = tokenize(text)
    for t in toks:
        assert text[t.start : t.end] == t.text
        assert not any(c.isspace() for c in t.text)
    assert [t.text for t in toks][:6] == ["Pt", "h/o", "IL-6", "elevation", "on", "3/12/2020"]


def test_placeholders_are_single_tokens_with_exact_offsets():
    text = "Seen at [**Hospital1 18**] on [**2150-1-1**] by Dr. [**Last Name (NamePattern1) 123**]'s team."
    toks = tokenize(text)
    ph = [t for t in toks if t.text.startswith("[**")]
    assert [t.text for t in ph] == ["[**Hospital1 18**]", "[**2150-1-1**]", "[**Last Name (NamePattern1) 123**]"]
    for t in ph:
        assert text[t.start : t.end] == t.text
    assert "'s" in [t.text for t in toks]


def test_placeholder_never_splits_a_sentence():
    doc = Document("n1", "He was transferred to [**Hospital1 18**]. For care he went to [**Hospital 2**] today.")
    sents = split_sentences(doc)
    assert len(sents) == 2
    assert sents[0].tokens[-2].text == "[**Hospital1 18**]"


def test_crlf_offsets():
    text = "Diabetes\r\nHypertension\r\n\r\nNo CHF"
    sents = split_sentences(Document("n2", text))
    assert words(sents) == [["Diabetes"], ["Hypertension"], ["No", "CHF"]]
    for s in sents:
        for t in s.tokens:
            assert text[t.start : t.end] == t.text


def test_section_headers_and_numbered_lists():
    text = (
        "HISTORY OF PRESENT ILLNESS: Chest pain for 2 days.\n"
        "Past Medical History:\n1. CHF\n2. DM2 complicated by severe peripheral neuropathy of\nboth feet\n- COPD\n"
        "- asthma since\nchildhood"
    )
    sents = split_sentences(Document("n3", text))
    assert words(sents) == [
        ["HISTORY", "OF", "PRESENT", "ILLNESS", ":"],
        ["Chest", "pain", "for", "2", "days", "."],
        ["Past", "Medical", "History", ":"],
        ["1", ".", "CHF"],
        # a long line wrapped before a lower-case word continues; a short one does not
        ["2", ".", "DM2", "complicated", "by", "severe", "peripheral", "neuropathy", "of", "both", "feet"],
        ["-", "COPD"],
        ["-", "asthma", "since"],
        ["childhood"],
    ]
    assert [s.section for s in sents] == ["history of present illness"] * 2 + ["past medical history"] * 6


def test_inline_headers_and_list_items_mtsamples_style():
    text = "Normal.,ASSESSMENT:,  Viral pharyngitis.,PLAN:,1.  Rest at home.  Drink fluids.,2.  Follow up."
    sents = split_sentences(Document("n4", text))
    sections = {" ".join(w): s.section for w, s in zip(words(sents), sents)}
    assert sections["1 . Rest at home ."] == "plan"
    assert sections["Drink fluids . ,"] == "plan"
    assert sections["2 . Follow up ."] == "plan"
    assert any(s.section == "assessment" and "pharyngitis" in [t.text for t in s.tokens] for s in sents)


def test_punctuation_and_abbreviations():
    sents = split_sentences(Document("n5", "Dr. Smith saw him. He denies fever, e.g. no chills. vs. before"))
    assert words(sents) == [
        ["Dr.", "Smith", "saw", "him", "."],
        ["He", "denies", "fever", ",", "e.g.", "no", "chills", ".", "vs.", "before"],
    ]


def test_empty_notes_give_no_sentences():
    assert split_sentences(Document("e", "")) == []
    assert split_sentences(Document("e", " \r\n\t ")) == []


def test_normalize_section():
    assert normalize_section(" HISTORY OF  PRESENT ILLNESS:") == "history of present illness"


def test_discharge_summary_layout():
    text = (
        "Admission Date:  [**2150-1-1**]     Discharge Date:   [**2150-1-5**]\n\n"
        "Attending:[**First Name3 (LF) 1234**]\n"
        "Chief Complaint:\nchest pain, SOB\n\n"
        "History of Present Illness:\n"
        "72 yo M with h/o CAD s/p CABG, CHF (EF 30%), DM2, and afib on\n"
        "coumadin who presents with dyspnea. He was seen at [**Hospital1 18**] ED.\n"
        "# CHF exacerbation: diuresed.\n"
        "VS: T 98.6 BP 100/60\n"
    )
    sents = split_sentences(Document("m1", text))
    by_text = {" ".join(t.text for t in s.tokens): s.section for s in sents}
    assert by_text["Attending :"] == "attending"
    assert by_text["[**First Name3 (LF) 1234**]"] == "attending"
    assert by_text["chest pain , SOB"] == "chief complaint"
    hpi = [k for k, v in by_text.items() if v == "history of present illness"]
    assert hpi[1].startswith("72 yo M with h/o CAD s/p CABG") and hpi[1].endswith("presents with dyspnea .")
    assert "He was seen at [**Hospital1 18**] ED ." in hpi
    assert "# CHF exacerbation : diuresed ." in hpi
    assert by_text["T 98.6 BP 100/60"] == "vs"


def test_very_long_runs_are_cut_simply_with_exact_offsets():
    # spaCy's affix loop is quadratic on such runs; share-ner cuts them with a simple regex
    run = "[**" * 200 + "abc[**Hospital 1**]def" + "=" * 400
    text = f"pain {run} fever"
    toks = tokenize(text)
    assert toks[0].text == "pain" and toks[-1].text == "fever"
    assert "[**Hospital 1**]" in [t.text for t in toks]
    for t in toks:
        assert text[t.start : t.end] == t.text
    assert [t.start for t in toks] == sorted(t.start for t in toks)


def test_lone_carriage_returns_end_lines():
    text = "Past Medical History:\r1. CHF\r2. COPD\r\rNo pain"
    sents = split_sentences(Document("n6", text))
    assert words(sents) == [["Past", "Medical", "History", ":"], ["1", ".", "CHF"], ["2", ".", "COPD"], ["No", "pain"]]
    assert {s.section for s in sents} == {"past medical history"}


def test_dotted_numbers_do_not_end_sentences():
    sents = split_sentences(Document("n7", "G6PD (EC 1. 1. 1. 49) deficiency. 2 cases were seen."))
    assert words(sents) == [
        ["G6PD", "(", "EC", "1", ".", "1", ".", "1", ".", "49", ")", "deficiency", "."],
        ["2", "cases", "were", "seen", "."],
    ]


def test_placeholder_starting_a_wrapped_line_continues_the_sentence():
    text = "The patient was transferred from the outside hospital for care to\n[**Hospital1 18**] for a cardiac catheterization."
    (sent,) = split_sentences(Document("n8", text))
    assert sent.tokens[11].text == "[**Hospital1 18**]"


def test_extra_splits_where_gold_boundaries_fall():
    text = "second- or third-degree block，severe CKD)stage MI/CHF non-smoker flu-like arthritis(knee"
    assert [t.text for t in tokenize(text)] == [
        "second", "-", "or", "third", "-", "degree", "block", "，", "severe", "CKD", ")", "stage",
        "MI", "/", "CHF", "non", "-", "smoker", "flu", "-", "like", "arthritis", "(", "knee",
    ]
    assert [t.text for t in tokenize(text, extra_splits=False)][:3] == ["second-", "or", "third-degree"]


def test_a_special_case_that_may_join_two_chunks_sends_the_note_to_one_spacy_call(monkeypatch):
    import share_ner.text as text_module

    calls = []
    real = text_module._tokenize_whole
    monkeypatch.setattr(text_module, "_tokenize_whole", lambda *a: calls.append(a[0]) or real(*a))
    assert [t.text for t in tokenize("Seen by Dr . Smith")] == ["Seen", "by", "Dr", ".", "Smith"]
    assert calls == ["Seen by Dr . Smith"]  # "Dr" "." is a pattern of spaCy's special-case matcher
    assert [t.text for t in tokenize("Seen by Dr. Smith")] == ["Seen", "by", "Dr.", "Smith"]
    assert len(calls) == 1  # chunk by chunk


def test_the_chunk_memo_starts_afresh_when_full_with_the_same_tokens(monkeypatch):
    import share_ner.text as text_module

    text = "History of CHF (congestive heart failure), h/o MI.\nSeen 3/12/2020."
    before = tokenize(text)
    monkeypatch.setattr(text_module, "_MEMO_LIMIT", 3)
    assert tokenize(text) == before  # the memo was full: a new one is filled
    assert len(text_module._memo) <= 12 and tokenize(text) == before


def test_the_rule_tokenizer_keeps_clinical_shorthand_whole_and_splits_what_english_glues():
    # (the rules against scispaCy's, where it installs: tests/test_scispacy_oracle.py)
    from share_ner.text import get_tokenizer

    words = [t.text for t in get_tokenizer()("(s)he h/o IL-6 x-ray 3/12/2020 2+3 10×5 mother.He R>L ICU. Fig. 2 et al. "
                                               "10mg fever—chills q.d.")]
    assert words == ["(s)he", "h/o", "IL-6", "x-ray", "3/12/2020", "2", "+", "3", "10", "×", "5", "mother", ".", "He",
                     "R", ">", "L", "ICU", ".", "Fig.", "2", "et", "al.", "10", "mg", "fever", "—", "chills", "q.d", "."]


def test_a_note_starting_with_a_lone_dot_keeps_it_in_its_first_sentence():
    sents = split_sentences(Document("d", ". Inclusion criteria are ASA I-II. Age 18 or more."))
    assert [[t.text for t in s.tokens][:2] for s in sents] == [[".", "Inclusion"], ["Age", "18"]]
