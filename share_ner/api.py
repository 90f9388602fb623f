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

import functools
import multiprocessing
import sys
from collections import deque
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from share_ner.batch.annotate import PipelineAnnotator, annotate_documents
from share_ner.batch.processes import BatchPool, _init_worker, _work
from share_ner.batch.timeout import DEFAULT_NOTE_SECONDS, NoteTimeout
from share_ner.batch.workers import WorkerPool
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


class NoteTimeoutError(ShareNerError):
    """A note took longer than the annotator's ``time_limit`` (seconds per million characters) and was stopped."""


class WorkerDiedError(ShareNerError):
    """The worker process annotating a note died (killed by the system, a crash in a C extension), twice."""


class Annotator:
    """A loaded model. Call it on a note (a string or a :class:`Document`) to get its mentions, each with a CUI
    (or ``CUI-less``) when the model has a normalizer, and attributes when the model computes them.

    Notes of any length are annotated (those over a million characters in line-aligned pieces). A note may take
    ``time_limit`` seconds per million characters, or part of a million (None: no limit; it holds in the main
    thread of a process, :mod:`share_ner.batch.timeout`); one that takes longer raises
    :class:`NoteTimeoutError`.

    It pickles as its model directory (the worker re-loads it), so it can be handed to other processes.
    """

    def __init__(self, pipeline: Any, time_limit: float | None = DEFAULT_NOTE_SECONDS) -> None:
        self._annotator = PipelineAnnotator(pipeline)
        self.time_limit = time_limit

    @property
    def _pipeline(self) -> Any:
        return self._annotator.pipeline  # a new one after a note ran out of time

    @property
    def model_dir(self) -> Path:
        """The model directory this annotator was loaded from."""
        return Path(self._pipeline.model_dir)

    def __call__(self, note: str | Document) -> list[Mention]:
        """The mentions of one note, in text order; a string is the note ``"text"``."""
        doc = _as_document(note, TEXT_ID)
        return next(_unwrap([doc], annotate_documents(self._annotator, [doc], self.time_limit)))

    def pipe(self, notes: Iterable[str | Document], *, batch_size: int = 16,
             n_process: int = 1) -> Iterator[list[Mention]]:
        """The mentions of each note, in input order; strings are numbered notes ``"0"``, ``"1"`` ...

        Notes go to the model ``batch_size`` at a time (their mentions are normalized together, which is faster
        and gives the same CUIs); with ``n_process`` > 1, batches are annotated in that many worker processes.
        A note whose annotation fails raises its exception here; a worker process that dies is replaced, its
        batch tried again, and a note that kills its worker twice raises :class:`WorkerDiedError`.
        """
        if batch_size < 1 or n_process < 1:
            raise ShareNerError(f"batch_size and n_process must be at least 1, got {batch_size} and {n_process}")
        docs = (_as_document(n, str(i)) for i, n in enumerate(notes))
        batches = iter(lambda: list(islice(docs, batch_size)), [])
        if n_process == 1:
            for batch in batches:
                yield from _unwrap(batch, annotate_documents(self._annotator, batch, self.time_limit))
            return
        # Under fork the workers inherit this annotator; under spawn it is pickled, i.e. re-loaded from its
        # directory once per worker.
        context = multiprocessing.get_context(_start_method(self.model_dir))
        workers = WorkerPool(n_process, _work, context=context, initializer=_init_worker,
                             initargs=(functools.partial(_same, self._annotator),))
        pool = BatchPool(workers, lambda doc, reason: WorkerDiedError(f"note {doc.id}: {reason}"), self.time_limit,
                         raw=True)
        sent: deque[list[Document]] = deque()  # the batches not given back yet, in order
        try:
            for batch in batches:
                sent.append(batch)
                pool.submit(batch)
                # at most two batches per worker in flight: a stream of notes is read as fast as it is annotated
                while pool.in_flight() >= 2 * n_process:
                    pool.wait()
                    for outs in pool.done():
                        yield from _unwrap(sent.popleft(), outs)
            while pool.in_flight():
                pool.wait()
                for outs in pool.done():
                    yield from _unwrap(sent.popleft(), outs)
        finally:
            pool.close(kill=True)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (functools.partial(load, time_limit=self.time_limit), (str(self.model_dir),))

    def __repr__(self) -> str:
        return f"Annotator(model_dir={str(self.model_dir)!r})"


def _as_document(note: str | Document, doc_id: str) -> Document:
    if isinstance(note, Document):
        return note
    if isinstance(note, str):
        return Document(doc_id, note)
    raise TypeError(f"expected a note text (str) or a share_ner.Document, got {type(note).__name__}")


def _unwrap(docs: Sequence[Document], outs: Sequence[list[Mention] | BaseException]) -> Iterator[list[Mention]]:
    for doc, out in zip(docs, outs):
        if isinstance(out, NoteTimeout):
            raise NoteTimeoutError(f"note {doc.id}: {out.reason()}") from None
        if isinstance(out, BaseException):
            raise out
        yield out


def _start_method(model_dir: Path) -> str:
    # fork shares the loaded model with the workers; not after PyTorch has started its threads (dense normalizer)
    dense = (model_dir / FILES.normalizer).is_dir() and saved_dense(model_dir / FILES.normalizer)
    return "fork" if sys.platform.startswith("linux") and not dense else "spawn"


def _same(annotator: PipelineAnnotator) -> PipelineAnnotator:
    """The annotator factory of :meth:`Annotator.pipe`'s workers: the annotator itself (inherited under fork,
    re-loaded from its model directory under spawn)."""
    return annotator


def load(model: str | Path | None = None, *, time_limit: float | None = DEFAULT_NOTE_SECONDS) -> Annotator:
    """Load a model directory (written by ``share-ner train``), or with ``None`` the built-in default model,
    packaged with share-ner (see :mod:`share_ner.default_model`). ``time_limit``: seconds a note may take per
    million characters (None: no limit).

    Raises:
        ShareNerError: one line naming the missing directory or the bad model file (a ``ModelError``).
    """
    if model is None:
        model = default_model_dir()
    path = Path(model)
    if not path.is_dir():
        raise ShareNerError(f"{path}: no such model folder")
    return Annotator(Pipeline.load(path.resolve()), time_limit)


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


__all__ = ["Annotator", "Comparison", "NoteTimeoutError", "Scores", "WorkerDiedError", "compare", "evaluate", "load"]
