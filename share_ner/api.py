"""The Python API: load a model, annotate notes, read and write annotations, score and compare systems.

Everything here is re-exported by :mod:`share_ner` (``share_ner.load``,
``share_ner.evaluate`` ...). ``model_dir`` below is a model directory written by
``share-ner train``; ``share_ner.load()`` without it is the built-in default model.

    >>> import share_ner
    >>> annotator = share_ner.load(model_dir)
    >>> note = "Assessment: hypertension and chest pain. He denies shortness of breath."
    >>> for m in annotator(note):
    ...     print(m.spans, m.text(note), m.cui)
    ((12, 24),) hypertension C0020538
    ((29, 39),) chest pain C0008031
    ((51, 70),) shortness of breath C0013404

A :class:`~share_ner.document.Document` keeps its note id on the mentions, and
:meth:`Annotator.pipe` annotates many notes (in worker processes with ``n_process``):

    >>> docs = [share_ner.Document("n1", "Denies chest pain."), share_ner.Document("n2", "No complaints.")]
    >>> pred = dict(zip([d.id for d in docs], annotator.pipe(docs, batch_size=8)))
    >>> [(m.spans, m.cui, m.attributes.negation) for m in pred["n1"]]
    [(((7, 17),), 'C0008031', 'yes')]
    >>> pred["n2"]
    []

Scores against gold mentions keyed by note id (or annotation paths, read with
:func:`read_annotations`):

    >>> gold = {"n1": [share_ner.Mention("n1", ((7, 17),), "C0008031")], "n2": []}
    >>> scores = share_ner.evaluate(gold, pred)
    >>> scores.strict.f1, scores.accuracy_strict
    (1.0, 1.0)
    >>> share_ner.compare(gold, pred, {"n1": [], "n2": []}, shuffles=99, seed=0)["strict_f1"].diff
    1.0
"""

from __future__ import annotations

import multiprocessing
import sys
from collections import deque
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from share_ner.default_model.build import default_model_dir
from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.eval.scoring import Scores, score
from share_ner.eval.significance import Comparison
from share_ner.eval.significance import compare as _compare
from share_ner.formats import read_annotations
from share_ner.linking.store import saved_dense
from share_ner.model import FILES
from share_ner.pipeline import Pipeline

# The note id given to a plain string passed to Annotator.__call__ (pipe numbers them "0", "1", ...).
TEXT_ID = "text"

Annotations = Mapping[str, Sequence[Mention]]


class Annotator:
    """A loaded model. Call it on a note (a string or a :class:`Document`) to get its mentions, each with a CUI
    (or ``CUI-less``) when the model has a normalizer, and attributes when the model computes them.

    It pickles as its model directory (the worker re-loads it), so it can be handed to other processes.
    """

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline

    @property
    def model_dir(self) -> Path:
        """The model directory this annotator was loaded from."""
        return Path(self._pipeline.model_dir)

    def __call__(self, note: str | Document) -> list[Mention]:
        """The mentions of one note, in text order; a string is the note ``"text"``."""
        return self._pipeline.annotate(_as_document(note, TEXT_ID))

    def pipe(self, notes: Iterable[str | Document], *, batch_size: int = 16,
             n_process: int = 1) -> Iterator[list[Mention]]:
        """The mentions of each note, in input order; strings are numbered notes ``"0"``, ``"1"`` ...

        Notes go to the model ``batch_size`` at a time (their mentions are normalized together, which is faster
        and gives the same CUIs); with ``n_process`` > 1, batches are annotated in that many worker processes.
        A note whose annotation fails raises its exception here.
        """
        if batch_size < 1 or n_process < 1:
            raise ShareNerError(f"batch_size and n_process must be at least 1, got {batch_size} and {n_process}")
        docs = (_as_document(n, str(i)) for i, n in enumerate(notes))
        batches = iter(lambda: list(islice(docs, batch_size)), [])
        if n_process == 1:
            for batch in batches:
                yield from _unwrap(self._pipeline.annotate_many(batch))
            return
        context = multiprocessing.get_context(_start_method(self.model_dir))
        # Under fork the workers inherit this annotator; under spawn it is pickled, i.e. re-loaded from its
        # directory once per worker.
        with context.Pool(n_process, initializer=_init_worker, initargs=(self,)) as pool:
            # at most two batches per worker in flight: a stream of notes is read as fast as it is annotated
            pending: deque[Any] = deque()
            for batch in batches:
                pending.append(pool.apply_async(_annotate_batch, (batch,)))
                if len(pending) >= 2 * n_process:
                    yield from _unwrap(pending.popleft().get())
            while pending:
                yield from _unwrap(pending.popleft().get())

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (load, (str(self.model_dir),))

    def __repr__(self) -> str:
        return f"Annotator(model_dir={str(self.model_dir)!r})"


