"""ConText rules as data: the packaged ``context_rules.tsv`` and a site's own file on top of it.

One rule a line, tab-separated, ``#`` starts a comment line::

    phrase    attribute    value    direction    [window]

- ``phrase``: words matched case-insensitively at word boundaries, any run of spaces matching any whitespace.
  A word may be alternatives joined by ``|``: "mother|father has|had" is the four phrases "mother has", "mother
  had", "father has", "father had", each a rule of its own.
  With direction ``around`` the phrase has two parts joined by ``...`` ("cross ... off"): the first before the
  mention, the second after it. With direction ``section`` it is a section name as
  :func:`share_ner.text.normalize_section` writes it ("family history"). A ``terminate`` rule's phrase may be
  ``@`` and an attribute (``@negation``): every trigger of that attribute ends the scopes the rule names ("no"
  ends the scope of "possible" in "possible pneumonia, no effusion").
- ``attribute``: one of :data:`share_ner.document.ATTRIBUTE_VALUES` (not ``body_location``), or ``pseudo`` (a
  phrase that contains a trigger but is none, "no increase": it matches first and sets nothing), or
  ``terminate`` (ends the scope of triggers, "but").
- ``value``: an allowed value of the attribute. The attribute's default value removes an earlier rule of that
  phrase and attribute (how a site file switches a packaged rule off). ``pseudo`` takes ``*``; ``terminate``
  takes ``*`` or attribute names joined by ``,`` (the triggers whose scope it ends).
- ``direction``: ``forward`` (the trigger's scope is the words after it), ``backward`` (before it),
  ``bidirectional``, ``around``, ``section``; ``-`` for ``pseudo`` and ``terminate``. A ``terminate`` rule may
  instead say ``clause``: a conjunction that opens a new clause (", and") unless it closes a list, so it ends the
  scope of a trigger before it only when no comma lies between the two ("no A, and B": B is not in the scope of
  "no"; "no A, B, and C": C is).
- ``window``: the most words between trigger and mention (default: to the sentence's end or a terminator).

A site file read with :func:`load_rules` after the packaged one adds rules, and replaces the packaged rule with
the same phrase, attribute and direction (a terminator: and value). One file must not hold two such rules. Any
unknown attribute, value or direction, or a malformed line, is an error naming the file and line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Iterable

from share_ner.document import ATTRIBUTE_VALUES
from share_ner.errors import InputError

PSEUDO = "pseudo"
TERMINATE = "terminate"
DIRECTIONS = ("forward", "backward", "bidirectional", "around", "section")
TRIGGERS = "@"  # "@negation" as a terminator's phrase: every trigger of negation
CLAUSE = "clause"  # a terminator's direction: it ends a forward scope unless a comma lies between (a list)
GAP = "..."
ALTERNATIVES = "|"  # between the alternatives of one word of a phrase
PACKAGED = "context_rules.tsv"


@dataclass(frozen=True, slots=True)
class Rule:
    """One line of a rules file (``phrase`` lower-cased, its words joined by one space)."""

    phrase: str
    attribute: str
    value: str
    direction: str
    window: int | None = None
    source: str = ""  # "file:line", for messages

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What a later rule replaces: phrase, attribute and direction (and, for a terminator, the attributes
        it ends: one phrase may end different scopes)."""
        return (self.phrase, self.attribute, self.direction, self.value if self.attribute == TERMINATE else "")

    @property
    def terminates(self) -> frozenset[str]:
        """For a ``terminate`` rule: the attributes whose scope it ends."""
        if self.attribute != TERMINATE:
            return frozenset()
        return frozenset(ATTRIBUTE_VALUES) if self.value == "*" else frozenset(self.value.split(","))


def normalize_phrase(phrase: str) -> str:
    return " ".join(phrase.lower().split())


def parse_rules(text: str, source: str | Path) -> list[Rule]:
    """The rules of one file's text; raises :class:`InputError` naming ``source`` and the line."""
    rules = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        for rule in expand_alternatives(_parse_line(line, source, lineno)):
            if rule.key in seen:
                raise InputError(source, f"the rule of line {seen[rule.key]} again (same phrase, attribute and "
                                         f"direction: {rule.phrase!r}); one of them must go", lineno)
            seen[rule.key] = lineno
            rules.append(rule)
    return rules


def expand_alternatives(rule: Rule) -> list[Rule]:
    """``rule`` once for each phrase its word alternatives spell ("mother|father has|had": four phrases)."""
    if ALTERNATIVES not in rule.phrase:
        return [rule]
    phrases = [""]
    for word in rule.phrase.split(" "):
        options = word.split(ALTERNATIVES)
        phrases = [f"{p} {o}" if p else o for p in phrases for o in options]
    return [replace(rule, phrase=p) for p in phrases]


