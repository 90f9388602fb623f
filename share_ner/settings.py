"""Checking settings read from JSON against a frozen dataclass of settings."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, TypeVar

from share_ner.errors import InputError, ShareNerError
from share_ner.io import read_json_file

T = TypeVar("T")


# The plain types a setting may be declared with, as the dataclasses write them, and the JSON values they take.
_PLAIN = {"bool": ((bool,), "true or false"), "int": ((int,), "an integer"), "float": ((int, float), "a number"),
          "str": ((str,), "a string")}


def _type_error(declared: str, value: Any) -> str | None:
    """What a value of a setting declared ``declared`` (e.g. ``int | None``) must be, when ``value`` is not that;
    None when it is, or when the declared type is not a plain one."""
    parts = [p.strip() for p in declared.split("|")]
    if value is None and "None" in parts:
        return None
    kinds = [_PLAIN[p] for p in parts if p in _PLAIN]
    if len(kinds) != len([p for p in parts if p != "None"]):
        return None  # a composite type: its own class checks it
    if any(isinstance(value, types) and (bool in types or not isinstance(value, bool)) for types, _ in kinds):
        return None
    return " or ".join([k for _, k in kinds] + (["null"] if "None" in parts else []))


def checked_settings(cls: type, data: Any, what: str) -> dict[str, Any]:
    """``data`` as a dict, or a :class:`ShareNerError` when it is not a mapping, has keys ``cls`` lacks, or has a
    value of another type than the field declares (for plain types: true/false, integers, numbers, strings).

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
    for f in fields(cls):
        if f.name in data and isinstance(f.type, str):
            want = _type_error(f.type, data[f.name])
            if want is not None:
                raise ShareNerError(f"{what} setting {f.name!r} must be {want}, got {repr(data[f.name])[:40]}")
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
