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
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from share_ner import __version__
from share_ner.errors import ShareNerError
from share_ner.io import atomic_write_text

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


def write_config(directory: Path, data: dict[str, Any]) -> Path:
    """Write ``config.json`` (format and package version are added here) atomically."""
    payload = {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION, "share_ner_version": __version__}
    payload.update(data)
    path = directory / FILES.config
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=False) + "\n")
    return path


def read_model_info(directory: str | Path) -> ModelInfo:
    """Read and check a model directory: existence, format version, and every file config.json lists.

    Raises:
        ModelError: one line naming the directory and the missing file or the two format versions.
    """
    directory = Path(directory)
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
            f"{directory}: model format version {version} (written by share-ner "
            f"{data.get('share_ner_version', '?')}) cannot be read by share-ner {__version__}, "
            f"which reads model format version {MODEL_FORMAT_VERSION}; retrain the model or use that version"
        )
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
    return info


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


def read_terms(path: Path) -> Iterator[tuple[str, str]]:
    """Read the TSV written by :func:`write_terms`."""
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
        header = next(reader, None)
        if header != ["term", "semtype"]:
            raise ModelError(f"{path}: expected the header 'term<TAB>semtype'")
        for lineno, row in enumerate(reader, start=2):
            if len(row) != 2:
                raise ModelError(f"{path}:{lineno}: expected 2 columns, found {len(row)}")
            yield row[0], row[1]
