"""The learned pairing and the ideas around it for discontiguous recall, on dev splits only (train on chia/train,
tag chia/dev).

A model trained by ``share-ner train`` with the defaults (fragment tags, learned pairing; ``--no-normalizer``), its
tags decoded in several ways: the default decoding; without its three-fragment candidates or its re-reading of lone
D fragments (``PairingModel.max_parts`` / ``reread``); with the learned coordination classifier instead of the
known-term rule (its own model, ``"learned_coordinations": true``), with no coordination step; the decoding rules of
``share_ner.tagging.scheme`` on the same fragment tags; with the list walk (its own model, ``"list_walk": true``,
also checked by two-fold cross-validation of chia/train); the learned coordination classifier accepting from a higher
threshold; a bias towards the D/H tags added to every token's emission
scores (the weights of the ``bias`` attribute every token carries; the few sentences tagged by CRFsuite itself keep
the model's own weights); and models trained with the sentences holding D/H tags repeated
(``oversample_discontiguous``); the fragment pairing trained on the CRF's own fragments of held-out halves of
chia/train (jackknifed, alone or with the gold fragment tags) instead of the gold fragment tags; and a model with the
list features (``"features": {"coordination_lists": true}``, ``share_ner.features.lists``; also checked by two-fold
cross-validation of chia/train); the CRF's training settings (iterations, context window, feature minimum frequency,
L-BFGS) for discontiguous F1; the D/H bias added only to the tokens within two of a coordinator (the tagger's own
set, ``share_ner.features.coordination.COORDINATORS``); and posterior decoding: the sentences with a coordinator
decoded again with the D/H tags forced on every token whose posterior mass on them reaches a threshold
(forward-backward on the emission and transition scores times a sharpness factor, since passive-aggressive weights
are no log-probabilities), their discontiguous mentions added to the default's. A rule stays only where it beats
the learned step here. Writes ``benchmarks/results/pairing.md``::

    nice python benchmarks/bench_pairing.py [--data DIR] [--out FILE]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator, Sequence

from bench_data import RESULTS_DIR, dev_args, read_split, write_results

RESULTS = RESULTS_DIR / "pairing.md"
COMMAND = "nice python benchmarks/bench_pairing.py"
DEFAULT = "learned pairing + known-term coordination rule (default)"
# decoding -> (training settings, decoding changes: "config" (tagger settings), "pairing" (PairingModel fields),
# "bias" (added to the D/H emission scores), "coordination_bias" (bias, tokens either side of a coordinator),
# "posterior" (sharpness, posterior threshold), "coordination_threshold" (the coordination classifier's own
# threshold); None: the decoding rules)
VARIANTS: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
    DEFAULT: ({}, {}),
    "default + list walk (`list_walk`)": ({"list_walk": True}, {}),
    "learned pairing, pairs only (no three-fragment candidates)": ({}, {"pairing": {"max_parts": 2}}),
    "learned pairing, lone D fragments not re-read": ({}, {"pairing": {"reread": False}}),
    "learned pairing, pairs only and no re-reading": ({}, {"pairing": {"max_parts": 2, "reread": False}}),
    "learned pairing + learned coordination classifier": ({"learned_coordinations": True}, {}),
    "learned pairing + learned coordination classifier, threshold 0.8": ({"learned_coordinations": True},
                                                                          {"coordination_threshold": 0.8}),
    "learned pairing + learned coordination classifier, threshold 0.9": ({"learned_coordinations": True},
                                                                          {"coordination_threshold": 0.9}),
    "learned pairing, no coordination step": ({}, {"config": {"expand_coordinations": False}}),
    "decoding rules on the same fragment tags": ({}, None),
    "default, D/H emission bias +0.1": ({}, {"bias": 0.1}),
    "default, D/H emission bias +0.2": ({}, {"bias": 0.2}),
    "default, D/H emission bias +0.4": ({}, {"bias": 0.4}),
    "default, D/H emission bias +0.2 within two tokens of a coordinator": ({}, {"coordination_bias": (0.2, 2)}),
    "default, D/H emission bias +0.4 within two tokens of a coordinator": ({}, {"coordination_bias": (0.4, 2)}),
    "default + posterior decoding (sharpness 5, D/H mass 0.3)": ({}, {"posterior": (5.0, 0.3)}),
    "default + posterior decoding (sharpness 5, D/H mass 0.1)": ({}, {"posterior": (5.0, 0.1)}),
    "default, sentences with D/H tags trained twice": ({"oversample_discontiguous": 2}, {}),
    "default, sentences with D/H tags trained 3 times": ({"oversample_discontiguous": 3}, {}),
    "default, pairing trained on predicted fragments (jackknifed)": ({}, {"pairing_from": "predicted"}),
    "default, pairing trained on gold and predicted fragments (jackknifed)": ({}, {"pairing_from": "both"}),
    "default + list features (`coordination_lists`)": ({"features": {"coordination_lists": True}}, {}),
    "default, 20 passive-aggressive iterations (default 30)": ({"max_iterations": 20}, {}),
    "default, 50 passive-aggressive iterations": ({"max_iterations": 50}, {}),
    "default, context window of 3 tokens (default 2)": ({"features": {"window_size": 3}}, {}),
    "default, features seen at least twice (`min_feature_freq` 2)": ({"min_feature_freq": 2}, {}),
    "default, L-BFGS (c1 = c2 = 0.05, 150 iterations)": ({"algorithm": "lbfgs"}, {}),
}


def _biased(tagger: Any, bias: float) -> None:
    """Add ``bias`` to the D/H labels' weight of the attribute every token carries (so to every token's emission
    scores) and rebuild the tagger's score table."""
    from share_ner.features.scores import ScoreTable

    weights = tagger.weights
    row = weights.attributes[b"bias"]
    for label in ("DB", "DI", "HB", "HI"):
        weights.state[row, weights.labels.index(label)] += bias
    tagger.scores = ScoreTable(weights.attributes, weights.state)


