"""``share-ner evaluate``: Task 1a/1b scores, significance tests and rankings.

The work is done by :mod:`share_ner.eval`; this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from share_ner.commands import at_least, read_note_inputs
from share_ner.errors import ShareNerError, some_of
from share_ner.eval import attributes as task2
from share_ner.eval.ranking import rank_systems
from share_ner.eval.report import format_by_doc, format_comparison, format_ranking, format_scores
from share_ner.eval.scoring import Scores, score
from share_ner.eval.significance import compare
from share_ner.eval.systems import find_systems, load_gold_and_systems


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="score predicted mentions against gold (Task 1a P/R/F1, Task 1b accuracy, Task 2a attributes)",
        description="Score predictions against gold annotations (pipe, BRAT .ann or JSON Lines; a folder "
        "or one file). Several --pred paths, or one folder of run folders, give a ranking.",
    )
    p.add_argument("--gold", required=True, metavar="G", help="gold annotations (folder or file)")
    p.add_argument("--pred", required=True, nargs="+", metavar="P",
                   help="predictions; several (or a folder of run folders) rank the systems")
    p.add_argument("--text", metavar="T", help="the notes: check every span ends within its note")
    p.add_argument("--vs", metavar="P2", help="second system: test each metric's difference for significance")
    p.add_argument("--shuffles", type=at_least(1), default=10_000, metavar="N",
                   help="approximate-randomization shuffles (default 10000)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed of the shuffles (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--by-note", "--by-doc", action="store_true", dest="by_doc", help="add per-note counts")
    p.add_argument("--allow-extra", action="store_true",
                   help="leave out predicted notes that have no gold annotations instead of stopping")
    p.set_defaults(func=run)


def _report_coverage(name: str, sc: Scores) -> None:
    if sc.missing:
        print(f"share-ner: note: {name}: {len(sc.missing)} gold note(s) have no predictions and count as "
              f"predicting nothing: {some_of(sc.missing, 10)}", file=sys.stderr)
    if sc.extra:
        print(f"share-ner: note: {name}: {len(sc.extra)} predicted note(s) without gold were left out: "
              f"{some_of(sc.extra, 10)}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    systems = find_systems(args.pred)
    if len(systems) > 1 and (args.vs or args.by_doc):
        raise ShareNerError("--vs and --by-note need exactly one --pred (several systems are ranked)")
    if args.vs:
        if args.vs in args.pred:
            raise ShareNerError(f"--vs {args.vs} is also the --pred system")
        systems[f"{args.vs} (--vs)"] = Path(args.vs)
    notes = read_note_inputs(args.text) if args.text else None
    gold, preds = load_gold_and_systems(args.gold, systems, notes)

    if len(systems) > 1 and not args.vs:
        ranked = rank_systems(gold, preds, n_shuffles=args.shuffles, seed=args.seed, allow_extra=args.allow_extra)
        for r in ranked:
            _report_coverage(r.name, r.scores)
        if args.json:
            print(json.dumps({"systems": [r.to_dict() for r in ranked], "shuffles": args.shuffles,
                              "seed": args.seed}, indent=2))
        else:
            print(format_ranking(ranked, args.shuffles))
        return 0

    (name, pred), *rest = preds.items()
    sc = score(gold, pred, allow_extra=args.allow_extra)
    _report_coverage(name, sc)
    out: dict[str, Any] = sc.to_dict(by_doc=args.by_doc)
    text = [format_scores(sc, title=f"{name} against {args.gold}")]
    attributes = task2.has_attributes(gold)  # gold with ShARe/CLEF 2014 attributes (share2014, BRAT A lines)
    if attributes:
        attr_scores = task2.score_attributes(gold, pred)
        out["attributes"] = attr_scores.to_dict()
        text += ["", task2.format_attribute_scores(attr_scores)]
    if args.by_doc:
        text += ["", format_by_doc(sc)]
    if rest:
        name_b, pred_b = rest[0]
        _report_coverage(name_b, score(gold, pred_b, allow_extra=args.allow_extra))
        comparisons = compare(gold, pred, pred_b, n_shuffles=args.shuffles, seed=args.seed,
                              allow_extra=args.allow_extra)
        if attributes:
            comparisons.update(task2.compare_attributes(gold, pred, pred_b, n_shuffles=args.shuffles,
                                                        seed=args.seed))
        out["significance"] = {m: c.to_dict() for m, c in comparisons.items()}
        text += ["", format_comparison(comparisons, name, args.vs, args.shuffles)]
    print(json.dumps(out, indent=2) if args.json else "\n".join(text))
    return 0
