"""The trained model directory: fixed file names, ``config.json``, and the compatibility check.

A model directory holds everything needed to tag and normalize::

    model.crfsuite      the CRFsuite weights
    config.json         format + package version, tagger/feature settings, what was trained on
    terms.tsv           term-matcher terms (lexicon names and training mentions), when used
    clusters.tsv        copy of the word clusters file, when used
    pairing.json        the learned fragment pairing (``share_ner.tagging.pairing``), when the tagger uses it
    normalizer/         the fitted Normalizer, when fitted

``config.json`` records ``format_version``: a model written in another format
version is refused with one line naming both versions; any share-ner that
reads the same format version can load the model whatever its package version.

A model directory is untrusted input (copied between machines, cut short by a full disk, changed by hand).
``config.json`` holds a manifest of the model's other files (``files``: each one's size and SHA-256, written when
the model is saved) and a checksum of its own content (``checksum``); :func:`read_model_info` checks both, and
the types of the sections it reads, before anything else reads the model, and refuses a bad model with one line
naming the file; the CRFsuite file's structure is checked too before CRFsuite reads it
(:func:`share_ner.tagging.weights.check_model_bytes`). A model saved before the manifest existed is refused with
one line saying how to record its files once (:func:`seal_model`, ``share-ner model seal``): nothing else could
tell a weight changed by a flipped bit or a gazetteer cut short from the model as it was trained.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from share_ner import __version__
from share_ner.errors import ShareNerError
from share_ner.io import atomic_write_bytes, atomic_write_text, file_sha256

MODEL_FORMAT = "share-ner-model"
MODEL_FORMAT_VERSION = 1


class ModelFiles(NamedTuple):
    """The fixed names of a model directory's parts."""

    crf: str = "model.crfsuite"
    config: str = "config.json"
    terms: str = "terms.tsv"
    clusters: str = "clusters.tsv"
    pairing: str = "pairing.json"
    normalizer: str = "normalizer"  # a directory: NORMALIZER_FILES


class NormalizerFiles(NamedTuple):
    """The fixed names inside a model's normalizer directory (``share_ner.linking.store`` reads them)."""

    config: str = "normalizer.json"
    gazetteer: str = "gazetteer.tsv"  # the training mention strings with their labels and counts
    lexicon_copy: str = "lexicon.tsv"  # a lexicon small enough to keep with the model
    abbreviations: str = "abbreviations.tsv"  # a site's own abbreviation list, kept with the normalizer fitted on it
    contexts: str = "contexts.npz"  # training-note vectors of ambiguous training strings


FILES = ModelFiles()
NORMALIZER_FILES = NormalizerFiles()


class ModelError(ShareNerError):
    """A model directory that is missing, incomplete or written by an incompatible version."""


@dataclass(frozen=True)
class ModelInfo:
    """The parsed ``config.json`` of a model directory and where it lives."""

    directory: Path
    data: dict[str, Any]

    @property
    def tagger(self) -> dict[str, Any]:
        return self.data.get("tagger", {})

    @property
    def has_terms(self) -> bool:
        return bool(self.data.get("terms"))

    @property
    def has_clusters(self) -> bool:
        return bool(self.data.get("clusters"))

    @property
    def has_normalizer(self) -> bool:
        return bool(self.data.get("normalizer"))

    def path(self, name: str) -> Path:
        return self.directory / name


MANIFEST_KEY = "files"
CHECKSUM_KEY = "checksum"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def file_manifest(directory: Path) -> dict[str, dict[str, Any]]:
    """Each file below ``directory`` but ``config.json`` and hidden files, by path relative to it (``/``
    separated): its size in bytes and SHA-256."""
    directory = Path(directory)
    out = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if not path.is_file() or rel == Path(FILES.config) or any(part.startswith(".") for part in rel.parts):
            continue
        out[rel.as_posix()] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    return out


def config_checksum(data: dict[str, Any]) -> str:
    """The SHA-256 of ``config.json``'s content but its checksum, written canonically (sorted keys)."""
    content = {k: v for k, v in data.items() if k != CHECKSUM_KEY}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


def write_config(directory: Path, data: dict[str, Any]) -> Path:
    """Write ``config.json`` atomically: ``data`` with the format and package version, the manifest of the
    directory's files (kept when ``data`` has one: the files are those it describes) and the checksum."""
    payload = {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION, "share_ner_version": __version__}
    payload.update(data)
    payload.pop(CHECKSUM_KEY, None)
    if MANIFEST_KEY not in payload:
        payload[MANIFEST_KEY] = file_manifest(directory)
    payload[CHECKSUM_KEY] = config_checksum(payload)
    path = directory / FILES.config
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


