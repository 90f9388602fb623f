"""Checking settings read from JSON against a frozen dataclass of settings."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, TypeVar

from share_ner.errors import InputError, ShareNerError
from share_ner.io import read_json_file

T = TypeVar("T")


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


def load_settings(cls: type[T], path: str | Path, what: str) -> T:
    """``cls.from_dict`` of a JSON file's object (``share-ner train --config``, ``--distant-config``); invalid JSON,
    an unknown key or a bad value is one error naming the file (and, for JSON, the line)."""
    path = Path(path)
    data = read_json_file(path, what)
    try:
        return cls.from_dict(data)  # type: ignore[attr-defined]
    except ShareNerError as exc:
        raise InputError(path, str(exc)) from None
