"""Benchmark the scorer on every converted corpus split, and time the significance test.

For each ``<corpus>/<split>`` of the corpora directory (``--data``, see ``bench_data.py``):
read the gold (checked against the notes), score it against itself (every
figure must be 1.0) and against a seeded perturbed copy (boundaries shifted,
mentions dropped and added, CUIs changed), test self against perturbed by
approximate randomization, and time each step. Then time 10,000 shuffles over
100 notes. Prints a table and writes ``benchmarks/results/corpora.md``::

    nice python benchmarks/bench_corpora.py [--data DIR] [--out FILE] [--seed S] [--shuffles N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from bench_data import RESULTS_DIR, add_data_argument

from share_ner.document import CUI_LESS, Document, Mention
from share_ner.eval.counting import count_corpus
from share_ner.eval.scoring import Scores
from share_ner.eval.significance import approximate_randomization
from share_ner.formats import read_annotations, write_annotations
from share_ner.inputs.files import read_notes

RESULTS = RESULTS_DIR / "corpora.md"


@dataclass(frozen=True)
class Perturbation:
    """Rates applied independently to each gold mention (``add`` per gold mention too)."""

    shift: float = 0.10
    drop: float = 0.10
    add: float = 0.10
    change_cui: float = 0.10


def _shift(m: Mention, n_chars: int, rng: random.Random) -> Mention | None:
    # move one end of the first or last fragment by 1-3 characters, staying a valid mention
    spans = [list(sp) for sp in m.spans]
    k, end = (0, 0) if rng.random() < 0.5 else (len(spans) - 1, 1)
    spans[k][end] += rng.choice([-3, -2, -1, 1, 2, 3])
    spans[k][end] = min(max(spans[k][end], 0), n_chars)
    try:
        shifted = Mention(m.doc_id, tuple((s, e) for s, e in spans), m.cui, m.type)
    except ValueError:
        return None
    return shifted if shifted.spans != m.spans else None


def perturb(
    gold: Mapping[str, Sequence[Mention]],
    notes: Mapping[str, Document],
    seed: int,
    rates: Perturbation = Perturbation(),
) -> dict[str, list[Mention]]:
    """A seeded noisy copy of ``gold``: shifted boundaries, dropped and added mentions, changed CUIs."""
    rng = random.Random(seed)
    cuis = sorted({m.cui for ms in gold.values() for m in ms} | {CUI_LESS, "C0000000"})
    out: dict[str, list[Mention]] = {}
    for doc_id in sorted(gold):
        n_chars = len(notes[doc_id].text)
        pred: list[Mention] = []
        for m in gold[doc_id]:
            if rng.random() < rates.drop:
                continue
            if rng.random() < rates.shift:
                m = _shift(m, n_chars, rng) or m
            if rng.random() < rates.change_cui:
                m = m.with_cui(rng.choice([c for c in cuis if c != m.cui]))
            pred.append(m)
            if rng.random() < rates.add and n_chars > 2:
                start = rng.randrange(0, n_chars - 1)
                end = min(n_chars, start + rng.randint(2, 15))
                pred.append(Mention(doc_id, ((start, end),), rng.choice(cuis)))
        out[doc_id] = pred
    return out


def round_trips(gold: Mapping[str, Sequence[Mention]], notes: Mapping[str, Document]) -> bool:
    """Write the gold as BRAT and as JSON Lines, read both back checked against the notes: same mentions?"""
    ok = True
    for fmt in ("brat", "jsonl"):
        with tempfile.TemporaryDirectory() as tmp:
            for doc_id, ms in gold.items():
                write_annotations(tmp, notes[doc_id], ms, fmt)
            ok = ok and read_annotations(tmp, notes) == gold
    return ok


def find_splits(data: Path) -> list[Path]:
    """``<corpus>/<split>`` directories that hold both ``text/`` and ``gold/``."""
    return sorted(p.parent for p in data.glob("*/*/gold") if (p.parent / "text").is_dir())


def bench_split(split: Path, seed: int, n_shuffles: int) -> dict[str, object]:
    """Score one split against itself and a perturbed copy; return the table row."""
    t0 = time.perf_counter()
    notes = read_notes(split / "text")
    gold = read_annotations(split / "gold", notes)
    t_read = time.perf_counter() - t0

    t0 = time.perf_counter()
    self_counts = count_corpus(gold, gold)
    t_score = time.perf_counter() - t0
    self_scores = Scores.from_counts(self_counts)
    ones = [self_scores.strict.f1, self_scores.relaxed.f1, self_scores.accuracy_strict, self_scores.accuracy_relaxed]

    t0 = time.perf_counter()
    trip = round_trips(gold, notes)
    t_trip = time.perf_counter() - t0

    noisy = perturb(gold, notes, seed)
    noisy_counts = count_corpus(gold, noisy)
    sc = Scores.from_counts(noisy_counts)

    t0 = time.perf_counter()
    sig = approximate_randomization(self_counts.table, noisy_counts.table, n_shuffles=n_shuffles, seed=seed)
    t_sig = time.perf_counter() - t0
    return {
        "split": f"{split.parent.name}/{split.name}",
        "notes": len(gold),
        "gold": self_scores.n_gold,
        "discontiguous": sum(m.is_discontiguous for ms in gold.values() for m in ms),
        "self_all_one": all(v == 1.0 for v in ones),
        "round_trip": trip,
        "trip_s": t_trip,
        "pred": sc.n_pred,
        "strict_f1": sc.strict.f1,
        "relaxed_f1": sc.relaxed.f1,
        "acc_strict": sc.accuracy_strict,
        "acc_relaxed": sc.accuracy_relaxed,
        "p_strict_f1": sig["strict_f1"].p_value,
        "read_s": t_read,
        "score_s": t_score,
        "sig_s": t_sig,
    }


def time_shuffles(n_notes: int = 100, n_shuffles: int = 10_000, seed: int = 0, repeats: int = 3) -> float:
    """Best wall time of the four-metric test over ``n_notes`` notes of random counts."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 40, n_notes)
    tables = []
    for _ in range(2):
        pred = rng.integers(0, 40, n_notes)
        relaxed = np.minimum(gold, pred) - rng.integers(0, 3, n_notes).clip(0)
        relaxed = relaxed.clip(0)
        strict = (relaxed * rng.uniform(0.6, 1.0, n_notes)).astype(int)
        correct = (strict * rng.uniform(0.5, 1.0, n_notes)).astype(int)
        tables.append(np.stack([gold, pred, strict, relaxed, correct], axis=1))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        approximate_randomization(tables[0], tables[1], n_shuffles=n_shuffles, seed=seed)
        best = min(best, time.perf_counter() - t0)
    return best


