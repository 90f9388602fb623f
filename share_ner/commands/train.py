"""``share-ner train``: train the CRF tagger and the normalizer into a model folder."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

from share_ner.commands import read_note_inputs
from share_ner.errors import ShareNerError, some_of
from share_ner.tagging.config import ALGORITHMS, SCHEMES, TaggerConfig, load_config


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "train",
        help="train the disorder tagger (CRF, B/I/O/DB/DI/HB/HI) and the normalizer",
        description="Train the CRF tagger on notes and ShARe pipe gold, fit the normalizer, "
        "and write a model folder for `share-ner tag --model`.",
    )
    p.add_argument("--text", type=Path, help="training notes: a folder of .txt files (or one file)")
    p.add_argument("--gold", type=Path, help="training gold: a folder of .pipe.txt files (or one pipe file)")
    p.add_argument("--distant", type=Path, metavar="NOTES",
                   help="unannotated notes (.txt) labelled by --lexicon and self-training (share_ner.training.distant); "
                        "with --text/--gold too, the gold notes outweigh them")
    p.add_argument("--distant-limit", type=int, metavar="N", help="--distant: use the first N notes by id")
    p.add_argument("--self-train-rounds", type=int, default=None, metavar="N",
                   help="--distant: rounds of tagging the notes and keeping confident mentions (default 1; 0: none)")
    p.add_argument("--distant-config", type=Path, metavar="FILE",
                   help="--distant: JSON file of distant settings (share_ner.training.distant.DistantConfig keys, e.g. "
                        '{"min_confidence": 0.8, "icd_names": false}); --self-train-rounds overrides its rounds')
    p.add_argument("--model", required=True, type=Path, metavar="FOLDER",
                   help="the model folder to write (created if missing; a model there is replaced when the new one "
                        "is complete)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a --model path that holds something else than a share-ner model (its files are "
                        "deleted once the new model is complete)")
    p.add_argument("--dev-text", type=Path, help="dev notes, scored after training")
    p.add_argument("--dev-gold", type=Path, help="dev gold (with --dev-text)")
    p.add_argument("--scheme", choices=SCHEMES, help="tag scheme (default biohd; bio flattens discontiguous mentions to their hull)")
    p.add_argument("--algorithm", choices=ALGORITHMS,
                   help="CRF training algorithm (default pa: passive-aggressive, 30 iterations; "
                        "lbfgs: L-BFGS with the config's c1/c2, 150 iterations)")
    p.add_argument("--config", type=Path, help="JSON file of tagger settings (TaggerConfig keys)")
    p.add_argument("--lexicon", default="hpo",
                   help="disorder lexicon TSV (`share-ner lexicon build`), 'hpo' for the embedded HPO lexicon (default), or 'none'")
    p.add_argument("--clusters", type=Path, help="word clusters file (`share-ner clusters build`)")
    p.add_argument("--no-normalizer", action="store_true", help="do not fit the normalizer (Task 1a only)")
    p.add_argument("--dense", action="store_true", help="the normalizer also compares sentence embeddings in its "
                   "tf-idf step (needs pip install 'share-ner[dense]', and so does every use of the model)")
    p.add_argument("--abbreviations", type=Path, metavar="FILE",
                   help="the site's own abbreviation list (TSV with the columns abbreviation, expansion): the "
                        "normalizer tries it before the packaged clinical list and keeps it in the model")
    p.add_argument("--placeholders", action="append", default=[], type=Path, metavar="FILE",
                   help="the site's own de-identification placeholder patterns (TSV name<TAB>regex), each match one "
                        "token, added to the packaged ones (repeatable; pass them to share-ner tag too)")
    p.add_argument("--encoding", default="utf-8", help="encoding of the notes (default utf-8)")
    p.add_argument("--strict", action="store_true",
                   help="stop when a gold file names no note of --text, or a note has no gold file (default: a "
                        "warning with the counts and file names)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress messages")
    p.set_defaults(func=run)


def load_lexicon_arg(value: str) -> Any:
    """The lexicon named by ``--lexicon``: a TSV path, ``hpo`` or ``none``."""
    if value == "none":
        return None
    from share_ner.lexicons import load_lexicon

    return load_lexicon(value)  # a TSV path, or "hpo"


def _matched(found: tuple[dict[str, list], list[str]], strict: bool, text: Path, gold_path: Path,
             read: dict[str, list]) -> dict[str, list]:
    """The matched gold; each problem a warning on stderr (with ``--strict``, an error). Gold that matches no
    mention to a note of ``text`` is one error line, before any warning: a tagger trained on it finds nothing."""
    gold, problems = found
    if not any(gold.values()):
        if any(read.values()):
            ids = sorted(d for d, ms in read.items() if ms)
            raise ShareNerError(f"{gold_path}: none of its mentions is in a note of {text} (it annotates "
                                f"{len(ids)} note(s): {some_of(ids, 3)}); give the notes the gold was annotated on")
        raise ShareNerError(f"{gold_path}: no gold mention found; a tagger needs annotated mentions to learn from")
    for problem in problems:
        if strict:
            raise ShareNerError(f"{problem} (--strict)")
        print(f"share-ner train: warning: {problem}", file=sys.stderr)
    return gold


def run(args: argparse.Namespace) -> int:
    from share_ner.formats import read_annotations
    from share_ner.tagging.training import check_gold
    from share_ner.training import gold_of_notes

    if (args.dev_text is None) != (args.dev_gold is None):
        raise ShareNerError("--dev-text and --dev-gold go together")
    if args.abbreviations and args.no_normalizer:
        raise ShareNerError("--abbreviations is for the normalizer; --no-normalizer fits none")
    site = None
    if args.abbreviations:
        from share_ner.lexicons.abbreviations import load_abbreviations

        site = load_abbreviations(args.abbreviations)  # before training: a bad row is one line (file, line)
    if args.placeholders:
        from share_ner.placeholders import use_site_placeholders

        use_site_placeholders(args.placeholders)  # a bad regex is one line naming the file and line
    config = load_config(args.config) if args.config else TaggerConfig()
    if args.scheme:
        config = config.replace(scheme=args.scheme)
    if args.algorithm:
        config = config.replace(algorithm=args.algorithm)
    say = (lambda msg: None) if args.quiet else (lambda msg: print(f"share-ner train: {msg}", file=sys.stderr))

    if (args.text is None) != (args.gold is None):
        raise ShareNerError("--text and --gold go together")
    if args.text is None and args.distant is None:
        raise ShareNerError("give --text and --gold, or --distant NOTES (or both)")
    docs: dict = {}
    gold: dict = {}
    if args.text is not None:
        docs = read_note_inputs(args.text, args.encoding)
        if not docs:
            raise ShareNerError(f"{args.text}: no .txt notes found")
        read = read_annotations(args.gold, docs)  # every span checked to end within its note (file, line)
        gold = _matched(gold_of_notes(docs, read, args.gold, args.text), args.strict, args.text, args.gold, read)
    dev = None
    if args.dev_text is not None:
        dev_docs = read_note_inputs(args.dev_text, args.encoding)
        dev_read = read_annotations(args.dev_gold, dev_docs)
        dev_gold = _matched(gold_of_notes(dev_docs, dev_read, args.dev_gold, args.dev_text), args.strict,
                            args.dev_text, args.dev_gold, dev_read)
        check_gold(dev_docs, dev_gold, "dev gold")
        dev = (dev_docs, dev_gold)
    lexicon = load_lexicon_arg(args.lexicon)
    clusters = None
    if args.clusters is not None:
        from share_ner.features.clusters import load_clusters

        clusters = load_clusters(args.clusters)
    if docs:
        say(f"{len(docs)} notes, {sum(len(v) for v in gold.values())} gold mentions; scheme {config.scheme}")
    with _replacing(args.model, args.overwrite):
        return _train(args, docs, gold, dev, lexicon, clusters, config, site, say)


@contextmanager
def _replacing(model: Path, overwrite: bool) -> Iterator[None]:
    """A ``--model`` path that holds something else than a model is an error naming ``--overwrite``; with it, the
    path is moved aside while the model is trained, deleted once it is written, and put back if training fails."""
    from share_ner.model import FILES

    other = model.exists() and (not model.is_dir() or (any(model.iterdir()) and not (model / FILES.config).exists()))
    if not other:
        yield
        return
    if not overwrite:
        what = "is not a folder" if not model.is_dir() else "is a folder that is not empty and is not a share-ner model"
        raise ShareNerError(f"{model}: {what}; give --overwrite to replace it, or another --model")
    aside = model.with_name(f".{model.name}.replaced{os.getpid()}")
    os.replace(model, aside)
    try:
        yield
    except BaseException:
        if not model.exists():
            os.replace(aside, model)
        raise
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def _train(args: argparse.Namespace, docs: dict, gold: dict, dev: Any, lexicon: Any, clusters: Any,
           config: TaggerConfig, site: Any, say: Callable[[str], None]) -> int:
    from share_ner.eval.dev import record_dev_scores
    from share_ner.linking.config import NormalizerConfig
    from share_ner.training import train_model

    options = dict(clusters=clusters, fit_normalizer=not args.no_normalizer,
                   normalizer_config=NormalizerConfig(dense=args.dense), normalizer_abbreviations=site,
                   clusters_source=None if args.clusters is None else str(args.clusters))
    if args.distant is not None:
        from share_ner.training.distant import DistantConfig, load_distant_config, train_distant

        distant_config = load_distant_config(args.distant_config) if args.distant_config else DistantConfig()
        if args.self_train_rounds is not None:
            distant_config = replace(distant_config, rounds=args.self_train_rounds)  # validated as a new config
        if not args.distant.exists():
            raise ShareNerError(f"{args.distant}: no such file or directory")
        notes = read_note_inputs(args.distant, args.encoding)
        if args.distant_limit is not None:
            notes = {k: notes[k] for k in sorted(notes)[: max(args.distant_limit, 0)]}
        out = train_distant(notes, lexicon, args.model, config, gold_docs=docs, gold=gold, config=distant_config,
                            source=str(args.distant), progress=say, **options)
    else:
        out = train_model(docs, gold, args.model, config, lexicon=lexicon, progress=say, **options)
    if dev is not None:
        say("scoring the dev set")
        record_dev_scores(out, *dev)

    from share_ner.model import read_model_info

    info = read_model_info(out)
    training = info.data.get("training", {})
    counts = training.get("counts", {})
    print(f"model written to {out}")
    print(f"trained on {counts.get('docs', 0)} notes, {counts.get('sentences', 0)} sentences, "
          f"{counts.get('tokens', 0)} tokens, {counts.get('mentions', 0)} mentions "
          f"({counts.get('discontiguous', 0)} discontiguous); {training.get('features', 0)} features; "
          f"{training.get('seconds', 0)} s, peak memory {training.get('peak_rss_mb', 0)} MB")
    lost = counts.get("dropped", 0) + counts.get("cross_sentence", 0)
    if lost or counts.get("inexact", 0):
        print(f"gold mentions the {config.scheme} tags cannot hold: {counts.get('dropped', 0)} dropped "
              f"(overlapping or not encodable), {counts.get('cross_sentence', 0)} crossing a sentence break; "
              f"{counts.get('inexact', 0)} with a boundary inside a token (widened to whole tokens)")
    if counts.get("trimmed", 0):
        print(f"gold mentions with whitespace at a span's end: {counts['trimmed']} (trained without it)")
    dev_scores = training.get("dev")
    if dev_scores:
        print(format_scores(dev_scores, "dev"))
    return 0


def format_scores(scores: dict[str, Any], label: str) -> str:
    """One line per matching mode from a ``Scores.to_dict()`` object."""
    lines = []
    for mode in ("strict", "relaxed"):
        s = scores.get(mode)
        if not isinstance(s, dict):
            continue
        lines.append(f"{label} {mode:7s} P {s.get('precision', 0):.3f}  R {s.get('recall', 0):.3f}  "
                     f"F1 {s.get('f1', 0):.3f}  (tp {s.get('tp')}, fp {s.get('fp')}, fn {s.get('fn')})")
    return "\n".join(lines)
