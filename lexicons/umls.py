"""Build a disorder lexicon from a UMLS Metathesaurus release (``META`` directory).

``MRSTY.RRF`` (small) is read first into a dict of the concepts that have a
semantic type of the wanted group; ``MRCONSO.RRF`` (tens of millions of lines)
is then streamed once, in constant memory, and every English, non-suppressed
string of a kept source whose concept is in that dict becomes a lexicon entry.
A SNOMED CT fully specified name (term type ``FN``) loses its semantic tag
("Hypertensive disorder, systemic arterial (disorder)" becomes "Hypertensive
disorder, systemic arterial"): notes never write the tag, and most fully
specified names then repeat the concept's preferred term and are dropped as
duplicates.

Both files may be plain, gzip-compressed (``.gz``) or split into parts
(``MRCONSO.RRF.aa``, ``.ab``, ...; a line may run across two parts). Lines look
like (MRCONSO, 18 fields, each ending with ``|``)::

    CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|

and (MRSTY, 6 fields)::

    CUI|TUI|STN|STY|ATUI|CVF|
"""

from __future__ import annotations

import gzip
import io
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple

from share_ner.errors import InputError, ShareNerError
from share_ner.lexicons.lexicon import LexiconEntry, write_lexicon

# The Disorders group as ShARe/CLEF 2013 defines it (Finding, T033, excluded by default).
DISORDER_TUIS = ("T019", "T020", "T037", "T046", "T047", "T048", "T049", "T050", "T184", "T190", "T191")
FINDING_TUI = "T033"
# The Anatomy semantic group (ANAT) of the UMLS semantic groups, all of it: the types ShARe/CLEF 2014 took body
# locations from (Anatomical Structure, Embryonic Structure, Fully Formed Anatomical Structure, Body System, Body
# Part/Organ/Organ Component, Tissue, Cell, Cell Component, Body Location or Region, Body Space or Junction, Body
# Substance).
ANATOMY_TUIS = ("T017", "T018", "T021", "T022", "T023", "T024", "T025", "T026", "T029", "T030", "T031")
DEFAULT_SOURCES = ("SNOMEDCT_US",)

# The semantic tag that ends a SNOMED CT fully specified name: "(disorder)", "(morphologic abnormality)",
# "(regime/therapy)"
SEMANTIC_TAG = re.compile(r"\s+\([a-z]+(?:[ /-][a-z]+)*\)$")

MRCONSO_FIELDS = 18
MRSTY_FIELDS = 6


class ConsoRow(NamedTuple):
    """The MRCONSO fields the builder uses."""

    cui: str
    lat: str
    ts: str
    stt: str
    ispref: str
    sab: str
    tty: str
    string: str
    suppress: str


@dataclass(frozen=True)
class UmlsFilter:
    """Which MRCONSO strings to keep."""

    sources: tuple[str, ...] = DEFAULT_SOURCES
    semtypes: tuple[str, ...] = DISORDER_TUIS
    languages: tuple[str, ...] = ("ENG",)

    @classmethod
    def disorders(cls, sources: Iterable[str] = DEFAULT_SOURCES, include_findings: bool = False) -> "UmlsFilter":
        tuis = DISORDER_TUIS + ((FINDING_TUI,) if include_findings else ())
        return cls(tuple(sources), tuis)

    @classmethod
    def anatomy(cls, sources: Iterable[str] = DEFAULT_SOURCES) -> "UmlsFilter":
        """Body sites, for the body-location attribute (:data:`ANATOMY_TUIS`)."""
        return cls(tuple(sources), ANATOMY_TUIS)


@dataclass
class BuildStats:
    """Counts reported after a build."""

    concepts_with_semtype: int = 0
    lines_read: int = 0
    entries_written: int = 0
    concepts_written: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


def rrf_parts(meta_dir: Path, name: str) -> list[Path]:
    """The file(s) holding ``name`` (e.g. ``MRCONSO.RRF``): plain, ``.gz`` or split ``.aa``, ``.ab``... parts."""
    plain = meta_dir / name
    if plain.is_file():
        return [plain]
    gz = meta_dir / f"{name}.gz"
    if gz.is_file():
        return [gz]
    part_re = re.compile(re.escape(name) + r"\.([a-z]{2,3})(\.gz)?$")
    parts = sorted(p for p in meta_dir.iterdir() if p.is_file() and part_re.match(p.name))
    if parts:
        return parts
    raise InputError(meta_dir, f"no {name} (or {name}.gz, or split {name}.aa, .ab...) in this directory")


def _open_text(path: Path) -> io.TextIOBase:
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb", buffering=1 << 20)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline="\n")


