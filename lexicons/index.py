"""The compiled, cached search index of a lexicon.

A :class:`LexiconIndex` holds the lexicon's rows, dicts from its string keys
(:mod:`share_ner.lexicons.keys`) to rows, an L2-normalised character 3-gram
tf-idf matrix of the unique soft-normalised names, the word swaps learned from
its names (:mod:`share_ner.lexicons.rewrites`) and, for a large lexicon, its
names in blocks (:mod:`share_ner.lexicons.blocks`). It is compiled once per
lexicon content hash and pickled under
:func:`~share_ner.lexicons.lexicon.cache_dir` (written atomically), so later
runs load it in well under a second.
"""

from __future__ import annotations

import pickle
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np
import scipy.sparse as sp

from share_ner.io import atomic_write_bytes
from share_ner.lexicons.blocks import NameBlocks
from share_ner.lexicons.keys import exact_key, normalized_key, soft_normalize
from share_ner.lexicons.lexicon import Lexicon, cache_dir
from share_ner.lexicons.rewrites import Rewrites, learn_rewrites

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer

INDEX_VERSION = 18
SEARCH_MEMO = 100_000  # search results remembered per index and process (about 0.3 kB each)
# tf-idf rows of queries remembered per index (about 0.3 kB each): enough for the queries of a batch, which are
# looked up for their best cosine and then for their hits; after that their results are remembered instead
ROW_MEMO = 4_096
# At most this many (query, name) products per sparse product of a search: its result takes about 12 bytes an
# entry, and one query can meet most names of a large lexicon (most names of a SNOMED CT-sized one)
SEARCH_PRODUCT_ENTRIES = 4_000_000
# The best cosine of a query over a large index is found by blocks of names (share_ner.lexicons.blocks). Below this
# many unique names an index has no blocks: the whole product is fast enough there (HPO), and the blocks' copy of
# the names is not paid for in memory and load time by every process of the default model
BLOCKS_MIN_NAMES = 60_000


def make_vectorizer() -> "TfidfVectorizer":
    """The tf-idf model an index is fitted with (imported here: only building an index needs scikit-learn)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=False, sublinear_tf=True,
                           dtype=np.float32)


_WHITE_SPACES = re.compile(r"\s\s+")


def char_wb_trigrams(text: str) -> list[str]:
    """The character 3-grams of ``text`` as :func:`make_vectorizer`'s analyzer gives them (scikit-learn's
    ``char_wb``: each word padded with one space either side, a word's 3-grams inside the padding only)."""
    grams: list[str] = []
    for w in _WHITE_SPACES.sub(" ", text).split():
        grams += _word_trigrams(w)
    return grams


@lru_cache(maxsize=100_000)
def _word_trigrams(word: str) -> tuple[str, ...]:
    """The 3-grams of one word padded with a space either side (per word: mentions and queries share words)."""
    w = f" {word} "
    return tuple(w[offset:offset + 3] for offset in range(len(w) - 2))


class CharTrigrams:
    """What an index keeps of its fitted :func:`make_vectorizer`: the 3-gram vocabulary (``vocabulary_``: 3-gram →
    column) and idf weights (``idf_``), as the vectorizer names them. Loading an index then needs no
    scikit-learn, whose import costs ``share-ner tag`` more memory than the model it loads (see
    benchmarks/results/memory.md)."""

    __slots__ = ("vocabulary_", "idf_")

    def __init__(self, vocabulary: dict[str, int], idf: np.ndarray) -> None:
        self.vocabulary_ = vocabulary
        self.idf_ = idf

    def __getstate__(self) -> tuple:
        return self.vocabulary_, self.idf_

    def __setstate__(self, state: tuple) -> None:
        self.vocabulary_, self.idf_ = state

    @staticmethod
    def build_analyzer() -> Callable[[str], list[str]]:
        return char_wb_trigrams