@contextmanager
def _patched(name: str, wrap: Callable[[Any], Any] | None) -> Iterator[None]:
    """While open, the function ``name`` of ``share_ner.tagging.crf`` is ``wrap`` of the original (None: the
    original); the original is back on exit."""
    import share_ner.tagging.crf as crf

    original = getattr(crf, name)
    if wrap is not None:
        setattr(crf, name, wrap(original))
    try:
        yield
    finally:
        setattr(crf, name, original)


def _coordination_bias(change: tuple[float, int] | None) -> ContextManager[None]:
    """While open, the tagger's emission scores get ``bias`` added to the D/H labels of the tokens within ``window``
    of a coordinator (the coordinator itself excepted)."""
    import numpy as np

    from share_ner.features.coordination import COORDINATORS

    def wrap(emissions: Callable[..., Any]) -> Callable[..., Any]:
        def biased(doc: Any, resources: Any, features: Any, table: Any, coordination: bool = False) -> Any:
            sentences, scores, extras = emissions(doc, resources, features, table, coordination)
            bias, window = change  # type: ignore[misc]
            labels = resources.weights.labels
            columns = [labels.index(label) for label in ("DB", "DI", "HB", "HI")]
            rows: list[int] = []
            start = 0
            for sentence in sentences:
                words = [t.text.lower() for t in sentence.tokens]
                near = {j for i, w in enumerate(words) if w in COORDINATORS
                        for j in range(max(0, i - window), min(len(words), i + window + 1)) if j != i}
                rows += [start + j for j in sorted(near)]
                start += len(words)
            if rows:
                scores = scores.copy()
                scores[np.ix_(np.array(rows, dtype=np.intp), columns)] += bias
            return sentences, scores, extras

        return biased

    return _patched("doc_emissions", wrap if change is not None else None)


