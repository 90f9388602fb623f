"""``share-ner clusters build NOTES --out FILE``: learn word clusters from unannotated notes."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from share_ner.commands import OVERWRITE_HELP, prepare_output_file, starts_with
from share_ner.errors import ShareNerError


def _cluster_sizes(value: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers joined by commas (e.g. 64,256,1024), got {value!r}") from None
    if any(k < 2 for k in sizes):
        raise argparse.ArgumentTypeError(f"each number of clusters must be at least 2, got {value!r}")
    return sizes


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "clusters",
        help="word clusters learned from unannotated notes (a tagger feature)",
        description="Word clusters for the tagger's cluster features, learned without labels from your own notes.",
    )
    sub = p.add_subparsers(dest="clusters_command", metavar="ACTION")
    b = sub.add_parser(
        "build",
        help="build a cluster file from a folder of notes",
        description="Cluster the words of NOTES by their ±2-token contexts (PPMI, truncated SVD, mini-batch "
        "k-means at several granularities) and write `word<TAB>cluster_ids` lines to --out, "
        "for `share-ner train --clusters`.",
    )
    b.add_argument("notes", type=Path, metavar="NOTES", help="unannotated notes: a folder of .txt files (searched recursively) or one file")
    b.add_argument("--out", required=True, type=Path, metavar="FILE",
                   help="the cluster file to write (TSV; its folder is created if missing)")
    b.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP + " (a cluster file is replaced anyway)")
    b.add_argument("--n-clusters", type=_cluster_sizes, default=(64, 256, 1024), metavar="K[,K...]",
                   help="numbers of clusters, one granularity each (default 64,256,1024)")
    b.add_argument("--min-count", type=int, default=5, help="cluster only words seen at least this often (default 5)")
    b.add_argument("--seed", type=int, default=0, help="random seed of SVD and k-means (default 0)")
    b.add_argument("--encoding", default="utf-8", help="encoding of the notes (default utf-8)")
    b.set_defaults(func=run_build)
    p.set_defaults(func=lambda args: p.print_help(sys.stderr) or 2)


def run_build(args: argparse.Namespace) -> int:
    from share_ner.features.clusters import build_clusters_file

    if args.min_count < 1:
        raise ShareNerError(f"--min-count must be at least 1, got {args.min_count}")
    prepare_output_file(args.out, args.overwrite, starts_with("word\tcluster_ids"), "a cluster file")
    started = time.perf_counter()
    report, skipped = build_clusters_file(args.notes, args.out, args.n_clusters, args.min_count, args.seed, args.encoding)
    for line in skipped:
        print(f"share-ner clusters: skipped {line}", file=sys.stderr)
    print(
        f"{args.out}: {report.words} words clustered into {','.join(map(str, report.n_clusters))} clusters "
        f"from {report.notes} notes, {report.tokens} tokens ({len(skipped)} notes skipped, "
        f"{time.perf_counter() - started:.1f} s: "
        + ", ".join(f"{phase} {secs:.1f} s" for phase, secs in report.seconds.items())
        + ")"
    )
    return 0