class Groups:
    """A mapping from strings to lists of row numbers, stored as one dict of ints and two arrays.

    Unpickling a dict of lists of ints for a 250,000-name lexicon takes seconds; this takes a fraction.
    """

    __slots__ = ("ids", "indptr", "rows")

    def __init__(self, mapping: dict[str, list[int]]) -> None:
        self.ids = {k: i for i, k in enumerate(mapping)}
        lengths = np.fromiter((len(v) for v in mapping.values()), dtype=np.int64, count=len(mapping))
        self.indptr = np.zeros(len(mapping) + 1, dtype=np.int64)
        np.cumsum(lengths, out=self.indptr[1:])
        self.rows = np.fromiter((r for v in mapping.values() for r in v), dtype=np.int32,
                                count=int(self.indptr[-1]))

    def __getstate__(self) -> tuple:
        return self.ids, self.indptr, self.rows

    def __setstate__(self, state: tuple) -> None:
        self.ids, self.indptr, self.rows = state

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, key: str) -> bool:
        return key in self.ids

    def get(self, key: str) -> list[int] | None:
        i = self.ids.get(key)
        return None if i is None else self.at(i)

    def at(self, i: int) -> list[int]:
        return self.rows[self.indptr[i]:self.indptr[i + 1]].tolist()


