"""share-ner's rule tokenizer and abbreviation detector against scispaCy 0.6.2's, note by note.

share-ner rebuilds scispaCy's ``combined_rule_tokenizer`` rules (``share_ner.token_rules``) and its
``AbbreviationDetector`` (``share_ner.features.abbreviations``) without depending on scispaCy. This script runs both
on every note of the repository (``examples/notes``, the packaged default corpus, the test fixtures) and of every
public corpus under the data directory (the MTSamples notes and every ``<corpus>/<split>/text``), and counts the notes
whose tokens differ (the rule tokenizer's tokens, whitespace tokens included, with their offsets) and the
(short form, long form) pairs that only one side finds (scispaCy's detector in ``spacy.blank("en")``, as its
documentation runs it, against ``find_definitions``). Each difference is printed; exit status 1 if there is one.

scispaCy pins NumPy < 2 and Python < 3.13: run it in a venv of its own (``pip install '.[oracle]'``)::

    nice python benchmarks/bench_scispacy_oracle.py [--data DIR] [--out benchmarks/results/scispacy_oracle.md]
    python benchmarks/bench_scispacy_oracle.py --repository-only --no-write    # what tests/test_scispacy_oracle.py runs
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench_abbreviations import corpora
from bench_data import REPO, RESULTS_DIR, add_data_argument, command_line, write_results

from share_ner.features import abbreviations
from share_ner.inputs.files import read_notes
from share_ner.text import get_tokenizer

REPOSITORY_NOTES = ("examples/notes", "share_ner/data/default_corpus/share", "tests/fixtures/*/text")


def repository_corpora() -> dict[str, dict[str, str]]:
    """``{folder: {note id: text}}`` of the notes in the repository."""
    found = {}
    for pattern in REPOSITORY_NOTES:
        for folder in sorted(REPO.glob(pattern)):
            found[str(folder.relative_to(REPO))] = {i: d.text for i, d in read_notes(folder).items()}
    return found


def scispacy_side() -> tuple[Any, Any]:
    """scispaCy's rule tokenizer on ``spacy.blank("en")``, and a blank English pipeline with its detector."""
    import scispacy.abbreviation  # noqa: F401  (registers the "abbreviation_detector" factory)
    import spacy
    from scispacy.custom_tokenizer import combined_rule_tokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tokenizer = combined_rule_tokenizer(spacy.blank("en"))
    nlp = spacy.blank("en")
    nlp.add_pipe("abbreviation_detector")
    return tokenizer, nlp


def tokens(tokenizer: Any, text: str) -> list[tuple[int, str]]:
    return [(t.idx, t.text) for t in tokenizer(text)]


def scispacy_pairs(nlp: Any, text: str) -> set[tuple[tuple[int, int], tuple[int, int]]]:
    if "(" not in text or ")" not in text:
        return set()  # no "(" and ")" tokens: the detector's matcher matches nothing
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\[W036\]")  # the detector's global matcher left empty
        doc = nlp(text)
    return {((s.start_char, s.end_char), (s._.long_form.start_char, s._.long_form.end_char))
            for s in doc._.abbreviations}


def compare(name: str, texts: dict[str, str], theirs: tuple[Any, Any]) -> dict[str, int]:
    """The counts of one corpus; each differing note is printed (note id, offsets, tokens or pairs)."""
    tokenizer, nlp = theirs
    ours = get_tokenizer()
    row = dict.fromkeys(("notes", "tokens", "token_notes", "pairs", "pair_notes", "pairs_differ"), 0)
    for note_id, text in sorted(texts.items()):
        row["notes"] += 1
        a, b = tokens(ours, text), tokens(tokenizer, text)
        row["tokens"] += len(b)
        if a != b:
            row["token_notes"] += 1
            at = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"{name} {note_id}: tokens differ from token {at}: share-ner {a[at:at + 5]}, scispaCy {b[at:at + 5]}")
        abbreviations._RECENT.clear()
        mine, reference = set(abbreviations.find_definitions(text)), scispacy_pairs(nlp, text)
        row["pairs"] += len(reference)
        if mine != reference:
            row["pair_notes"] += 1
            row["pairs_differ"] += len(mine ^ reference)
            print(f"{name} {note_id}: pairs only share-ner finds {sorted(mine - reference)}, "
                  f"only scispaCy {sorted(reference - mine)}")
    return row


def report(rows: dict[str, dict[str, int]], seconds: float) -> str:
    total = {k: sum(r[k] for r in rows.values()) for k in next(iter(rows.values()))}
    lines = [
        "# share-ner's rule tokenizer and abbreviation detector against scispaCy 0.6.2",
        "",
        f"Command: `nice {command_line('bench_scispacy_oracle.py', sys.argv[1:])}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; Python {platform.python_version()}, "
        f"scispaCy {version('scispacy')}, spaCy {version('spacy')}, NumPy {version('numpy')}; {seconds:.0f} s).",
        "",
        "Tokens: the rule tokenizer's tokens with their offsets (whitespace tokens included), share-ner's",
        "(`share_ner.token_rules`) against scispaCy's `combined_rule_tokenizer` on `spacy.blank(\"en\")`; a note",
        "differs when one token does. Pairs: (short form, long form) character spans, scispaCy's",
        "`AbbreviationDetector` in `spacy.blank(\"en\")` against `share_ner.features.abbreviations.find_definitions`",
        "(screening steps, then share-ner's detector); differing pairs are those only one side finds.",
        "",
        "| corpus | notes | tokens | notes whose tokens differ | abbreviation pairs | notes whose pairs differ | "
        "differing pairs |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in [*rows.items(), ("all", total)]:
        lines.append(f"| {name} | {r['notes']:,} | {r['tokens']:,} | {r['token_notes']} | {r['pairs']:,} | "
                     f"{r['pair_notes']} | {r['pairs_differ']} |")
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--repository-only", action="store_true", help="only the notes in the repository")
    ap.add_argument("--no-write", action="store_true", help="print the table, write no results file")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "scispacy_oracle.md")
    args = ap.parse_args(argv)
    found = repository_corpora()
    if not args.repository_only and (args.data / "mtsamples").is_dir():
        found.update(corpora(args.data))
    theirs = scispacy_side()
    t0 = time.perf_counter()
    rows = {name: compare(name, texts, theirs) for name, texts in found.items()}
    text = report(rows, time.perf_counter() - t0)
    if args.no_write:
        print(text)
    else:
        write_results(args.out, text)
    return 1 if any(r["token_notes"] or r["pair_notes"] for r in rows.values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
