"""CLI subcommands, one module each, with ``register(subparsers)``."""

from __future__ import annotations

import argparse
from typing import Callable


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for integers of at least ``minimum``."""

    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{n} is not at least {minimum}")
        return n

    return parse