def format_markdown(rows: list[dict[str, object]], shuffle_seconds: float, args: argparse.Namespace) -> str:
    r = Perturbation()
    lines = [
        "# Scorer benchmark on the converted corpora",
        "",
        f"Command: `nice python benchmarks/bench_corpora.py --seed {args.seed} --shuffles {args.shuffles}`",
        "",
        f"Perturbed copy (seed {args.seed}), each rate per gold mention: shift one boundary by 1-3 characters "
        f"{r.shift:.0%}, drop {r.drop:.0%}, add a random 2-15 character span {r.add:.0%}, "
        f"change the CUI {r.change_cui:.0%}. `self = 1` checks that gold scored against itself gives 1.0 for "
        f"strict F1, relaxed F1 and both accuracies; `round trip` that writing the gold as BRAT and as JSON Lines and "
        f"reading each back (spans and mention texts checked against the notes) gives the same mentions. p is the approximate-randomization p-value of gold vs "
        f"perturbed on strict F1 ({args.shuffles} shuffles). Expected from the rates alone: predicted "
        f"= (1 - drop)(1 + add) = 0.99 of gold, strict TP = (1 - drop)(1 - shift) = 0.81, so strict F1 "
        f"~ 2(0.81)/1.99 = 0.814, relaxed F1 ~ 2(0.90)/1.99 = 0.905 (a little more when an added span "
        f"happens to overlap a missed mention), strict accuracy ~ 0.81 x 0.9 = 0.729, relaxed accuracy ~ 0.9.",
        "",
        "| split | notes | gold | discont. | self = 1 | round trip | pred | strict F1 | relaxed F1 | acc. strict "
        "| acc. relaxed | p (strict F1) | read s | score s | test s | round trip s |",
        "|---|---:|---:|---:|:---:|:---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['split']} | {row['notes']} | {row['gold']} | {row['discontiguous']} | "
            f"{'yes' if row['self_all_one'] else 'NO'} | {'yes' if row['round_trip'] else 'NO'} | {row['pred']} | {row['strict_f1']:.3f} | "
            f"{row['relaxed_f1']:.3f} | {row['acc_strict']:.3f} | {row['acc_relaxed']:.3f} | "
            f"{row['p_strict_f1']:.4f} | {row['read_s']:.2f} | {row['score_s']:.2f} | {row['sig_s']:.2f} | "
            f"{row['trip_s']:.2f} |"
        )
    lines += [
        "",
        f"Significance test speed: 10,000 shuffles over 100 notes, all four metrics: "
        f"**{shuffle_seconds:.3f} s** (best of 3).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--out", type=Path, default=RESULTS, help="markdown results file")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--shuffles", type=int, default=1000, help="shuffles for each split's test")
    args = parser.parse_args(argv)
    splits = find_splits(args.data)
    if not splits:
        print(f"no <corpus>/<split>/gold under {args.data}", file=sys.stderr)
        return 2
    rows = []
    for split in splits:
        rows.append(bench_split(split, args.seed, args.shuffles))
        row = rows[-1]
        print(
            f"{row['split']:<20} notes {row['notes']:>5} gold {row['gold']:>6} self=1 {row['self_all_one']!s:<5} "
            f"round trip {row['round_trip']!s:<5} "
            f"strict {row['strict_f1']:.3f} relaxed {row['relaxed_f1']:.3f} acc {row['acc_strict']:.3f}/"
            f"{row['acc_relaxed']:.3f} p {row['p_strict_f1']:.4f} score {row['score_s']:.2f}s "
            f"test {row['sig_s']:.2f}s",
            flush=True,
        )
    seconds = time_shuffles()
    print(f"10,000 shuffles over 100 notes: {seconds:.3f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(format_markdown(rows, seconds, args), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if all(r["self_all_one"] and r["round_trip"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