def _parse_line(line: str, source: str | Path, lineno: int) -> Rule:
    cols = line.split("\t")
    if len(cols) not in (4, 5):
        raise InputError(source, f"expected 4 or 5 tab-separated columns (phrase, attribute, value, direction, "
                                 f"[window]), found {len(cols)}", lineno)
    phrase, attribute, value, direction = (c.strip() for c in cols[:4])
    phrase = normalize_phrase(phrase)
    if not phrase:
        raise InputError(source, "empty phrase", lineno)
    window = None
    if len(cols) == 5 and cols[4].strip():
        if not cols[4].strip().isdigit() or int(cols[4]) < 1:
            raise InputError(source, f"window {cols[4].strip()!r} is not a whole number of words >= 1", lineno)
        window = int(cols[4])
    known = (*ATTRIBUTE_VALUES, PSEUDO, TERMINATE)
    if attribute not in known:
        raise InputError(source, f"unknown attribute {attribute!r}; expected one of {', '.join(known)}", lineno)
    if attribute == PSEUDO and direction != "-":
        raise InputError(source, f"direction {direction!r} for a pseudo rule; expected '-'", lineno)
    if attribute == TERMINATE and direction not in ("-", CLAUSE):
        raise InputError(source, f"direction {direction!r} for a terminate rule; expected '-' or {CLAUSE!r}", lineno)
    if attribute in (PSEUDO, TERMINATE):
        if attribute == PSEUDO and value != "*":
            raise InputError(source, f"value {value!r} for a pseudo rule; expected '*'", lineno)
        if attribute == TERMINATE and value != "*":
            bad = [v for v in value.split(",") if v not in ATTRIBUTE_VALUES]
            if bad or not value:
                raise InputError(source, f"terminate value {value!r}: expected '*' or attribute names joined by "
                                         f"',' ({', '.join(ATTRIBUTE_VALUES)})", lineno)
    else:
        if direction not in DIRECTIONS:
            raise InputError(source, f"unknown direction {direction!r}; expected one of {', '.join(DIRECTIONS)}",
                             lineno)
        allowed = ATTRIBUTE_VALUES[attribute]
        if value not in allowed:
            raise InputError(source, f"{attribute} value {value!r} is not one of {', '.join(allowed)}", lineno)
    if phrase.startswith(TRIGGERS):
        if attribute != TERMINATE or phrase[1:] not in ATTRIBUTE_VALUES:
            raise InputError(source, f"{phrase!r}: {TRIGGERS!r} and an attribute name is the phrase of a terminate "
                                     f"rule only ({', '.join(ATTRIBUTE_VALUES)})", lineno)
    if any(not option for word in phrase.split(" ") for option in word.split(ALTERNATIVES)):
        raise InputError(source, f"{phrase!r}: an empty alternative; {ALTERNATIVES!r} stands between the "
                                 "alternatives of one word (\"mother|father has\")", lineno)
    parts = [p.strip() for p in phrase.split(GAP)]
    if direction == "around":
        if len(parts) != 2 or not all(parts):
            raise InputError(source, f"an around rule's phrase needs two parts joined by {GAP!r}", lineno)
    elif len(parts) != 1:
        raise InputError(source, f"{GAP!r} in a phrase is only for direction 'around'", lineno)
    if direction == "section" and window is not None:
        raise InputError(source, "a section rule takes no window", lineno)
    return Rule(phrase, attribute, value, direction, window, f"{source}:{lineno}")


def merge_rules(*layers: Iterable[Rule]) -> list[Rule]:
    """Rules of several files, later ones replacing earlier ones with the same phrase, attribute and direction;
    a rule setting its attribute's default value removes the one it replaces and is dropped itself."""
    merged: dict[tuple[str, str, str, str], Rule] = {}
    for layer in layers:
        for rule in layer:
            merged.pop(rule.key, None)
            if rule.attribute in ATTRIBUTE_VALUES and rule.value == ATTRIBUTE_VALUES[rule.attribute][0]:
                continue
            merged[rule.key] = rule
    return list(merged.values())


def packaged_rules() -> list[Rule]:
    """The rules shipped in ``share_ner/data/context_rules.tsv``."""
    ref = resources.files("share_ner").joinpath("data", PACKAGED)
    return parse_rules(ref.read_text(encoding="utf-8"), f"share_ner/data/{PACKAGED}")


def load_rules(site_file: str | Path | None = None) -> list[Rule]:
    """The packaged rules, with a site's own file (``--context-rules``) on top when given."""
    base = packaged_rules()
    if site_file is None:
        return base
    path = Path(site_file)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(path, f"cannot read the rules file ({exc.strerror or exc})") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    return merge_rules(base, parse_rules(text, path))


def phrase_pattern(phrase: str) -> str:
    """A regex for ``phrase``: its words escaped, any whitespace between them; word boundaries at the ends
    where the phrase starts or ends with a word character."""
    words = phrase.split(" ")
    body = r"\s+".join(re.escape(w) for w in words)
    left = r"(?<!\w)" if re.match(r"\w", phrase) else ""
    right = r"(?!\w)" if re.search(r"\w$", phrase) else ""
    return f"{left}{body}{right}"