def _first_bad_utf8(path: Path) -> tuple[int, int]:
    """The line (from 1) and byte in it where ``path`` first fails to decode as UTF-8 (the text reader decodes
    blocks of many lines: its error says which block, not which line)."""
    number = 0
    raw = gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb", buffering=1 << 20)
    with raw:
        for number, line in enumerate(raw, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, exc.start
    return max(number, 1), 0


def iter_rrf_lines(parts: list[Path]) -> Iterator[tuple[Path, int, str]]:
    """Yield ``(part, line number, line without newline)`` across parts; a line split over two parts is joined."""
    carry = ""
    carry_at: tuple[Path, int] = (parts[0], 0) if parts else (Path(), 0)
    for part in parts:
        lineno = 0
        try:
            with _open_text(part) as f:
                for line in f:
                    lineno += 1
                    if carry:
                        line, where, carry = carry + line, carry_at, ""
                    else:
                        where = (part, lineno)
                    if line.endswith("\n"):
                        yield where[0], where[1], line[:-1]
                    else:
                        carry, carry_at = line, where
        except UnicodeDecodeError:
            line, column = _first_bad_utf8(part)
            raise InputError(part, f"not valid UTF-8 (byte {column} of the line)", line) from None
        except (EOFError, gzip.BadGzipFile) as exc:
            raise InputError(part, f"cannot read after line {lineno}: {exc}") from None
        except OSError as exc:
            raise InputError(part, f"cannot read after line {lineno}: {exc.strerror or exc}") from None
    if carry:
        yield carry_at[0], carry_at[1], carry


def _split(line: str, n: int, path: Path, lineno: int, what: str) -> list[str]:
    if line.endswith("\r"):  # a release copied through Windows tools
        line = line[:-1]
    fields = line.split("|")
    # A well-formed line ends with "|", so split gives n fields plus an empty tail.
    if len(fields) != n + 1 or fields[-1] != "":
        raise InputError(path, f"malformed {what} line: found {len(fields) - 1} '|'-terminated fields, "
                               f"expected {n} (truncated line?)", lineno)
    return fields


def read_mrsty(parts: list[Path], semtypes: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """CUI → its semantic types, for concepts with at least one type in ``semtypes``."""
    wanted = frozenset(semtypes)
    out: dict[str, list[str]] = {}
    for path, lineno, line in iter_rrf_lines(parts):
        if not line:
            continue
        f = _split(line, MRSTY_FIELDS, path, lineno, "MRSTY")
        if f[1] in wanted:
            out.setdefault(f[0], []).append(f[1])
    return {cui: tuple(sorted(set(t))) for cui, t in out.items()}


def iter_mrconso(parts: list[Path]) -> Iterator[tuple[Path, int, ConsoRow]]:
    """Yield MRCONSO rows, checking each line's layout."""
    for path, lineno, line in iter_rrf_lines(parts):
        if not line:
            continue
        f = _split(line, MRCONSO_FIELDS, path, lineno, "MRCONSO")
        yield path, lineno, ConsoRow(f[0], f[1], f[2], f[4], f[6], f[11], f[12], f[14], f[16])


def iter_umls_entries(meta_dir: str | Path, filt: UmlsFilter | None = None,
                      stats: BuildStats | None = None) -> Iterator[LexiconEntry]:
    """Stream the lexicon entries of a META directory (see the module docstring)."""
    meta_dir = Path(meta_dir)
    if not meta_dir.is_dir():
        raise InputError(meta_dir, "not a directory; expected a UMLS META directory with MRCONSO.RRF and MRSTY.RRF")
    filt = filt or UmlsFilter()
    stats = stats if stats is not None else BuildStats()
    conso_parts = rrf_parts(meta_dir, "MRCONSO.RRF")
    sty_parts = rrf_parts(meta_dir, "MRSTY.RRF")
    concept_types = read_mrsty(sty_parts, filt.semtypes)
    stats.concepts_with_semtype = len(concept_types)
    sources = frozenset(filt.sources)
    languages = frozenset(filt.languages)
    skipped = stats.skipped
    current_cui = ""
    # the current concept's entries by lower-cased string (MRCONSO is sorted by CUI, so one concept at a time);
    # of two that differ only by case, or a fully specified name that repeats another name, the first is kept,
    # marked preferred if either is
    concept: dict[str, LexiconEntry] = {}
    for _, _, row in iter_mrconso(conso_parts):
        stats.lines_read += 1
        if row.lat not in languages:
            skipped["language"] = skipped.get("language", 0) + 1
            continue
        if row.suppress != "N":
            skipped["suppressed"] = skipped.get("suppressed", 0) + 1
            continue
        if row.sab not in sources:
            skipped["source"] = skipped.get("source", 0) + 1
            continue
        types = concept_types.get(row.cui)
        if types is None:
            skipped["semantic type"] = skipped.get("semantic type", 0) + 1
            continue
        if row.cui != current_cui:
            yield from _written(concept, stats)
            current_cui = row.cui
            stats.concepts_written += 1
        string = row.string
        if row.tty == "FN" and row.sab.startswith("SNOMEDCT"):
            string = SEMANTIC_TAG.sub("", string)
        preferred = row.ts == "P" and row.stt == "PF" and row.ispref == "Y"
        key = string.lower()
        kept = concept.get(key)
        if kept is not None:
            skipped["duplicate"] = skipped.get("duplicate", 0) + 1
            if preferred and not kept.preferred:
                concept[key] = replace(kept, preferred=True)
            continue
        concept[key] = LexiconEntry(row.cui, string, row.sab, types, preferred)
    yield from _written(concept, stats)


def _written(concept: dict[str, LexiconEntry], stats: BuildStats) -> Iterator[LexiconEntry]:
    """Yield and forget one concept's entries, in the order they came."""
    stats.entries_written += len(concept)
    yield from concept.values()
    concept.clear()


def build_umls_lexicon(meta_dir: str | Path, out: str | Path, filt: UmlsFilter | None = None) -> BuildStats:
    """Write the lexicon of a META directory to ``out`` (TSV, atomically); returns the counts."""
    stats = BuildStats()
    write_lexicon(out, iter_umls_entries(meta_dir, filt, stats), with_count=False)
    if stats.entries_written == 0:
        Path(out).unlink(missing_ok=True)
        raise ShareNerError(f"{meta_dir}: no MRCONSO string passed the filters (sources {', '.join(filt.sources if filt else DEFAULT_SOURCES)}); "
                            "no lexicon written")
    return stats
