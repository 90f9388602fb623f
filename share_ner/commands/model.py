"""``share-ner model check FOLDER`` and ``share-ner model seal FOLDER``: verify a model folder, or write the manifest
of a model saved before share-ner checked model files (:func:`share_ner.model.seal_model`)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("model", help="check a model folder, or write its files' manifest",
                                   description="Check a model folder as loading it does, or seal one.")
    sub = parser.add_subparsers(dest="model_command", metavar="ACTION")
    check = sub.add_parser("check", help="load the model, checking every file against its manifest",
                           description="Load the model as 'share-ner tag' does: every file checked against the "
                                       "manifest in its config.json, the CRFsuite file's structure, the settings' "
                                       "types. Prints one line; exit 2 and the bad file when it fails.")
    check.add_argument("model", metavar="FOLDER", help="model folder")
    check.set_defaults(func=run_check)
    seal = sub.add_parser("seal", help="write the size and SHA-256 of every file of a model into its config.json",
                          description="For a model saved before share-ner checked model files: take its files as "
                                      "they are now (make sure they are the ones trained), write their sizes and "
                                      "SHA-256 in its config.json, and load it once.")
    seal.add_argument("model", metavar="FOLDER", help="model folder")
    seal.add_argument("--force", action="store_true",
                      help="seal a model that has a manifest already, whose files were changed on purpose")
    seal.set_defaults(func=run_seal)
    parser.set_defaults(func=lambda args: (parser.print_help(sys.stderr), 2)[1])


def run_check(args: argparse.Namespace) -> int:
    from share_ner.model import MANIFEST_KEY
    from share_ner.pipeline import Pipeline

    pipeline = Pipeline.load(args.model)
    print(f"{args.model}: the model loads; its {len(pipeline.info.data[MANIFEST_KEY])} files match their manifest",
          file=sys.stderr)
    return 0


def run_seal(args: argparse.Namespace) -> int:
    from share_ner.model import seal_model
    from share_ner.pipeline import Pipeline

    n = seal_model(args.model, Pipeline.load, force=args.force)
    print(f"{args.model}: sealed; its {n} files are listed in its config.json, and the model loads", file=sys.stderr)
    return 0
