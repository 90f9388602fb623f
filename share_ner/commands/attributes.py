"""``share-ner attributes``: fill the ShARe/CLEF 2014 attributes of given mentions (Task 2a on gold spans)."""

from __future__ import annotations

import argparse
import sys

from share_ner.errors import ShareNerError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "attributes", help="fill the ShARe/CLEF 2014 attributes of given mentions (Task 2a)",
        description="Give every mention in --mentions its negation, uncertainty, subject, conditional, generic, "
                    "course, severity, DocTime and body location by the ConText rules (docs/attributes.md), and write one file "
                    "per note into --out. Spans and CUIs are kept as given.")
    parser.add_argument("text", metavar="TEXT", help="note text file or folder")
    parser.add_argument("--mentions", required=True, metavar="PIPE",
                        help="mentions: a pipe file, or a folder of pipe (2013 or 2014), BRAT .ann or JSON Lines "
                             "files; every span must end within its note")
    parser.add_argument("--out", required=True, metavar="FOLDER", help="output folder (created if missing)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace files of the output folder that an earlier run of this command did not write "
                             "(gold files, other outputs)")
    parser.add_argument("--format", choices=("jsonl", "share2014"), default="share2014", dest="fmt",
                        help="output format (default share2014: <note>.pipe.txt in the 2014 Task 2 layout)")
    parser.add_argument("--context-rules", metavar="FILE",
                        help="the site's own ConText rules (TSV), adding to or replacing the packaged ones")
    parser.add_argument("--anatomy", metavar="FILE",
                        help="the site's anatomy lexicon for body locations (lexicon TSV, e.g. from 'share-ner "
                             "lexicon build --umls META --anatomy'), instead of the packaged common body sites")
    parser.add_argument("--model", metavar="M",
                        help="the model whose terms name disorders, so that a \"non-\" beginning one (\"non-Hodgkin "
                             "lymphoma\") is no negation (default: the built-in default model)")
    parser.add_argument("--encoding", default="utf-8", help="encoding of the notes (default utf-8)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from share_ner.attributes import ContextMatcher
    from share_ner.batch.lock import output_lock
    from share_ner.batch.sinks import per_note_file_name
    from share_ner.commands import claim_output_folder, read_note_inputs
    from share_ner.commands.tag import model_dir
    from share_ner.formats import read_annotations, write_annotations
    from share_ner.pipeline import model_names

    # a bad rules or anatomy line: one error naming the file and line
    context = ContextMatcher.load(args.context_rules, args.anatomy, model_names(model_dir(args.model)))
    docs = read_note_inputs(args.text, args.encoding)
    mentions = read_annotations(args.mentions, docs)  # every span checked to end within its note (file, line)
    for doc_id in sorted(mentions):
        if doc_id not in docs:
            raise ShareNerError(f"{args.mentions}: mentions for note {doc_id} but {args.text} has no {doc_id}.txt")
    out = Path(args.out)
    n = marked = 0
    with output_lock(out, "share-ner attributes"):  # no other run writes into it meanwhile
        claim_output_folder(out, "share-ner attributes",
                            (out / per_note_file_name(d, args.fmt) for d in mentions), args.overwrite)
        for doc_id in sorted(mentions):
            filled = context.assign(docs[doc_id], mentions[doc_id])
            write_annotations(out, docs[doc_id], filled, args.fmt)
            n += len(filled)
            marked += sum(1 for m in filled if m.attributes is not None and m.attributes.non_default())
    print(f"filled the attributes of {n} mentions of {len(mentions)} notes into {out} "
          f"({marked} with a value other than the default)", file=sys.stderr)
    return 0
