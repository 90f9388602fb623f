"""Mention-level coordination candidates scored by a classifier: measured on dev splits, and left out of share-ner.

The idea: from the mentions the tagger found and the sentence's coordinations, propose the discontiguous mentions the
CRF missed, score them with a logistic regression trained on candidates of the training split, and add those above a
threshold. Candidates around each run of a found mention (the "anchor"):

* ``CR``: a conjunct of a list before the anchor + a head at the anchor's end ("cardiac , vascular or [metabolic
  disturbances]" → cardiac … disturbances; "acute or chronic [renal dysfunction]" → acute … renal dysfunction);
* ``CL``: a head at the anchor's start + a conjunct of a list after it ("[hepatitis B] or C" → hepatitis … C);
* ``AR`` / ``AL``: the anchor is a conjunct and borrows a head beyond the next conjunct ("[suicide] or violence
  risk" → suicide … risk).

Features: the candidate's kind, its conjunct's place in the list, lengths, word suffixes and shapes, the coordinators
and gap, whether the conjunct is a found mention of its own, whether another found mention joins a conjunct of the
same list with the same head, head and conjunct words, and lexicon / training-gazetteer hits of the joined string and
its parts. Training candidates come from the gold mentions of chia/train (lookups jackknifed by fold, as the CRF's;
the candidate itself left out of the mentions its features look at); the dev candidates from the default model's
mentions on chia/dev. Also measured: the same classifier checked on chia/train by two-fold cross-validation (models
trained on each half tag the other), and a classifier trained on the candidates of those cross-fitted predictions
with the CRF's marginal probabilities of the candidate's tokens as features (forward-backward over the model's
emission scores). Writes ``benchmarks/results/coordination_candidates.md``::

    nice python benchmarks/bench_coordination_candidates.py [--data DIR] [--out FILE]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from bench_data import RESULTS_DIR, dev_args, write_results

RESULTS = RESULTS_DIR / "coordination_candidates.md"
COMMAND = "nice python benchmarks/bench_coordination_candidates.py"
MAX_CONJUNCTS = 12
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
KIND_SETS = {"all kinds": ("CR", "CL", "AR", "AL"), "CR and CL": ("CR", "CL"), "CR only": ("CR",)}
HALVES = 2

Tokens = tuple[int, ...]
Runs = tuple[tuple[int, int], tuple[int, int]]


# ---------------------------------------------------------------- candidates


def _runs(idx: Sequence[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for i in idx:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return [(a, b) for a, b in out]


def _walk(lower: Sequence[str], start: int, step: int, content: Callable[[int], bool],
          coordinators: frozenset[str]) -> list[list[tuple[int, int]]]:
    """Conjunct slots of a list walked from the coordinator at ``start``: per slot its 1- and 2-word readings."""
    n, slots, i = len(lower), [], start
    while len(slots) < MAX_CONJUNCTS and 0 <= i < n and lower[i] in coordinators:
        while 0 <= i + step < n and lower[i + step] in coordinators:
            i += step
        near = i + step
        if not content(near):
            break
        alts, far, nxt = [], near, None
        for _ in range(2):
            if not content(far):
                break
            alts.append((min(near, far), max(near, far)))
            if nxt is None and 0 <= far + step < n and lower[far + step] in coordinators:
                nxt = far + step
            far += step
        slots.append(alts)
        if nxt is None:
            break
        i = nxt
    return slots


def candidates(words: Sequence[str], anchors: Iterable[Tokens]) -> dict[Tokens, tuple[Runs, tuple]]:
    """Token set -> (runs in text order, (kind, detail, slot or length)) of the candidates around ``anchors``."""
    from share_ner.features.coordination import _PHRASE_BREAKS, COORDINATORS

    lower = [w.lower() for w in words]
    n = len(lower)

    def content(i: int) -> bool:
        return 0 <= i < n and lower[i] not in COORDINATORS and lower[i] not in _PHRASE_BREAKS \
            and any(c.isalnum() for c in lower[i])

    def head_word(i: int) -> bool:
        return content(i) or lower[i] in ("of", "the", "to")

    found: dict[Runs, tuple] = {}
    for s, e in sorted({r for idx in anchors for r in _runs(idx)}):
        for left in (s, s - 1, s - 2):  # a list before the anchor, maybe with an untagged last conjunct
            if left < s and not all(content(k) for k in range(left, s)):
                continue
            for k, alts in enumerate(_walk(lower, left - 1, -1, content, COORDINATORS)):
                for conj in alts:
                    for j in (range(s + 1, e + 1) if left == s else range(s, e + 1)):
                        found.setdefault((conj, (j, e)), ("CR", left < s, k))
        for right in (e, e + 1, e + 2):  # a list after the anchor
            if right > e and not all(content(k) for k in range(e + 1, right + 1)):
                continue
            for k, alts in enumerate(_walk(lower, right + 1, 1, content, COORDINATORS)):
                for conj in alts:
                    for j in (range(s, e) if right == e else range(s, e + 1)):
                        found.setdefault(((s, j), conj), ("CL", right > e, k))
        if e - s > 2:
            continue
        c = e + 1  # the anchor is a conjunct: [anchor] or Y HEAD
        if c < n and lower[c] in COORDINATORS:
            while c + 1 < n and lower[c + 1] in COORDINATORS:
                c += 1
            for ylen in (1, 2):
                y_end = c + ylen
                if all(content(k) for k in range(c + 1, y_end + 1)):
                    for hlen in (1, 2, 3):
                        if y_end + hlen < n and all(head_word(k) for k in range(y_end + 1, y_end + hlen + 1)):
                            found.setdefault(((s, e), (y_end + 1, y_end + hlen)), ("AR", ylen, hlen))
        c = s - 1  # HEAD Y or [anchor]
        if c >= 0 and lower[c] in COORDINATORS:
            while c - 1 >= 0 and lower[c - 1] in COORDINATORS:
                c -= 1
            for ylen in (1, 2):
                y_start = c - ylen
                if y_start >= 0 and all(content(k) for k in range(y_start, c)):
                    for hlen in (1, 2, 3, 4):
                        if y_start - hlen >= 0 and all(head_word(k) for k in range(y_start - hlen, y_start)):
                            found.setdefault(((y_start - hlen, y_start - 1), (s, e)), ("AL", ylen, hlen))
    out: dict[Tokens, tuple[Runs, tuple]] = {}
    for runs, info in found.items():
        out.setdefault(tuple(sorted({i for a, b in runs for i in range(a, b + 1)})), (runs, info))
    return out


def _bucket(n: int) -> str:
    return str(n) if n < 4 else ("4-5" if n < 6 else "6+")


def features(words: Sequence[str], runs: Runs, info: tuple, others: Iterable[Tokens],
             lookup: Callable[[str], Any] | None, head_words: frozenset[str]) -> dict[str, float]:
    """The features of one candidate; ``others``: the sentence's mentions besides the candidate."""
    from share_ner.features.coordination import _PHRASE_BREAKS, COORDINATORS

    lower = [w.lower() for w in words]
    kind = info[0]
    (a1, b1), (a2, b2) = runs
    conj, head = ((a1, b1), (a2, b2)) if kind in ("CR", "AL") else ((a2, b2), (a1, b1))
    f = {"bias": 1.0, f"kind={kind}": 1.0, f"detail={kind}{info[1]}": 1.0,
         (f"slot={_bucket(info[2])}" if kind in ("CR", "CL") else f"hlen={kind}{info[2]}"): 1.0,
         f"conj_len={conj[1] - conj[0] + 1}": 1.0, f"head_len={head[1] - head[0] + 1}": 1.0,
         f"conj_suffix={lower[conj[1]][-3:]}": 1.0, f"conj_first_suffix={lower[conj[0]][-3:]}": 1.0,
         f"head_suffix={lower[head[1]][-3:]}": 1.0, f"head_first_suffix={lower[head[0]][-3:]}": 1.0,
         f"head_word={lower[head[1]]}": 1.0, f"head_first_word={lower[head[0]]}": 1.0,
         f"conj_word={lower[conj[0]]}": 1.0, f"conj_last_word={lower[conj[1]]}": 1.0,
         f"conj|head={lower[conj[1]]}|{lower[head[1]]}": 1.0}
    if lower[head[1]] in head_words:
        f["frequent_head"] = 1.0
    w = words[conj[0]]
    shape = "AA" if w.isupper() and len(w) > 1 else "Aa" if w[:1].isupper() else "0" if any(
        c.isdigit() for c in w) else "a"
    f[f"conj_shape={shape}"] = 1.0
    gap = range(b1 + 1, a2)
    f[f"gap={_bucket(len(gap))}"] = 1.0
    for i in gap:
        if lower[i] in COORDINATORS:
            f[f"gap_has={lower[i]}"] = 1.0
    f[f"gap_content={_bucket(sum(1 for i in gap if lower[i] not in COORDINATORS))}"] = 1.0
    marks = COORDINATORS | _PHRASE_BREAKS
    after, before = b2 + 1, a1 - 1
    f[f"after={'END' if after >= len(lower) else lower[after] if lower[after] in marks else 'w'}"] = 1.0
    f[f"before={'START' if before < 0 else lower[before] if lower[before] in marks else 'w'}"] = 1.0
    conj_tokens = set(range(conj[0], conj[1] + 1))
    head_tokens = set(range(head[0], head[1] + 1))
    others = [set(o) for o in others]
    f["conj_own" if any(o == conj_tokens for o in others) else
      "conj_in" if any(o & conj_tokens for o in others) else "conj_free"] = 1.0
    low, high = min(conj[0], head[0]), max(conj[1], head[1])
    for o in others:  # another conjunct of the same list joined with the same head
        rest = o - head_tokens
        if head_tokens <= o and rest and all(low <= i <= high for i in rest) and not rest & conj_tokens:
            f["mate_joined"] = 1.0
            break
    if lookup is not None:
        f["term" if lookup(" ".join(" ".join(words[a:b + 1]) for a, b in runs)) else "no_term"] = 1.0
        if lookup(" ".join(words[conj[0]:conj[1] + 1])):
            f["conj_term"] = 1.0
        if lookup(" ".join(words[head[0]:head[1] + 1])):
            f["head_term"] = 1.0
    return f


