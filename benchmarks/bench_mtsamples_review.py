"""False positives of a model on 50 MTSamples notes reviewed by hand, per 100 notes.

Run from the repository (politely, on a shared machine)::

    nice python benchmarks/bench_mtsamples_review.py                        # the default model
    nice python benchmarks/bench_mtsamples_review.py --model DIR [--label L] # any model
    nice python benchmarks/bench_mtsamples_review.py --before DIR           # and the list of what DIR had and
                                                                            # the model has not
    nice python benchmarks/bench_mtsamples_review.py --before-pred P        # an earlier release's output on the
                                                                            # notes (ShARe pipe files) as before
    nice python benchmarks/bench_mtsamples_review.py --write-notes DIR      # the 50 notes, to tag with it
    nice python benchmarks/bench_mtsamples_review.py --unreviewed           # the mentions the review lacks

The notes are 50 MTSamples notes (transcribed sample reports, CC0) that the packaged default model was not
trained on: a seeded sample (:data:`SEED`) of the notes outside the last ``NotesConfig.count`` by id, the ones
:mod:`share_ner.default_model.release` trains on. Each mention a model tags there is looked up, by note and
spans, in the hand review ``benchmarks/data/mtsamples_review.tsv`` (columns ``note``, ``spans``, ``text``,
``verdict``, ``reason``), which follows ShARe/CLEF 2013's definition of a disorder (docs/default_model.md,
"Reviewing false positives"). Verdicts:

* ``disorder``: a disorder mention as ShARe annotates one, its span right or near enough;
* ``boundary``: it overlaps a disorder but takes in too little or too much (counted apart: not a false positive);
* ``not_disorder``: no disorder at all (a procedure, a body part, a modifier, a header, a word): a false positive.

The review judges what was tagged, not what was missed (no recall here). A mention the review lacks is counted
as unreviewed, and ``--unreviewed`` lists them for review. Nothing is tuned on these notes: they score the
precision of choices made on the dev splits.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench_data import add_data_argument, tsv_rows

REPO = Path(__file__).resolve().parent.parent
REVIEW = REPO / "benchmarks" / "data" / "mtsamples_review.tsv"
RESULTS = REPO / "benchmarks" / "results" / "mtsamples_review.md"
COLUMNS = ("note", "spans", "text", "verdict", "reason")
VERDICTS = ("disorder", "boundary", "not_disorder")
SEED = 46
N_NOTES = 50


def review_notes(data: Path, n: int = N_NOTES, seed: int = SEED) -> dict[str, Any]:
    """The ``n`` notes of the review: a ``seed``-ed sample of the MTSamples notes the packaged model was not
    trained on, by id."""
    from share_ner.default_model.build import DEFAULT_NOTES
    from share_ner.inputs.files import read_notes

    notes = read_notes(data / "mtsamples" / "raw" / "notes")
    ids = sorted(notes)
    unseen = ids[:len(ids) - DEFAULT_NOTES.count]  # release.release_notes trains on the last ones
    return {k: notes[k] for k in sorted(random.Random(seed).sample(unseen, n))}


def spans_key(spans: Sequence[tuple[int, int]]) -> str:
    return ";".join(f"{s}-{e}" for s, e in spans)


def read_review(path: Path = REVIEW) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(note, spans) → (text, verdict, reason); a bad row is an error naming the line."""
    out: dict[tuple[str, str], tuple[str, str, str]] = {}
    if not path.is_file():
        return out
    for lineno, row in tsv_rows(path, COLUMNS):
        if len(row) != len(COLUMNS) or row[3] not in VERDICTS or not row[4].strip():
            raise SystemExit(f"{path}:{lineno}: expected {len(COLUMNS)} fields, a verdict of "
                             f"{', '.join(VERDICTS)} and a reason")
        out[(row[0], row[1])] = (row[2], row[3], row[4])
    return out


