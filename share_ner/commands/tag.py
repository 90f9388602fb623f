"""``share-ner tag``: tag note files, folders and MIMIC note exports with a trained model.

The work is done by :func:`share_ner.batch.runner.run_batch`; this module parses arguments.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from share_ner.batch.sinks import DEFAULT_SHARD_SIZE
from share_ner.batch.timeout import DEFAULT_NOTE_SECONDS
from share_ner.commands import at_least
from share_ner.errors import ShareNerError
from share_ner.formats import OUTPUT_FORMATS
from share_ner.inputs.files import STDIN, STDIN_FORMATS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tag",
        help="find and normalize disorder mentions in notes (files, folders, MIMIC CSV exports)",
        description="Tag notes with a trained model. INPUT is a note file, a folder of notes (searched "
        "recursively for *.txt in any case; other files are named in one warning), a MIMIC-III "
        "NOTEEVENTS.csv[.gz] / MIMIC-IV-Note discharge.csv.gz or radiology.csv.gz export (recognised by its "
        "header), or - for the standard input: by default the whole input is one note, id 'stdin' "
        "(cat note.txt | share-ner tag -); with --stdin-format jsonl, one JSON object a line, "
        '{"id": "...", "text": "..."}. Rerunning the same '
        "command after an interruption resumes where it stopped. A summary for people (notes, mentions, the most "
        "frequent concepts, the share negated, rejects) goes to stderr; stdout holds only JSON Lines.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="note file, folder of notes, MIMIC CSV export, or - (the standard input)")
    p.add_argument("--model", metavar="M", help="model folder (default: the built-in default model)")
    p.add_argument("--out", metavar="FOLDER",
                   help="output folder (created if missing); without it, JSON Lines go to stdout")
    p.add_argument("--overwrite", action="store_true",
                   help="tag every note again, replacing the results an earlier run left in the output folder "
                        "(without it, a rerun resumes an earlier run with the same settings and refuses one with "
                        "other settings)")
    p.add_argument("--format", choices=OUTPUT_FORMATS, dest="fmt",
                   help="output format (default: share pipe files for notes, JSON Lines shards for CSV exports; "
                        "brat: <note>.ann beside a copy of <note>.txt, with the annotation.conf and visual.conf that "
                        "make the output folder a collection brat opens; parquet: CSV exports, one mentions table per "
                        "shard, needs pyarrow)")
    p.add_argument("--jobs", type=at_least(1), default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--category", action="append", default=[], metavar="C",
                   help="CSV exports: keep only notes of this CATEGORY / note_type (repeatable)")
    p.add_argument("--limit", type=at_least(0), metavar="N", help="tag at most the first N selected notes")
    p.add_argument("--include-errors", action="store_true",
                   help="MIMIC-III: keep rows flagged ISERROR=1 (skipped by default)")
    p.add_argument("--stdin-format", choices=STDIN_FORMATS, default="text",
                   help="how INPUT - is read: text (default: the whole standard input is one note, id 'stdin') or "
                        'jsonl (one {"id": ..., "text": ...} object a line)')
    p.add_argument("--encoding", default="utf-8", metavar="E", help="text encoding of the inputs (default utf-8)")
    p.add_argument("--shard-size", type=at_least(1), default=DEFAULT_SHARD_SIZE, metavar="N",
                   help=f"CSV exports: notes per output shard (default {DEFAULT_SHARD_SIZE})")
    p.add_argument("--rejects", metavar="FILE",
                   help="rejects file (default FOLDER/rejects.tsv; without --out, rejects are printed to stderr)")
    p.add_argument("--abbreviations", metavar="FILE",
                   help="the site's own abbreviation list (TSV with the columns abbreviation, expansion), tried by "
                        "the normalizer before the packaged clinical list, instead of the model's own list")
    p.add_argument("--no-attributes", action="store_true",
                   help="do not fill the ShARe/CLEF 2014 attributes (negation, subject, DocTime ...)")
    p.add_argument("--context-rules", metavar="FILE",
                   help="the site's own ConText rules (TSV, docs/attributes.md), adding to or replacing the "
                        "packaged ones")
    p.add_argument("--anatomy", metavar="FILE",
                   help="the site's anatomy lexicon for body locations (lexicon TSV, e.g. from 'share-ner lexicon "
                        "build --umls META --anatomy'), instead of the packaged list of common body sites")
    p.add_argument("--show-text", action="store_true",
                   help="let rejects and errors quote the first characters of a bad note or row (they carry PHI; by "
                        "default they name note ids, rows and byte offsets only)")
    p.add_argument("--placeholders", action="append", default=[], metavar="FILE",
                   help="the site's own de-identification placeholder patterns (TSV name<TAB>regex), each match one "
                        "token, added to the packaged ones (repeatable)")
    p.add_argument("--note-timeout", type=float, default=DEFAULT_NOTE_SECONDS, metavar="SECONDS",
                   help=f"stop a note that takes longer than this per million characters (or part of a million) and "
                        f"list it in the rejects file (default {DEFAULT_NOTE_SECONDS:g}; 0: no limit)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary line")
    p.set_defaults(func=run)


def model_dir(arg: str | None) -> Path:
    """The model folder ``--model`` names, or the built-in default model's."""
    if arg:
        path = Path(arg)
        if not path.is_dir():
            raise ShareNerError(f"{path}: no such model folder")
        return path.resolve()
    from share_ner.default_model.build import default_model_dir

    return Path(default_model_dir()).resolve()


