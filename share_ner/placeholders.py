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
        risk = backtracking_risk(regex)
        if risk is not None:
            raise InputError(path, f"the regex for {name!r} can take exponential time on a note ({risk}); "
                             "rewrite it so that each character can be matched one way only", number)
        patterns[name] = regex
    return patterns


# --- catastrophic backtracking -------------------------------------------------------------------------------
#
# A repeat whose body can end in another repeat that eats what the next round of the body starts with ((a+)+,
# (\w+\s?)+), or whose alternatives match the same text in several ways ((a|aa)+), makes the regex engine try
# exponentially many ways to split a text that does not match. Such a site pattern is refused when it is loaded;
# what this check misses (a polynomial blow-up such as a*a*a*a*b) is stopped by the time limit per note
# (share_ner.batch.timeout).


def _re_internals() -> tuple[Any, Any, Any]:
    try:
        from re import _compiler, _constants, _parser  # Python 3.11+
    except ImportError:  # Python 3.10
        import sre_compile as _compiler  # type: ignore[no-redef]
        import sre_constants as _constants  # type: ignore[no-redef]
        import sre_parse as _parser  # type: ignore[no-redef]
    return _parser, _compiler, _constants


# Characters an overlap of two character classes is tried on: ASCII and a few of other scripts and kinds.
_SAMPLE = [chr(c) for c in range(128)] + list("\u00a0\u00b7\u00e9\u00df\u00c9\u0394\u03b1\u0436\u05d0\u4e2d\u2028\u2013\uff10")


