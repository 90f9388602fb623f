"""``share-ner evaluate``: score predictions against gold annotations (placeholder while the scorer lands)."""

from __future__ import annotations

import argparse

from share_ner.errors import ShareNerError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("evaluate", help="score predicted mentions against gold (Task 1a/1b)")
    p.add_argument("--gold", required=True)
    p.add_argument("--pred", required=True, nargs="+")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raise ShareNerError("evaluate is not implemented yet")