def _posterior_tag(pipeline: Any, doc: Any, sharpness: float, threshold: float) -> list:
    """The default's mentions of ``doc`` and the discontiguous mentions of its sentences with a coordinator decoded
    with the D/H tags forced where their posterior mass reaches ``threshold``."""
    import numpy as np
    from scipy.special import logsumexp

    import share_ner.tagging.crf as crf
    from share_ner.features.coordination import COORDINATORS
    from share_ner.tagging.weights import viterbi

    tagger = pipeline.tagger
    config = tagger.config
    labels = list(tagger.weights.labels)
    dh = [labels.index(label) for label in ("DB", "DI", "HB", "HI")]
    other = [i for i in range(len(labels)) if i not in dh]
    trans = np.asarray(tagger.weights.transitions)
    t = trans * sharpness
    resources, coordinations = tagger.decoding()
    kept: list = []
    with _emissions_kept(kept):
        found = set(pipeline.tag(doc))
    if not kept:
        return sorted(found, key=lambda m: m.spans)
    sentences, scores, _ = kept[0]
    start = 0
    for sentence in sentences:
        n = len(sentence.tokens)
        e = scores[start:start + n] * sharpness
        start += n
        if not any(tok.text.lower() in COORDINATORS for tok in sentence.tokens):
            continue
        fwd = np.empty_like(e)
        bwd = np.zeros_like(e)
        fwd[0] = e[0]
        for i in range(1, n):
            fwd[i] = e[i] + logsumexp(fwd[i - 1][:, None] + t, axis=0)
        for i in range(n - 2, -1, -1):
            bwd[i] = logsumexp(t + (e[i + 1] + bwd[i + 1])[None, :], axis=1)
        posterior = np.exp(fwd + bwd - logsumexp(fwd[-1]))
        forced = posterior[:, dh].sum(axis=1) >= threshold
        if not forced.any():
            continue
        constrained = scores[start - n:start].copy()
        constrained[np.ix_(np.flatnonzero(forced), other)] = -1e9
        path, _ = viterbi(constrained, np.array([n]), tagger.weights.transitions)
        tags = [labels[y] for y in path.tolist()]
        found.update(m for m in crf._mentions(sentence, tags, config.scheme, resources, config.balance_brackets,
                                              tagger.pairing, coordinations) if len(m.spans) > 1)
    return sorted(found, key=lambda m: m.spans)


