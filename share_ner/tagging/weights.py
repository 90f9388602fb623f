"""The weights of a CRFsuite model file, read exactly, and a Viterbi decoder that gives CRFsuite's tags.

``pycrfsuite.Tagger.info()`` parses CRFsuite's text dump, which prints each weight with six decimals; the scores
made of those would differ from CRFsuite's own. :func:`read_weights` reads the binary model (CRFsuite's
``crf1d_model.c`` layout: a header, a CQDB of label names, a CQDB of attribute names, and the features as
``type, source, destination: uint32`` + ``weight: float64``, little-endian) into arrays: one row of label weights
per attribute, the label-to-label transitions.

A model file is untrusted input: CRFsuite's C reader follows the offsets the file holds without checking them, so
a truncated or corrupted file makes it read out of bounds (a segfault) or probe a full hash table forever.
:func:`check_model_bytes` checks every offset and count that reader and CRFsuite's tagger follow before they see
the file; a file that passes can be opened (``pycrfsuite.Tagger.open_inmemory`` of the same bytes) and tagged
with.

:func:`viterbi` is CRFsuite's ``crf1dc_viterbi`` (first-order CRF, no start or end transitions, the first
maximum wins a tie), run over many sentences at once: step ``t`` handles the ``t``-th token of every sentence
that long. Its emission scores are sums of the same weights as CRFsuite's, added in another order, so they may
differ from CRFsuite's in the last bits; a sentence whose best path wins any of its choices by less than such a
difference could ever change is reported as unsure, for the caller to tag with CRFsuite itself.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_HEADER = struct.Struct("<4sI4sIIIIIIIII")  # magic, size, type, version, features, labels, attributes, 5 offsets
_VERSION = 100
_CHUNK = struct.Struct("<4sII")  # chunk id, size, number of items
_CQDB = struct.Struct("<4sIIIII")  # chunk id, size, flag, byte order, backward array size, backward array offset
_CQDB_BYTE_ORDER = 0x62445371
_CQDB_TABLES = 256  # hash tables, each referenced by (offset, number of buckets) after the CQDB header
_CQDB_DATA = _CQDB.size + _CQDB_TABLES * 8  # where a CQDB's records start
_FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])  # 20 bytes, packed
_STATE, _TRANSITION = 0, 1


class WeightsError(ValueError):
    """The file is not a CRFsuite first-order CRF model this reader understands."""


@dataclass(frozen=True, eq=False)
class CrfWeights:
    """A CRFsuite model's weights: ``state[attributes[name]]`` are the label weights of the attribute ``name``,
    ``transitions[i, j]`` the weight of label ``i`` followed by label ``j`` (0.0 where the model has none)."""

    labels: tuple[str, ...]
    attributes: dict[bytes, int]
    state: np.ndarray  # (attributes, labels) float64
    transitions: np.ndarray  # (labels, labels) float64


def _u32(data: bytes, offsets: np.ndarray) -> np.ndarray:
    """The little-endian uint32 at each of ``offsets`` (all within ``data``)."""
    b = np.frombuffer(data, np.uint8)
    o = offsets.astype(np.int64)
    return (b[o].astype(np.int64) | b[o + 1].astype(np.int64) << 8 | b[o + 2].astype(np.int64) << 16
            | b[o + 3].astype(np.int64) << 24)


def _check_cqdb(data: bytes, start: int, count: int, what: str) -> None:
    """The CQDB string table of ``count`` strings at ``start``: every record, hash bucket and backward link the
    reader follows lies inside the table, each string ends with its NUL, and each hash table has a free bucket
    (a lookup probes until it finds one)."""
    end_of_file = len(data)
    if start + _CQDB_DATA > end_of_file:
        raise WeightsError(f"the {what} table at byte {start} runs past the end of the file")
    chunk, size, _, order, bwd_size, bwd_offset = _CQDB.unpack_from(data, start)
    if chunk != b"CQDB" or order != _CQDB_BYTE_ORDER:
        raise WeightsError(f"no {what} table at byte {start}")
    if size < _CQDB_DATA or start + size > end_of_file:
        raise WeightsError(f"the {what} table at byte {start} runs past the end of the file")
    if not bwd_offset or bwd_size < count or bwd_offset < _CQDB_DATA or bwd_offset + 4 * bwd_size > size:
        raise WeightsError(f"the {what} table's index is out of bounds")
    # the records, by id: each (id, key size, key with its NUL) inside the table
    links = _u32(data, start + bwd_offset + 4 * np.arange(count, dtype=np.int64))
    if count and (links.min() < _CQDB_DATA or links.max() + 8 > size):
        raise WeightsError(f"a {what} record is out of bounds")
    ids = _u32(data, start + links)
    key_sizes = _u32(data, start + links + 4)
    if count and ((ids != np.arange(count)).any() or key_sizes.min() < 1 or (links + 8 + key_sizes).max() > size):
        raise WeightsError(f"a {what} record is out of bounds")
    if count and np.frombuffer(data, np.uint8)[start + links + 8 + key_sizes - 1].any():
        raise WeightsError(f"a {what} string is not terminated")
    # the hash tables: buckets inside the table, pointing at records, never all taken; twice as many buckets as
    # records in all (the reader counts its strings so, and lists that many)
    refs = np.frombuffer(data, "<u4", 2 * _CQDB_TABLES, start + _CQDB.size).reshape(-1, 2).astype(np.int64)
    if ((refs[:, 0] == 0) & (refs[:, 1] != 0)).any() or (refs[:, 1] % 2).any() or refs[:, 1].sum() != 2 * count:
        raise WeightsError(f"the {what} table's hash tables do not hold its {count} strings")
    used = refs[refs[:, 0] != 0]
    if len(used) and ((used[:, 1] == 0).any() or used[:, 0].min() < _CQDB_DATA
                      or (used[:, 0] + 8 * used[:, 1]).max() > size):
        raise WeightsError(f"a {what} hash table is out of bounds")
    if not len(used):
        return
    buckets = used[:, 1]
    index = np.arange(int(buckets.sum()), dtype=np.int64) - np.repeat(np.cumsum(buckets) - buckets, buckets)
    targets = _u32(data, start + np.repeat(used[:, 0], buckets) + 8 * index + 4)  # each bucket's record
    taken = targets != 0
    if (np.add.reduceat(taken, np.cumsum(buckets) - buckets) >= buckets).any():
        raise WeightsError(f"a {what} hash table has no free bucket")
    if not np.isin(targets[taken], links).all():
        raise WeightsError(f"a {what} hash bucket points outside the records")


def _check_refs(data: bytes, start: int, chunk_id: bytes, count: int, n_features: int, what: str) -> None:
    """The chunk of feature lists at ``start``, at least one per label or attribute (``count``; CRFsuite's trainer
    makes room for two more label lists, left empty): each of the ``count`` lists CRFsuite reads inside the file,
    every feature id below ``n_features``."""
    end_of_file = len(data)
    if start + _CHUNK.size > end_of_file:
        raise WeightsError(f"the {what} feature lists run past the end of the file")
    chunk, _, number = _CHUNK.unpack_from(data, start)
    if chunk != chunk_id or number < count:
        raise WeightsError(f"no {what} feature lists at byte {start}")
    if start + _CHUNK.size + 4 * number > end_of_file:
        raise WeightsError(f"the {what} feature lists run past the end of the file")
    if not count:
        return
    lists = _u32(data, start + _CHUNK.size + 4 * np.arange(count, dtype=np.int64))
    if lists.min() < _HEADER.size or lists.max() + 4 > end_of_file:
        raise WeightsError(f"a {what} feature list is out of bounds")
    lengths = _u32(data, lists)
    if (lists + 4 + 4 * lengths).max() > end_of_file:
        raise WeightsError(f"a {what} feature list runs past the end of the file")
    total = int(lengths.sum())
    if total > n_features:  # each feature is in one list
        raise WeightsError(f"the {what} feature lists hold more entries than there are features")
    if total:
        index = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)  # within a list
        ids = _u32(data, np.repeat(lists + 4, lengths) + 4 * index)
        if ids.max() >= n_features:
            raise WeightsError(f"a {what} feature list refers past the features")


def check_model_bytes(data: bytes) -> None:
    """Check the structure of a CRFsuite first-order CRF model file before CRFsuite's C reader sees it: the
    header (magic, type, version, the file size it records), the feature chunk, both string tables and both
    chunks of feature lists, every offset and count inside the file and consistent with the header.

    Raises:
        WeightsError: the file is truncated or corrupted; the message says where.
    """
    if len(data) <= _HEADER.size:
        raise WeightsError(f"truncated model ({len(data)} bytes: not even a header)")
    # the header's count of features is not used: CRFsuite writes 0 there, the feature chunk has the count
    magic, size, kind, version, _, n_labels, n_attrs, off_features, off_labels, off_attrs, off_label_refs, \
        off_attr_refs = _HEADER.unpack_from(data)
    if magic != b"lCRF" or kind != b"FOMC":
        raise WeightsError("not a CRFsuite first-order CRF model")
    if version != _VERSION:
        raise WeightsError(f"CRFsuite model version {version}, not {_VERSION}")
    if size != len(data):
        raise WeightsError(f"truncated or extended model (its header gives {size} bytes, the file has {len(data)})")
    if not n_labels:
        raise WeightsError("a model without labels")
    if off_features + _CHUNK.size > size:
        raise WeightsError("the features run past the end of the file")
    chunk, chunk_size, n_features = _CHUNK.unpack_from(data, off_features)
    if chunk != b"FEAT" or chunk_size != _CHUNK.size + _FEATURE.itemsize * n_features:
        raise WeightsError(f"no feature chunk at byte {off_features}")
    if off_features + chunk_size > size:
        raise WeightsError("the features run past the end of the file")
    features = np.frombuffer(data, _FEATURE, n_features, off_features + _CHUNK.size)
    kinds = features["type"]
    if ((kinds != _STATE) & (kinds != _TRANSITION)).any():
        raise WeightsError("a feature of unknown type")
    rows = np.where(kinds == _STATE, n_attrs, n_labels)
    if (features["src"] >= rows).any() or (features["dst"] >= n_labels).any():
        raise WeightsError("a feature refers past the labels or attributes")
    _check_cqdb(data, off_labels, n_labels, "label")
    _check_cqdb(data, off_attrs, n_attrs, "attribute")
    _check_refs(data, off_label_refs, b"LFRF", n_labels, n_features, "label")
    _check_refs(data, off_attr_refs, b"AFRF", n_attrs, n_features, "attribute")


def _cqdb_strings(data: bytes, offset: int, count: int) -> list[bytes]:
    """The strings of a CQDB chunk by id (its backward array), without their closing NUL."""
    chunk, _, _, order, bwd_size, bwd_offset = _CQDB.unpack_from(data, offset)
    if chunk != b"CQDB" or order != _CQDB_BYTE_ORDER or bwd_size < count or not bwd_offset:
        raise WeightsError("unreadable string table")
    links = np.frombuffer(data, "<u4", count, offset + bwd_offset)
    out = []
    for link in links.tolist():
        start = offset + link + 8  # past the record's id and size
        out.append(data[start:data.index(b"\0", start)])
    return out


def read_weights(path: str | Path | bytes, checked: bool = False) -> CrfWeights:
    """The weights of the CRFsuite model file ``path`` (or of its bytes), checked by :func:`check_model_bytes`
    unless ``checked`` (the caller checked these very bytes).

    Raises:
        OSError: the file cannot be read.
        WeightsError: it is not a first-order CRFsuite model, or is truncated or corrupted.
    """
    data = path if isinstance(path, bytes) else Path(path).read_bytes()
    if not checked:
        check_model_bytes(data)
    try:
        magic, _, kind, _, _, n_labels, n_attrs, off_features, off_labels, off_attrs, _, _ = _HEADER.unpack_from(data)
        if magic != b"lCRF" or kind != b"FOMC":
            raise WeightsError("not a CRFsuite first-order CRF model")
        labels = [s.decode() for s in _cqdb_strings(data, off_labels, n_labels)]
        names = _cqdb_strings(data, off_attrs, n_attrs)
        chunk, _, n_features = _CHUNK.unpack_from(data, off_features)
        if chunk != b"FEAT":
            raise WeightsError("no feature chunk")
        features = np.frombuffer(data, _FEATURE, n_features, off_features + _CHUNK.size)
    except (struct.error, ValueError) as exc:
        if isinstance(exc, WeightsError):
            raise
        raise WeightsError(f"truncated model ({exc})") from None
    state = np.zeros((n_attrs, n_labels))
    transitions = np.zeros((n_labels, n_labels))
    for kind_id, table, rows in ((_STATE, state, n_attrs), (_TRANSITION, transitions, n_labels)):
        part = features[features["type"] == kind_id]
        if len(part) and (int(part["src"].max()) >= rows or int(part["dst"].max()) >= n_labels):
            raise WeightsError("a feature refers past the tables")
        table[part["src"], part["dst"]] = part["weight"]
    return CrfWeights(tuple(labels), {name: i for i, name in enumerate(names)}, state, transitions)


def viterbi(emissions: np.ndarray, lengths: np.ndarray, transitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The best label of each token of sentences laid end to end in ``emissions`` (tokens x labels), with
    ``lengths`` tokens each (all above 0), as CRFsuite's Viterbi finds it; and, per sentence, whether it is unsure
    (some choice on its path won by a margin within rounding of the emission scores: tag it with CRFsuite).

    The sentences go longest first, so that those still going at step ``t`` are a prefix, and their tokens are
    laid out step by step (``slot``): each step is one broadcast sum and two reductions over the previous label.
    """
    n, n_labels = emissions.shape
    lengths = np.asarray(lengths, dtype=np.intp)
    starts = np.zeros(len(lengths), dtype=np.intp)
    np.cumsum(lengths[:-1], out=starts[1:])
    order = np.argsort(-lengths, kind="stable")
    by_length = lengths[order]
    steps = int(by_length[0]) if len(by_length) else 0
    active = np.searchsorted(-by_length, -np.arange(steps), side="left")  # sentences with a token t
    offsets = np.zeros(steps + 1, dtype=np.intp)
    np.cumsum(active, out=offsets[1:])
    step = np.repeat(np.arange(steps), active)
    rank = np.arange(n) - offsets[step]  # the sentence of each slot, by length
    token = starts[order][rank] + step  # the token of each slot
    scores = emissions[token]
    best = np.empty_like(scores)  # the score of the best path to each slot's each label
    back = np.empty((n, n_labels), dtype=np.intp)  # its label before
    into = np.ascontiguousarray(transitions.T)  # [j, i]: from label i to label j
    work = np.empty((len(lengths), n_labels, n_labels))
    cells = np.arange(0, len(lengths) * n_labels * n_labels, n_labels)  # each [s, j]'s first cell in work
    best[: active[0]] = scores[: active[0]]
    for t in range(1, steps):
        k, at, prev = active[t], offsets[t], offsets[t - 1]
        paths = np.add(best[prev:prev + k, None, :], into, out=work[:k])  # [s, j, i]
        paths.argmax(axis=2, out=back[at:at + k])  # the first maximum, as CRFsuite's strict comparison keeps
        # the maxima are the argmaxes' values (taken: numpy's reduce over a short last axis is several times slower)
        np.take(paths.reshape(-1), cells[:k * n_labels] + back[at:at + k].reshape(-1), out=best[at:at + k].reshape(-1))
        best[at:at + k] += scores[at:at + k]
    last = offsets[by_length - 1] + np.arange(len(lengths))  # each sentence's last slot, by length
    final = best[last].argmax(axis=1)
    labels = np.empty(n, dtype=np.intp)
    current = np.empty(len(lengths), dtype=np.intp)
    for t in range(steps - 1, -1, -1):
        k, at = active[t], offsets[t]
        ending = active[t + 1] if t + 1 < steps else 0
        current[ending:k] = final[ending:k]
        labels[at:at + k] = current[:k]
        if t:
            current[:k] = back[at:at + k][np.arange(k), current[:k]]
    out = np.empty(n, dtype=np.intp)
    out[token] = labels
    return out, _unsure(best, labels, step, offsets[step - 1] + rank, last, token, starts, lengths, transitions)