def marginal_features(f: dict[str, float], marginals: np.ndarray, labels: Sequence[str], runs: Runs,
                      kind: str) -> None:
    """The CRF's posteriors of the candidate's tokens, added to ``f``."""
    (a1, b1), (a2, b2) = runs
    conj, head = ((a1, b1), (a2, b2)) if kind in ("CR", "AL") else ((a2, b2), (a1, b1))
    outside = labels.index("O")
    d = [labels.index(x) for x in ("DB", "DI")]
    h = [labels.index(x) for x in ("HB", "HI")]
    inside = [1 - marginals[i, outside] for i in range(conj[0], conj[1] + 1)]
    f["m_conj_min"] = min(inside)
    f["m_conj_mean"] = sum(inside) / len(inside)
    f["m_head_min"] = min(1 - marginals[i, outside] for i in range(head[0], head[1] + 1))
    f["m_conj_d"] = max(marginals[i, d].sum() for i in range(conj[0], conj[1] + 1))
    f["m_head_h"] = max(marginals[i, h].sum() for i in range(head[0], head[1] + 1))


def forward_backward(emissions: np.ndarray, transitions: np.ndarray) -> np.ndarray:
    """Each token's label posteriors of a linear-chain CRF (tokens x labels) from its scores."""
    from scipy.special import logsumexp

    n, k = emissions.shape
    alpha, beta = np.zeros((n, k)), np.zeros((n, k))
    alpha[0] = emissions[0]
    for t in range(1, n):
        alpha[t] = emissions[t] + logsumexp(alpha[t - 1][:, None] + transitions, axis=0)
    for t in range(n - 2, -1, -1):
        beta[t] = logsumexp(transitions + (emissions[t + 1] + beta[t + 1])[None, :], axis=1)
    return np.exp(alpha + beta - logsumexp(alpha[-1]))


