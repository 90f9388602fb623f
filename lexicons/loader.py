"""Loading a lexicon file: the TSV format of :mod:`share_ner.lexicons.lexicon`, with its compiled index cached.

Kept apart from the format so the import order runs one way: lexicon (format) <- index <- hpo <- loader.
"""

from __future__ import annotations

from pathlib import Path

from share_ner.errors import InputError
from share_ner.lexicons.hpo import default_lexicon
from share_ner.lexicons.index import cached_index
from share_ner.lexicons.lexicon import Lexicon, LexiconEntry, hash_bytes, parse_lexicon


def load_lexicon(path: str | Path) -> Lexicon:
    """Read a lexicon TSV file; ``"hpo"`` names the embedded default lexicon."""
    if str(path) == "hpo":
        return default_lexicon()
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read lexicon: {exc.strerror or exc}") from None
    digest = hash_bytes(data)

    def parse() -> list[LexiconEntry]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, f"lexicon is not valid UTF-8 (byte {exc.start})") from None
        return parse_lexicon(text, path)

    index = cached_index(digest)
    if index is not None:
        # This content was parsed and compiled before: parse again only if the entries are asked for.
        return Lexicon(None, digest, path, path.name, loader=parse, size=len(index))
    return Lexicon(parse(), digest, path, path.name)
