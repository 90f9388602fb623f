"""Benchmark of the CRF tagger (Task 1a): train on train, score test, one row per variant.

Run from the repository root, under ``nice``::

    nice python benchmarks/bench_tagger.py                       # chia, ncbi_disease, bc5cdr -> benchmarks/results/tagger.md
    nice python benchmarks/bench_tagger.py --corpora chia --rows full plain_crf dictionary
    nice python benchmarks/bench_tagger.py --corpora ncbi_disease bc5cdr --all-rows   # ablations there too
    nice python benchmarks/bench_tagger.py --tune                # c1/c2 grid on chia dev (never test)

Rows: the full model (B/I/O/DB/DI/HB/HI, every feature group, the embedded HPO lexicon,
the jackknifed training-set gazetteer, word clusters built from MTSamples, coordination
features and expansion), ``--scheme bio``, one row per feature group or tagger option
switched off (chia only, unless ``--all-rows``), the full model trained with L-BFGS instead of
passive-aggressive (``lbfgs``), and two baselines: a plain contiguous-BIO CRF trained with L-BFGS
on tutorial word features (the word, affix, shape and window feature groups, a +-1 window; no lexicon,
gazetteer or clusters) and a longest-match dictionary of the training mentions' strings. Scores come from the project's scorer
(``share_ner.eval.scoring.score``); "disc." is strict P/R/F1 on the discontiguous
mentions alone. The full model is trained by ``share-ner train`` in a child process, so
its time and peak memory (``resource.getrusage``) are those of one real training run.

Word clusters are built at run time from ``mtsamples/raw/notes`` of the corpora directory (``--data``) with
``share-ner clusters build`` and cached under the system temp directory (never committed).
Data are read from the corpora directory (``--data``, see ``bench_data.py``); nothing is copied.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench_data import DATA, RESULTS_DIR, add_data_argument

RESULTS = RESULTS_DIR / "tagger.md"
CACHE = Path(os.environ.get("SHARE_NER_BENCH_CACHE", Path(tempfile.gettempdir()) / "share-ner-bench"))

CORPORA = ("chia", "ncbi_disease", "bc5cdr")
# Rows run on every corpus; the ablation rows only on chia.
MAIN_ROWS = ("full", "plain_crf", "dictionary")
ABLATION_GROUPS = ("word", "affix", "shape", "window", "conjunctions", "section", "position",
                   "lexicon", "abbreviation", "clusters")
TUTORIAL_GROUPS = ("word", "affix", "shape", "window")


@dataclass
class Row:
    name: str
    description: str
    scores: dict[str, Any] = field(default_factory=dict)
    disc_recall: float | None = None
    train_seconds: float | None = None
    peak_mb: float | None = None
    iterations: int | None = None
    tokens_per_s: float | None = None
    annotate_tokens_per_s: float | None = None


def load_split(corpus: str, split: str) -> tuple[dict, dict]:
    from share_ner.formats.share import read_pipe_dir
    from share_ner.inputs.files import read_notes

    base = DATA / corpus / split
    return read_notes(base / "text"), read_pipe_dir(base / "gold")


def ensure_clusters() -> Path:
    """Word clusters from the MTSamples notes, built once with ``share-ner clusters build`` and cached."""
    out = CACHE / "clusters-mtsamples.tsv"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    notes = DATA / "mtsamples" / "raw" / "notes"
    print(f"building word clusters from {notes} -> {out}", file=sys.stderr, flush=True)
    from share_ner.cli import COMMANDS

    if "clusters" in COMMANDS:
        cmd = [sys.executable, "-m", "share_ner.cli", "clusters", "build", str(notes), "--out", str(out)]
        subprocess.run(cmd, check=True)
    else:  # before the clusters command is registered: the same library function
        from share_ner.features.clusters import build_clusters, save_clusters
        from share_ner.inputs.files import iter_note_paths

        texts = (p.read_text(encoding="utf-8", errors="replace") for p in iter_note_paths(notes))
        clusters, _ = build_clusters(texts)
        save_clusters(out, clusters)
    return out


def score(gold: Mapping, pred: Mapping, docs: Mapping) -> dict[str, Any]:
    from share_ner.eval.dev import score_dict

    return score_dict(gold, pred, docs)


def disc_recall(gold: Mapping, pred: Mapping, docs: Mapping) -> float:
    """Strict recall on the discontiguous gold mentions alone."""
    disc = {d: [m for m in ms if m.is_discontiguous] for d, ms in gold.items()}
    if not any(disc.values()):
        return float("nan")
    return score(disc, pred, docs)["strict"]["recall"]


def dictionary_row(train: tuple[dict, dict], test: tuple[dict, dict]) -> Row:
    """Baseline: longest match of the training mentions' strings (features.matcher's TermMatcher over share_ner.text's tokens)."""
    from share_ner.document import Mention
    from share_ner.features import TermMatcher
    from share_ner.tagging.training import mention_terms
    from share_ner.text import split_sentences

    started = time.perf_counter()
    matcher = TermMatcher.from_terms((t, "train") for t in mention_terms(*train))
    pred: dict[str, list[Mention]] = {}
    for doc_id, doc in test[0].items():
        found = []
        for sent in split_sentences(doc):
            toks = sent.tokens
            for m in matcher.find([t.text for t in toks]):
                found.append(Mention(doc_id, ((toks[m.start].start, toks[m.end - 1].end),)))
        pred[doc_id] = found
    row = Row("dictionary", "dictionary matcher: longest match of training mention strings")
    row.scores = score(test[1], pred, test[0])
    row.disc_recall = disc_recall(test[1], pred, test[0])
    row.train_seconds = time.perf_counter() - started
    return row