# ---------------------------------------------------------------- data


def _sentence_sets(sentence: Any, mentions: Iterable[Any]) -> set[Tokens]:
    from share_ner.tagging.scheme import mention_tokens

    out = set()
    for m in mentions:
        if sentence.start <= m.start and m.end <= sentence.end:
            got = mention_tokens(sentence, m)
            if got and got[0]:
                out.add(tuple(got[0]))
    return out


def gold_rows(docs: Mapping[str, Any], gold: Mapping[str, list], lexicon: Any) -> list[tuple]:
    """Training candidates around the gold mentions, term lookups jackknifed by fold: (features, label, kind, doc)."""
    from share_ner.tagging.resources import TRAIN_SEMTYPE, make_resources
    from share_ner.tagging.training import folds_of, lexicon_terms, mention_terms
    from share_ner.text import split_sentences

    lex = list(lexicon_terms(lexicon))
    fold = folds_of(list(docs), 5)
    rows = []
    for k in range(5):
        ids = [d for d in docs if fold[d] != k]
        res = make_resources(lex + [(t, TRAIN_SEMTYPE) for t in sorted(mention_terms(docs, gold, ids))], None)
        lookup = res.term_matcher.lookup
        for d in sorted(docs):
            if fold[d] != k or not docs[d].text.strip():
                continue
            for sentence in split_sentences(docs[d]):
                sets = _sentence_sets(sentence, gold.get(d, ()))
                words = [t.text for t in sentence.tokens]
                for toks, (runs, info) in candidates(words, sets).items() if sets else ():
                    rows.append((features(words, runs, info, sets - {toks}, lookup, res.head_words), toks in sets,
                                 info[0], d))
    return rows


