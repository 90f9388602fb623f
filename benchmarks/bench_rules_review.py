"""What a change of the ConText rules does on every MTSamples note, each change judged by hand.

Run from the repository (politely, on a shared machine)::

    nice python benchmarks/bench_rules_review.py --before-rules FILE            # -> results/rules_review.md
    nice python benchmarks/bench_rules_review.py --before-rules FILE --unreviewed  # the changes the review lacks

The default model tags every MTSamples note (transcribed sample reports, CC0; no annotation), and its mentions get
their attributes twice: from ``FILE`` (a whole rules file, such as the packaged one before a change) and from the
packaged rules. Every mention whose negation, uncertainty, conditional, subject, generic, course, severity or
DocTime differs is looked up, by note, spans and attribute, in the hand review
``benchmarks/data/mtsamples_rules_review.tsv`` (columns ``note``, ``spans``, ``attribute``, ``before``,
``after``, ``verdict``, ``reason``). Verdicts, following the ShARe/CLEF 2014 attribute guidelines
(``docs/attributes.md``):

* ``right``: the packaged rules' value is the right one and the earlier value was not;
* ``wrong``: the earlier value was the right one;
* ``unclear``: the guidelines do not settle it (said why in ``reason``).

An annotated set tells whether rules are right on what it holds; this tells what a change does on text it was not
written on, where cues the annotated sets lack occur. MTSamples holds some notes several times over (the same
report under two specialties), so each change is counted once per note and the distinct sentences are given too.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from bench_data import RESULTS_DIR, add_data_argument, tsv_rows, write_results
from bench_mtsamples_review import spans_key

REPO = Path(__file__).resolve().parent.parent
REVIEW = REPO / "benchmarks" / "data" / "mtsamples_rules_review.tsv"
RESULTS = RESULTS_DIR / "rules_review.md"
COLUMNS = ("note", "spans", "attribute", "before", "after", "verdict", "reason")
VERDICTS = ("right", "wrong", "unclear")
ATTRIBUTES = ("negation", "uncertainty", "conditional", "subject", "generic", "course", "severity", "doctime")


def read_review(path: Path = REVIEW) -> dict[tuple[str, str, str], dict[str, str]]:
    """(note, spans, attribute) → the row; a bad row is an error naming the line."""
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    if not path.is_file():
        return out
    for lineno, row in tsv_rows(path, COLUMNS):
        if len(row) != len(COLUMNS) or row[2] not in ATTRIBUTES or row[5] not in VERDICTS or not row[6].strip():
            raise SystemExit(f"{path}:{lineno}: expected {len(COLUMNS)} fields, an attribute of "
                             f"{', '.join(ATTRIBUTES)}, a verdict of {', '.join(VERDICTS)} and a reason")
        out[row[0], row[1], row[2]] = dict(zip(COLUMNS, row))
    return out


def changes(before_rules: Path, data: Path) -> list[dict[str, Any]]:
    """Each (mention, attribute) whose value the packaged rules change from ``before_rules``' value."""
    from share_ner.attributes import ContextMatcher, parse_rules
    from share_ner.default_model.build import default_model_dir
    from share_ner.inputs.files import read_notes
    from share_ner.pipeline import Pipeline

    notes = read_notes(data / "mtsamples" / "raw" / "notes")
    tagger = Pipeline.load(default_model_dir()).tagger
    before = ContextMatcher(parse_rules(before_rules.read_text(encoding="utf-8"), before_rules))
    after = ContextMatcher(None)
    ids = sorted(notes)
    out = []
    for note, found in zip(ids, tagger.tag_many([notes[i] for i in ids])):
        if not isinstance(found, list) or not found:
            continue
        doc = notes[note]
        for mention, old, new in zip(found, before.attributes(doc, found), after.attributes(doc, found)):
            for name in ATTRIBUTES:
                if getattr(old, name) != getattr(new, name):
                    sentence_start = max(doc.text.rfind(".", 0, mention.start), doc.text.rfind("\n", 0, mention.start))
                    out.append({"note": note, "spans": spans_key(mention.spans), "attribute": name,
                                "before": getattr(old, name), "after": getattr(new, name),
                                "text": mention.text(doc.text),
                                "context": " ".join(doc.text[sentence_start + 1:mention.end + 60].split())})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--before-rules", type=Path, required=True, help="the whole rules file to compare with")
    parser.add_argument("--unreviewed", action="store_true", help="print the changes the review lacks (TSV rows "
                        "to judge, with their sentence) and stop")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    args = parser.parse_args(argv)
    if not (args.data / "mtsamples" / "raw" / "notes").is_dir():
        print(f"{args.data / 'mtsamples'}: not found: nothing to benchmark", file=sys.stderr)
        return 2
    review = read_review()
    found = changes(args.before_rules, args.data)
    for row in found:
        row["verdict"] = review.get((row["note"], row["spans"], row["attribute"]), {}).get("verdict", "unreviewed")
    if args.unreviewed:
        for row in found:
            if row["verdict"] == "unreviewed":
                print("\t".join([*(row[c] for c in COLUMNS[:5]), "", "", row["context"]]))
        return 0
    by_change: dict[tuple[str, str, str], Counter] = {}
    sentences: dict[tuple[str, str, str], set[str]] = {}
    for row in found:
        key = (row["attribute"], row["before"], row["after"])
        by_change.setdefault(key, Counter())[row["verdict"]] += 1
        sentences.setdefault(key, set()).add(row["context"])
    lines = ["| attribute: before → after | changes (distinct sentences) | right | wrong | unclear | unreviewed |",
             "|---|---:|---:|---:|---:|---:|"]
    for key in sorted(by_change):
        c = by_change[key]
        lines.append(f"| {key[0]}: {key[1]} → {key[2]} | {sum(c.values())} ({len(sentences[key])}) | {c['right']} | "
                     f"{c['wrong']} | {c['unclear']} | {c['unreviewed']} |")
    total = Counter(row["verdict"] for row in found)
    lines.append(f"| all | {len(found)} ({len({r['context'] for r in found})}) | {total['right']} | {total['wrong']} | "
                 f"{total['unclear']} | {total['unreviewed']} |")
    judged = [(row, review[row["note"], row["spans"], row["attribute"]]) for row in found
              if row["verdict"] in ("wrong", "unclear")]
    seen: set[tuple[str, str]] = set()
    notes_lines = []
    for row, reviewed in judged:
        if (row["context"], row["attribute"]) not in seen:
            seen.add((row["context"], row["attribute"]))
            notes_lines.append(f"- {row['verdict']}: {row['note']} *{row['text']}* {row['attribute']} "
                               f"{row['before']} → {row['after']}: {reviewed['reason']}")
    text = "\n".join([
        "# A change of the ConText rules on every MTSamples note, judged by hand", "",
        "Command: `nice python benchmarks/bench_rules_review.py --before-rules FILE` (FILE: the packaged rules "
        "before the change). The default model tags every note; each mention whose attributes differ between FILE "
        "and the packaged rules is looked up in `benchmarks/data/mtsamples_rules_review.tsv` (the script's "
        "docstring). A change counts once per note; MTSamples repeats some notes, so the distinct sentences are "
        "given in brackets.", "", *lines, "", "The changes judged wrong or unclear (one line per distinct sentence):",
        "", *(notes_lines or ["- none"]), ""])
    write_results(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
