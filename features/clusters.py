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
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from share_ner.errors import InputError, ShareNerError
from share_ner.inputs.files import iter_note_paths, read_note
from share_ner.io import read_text_file
from share_ner.text import tokenize

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
    lines = read_text_file(path, "cluster file").splitlines()
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


# --- building ----------------------------------------------------------------

DEFAULT_N_CLUSTERS = (64, 256, 1024)


def _tokenizer() -> Callable[[str], list[tuple[str, int, int]]]:
    """The tagger's tokenizer (``share_ner.text.tokenize``) as ``(text, start, end)`` triples."""
    return lambda text: [(t.text, t.start, t.end) for t in tokenize(text)]


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """What a cluster build saw and made."""

    notes: int
    tokens: int
    types: int
    words: int
    n_clusters: tuple[int, ...]
    dimensions: int
    seconds: dict[str, float]  # wall time of each phase: tokenize, count, svd, kmeans


def build_clusters(
    texts: Iterable[str],
    n_clusters: Sequence[int] = DEFAULT_N_CLUSTERS,
    min_count: int = 5,
    seed: int = 0,
    *,
    dimensions: int = 100,
    max_words: int = 50_000,
    n_contexts: int = 5_000,
    window: int = 2,
) -> tuple[dict[str, str], ClusterReport]:
    """Cluster the words of ``texts`` by the company they keep; returns ``({word: cluster_ids}, report)``.

    Words (:func:`cluster_key` forms) seen at least ``min_count`` times — at most the
    ``max_words`` most frequent — are described by their neighbours within ``window`` tokens
    (the ``n_contexts`` most frequent words, one column per relative position; a line break
    ends the context), weighted by PPMI with context-distribution smoothing (α = 0.75),
    reduced to ``dimensions`` with truncated SVD and clustered by mini-batch k-means once
    per entry of ``n_clusters`` (capped at the number of words). Memory is bounded by the
    number of tokens (one int32 each) plus the sparse co-occurrence matrix.
    """
    import numpy as np
    from scipy import sparse
    from sklearn.cluster import MiniBatchKMeans
    from sklearn.decomposition import TruncatedSVD
    from sklearn.preprocessing import normalize

    if min_count < 1:
        raise ShareNerError(f"min_count must be at least 1, got {min_count}")
    ks = tuple(sorted(set(int(k) for k in n_clusters)))
    if not ks or ks[0] < 2:
        raise ShareNerError(f"each number of clusters must be at least 2, got {list(n_clusters)}")

    # 1. Token ids, with BOUNDARY (-1) at line breaks and between notes.
    clock = time.perf_counter()
    seconds: dict[str, float] = {}

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[phase] = round(now - clock, 2)
        clock = now

    tokenize = _tokenizer()
    ids_of: dict[str, int] = {}
    chunks: list[Any] = []
    n_notes = 0
    for text in texts:
        n_notes += 1
        seq = array("i")
        prev_end = 0
        for word, start, end in tokenize(text):
            if "\n" in text[prev_end:start] or "\r" in text[prev_end:start]:
                seq.append(-1)
            seq.append(ids_of.setdefault(cluster_key(word), len(ids_of)))
            prev_end = end
        seq.append(-1)
        chunks.append(np.frombuffer(seq, dtype=np.int32))
    ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
    del chunks
    n_types = len(ids_of)
    n_tokens = int((ids >= 0).sum())
    counts = np.bincount(ids[ids >= 0], minlength=n_types)
    lap("tokenize")

    # 2. Target words and context words, by frequency (ties broken by first appearance).
    order = np.argsort(-counts, kind="stable")
    targets = order[counts[order] >= min_count][:max_words]
    contexts = order[:n_contexts]
    if len(targets) < 2:
        raise ShareNerError(
            f"only {len(targets)} word(s) occur at least {min_count} times: too little text to cluster"
        )
    # Index n_types stands for the boundary so that id -1 maps to "none" as well.
    row_of = np.full(n_types + 1, -1, dtype=np.int64)
    row_of[targets] = np.arange(len(targets))
    col_of = np.full(n_types + 1, -1, dtype=np.int64)
    col_of[contexts] = np.arange(len(contexts))
    boundary = ids < 0
    # between[j]: boundaries among positions j+1 .. j+span-1, for a pair (j, j+span).
    cum = np.concatenate(([0], np.cumsum(boundary, dtype=np.int64)))
    ids = np.where(boundary, n_types, ids)
    rows_all = row_of[ids]
    cols_all = col_of[ids]
    del ids, boundary

    # 3. Co-occurrence counts, one block of columns per relative position.
    n_rows, n_cols = len(targets), len(contexts)
    offsets = [d for d in range(-window, window + 1) if d != 0]
    matrix = sparse.csr_matrix((n_rows, n_cols * len(offsets)), dtype=np.float64)
    n = len(rows_all)
    for block, d in enumerate(offsets):
        if d > 0:
            r, c = rows_all[: n - d], cols_all[d:]
        else:
            r, c = rows_all[-d:], cols_all[: n + d]
        # A boundary between the two positions cuts the context.
        span = abs(d)
        ok = (r >= 0) & (c >= 0) & (cum[span:n] == cum[1 : n - span + 1])
        matrix = matrix + sparse.csr_matrix(
            (np.ones(int(ok.sum()), dtype=np.float64), (r[ok], c[ok] + block * n_cols)),
            shape=matrix.shape,
        )
    del rows_all, cols_all, cum

    # 4. Positive PMI with smoothed context probabilities.
    coo = matrix.tocoo()
    row_sum = np.asarray(matrix.sum(axis=1)).ravel()
    col_smooth = np.asarray(matrix.sum(axis=0)).ravel() ** 0.75
    pmi = np.log(coo.data * col_smooth.sum() / (row_sum[coo.row] * col_smooth[coo.col]))
    keep = pmi > 0
    ppmi = sparse.csr_matrix((pmi[keep], (coo.row[keep], coo.col[keep])), shape=matrix.shape)
    del matrix, coo, pmi
    lap("count")

    # 5. Dense word vectors: SVD scaled by sqrt of the singular values, unit length.
    dims = max(1, min(dimensions, ppmi.shape[1] - 1, n_rows - 1))
    svd = TruncatedSVD(n_components=dims, random_state=seed, algorithm="randomized", n_iter=5)
    vectors = svd.fit_transform(ppmi)
    vectors = normalize(vectors / np.sqrt(np.maximum(svd.singular_values_, 1e-12)))
    lap("svd")

    # 6. k-means at each granularity.
    labels = []
    for k in ks:
        k_eff = min(k, n_rows)
        km = MiniBatchKMeans(n_clusters=k_eff, random_state=seed, batch_size=4096, n_init=3)
        labels.append((k, km.fit_predict(vectors)))
    lap("kmeans")

    words = sorted(ids_of, key=ids_of.__getitem__)
    clusters = {
        words[t]: ",".join(f"{k}:{lab[row]}" for k, lab in labels) for row, t in enumerate(targets.tolist())
    }
    report = ClusterReport(n_notes, n_tokens, n_types, len(clusters), ks, dims, seconds)
    return clusters, report


