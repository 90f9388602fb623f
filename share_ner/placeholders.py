"""De-identification placeholders: patterns as data, one token each, never a sentence end.

De-identified notes replace names, dates and places by placeholders whose style
depends on the tool that removed them: MIMIC-III's ``[**Hospital1 18**]``,
MIMIC-IV's ``___``, ``**NAME[ZZZ]`` / ``***PATH-NUMBER[1]``, ``<PERSON>``. The
patterns live in ``share_ner/data/placeholders.tsv`` (``name<TAB>regex``); a
site adds its own in a file of the same format (``--placeholders FILE`` on
``share-ner tag`` and ``share-ner train``). :mod:`share_ner.text` masks every
match before tokenizing, so a placeholder is exactly one token with its true
offsets.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Sequence

from share_ner.errors import InputError
from share_ner.io import read_text_file

PLACEHOLDERS_PATH = Path(__file__).parent / "data" / "placeholders.tsv"
COLUMNS = ("name", "regex")
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def load_placeholder_patterns(path: str | Path | None = None) -> dict[str, str]:
    """``{name: regex}`` from a placeholder TSV (default: the packaged file).

    A missing header, a wrong field count, a duplicate or malformed name, a regex
    that does not compile or one that matches the empty string raises
    :class:`~share_ner.errors.InputError` naming the file and line.
    """
    path = Path(path) if path is not None else PLACEHOLDERS_PATH
    lines = read_text_file(path, "placeholder pattern file").splitlines()
    header_at = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), None)
    if header_at is None or lines[header_at].split("\t") != list(COLUMNS):
        raise InputError(path, "expected the header 'name<TAB>regex'", (header_at or 0) + 1)
    patterns: dict[str, str] = {}
    for number in range(header_at + 2, len(lines) + 1):
        line = lines[number - 1]
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise InputError(path, f"expected name<TAB>regex, got {len(fields)} tab-separated fields", number)
        name, regex = fields
        if not _NAME.match(name) or name in patterns:
            raise InputError(path, f"placeholder name {name!r} is malformed or repeated", number)
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            raise InputError(path, f"bad regex for {name!r}: {exc}", number) from None
        if compiled.match(""):
            raise InputError(path, f"the regex for {name!r} matches the empty string", number)
        patterns[name] = regex
    return patterns


def first_characters(regex: str) -> frozenset[str] | None:
    """The characters a match of ``regex`` can start with, when its parse says so plainly (literals, character
    sets of literals and ranges, repeats of at least one, groups and alternatives of these); else None."""
    try:
        try:
            from re import _constants, _parser  # what re compiles with (private: no shortcut when they change)
        except ImportError:  # Python 3.10: the same modules under their old names
            import sre_constants as _constants  # type: ignore[no-redef]
            import sre_parse as _parser  # type: ignore[no-redef]

        return _firsts(_parser.parse(regex), _constants)
    except Exception:  # noqa: BLE001 - an unforeseen parse: no shortcut, the same matches
        return None


def _firsts(sub: Any, c: Any) -> frozenset[str] | None:
    if sub.state.flags & ~c.SRE_FLAG_UNICODE or not len(sub.data):
        return None  # inline flags ((?i), (?x), ...) or nothing to start with
    op, av = sub.data[0]
    if op is c.LITERAL:
        return frozenset(chr(av))
    if op is c.IN:
        chars: set[str] = set()
        for kind, value in av:
            if kind is c.LITERAL:
                chars.add(chr(value))
            elif kind is c.RANGE and value[1] - value[0] < 256:
                chars.update(map(chr, range(value[0], value[1] + 1)))
            else:
                return None  # negated sets, categories (\d, \w), wide ranges
        return frozenset(chars)
    if op is c.MAX_REPEAT or op is c.MIN_REPEAT:
        low, _, inner = av
        return _firsts(inner, c) if low >= 1 else None
    if op is c.SUBPATTERN:
        _, add, remove, inner = av
        return _firsts(inner, c) if not (add or remove) else None
    if op is c.BRANCH:
        found = [_firsts(alt, c) for alt in av[1]]
        return None if any(f is None for f in found) else frozenset[str]().union(*found)  # type: ignore[arg-type]
    return None


def alternation(patterns: Iterable[str]) -> str:
    """One regex of ``patterns``, tried left to right at each position."""
    return "|".join(f"(?:{p})" for p in patterns)


@lru_cache(maxsize=16)
def _combined(files: tuple[str, ...]) -> re.Pattern[str]:
    patterns = load_placeholder_patterns()
    for f in files:
        patterns.update(load_placeholder_patterns(f))
    # One alternation, tried left to right at each position: the packaged styles first. Led by a lookahead for
    # the characters every match starts with, the engine skips to those rather than trying each pattern at each
    # character (the same matches, a few times faster on a note).
    combined = alternation(patterns.values())
    starts = [first_characters(p) for p in patterns.values()]
    if starts and all(starts):
        chars = "".join(sorted(re.escape(ch) for ch in frozenset[str]().union(*starts)))
        combined = f"(?=[{chars}])(?:{combined})"
    return re.compile(combined)


_site_files: tuple[str, ...] = ()


def use_site_placeholders(files: Sequence[str | Path]) -> None:
    """Add a site's placeholder files to the packaged patterns for this process (validated now)."""
    global _site_files
    resolved = tuple(str(Path(f)) for f in files)
    _combined(resolved)  # a bad file fails here, before any note is read
    _site_files = resolved


def site_placeholder_files() -> tuple[str, ...]:
    """The site files in use (for run records)."""
    return _site_files


def placeholder_regex() -> re.Pattern[str]:
    """The compiled alternation of every placeholder pattern in use (packaged + site)."""
    return _combined(_site_files)
