"""``share-ner report``: one self-contained HTML file of scores and error analysis.

The work is done by :mod:`share_ner.eval.errors` and :mod:`share_ner.eval.html_report`; this module parses
arguments, reads the files and writes the page.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from share_ner.commands import OVERWRITE_HELP, at_least, prepare_output_file, read_note_inputs, starts_with
from share_ner.errors import ShareNerError
from share_ner.eval.html_report import PHI_NOTICE, groups_by_folder, groups_by_pattern, report_data, write_report
from share_ner.eval.systems import find_systems, load_gold_and_systems


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="an HTML error-analysis report (holds note text: PHI)",
        description="Write one self-contained HTML file: scores (with --vs, two systems side by side with "
        "approximate-randomization p-values), F1 by note folder, errors by kind (false positives and negatives, "
        "boundary errors, discontiguous mistakes, CUI errors, the most frequent wrong strings) and every note "
        "with its gold and predicted mentions highlighted. PHI: " + PHI_NOTICE,
    )
    p.add_argument("--gold", required=True, metavar="G", help="gold annotations (folder or file)")
    p.add_argument("--pred", required=True, metavar="P", help="predictions (folder or file)")
    p.add_argument("--vs", metavar="P2", help="a second system, shown beside the first, each metric tested")
    p.add_argument("--text", metavar="T",
                   help="the notes (folder or .txt file): their text goes into the report, highlighted; "
                   "without it the report lists offsets only")
    p.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write (its folder is created if "
                   "missing)")
    p.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP + " (an HTML page is replaced anyway)")
    p.add_argument("--group", metavar="REGEX",
                   help="note groups of the F1 chart from the note id: the regex's first group (e.g. '_(inc|exc)$'); "
                   "default: the folder of each note's gold file under G")
    p.add_argument("--title", default="share-ner error analysis", help="the page title")
    p.add_argument("--top", type=at_least(1), default=20, metavar="N",
                   help="most frequent wrong strings shown per error kind (default 20)")
    p.add_argument("--shuffles", type=at_least(1), default=10_000, metavar="N",
                   help="approximate-randomization shuffles with --vs (default 10000)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed of the shuffles (default 0)")
    p.add_argument("--allow-extra", action="store_true",
                   help="leave out predicted notes that have no gold annotations instead of stopping")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    prepare_output_file(args.out, args.overwrite, starts_with("<!doctype html"), "an HTML page")
    paths = [args.pred] + ([args.vs] if args.vs else [])
    if args.vs and args.vs == args.pred:
        raise ShareNerError(f"--vs {args.vs} is also the --pred system")
    # two paths are always two systems (one folder alone could be read as a folder of runs)
    systems = find_systems(paths) if args.vs else {Path(args.pred).name or args.pred: Path(args.pred)}
    notes = read_note_inputs(args.text) if args.text else None
    gold, preds = load_gold_and_systems(args.gold, systems, notes)
    groups = groups_by_pattern(sorted(gold), args.group) if args.group else groups_by_folder(args.gold)
    texts = {d: doc.text for d, doc in notes.items()} if notes is not None else None
    data = report_data(gold, preds, texts, groups, n_shuffles=args.shuffles, seed=args.seed,
                       allow_extra=args.allow_extra, top_strings=args.top, title=args.title)
    size = write_report(args.out, data)
    kinds = data["systems"][0]["kinds"]
    print(f"share-ner: wrote {args.out} ({size:,} bytes, {len(data['notes'])} notes, "
          f"{sum(kinds.values())} errors of {data['systems'][0]['name']}); it holds note text (PHI)"
          if notes is not None else
          f"share-ner: wrote {args.out} ({size:,} bytes, {len(data['notes'])} notes, no note text)", file=sys.stderr)
    return 0