# A choice on a path is unsure when it wins by at most this share of the magnitude of the scores (times the
# sentence's length): far above the rounding of sums of float64 weights in another order (about 1e-16 of their
# magnitude per addition), far below any real difference between two labels' scores.
_MARGIN = 1e-9


def _row_max(a: np.ndarray) -> np.ndarray:
    """The maximum of each row of ``a`` (labels as columns), column by column: numpy's reduce over a short last
    axis is several times slower."""
    out = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        np.maximum(out, a[:, j], out=out)
    return out


def _unsure(best: np.ndarray, labels: np.ndarray, step: np.ndarray, prev: np.ndarray, last: np.ndarray,
            token: np.ndarray, starts: np.ndarray, lengths: np.ndarray, transitions: np.ndarray) -> np.ndarray:
    """Per sentence, whether its path wins a choice by a rounding margin: the label before a slot's (``prev``:
    the slot before each slot), or a sentence's last label (``last``: its last slot)."""
    n, n_labels = best.shape
    if n_labels < 2:
        return np.zeros(len(lengths), dtype=bool)
    gap = np.full(n, np.inf)
    inner = np.flatnonzero(step > 0)
    if len(inner):
        before = prev[inner]
        cand = best[before] + transitions[:, labels[inner]].T  # [slot, i]: from label i to the slot's label
        pick = np.arange(len(inner))
        chosen = cand[pick, labels[before]]
        cand[pick, labels[before]] = -np.inf
        gap[inner] = chosen - _row_max(cand)
    final = np.sort(best[last], axis=1)
    gap[last] = np.minimum(gap[last], final[:, -1] - final[:, -2])
    by_token = np.empty(n)
    by_token[token] = gap
    smallest = np.minimum.reduceat(by_token, starts)
    by_token[token] = _row_max(np.abs(best))
    return smallest <= _MARGIN * lengths * (np.maximum.reduceat(by_token, starts) + 1.0)