def crf_variants(iterations: int | None, ablation_iterations: int | None) -> dict[str, tuple[str, dict, dict]]:
    """name -> (description, TaggerConfig overrides, run options)."""
    from share_ner.features import FeatureConfig
    from share_ner.tagging.config import TaggerConfig

    base = TaggerConfig().to_dict()
    full = {**base, "max_iterations": iterations}
    out: dict[str, tuple[str, dict, dict]] = {
        "full": ("full model (biohd, all features, HPO lexicon, training gazetteer, clusters; "
                 "passive-aggressive training)", full, {"lexicon": "hpo", "clusters": True}),
    }
    abl = {**base, "max_iterations": ablation_iterations}
    out["lbfgs"] = ("full model trained with L-BFGS (c1 = c2 = 0.05, 150 iterations) instead of passive-aggressive",
                    {**abl, "algorithm": "lbfgs", "max_iterations": None}, {"lexicon": "hpo", "clusters": True})
    out["scheme_bio"] = ("full model with --scheme bio (discontiguous mentions -> hull)",
                         {**abl, "scheme": "bio"}, {"lexicon": "hpo", "clusters": True})
    for group in ABLATION_GROUPS:
        feats = FeatureConfig().without(group).to_dict()
        out[f"no_{group}"] = (f"full model without the `{group}` feature group", {**abl, "features": feats},
                              {"lexicon": "hpo", "clusters": group != "clusters"})
    out["no_train_gazetteer"] = ("full model without the training-set gazetteer",
                                 {**abl, "train_gazetteer": False}, {"lexicon": "hpo", "clusters": True})
    out["no_gazetteer_folds"] = ("training-set gazetteer without jackknifing (gazetteer_folds=1)",
                                 {**abl, "gazetteer_folds": 1}, {"lexicon": "hpo", "clusters": True})
    out["no_coordination"] = ("full model without the coordination features (distributed-term lookups)",
                              {**abl, "coordination": False}, {"lexicon": "hpo", "clusters": True})
    out["no_expansion"] = ("full model without the post-tagging coordination expansion",
                           {**abl, "expand_coordinations": False}, {"lexicon": "hpo", "clusters": True})
    out["no_brackets"] = ("full model without the post-tagging bracket repair",
                          {**abl, "balance_brackets": False}, {"lexicon": "hpo", "clusters": True})
    out["no_hpo"] = ("full model with --lexicon none (no HPO lexicon)", abl, {"lexicon": "none", "clusters": True})
    tutorial = FeatureConfig.from_dict(
        {g: (g in TUTORIAL_GROUPS) for g in FeatureConfig().to_dict() if g != "window_size"} | {"window_size": 1}
    ).to_dict()
    out["plain_crf"] = ("baseline: plain contiguous-BIO CRF, tutorial word features (word, affix, shape, +-1 window), "
                        "L-BFGS",
                        {**base, "algorithm": "lbfgs", "max_iterations": None, "scheme": "bio", "features": tutorial,
                         "train_gazetteer": False, "coordination": False,
                         "expand_coordinations": False, "balance_brackets": False},
                        {"lexicon": "none", "clusters": False})
    return out


