"""Whose disorder it is (the 2014 subject attribute) in MTSamples sentences that name a relative, labelled by hand.

The sentences are three seeded samples of MTSamples sentences (transcribed sample reports, CC0) that name a relative
("mother", "brother", "parents", "family history", "wife" ...). The mentions the default model tagged there were
labelled by hand with their subject as ShARe/CLEF 2014 defines it (``patient``, ``family_member``, ``other``) in
``benchmarks/data/mtsamples_subject.tsv`` (columns ``note``, ``spans``, ``text``, ``subject``, ``sample``):

* ``development``: 72 mentions, sentences anywhere in a note (most under a FAMILY HISTORY header). The errors of
  the rules in these sentences are what the rules were changed for, so this sample is no test of them;
* ``check``: 49 mentions of a second sample from sentences outside any family history section (narrative, where
  a relative is more often an informant or a visitor), drawn and labelled after the rules were changed: the check.
  It showed that a relative reaching eight words on, whatever verb follows, which a first version of the change
  had, lost as many mentions as it won; that reach went back to three words (eight after "has" or "had", which
  changes no mention of the first two samples), and no rule was added for what it got wrong;
* ``holdout``: 58 mentions of a third sample, from any sentence that names a relative, drawn after the rules were
  final and labelled without looking at any system's output; no rule was changed after it.

Each rules file gives every labelled mention its subject (``ContextMatcher`` on the given spans, the tagger not
involved) and is scored by accuracy, and by precision and recall of the mentions it gives another subject than
the patient. ``--before-rules FILE``: a whole rules file in place of the packaged one, to compare (for example an
earlier release's ``share_ner/data/context_rules.tsv``), named ``--before-label`` in the table;
``--medspacy-python PY``: medspaCy's ConText beside (``PY`` a venv of its own with the ``peers`` extra: medspaCy
pins spaCy < 3.8), which knows family members only. Writes ``benchmarks/results/subject.md``::

    nice python benchmarks/bench_subject.py [--data DIR] [--before-rules FILE [--before-label NAME]]
                                            [--medspacy-python PY]
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from typing import Any, Sequence

from bench_data import RESULTS_DIR, add_data_argument, write_results

REPO = Path(__file__).resolve().parent.parent
LABELS = REPO / "benchmarks" / "data" / "mtsamples_subject.tsv"
RESULTS = RESULTS_DIR / "subject.md"
COLUMNS = ("note", "spans", "text", "subject", "sample")
SAMPLES = ("development", "check", "holdout")


def read_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for row in rows:
        if tuple(row) != COLUMNS:
            raise SystemExit(f"{path}: expected the columns {', '.join(COLUMNS)}")
        row["spans"] = tuple(tuple(int(x) for x in part.split("-")) for part in row["spans"].split(";"))
    return rows


def read_labelled_notes(labels: list[dict[str, Any]], notes_dir: Path) -> dict[str, Any]:
    """The notes the labels name (``Document`` by id), each label's text checked against its note."""
    from share_ner.formats.given_text import matches_note
    from share_ner.inputs.files import read_note

    notes = {note: read_note(notes_dir / f"{note}.txt") for note in dict.fromkeys(row["note"] for row in labels)}
    for row in labels:
        if not matches_note(row["text"], notes[row["note"]].text, row["spans"]):
            raise SystemExit(f"{LABELS}: {row['note']} {row['spans']}: the text is not the note's there")
    return notes


def subjects(rules_file: Path | None, labels: list[dict[str, Any]], notes: dict[str, Any]) -> list[str]:
    """The subject the rules (the packaged ones, or ``rules_file`` instead) give each labelled mention."""
    from share_ner.attributes import ContextMatcher, parse_rules
    from share_ner.document import Mention

    rules = None if rules_file is None else parse_rules(rules_file.read_text(encoding="utf-8"), rules_file)
    matcher = ContextMatcher(rules)
    out: dict[int, str] = {}
    by_note: dict[str, list[int]] = {}
    for i, row in enumerate(labels):
        by_note.setdefault(row["note"], []).append(i)
    for note, idx in by_note.items():
        found = matcher.attributes(notes[note], [Mention(note, labels[i]["spans"]) for i in idx])
        for i, a in zip(idx, found):
            out[i] = a.subject
    return [out[i] for i in range(len(labels))]


