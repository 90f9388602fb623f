"""The time limit per note: a runaway note (a site's placeholder regex that backtracks, a rule whose cost explodes
on one long sentence) is stopped and rejected, and the run goes on.

A note may take :data:`DEFAULT_NOTE_SECONDS` of wall time per million characters, or part of a million
(:func:`note_seconds`; ``share-ner tag --note-timeout``). The limit is a SIGALRM whose handler raises
:class:`NoteTimeout` into the annotation wherever it is (Python's regex engine checks for signals too), so it
holds in a process's main thread: the command line, its worker processes, Spark's Python workers. Elsewhere (a
caller's own thread) notes run unbounded.
"""

from __future__ import annotations

import math
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

# Seconds a note may take per million characters (or part of a million) before it is stopped and rejected: far
# above what a note of that size takes (benchmarks/results/fuzz.md), so that only a runaway note meets it.
DEFAULT_NOTE_SECONDS = 300.0


PER_CHARACTERS = 1_000_000


class NoteTimeout(BaseException):
    """Raised into a note's annotation when its time is up. A ``BaseException``, as ``KeyboardInterrupt`` is, so
    that the annotator's own ``except Exception`` (which keeps a failure to its note) lets it through."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds

    def reason(self) -> str:
        return f"stopped after {self.seconds:g} s (the time limit per note)"


def note_seconds(limit: float | None, characters: int) -> float | None:
    """The time allowed for ``characters`` of notes under ``limit`` seconds per million characters (or part of a
    million); None (no limit) for a ``limit`` of None or 0."""
    if not limit or limit <= 0:
        return None
    return limit * max(1, math.ceil(characters / PER_CHARACTERS))


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`NoteTimeout` into the block after ``seconds`` of wall time. Only in a process's main thread
    (where Python runs signal handlers) and where ``setitimer`` exists; elsewhere, or with ``None``, the block runs
    unbounded. An alarm the caller had set is set again afterwards."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    armed = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if armed[0]:
            armed[0] = False
            raise NoteTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    caller = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if caller[0]:
            signal.setitimer(signal.ITIMER_REAL, *caller)