def train_and_score(name: str, description: str, config: dict, opts: dict, corpus: str,
                    train_split: str, test: tuple[dict, dict], workdir: Path) -> Row:
    """Train with ``share-ner train`` in a child process (clean time and memory figures), then tag ``test``."""
    from share_ner.model import read_model_info
    from share_ner.pipeline import Pipeline

    model = workdir / f"{corpus}-{name}"
    cfg = workdir / f"{corpus}-{name}.json"
    cfg.write_text(json.dumps(config), encoding="utf-8")
    base = DATA / corpus / train_split
    cmd = [sys.executable, "-m", "share_ner.cli", "train", "--text", str(base / "text"), "--gold",
           str(base / "gold"), "--model", str(model), "--config", str(cfg), "--lexicon", opts["lexicon"],
           "--quiet"]
    if name != "full":
        cmd.append("--no-normalizer")  # only the full model's annotate speed is measured
    if opts.get("clusters"):
        cmd += ["--clusters", str(ensure_clusters())]
    print(f"[{corpus}] training {name} ...", file=sys.stderr, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"training {name} on {corpus} failed:\n{proc.stderr}")
    info = read_model_info(model)
    training = info.data["training"]
    pipeline = Pipeline.load(model)
    pred = {doc_id: pipeline.tag(doc) for doc_id, doc in test[0].items()}
    row = Row(name, description)
    row.scores = score(test[1], pred, test[0])
    row.disc_recall = disc_recall(test[1], pred, test[0])
    row.train_seconds = training["seconds"]
    row.peak_mb = training["peak_rss_mb"]
    from share_ner.tagging.config import TaggerConfig

    row.iterations = TaggerConfig.from_dict(config).iterations
    return row


def tagging_speed(model: Path, docs: Mapping) -> dict[str, Any]:
    """Tokens per second of ``Pipeline.tag`` (features included) and ``annotate`` (tag + normalize).

    Both wall-clock and CPU-time (``time.process_time``) rates are kept: on a machine shared
    with other jobs the CPU-time rate is what one dedicated core would do.
    """
    from share_ner.pipeline import Pipeline
    from share_ner.text import split_sentences

    n_tokens = sum(len(s.tokens) for d in docs.values() for s in split_sentences(d))
    pipeline = Pipeline.load(model)
    first = next(iter(docs.values()))
    pipeline.annotate(first)  # warm caches and lazy imports
    out: dict[str, Any] = {"tokens": n_tokens}
    # "tag_cold": the first pass, while the per-word feature caches fill; "tag": a second pass.
    for name, call in (("tag_cold", pipeline.tag), ("tag", pipeline.tag), ("annotate", pipeline.annotate)):
        w0, c0 = time.perf_counter(), time.process_time()
        for doc in docs.values():
            call(doc)
        w1, c1 = time.perf_counter(), time.process_time()
        out[f"{name}_tokens_per_s"] = round(n_tokens / (w1 - w0))
        out[f"{name}_tokens_per_cpu_s"] = round(n_tokens / (c1 - c0))
    return out


def fmt(x: float | None, digits: int = 3) -> str:
    if x is None or x != x:
        return "–"
    return f"{x:.{digits}f}"


