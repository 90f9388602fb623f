"""``share-ner normalize``: re-assign the CUI of given mentions (Task 1b on gold spans)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from share_ner.errors import ShareNerError

if TYPE_CHECKING:
    from share_ner.document import Document, Mention


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "normalize", help="assign CUIs to given mentions (Task 1b)",
        description="Re-assign the CUI of every mention in --mentions (ShARe pipe files) using a trained model's "
                    "normalizer (--model) or a lexicon (--lexicon FILE, or 'hpo' for the embedded HPO lexicon), "
                    "and write pipe files into --out.")
    parser.add_argument("text", metavar="TEXT", help="note text file or folder")
    parser.add_argument("--mentions", required=True, metavar="MENTIONS", help="mentions: a ShARe pipe file, or a folder of pipe, "
                        "BRAT .ann or JSON Lines files; every span must end within its note")
    parser.add_argument("--out", required=True, metavar="FOLDER",
                        help="output folder for the normalized pipe files (created if missing)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace files of the output folder that an earlier run of this command did not write "
                             "(gold files, other outputs)")
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", metavar="M", help="model folder (its normalizer/ sub-folder), or a normalizer "
                     "folder")
    src.add_argument("--lexicon", metavar="L", help="lexicon TSV file, 'hpo', or 'none' (with --train-gold: the "
                     "training gazetteer alone)")
    parser.add_argument("--train-text", metavar="T", action="append",
                        help="with --lexicon: notes of training annotations (repeat it with --train-gold to fit on "
                             "several splits, e.g. train and dev)")
    parser.add_argument("--train-gold", metavar="G", action="append",
                        help="with --lexicon: training annotations of the --train-text given in the same place "
                             "(gazetteer and CUI-less threshold are fitted on them)")
    parser.add_argument("--dense", action="store_true",
                        help="with --lexicon: also compare sentence embeddings in the tf-idf step (needs "
                             "pip install 'share-ner[dense]'; a --model keeps the setting it was fitted with)")
    parser.add_argument("--abbreviations", metavar="FILE",
                        help="the site's own abbreviation list (TSV with the columns abbreviation, expansion), tried "
                             "before the packaged clinical list; with --model it replaces the model's own list")
    parser.add_argument("--explain", action="store_true",
                        help="print one JSON line per mention to stdout: step, score, candidates")
    parser.add_argument("--encoding", default="utf-8", help="encoding of the notes (default utf-8)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from share_ner.batch.lock import output_lock
    from share_ner.batch.processes import settle_heap
    from share_ner.commands import claim_output_folder, read_note_inputs
    from share_ner.commands.train import load_lexicon_arg
    from share_ner.formats import read_annotations
    from share_ner.formats.share import gold_file_name, write_pipe
    from share_ner.lexicons.abbreviations import load_abbreviations
    from share_ner.linking.config import NormalizerConfig
    from share_ner.linking.normalizer import Normalizer, group_counts
    from share_ner.model import FILES, read_model_info

    if len(args.train_text or ()) != len(args.train_gold or ()):
        raise ShareNerError("--train-text and --train-gold go together, as many of one as of the other")
    if args.lexicon == "none" and not args.train_gold:
        raise ShareNerError("--lexicon none needs --train-text and --train-gold: the training gazetteer is then "
                            "the only source of CUIs")
    if args.model and args.train_gold:
        raise ShareNerError("--train-text/--train-gold fit a normalizer with --lexicon; --model already has one")
    if args.model and args.dense:
        raise ShareNerError("--dense goes with --lexicon; a --model keeps the setting it was fitted with")
    site = load_abbreviations(args.abbreviations) if args.abbreviations else None  # file and line of a bad row
    if args.model:
        model = Path(args.model)
        if (model / FILES.config).is_file():
            read_model_info(model)  # a model folder: every file checked against its manifest first
        normalizer = Normalizer.load(model / FILES.normalizer if (model / FILES.normalizer).is_dir() else model)
        if site is not None:
            normalizer.use_site_abbreviations(site)
    else:
        lexicon = load_lexicon_arg(args.lexicon)
        config = NormalizerConfig(dense=args.dense)
        if args.train_gold:
            train_docs, train_gold = _training_notes(args.train_text, args.train_gold, args.encoding)
            normalizer = Normalizer.fit(lexicon, train_docs, train_gold, config, site)
        else:
            normalizer = Normalizer(lexicon, config=config, abbreviations=site)
    docs = read_note_inputs(args.text, args.encoding)
    mentions = read_annotations(args.mentions, docs)  # every span checked to end within its note (file, line)
    out = Path(args.out)
    settle_heap()  # the index and the notes stay to the end: the collector need not walk them again
    decisions = []
    ids = sorted(mentions)
    for doc_id in ids:
        if doc_id not in docs:
            raise ShareNerError(f"{args.mentions}: mentions for note {doc_id} but {args.text} has no {doc_id}.txt")
    with output_lock(out, "share-ner normalize"):  # no other run writes into it meanwhile
        claim_output_folder(out, "share-ner normalize", (out / gold_file_name(d) for d in ids), args.overwrite)
        for start in range(0, len(ids), 256):  # one tf-idf product for many notes
            chunk = ids[start:start + 256]
            for doc_id, decided in zip(chunk, normalizer.decide_many([(docs[d], mentions[d]) for d in chunk])):
                doc, ms = docs[doc_id], mentions[doc_id]
                decisions.extend(decided)
                write_pipe(out / gold_file_name(doc_id), [m.with_cui(d.cui) for m, d in zip(ms, decided)])
                if args.explain:
                    for m in ms:
                        print(json.dumps(normalizer.explain(doc, m), ensure_ascii=False))
    counts = ", ".join(f"{k} {v}" for k, v in sorted(group_counts(decisions).items()))
    print(f"normalized {len(decisions)} mentions of {len(mentions)} notes into {out} ({counts or 'none'})",
          file=sys.stderr)
    return 0



def _training_notes(texts: list[str], golds: list[str],
                    encoding: str) -> tuple[dict[str, Document], dict[str, list[Mention]]]:
    """The notes of every ``--train-text`` (a note id in two of them is an error naming both files) and the
    annotations of every ``--train-gold``, merged."""
    from share_ner.commands import read_note_inputs
    from share_ner.formats import read_annotations

    docs = read_note_inputs(texts, encoding)
    gold: dict[str, list[Mention]] = {}
    for pipes in golds:
        gold.update(read_annotations(pipes, docs))
    return docs, gold
