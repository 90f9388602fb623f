"""What a batch run shows and hears: its progress bar on stderr, and SIGTERM taken as Ctrl-C."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import threading
from typing import Any, Iterator, TextIO


def progress_bar(total: int | None, stream: TextIO) -> Any:
    """A tqdm bar of notes on ``stream``, as wide as the terminal (100 columns when it reports none)."""
    from tqdm import tqdm  # only runs that show progress pay for the import

    return tqdm(total=total, unit="note", file=stream, ncols=_bar_width(stream), smoothing=0.1)


def _bar_width(stream: TextIO) -> int:
    # some terminals (pseudo-terminals of job runners) report 0 columns, and tqdm would then draw nothing
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        columns = 0
    return columns if columns > 20 else 100


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises ``KeyboardInterrupt`` (in the main thread; elsewhere signals cannot be set)."""
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt) if in_main else None
    try:
        yield
    finally:
        if in_main:
            signal.signal(signal.SIGTERM, previous)
