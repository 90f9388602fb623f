"""Where discontiguous recall is lost on a dev split: each gold discontiguous mention of chia/dev, tagged by a model
trained on chia/train with the defaults, sorted by what the CRF's tags did to it and by its linguistic pattern.

Tag outcome (the CRF's tags on the mention's tokens against the fragment tags of the gold mentions):

* ``found``: the system's output has the mention (strict);
* ``tags right, pairing wrong``: every token of the mention carries its gold fragment tag, the pairing (or a repair)
  did not join them;
* ``tags partly D/H``: some of its tokens carry D/H tags, some not their gold tag;
* ``tagged contiguous``: its tokens are inside B/I fragments (a conjunct read as a mention of its own, or the hull
  as one mention) and carry no D/H tag;
* ``untagged``: all its tokens are outside (O);
* ``not in one sentence`` (the sentence splitter cut it).

Pattern (from the gold mention and the text): ``coordination`` when a coordinator (and, or, a comma, a slash) lies
between its parts, ``parenthetical`` a bracket, ``other`` neither (a verb or a preposition phrase between); the
shared part (the tokens it shares with another gold mention) on the ``right`` (``renal or liver [impairment]``), the
``left`` (``[hepatitis] B or C``), both, or ``none``; and ``parts`` (2 or 3+). For the mentions the CRF left
untagged or partly tagged, the mean CRF marginal of the gold tag on their tokens (CRFsuite's forward-backward,
``Tagger.marginal``) tells whether a decoding that reads marginals could propose them. Writes
``benchmarks/results/disc_errors.md``::

    nice python benchmarks/bench_disc_errors.py [--data DIR] [--out FILE] [--model DIR]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Sequence

from bench_data import RESULTS_DIR, dev_args, read_split, write_results

RESULTS = RESULTS_DIR / "disc_errors.md"
COMMAND = "nice python benchmarks/bench_disc_errors.py"


def _outcome(pred: Sequence[str], gold: Sequence[str], idx: Sequence[int]) -> str:
    if all(pred[i] == gold[i] for i in idx):
        return "tags right, pairing wrong"
    if all(pred[i] == "O" for i in idx):
        return "untagged"
    if any(pred[i] != "O" and pred[i][0] in "DH" for i in idx):
        return "tags partly D/H"
    return "tagged contiguous"


def _pattern(words: Sequence[str], idx: Sequence[int], others: Sequence[Sequence[int]]) -> tuple[str, str, str]:
    from share_ner.features.coordination import COORDINATORS
    from share_ner.tagging.scheme import _runs

    runs = _runs(idx)
    gap = [words[i].lower() for (_, b), (a, _) in zip(runs, runs[1:]) for i in range(b + 1, a)]
    if any(w in ("(", ")", "[", "]") for w in gap):
        kind = "parenthetical"
    elif any(w in COORDINATORS for w in gap):
        kind = "coordination"
    else:
        kind = "other"
    shared = {i for o in others for i in o} & set(idx)
    first, last = set(range(runs[0][0], runs[0][1] + 1)), set(range(runs[-1][0], runs[-1][1] + 1))
    left, right = bool(shared & first), bool(shared & last)
    side = "both" if left and right else ("left" if left else ("right" if right else "none"))
    return kind, side, "2" if len(runs) == 2 else "3+"


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--model", type=Path)
    known, rest = pre.parse_known_args(argv)
    args = dev_args(__doc__, "bench_disc_errors", RESULTS, rest)
    if args is None:
        return 0
    from share_ner.eval.scoring import score
    from share_ner.pipeline import Pipeline
    from share_ner.tagging.crf import doc_sequences
    from share_ner.tagging.scheme import encode_report, mention_tokens

    train, dev = args.data / "chia" / "train", args.data / "chia" / "dev"
    docs, gold = read_split(dev)
    with tempfile.TemporaryDirectory(prefix="bench-disc-errors-") as tmp:
        model = known.model
        if model is None:
            model = Path(tmp) / "model"
            subprocess.run([sys.executable, "-m", "share_ner.cli", "train", "--text", str(train / "text"),
                            "--gold", str(train / "gold"), "--model", str(model), "--no-normalizer", "--quiet"],
                           check=True)
        pipeline = Pipeline.load(model)
    tagger = pipeline.tagger
    predicted = {d: pipeline.tag(doc) for d, doc in docs.items()}
    sc = score(gold, predicted)
    outcomes: Counter = Counter()
    patterns: Counter = Counter()
    marginals: dict[str, list[float]] = {}
    fp_patterns: Counter = Counter()
    examples: dict[str, list[str]] = {}
    missed_in: Counter = Counter()  # note -> gold discontiguous mentions missed
    for doc_id, doc in docs.items():
        found = {m.spans for m in predicted[doc_id]}
        disc = [m for m in gold[doc_id] if m.is_discontiguous]
        pred_disc = [m for m in predicted[doc_id] if m.is_discontiguous and m.spans not in
                     {g.spans for g in gold[doc_id]}]
        if not disc and not pred_disc:
            continue
        for sentence, items in doc_sequences(doc, tagger.resources, tagger.config.features, tagger.config.coordination):
            inside = [m for m in gold[doc_id] if sentence.start <= m.start and m.end <= sentence.end]
            here = [m for m in disc if sentence.start <= m.start < sentence.end]
            wrong = [m for m in pred_disc if sentence.start <= m.start and m.end <= sentence.end]
            words = [t.text for t in sentence.tokens]
            idx_of = {m: mention_tokens(sentence, m) for m in inside}
            token_sets = [got[0] for got in idx_of.values() if got and got[0]]
            for m in wrong:
                got = mention_tokens(sentence, m)
                if got and got[0]:
                    kind, side, parts = _pattern(words, got[0], [t for t in token_sets])
                    fp_patterns[kind] += 1
            if not here:
                continue
            gold_tags = encode_report(sentence, inside, pairing="learned").tags
            tagger.crf.set(items)
            pred_tags = tagger.crf.tag()
            for m in here:
                if m.end > sentence.end:
                    outcomes[("not in one sentence", "-", "-", "-")] += 1
                    continue
                idx = idx_of[m][0]
                others = [t for t in token_sets if t != idx]
                kind, side, parts = _pattern(words, idx, others)
                outcome = "found" if m.spans in found else _outcome(pred_tags, gold_tags, idx)
                outcomes[(outcome, kind, side, parts)] += 1
                if outcome != "found":
                    missed_in[doc_id] += 1
                patterns[(kind, side, parts, outcome == "found")] += 1
                if outcome in ("untagged", "tags partly D/H", "tagged contiguous"):
                    p = sum(tagger.crf.marginal(gold_tags[i], i) for i in idx) / len(idx)
                    marginals.setdefault(outcome, []).append(p)
                text = " ".join(f"[{w}]" if i in idx else w for i, w in enumerate(words))
                examples.setdefault(f"{outcome} / {kind} / {side}", []).append(
                    text + "  |  " + " ".join(pred_tags[i] for i in range(min(idx), max(idx) + 1)))
    total = sum(outcomes.values())
    by_outcome: Counter = Counter()
    for (o, *_), n in outcomes.items():
        by_outcome[o] += n
    lines = ["# Where discontiguous recall is lost (chia/dev)", "",
             f"Command: `{COMMAND}`. Trained on chia/train by `share-ner train` with the defaults "
             "(`--no-normalizer`); chia/dev tagged. The outcomes and patterns are defined in the script's docstring. "
             f"The model: strict F1 {sc.strict.f1:.3f}, discontiguous P {sc.discontiguous.precision:.3f} "
             f"R {sc.discontiguous.recall:.3f} F1 {sc.discontiguous.f1:.3f} ({sc.discontiguous.tp} of "
             f"{total} gold, {sc.discontiguous.tp + sc.discontiguous.fp} predicted).", "",
             "| outcome | gold disc. mentions | mean marginal of the gold tags |", "|---|---:|---:|"]
    for o, n in by_outcome.most_common():
        ms = marginals.get(o)
        lines.append(f"| {o} | {n} | {sum(ms) / len(ms):.2f} |" if ms else f"| {o} | {n} | |")
    lines += ["", "By pattern (gap between the parts / side of the shared part / parts):", "",
              "| gap | shared part | parts | gold | found | recall |", "|---|---|---|---:|---:|---:|"]
    keys = sorted({k[:3] for k in patterns}, key=lambda k: (-(patterns[(*k, True)] + patterns[(*k, False)]), k))
    for k in keys:
        hit, miss = patterns[(*k, True)], patterns[(*k, False)]
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {hit + miss} | {hit} | {hit / (hit + miss):.2f} |")
    lines += ["", "Outcome by pattern (the mentions not found):", "",
              "| outcome | gap | shared part | parts | mentions |", "|---|---|---|---|---:|"]
    for (o, kind, side, parts), n in sorted(outcomes.items(), key=lambda x: (-by_outcome[x[0][0]], -x[1], x[0])):
        if o != "found":
            lines.append(f"| {o} | {kind} | {side} | {parts} | {n} |")
    lines += ["", "Wrong discontiguous mentions predicted, by the gap between their parts: "
              + ", ".join(f"{k} {n}" for k, n in fp_patterns.most_common()) + ".",
              "", f"The {sum(missed_in.values())} mentions missed lie in {len(missed_in)} notes; the three notes with "
              f"most hold {', '.join(str(n) for _, n in missed_in.most_common(3))} of them."]
    write_results(args.out, "\n".join(lines) + "\n")
    for k, v in sorted(examples.items()):
        print(f"== {k} ({len(v)})", file=sys.stderr)
        for line in v[:12]:
            print("   " + line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
