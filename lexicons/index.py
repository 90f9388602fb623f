"""String keys and the compiled, cached search index of a lexicon.

Three views of a string:

* :func:`exact_key` — case-folded, whitespace collapsed (the gazetteer match);
* :func:`soft_normalize` — also accents stripped, British spellings folded
  (haem→hem, oedema→edema, tumour→tumor) and punctuation turned into spaces
  (the text the character 3-gram tf-idf sees);
* :func:`normalized_key` — also stop words dropped, plurals and inflections
  stripped and the words sorted (word order does not matter).

A :class:`LexiconIndex` holds the lexicon's rows, dicts from the two keys to
rows, and an L2-normalised character 3-gram tf-idf matrix of the unique
soft-normalised names. It is compiled once per lexicon content hash and
pickled under :func:`~share_ner.lexicons.lexicon.cache_dir` (written
atomically), so later runs load it in well under a second.
"""

from __future__ import annotations

import pickle
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np
import scipy.sparse as sp
from scipy.sparse._sparsetools import csc_matvec, csr_matvec  # y += A x, as the sparse products call them

from share_ner.features.matcher import fold_plural
from share_ner.features.stopwords import NAME_JOINERS
from share_ner.io import atomic_write_bytes
from share_ner.lexicons.lexicon import Lexicon, cache_dir

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
# The best cosine of a query over a large index is found by blocks of names: a block's bound is the query's product
# with the block's largest weight per 3-gram, and a block whose bound is below the best cosine found is not scored.
BLOCK_NAMES = 16  # names per block (sorted by their words, so a block's names share most 3-grams)
# Below this many unique names an index has no blocks: the whole product is fast enough there (HPO), and the
# blocks' copy of the names is not paid for in memory and load time by every process of the default model
BLOCKS_MIN_NAMES = 60_000
FIRST_BLOCKS = 16  # blocks of the highest bounds scored first, for a best cosine to compare the other bounds with:
FIRST_SHARE = 0.7  # ... up to this many of those whose bound is at least this share of the highest
LATER_BLOCKS = 8  # then blocks scored together, at most, between two looks at the cut
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_POSSESSIVE = re.compile(r"(?<=[a-z])['\u2019]s\b")  # Alzheimer's disease = Alzheimer disease
_SPELLING = (
    (re.compile(r"ae(?=[a-z])"), "e"),  # haemorrhage, anaemia
    (re.compile(r"(?<=[a-z])oe(?=[a-z])|\boe(?=[a-z])"), "e"),  # oedema, diarrhoea, oesophagus
    (re.compile(r"(?<=[a-z]{2})our\b"), "or"),  # tumour, tumours is handled after plural stripping
    (re.compile(r"(?<=[a-z]{2})ours\b"), "ors"),
)


def exact_key(text: str) -> str:
    """Case-folded text with whitespace collapsed."""
    return " ".join(text.casefold().split())


@lru_cache(maxsize=200_000)
def soft_normalize(text: str) -> str:
    """Lower case, no accents, folded British spellings, punctuation as spaces."""
    if not text.isascii():  # (ASCII text has no accents to strip: NFKD leaves it as it is)
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
    text = text.lower()
    text = _NON_ALNUM.sub(" ", _POSSESSIVE.sub("", text))
    for pattern, repl in _SPELLING:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A light suffix stripper for plurals (the term matcher's :func:`~share_ner.features.matcher.fold_plural`:
    tumors→tumor, metastases and metastasis→metastas) and inflections (infected→infect)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    word = fold_plural(word)
    if word.endswith("ical") and len(word) > 6:  # neurological → neurologic
        return word[:-2]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    elif word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


# Words that name the same thing in disorder names (after stemming); folded in normalized keys only.
WORD_SYNONYMS = {
    # neoplasms (MeSH files breast cancer/carcinoma/tumour under one heading)
    "carcinoma": "neoplasm", "cancer": "neoplasm", "malignancy": "neoplasm", "tumor": "neoplasm",
    "neoplasia": "neoplasm",
    # organ adjectives → organ nouns
    "prostatic": "prostate", "pancreatic": "pancrea", "renal": "kidney", "nephric": "kidney", "hepatic": "liver",
    "cardiac": "heart", "pulmonary": "lung", "gastric": "stomach", "cerebral": "brain", "ocular": "eye",
    "colonic": "colon", "mammary": "breast", "ovarian": "ovary", "uterin": "uterus", "cutaneou": "skin",
    "dermatological": "skin", "dermal": "skin", "vascular": "vessel", "osseou": "bone", "muscular": "muscle",
    # generic disorder heads ("Abnormality of the skin", "skin disease", "sleep disturbance")
    "disorder": "disease", "diseas": "disease", "abnormality": "disease", "anomaly": "disease",
    "disturbance": "disease", "disturbanc": "disease", "syndrom": "syndrome",
    "deficient": "deficiency", "infectious": "infection", "bleed": "hemorrhag",
}