def save_clusters(path: str | Path, clusters: Mapping[str, str]) -> None:
    """Write ``clusters`` in the cluster file format (header, then ``word<TAB>cluster_ids``), atomically."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(HEADER) + "\n")
        for word, ids in clusters.items():
            if "\t" in word or "\n" in word:
                continue
            f.write(f"{word}\t{ids}\n")
    tmp.replace(path)


def build_clusters_file(
    notes: str | Path,
    out: str | Path,
    n_clusters: Sequence[int] = DEFAULT_N_CLUSTERS,
    min_count: int = 5,
    seed: int = 0,
    encoding: str = "utf-8",
) -> tuple[ClusterReport, list[str]]:
    """Build clusters from the notes under ``notes`` (a ``.txt`` file or a directory) and write them to ``out``.

    A note that cannot be read or decoded is skipped; the returned list gives one
    ``path: reason`` line per skipped note. Returns ``(report, skipped)``.
    """
    out = Path(out)
    if not out.parent.is_dir():
        raise InputError(out, "the directory of the output file does not exist")
    skipped: list[str] = []

    def texts() -> Iterator[str]:
        for path in iter_note_paths(notes):
            try:
                yield read_note(path, encoding).text
            except ShareNerError as exc:
                skipped.append(str(exc))

    clusters, report = build_clusters(texts(), n_clusters, min_count, seed)
    save_clusters(out, clusters)
    return report, skipped
