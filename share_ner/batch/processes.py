"""What runs in a worker process: the annotator it loads once (:func:`_load_annotator`), the batches it
annotates (:func:`_work`), and child-process helpers (:func:`in_child`, :func:`settle_heap`).
"""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any, Callable

from share_ner.batch.annotate import AnnotatorFactory, NoteResult, annotate_notes
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
    """
    gc.freeze()


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


def _work(docs: list[Document]) -> tuple[float, list[NoteResult] | str]:
    """Annotate a batch in a worker; also return how long the worker took to load its annotator."""
    if "error" in _WORKER:
        return 0.0, _WORKER["error"]
    annotator = _WORKER["annotator"]
    return _WORKER["load_seconds"], annotate_notes(annotator, docs)