@lru_cache(maxsize=200_000)
def normalized_key(text: str) -> str:
    """Stop words dropped, words stemmed and sorted: 'Cancers of the breast' → 'breast cancer'."""
    words = soft_normalize(text).split()
    kept = [w for w in words if w not in NAME_JOINERS] or words
    stems = (stem(w) for w in kept)
    return " ".join(sorted(WORD_SYNONYMS.get(w, w) for w in stems))


@dataclass
class Rewrites:
    """Word swaps learned from the names of each concept, in normalized-key words.

    ``swap[a][b]``: in how many concepts two names differ only by the word ``a`` against ``b``
    ("renal dysfunction" / "renal impairment" → dysfunction↔impairment). Counting concepts, not name pairs,
    keeps one concept with many near-identical names from dominating.
    """

    swap: dict[str, dict[str, int]]
    # phrase["disease"]["abnormal morphology"] and back: any other words against words (sorted, space-joined;
    # one against one is ``swap``), counted the same way ("Abnormality of the sacrum" / "Abnormal sacrum
    # morphology", "distal phalanx" / "outermost bone")
    phrase: dict[str, dict[str, int]] = field(default_factory=dict)
    # each phrase of ``phrase`` under one of its words (:func:`file_phrases`), made with the index: not by every
    # process that loads it
    filed: dict[str, list[str]] | None = None

    def filing(self) -> dict[str, list[str]]:
        """:attr:`filed`, made now if it was not."""
        if self.filed is None:
            self.filed = file_phrases(self.phrase)
        return self.filed

    def merged(self, other: "Rewrites | None") -> "Rewrites":
        if other is None:
            return self
        # other's phrases where other files them, then this one's phrases that other lacks
        filed = dict(other.filing())
        for w, phrases in self.filing().items():
            extra = [a for a in phrases if a not in other.phrase]
            if extra:
                filed[w] = [*filed.get(w, ()), *extra]
        return Rewrites(_added(self.swap, other.swap), _added(self.phrase, other.phrase), filed)