# The sections of config.json the loader reads, and the types they must have (None: the section may be null).
_SECTIONS: dict[str, tuple[type, ...]] = {"tagger": (dict,), "terms": (dict, type(None)), "clusters": (dict, type(None)),
                                           "normalizer": (dict, type(None)), "lexicon": (dict, type(None)),
                                           "training": (dict,), MANIFEST_KEY: (dict,), CHECKSUM_KEY: (str,)}


_KINDS = {dict: "an object", list: "a list", str: "a string", bool: "true or false", int: "a number",
          float: "a number", type(None): "null"}


def _check_sections(path: Path, data: dict[str, Any]) -> None:
    for key, types in _SECTIONS.items():
        if key in data and not isinstance(data[key], types):
            want = " or ".join(_KINDS[t] for t in types)
            raise ModelError(f"{path}: \"{key}\" must be {want}, not {_KINDS.get(type(data[key]), 'that')}")


def _check_manifest(directory: Path, config_path: Path, data: dict[str, Any]) -> None:
    """The checksum of ``config.json`` and every file of its manifest (size, then SHA-256)."""
    if MANIFEST_KEY not in data or CHECKSUM_KEY not in data:
        missing = CHECKSUM_KEY if MANIFEST_KEY in data else MANIFEST_KEY
        raise ModelError(f"{config_path}: has no \"{missing}\" (changed after the model was saved?); retrain the "
                         "model or restore its directory")
    if data[CHECKSUM_KEY] != config_checksum(data):
        raise ModelError(f"{config_path}: its content differs from its checksum (corrupted, or changed after the "
                         "model was saved); retrain the model or restore its directory")
    for rel, entry in data[MANIFEST_KEY].items():
        parts = Path(rel).parts
        if (not isinstance(entry, dict) or Path(rel).is_absolute() or ".." in parts or not parts
                or not isinstance(entry.get("bytes"), int) or not _SHA256.match(str(entry.get("sha256")))):
            raise ModelError(f"{config_path}: a bad manifest entry for {rel!r}")
        path = directory / rel
        try:
            size = path.stat().st_size
        except OSError:
            raise ModelError(f"{path}: missing (the model's manifest lists it)") from None
        if not path.is_file():
            raise ModelError(f"{path}: not a file (the model's manifest lists a file)")
        if size != entry["bytes"]:
            raise ModelError(f"{path}: {size} bytes where the model's manifest has {entry['bytes']} (truncated or "
                             "changed); retrain the model or restore its directory")
        try:
            digest = file_sha256(path)
        except OSError as exc:
            raise ModelError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if digest != entry["sha256"]:
            raise ModelError(f"{path}: its content differs from the model's manifest (corrupted or changed); "
                             "retrain the model or restore its directory")


def _read_config(directory: Path) -> dict[str, Any]:
    """``config.json`` of ``directory``, checked: it exists, is JSON, is a model config of this format version, and
    its sections have the types the loader expects."""
    if not directory.exists():
        raise ModelError(f"{directory}: model directory does not exist")
    if not directory.is_dir():
        raise ModelError(f"{directory}: not a model directory (expected a directory holding {FILES.config})")
    config_path = directory / FILES.config
    if not config_path.is_file():
        raise ModelError(f"{directory}: incomplete model directory: missing {FILES.config}")
    try:
        data = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{config_path}: unreadable model config ({exc.__class__.__name__})") from None
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        raise ModelError(f"{config_path}: not a share-ner model config (no \"format\": \"{MODEL_FORMAT}\")")
    version = data.get("format_version")
    if version != MODEL_FORMAT_VERSION:
        raise ModelError(
            f"{directory}: model format version {version!r} (written by share-ner "
            f"{data.get('share_ner_version', '?')}) cannot be read by share-ner {__version__}, "
            f"which reads model format version {MODEL_FORMAT_VERSION}; retrain the model or use that version"
        )
    _check_sections(config_path, data)
    return data