def predicted_rows(pipeline: Any, docs: Mapping[str, Any], gold: Mapping[str, list],
                   with_marginals: bool = False) -> tuple[list[tuple], dict[str, list], dict]:
    """Candidates around the mentions ``pipeline`` finds: rows (features, label, kind, (doc, sentence, token set,
    conjunct)), the predictions, and the candidate recall counts."""
    from share_ner.tagging.crf import doc_emissions

    tagger = pipeline.tagger
    lookup = tagger.resources.term_matcher.lookup
    labels = tagger.weights.labels
    rows, predictions = [], {}
    counts = {"disc_gold": 0, "disc_found": 0, "disc_in_candidates": 0, "candidates": 0}
    for d, doc in docs.items():
        found = predictions[d] = pipeline.tag(doc)
        if not doc.text.strip():
            continue
        sentences, scores, _ = doc_emissions(doc, tagger.resources, tagger.config.features, tagger.scores,
                                             tagger.config.coordination)
        start = 0
        for sentence in sentences:
            n = len(sentence.tokens)
            emissions, start = scores[start:start + n], start + n
            sets = _sentence_sets(sentence, found)
            gold_sets = {g: m.is_discontiguous for m in gold.get(d, ()) for g in _sentence_sets(sentence, [m])}
            words = [t.text for t in sentence.tokens]
            cands = {k: v for k, v in candidates(words, sets).items() if k not in sets} if sets else {}
            for g, disc in gold_sets.items():
                if disc:
                    counts["disc_gold"] += 1
                    counts["disc_found"] += g in sets
                    counts["disc_in_candidates"] += g in cands
            counts["candidates"] += len(cands)
            marginals = forward_backward(emissions, tagger.weights.transitions) if with_marginals and cands else None
            for toks, (runs, info) in cands.items():
                f = features(words, runs, info, sets, lookup, tagger.resources.head_words)
                if marginals is not None:
                    marginal_features(f, marginals, labels, runs, info[0])
                conj = runs[0] if info[0] in ("CR", "AL") else runs[1]
                rows.append((f, toks in gold_sets, info[0], (d, sentence, toks, runs, conj)))
    return rows, predictions, counts


def fit(rows: Sequence[tuple], kinds: Sequence[str]) -> Callable[[Sequence[tuple]], np.ndarray]:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    rows = [r for r in rows if r[2] in kinds]
    vec = DictVectorizer()
    model = LogisticRegression(C=1.0, max_iter=3000).fit(vec.fit_transform([r[0] for r in rows]),
                                                         [r[1] for r in rows])
    return lambda xs: model.predict_proba(vec.transform([r[0] for r in xs]))[:, 1]