def file_phrases(table: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    """Each phrase of ``table`` under the one of its words that starts fewest phrases of ``table`` (ties: the
    first in alphabetical order). A phrase applies to a mention only when the mention has all its words, so a
    mention that looks up its own words finds it once, and the short lists of rare words are most looked up."""
    words = [(a, set(a.split())) for a in table]
    spread = Counter(w for _, ws in words for w in ws)
    filed: dict[str, list[str]] = {}
    for a, ws in words:
        w = min(ws, key=lambda w: (spread[w], w)) if len(ws) > 1 else next(iter(ws))
        filed.setdefault(w, []).append(a)
    return filed


def _added(x: dict[str, dict[str, int]], y: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``x`` and ``y`` with the counts of a word in both summed, ``x``'s words first. A row that only one of them
    has is that row itself, not a copy (rows are not changed once learned): a large lexicon's rewrites are not held
    twice, in its index and in a normalizer's merged rewrites."""
    out = dict(x)
    for a, bs in y.items():
        row = out.get(a)
        if row is None:
            out[a] = bs
            continue
        row = out[a] = dict(row)
        for b, n in bs.items():
            row[b] = row.get(b, 0) + n
    return out


class WordSwaps:
    """The word swaps of :attr:`Rewrites.swap` seen in at least ``min_count`` concepts: ``get(word)`` is a list of
    (the other word, concepts), most concepts first (ties: by the other word). A word's list is made when it is
    first looked up, not for every word of the lexicon at load."""

    def __init__(self, table: dict[str, dict[str, int]], min_count: int) -> None:
        self._table = table
        self._min_count = min_count
        self._made: dict[str, list[tuple[str, int]]] = {}

    def get(self, word: str, default: tuple = ()) -> "list[tuple[str, int]] | tuple":
        made = self._made.get(word)
        if made is None:
            row = self._table.get(word)
            if row is None:
                return default
            made = self._made[word] = sorted(((b, n) for b, n in row.items() if n >= self._min_count),
                                             key=lambda bn: (-bn[1], bn[0]))
        return made or default


class PhraseSwaps:
    """The phrase swaps of :attr:`Rewrites.phrase` seen in at least ``min_count`` concepts, by the word of the
    replaced phrase it is filed under (:func:`file_phrases`; a mention looks up only its own words): ``get(word)``
    is a dict from another word of the phrase (the first in alphabetical order; None for a phrase of no other
    word) to a list of (the phrase's words as a set, the phrase as a bag when it repeats a word, else None, its
    words, and its swaps: (the other phrase's words, concepts), most concepts first). A mention then reads only
    the lists of its own words: most phrases filed under a word need a word the mention lacks. A word's lists are
    made when it is first looked up: the lists of every word of a large lexicon's phrases took more memory than
    the rest of the normalizer."""

    def __init__(self, table: dict[str, dict[str, int]], min_count: int,
                 filed: dict[str, list[str]] | None = None) -> None:
        self._table = table
        self._min_count = min_count
        self._filed = file_phrases(table) if filed is None else filed
        self._made: dict[str, dict[str | None, list[tuple[frozenset[str], Counter | None, tuple[str, ...],
                                                          list[tuple[tuple[str, ...], int]]]]]] = {}

    def __bool__(self) -> bool:
        return bool(self._filed)

    def items(self) -> Iterator[tuple[str, dict]]:
        """Every word and its lists (each made now if they were not)."""
        for word in self._filed:
            yield word, self.get(word)

    def get(self, word: str) -> dict:
        made = self._made.get(word)
        if made is None:
            if word not in self._filed:
                return {}
            made = self._made[word] = {}
            for a in self._filed[word]:
                swaps = [(tuple(b.split()), n) for b, n in sorted(self._table[a].items(), key=lambda bn: (-bn[1], bn[0]))
                         if n >= self._min_count]
                if not swaps:
                    continue
                a_words = tuple(a.split())
                bag = Counter(a_words)
                other = min((w for w in bag if w != word), default=None)
                made.setdefault(other, []).append((frozenset(bag), bag if len(bag) < len(a_words) else None, a_words,
                                                   swaps))
        return made


# Concepts with more names than this are skipped when learning rewrites (pairwise comparison cost).
_REWRITE_MAX_NAMES = 40


def learn_rewrites(cui_keys: Iterable[tuple[str, str]]) -> Rewrites:
    """:class:`Rewrites` from (concept, normalized key) pairs; ``CUI-less`` rows are not names of a concept."""
    by_cui: dict[str, set[str]] = {}
    for cui, k in cui_keys:
        if k and cui != "CUI-less":
            by_cui.setdefault(cui, set()).add(k)
    swap_pairs: set[tuple[str, str, str]] = set()
    phrase_pairs: set[tuple[str, str, str]] = set()
    for cui, keys in by_cui.items():
        if len(keys) < 2 or len(keys) > _REWRITE_MAX_NAMES:
            continue
        bags = [Counter(k.split()) for k in keys]
        for i in range(len(bags)):
            for j in range(i + 1, len(bags)):
                a, b = bags[i] - bags[j], bags[j] - bags[i]
                sizes = (sum(a.values()), sum(b.values()))
                if sizes == (1, 1):
                    (wa,), (wb,) = a, b
                    swap_pairs.add((cui, wa, wb))
                    swap_pairs.add((cui, wb, wa))
                elif min(sizes) >= 1:
                    pa, pb = " ".join(sorted(a.elements())), " ".join(sorted(b.elements()))
                    phrase_pairs.add((cui, pa, pb))
                    phrase_pairs.add((cui, pb, pa))
    phrases = _counted(phrase_pairs)
    return Rewrites(_counted(swap_pairs), phrases, file_phrases(phrases))


def _counted(pairs: set[tuple[str, str, str]]) -> dict[str, dict[str, int]]:
    """(concept, a, b) triples → ``out[a][b]``: the number of concepts."""
    out: dict[str, dict[str, int]] = {}
    for _, a, b in pairs:
        row = out.setdefault(a, {})
        row[b] = row.get(b, 0) + 1
    return out


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
