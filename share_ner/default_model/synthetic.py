"""The project's own training data for the default model.

Two sources, both written by the project and free to redistribute:

* the hand-annotated synthetic corpus (:mod:`share_ner.default_model.markup`);
* template sentences (:func:`generate_template_docs`) that put disorder names
  (:mod:`share_ner.default_model.terms`: HPO phenotypic abnormalities, the project's
  own lists) into clinical and eligibility-criteria contexts, written in the
  corpus markup; :func:`training_data` joins both.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from share_ner.default_model.markup import load_default_corpus, parse_markup
from share_ner.default_model.terms import (
    Term,
    abbreviation_terms,
    body_sites,
    disorder_adjectives,
    finding_terms,
    hpo_terms,
    icd_terms,
    project_terms,
    usable_hpo,
)
from share_ner.document import CUI_LESS, Document, Mention

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
            :func:`share_ner.training.distant.label_lexicon`) instead of the whole lexicon; the normalizer keeps the lexicon.
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
    hpo_pool = usable_hpo(hpo, config.hpo_max_words)
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
