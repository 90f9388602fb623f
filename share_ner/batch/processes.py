"""What runs in a worker process: the annotator it loads once (:func:`_load_annotator`), the batches it
annotates (:func:`_work`); batches handed to worker processes and their results taken back in order
(:class:`BatchPool`); and child-process helpers (:func:`in_child`, :func:`settle_heap`).
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import time
from typing import Any, Callable, Iterator, Sequence

from share_ner.batch.annotate import AnnotatorFactory, annotate_documents, annotate_notes, failure_reason
from share_ner.batch.workers import Death, WorkerPool
from share_ner.collector import collect_less
from share_ner.document import Document
from share_ner.errors import ShareNerError


def in_child(fn: Callable[..., Any], *args: Any) -> bool:
    """Run ``fn(*args)`` in a child process, for what it leaves on disk (this process stays small); whether it
    succeeded. A failure prints nothing: the same work fails again, with its message, where it is needed."""
    import multiprocessing

    child = multiprocessing.get_context().Process(target=_quietly, args=(fn, *args))
    child.start()
    child.join()
    return child.exitcode == 0


def _quietly(fn: Callable[..., Any], *args: Any) -> None:
    try:
        fn(*args)
    except BaseException:  # noqa: BLE001
        sys.exit(1)


def settle_heap() -> None:
    """Once the model is loaded: move every object alive to the garbage collector's permanent generation.

    The lexicon index, gazetteer, learned swaps and CRF model are millions of Python objects that live as long
    as the process. Left in the collected generations, every full collection walks them all again; frozen
    (:func:`gc.freeze`), they are never walked, and the collections that remain look only at what a note
    creates. Frozen objects are still freed when nothing refers to them; only reference cycles among them
    would outlive their use. Loading leaves few such objects: kept, rather than spend a full collection
    (a walk of the whole model) to free them.

    Also collects the young generation less often (:func:`share_ner.collector.collect_less`): a note makes many
    short-lived objects.
    """
    gc.freeze()
    collect_less()


# ---------------------------------------------------------------- worker processes

_WORKER: dict[str, Any] = {}


def _init_worker(factory: AnnotatorFactory) -> None:
    # One of --jobs processes: a thread pool per worker (PyTorch's, under the optional dense normalizer, is
    # created when the worker first loads it) would oversubscribe the cores.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _load_annotator(factory)


def _load_annotator(factory: AnnotatorFactory) -> None:
    """Load the annotator of this process's workers (of a worker, or of the parent that forks them)."""
    _WORKER.clear()
    start = time.perf_counter()
    try:
        _WORKER["annotator"] = factory()
        settle_heap()
        _WORKER["load_seconds"] = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001
        # raised here, the worker would die and be replaced again and again: report it with the first batch
        what = str(exc) if isinstance(exc, ShareNerError) else f"cannot load the annotator: {type(exc).__name__}: {exc}"
        _WORKER["error"] = what


def _picklable(out: Any) -> Any:
    """A note's mentions, or its exception if it can travel back to the parent (else one that says what it was)."""
    if isinstance(out, BaseException):
        try:
            pickle.dumps(out)
        except Exception:  # noqa: BLE001 - whatever the exception holds
            return RuntimeError(failure_reason(out))
    return out


def _work(payload: tuple[list[Document], float | None, bool]) -> tuple[float, list[Any] | str]:
    """Annotate a batch in a worker (``(docs, seconds per note, raw)``): a :class:`NoteResult` per note, or with
    ``raw`` its mentions or exception (:func:`annotate_documents`); also how long the worker took to load its
    annotator."""
    if "error" in _WORKER:
        return 0.0, _WORKER["error"]
    docs, seconds, raw = payload
    annotator = _WORKER["annotator"]
    if raw:
        return _WORKER["load_seconds"], [_picklable(out) for out in annotate_documents(annotator, docs, seconds)]
    return _WORKER["load_seconds"], annotate_notes(annotator, docs, seconds)


