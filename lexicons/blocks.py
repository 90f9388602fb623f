"""The best cosine of a query over a large index, found by blocks of names (:class:`NameBlocks`): a block's bound is
the query's product with the block's largest weight per 3-gram, and a block whose bound is below the best cosine
found is not scored.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import scipy.sparse as sp
from scipy.sparse._sparsetools import csc_matvec, csr_matvec  # y += A x, as the sparse products call them

BLOCK_NAMES = 16  # names per block (sorted by their words, so a block's names share most 3-grams)
FIRST_BLOCKS = 16  # blocks of the highest bounds scored first, for a best cosine to compare the other bounds with:
FIRST_SHARE = 0.7  # ... up to this many of those whose bound is at least this share of the highest
LATER_BLOCKS = 8  # then blocks scored together, at most, between two looks at the cut


class NameBlocks:
    """The unique names of an index in blocks of :data:`BLOCK_NAMES`, for the best cosine of a query without its
    whole product with the postings.

    ``order[p]``: the name at position ``p`` (names sorted by their sorted words, so that a block holds names made
    of the same words); ``rows``: names x 3-grams in that order; ``bounds``: 3-grams x blocks, the largest weight
    of the 3-gram in the block, its rows stored last 3-gram first (see :meth:`scan`). A query's product with
    ``bounds`` is at least its cosine with every name of the block, also in float32: each term is at least the
    name's term, the terms are added in the same order (by 3-gram), and rounding is monotone. A name's cosine is
    computed as the search product computes it (float32, by 3-gram, from zero), so it is the same float.
    """

    __slots__ = ("order", "rows", "bounds", "size", "_pairs")

    def __init__(self, postings: sp.csr_matrix, names: list[str]) -> None:
        self.size = size = BLOCK_NAMES
        keys = np.array([" ".join(sorted(n.split())) for n in names], dtype=object)
        self.order = np.argsort(keys, kind="stable").astype(np.int32)
        rows = postings.T.tocsr()[self.order]
        rows.sort_indices()
        self.rows = rows
        by_gram = rows.T.tocsr()  # 3-grams x positions, positions ascending: blocks contiguous in each row
        by_gram.sort_indices()
        gram = np.repeat(np.arange(by_gram.shape[0], dtype=np.int64), np.diff(by_gram.indptr))
        block = by_gram.indices.astype(np.int64) // size
        n_blocks = (len(names) + size - 1) // size
        key = gram * n_blocks + block
        starts = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if len(key) else np.zeros(0, int)
        top = np.maximum.reduceat(by_gram.data, starts) if len(key) else by_gram.data
        bounds = sp.csr_matrix((top.astype(np.float32), (gram[starts], block[starts])),
                               shape=(by_gram.shape[0], n_blocks))
        self.bounds = bounds[::-1]  # 3-gram g is row (3-grams - 1 - g)
        self._pairs = None

    def __getstate__(self) -> tuple:
        return self.order, self.rows, self.bounds, self.size

    def __setstate__(self, state: tuple) -> None:
        self.order, self.rows, self.bounds, self.size = state
        self._pairs = None

    def _range_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Made on first use, per process (a few MB for a SNOMED CT-sized lexicon): per 3-gram, the start and end
        of its row of ``bounds``; per block, the start and end of each of its names' rows of ``rows``, last name
        first (a position past the last name: an empty range). :meth:`scan` gives scipy these pairs (see there)."""
        if self._pairs is None:
            b_ptr = self.bounds.indptr
            grams = np.arange(len(b_ptr) - 2, -1, -1)  # 3-gram g's row is (3-grams - 1 - g)
            by_gram = np.stack([b_ptr[grams], b_ptr[grams + 1]], axis=1)
            r_ptr = self.rows.indptr
            n_blocks, size = self.bounds.shape[1], self.size
            positions = np.minimum(np.arange(n_blocks)[:, None] * size + np.arange(size - 1, -1, -1), len(r_ptr) - 1)
            ends = np.append(r_ptr, r_ptr[-1])  # (positions past the last name are the last, empty, row)
            by_block = np.stack([ends[positions], ends[positions + 1]], axis=2).reshape(n_blocks, 2 * size)
            self._pairs = by_gram, by_block
        return self._pairs

    def scan(self, vectors: sp.csr_matrix, k: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Per row of ``vectors`` (indices sorted, as :meth:`LexiconIndex.vectors` gives them): (names, cosines) of
        the names whose cosine is at least the ``k``-th highest, ties included (every name of cosine above 0 when
        fewer have one). The few blocks of the highest bounds are scored first, then the other blocks whose bound
        reaches the ``k``-th cosine found so far, the highest :data:`LATER_BLOCKS` of them at a time, until none
        is left.

        A query's bounds, and the cosines of a group of blocks' names, are each one call of scipy's sparse
        products on views rather than a call per 3-gram or per block: the call is given every range to add up as
        a pair of entries of its index pointer, the pairs in decreasing order of position so that the range
        between two pairs is empty. The bounds' rows are stored last 3-gram first for that, so that the query's
        3-grams are still added first to last."""
        n_grams = self.rows.shape[1]
        n_blocks = self.bounds.shape[1]
        b_indices, b_data = self.bounds.indices, self.bounds.data
        by_gram, _ = self._range_pairs()
        dense = np.zeros(n_grams, dtype=np.float32)
        bound = np.zeros(n_blocks, dtype=np.float32)
        for i in range(vectors.shape[0]):
            q_cols = vectors.indices[vectors.indptr[i]:vectors.indptr[i + 1]]
            q_data = vectors.data[vectors.indptr[i]:vectors.indptr[i + 1]]
            if not len(q_cols):
                yield np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
                continue
            pairs = by_gram[q_cols].ravel()  # the 3-grams' rows of bounds, decreasing
            weights = np.zeros(len(pairs) - 1, dtype=np.float32)
            weights[0::2] = q_data
            bound[:] = 0.0
            csc_matvec(n_blocks, len(weights), pairs, b_indices, b_data, weights, bound)
            highest = float(bound.max())
            if highest <= 0:  # no name shares a 3-gram with the query
                yield np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
                continue
            floor = highest * FIRST_SHARE
            near = np.flatnonzero(bound >= floor)  # cheaper than a partition of every bound
            first, rest = near, near[:0]
            if len(near) > FIRST_BLOCKS:
                at = np.argpartition(bound[near], len(near) - FIRST_BLOCKS)
                first, rest = near[at[-FIRST_BLOCKS:]], near[at[:-FIRST_BLOCKS]]
            dense[q_cols] = q_data
            scored, found = self._score(first, dense)
            cut, best = _raised_cut(0.0, [], found, k)
            # then every other block whose bound reaches the cut (those near the highest bound, for a cut as high)
            if cut >= floor:
                queue = rest[bound[rest] >= cut]
            else:
                reach = bound >= cut if cut > 0 else bound > 0
                reach[first] = False
                queue = np.flatnonzero(reach)
            parts, values = [scored], [found]
            while len(queue):
                group = queue
                if len(queue) > LATER_BLOCKS:
                    at = np.argpartition(bound[queue], len(queue) - LATER_BLOCKS)
                    group, queue = queue[at[-LATER_BLOCKS:]], queue[at[:-LATER_BLOCKS]]
                else:
                    queue = queue[:0]
                got_at, got = self._score(group, dense)
                parts.append(got_at)
                values.append(got)
                cut, best = _raised_cut(cut, best, got, k)
                if cut > 0 and len(queue):
                    queue = queue[bound[queue] >= cut]
            dense[q_cols] = 0.0
            if len(parts) > 1:
                scored, found = np.concatenate(parts), np.concatenate(values)
            at = np.flatnonzero(found >= cut if cut > 0 else found > 0)
            # the name at ``at``: of block scored[at // size], its (size - 1 - at % size)-th (last name first)
            positions = scored[at // self.size] * self.size + (self.size - 1 - at % self.size)
            yield self.order[positions], found[at]

    def _score(self, blocks: np.ndarray, dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``blocks`` in decreasing order, and the cosines of their names with the query ``dense``, each
        block's last name first, in one call of scipy's sparse product (see :meth:`scan`); a position past the
        last name has cosine 0."""
        blocks = np.sort(blocks)[::-1]
        pairs = self._range_pairs()[1][blocks].ravel()
        sums = np.zeros(len(pairs) - 1, dtype=np.float32)
        csr_matvec(len(sums), len(dense), pairs, self.rows.indices, self.rows.data, dense, sums)
        return blocks, sums[0::2]

    def tops(self, vectors: sp.csr_matrix) -> Iterator[tuple[float, tuple[int, ...]]]:
        """(best cosine, names with it) per row of ``vectors`` (see :meth:`LexiconIndex.top_cosines`)."""
        for names, cos in self.scan(vectors, 1):
            if not len(cos):
                yield 0.0, ()
                continue
            best = cos.max()
            yield float(best), tuple(sorted(names[cos == best].tolist()))

    def top(self, vectors: sp.csr_matrix, k: int) -> Iterator[tuple[bytes, bytes] | None]:
        """Per row of ``vectors``, what :meth:`LexiconIndex.search` remembers for it (names and cosines as bytes,
        best first), or None when two of those ``k`` names, or the ``k``-th and a name left out, have the same
        cosine: then which come first depends on the order of the search product, so that product decides."""
        for names, cos in self.scan(vectors, k):
            order = np.argsort(-cos, kind="stable")
            names, cos = names[order], cos[order]
            if len(cos) > k:
                if cos[k] == cos[k - 1]:
                    yield None
                    continue
                names, cos = names[:k], cos[:k]
            if len(cos) > 1 and bool((cos[1:] == cos[:-1]).any()):
                yield None
                continue
            yield names.astype(np.int32).tobytes(), cos.astype(np.float32).tobytes()


def _raised_cut(cut: float, best: list[float], found: np.ndarray, k: int) -> tuple[float, list[float]]:
    """The cut of :meth:`NameBlocks.scan` once the cosines ``found`` are scored, and for ``k`` above 1 the ``k``
    highest cosines scored (``best``, highest first): the ``k``-th of them, or ``cut`` while fewer are known."""
    if k <= 1:
        return max(cut, float(found.max())), best
    best = sorted([*best, *found[found > 0].tolist()], reverse=True)[:k]
    return (best[-1] if len(best) >= k else cut), best
