"""``share-ner ceiling``: how many gold mentions survive tokenize → encode → decode.

The work is done by :func:`share_ner.tagging.scheme.round_trip_ceiling`; this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import json

from share_ner.commands import read_note_inputs
from share_ner.formats import read_annotations
from share_ner.tagging.scheme import PAIRINGS, SCHEMES, round_trip_ceiling


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "ceiling",
        help="round-trip ceiling of the tag encoding on gold annotations",
        description="Split the notes into sentences, encode the gold mentions as tags and decode them "
        "again; report the share of mentions (and of discontiguous ones) given back exactly.",
    )
    p.add_argument("--text", required=True, metavar="T", help="the notes (folder or .txt file)")
    p.add_argument("--gold", required=True, metavar="G", help="gold annotations (pipe, BRAT or JSONL)")
    p.add_argument("--scheme", choices=sorted(SCHEMES), default="biohd",
                   help="biohd = B/I/O/DB/DI/HB/HI (default); bio = discontiguous mentions as their hull")
    p.add_argument("--pairing", choices=PAIRINGS, default="learned",
                   help="learned = fragment tags, a mention survives when it is a union of fragments (what a perfect "
                   "pairing step gives back; default); rules = the tags the decoding rules read back")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run)


def format_table(result: dict) -> str:
    lost = result["lost"]
    rows = [
        ("scheme", result["scheme"]),
        ("pairing", result["pairing"]),
        ("notes", result["notes"]),
        ("sentences", result["sentences"]),
        ("tokens", result["tokens"]),
        ("mentions", f"{result['survived']} / {result['mentions']} survive ({100 * result['ceiling']:.2f}%)"),
        ("discontiguous", f"{result['discontiguous_survived']} / {result['discontiguous']} survive "
                          f"({100 * result['discontiguous_ceiling']:.2f}%)"),
        ("lost: boundary inside a token", lost["inexact"]),
        ("lost: boundary on whitespace", lost["whitespace"]),
        ("lost: crosses a sentence boundary", lost["crossing"]),
        ("lost: overlap the tags cannot hold", lost["dropped"]),
        ("lost: decoded differently", lost["misdecoded"]),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def run(args: argparse.Namespace) -> int:
    docs = read_note_inputs(args.text)
    gold = read_annotations(args.gold, docs)  # checks every span ends within its note
    result = round_trip_ceiling(docs, gold, args.scheme, args.pairing)
    if args.json:
        print(json.dumps(result, indent=2, sort_keys=True))
    else:
        print(format_table(result))
    return 0