# Workers dying this many times in a row without finishing a task: the annotator itself is at fault, not a note.
MAX_DEATHS_IN_A_ROW = 10


class _Task:
    """A batch on its way through the worker pool: its documents, and how often a worker died holding it."""

    def __init__(self, seq: int, docs: list[Document], part: int | None = None) -> None:
        self.seq = seq
        self.docs = docs
        self.part = part  # index of the single note, once the batch is split after two deaths
        self.deaths = 0


class BatchPool:
    """Batches of notes annotated by worker processes running :func:`_work`, their results given back in the
    order the batches were submitted.

    :class:`~share_ner.batch.workers.WorkerPool` reports a worker that dies (the OOM killer, a crash in a C
    extension) with the batch it held: that batch is tried once more whole, then note by note, so that only a
    note that kills its worker alone fails; its result is ``dead(doc, reason)``. Workers dying
    :data:`MAX_DEATHS_IN_A_ROW` times without finishing a batch, or a worker that cannot load its annotator,
    are one :class:`ShareNerError`.
    """

    def __init__(self, pool: WorkerPool, dead: Callable[[Document, str], Any], seconds: float | None = None,
                 raw: bool = False) -> None:
        self.pool = pool
        self.dead = dead
        self.seconds = seconds  # the time limit per note (annotate_notes)
        self.raw = raw
        self.load_seconds = 0.0  # the longest a worker took to load its annotator
        self._finished: dict[int, list[Any]] = {}
        self._parts: dict[int, list[Any]] = {}  # a split batch's results, note by note
        self._submitted = 0
        self._given = 0
        self._deaths_in_a_row = 0

    def submit(self, docs: Sequence[Document]) -> None:
        docs = list(docs)
        if docs:
            self._send(_Task(self._submitted, docs))
        else:
            self._finished[self._submitted] = []
        self._submitted += 1

    def _send(self, task: _Task) -> None:
        self.pool.submit(task, (task.docs, self.seconds, self.raw))

    def in_flight(self) -> int:
        """Batches submitted whose results were not given back yet."""
        return self._submitted - self._given

    def done(self) -> Iterator[list[Any]]:
        """The results of the next batches in order, as far as they are finished."""
        while self._given in self._finished:
            results = self._finished.pop(self._given)
            self._given += 1
            yield results

    def wait(self, timeout: float | None = 1.0) -> None:
        """Wait for workers to finish batches (or die) and take their results."""
        for event in self.pool.wait(timeout=timeout):
            task: _Task = event.task
            if isinstance(event, Death):
                self._deaths_in_a_row += 1
                if self._deaths_in_a_row >= MAX_DEATHS_IN_A_ROW:
                    raise ShareNerError(f"worker processes keep dying ({event.reason()}, {self._deaths_in_a_row} "
                                        "times in a row without finishing a batch); the model cannot run here")
                if task is None:
                    continue  # it died starting, holding no batch
                task.deaths += 1
                if task.part is not None or len(task.docs) == 1:
                    # the note alone killed its worker again: it is the note at fault
                    self._collect(task, [self.dead(task.docs[0], event.reason())])
                elif task.deaths == 1:
                    self._send(task)  # once more, whole
                else:
                    self._parts[task.seq] = [None] * len(task.docs)
                    for k, doc in enumerate(task.docs):
                        self._send(_Task(task.seq, [doc], part=k))
                continue
            self._deaths_in_a_row = 0
            load_seconds, results = event.result
            if isinstance(results, str):
                raise ShareNerError(results)
            self.load_seconds = max(self.load_seconds, load_seconds)
            self._collect(task, results)

    def _collect(self, task: _Task, results: list[Any]) -> None:
        if task.part is None:
            self._finished[task.seq] = results
            return
        got = self._parts[task.seq]
        got[task.part] = results[0]
        if all(r is not None for r in got):
            self._finished[task.seq] = got
            del self._parts[task.seq]

    def close(self, kill: bool = False) -> None:
        self.pool.close(kill=kill)
