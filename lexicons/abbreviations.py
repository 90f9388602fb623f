"""The clinical abbreviation list: common abbreviations of disorders and findings with their expansions.

The data is ``lexicons/data/clinical_abbreviations.tsv``: a header line
``abbreviation<TAB>expansion[<TAB>sense]``, then one expansion a row (an ambiguous abbreviation
such as ``PE`` has several rows). Lines starting with ``#`` are comments. The optional ``sense``
column says what an expansion names: ``disorder`` (a disorder or finding; the default) or
``other`` (a procedure, test, drug, anatomy or measure: *coronary artery bypass graft*, *physical
examination*, *mental status*), so that the tagger keeps a short form only for its disorder senses
(``share_ner.tagging.evidence``). The tagger's abbreviation features and the normalizer read it
through :func:`load_abbreviations`, the senses through :func:`other_senses`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from share_ner.errors import InputError
from share_ner.io import read_text_file

ABBREVIATIONS_PATH = Path(__file__).parent / "data" / "clinical_abbreviations.tsv"
COLUMNS = ("abbreviation", "expansion")
OPTIONAL_COLUMNS = ("sense",)
SENSES = ("disorder", "other")  # the values of the sense column, the default first


def load_abbreviations(path: str | Path | None = None) -> dict[str, list[str]]:
    """Read an abbreviation TSV (default: the packaged list) into ``{abbreviation: [expansion, ...]}``.

    Abbreviations keep their case (``MS`` and ``ms`` differ); expansions keep file order,
    without duplicates. Unknown or missing columns, a wrong field count, an empty field or a
    sense not in :data:`SENSES` raise :class:`~share_ner.errors.InputError` naming the file and line.
    """
    out: dict[str, list[str]] = {}
    for abbreviation, expansion, _ in read_abbreviation_rows(path):
        expansions = out.setdefault(abbreviation, [])
        if expansion not in expansions:
            expansions.append(expansion)
    return out


def other_senses(path: str | Path | None = None) -> frozenset[tuple[str, str]]:
    """The (abbreviation, expansion) rows of an abbreviation TSV (default: the packaged list) whose sense is
    ``other``: not a disorder or finding."""
    return frozenset((a, e) for a, e, sense in read_abbreviation_rows(path) if sense == "other")


def read_abbreviation_rows(path: str | Path | None = None) -> list[tuple[str, str, str]]:
    """The (abbreviation, expansion, sense) rows of an abbreviation TSV, in file order (see
    :func:`load_abbreviations` for the checks)."""
    path = Path(path) if path is not None else ABBREVIATIONS_PATH
    lines = read_text_file(path, "abbreviation list").splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), None)
    if header_at is None:
        raise InputError(path, f"empty abbreviation list: expected the header {'<TAB>'.join(COLUMNS)}")
    header = [c.strip() for c in lines[header_at].split("\t")]
    unknown = [c for c in header if c not in COLUMNS + OPTIONAL_COLUMNS]
    if unknown:
        raise InputError(path, f"unknown column(s) {', '.join(map(repr, unknown))}; allowed: "
                               f"{', '.join(COLUMNS + OPTIONAL_COLUMNS)}", line=header_at + 1)
    missing = [c for c in COLUMNS if c not in header]
    if missing or len(header) != len(set(header)):
        raise InputError(path, f"the header must name each of the columns {', '.join(COLUMNS)} once", line=header_at + 1)
    abbr_col, exp_col = header.index("abbreviation"), header.index("expansion")
    sense_col = header.index("sense") if "sense" in header else None

    rows: list[tuple[str, str, str]] = []
    for number in range(header_at + 2, len(lines) + 1):
        line = lines[number - 1]
        if not line.strip() or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) != len(header):
            raise InputError(path, f"expected {len(header)} tab-separated fields, got {len(fields)}", line=number)
        abbreviation, expansion = fields[abbr_col], fields[exp_col]
        if not abbreviation or not expansion:
            raise InputError(path, "empty abbreviation or expansion", line=number)
        sense = (fields[sense_col] or SENSES[0]) if sense_col is not None else SENSES[0]
        if sense not in SENSES:
            raise InputError(path, f"sense {sense!r} is not one of {', '.join(SENSES)}", line=number)
        rows.append((abbreviation, expansion, sense))
    return rows


def write_abbreviations(path: str | Path, abbreviations: Mapping[str, Sequence[str]]) -> None:
    """Write ``{abbreviation: [expansion, ...]}`` in the format :func:`load_abbreviations` reads."""
    rows = [f"{a}\t{e}" for a, expansions in abbreviations.items() for e in expansions]
    for row in rows:
        if row.count("\t") != 1 or "\n" in row or "\r" in row:
            raise ValueError(f"an abbreviation or expansion holds a tab or a line break: {row!r}")
    Path(path).write_text("\n".join(["\t".join(COLUMNS), *rows]) + "\n", encoding="utf-8")


def merged(first: Mapping[str, Sequence[str]], then: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The expansions of ``first`` before those of ``then``, abbreviation by abbreviation, without duplicates: a
    site's own list tried before the packaged one."""
    out: dict[str, list[str]] = {a: list(dict.fromkeys(e)) for a, e in first.items()}
    for a, expansions in then.items():
        out[a] = list(dict.fromkeys([*out.get(a, []), *expansions]))
    return out