def _as_document(note: str | Document, doc_id: str) -> Document:
    if isinstance(note, Document):
        return note
    if isinstance(note, str):
        return Document(doc_id, note)
    raise TypeError(f"expected a note text (str) or a share_ner.Document, got {type(note).__name__}")


def _unwrap(outs: Sequence[list[Mention] | Exception]) -> Iterator[list[Mention]]:
    for out in outs:
        if isinstance(out, BaseException):
            raise out
        yield out


def _start_method(model_dir: Path) -> str:
    # fork shares the loaded model with the workers; not after PyTorch has started its threads (dense normalizer)
    dense = (model_dir / FILES.normalizer).is_dir() and saved_dense(model_dir / FILES.normalizer)
    return "fork" if sys.platform.startswith("linux") and not dense else "spawn"


_WORKER: dict[str, Annotator] = {}


def _init_worker(annotator: Annotator) -> None:
    _WORKER["annotator"] = annotator


def _annotate_batch(docs: list[Document]) -> list[list[Mention] | Exception]:
    return _WORKER["annotator"]._pipeline.annotate_many(docs)


def load(model: str | Path | None = None) -> Annotator:
    """Load a model directory (written by ``share-ner train``), or with ``None`` the built-in default model,
    packaged with share-ner (see :mod:`share_ner.default_model`).

    Raises:
        ShareNerError: one line naming the missing directory or model file.
    """
    if model is None:
        model = default_model_dir()
    path = Path(model)
    if not path.is_dir():
        raise ShareNerError(f"{path}: no such model directory")
    return Annotator(Pipeline.load(path.resolve()))


def _annotations(value: Annotations | str | Path, notes: Mapping[str, Document] | None) -> Annotations:
    return read_annotations(value, notes) if isinstance(value, (str, Path)) else value


def evaluate(gold: Annotations | str | Path, pred: Annotations | str | Path, *,
             notes: Mapping[str, Document] | None = None, allow_extra: bool = False) -> Scores:
    """Task 1a (strict and relaxed P/R/F1) and Task 1b (accuracy) scores of ``pred`` against ``gold``.

    Each is mentions keyed by note id, or a path read with :func:`read_annotations` (with ``notes``, spans are
    checked against the note texts). A gold note missing from ``pred`` counts as predicting nothing; a predicted
    note absent from gold is an error unless ``allow_extra``. Definitions: :mod:`share_ner.eval.scoring`.
    """
    return score(_annotations(gold, notes), _annotations(pred, notes), allow_extra=allow_extra)


def compare(gold: Annotations | str | Path, a: Annotations | str | Path, b: Annotations | str | Path, *,
            shuffles: int = 10_000, seed: int | None = 0, notes: Mapping[str, Document] | None = None,
            allow_extra: bool = False) -> dict[str, Comparison]:
    """System ``a`` against system ``b`` on each metric (``strict_f1``, ``relaxed_f1``, ``strict_accuracy``,
    ``relaxed_accuracy``): both values, their difference and its p-value by approximate randomization over
    notes with ``shuffles`` shuffles (:mod:`share_ner.eval.significance`)."""
    return _compare(_annotations(gold, notes), _annotations(a, notes), _annotations(b, notes),
                    n_shuffles=shuffles, seed=seed, allow_extra=allow_extra)


__all__ = ["Annotator", "Comparison", "Scores", "compare", "evaluate", "load"]