def tagged(model: Path | None, notes: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The model's mentions in each note (tagged and normalized, no attributes)."""
    from share_ner.default_model.build import default_model_dir
    from share_ner.pipeline import Pipeline

    pipeline = Pipeline.load(model if model is not None else default_model_dir())
    pipeline.use_attributes(None)
    return {k: pipeline.annotate(d) for k, d in notes.items()}


def predicted(path: Path, notes: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The mentions of ShARe pipe files (an earlier release's ``share-ner tag`` output on the notes)."""
    from share_ner.formats.share import read_pipe_dir

    found = read_pipe_dir(path)
    return {k: sorted(found.get(k, [])) for k in notes}


def count(mentions: Mapping[str, list[Any]], notes: Mapping[str, Any],
          review: Mapping[tuple[str, str], tuple[str, str, str]]) -> dict[str, Any]:
    """Mentions by verdict (and unreviewed), with the false positives' (note, spans, text)."""
    verdicts: Counter[str] = Counter()
    false: list[tuple[str, str, str]] = []
    unreviewed: list[tuple[str, str, str]] = []
    for note, ms in mentions.items():
        for m in ms:
            key = (note, spans_key(m.spans))
            text = m.text(notes[note].text)
            found = review.get(key)
            if found is None:
                unreviewed.append((note, key[1], text))
                verdicts["unreviewed"] += 1
                continue
            verdicts[found[1]] += 1
            if found[1] == "not_disorder":
                false.append((note, key[1], text))
    return {"verdicts": verdicts, "false": false, "unreviewed": unreviewed, "mentions": sum(map(len, mentions.values()))}


def per_100(n: int, notes: int) -> str:
    return f"{100 * n / notes:.1f}"


def table(rows: Sequence[tuple[str, dict[str, Any]]], n_notes: int) -> list[str]:
    lines = ["| model | mentions | disorder | boundary | not a disorder (false positives) | unreviewed | "
             "false positives per 100 notes |", "|---|---|---|---|---|---|---|"]
    for label, c in rows:
        v = c["verdicts"]
        lines.append(f"| {label} | {c['mentions']} | {v['disorder']} | {v['boundary']} | {v['not_disorder']} | "
                     f"{v['unreviewed']} | **{per_100(v['not_disorder'], n_notes)}** |")
    return lines


def removed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The false positives of ``before`` that ``after`` does not tag, counted by lower-cased string."""
    kept = {(n, s) for n, s, _ in after["false"]}
    gone = Counter(t.lower() for n, s, t in before["false"] if (n, s) not in kept)
    left = Counter(t.lower() for n, s, t in after["false"])
    lines = ["| false positive (before) | removed | still tagged |", "|---|---|---|"]
    for text, k in sorted(gone.items(), key=lambda x: (-x[1], x[0])):
        lines.append(f"| {text} | {k} | {left.get(text, 0)} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--model", type=Path, help="a model directory (default: the default model)")
    parser.add_argument("--label", default="the default model", help="the model's name in the table")
    parser.add_argument("--before", type=Path, help="an earlier model directory to compare with")
    parser.add_argument("--before-label", default="before", help="its name in the table")
    parser.add_argument("--before-pred", type=Path,
                        help="instead of --before: an earlier system's ShARe pipe files on the notes")
    parser.add_argument("--write-notes", type=Path, help="write the notes as <id>.txt into this folder and stop")
    parser.add_argument("--unreviewed", action="store_true", help="print the mentions the review lacks (TSV)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    args = parser.parse_args(argv)
    if not (args.data / "mtsamples" / "raw" / "notes").is_dir():
        print(f"{args.data / 'mtsamples'}: not found: nothing to benchmark", file=sys.stderr)
        return 2
    notes = review_notes(args.data)
    if args.write_notes is not None:
        args.write_notes.mkdir(parents=True, exist_ok=True)
        for k, d in notes.items():
            (args.write_notes / f"{k}.txt").write_bytes(d.text.encode("utf-8"))
        return 0
    review = read_review()
    runs = []
    if args.before is not None:
        runs.append((args.before_label, count(tagged(args.before, notes), notes, review)))
    elif args.before_pred is not None:
        runs.append((args.before_label, count(predicted(args.before_pred, notes), notes, review)))
    runs.append((args.label, count(tagged(args.model, notes), notes, review)))
    if args.unreviewed:
        seen: set[tuple[str, str]] = set()
        for _, c in runs:
            for note, spans, text in c["unreviewed"]:
                if (note, spans) not in seen:
                    seen.add((note, spans))
                    print(f"{note}\t{spans}\t{text}")
        return 0
    lines = table(runs, len(notes))
    if len(runs) == 2:
        lines += ["", "What the earlier model tagged that the review calls no disorder, and how much of it is gone:",
                  "", *removed(runs[0][1], runs[1][1])]
    left = Counter(t.lower() for _, _, t in runs[-1][1]["false"])
    lines += ["", f"What {args.label} still tags that the review calls no disorder:", "",
              ", ".join(f"{t} ({k})" for t, k in sorted(left.items(), key=lambda x: (-x[1], x[0])))]
    print("\n".join(lines))
    if not args.write:
        return 0
    unreviewed = sum(c["verdicts"]["unreviewed"] for _, c in runs)
    out = ["# False positives on 50 MTSamples notes reviewed by hand", "",
           "Produced by `nice python benchmarks/bench_mtsamples_review.py"
           + (" --before DIR" if args.before is not None else "")
           + (" --before-pred P" if args.before_pred is not None else "") + "` (from the repository root). The notes: a "
           f"sample (seed {SEED}) of the MTSamples notes the packaged model was not trained on; the review: "
           "`benchmarks/data/mtsamples_review.tsv` (note, spans, text, verdict, reason), following ShARe/CLEF "
           "2013's definition of a disorder (docs/default_model.md, \"Reviewing false positives\"). Per 100 notes: "
           f"the count divided by the {len(notes)} notes, times 100. Unreviewed mentions: {unreviewed}."
           + (f" The earlier system: {args.before_label}." if len(runs) == 2 else ""), "",
           *lines, ""]
    args.out.write_text("\n".join(out), encoding="utf-8")
    print(f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
