"""Distant labels on dev splits, and the default model's training data with distant-labelled MTSamples notes.

Run from the repository (politely, on a shared machine)::

    nice python benchmarks/bench_distant.py --labels             # the distant labeler's settings, as a tagger
    nice python benchmarks/bench_distant.py --combine 300        # default data + 300 notes, lexicon labels
    nice python benchmarks/bench_distant.py --combine 1000 --self-train [--min-confidence 0.7] [--seed 14]

``--labels`` scores the lexicon labels of :mod:`share_ner.training.distant` (with HPO) directly as predictions on
chia/dev and ncbi_disease/dev (strict F1) and on negex_kit/dev (recall of the conditions that are not
normal findings), turning the labeler's guideline settings on one at a time. ``--combine N`` trains the
default model on its synthetic training data plus the last ``N`` MTSamples notes by id (the throughput
benchmark times the first ones), only their sentences holding a label, recased like the template
documents, as :mod:`share_ner.default_model.release` builds the packaged model (``--combine 0``: the synthetic
data alone); with ``--self-train`` the synthetic-only model's mentions whose tokens all reach a marginal of
``--min-confidence`` replace the lexicon labels they overlap; ``--seed`` changes the template generator's
seed. Dev splits only: these choose settings.
``--combine`` also prints chia/dev's discontiguous mentions, predicted and exactly right. Nothing is written; the
figures go to ``benchmarks/results/default_real.md`` by hand.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench_data import add_data_argument
from bench_default import discontiguous_found
from bench_default_real import CACHE, NEGEX, is_normal_finding, load_split, negex_recall

SPLITS = ("chia/dev", "ncbi_disease/dev", "bc5cdr/dev")
LABEL_SETTINGS = (
    ("every HPO name with a UMLS CUI",
     dict(phenotypes_only=False, project_lists=False, modifiers=False, icd_names=False)),
    ("phenotypic abnormalities only",
     dict(phenotypes_only=True, project_lists=False, modifiers=False, icd_names=False)),
    ("... and the project's term, finding and abbreviation lists",
     dict(project_lists=True, modifiers=False, icd_names=False)),
    ("... and body sites and disorder adjectives joined", dict(icd_names=False)),
    ("... and ICD-10-CM's short disorder names (shipped)", dict()),
    ("... and the modifiers coordinated before a match, sharing its head", dict(coordinations=True)),
)


def negex_label_recall(docs: Mapping[str, Any], gold: Mapping[str, list[Any]],
                       pred: Mapping[str, list[Any]]) -> tuple[float, float]:
    n = overlap = strict = 0
    for doc_id, doc in docs.items():
        for g in gold[doc_id]:
            if is_normal_finding(" ".join(doc.text[s:e] for s, e in g.spans)):
                continue
            found = pred.get(doc_id, [])
            n += 1
            overlap += any(g.overlaps(p) for p in found)
            strict += any(p.spans == g.spans for p in found)
    return overlap / max(n, 1), strict / max(n, 1)


def label_table(data: Path) -> list[str]:
    from share_ner.eval.scoring import score
    from share_ner.lexicons import default_lexicon
    from share_ner.training.distant import DistantConfig, label_notes

    lexicon = default_lexicon()
    corpora = {split: load_split(data, split) for split in ("chia/dev", "ncbi_disease/dev", NEGEX)}
    lines = ["| distant labels | chia/dev strict F1 (P / R) | ncbi_disease/dev strict F1 | "
             "negex_kit/dev non-normal overlap / strict |", "|---|---|---|---|"]
    for label, changes in LABEL_SETTINGS:
        config = DistantConfig(**changes)
        cells = []
        for split, (docs, gold) in corpora.items():
            pred = label_notes(docs, lexicon, config)
            if split == NEGEX:
                cells.append("{:.3f} / {:.3f}".format(*negex_label_recall(docs, gold, pred)))
            else:
                s = score(gold, pred).strict
                cells.append(f"{s.f1:.3f} ({s.precision:.3f} / {s.recall:.3f})" if split == "chia/dev" else
                             f"{s.f1:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    return lines


def combined_model(data: Path, n_notes: int, self_train: bool, min_confidence: float | None, out: Path,
                   seed: int | None = None, synthetic_weight: int | None = None, coordinations: bool = False,
                   derived: bool | None = None, changes: Sequence[str] = ()) -> Path:
    """The packaged model's training with these changes (``changes``: ``KEY=VALUE`` generator settings); None:
    the packaged model's setting."""
    import json

    from share_ner.default_model.build import DEFAULT_NOTES, DEFAULT_SYNTH, default_model_dir
    from share_ner.default_model.release import distant_notes, release_notes, train_combined
    from share_ner.default_model.synthetic import training_data
    from share_ner.training.distant import DistantConfig

    synth = DEFAULT_SYNTH if seed is None else replace(DEFAULT_SYNTH, seed=seed)
    if derived is not None:
        synth = replace(synth, derived_names=derived)
    synth = replace(synth, **{k: json.loads(v) for k, v in (c.split("=", 1) for c in changes)})
    docs, gold = training_data(synth)
    notes = release_notes(data / "mtsamples" / "raw" / "notes", n_notes)
    seed_model = default_model_dir(synth=synth, cache=CACHE, packaged=False) if self_train else None
    if min_confidence is None:
        min_confidence = DEFAULT_NOTES.min_confidence
    if synthetic_weight is None:
        synthetic_weight = DEFAULT_NOTES.synthetic_weight
    note_docs, labels = distant_notes(notes, seed_model, synth, min_confidence,
                                      DistantConfig(coordinations=coordinations))
    print(f"{len(notes)} MTSamples notes, {sum(map(len, labels.values()))} labels", file=sys.stderr, flush=True)
    # without notes the default before: the synthetic data once
    return train_combined(docs, gold, note_docs, labels, out, synth, synthetic_weight if n_notes else 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--labels", action="store_true", help="score the distant labeler's settings")
    parser.add_argument("--combine", type=int, metavar="N", help="default data + N distant-labelled notes")
    parser.add_argument("--self-train", action="store_true", help="--combine: the default's confident mentions too")
    parser.add_argument("--min-confidence", type=float, help="--self-train marginal (default: the packaged model's)")
    parser.add_argument("--synthetic-weight", type=int,
                        help="--combine N > 0: the synthetic data's copies (default: the packaged model's)")
    parser.add_argument("--coordinations", action="store_true", help="--combine: coordinated modifiers' labels")
    parser.add_argument("--derived", choices=("on", "off"),
                        help="--combine: the lexicons' derived adjectives (derived_names) on or off (default: shipped)")
    parser.add_argument("--seed", type=int, help="--combine: the template generator's seed (default: the shipped one)")
    parser.add_argument("--synth", nargs="*", default=[], metavar="KEY=VALUE",
                        help="--combine: these generator settings changed (disease_names=false)")
    parser.add_argument("--model-out", type=Path, default=CACHE / "combined", help="--combine: model directory")
    args = parser.parse_args(argv)
    from share_ner.eval.scoring import score
    from share_ner.pipeline import Pipeline

    if args.labels:
        label_table(args.data)
    if args.combine is not None:
        started = time.process_time()
        pipeline = Pipeline.load(combined_model(args.data, args.combine, args.self_train, args.min_confidence,
                                                args.model_out, args.seed, args.synthetic_weight, args.coordinations,
                                                None if args.derived is None else args.derived == "on", args.synth))
        print(f"trained in {time.process_time() - started:.0f} CPU s", file=sys.stderr)
        g = negex_recall(pipeline, args.data)["groups"]
        (n, o, s), (nc, oc, sc) = g["non-normal"], g["capitals"]
        cells = [f"{o / n:.3f} / {s / n:.3f} ({oc / nc:.3f} / {sc / nc:.3f})"]
        for split in SPLITS:
            docs, gold = load_split(args.data, split)
            pred = {k: pipeline.tag(d) for k, d in docs.items()}
            cells.append(f"{score(gold, pred).strict.f1:.3f}")
            if split == "chia/dev":
                predicted = sum(m.is_discontiguous for ms in pred.values() for m in ms)
                n_gold = sum(m.is_discontiguous for ms in gold.values() for m in ms)
                print(f"chia/dev discontiguous: {predicted} predicted, {discontiguous_found(gold, pred)} of {n_gold} "
                      "exact", file=sys.stderr)
        print(f"| {args.combine} notes{', self-trained' if args.self_train else ''} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
