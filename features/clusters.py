"""Word clusters learned without labels from a user's own notes, and their file format.

Building (``share-ner clusters build NOTES --out FILE``): tokenize the notes, count each
frequent word's neighbours within ±2 tokens (one column per neighbour word and relative
position), weight the counts by positive pointwise mutual information, reduce with
truncated SVD and cluster the unit-length word vectors with mini-batch k-means at several
granularities (64, 256 and 1024 clusters by default) — a coarse-to-fine hierarchy like
Brown cluster bit-string prefixes.

File format: a TSV with the header ``word<TAB>cluster_ids``, one word a line; the word is
the normalized form (:func:`cluster_key`), ``cluster_ids`` is ``K:id`` pairs joined by
commas (``64:12,256:101,1024:873``). A Brown-cluster bit string (``0110101``) is also
accepted as ``cluster_ids``; its prefixes become the features.
"""

from __future__ import annotations

import re
from pathlib import Path

from share_ner.errors import InputError

HEADER = ("word", "cluster_ids")
_DIGITS = re.compile(r"\d")
_IDS = re.compile(r"^\d+:\d+(,\d+:\d+)*$")
_BITS = re.compile(r"^[01]+$")
BIT_PREFIXES = (4, 6, 10, 20)


def cluster_key(word: str) -> str:
    """The form under which a word is clustered and looked up: lowercased, every digit as ``0``."""
    return _DIGITS.sub("0", word.lower())


def parse_cluster_ids(value: str) -> dict[str, str]:
    """Cluster-id features of one ``cluster_ids`` value: ``{"cl64": "12", ...}`` or bit-string prefixes ``{"cb4": "0110", ...}``."""
    if _BITS.match(value):
        return {f"cb{n}": value[:n] for n in BIT_PREFIXES if len(value) >= n} | {"cb": value}
    out = {}
    for pair in value.split(","):
        k, _, cid = pair.partition(":")
        out[f"cl{k}"] = cid
    return out


def load_clusters(path: str | Path) -> dict[str, str]:
    """Read a cluster file into ``{word: cluster_ids}``; a malformed line is an error naming the line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(path, f"cannot read cluster file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(path, "cluster file is not valid UTF-8") from None
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        raise InputError(path, f"a cluster file starts with the header line {'<TAB>'.join(HEADER)}", line=1)
    clusters: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0]:
            raise InputError(path, f"expected 2 tab-separated columns (word, cluster_ids), got {len(fields)}", line=number)
        word, ids = fields
        if not (_IDS.match(ids) or _BITS.match(ids)):
            raise InputError(path, "cluster_ids must be K:id pairs joined by commas, or a bit string", line=number)
        clusters[word] = ids
    return clusters