def table(rows: Sequence[Row]) -> str:
    head = ("| variant | strict P | strict R | strict F1 | relaxed P | relaxed R | relaxed F1 | disc. P | disc. R "
            "| disc. F1 | iters | train s | peak MB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        s, x = r.scores.get("strict", {}), r.scores.get("relaxed", {})
        d = r.scores.get("discontiguous", {})  # rows stored before the scorer reported it: recall only
        lines.append(
            f"| {r.name} | {fmt(s.get('precision'))} | {fmt(s.get('recall'))} | **{fmt(s.get('f1'))}** "
            f"| {fmt(x.get('precision'))} | {fmt(x.get('recall'))} | **{fmt(x.get('f1'))}** "
            f"| {fmt(d.get('precision'))} | {fmt(r.disc_recall)} | {fmt(d.get('f1'))} "
            f"| {r.iterations or '–'} | {fmt(r.train_seconds, 0)} | {fmt(r.peak_mb, 0)} |"
        )
    return head + "\n".join(lines) + "\n"


def tune(workdir: Path, grid: Sequence[tuple[float, float]], iterations: int | None) -> None:
    """c1/c2 grid: train on chia/train, score chia/dev (the test split is not read)."""
    dev = load_split("chia", "dev")
    variants = crf_variants(iterations, iterations)
    desc, config, opts = variants["full"]
    for c1, c2 in grid:
        row = train_and_score(f"tune-c1={c1}-c2={c2}", desc,
                              {**config, "algorithm": "lbfgs", "max_iterations": None, "c1": c1, "c2": c2}, opts,
                              "chia", "train", dev, workdir)
        s, x = row.scores["strict"], row.scores["relaxed"]
        print(f"c1={c1} c2={c2}: dev strict F1 {s['f1']:.3f} relaxed F1 {x['f1']:.3f} "
              f"disc R {fmt(row.disc_recall)} ({row.train_seconds:.0f} s)", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--corpora", nargs="+", default=list(CORPORA), choices=CORPORA)
    parser.add_argument("--rows", nargs="+", help="only these rows (names as in the table)")
    parser.add_argument("--iterations", type=int, default=None, help="training iterations of the full model (default: the algorithm's, TaggerConfig.iterations)")
    parser.add_argument("--ablation-iterations", type=int, default=None, help="iterations of the ablation rows (default: same as --iterations)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--results-json", type=Path, default=CACHE / "tagger-rows.json",
                        help="per-row results kept between runs, so --rows can refresh part of the table")
    parser.add_argument("--all-rows", action="store_true", help="the ablation rows on every corpus, not only chia")
    parser.add_argument("--tune", action="store_true", help="c1/c2 grid on chia dev instead of the benchmark")
    parser.add_argument("--report-only", action="store_true", help="rewrite --out from --results-json, train nothing")
    args = parser.parse_args(argv)
    if not (DATA / "README.md").exists():
        print(f"skipped: {DATA} is not present", file=sys.stderr)
        return 0
    iterations = args.iterations
    ablation_iterations = args.ablation_iterations or iterations
    if args.report_only:
        stored = json.loads(args.results_json.read_text(encoding="utf-8"))
        write_report(stored, args.out, iterations, ablation_iterations)
        print(args.out.read_text(encoding="utf-8"))
        return 0
    CACHE.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="models-", dir=CACHE))
    if args.tune:
        tune(workdir, [(0.0, 0.05), (0.05, 0.05), (0.1, 0.01), (0.2, 0.01), (0.05, 0.2)], iterations)
        return 0

    stored: dict[str, dict] = {}
    if args.results_json.exists():
        stored = json.loads(args.results_json.read_text(encoding="utf-8"))
    variants = crf_variants(iterations, ablation_iterations)
    speed: dict[str, Any] = stored.get("_speed", {})
    for corpus in args.corpora:
        names = ["full", *[n for n in variants if n not in ("full", "plain_crf")], "plain_crf", "dictionary"]
        if corpus != "chia" and not args.all_rows:
            names = list(MAIN_ROWS)
        if args.rows:
            names = [n for n in names if n in args.rows]
        train = load_split(corpus, "train")
        test = load_split(corpus, "test")
        for name in names:
            try:
                if name == "dictionary":
                    row = dictionary_row(train, test)
                else:
                    desc, config, opts = variants[name]
                    row = train_and_score(name, desc, config, opts, corpus, "train", test, workdir)
                    if name == "full":
                        speed[corpus] = tagging_speed(workdir / f"{corpus}-full", test[0])
            except (Exception, SystemExit) as exc:  # one failed row must not lose the others
                print(f"[{corpus}] {name}: FAILED: {exc}", file=sys.stderr, flush=True)
                continue
            finally:
                shutil.rmtree(workdir / f"{corpus}-{name}", ignore_errors=True)
            stored.setdefault(corpus, {})[name] = row.__dict__
            stored["_speed"] = speed
            args.results_json.parent.mkdir(parents=True, exist_ok=True)
            args.results_json.write_text(json.dumps(stored, indent=1), encoding="utf-8")
            s, x = row.scores["strict"], row.scores["relaxed"]
            print(f"[{corpus}] {name}: strict F1 {s['f1']:.3f} relaxed F1 {x['f1']:.3f} disc R {fmt(row.disc_recall)}",
                  file=sys.stderr, flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    write_report(stored, args.out, iterations, ablation_iterations)
    print(args.out.read_text(encoding="utf-8"))
    return 0


def write_report(stored: Mapping[str, Any], out: Path, iterations: int | None, ablation_iterations: int | None) -> None:
    parts = ["# CRF tagger benchmark (Task 1a)\n",
             "Train on `<corpus>/train`, score `<corpus>/test` with `share_ner.eval.scoring.score` "
             "(strict = exact spans, relaxed = overlap). `disc.` = strict P/R/F1 on the discontiguous "
             "mentions alone (`share-ner evaluate`'s `disc.` row; `–` in rows measured before it existed). Produced by `nice python benchmarks/bench_tagger.py`; see the script's "
             "docstring for the variants. Training time and peak memory (`resource.getrusage`) are of "
             "one `share-ner train` process (the machine was shared with other jobs). "
             "The chia rows come from `nice python benchmarks/bench_tagger.py --corpora chia`, the others from "
             "`nice python benchmarks/bench_tagger.py --corpora ncbi_disease bc5cdr --all-rows` (`--rows` refreshes "
             "single rows). Differences under about 0.005 F1 are noise: reseeding the gazetteer folds alone "
             "moves chia/dev strict F1 between 0.686 and 0.691.\n"]
    if ablation_iterations != iterations:
        parts.append(f"The full model uses {iterations} training iterations; the ablation "
                     f"rows use {ablation_iterations} to save time.\n")
    for corpus in CORPORA:
        rows = stored.get(corpus)
        if not rows:
            continue
        objs = []
        for name, data in rows.items():
            objs.append(Row(**data))
        order = {"full": 0, "plain_crf": 98, "dictionary": 99}
        objs.sort(key=lambda r: order.get(r.name, 50))
        parts.append(f"## {corpus}\n")
        parts.append("| variant | description |\n|---|---|\n" + "".join(
            f"| {r.name} | {r.description} |\n" for r in objs))
        parts.append("")
        parts.append(table(objs))
        sp = stored.get("_speed", {}).get(corpus)
        if sp:
            parts.append(
                f"Tagging speed of the full model on {corpus}/test ({sp['tokens']} tokens, one process, sentence "
                f"splitting and features included), in tokens per CPU second (`time.process_time`; wall-clock "
                f"rates on the shared, loaded machine in brackets): `Pipeline.tag` first pass "
                f"{sp['tag_cold_tokens_per_cpu_s']} ({sp['tag_cold_tokens_per_s']}), second pass with warm "
                f"per-word caches **{sp['tag_tokens_per_cpu_s']}** ({sp['tag_tokens_per_s']}); `Pipeline.annotate` "
                f"(tagging + normalization) {sp['annotate_tokens_per_cpu_s']} ({sp['annotate_tokens_per_s']}).\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
