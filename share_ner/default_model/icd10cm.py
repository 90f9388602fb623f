"""The ICD-10-CM disorder names (``data/synth/icd10cm.tsv``) of the default model's term features and of the
distant labels (``share_ner.training.distant``).

ICD-10-CM, the US clinical modification of ICD-10, published for free use by the CDC's National Center for
Health Statistics, names the common disorders of clinical notes that HPO's phenotypes leave out ("mumps",
"scabies", "streptococcal pharyngitis"). The list holds the short names among its code titles and inclusion
terms: the code categories and subcategories of chapters A to T (injuries by category only; factors and external
causes left out, and the disorders named by a substance: F10-F19, "...-induced", poisonings and toxic effects),
with nonessential modifiers in parentheses, a trailing "NOS" and ", unspecified" taken off, and names of at most
six words that are not groupings ("Other ...", "... with ...", "... due to ...").

Regenerate it with ``python -m share_ner.default_model.icd10cm`` (needs the ``bench`` extra's
``simple-icd-10-cm``, which is not needed to read the list).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from share_ner.io import read_tsv_pairs

ICD10CM_PATH = Path(__file__).parent.parent / "data" / "synth" / "icd10cm.tsv"
HEADER = ("term", "icd10cm")
MAX_WORDS = 6  # the list's longest names; SynthConfig.icd_max_words chooses among them
# Words of grouping, residual and qualified titles: not how a note names one disorder.
_GROUPING_WORDS = frozenset(
    "other specified unspecified due with without in following complicating classified elsewhere history "
    "encounter personal family sequelae sequela affecting during involving type stage code underlying and "
    "or by from to not nos screening examination".split())
# Names that lead with the substance that caused the disorder ("lead-induced gout", "toxic effect of alcohol",
# "opioid dependence"): ShARe's spans leave the substance out, so these would teach the tagger to take it in.
_SUBSTANCE_WORDS = frozenset("induced toxic poisoning intoxication use abuse dependence withdrawal".split())
_PARENTHESES = re.compile(r"\s*[(\[][^)\]]*[)\]]")
_TRAILING = re.compile(r"(\s+NOS|,\s*(unspecified|not elsewhere classified|site not specified|so stated|so described))$")
_NAME_CHARS = re.compile(r"[A-Za-z][A-Za-z' -]*")


def short_name(title: str) -> str | None:
    """The name a note would write for an ICD-10-CM title or inclusion term, or None when it has none."""
    name = " ".join(_TRAILING.sub("", _PARENTHESES.sub("", title)).split())
    if not _NAME_CHARS.fullmatch(name):
        return None  # empty, or a comma, digit or other mark: a list or a qualified title
    words = name.split()
    lowered = {part for w in words for part in w.lower().split("-")}
    if len(words) > MAX_WORDS or _GROUPING_WORDS.intersection(lowered) or _SUBSTANCE_WORDS.intersection(lowered):
        return None
    first = words[0]
    # sentence case to running text ("Localized edema" -> "localized edema"), eponyms and acronyms kept
    # ("Asperger's", "Wolff-Parkinson-White", "HIV")
    if first[1:].islower() and "'" not in first and "-" not in first:
        name = name[:1].lower() + name[1:]
    return name


def names_of(items: Iterable[tuple[str, Sequence[str]]]) -> list[tuple[str, str]]:
    """(name, code) for ``items`` of (code, titles), the first code of each name (case-insensitive), sorted."""
    out: dict[str, tuple[str, str]] = {}
    for code, titles in items:
        for title in titles:
            name = short_name(title)
            if name is not None:
                out.setdefault(name.lower(), (name, code))
    return sorted(out.values(), key=lambda nc: (nc[0].lower(), nc[0]))


def read_icd10cm(path: str | Path = ICD10CM_PATH) -> list[tuple[str, str]]:
    """The (name, code) rows of the shipped list."""
    return read_tsv_pairs(path, HEADER, "term<TAB>ICD-10-CM code")


def _codes() -> Iterator[tuple[str, list[str]]]:
    try:
        import simple_icd_10_cm as icd
    except ImportError:
        raise SystemExit("regenerating the list needs simple-icd-10-cm: pip install -e '.[bench]'") from None
    for code in icd.get_all_codes(False):
        if not icd.is_category_or_subcategory(code) or code[0] in "UVWXYZ" or code[:2] == "F1":
            continue  # factors, external causes; F10-F19, disorders named by the substance used
        if code[0] in "ST" and not icd.is_category(code):
            continue  # injuries and poisonings: by body region, not by site and encounter
        yield icd.add_dot(code), [icd.get_description(code), *icd.get_inclusion_term(code)]


def main() -> int:
    rows = names_of(_codes())
    with open(ICD10CM_PATH, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(HEADER) + "\n")
        f.writelines(f"{name}\t{code}\n" for name, code in rows)
    print(f"wrote {len(rows)} names to {ICD10CM_PATH.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
