"""One regex for many phrases: a character trie, shared by the ConText triggers and the body-site names."""

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
