"""One regex for many phrases: a character trie, shared by the ConText triggers and the body-site names; and the
word count that limits how far a trigger or a site reaches."""

from __future__ import annotations

import re
from typing import Any, Iterable


def _trie_pattern(phrases: Iterable[str]) -> str:
    """One regex matching any of ``phrases`` (lower case, words joined by one space) at word boundaries, the
    longest at each position: a character trie, so that the engine follows one branch per character."""
    trie: dict[str, Any] = {}
    for phrase in phrases:
        node = trie
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = {}  # a phrase ends here

    def after(node: dict[str, Any], last: str) -> str:
        alts = [(r"\s+" if ch == " " else re.escape(ch)) + after(child, ch)
                for ch, child in sorted(node.items()) if ch]
        if "" in node:
            alts.append(r"(?!\w)" if re.match(r"\w", last) else "")
        if len(alts) == 1:
            return alts[0]
        return "(?:" + "|".join(alts) + ")"

    words = {ch: child for ch, child in trie.items() if re.match(r"\w", ch)}
    others = {ch: child for ch, child in trie.items() if ch not in words}
    parts = []
    if words:
        parts.append(r"(?<!\w)" + after(words, ""))
    if others:
        parts.append(after(others, ""))
    return "|".join(parts) if parts else r"(?!x)x"


_MORE: dict[int, re.Pattern[str]] = {}  # n -> a regex matching n + 1 words from where it is tried


def more_words(text: str, a: int, b: int, n: int) -> bool:
    """True when more than ``n`` words (runs of ``\\w``; one cut by either end counts) lie between offsets ``a`` and
    ``b``: one match of ``n + 1`` words from ``a`` (it stops there), so a window of a few words costs a few words,
    however far ``b``."""
    if (b - a + 1) // 2 <= n:  # k words take at least 2k - 1 characters
        return False
    regex = _MORE.get(n)
    if regex is None:
        regex = _MORE[n] = re.compile(r"\W*\w+(?:\W+\w+){%d}" % n)
    return regex.match(text, a, b) is not None
