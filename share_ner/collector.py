"""The garbage collector's setting in share-ner's own processes: the command line and the batch workers."""

from __future__ import annotations

import gc

# Allocations between collections of the young generation (the time the collector takes at each threshold:
# benchmarks/bench_gc.py).
YOUNG_THRESHOLD = 50_000


def collect_less() -> None:
    """Raise the young generation's collection threshold to :data:`YOUNG_THRESHOLD` allocations (never lower it).

    Imports, model loading and every note make many short-lived containers (tokens, tuples, lists) and little
    cyclic garbage. At Python's default threshold (700, or 2,000 from 3.13) the young generation is collected
    thousands of times a run, each time walking the objects still alive, and those collections trigger the older
    ones. Collected less often, they are walked less often; memory stays where it was. Only for processes
    share-ner owns: a library call leaves its caller's collector alone.
    """
    young, *older = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
