"""Checking settings read from JSON against a frozen dataclass of settings."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Mapping

from share_ner.errors import ShareNerError


def checked_settings(cls: type, data: Any, what: str) -> dict[str, Any]:
    """``data`` as a dict, or a :class:`ShareNerError` when it is not a mapping or has keys ``cls`` lacks.

    The error lists the unknown keys and the allowed ones, e.g.
    ``unknown normalizer setting(s) 'use_gazeteer'; allowed: use_gazetteer, ...``.
    """
    if not isinstance(data, Mapping):
        raise ShareNerError(f"{what} settings: expected a JSON object, got {type(data).__name__}")
    allowed = [f.name for f in fields(cls)]
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ShareNerError(
            f"unknown {what} setting(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}"
        )
    return dict(data)
