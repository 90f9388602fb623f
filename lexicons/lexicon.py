"""The one lexicon file format, its loader and writer, and the user cache directory.

A lexicon is a UTF-8 TSV file with a header line. The columns are::

    cui     name                    source       semtypes    preferred   [count]
    C0014544    Seizure             HPO          T184        Y
    C0020538    Hypertensive disease SNOMEDCT_US T047        Y

``cui`` is any concept label (a UMLS CUI, a MeSH id, a composite ``D1+D2`` or
``CUI-less`` in a training gazetteer), ``semtypes`` is a comma-separated list of
UMLS semantic type ids (may be empty), ``preferred`` is ``Y`` or ``N``, and the
optional ``count`` is how often the string carried that label in training
annotations. The column order is free; an unknown or missing column is an error.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from share_ner.errors import InputError, ShareNerError

REQUIRED_COLUMNS = ("cui", "name", "source", "semtypes", "preferred")
OPTIONAL_COLUMNS = ("count",)
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS


@dataclass(frozen=True, slots=True)
class LexiconEntry:
    """One (concept, string) pair of a lexicon."""

    cui: str
    name: str
    source: str = ""
    semtypes: tuple[str, ...] = ()
    preferred: bool = False
    count: int = 1


class Lexicon:
    """Lexicon entries plus what identifies them: a content hash and where they came from.

    ``name`` is ``"hpo"`` for the embedded default, the file name for a file,
    and a label for lexicons built in memory. ``path`` is the TSV file the
    entries were read from (``None`` otherwise). A file whose compiled index is
    cached is parsed only when ``entries`` is first used.
    """

    def __init__(self, entries: Iterable[LexiconEntry] | None, content_hash: str, path: Path | None = None,
                 name: str = "", *, loader: Callable[[], list[LexiconEntry]] | None = None,
                 size: int | None = None) -> None:
        if entries is None and loader is None:
            raise ValueError("a Lexicon needs entries or a loader")
        self._entries = None if entries is None else tuple(entries)
        self._loader = loader
        self._size = size
        self.content_hash = content_hash
        self.path = path
        self.name = name

    @property
    def entries(self) -> tuple[LexiconEntry, ...]:
        if self._entries is None:
            assert self._loader is not None  # guaranteed by __init__
            self._entries = tuple(self._loader())
            self._loader = None
        return self._entries

    def __len__(self) -> int:
        if self._entries is None and self._size is not None:
            return self._size
        return len(self.entries)

    def __repr__(self) -> str:
        return f"Lexicon(name={self.name!r}, entries={len(self)}, content_hash={self.content_hash[:12]!r})"

    @property
    def cuis(self) -> set[str]:
        return {e.cui for e in self.entries}

    @classmethod
    def from_entries(cls, entries: Iterable[LexiconEntry], name: str = "memory") -> "Lexicon":
        """A lexicon held in memory; its hash is the hash of its TSV serialization."""
        entries = tuple(entries)
        return cls(entries, hash_bytes(format_lexicon(entries).encode("utf-8")), None, name)


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _clean(field: str) -> str:
    # A tab or newline inside a name would break the TSV layout.
    return " ".join(field.replace("\t", " ").split()) if ("\t" in field or "\n" in field or "\r" in field) else field


def format_entry(entry: LexiconEntry, with_count: bool = False) -> str:
    row = [_clean(entry.cui), _clean(entry.name), _clean(entry.source), ",".join(entry.semtypes),
           "Y" if entry.preferred else "N"]
    if with_count:
        row.append(str(entry.count))
    return "\t".join(row)


def header(with_count: bool = False) -> str:
    return "\t".join(COLUMNS if with_count else REQUIRED_COLUMNS)


def format_lexicon(entries: Sequence[LexiconEntry]) -> str:
    with_count = any(e.count != 1 for e in entries)
    lines = [header(with_count)] + [format_entry(e, with_count) for e in entries]
    return "\n".join(lines) + "\n"


def write_lexicon(path: str | Path, entries: Iterable[LexiconEntry], with_count: bool | None = None) -> int:
    """Write entries as a lexicon TSV file atomically; returns the number of entries written.

    With ``with_count=None`` the ``count`` column is written when some entry has
    a count other than 1 (the entries are then held in memory once).
    """
    path = Path(path)
    if with_count is None:
        entries = list(entries)
        with_count = any(e.count != 1 for e in entries)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    n = 0
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(header(with_count) + "\n")
            for e in entries:
                f.write(format_entry(e, with_count) + "\n")
                n += 1
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ShareNerError(f"{path}: cannot write lexicon: {exc.strerror or exc}") from None
    return n


def parse_lexicon(text: str, path: str | Path | None = None) -> list[LexiconEntry]:
    """Parse lexicon TSV text; errors name the file and line."""
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise InputError(path, "empty lexicon: expected a header line " + "\\t".join(REQUIRED_COLUMNS), 1)
    columns = [c.strip().lower() for c in lines[0].split("\t")]
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise InputError(path, f"unknown lexicon column(s) {', '.join(map(repr, unknown))}; "
                               f"allowed: {', '.join(COLUMNS)}", 1)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise InputError(path, f"missing lexicon column(s) {', '.join(missing)}; "
                               f"expected: {', '.join(REQUIRED_COLUMNS)} [count]", 1)
    if len(set(columns)) != len(columns):
        raise InputError(path, "a lexicon column appears twice in the header", 1)
    pos = {c: i for i, c in enumerate(columns)}
    i_cui, i_name, i_src, i_sty, i_pref = (pos[c] for c in REQUIRED_COLUMNS)
    i_count = pos.get("count")
    width = len(columns)
    entries: list[LexiconEntry] = []
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        row = line.split("\t")
        if len(row) != width:
            raise InputError(path, f"found {len(row)} tab-separated fields; the header has {width}", lineno)
        cui, name = row[i_cui].strip(), row[i_name].strip()
        if not cui or not name:
            raise InputError(path, "empty cui or name", lineno)
        pref = row[i_pref].strip().upper()
        if pref not in ("Y", "N", ""):
            raise InputError(path, f"preferred flag {row[i_pref]!r}; expected Y or N", lineno)
        count = 1
        if i_count is not None and row[i_count].strip():
            try:
                count = int(row[i_count])
            except ValueError:
                raise InputError(path, f"count {row[i_count]!r} is not an integer", lineno) from None
        sty = tuple(t for t in row[i_sty].strip().split(",") if t)
        entries.append(LexiconEntry(cui, name, row[i_src].strip(), sty, pref == "Y", count))
    if not entries:
        raise InputError(path, "empty lexicon: the header is followed by no entries")
    return entries


def cache_dir() -> Path:
    """``$SHARE_NER_CACHE``, else ``$XDG_CACHE_HOME/share-ner``, else ``~/.cache/share-ner``."""
    if os.environ.get("SHARE_NER_CACHE"):
        return Path(os.environ["SHARE_NER_CACHE"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "share-ner"
    return Path.home() / ".cache" / "share-ner"


