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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer

from share_ner.lexicons.lexicon import Lexicon, atomic_write_bytes, cache_dir

INDEX_VERSION = 1
STOPWORDS = frozenset("of the a an and in on with to for by or at from as its nos".split())
_NON_ALNUM = re.compile(r"[^0-9a-z]+")
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
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = _NON_ALNUM.sub(" ", text)
    for pattern, repl in _SPELLING:
        text = pattern.sub(repl, text)
    return " ".join(text.split())


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    """A light suffix stripper for plurals and inflections (tumors→tumor, infected→infect)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith(("ss", "us", "is", "ys")):
        pass
    elif word.endswith("s"):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4:
        word = word[:-2]
    elif word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


# Words that name the same thing in disorder names (after stemming); folded in normalized keys only.
WORD_SYNONYMS = {
    "carcinoma": "cancer", "malignancy": "cancer", "tumor": "neoplasm", "neoplasia": "neoplasm",
    "prostatic": "prostate", "pancreatic": "pancrea", "pancreas": "pancrea", "renal": "kidney",
    "hepatic": "liver", "cardiac": "heart", "pulmonary": "lung", "gastric": "stomach", "cerebral": "brain",
    "ocular": "eye", "colonic": "colon", "mammary": "breast", "ovarian": "ovary",
    "disorder": "disease", "diseas": "disease", "abnormality": "anomaly", "abnormaly": "anomaly",
    "anomaly": "anomaly", "syndrom": "syndrome", "deficient": "deficiency", "deficiency": "deficiency",
    "infectious": "infection", "uterine": "uterus",
}


@lru_cache(maxsize=200_000)
def normalized_key(text: str) -> str:
    """Stop words dropped, words stemmed and sorted: 'Cancers of the breast' → 'breast cancer'."""
    words = soft_normalize(text).split()
    kept = [w for w in words if w not in STOPWORDS] or words
    stems = (stem(w) for w in kept)
    return " ".join(sorted(WORD_SYNONYMS.get(w, w) for w in stems))


def make_vectorizer() -> TfidfVectorizer:
    return TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=False, sublinear_tf=True,
                           dtype=np.float32)


@dataclass
class LexiconIndex:
    """The searchable form of a lexicon (see the module docstring)."""

    content_hash: str
    cuis: list[str]
    names: list[str]
    preferred: np.ndarray  # bool per row
    counts: np.ndarray  # int per row
    exact: dict[str, list[int]]  # exact_key → rows
    key: dict[str, list[int]]  # normalized_key → rows
    unique_names: list[str]  # soft-normalised names, one row of `matrix` each
    unique_rows: list[list[int]]  # lexicon rows of each unique name
    vectorizer: TfidfVectorizer | None
    matrix: sp.csr_matrix | None  # unique names × 3-grams, rows L2-normalised
    matrix_t: sp.csc_matrix | None = None

    def __len__(self) -> int:
        return len(self.cuis)

    def search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        """Top ``k`` (unique-name row, cosine) per soft-normalised query, by one sparse product for all queries."""
        if self.matrix is None or self.vectorizer is None or not queries:
            return [[] for _ in queries]
        q = self.vectorizer.transform(queries)
        if self.matrix_t is None:
            self.matrix_t = self.matrix.T.tocsc()
        sims = (q @ self.matrix_t).tocsr()
        out: list[list[tuple[int, float]]] = []
        for i in range(sims.shape[0]):
            lo, hi = sims.indptr[i], sims.indptr[i + 1]
            if lo == hi:
                out.append([])
                continue
            data = sims.data[lo:hi]
            cols = sims.indices[lo:hi]
            if hi - lo > k:
                top = np.argpartition(-data, k)[:k]
                data, cols = data[top], cols[top]
            order = np.argsort(-data, kind="stable")
            out.append([(int(cols[j]), float(data[j])) for j in order])
        return out


def build_index(lexicon: Lexicon) -> LexiconIndex:
    """Compile a lexicon's index (no cache)."""
    entries = lexicon.entries
    cuis = [e.cui for e in entries]
    names = [e.name for e in entries]
    preferred = np.fromiter((e.preferred for e in entries), dtype=bool, count=len(entries))
    counts = np.fromiter((e.count for e in entries), dtype=np.int64, count=len(entries))
    exact: dict[str, list[int]] = {}
    key: dict[str, list[int]] = {}
    unique: dict[str, list[int]] = {}
    for row, name in enumerate(names):
        exact.setdefault(exact_key(name), []).append(row)
        key.setdefault(normalized_key(name), []).append(row)
        soft = soft_normalize(name)
        if soft:
            unique.setdefault(soft, []).append(row)
    unique_names = list(unique)
    vectorizer = matrix = None
    if unique_names:
        vectorizer = make_vectorizer()
        try:
            matrix = vectorizer.fit_transform(unique_names).tocsr()
        except ValueError:  # every name shorter than a 3-gram
            vectorizer = matrix = None
    return LexiconIndex(lexicon.content_hash, cuis, names, preferred, counts, exact, key, unique_names,
                        list(unique.values()), vectorizer, matrix)


def index_cache_path(content_hash: str) -> Path:
    return cache_dir() / f"index-{content_hash[:40]}-v{INDEX_VERSION}.pkl"


_MEMORY: dict[str, LexiconIndex] = {}


def compile_index(lexicon: Lexicon, use_cache: bool = True) -> LexiconIndex:
    """The index of ``lexicon``: from memory, else from the disk cache (by content hash), else built and cached."""
    h = lexicon.content_hash
    if h in _MEMORY:
        return _MEMORY[h]
    path = index_cache_path(h)
    index = None
    if use_cache:
        try:
            with open(path, "rb") as f:
                index = pickle.load(f)
            if not isinstance(index, LexiconIndex) or index.content_hash != h:
                index = None
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, ImportError):
            index = None
    if index is None:
        index = build_index(lexicon)
        if use_cache:
            try:
                atomic_write_bytes(path, pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
            except OSError:
                pass  # an unwritable cache only costs time
    if len(_MEMORY) > 8:
        _MEMORY.clear()
    _MEMORY[h] = index
    return index
