"""Which label an ambiguous training string means in a note, by the training notes that note resembles.

A training string annotated with several labels ("psychosis": drug-induced psychosis in some abstracts,
psychotic disorders in others; "breast and ovarian cancer": one syndrome id or two disease ids) takes the
label it carried in the training note most like the note at hand: the cosine of sublinear, idf-weighted word
counts, stop words left out. A one-nearest-neighbour word-sense choice, chosen on the dev splits of NCBI
disease and BC5CDR (docs/normalizer.md).

Only the notes where an ambiguous string occurs are kept, as hashed word counts
(scikit-learn's ``HashingVectorizer``): the saved file holds no word of any note, but whoever has a word list
can test which of its words occurred in those notes, as with any bag-of-words model.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.features.stopwords import english
from share_ner.lexicons.gazetteer import mention_string
from share_ner.lexicons.keys import exact_key
from share_ner.model import NORMALIZER_FILES

N_FEATURES = 2 ** 18
MIN_DF = 2  # a word seen in one training note only says nothing about the others



@lru_cache(maxsize=1)
def _hasher():
    """The word hasher, made on first use: scikit-learn is imported only by a model that uses note contexts."""
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=N_FEATURES, alternate_sign=False, norm=None, stop_words=sorted(english()))


class NoteContexts:
    """Training notes, as word vectors, for each training string annotated with more than one label."""

    def __init__(self, idf: np.ndarray, vectors: sp.csr_matrix, where: Mapping[str, Mapping[str, list[int]]]):
        self.idf = idf  # per hashed word; 0 for words in fewer than MIN_DF training notes
        self.vectors = vectors  # one L2-normalised row per kept training note
        self.where = where  # exact_key(string) → label → rows of ``vectors``

    @classmethod
    def fit(cls, docs: Mapping[str, Document], gold: Mapping[str, list[Mention]]) -> "NoteContexts | None":
        """The contexts of ``gold``'s ambiguous strings, or None when no string carries two labels."""
        ids = sorted(d for d, ms in gold.items() if ms and d in docs)
        seen: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for d in ids:
            for m in gold[d]:
                labels = seen[exact_key(mention_string(docs[d], m))][m.cui]
                if not labels or labels[-1] != d:
                    labels.append(d)
        ambiguous = {s: by_label for s, by_label in seen.items() if len(by_label) > 1}
        if not ambiguous:
            return None
        counts = _hasher().transform([docs[d].text for d in ids])
        df = np.bincount(counts.indices, minlength=N_FEATURES)
        n = len(ids)
        idf = np.where(df >= MIN_DF, np.log((1 + n) / (1 + df)) + 1.0, 0.0)  # scikit-learn's smooth idf
        keep = sorted({d for by_label in ambiguous.values() for notes in by_label.values() for d in notes})
        row = {d: i for i, d in enumerate(keep)}
        position = {d: i for i, d in enumerate(ids)}
        vectors = _weigh(counts[[position[d] for d in keep]], idf)
        where = {s: {label: [row[d] for d in notes] for label, notes in by_label.items()}
                 for s, by_label in ambiguous.items()}
        return cls(idf, vectors, where)

    def similarities(self, note: sp.csr_matrix, leave_out: str = "") -> np.ndarray:
        """Cosine of a note (its :func:`word_counts`) with every kept training note, the words of ``leave_out``
        (the ambiguous string itself, which every candidate note contains) not counted."""
        if leave_out:
            note = note.copy()
            note.data[np.isin(note.indices, _word_ids(leave_out))] = 0
            note.eliminate_zeros()
        return (self.vectors @ _weigh(note, self.idf).T).toarray().ravel()

    def nearest(self, note: sp.csr_matrix, sims: np.ndarray, matched: str, labels: list[str]) -> dict[str, float] | None:
        """For each of ``labels`` that the training string ``matched`` carried, the cosine of its nearest training
        note with ``note`` (its :func:`word_counts`; ``sims``: its :meth:`similarities`, computed once per note).
        None when the string is not ambiguous in training, or when the note shares no word but the string's own
        with those notes (nothing to tell the labels apart)."""
        by_label = self.where.get(exact_key(matched))
        if not by_label:
            return None
        rows = [r for label in labels for r in by_label.get(label, ())]
        if not self.similarities(note, leave_out=matched)[rows].any():
            return None
        return {label: float(sims[by_label[label]].max()) for label in labels if label in by_label}

    # ------------------------------------------------------------ persistence
    def save(self, directory: Path) -> Path:
        nz = np.flatnonzero(self.idf)
        path = directory / NORMALIZER_FILES.contexts
        with open(path, "wb") as fh:
            np.savez_compressed(fh, idf_index=nz, idf=self.idf[nz], data=self.vectors.data,
                                indices=self.vectors.indices, indptr=self.vectors.indptr,
                                shape=np.array(self.vectors.shape), where=np.array(json.dumps(self.where)))
        return path

    @classmethod
    def load(cls, path: Path) -> "NoteContexts":
        try:
            with np.load(path, allow_pickle=False) as z:
                idf = np.zeros(N_FEATURES)
                idf[z["idf_index"]] = z["idf"]
                vectors = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
                where = json.loads(str(z["where"]))
        except (OSError, ValueError, KeyError) as exc:
            raise ShareNerError(f"{path}: cannot read the note contexts: {exc}") from None
        return cls(idf, vectors, where)


def word_counts(text: str) -> sp.csr_matrix:
    """The hashed word counts of one note, as :meth:`NoteContexts.similarities` takes them."""
    return _hasher().transform([text]).tocsr()


@lru_cache(maxsize=10_000)
def _word_ids(text: str) -> np.ndarray:
    return _hasher().transform([text]).indices


def _weigh(counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    from sklearn.preprocessing import normalize

    out = counts.astype(np.float64).tocsr()
    out.data = 1.0 + np.log(out.data)
    return normalize(out.multiply(idf).tocsr())
