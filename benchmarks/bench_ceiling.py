"""Round-trip ceiling of the tag encoding, mention boundaries inside tokens, and tokenizer speed.

For every train split (chia, ncbi_disease, bc5cdr), and chia dev/test and
mantra_gsc test for comparison, under the corpora directory (``--data``, see ``bench_data.py``)
(relative to the repo): the share of gold mentions, and of discontiguous ones,
that survive split → encode → decode exactly (strict) with the ``biohd`` scheme's fragment tags (a perfect
pairing) and the ``bio`` scheme, and the share of gold mention boundaries that fall inside a
token with scispacy's tokens alone and with share-ner's extra splits. Then the
speed of tokenization and of sentence splitting on the MTSamples notes, in
tokens per CPU second (the machine is shared, so CPU time is the fair
measure; wall time is printed too). Prints a table and writes
``benchmarks/results/ceiling.md``::

    nice python benchmarks/bench_ceiling.py [--data DIR] [--out FILE] [--notes N]
"""

from __future__ import annotations

import argparse
import sys
import time
from bisect import bisect_right
from pathlib import Path
from typing import Mapping, Sequence

from bench_data import RESULTS_DIR, add_data_argument

from share_ner.document import Document, Mention
from share_ner.formats import read_annotations
from share_ner.inputs.files import iter_note_paths, read_note, read_notes
from share_ner.tagging.scheme import round_trip_ceiling
from share_ner.text import get_tokenizer, split_sentences, tokenize

RESULTS = RESULTS_DIR / "ceiling.md"
SPLITS = ("chia/train", "ncbi_disease/train", "bc5cdr/train", "chia/dev", "chia/test", "mantra_gsc/test")
COMMAND = "nice python benchmarks/bench_ceiling.py"


def boundaries_inside_tokens(
    docs: Mapping[str, Document], gold: Mapping[str, Sequence[Mention]], extra_splits: bool
) -> tuple[int, int]:
    """(boundaries inside a token, all span boundaries) over the gold mentions."""
    inside = total = 0
    for doc_id, mentions in gold.items():
        text = docs[doc_id].text
        toks = tokenize(text, extra_splits=extra_splits)
        starts = [t.start for t in toks]
        for m in mentions:
            for s, e in m.spans:
                for b in (s, e):
                    total += 1
                    k = bisect_right(starts, b) - 1
                    if k >= 0 and toks[k].start < b < toks[k].end:
                        inside += 1
    return inside, total


def speed(notes_dir: Path, limit: int | None) -> dict:
    paths = list(iter_note_paths(notes_dir))[:limit]
    docs = [read_note(p) for p in paths]
    get_tokenizer()
    for d in docs[:100]:  # warm spaCy's lexeme cache, as a long-running tagger would be
        tokenize(d.text)
    out: dict = {"notes": len(docs), "chars": sum(len(d.text) for d in docs)}
    for name, fn in (
        ("tokenize", lambda d: len(tokenize(d.text))),
        ("split_sentences", lambda d: sum(len(s.tokens) for s in split_sentences(d))),
    ):
        cpu, wall = time.process_time(), time.perf_counter()
        n = sum(fn(d) for d in docs)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        out[name] = {"tokens": n, "cpu_s": cpu, "wall_s": wall, "tokens_per_cpu_s": n / cpu}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--out", type=Path, default=RESULTS, help="results file (Markdown)")
    ap.add_argument("--notes", type=int, default=None, help="time only the first N MTSamples notes")
    args = ap.parse_args(argv)
    if not (args.data / "README.md").exists():
        print(f"bench_ceiling: {args.data} not found; nothing to measure", file=sys.stderr)
        return 0

    rows = []
    for split in SPLITS:
        base = args.data / split
        if not base.is_dir():
            continue
        docs = read_notes(base / "text")
        gold = read_annotations(base / "gold", docs)
        res = {scheme: round_trip_ceiling(docs, gold, scheme) for scheme in ("biohd", "bio")}
        raw = boundaries_inside_tokens(docs, gold, extra_splits=False)
        ours = boundaries_inside_tokens(docs, gold, extra_splits=True)
        rows.append((split, res, raw, ours))

    lines = [
        "# Round-trip ceiling of the tag encoding and tokenizer speed",
        "",
        f"Command: `{COMMAND}` (per split also `share-ner ceiling --text <split>/text --gold <split>/gold "
        "[--scheme bio]`).",
        "",
        "Ceiling = share of gold mentions given back exactly (strict: same spans) after sentence "
        "splitting, encoding and decoding; `disc.` = the same for discontiguous mentions. biohd: fragment tags "
        "joined by a perfect pairing (what the tags hold, `--pairing learned`; the rule decoding's ceiling is in "
        "`discontiguous.md`), and the distributed readings of suspended prefixes the tagger adds (\"Hyper ... "
        "thyroidism\" from \"hypothyroidism\"); bio: hulls. Lost mentions by cause (biohd): a boundary inside a "
        "token / a span beginning or ending on whitespace beyond the sentence's tokens / crossing a sentence "
        "boundary / an overlap the tags cannot hold / decoded differently.",
        "",
        "| split | mentions | disc. | biohd ceiling | biohd disc. | bio ceiling | bio disc. "
        "| lost: in token / on whitespace / crossing / overlap / misdecoded |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for split, res, _, _ in rows:
        b, o = res["biohd"], res["bio"]
        lost = b["lost"]
        has_disc = b["discontiguous"] > 0
        b_disc = f"{100 * b['discontiguous_ceiling']:.2f}% ({b['discontiguous_survived']})" if has_disc else "–"
        o_disc = f"{100 * o['discontiguous_ceiling']:.2f}%" if has_disc else "–"
        lines.append(
            f"| {split} | {b['mentions']} | {b['discontiguous']} | {100 * b['ceiling']:.2f}% "
            f"| {b_disc} | {100 * o['ceiling']:.2f}% | {o_disc} "
            f"| {lost['inexact']} / {lost['whitespace']} / {lost['crossing']} / {lost['dropped']} "
            f"/ {lost['misdecoded']} |"
        )
    lines += [
        "",
        "Gold mention boundaries (span starts and ends) that fall inside a token:",
        "",
        "| split | boundaries | scispacy tokens | share-ner tokens (extra splits) |",
        "|---|---:|---:|---:|",
    ]
    for split, _, raw, ours in rows:
        lines.append(
            f"| {split} | {raw[1]} | {raw[0]} ({100 * raw[0] / raw[1]:.2f}%) "
            f"| {ours[0]} ({100 * ours[0] / ours[1]:.2f}%) |"
        )
    notes_dir = args.data / "mtsamples" / "raw" / "notes"
    if notes_dir.is_dir():
        sp = speed(notes_dir, args.notes)
        lines += [
            "",
            f"Speed on {sp['notes']} MTSamples notes ({sp['chars']:,} characters), one process, "
            "tokens per CPU second (wall time too; the machine was shared by several jobs):",
            "",
            "| step | tokens | CPU s | tokens / CPU s | wall s |",
            "|---|---:|---:|---:|---:|",
        ]
        for name in ("tokenize", "split_sentences"):
            r = sp[name]
            lines.append(
                f"| {name} | {r['tokens']:,} | {r['cpu_s']:.1f} | {r['tokens_per_cpu_s']:,.0f} | {r['wall_s']:.1f} |"
            )
        lines.append("")
        lines.append("`split_sentences` includes tokenization.")
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
