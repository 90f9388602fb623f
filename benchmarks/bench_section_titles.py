"""What the section-title step takes out of the default model's output, over every MTSamples note.

Run from the repository (politely, on a shared machine)::

    nice python benchmarks/bench_section_titles.py [--data DIR] [--model DIR]

The default model (or ``--model``) tags every MTSamples note twice in this process, with its ``section_titles``
setting on and off (``share_ner/tagging/sections.py``: a mention that is exactly the title of a standard
section's header is dropped). The table lists every mention the step dropped, by its text, with the header it
was; a mention the step added would be a bug and is counted too. The review of 50 of these notes
(``bench_mtsamples_review.py``) says which of the dropped mentions are disorders; this table shows that the step
drops only section titles on the whole corpus, not only on those 50.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from bench_data import RESULTS_DIR, add_data_argument, write_results

RESULTS = RESULTS_DIR / "section_titles.md"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--model", type=Path, help="a model directory (default: the packaged default model)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file")
    args = parser.parse_args(argv)
    notes_dir = args.data / "mtsamples" / "raw" / "notes"
    if not notes_dir.is_dir():
        print(f"{args.data / 'mtsamples'}: not found: nothing to benchmark", file=sys.stderr)
        return 2
    from share_ner.default_model.build import default_model_dir
    from share_ner.inputs.files import read_notes
    from share_ner.pipeline import Pipeline
    from share_ner.text import find_headers

    tagger = Pipeline.load(args.model or default_model_dir()).tagger
    docs = list(read_notes(notes_dir).values())
    on = tagger.config
    outputs = {}
    for setting in (False, True):
        tagger.config = dataclasses.replace(on, section_titles=setting)
        started = time.process_time()
        outputs[setting] = [found if isinstance(found, list) else [] for found in tagger.tag_many(docs)]
        outputs[setting, "cpu"] = time.process_time() - started
    tagger.config = on
    dropped: Counter[tuple[str, str]] = Counter()
    added = 0
    notes_with_drop = 0
    for doc, off, kept in zip(docs, outputs[False], outputs[True]):
        gone = set(off) - set(kept)
        added += len(set(kept) - set(off))
        notes_with_drop += bool(gone)
        headers = {start: name for start, _, name in find_headers(doc.text)} if gone else {}
        for mention in gone:
            dropped[mention.text(doc.text), headers.get(mention.start, "(not a header)")] += 1
    total_off = sum(map(len, outputs[False]))
    lines = [
        "# Section titles dropped from the default model's output on every MTSamples note", "",
        "Command: `nice python benchmarks/bench_section_titles.py`. The model tags each note with its "
        "`section_titles` setting off and on, in one process (the script's docstring). "
        f"{len(docs):,} notes; {total_off:,} mentions with the step off; {sum(dropped.values()):,} dropped, in "
        f"{notes_with_drop:,} notes; {added} added. Tagging CPU seconds, off / on: "
        f"{outputs[False, 'cpu']:.1f} / {outputs[True, 'cpu']:.1f}.", "",
        "| mention dropped | the header it was (normalized) | times |", "|---|---|---:|",
        *(f"| {text} | {header} | {n} |" for (text, header), n in sorted(dropped.items(), key=lambda x: (-x[1], x[0]))),
        "",
    ]
    write_results(args.out, "\n".join(lines))
    return 1 if added else 0


if __name__ == "__main__":
    sys.exit(main())