def added(rows: Sequence[tuple], probs: np.ndarray, kinds: Sequence[str], threshold: float) -> dict[str, list]:
    """The mentions to add per note: the best candidate of each conjunct at or above ``threshold``."""
    from share_ner.document import Mention

    best: dict[tuple, tuple[float, tuple]] = {}
    for row, p in zip(rows, probs):
        if row[2] in kinds and p >= threshold:
            d, sentence, toks, runs, conj = row[3]
            key = (d, sentence.start, conj)
            if key not in best or p > best[key][0]:
                best[key] = (p, row[3])
    out: dict[str, list] = {}
    for _, (d, sentence, _, runs, _) in best.values():
        tokens = sentence.tokens
        out.setdefault(d, []).append(Mention(d, tuple((tokens[a].start, tokens[b].end) for a, b in runs)))
    return out


def with_added(predictions: Mapping[str, list], extra: Mapping[str, list]) -> dict[str, list]:
    return {d: sorted(set(found) | set(extra.get(d, ())), key=lambda m: m.spans) for d, found in predictions.items()}


# ---------------------------------------------------------------- the benchmark


def main(argv: Sequence[str] | None = None) -> int:
    args = dev_args(__doc__, "bench_coordination_candidates", RESULTS, argv)
    if args is None:
        return 0
    from share_ner.eval.scoring import score
    from share_ner.formats import read_annotations
    from share_ner.inputs.files import read_notes
    from share_ner.lexicons import load_lexicon
    from share_ner.pipeline import Pipeline
    from share_ner.tagging.config import TaggerConfig
    from share_ner.tagging.training import folds_of
    from share_ner.training import train_model

    def split(name: str) -> tuple[dict, dict]:
        docs = read_notes(args.data / "chia" / name / "text")
        gold = read_annotations(args.data / "chia" / name / "gold", docs)
        return docs, {d: gold.get(d, []) for d in docs}

    def f1s(sc: Any) -> str:
        d = sc.discontiguous
        return (f"{sc.strict.f1:.3f} | {sc.relaxed.f1:.3f} | {d.precision:.3f} | {d.recall:.3f} | **{d.f1:.3f}** "
                f"| {d.tp} / {d.tp + d.fp}")

    train_docs, train_gold = split("train")
    dev_docs, dev_gold = split("dev")
    hpo = load_lexicon("hpo")
    lines = ["# Mention-level coordination candidates (chia/dev; not part of share-ner)", "",
             f"Command: `{COMMAND}`. The idea and its features: the script's docstring. Candidates are added to "
             "the default model's mentions (`share-ner train` on chia/train, `--no-normalizer`); the best "
             "candidate of each conjunct at or above the threshold. `disc.` = strict on the discontiguous mentions "
             "alone.", ""]
    with tempfile.TemporaryDirectory(prefix="bench-coord-") as tmp:
        model = Path(tmp) / "model"
        subprocess.run([sys.executable, "-m", "share_ner.cli", "train", "--text",
                        str(args.data / "chia" / "train" / "text"), "--gold",
                        str(args.data / "chia" / "train" / "gold"), "--model", str(model), "--no-normalizer",
                        "--quiet"], check=True)
        print("candidates: chia/train (gold), chia/dev (predicted)", file=sys.stderr)
        train_rows = gold_rows(train_docs, train_gold, hpo)
        dev_rows, dev_pred, counts = predicted_rows(Pipeline.load(model), dev_docs, dev_gold, with_marginals=True)
        base = score(dev_gold, dev_pred)
        missed = counts["disc_gold"] - counts["disc_found"]
        lines += [f"Candidate recall on chia/dev: of the {counts['disc_gold']} discontiguous gold mentions the model "
                  f"finds {counts['disc_found']}; {counts['disc_in_candidates']} of the {missed} it misses are among "
                  f"the {counts['candidates']} candidates "
                  f"({sum(r[1] for r in dev_rows)} candidates are gold mentions). Training candidates (chia/train): "
                  f"{len(train_rows)}, {sum(r[1] for r in train_rows)} of them gold mentions.", "",
                  "| classifier | kinds | threshold | strict F1 | relaxed F1 | disc. P | disc. R | disc. F1 "
                  "| disc. TP / predicted |", "|---|---|---:|---:|---:|---:|---:|---:|---:|",
                  f"| none (the default model) | | | {f1s(base)} |"]
        for kind_name, kinds in KIND_SETS.items():
            probs = fit(train_rows, kinds)(dev_rows)
            for th in THRESHOLDS:
                sc = score(dev_gold, with_added(dev_pred, added(dev_rows, probs, kinds, th)))
                lines.append(f"| trained on gold mentions' candidates | {kind_name} | {th} | {f1s(sc)} |")
        # two-fold cross-validation on chia/train: each half tagged by a model trained on the other
        fold = folds_of(sorted(train_docs), HALVES)
        cv_rows: list[tuple] = []
        cv_pred: dict[str, list] = {}
        for k in range(HALVES):
            print(f"chia/train half {k + 1}/{HALVES}", file=sys.stderr)
            ids = [d for d in train_docs if fold[d] != k]
            half = Path(tmp) / f"half{k}"
            train_model({d: train_docs[d] for d in ids}, {d: train_gold[d] for d in ids}, half, TaggerConfig(),
                        lexicon=hpo, fit_normalizer=False)
            held = [d for d in train_docs if fold[d] == k]
            rows, pred, _ = predicted_rows(Pipeline.load(half), {d: train_docs[d] for d in held},
                                           {d: train_gold[d] for d in held}, with_marginals=True)
            cv_rows += rows
            cv_pred.update(pred)
        cv_base = score(train_gold, cv_pred)
        lines += ["", "The same classifier (all kinds) checked by two-fold cross-validation on chia/train: each half "
                  "tagged by a model trained on the other half; the classifier trained on the gold mentions' "
                  "candidates of the other half.", "",
                  "| threshold | strict F1 | relaxed F1 | disc. P | disc. R | disc. F1 | disc. TP / predicted |",
                  "|---:|---:|---:|---:|---:|---:|---:|", f"| none | {f1s(cv_base)} |"]
        for kind_name, kinds in (("all kinds", KIND_SETS["all kinds"]), ("CR only", KIND_SETS["CR only"])):
            extra_by_th: dict[float, dict[str, list]] = {th: {} for th in THRESHOLDS}
            for k in range(HALVES):
                other = [r for r in train_rows if fold[r[3]] != k]
                mine = [r for r in cv_rows if fold[r[3][0]] == k]
                probs = fit(other, kinds)(mine)
                for th in THRESHOLDS:
                    extra_by_th[th].update(added(mine, probs, kinds, th))
            for th in THRESHOLDS:
                sc = score(train_gold, with_added(cv_pred, extra_by_th[th]))
                lines.append(f"| {th} ({kind_name}) | {f1s(sc)} |")
        # trained on the cross-fitted candidates, with the CRF's marginals
        lines += ["", "A classifier trained on the candidates around the cross-fitted predictions on chia/train "
                  "(what the tagger finds on text it did not see), with the CRF's marginal probabilities of the "
                  "candidate's tokens among its features; chia/dev as above.", "",
                  "| features | threshold | strict F1 | relaxed F1 | disc. P | disc. R | disc. F1 "
                  "| disc. TP / predicted |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for name, keep in (("with marginals", lambda k: True), ("without", lambda k: not k.startswith("m_"))):
            def strip(rows: Sequence[tuple], keep: Callable[[str], bool] = keep) -> list[tuple]:
                return [({k: v for k, v in r[0].items() if keep(k)}, *r[1:]) for r in rows]
            probs = fit(strip(cv_rows), KIND_SETS["all kinds"])(strip(dev_rows))
            for th in THRESHOLDS:
                sc = score(dev_gold, with_added(dev_pred, added(dev_rows, probs, KIND_SETS["all kinds"], th)))
                lines.append(f"| {name} | {th} | {f1s(sc)} |")
    write_results(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