def _emissions_kept(kept: list) -> ContextManager[None]:
    """While open, the sentences and emission scores of each note the tagger scores are appended to ``kept``."""
    def wrap(emissions: Callable[..., Any]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            out = emissions(*args, **kwargs)
            kept.append(out)
            return out

        return spy

    return _patched("doc_emissions", wrap)


def _coordination_threshold(threshold: float | None) -> ContextManager[None]:
    """While open, the learned coordination step accepts a reading from ``threshold`` on (None: the pairing's)."""
    def wrap(expand: Callable[..., Any]) -> Callable[..., Any]:
        return lambda words, tags, mentions, taken, model, lookup: expand(
            words, tags, mentions, taken, replace(model, threshold=threshold), lookup)

    return _patched("expand", wrap if threshold is not None else None)


def _tags_seen(seen: list) -> ContextManager[None]:
    """While open, each sentence the tagger decodes is appended to ``seen`` with its CRF tags."""
    def wrap(mentions: Callable[..., Any]) -> Callable[..., Any]:
        def spy(sentence: Any, tags: list[str], *args: Any, **kwargs: Any) -> Any:
            seen.append((sentence, list(tags)))
            return mentions(sentence, tags, *args, **kwargs)

        return spy

    return _patched("_mentions", wrap)


def _add_examples(examples: dict[str, Any], seen: list, mentions: list, lookup: Any) -> None:
    """The pairing's training examples of a held-out note's sentences: from the fragments the CRF predicted
    (``predicted``), and from those and the gold fragment tags (``both``)."""
    from share_ner.tagging.scheme import encode_report, mention_tokens

    for sentence, tags in seen:
        inside = [m for m in mentions if sentence.start <= m.start and m.end <= sentence.end]
        gold_idx = [got[0] for got in (mention_tokens(sentence, m) for m in inside) if got and got[0]]
        words = [t.text for t in sentence.tokens]
        examples["predicted"].add(words, tags, gold_idx, lookup)
        examples["both"].add(words, tags, gold_idx, lookup)
        examples["both"].add(words, list(encode_report(sentence, inside, pairing="learned").tags), gold_idx, lookup)


def _cross_validated(train: Path, tmp: Path) -> tuple[list[str], dict[str, Any]]:
    """The list walk and the list features checked by two-fold cross-validation of chia/train (halves by trial: a
    trial's inclusion and exclusion criteria in the same half): each half tagged by a model trained on the other,
    with and without each. Also the fragment pairings trained on the CRF's fragments of each held-out half
    (jackknifed: what the pairing sees on unseen text), fitted on the predicted fragments alone and together with the
    gold fragment tags."""
    from share_ner.eval.counting import count_corpus
    from share_ner.eval.scoring import score
    from share_ner.eval.significance import approximate_randomization
    from share_ner.pipeline import Pipeline
    from share_ner.tagging.pairing import PairingExamples

    docs, gold = read_split(train)
    trials = sorted({d.split("_")[0] for d in docs})
    half = {t: i % 2 for i, t in enumerate(trials)}
    rows = {"default": "default", "walk": "with the list walk", "lists": "with the list features"}
    preds: dict[str, dict[str, list]] = {name: {} for name in rows}
    examples = {"predicted": PairingExamples(False, False), "both": PairingExamples(False, False)}
    for k in (0, 1):
        part = tmp / f"half{k}"
        for sub in ("text", "gold"):
            (part / sub).mkdir(parents=True)
        for d in docs:
            if half[d.split("_")[0]] != k:
                (part / "text" / f"{d}.txt").symlink_to(train / "text" / f"{d}.txt")
                if (train / "gold" / f"{d}.pipe.txt").exists():
                    (part / "gold" / f"{d}.pipe.txt").symlink_to(train / "gold" / f"{d}.pipe.txt")
        held_out = {d: doc for d, doc in docs.items() if half[d.split("_")[0]] == k}
        for settings in ({"list_walk": True}, {"features": {"coordination_lists": True}}):
            model = tmp / f"cv-model{k}-{len(settings['features']) if 'features' in settings else 0}"
            config = tmp / "cv-config.json"
            config.write_text(json.dumps(settings), encoding="utf-8")
            subprocess.run([sys.executable, "-m", "share_ner.cli", "train", "--text", str(part / "text"), "--gold",
                            str(part / "gold"), "--model", str(model), "--config", str(config), "--no-normalizer",
                            "--quiet"], check=True)
            pipeline = Pipeline.load(model)
            if "features" in settings:
                preds["lists"].update({d: pipeline.tag(doc) for d, doc in held_out.items()})
                continue
            lookup = pipeline.tagger.resources.term_matcher.lookup
            for d, doc in held_out.items():
                seen: list = []
                with _tags_seen(seen):
                    preds["walk"][d] = pipeline.tag(doc)
                _add_examples(examples, seen, list(gold.get(d, ())), lookup)
            pipeline.tagger.pairing = replace(pipeline.tagger.pairing, lists={})  # the default's decoding
            preds["default"].update({d: pipeline.tag(doc) for d, doc in held_out.items()})
    lines = ["", "The list walk and the list features checked by two-fold cross-validation of chia/train (halves by "
             "trial; each half tagged by a model trained on the other by `share-ner train` with `\"list_walk\": "
             "true` (decoded with and without the walk) or with `\"features\": {\"coordination_lists\": true}`, "
             "`--no-normalizer`); `p` as above, against the default.", "",
             "| decoding | strict F1 | relaxed F1 | disc. P | disc. R | disc. F1 | disc. TP / predicted | p (strict / "
             "disc.) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    base = count_corpus(gold, preds["default"]).table
    for name, label in rows.items():
        sc = score(gold, preds[name])
        d = sc.discontiguous
        p = ""
        if name != "default":
            sig = approximate_randomization(base, count_corpus(gold, preds[name]).table,
                                            ("strict_f1", "discontiguous_f1"))
            p = f"{sig['strict_f1'].p_value:.3f} / {sig['discontiguous_f1'].p_value:.3f}"
        lines.append(f"| {label} | **{sc.strict.f1:.3f}** | {sc.relaxed.f1:.3f} | {d.precision:.3f} "
                     f"| {d.recall:.3f} | **{d.f1:.3f}** | {d.tp} / {d.tp + d.fp} | {p} |")
    return lines, {name: ex.fit() for name, ex in examples.items()}


def main(argv: Sequence[str] | None = None) -> int:
    args = dev_args(__doc__, "bench_pairing", RESULTS, argv)
    if args is None:
        return 0
    from share_ner.eval.counting import count_corpus
    from share_ner.eval.scoring import score
    from share_ner.eval.significance import approximate_randomization
    from share_ner.pipeline import Pipeline

    train, dev = args.data / "chia" / "train", args.data / "chia" / "dev"
    docs, gold = read_split(dev)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-pairing-") as tmp:
        cross, jackknifed = _cross_validated(train, Path(tmp))
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
                if "config" in change:
                    tagger.config = replace(tagger.config, **change["config"])
                if "pairing" in change:
                    tagger.pairing = replace(tagger.pairing, **change["pairing"])
                if "bias" in change:
                    _biased(tagger, change["bias"])
                if "pairing_from" in change:
                    tagger.pairing = replace(tagger.pairing, fragments=jackknifed[change["pairing_from"]].fragments)
            with _coordination_threshold((change or {}).get("coordination_threshold")), \
                    _coordination_bias((change or {}).get("coordination_bias")):
                if change is not None and "posterior" in change:
                    pred = {d: _posterior_tag(pipeline, doc, *change["posterior"]) for d, doc in docs.items()}
                else:
                    pred = {d: pipeline.tag(doc) for d, doc in docs.items()}
            sc = score(gold, pred)
            if name == DEFAULT:
                default_pred = pred
            sig = approximate_randomization(count_corpus(gold, default_pred).table, count_corpus(gold, pred).table,
                                            ("strict_f1", "discontiguous_f1")) if name != DEFAULT else None
            rows.append((name, sc, sig))
            print(f"{name}: strict F1 {sc.strict.f1:.3f} disc. F1 {sc.discontiguous.f1:.3f}", file=sys.stderr)
    lines = ["# Learned pairing, its parts and the ideas tried beside it (chia/dev)", "",
             f"Command: `{COMMAND}`. Trained on chia/train by `share-ner train` with the defaults "
             "(`--no-normalizer`) unless the row says otherwise; chia/dev tagged by the same CRF, its fragments "
             "joined in each of the ways below. `disc.` = strict on the discontiguous mentions alone (103 gold). "
             "Emission bias: added to the scores of the D/H tags of every token (or of the tokens within two of a "
             "coordinator) before Viterbi. Posterior decoding: the module docstring. `p` = approximate "
             "randomization over notes against the default (10,000 shuffles; strict F1 / disc. F1; 1.000 where the "
             "whole difference lies in one note).", "",
             "| decoding | strict P | strict R | strict F1 | relaxed F1 | disc. P | disc. R | disc. F1 "
             "| disc. TP / predicted | p (strict / disc.) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, sc, sig in rows:
        d = sc.discontiguous
        p = f"{sig['strict_f1'].p_value:.3f} / {sig['discontiguous_f1'].p_value:.3f}" if sig else ""
        lines.append(f"| {name} | {sc.strict.precision:.3f} | {sc.strict.recall:.3f} | **{sc.strict.f1:.3f}** "
                     f"| {sc.relaxed.f1:.3f} | {d.precision:.3f} | {d.recall:.3f} | **{d.f1:.3f}** "
                     f"| {d.tp} / {d.tp + d.fp} | {p} |")
    write_results(args.out, "\n".join(lines + cross) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