def read_model_info(directory: str | Path) -> ModelInfo:
    """Read and check a model directory: existence, format version, the types of config.json's sections, every
    file config.json lists, and its checksum and manifest (every file's size and SHA-256).

    Raises:
        ModelError: one line naming the directory or the bad file, or the two format versions.
    """
    directory = Path(directory)
    data = _read_config(directory)
    info = ModelInfo(directory, data)
    required = [FILES.crf]
    if info.has_terms:
        required.append(FILES.terms)
    if info.has_clusters:
        required.append(FILES.clusters)
    if info.tagger.get("pairing") == "learned" and info.tagger.get("scheme", "biohd") == "biohd":
        required.append(FILES.pairing)
    for name in required:
        if not (directory / name).is_file():
            raise ModelError(f"{directory}: incomplete model directory: missing {name}")
    if info.has_normalizer and not (directory / FILES.normalizer).is_dir():
        raise ModelError(f"{directory}: incomplete model directory: missing {FILES.normalizer}/")
    if MANIFEST_KEY not in data and CHECKSUM_KEY not in data:
        raise ModelError(f"{directory}: saved before share-ner checked the files of a model (its {FILES.config} "
                         f"has no manifest); if the model is intact, record its files once with "
                         f"'share-ner model seal {directory}', or retrain it")
    _check_manifest(directory, directory / FILES.config, data)
    return info


def seal_model(directory: str | Path, check: Callable[[Path], object], *, force: bool = False) -> int:
    """Record the manifest and checksum of a model saved before they existed, or (``force``) of one whose files
    or config were changed on purpose: its files are taken as they are now, then ``check(directory)`` (a full
    load) must pass, else the config is put back as it was. Returns how many files the manifest lists.

    Raises:
        ModelError: the model is sealed already (and intact, or, without ``force``, not: the file that differs),
            or it fails ``check``.
    """
    directory = Path(directory)
    config_path = directory / FILES.config
    data = _read_config(directory)
    if (MANIFEST_KEY in data or CHECKSUM_KEY in data) and not force:
        _check_manifest(directory, config_path, data)
        raise ModelError(f"{directory}: sealed already, and every file matches its manifest")
    before = config_path.read_bytes()
    data.pop(MANIFEST_KEY, None)
    data.pop(CHECKSUM_KEY, None)
    write_config(directory, data)
    try:
        check(directory)
    except BaseException:
        atomic_write_bytes(config_path, before)
        raise
    return len(read_model_info(directory).data[MANIFEST_KEY])


def write_terms(path: Path, terms: Iterable[tuple[str, str]]) -> int:
    """Write ``(term, semantic type)`` pairs as a two-column TSV with a header; returns the row count."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_NONE, escapechar="\\")
        writer.writerow(["term", "semtype"])
        for term, semtype in terms:
            # Tabs and newlines cannot occur in a matched term; drop them rather than escape.
            writer.writerow([" ".join(term.split()), semtype])
            n += 1
    return n


def read_terms(path: Path, rows: int | None = None) -> Iterator[tuple[str, str]]:
    """Read the TSV written by :func:`write_terms`; with ``rows`` (what config.json records), a file with another
    number of rows is an error (cut short, or changed)."""
    lineno = 1
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
            header = next(reader, None)
            if header != ["term", "semtype"]:
                raise ModelError(f"{path}: expected the header 'term<TAB>semtype'")
            for lineno, row in enumerate(reader, start=2):
                if len(row) != 2:
                    raise ModelError(f"{path}:{lineno}: expected 2 columns, found {len(row)}")
                yield row[0], row[1]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ModelError(f"{path}:{lineno + 1}: not a terms file ({exc.__class__.__name__})") from None
    if isinstance(rows, int) and not isinstance(rows, bool) and lineno - 1 != rows:
        raise ModelError(f"{path}: {lineno - 1} terms where {FILES.config} records {rows} (truncated or changed); "
                         "retrain the model or restore its directory")


def model_identity(directory: Path) -> str:
    """What a run's ``run.json`` records of its model: its content (the checksum of its ``config.json``, which covers
    the size and SHA-256 of every file), never its path, so that the same model found elsewhere (the packaged
    default after ``pip install -e .`` instead of ``pip install .``) resumes the same run."""
    config = Path(directory) / FILES.config
    try:
        checksum = json.loads(config.read_text(encoding="utf-8")).get(CHECKSUM_KEY)
    except (OSError, ValueError, AttributeError):
        checksum = None  # loading the model names the problem; the identity falls back to the bytes
    if not isinstance(checksum, str):
        checksum = file_sha256(config) if config.is_file() else "no config"
    return f"model {checksum[:16]}"