def medspacy_subjects(python: str, labels: list[dict[str, Any]], notes: dict[str, Any]) -> tuple[str, list[str]]:
    """medspaCy's ConText (default rules, PyRuSH sentences) on each labelled mention, its note whole and the
    mention's hull as the one entity (``bench_attributes``' worker): ``family_member`` where it says
    ``is_family``, else ``patient`` (it has no other experiencer)."""
    import json

    from bench_attributes import LONG_UNIT, run_worker

    kit = [[notes[row["note"]].text, row["spans"][0][0], row["spans"][-1][1]] for row in labels]
    result = run_worker(python, "--medspacy-worker",
                        json.dumps({"kit": kit, "narrative": {}, "long": [], "unit": LONG_UNIT, "cap": 0}))
    return f"medspaCy {result['version']} ConText (default rules)", [r["subject"] for r in result["kit"]]


def scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    right = sum(g == p for g, p in zip(gold, pred))
    tp = sum(g == p != "patient" for g, p in zip(gold, pred))
    predicted = sum(p != "patient" for p in pred)
    actual = sum(g != "patient" for g in gold)
    prec = tp / predicted if predicted else 0.0
    rec = tp / actual if actual else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"n": len(gold), "others": actual, "right": right, "accuracy": right / len(gold) if gold else 0.0,
            "p": prec, "r": rec, "f1": f1, "tp": tp, "predicted": predicted}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--before-rules", type=Path, help="a whole rules file to compare with the packaged one")
    parser.add_argument("--before-label", default="before", help="its name in the table")
    parser.add_argument("--medspacy-python", help="a Python with medspacy 1.3.1 installed (the peers extra, in a "
                        "venv of its own), measured beside")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    args = parser.parse_args(argv)
    notes_dir = args.data / "mtsamples" / "raw" / "notes"
    if not notes_dir.is_dir():
        print(f"{args.data / 'mtsamples'}: not found: nothing to benchmark", file=sys.stderr)
        return 2
    labels = read_labels()
    notes = read_labelled_notes(labels, notes_dir)
    runs = []
    if args.before_rules is not None:
        runs.append((args.before_label, subjects(args.before_rules, labels, notes)))
    if args.medspacy_python:
        runs.append(medspacy_subjects(args.medspacy_python, labels, notes))
    runs.append(("share-ner ConText rules", subjects(None, labels, notes)))
    lines = ["| rules | sample | mentions | not the patient's | accuracy | other than patient: P | R | F1 |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, pred in runs:
        for sample in SAMPLES:
            idx = [i for i, row in enumerate(labels) if row["sample"] == sample]
            s = scores([labels[i]["subject"] for i in idx], [pred[i] for i in idx])
            lines.append(f"| {name} | {sample} | {s['n']} | {s['others']} | {s['right']} ({s['accuracy']:.3f}) | "
                         f"{s['p']:.3f} | {s['r']:.3f} | **{s['f1']:.3f}** |")
    wrong = [(labels[i], runs[-1][1][i]) for i in range(len(labels)) if runs[-1][1][i] != labels[i]["subject"]]
    lines += ["", "What share-ner's rules still get wrong (sample, note, mention, labelled, given):", ""]
    lines += [f"- {row['sample']}: {row['note']} *{row['text']}*: {row['subject']}, given {given}"
              for row, given in wrong] or ["- nothing"]
    text = "\n".join(["# Subject (whose disorder) in MTSamples sentences that name a relative", "",
                      "Command: `nice python benchmarks/bench_subject.py"
                      + (f" --before-rules FILE --before-label '{args.before_label}'"
                         if args.before_rules is not None else "")
                      + (" --medspacy-python PY" if args.medspacy_python else "")
                      + "`. The labels and the three samples: the script's docstring. `not the patient's`: mentions "
                      "labelled `family_member` or `other`; P/R/F1 of the mentions given a subject other than the "
                      "patient (right when it is the labelled one).", "", *lines, ""])
    if args.write:
        write_results(args.out, text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