def _uses_dense(model: Path) -> bool:
    from share_ner.linking.store import saved_dense
    from share_ner.model import FILES

    return saved_dense(model / FILES.normalizer)


def _prepare_caches(model: Path, quiet: bool) -> None:
    """For ``--jobs N`` workers that each load the model themselves: compile its lexicon index (and, under
    ``dense``, embed its names) once into the on-disk cache when they are not there yet: a new lexicon, or one
    compiled by an older share-ner. Otherwise every worker builds the same at once: with a SNOMED CT-sized
    lexicon, about 10 CPU s and 750 MB each for the index, 10 CPU minutes and 2.8 GB each for the names."""
    from share_ner.batch.processes import in_child
    from share_ner.linking.store import caches_ready, prepare_caches
    from share_ner.model import FILES

    normalizer = model / FILES.normalizer
    if not normalizer.is_dir() or caches_ready(normalizer):
        return
    if not quiet:
        print("share-ner: compiling the model's lexicon index once, before the workers start (cached for later "
              "runs)", file=sys.stderr)
    in_child(prepare_caches, normalizer)


def run(args: argparse.Namespace) -> int:
    from share_ner.batch.annotate import load_annotator
    from share_ner.batch.runner import BatchOptions, run_batch

    for path in (Path(p) for p in args.inputs if p != STDIN):
        if not path.exists():  # before the default model is built or loaded
            raise ShareNerError(f"{path}: no such file or directory")
    if not args.note_timeout >= 0:
        raise ShareNerError(f"--note-timeout must be 0 (no limit) or more seconds, got {args.note_timeout:g}")
    if args.placeholders:
        from share_ner.placeholders import use_site_placeholders

        use_site_placeholders(args.placeholders)  # a bad regex is one line naming the file and line
    model = model_dir(args.model)
    factory = functools.partial(load_annotator, model)
    from share_ner.model import model_identity

    identity = model_identity(model)  # recorded in run.json: a resumed run must use the same model and lists
    if args.placeholders:
        from share_ner.lexicons.lexicon import hash_bytes

        identity += " with placeholders " + ",".join(hash_bytes(Path(f).read_bytes())[:16] for f in args.placeholders)
    if args.abbreviations:
        import json

        from share_ner.lexicons.abbreviations import load_abbreviations
        from share_ner.lexicons.lexicon import hash_bytes
        from share_ner.model import FILES

        site = load_abbreviations(args.abbreviations)  # a bad row is one line naming the file and line
        if not (model / FILES.normalizer).is_dir():
            raise ShareNerError(f"{model}: this model has no normalizer; --abbreviations is for normalization")
        factory = functools.partial(load_annotator, model, site)
        identity += f" with abbreviations {hash_bytes(json.dumps(site).encode('utf-8'))[:16]}"
    if args.no_attributes or args.context_rules or args.anatomy:
        if args.no_attributes and (args.context_rules or args.anatomy):
            raise ShareNerError("--context-rules and --anatomy fill attributes; they cannot go with --no-attributes")
        if args.anatomy:
            from share_ner.lexicons.lexicon import hash_bytes
            from share_ner.lexicons.loader import load_lexicon

            load_lexicon(args.anatomy).entries  # a bad line is one error naming the file and line, before any work
            identity += f" with anatomy {hash_bytes(Path(args.anatomy).read_bytes())[:16]}"
        if args.context_rules:
            from share_ner.attributes import load_rules
            from share_ner.lexicons.lexicon import hash_bytes

            load_rules(args.context_rules)  # a bad line is one error naming the file and line, before any work
            identity += f" with context rules {hash_bytes(Path(args.context_rules).read_bytes())[:16]}"
        elif not args.anatomy:
            identity += " without attributes"
        factory = functools.partial(factory, attributes=not args.no_attributes, context_rules=args.context_rules,
                                    anatomy=args.anatomy)
    # On Linux, workers are forked from this process once it has loaded the model, sharing its memory, unless the
    # model uses the optional dense normalizer: PyTorch's thread pool is not safe to fork. Workers that load
    # their own model do so from caches built once here beforehand.
    preload = not _uses_dense(model)
    if args.jobs > 1 and not (preload and sys.platform.startswith("linux")):
        _prepare_caches(model, args.quiet)
    options = BatchOptions(
        out=Path(args.out) if args.out else None,
        fmt=args.fmt,
        jobs=args.jobs,
        categories=tuple(args.category),
        limit=args.limit,
        include_errors=args.include_errors,
        encoding=args.encoding,
        progress=not args.quiet and sys.stderr.isatty(),
        rejects=Path(args.rejects) if args.rejects else None,
        shard_size=args.shard_size,
        model=identity,
        settle_heap=True,
        preload=preload,
        show_text=args.show_text,
        note_seconds=args.note_timeout,
        overwrite=args.overwrite,
        stdin_format=args.stdin_format,
    )
    try:
        summary = run_batch(args.inputs, factory, options)
    except KeyboardInterrupt:
        if args.out:
            print(f"share-ner: stopped; completed outputs are kept in {args.out}: run the same command to resume",
                  file=sys.stderr)
        raise
    if not args.quiet:
        print(f"share-ner: {summary.line()}", file=sys.stderr)
        details = summary.details()
        if details:
            print(f"share-ner: {details}", file=sys.stderr)
    return 0