class _Regex:
    """The parse of one regex, and the questions the backtracking check asks of its parts."""

    def __init__(self, regex: str) -> None:
        self.parser, self.compiler, self.c = _re_internals()
        self.tree = self.parser.parse(regex)
        self.state = self.tree.state
        self.atoms = (self.c.LITERAL, self.c.NOT_LITERAL, self.c.IN, self.c.ANY)
        self.repeats = (self.c.MAX_REPEAT, self.c.MIN_REPEAT)  # possessive repeats never give back
        self.zero_width = (self.c.AT, self.c.ASSERT, self.c.ASSERT_NOT)
        self.opaque = tuple(getattr(self.c, n) for n in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT") if hasattr(self.c, n))
        self._chars: dict[str, frozenset[str]] = {}

    def chars(self, atom: tuple[Any, Any]) -> frozenset[str]:
        """The sample characters a one-character atom matches."""
        key = repr(atom)
        if key not in self._chars:
            one = self.compiler.compile(self.parser.SubPattern(self.state, [atom]), self.state.flags)
            literal = [chr(atom[1])] if atom[0] is self.c.LITERAL else []
            self._chars[key] = frozenset(ch for ch in _SAMPLE + literal if one.fullmatch(ch))
        return self._chars[key]

    def matches(self, atoms: list[Any] | None) -> frozenset[str] | None:
        if atoms is None:
            return None
        return frozenset().union(*(self.chars(a) for a in atoms))

    def nullable(self, items: Any) -> bool:
        return all(self._nullable_item(op, av) for op, av in items)

    def _nullable_item(self, op: Any, av: Any) -> bool:
        if op in self.atoms:
            return False
        if op in self.repeats:
            return av[0] == 0 or self.nullable(av[2])
        if op is self.c.SUBPATTERN:
            return self.nullable(av[-1])
        if op is self.c.BRANCH:
            return any(self.nullable(alt) for alt in av[1])
        return True  # anchors, lookarounds, back references (the last: when unsure, as if empty)

    def first(self, items: Any) -> list[Any] | None:
        """The atoms a match of ``items`` can start with; None when not plain (a back reference, an atomic group)."""
        out: list[Any] = []
        for op, av in items:
            if op in self.atoms:
                out.append((op, av))
                return out
            if op in self.zero_width:
                continue
            if op in self.repeats or op is self.c.SUBPATTERN:
                inner = self.first(av[2] if op in self.repeats else av[-1])
                if inner is None:
                    return None
                out += inner
            elif op is self.c.BRANCH:
                for alt in av[1]:
                    inner = self.first(alt)
                    if inner is None:
                        return None
                    out += inner
            else:
                return None
            if not self._nullable_item(op, av):
                return out
        return out

    def all_atoms(self, items: Any) -> list[Any]:
        """Every atom of ``items`` outside lookarounds."""
        out: list[Any] = []
        for op, av in items:
            if op in self.atoms:
                out.append((op, av))
            elif op in self.repeats:
                out += self.all_atoms(av[2])
            elif op is self.c.SUBPATTERN:
                out += self.all_atoms(av[-1])
            elif op is self.c.BRANCH:
                for alt in av[1]:
                    out += self.all_atoms(alt)
        return out

    def followed_repeats(self, items: Any) -> list[tuple[Any, Any]]:
        """Each repeat of more than one round in ``items`` (outside lookarounds) with the items that follow it in
        its sequence."""
        out: list[tuple[Any, Any]] = []
        items = list(items)
        for i, (op, av) in enumerate(items):
            if op in self.repeats:
                if av[1] > 1:
                    out.append((av, items[i + 1:]))
                out += self.followed_repeats(av[2])
            elif op is self.c.SUBPATTERN:
                out += self.followed_repeats(av[-1])
            elif op is self.c.BRANCH:
                for alt in av[1]:
                    out += self.followed_repeats(alt)
        return out

    def optional_tails(self, items: Any) -> list[Any]:
        """What a match of ``items`` can end in and may or may not take: the bodies of repeats of more than one
        round, and the alternatives of a branch that has an empty one."""
        out: list[Any] = []
        for op, av in reversed(list(items)):
            if op in self.repeats:
                if av[1] > 1:
                    out.append(av[2])
                out += self.optional_tails(av[2])
            elif op is self.c.SUBPATTERN:
                out += self.optional_tails(av[-1])
            elif op is self.c.BRANCH:
                if any(self.nullable(alt) for alt in av[1]):
                    out += av[1]
                for alt in av[1]:
                    out += self.optional_tails(alt)
            if not self._nullable_item(op, av):
                break
        return out

    def risk(self, items: Any) -> str | None:
        for op, av in items:
            if op in self.repeats:
                found = (self._repeat_risk(av[2]) if av[1] > 1 else None) or self.risk(av[2])
            elif op is self.c.SUBPATTERN:
                found = self.risk(av[-1])
            elif op is self.c.BRANCH:
                found = next((r for r in map(self.risk, av[1]) if r), None)
            else:
                found = None  # atoms; lookarounds and atomic groups do not backtrack into the text around them
            if found:
                return found
        return None

    def _repeat_risk(self, body: Any) -> str | None:
        """Why a repeat of ``body`` (more than one round) can split a text in exponentially many ways."""
        starts = self.matches(self.first(body))
        for tail in self.optional_tails(body):  # taken at the end of this round, or at the start of the next
            eaten = self.matches(self.all_atoms(tail))
            if starts is None or eaten is None or starts & eaten:
                return "the end of a repeated part can match what its next round starts with"
        for inner, after in self.followed_repeats(body):  # a repeat that can eat what follows it in the round
            eaten = self.matches(self.all_atoms(inner[2]))
            follow = self.matches(self.first(after))
            if eaten is None or follow is None or eaten & follow:
                return "a repeat inside a repeat can match what follows it"
        return None


def backtracking_risk(regex: str) -> str | None:
    """Why ``regex`` can take exponential time on a text it does not match (nested repeats that can share
    characters, alternatives that match the same text inside a repeat), or None when this check finds nothing."""
    try:
        parsed = _Regex(regex)
        return parsed.risk(parsed.tree)
    except Exception:  # noqa: BLE001 - a parse this check does not know: the time limit per note still holds
        return None


def first_characters(regex: str) -> frozenset[str] | None:
    """The characters a match of ``regex`` can start with, when its parse says so plainly (literals, character
    sets of literals and ranges, repeats of at least one, groups and alternatives of these); else None."""
    try:
        from re import _constants, _parser  # what re compiles with (private: no shortcut when they change)

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
