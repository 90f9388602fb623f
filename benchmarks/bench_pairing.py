"""The learned pairing against the rules it replaces, on dev splits only (train on chia/train, tag chia/dev).

A model trained by ``share-ner train`` with the defaults (fragment tags, learned pairing; ``--no-normalizer``; the
learned coordination classifier's row trains its own with ``"learned_coordinations": true``, the same CRF), its
tags decoded four ways: the learned fragment pairing with the known-term coordination rule (the
default), with the learned coordination classifier instead, with no coordination step, and the decoding rules of
``share_ner.tagging.scheme`` (with their lone-fragment and coordination repairs) on the same fragment tags. A
rule stays only where it beats the learned step here. Writes ``benchmarks/results/pairing.md``::

    nice python benchmarks/bench_pairing.py [--data DIR] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from bench_data import RESULTS_DIR, add_data_argument, write_results

RESULTS = RESULTS_DIR / "pairing.md"
COMMAND = "nice python benchmarks/bench_pairing.py"
# decoding -> (training settings, tagging settings; None: the decoding rules)
VARIANTS = {
    "learned pairing + known-term coordination rule (default)": ({}, {}),
    "learned pairing + learned coordination classifier": ({"learned_coordinations": True}, {}),
    "learned pairing, no coordination step": ({}, {"expand_coordinations": False}),
    "decoding rules on the same fragment tags": ({}, None),
}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if not (args.data / "README.md").exists():
        print(f"bench_pairing: {args.data} not found; nothing to measure", file=sys.stderr)
        return 0
    from share_ner.eval.scoring import score
    from share_ner.formats import read_annotations
    from share_ner.inputs.files import read_notes
    from share_ner.pipeline import Pipeline

    train, dev = args.data / "chia" / "train", args.data / "chia" / "dev"
    docs = read_notes(dev / "text")
    gold = read_annotations(dev / "gold", docs)
    gold = {d: gold.get(d, []) for d in docs}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-pairing-") as tmp:
        models: dict[str, Path] = {}
        for name, (settings, change) in VARIANTS.items():
            key = json.dumps(settings, sort_keys=True)
            if key not in models:  # the same settings train the same model
                models[key] = model = Path(tmp) / f"model{len(models)}"
                config = Path(tmp) / f"config{len(models)}.json"
                config.write_text(key, encoding="utf-8")
                subprocess.run([sys.executable, "-m", "share_ner.cli", "train", "--text", str(train / "text"),
                                "--gold", str(train / "gold"), "--model", str(model), "--config", str(config),
                                "--no-normalizer", "--quiet"], check=True)
            pipeline = Pipeline.load(models[key])
            tagger = pipeline.tagger
            if change is None:
                tagger.pairing = None
            else:
                tagger.config = replace(tagger.config, **change)
            sc = score(gold, {d: pipeline.tag(doc) for d, doc in docs.items()})
            rows.append((name, sc))
            print(f"{name}: strict F1 {sc.strict.f1:.3f} disc. F1 {sc.discontiguous.f1:.3f}", file=sys.stderr)
    lines = ["# Learned pairing against the rules (chia/dev)", "",
             f"Command: `{COMMAND}`. Trained on chia/train by `share-ner train` with the defaults "
             "(`--no-normalizer`); chia/dev tagged by the same CRF, its fragments joined in each of the ways below. "
             "`disc.` = strict "
             "on the discontiguous mentions alone (103 gold).", "",
             "| decoding | strict P | strict R | strict F1 | relaxed F1 | disc. P | disc. R | disc. F1 "
             "| disc. TP / predicted |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, sc in rows:
        d = sc.discontiguous
        lines.append(f"| {name} | {sc.strict.precision:.3f} | {sc.strict.recall:.3f} | **{sc.strict.f1:.3f}** "
                     f"| {sc.relaxed.f1:.3f} | {d.precision:.3f} | {d.recall:.3f} | **{d.f1:.3f}** "
                     f"| {d.tp} / {d.tp + d.fp} |")
    write_results(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