@dataclass
class LexiconIndex:
    """The searchable form of a lexicon (see the module docstring)."""

    content_hash: str
    cuis: list[str]
    preferred: np.ndarray  # bool per row
    counts: np.ndarray  # int per row
    exact: Groups  # exact_key → rows
    key: Groups  # normalized_key → rows
    unique_names: list[str]  # soft-normalised names, one column of `postings` each
    unique: Groups  # soft-normalised name → rows
    vectorizer: CharTrigrams | None  # the fitted 3-gram vocabulary and idf weights
    # 3-grams × unique names, columns L2-normalised, CSR so that a query touches only its 3-grams' postings
    postings: sp.csr_matrix | None
    rewrites: Rewrites | None = None  # word swaps learned from names of one concept
    sources: frozenset[str] = frozenset()  # the lexicon's ``source`` values (HPO, SNOMEDCT_US, TRAIN, ...)
    blocks: "NameBlocks | None" = None  # for :meth:`top_cosines` of a large index

    def __len__(self) -> int:
        return len(self.cuis)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_analyzer", None)  # rebuilt on first use; not part of the cached index
        state.pop("_found", None)  # remembered search results: per process
        state.pop("_memos", None)  # ... and what other modules derive from them (see memo)
        state.pop("_lengths", None)  # postings length per 3-gram: rebuilt on first use
        state.pop("_by_name", None)  # names x 3-grams (cosines): rebuilt on first use
        state.pop("_tops", None)  # remembered best cosines: per process
        state.pop("_rows", None)  # remembered tf-idf rows of queries: per process
        return state

    def vectors(self, queries: list[str]) -> sp.csr_matrix:
        """The tf-idf rows of ``queries``: what ``vectorizer.transform`` gives, bit for bit, from the fitted
        analyzer, vocabulary and idf weights. Per call, ``transform`` spends most of its time validating its
        input, about 0.4 ms; the normalizer calls it once per index for every note, and for a note of a few
        mentions that was a quarter of the normalizer's time. The rows of the latest queries are remembered
        (:data:`ROW_MEMO`): the normalizer looks a query up for its best cosine, then for its hits."""
        assert self.vectorizer is not None
        memo: dict[str, tuple[np.ndarray, np.ndarray]] = self.__dict__.setdefault("_rows", {})

        def rows(keys: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
            made = self._vectorized(keys)
            ptr = made.indptr.tolist()
            for i in range(len(keys)):
                yield made.indices[ptr[i]:ptr[i + 1]], made.data[ptr[i]:ptr[i + 1]]

        fill_memo(memo, queries, ROW_MEMO, rows)
        found = [memo[q] for q in queries]
        ptr = np.zeros(len(queries) + 1, dtype=np.int32)
        np.cumsum([len(c) for c, _ in found], out=ptr[1:])
        cols = np.concatenate([c for c, _ in found]) if found else np.zeros(0, dtype=np.int32)
        data = np.concatenate([d for _, d in found]) if found else np.zeros(0, dtype=np.float32)
        return sp.csr_matrix((data, cols, ptr), shape=(len(queries), len(self.vectorizer.vocabulary_)))

    def _vectorized(self, queries: list[str]) -> sp.csr_matrix:
        """The tf-idf rows of ``queries`` (see :meth:`vectors`), made now."""
        analyze = self.__dict__.get("_analyzer")
        if analyze is None:
            analyze = self.__dict__["_analyzer"] = self.vectorizer.build_analyzer()
        vocabulary = self.vectorizer.vocabulary_
        indptr = [0]
        indices: list[int] = []
        counts: list[int] = []
        for q in queries:
            found = Counter(map(vocabulary.get, analyze(q)))
            found.pop(None, None)  # 3-grams outside the vocabulary
            cols = sorted(found)
            indices += cols
            counts += map(found.__getitem__, cols)
            indptr.append(len(indices))
        cols = np.asarray(indices, dtype=np.int32)
        ptr = np.asarray(indptr, dtype=np.int32)
        data = np.asarray(counts, dtype=np.float32)
        # TfidfTransformer with sublinear_tf, then scikit-learn's in-place L2 row normalisation (sums of float32
        # squares accumulated in float64, row by row)
        np.log(data, out=data)
        data += 1
        data *= self.vectorizer.idf_[cols]
        rows = np.repeat(np.arange(len(queries)), np.diff(ptr))
        norms = np.sqrt(np.bincount(rows, weights=(data * data).astype(np.float64), minlength=len(queries)))
        norms[norms == 0] = 1.0
        data = (data / norms[rows]).astype(np.float32)
        return sp.csr_matrix((data, cols, ptr), shape=(len(queries), len(vocabulary)))

    def name_rows(self, u: int) -> list[int]:
        """The lexicon rows of unique name number ``u``."""
        return self.unique.at(u)

    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        """Top ``k`` (unique-name number, cosine) per soft-normalised query, by sparse products of the queries not
        searched before with the postings, as few as :data:`SEARCH_PRODUCT_ENTRIES` allows. A query's hits depend
        on nothing else, so they are remembered (up to :data:`SEARCH_MEMO` queries per index and process):
        clinical notes repeat their disorder names, and the 85,905 mentions the default model finds in the
        MTSamples notes are 8,641 distinct strings."""
        if self.postings is None or self.vectorizer is None or not queries:
            return [[] for _ in queries]
        # query → (name numbers as int32 bytes, cosines as float32 bytes), best first: 0.3 kB a query, where
        # lists of Python tuples took 1.4 kB
        memo: dict[tuple[str, int], tuple[bytes, bytes]] = self.__dict__.setdefault("_found", {})

        def hits(keys: list[tuple[str, int]]) -> Iterator[tuple[bytes, bytes]]:
            if self.blocks is not None and k >= 1:
                # by blocks of names, and by the whole product for the queries whose hits tie
                by_blocks = list(self.blocks.top(self.vectors([q for q, _ in keys]), k))
                left = [key for key, found in zip(keys, by_blocks) if found is None]
                rest = iter(product(left) if left else ())
                for found in by_blocks:
                    yield found if found is not None else next(rest)
                return
            yield from product(keys)

        def product(keys: list[tuple[str, int]]) -> Iterator[tuple[bytes, bytes]]:
            vectors = self.vectors([q for q, _ in keys])
            for lo, hi in self._product_chunks(vectors):
                sims = (vectors[lo:hi] @ self.postings).tocsr()
                for i in range(hi - lo):
                    data = sims.data[sims.indptr[i]:sims.indptr[i + 1]]
                    cols = sims.indices[sims.indptr[i]:sims.indptr[i + 1]]
                    if len(data) > k:
                        top = np.argpartition(-data, k)[:k]
                        data, cols = data[top], cols[top]
                    order = np.argsort(-data, kind="stable")
                    yield cols[order].astype(np.int32).tobytes(), data[order].astype(np.float32).tobytes()

        fill_memo(memo, [(q, k) for q in queries], SEARCH_MEMO, hits)
        out = []
        for q in queries:
            cols_b, data_b = memo[(q, k)]
            out.append(list(zip(np.frombuffer(cols_b, dtype=np.int32).tolist(),
                                np.frombuffer(data_b, dtype=np.float32).tolist())))
        return out

    def _product_chunks(self, vectors: sp.csr_matrix) -> Iterator[tuple[int, int]]:
        """Row ranges of ``vectors`` whose products with the postings have at most
        :data:`SEARCH_PRODUCT_ENTRIES` entries between them (bounded by the postings lengths of their 3-grams;
        a single row may exceed it). A row's hits do not depend on the rows multiplied with it."""
        lengths = self.__dict__.get("_lengths")
        if lengths is None:
            lengths = self.__dict__["_lengths"] = np.diff(self.postings.indptr)
        ends = np.concatenate([[0], np.cumsum(lengths[vectors.indices], dtype=np.int64)])[vectors.indptr]
        start, total = 0, 0
        for i, size in enumerate(np.diff(ends).tolist()):
            if i > start and total + size > SEARCH_PRODUCT_ENTRIES:
                yield start, i
                start, total = i, 0
            total += size
        if vectors.shape[0]:
            yield start, vectors.shape[0]

    def top_cosines(self, queries: list[str]) -> list[tuple[float, list[int]]]:
        """Per soft-normalised query, its best tf-idf cosine over the names and the unique-name numbers that have
        it: the cosine and names :meth:`search` would put first, bit for bit ((0.0, []) when no name shares a
        3-gram with it). Over a large index only the blocks of names whose bound reaches the best cosine found
        are scored (see :class:`NameBlocks`); over a small one, the search product without its top-k selection.
        Remembered like :meth:`search`."""
        if self.postings is None or self.vectorizer is None or not queries:
            return [(0.0, []) for _ in queries]
        memo: dict[str, tuple[float, tuple[int, ...]]] = self.__dict__.setdefault("_tops", {})

        def tops(keys: list[str]) -> Iterator[tuple[float, tuple[int, ...]]]:
            vectors = self.vectors(keys)
            if self.blocks is not None:
                yield from self.blocks.tops(vectors)
                return
            for lo, hi in self._product_chunks(vectors):
                sims = (vectors[lo:hi] @ self.postings).tocsr()
                filled = np.flatnonzero(np.diff(sims.indptr))
                best = np.zeros(hi - lo, dtype=np.float32)
                if len(filled):
                    best[filled] = np.maximum.reduceat(sims.data, sims.indptr[filled])
                rows = np.repeat(np.arange(hi - lo), np.diff(sims.indptr))
                at = np.flatnonzero(sims.data == best[rows])
                starts = np.searchsorted(rows[at], np.arange(hi - lo + 1))
                names = sims.indices[at]
                for i in range(hi - lo):
                    yield float(best[i]), tuple(sorted(names[starts[i]:starts[i + 1]].tolist()))

        fill_memo(memo, queries, SEARCH_MEMO, tops)
        return [(memo[q][0], list(memo[q][1])) for q in queries]

    def forget_searches(self) -> None:
        """Drop the remembered search results (for timing a cold pass)."""
        self.__dict__.pop("_found", None)
        self.__dict__.pop("_memos", None)
        self.__dict__.pop("_tops", None)
        self.__dict__.pop("_rows", None)

    def memo(self, name: str) -> dict:
        """A per-process memo, under ``name``, for results other modules derive from this index's searches:
        kept as long as the search results (dropped with them by :meth:`forget_searches`, never pickled)."""
        return self.__dict__.setdefault("_memos", {}).setdefault(name, {})

    def cosines(self, pairs: list[tuple[str, int]]) -> list[float]:
        """The tf-idf cosine of each (soft-normalised query, unique-name number) pair, for candidates found
        another way than by :meth:`search`."""
        if self.vectorizer is None or self.postings is None or not pairs:
            return [0.0] * len(pairs)
        # Each distinct query is analysed once, and a name's row is its column of the postings (the same floats
        # as analysing it again, which took most of the time of `dense` on clinical notes): the names x 3-grams
        # copy is made on first use, so only a normalizer that finds candidates another way pays for it.
        by_name = self.__dict__.get("_by_name")
        if by_name is None:
            by_name = self.__dict__["_by_name"] = self.postings.T.tocsr()
        row_of = {q: i for i, q in enumerate(dict.fromkeys(p[0] for p in pairs))}
        q = self.vectors(list(row_of))[[row_of[p[0]] for p in pairs]]
        n = by_name[[p[1] for p in pairs]]
        return [float(x) for x in np.asarray(q.multiply(n).sum(axis=1)).ravel()]


def fill_memo(memo: dict, keys: Iterable, limit: int, compute: Callable[[list], Iterable]) -> None:
    """Put into ``memo`` the values of the ``keys`` it lacks, computed by one ``compute(missing keys)`` call
    (values in the same order). A memo that would grow past ``limit`` is emptied first, and then every key of
    this call is computed again, so that all of ``keys`` can be read from ``memo`` afterwards."""
    keys = list(dict.fromkeys(keys))
    todo = [key for key in keys if key not in memo]
    if not todo:
        return
    if len(memo) + len(todo) > limit:
        memo.clear()
        todo = keys
    memo.update(zip(todo, compute(todo)))


def build_index(lexicon: Lexicon) -> LexiconIndex:
    """Compile a lexicon's index (no cache)."""
    entries = lexicon.entries
    cuis = [e.cui for e in entries]
    preferred = np.fromiter((e.preferred for e in entries), dtype=bool, count=len(entries))
    counts = np.fromiter((e.count for e in entries), dtype=np.int64, count=len(entries))
    exact: dict[str, list[int]] = {}
    key: dict[str, list[int]] = {}
    unique: dict[str, list[int]] = {}
    key_of_row: list[str] = []
    for row, e in enumerate(entries):
        exact.setdefault(exact_key(e.name), []).append(row)
        k = normalized_key(e.name)
        key_of_row.append(k)
        key.setdefault(k, []).append(row)
        soft = soft_normalize(e.name)
        if soft:
            unique.setdefault(soft, []).append(row)
    unique_names = list(unique)
    vectorizer = postings = None
    if unique_names:
        fitted = make_vectorizer()
        try:
            postings = fitted.fit_transform(unique_names).T.tocsr()
            vectorizer = CharTrigrams({g: int(j) for g, j in fitted.vocabulary_.items()}, fitted.idf_)
        except ValueError:  # every name shorter than a 3-gram
            vectorizer = postings = None
    blocks = NameBlocks(postings, unique_names) if postings is not None and len(unique_names) >= BLOCKS_MIN_NAMES \
        else None
    return LexiconIndex(lexicon.content_hash, cuis, preferred, counts, Groups(exact), Groups(key), unique_names,
                        Groups(unique), vectorizer, postings, learn_rewrites(zip(cuis, key_of_row)),
                        frozenset(e.source for e in entries), blocks)


def index_cache_path(content_hash: str) -> Path:
    return cache_dir() / f"index-{content_hash[:40]}-v{INDEX_VERSION}.pkl"


_MEMORY: dict[str, LexiconIndex] = {}


def read_cached(path: Path) -> Any:
    """The object pickled at ``path`` by :func:`write_cached`, or ``None`` when it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, ImportError):
        return None


def write_cached(path: Path, obj: Any) -> bool:
    """Pickle ``obj`` to ``path`` atomically; False when the cache is not writable (that only costs time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        return False
    return True


def cached_index(content_hash: str) -> LexiconIndex | None:
    """The index compiled for this content hash, from memory or the disk cache, or ``None``."""
    if content_hash in _MEMORY:
        return _MEMORY[content_hash]
    index = read_cached(index_cache_path(content_hash))
    if not isinstance(index, LexiconIndex) or index.content_hash != content_hash:
        return None
    _remember(index)
    return index


def _remember(index: LexiconIndex) -> None:
    if len(_MEMORY) > 8:
        _MEMORY.clear()
    _MEMORY[index.content_hash] = index


def compile_index(lexicon: Lexicon, use_cache: bool = True) -> LexiconIndex:
    """The index of ``lexicon``: from memory, else from the disk cache (by content hash), else built and cached."""
    h = lexicon.content_hash
    if h in _MEMORY:
        return _MEMORY[h]
    index = cached_index(h) if use_cache else None
    if index is not None:
        return index
    index = build_index(lexicon)
    if use_cache:
        path = index_cache_path(h)
        if write_cached(path, index):
            try:
                for stale in path.parent.glob(f"index-{h[:40]}-v*.pkl"):  # older index versions of this content
                    if stale != path:
                        stale.unlink(missing_ok=True)
            except OSError:
                pass  # a stale file left behind only costs disk space
    _remember(index)
    return index


def concept_names(lexicon: Lexicon, use_cache: bool = True) -> dict[str, str]:
    """Each concept's preferred name in ``lexicon`` (its first name when none is marked preferred), read from the
    disk cache by content hash when it is there: reading a large lexicon's entries costs more than the note."""
    path = cache_dir() / f"names-{lexicon.content_hash[:40]}.pkl"
    if use_cache:
        cached = read_cached(path)
        if isinstance(cached, dict):
            return cached
    names: dict[str, str] = {}
    for e in lexicon.entries:
        if e.preferred:
            names.setdefault(e.cui, e.name)
    for e in lexicon.entries:
        names.setdefault(e.cui, e.name)
    if use_cache:
        write_cached(path, names)
    return names
