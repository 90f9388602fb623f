"""Benchmark of feature extraction speed and of the word-cluster build.

Run from the repository root, under ``nice``::

    nice python benchmarks/bench_features.py                   # -> benchmarks/results/features.md
    nice python benchmarks/bench_features.py --notes 300 --no-write

Feature speed: MTSamples notes are split by ``share_ner.text.split_sentences`` (not
timed), then ``document_items`` (the attribute lists training reads) runs over all of them
with the embedded HPO lexicon, the packaged abbreviation list and MTSamples word clusters.
"cold" is the first pass in the process (the per-string cache empty), "warm" the best of two
more passes; "dicts" is the best of two passes of ``document_features``, the same features
read back into one dict per token. One row per configuration: every group, and every group
but one (to show what each costs).

Cluster build: ``share-ner clusters build`` on all of ``mtsamples/raw/notes`` of the corpora directory (``--data``)
in a child process; wall time and the child's peak RSS. The cluster file goes to the system
temp directory (never committed) and is reused by ``benchmarks/bench_tagger.py``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_data import DATA, REPO, RESULTS_DIR, add_data_argument

NOTES = DATA / "mtsamples" / "raw" / "notes"
RESULTS = RESULTS_DIR / "features.md"
CACHE = Path(os.environ.get("SHARE_NER_BENCH_CACHE", Path(tempfile.gettempdir()) / "share-ner-bench"))
CLUSTERS = CACHE / "clusters-mtsamples.tsv"


def build_clusters_timed() -> dict:
    """Run the clusters command in a child process; its wall time and peak memory."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "share_ner.cli", "clusters", "build", str(NOTES), "--out", str(CLUSTERS)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024,
            "summary": proc.stdout.strip()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--notes", type=int, default=1000, help="number of MTSamples notes for the speed test (default 1000)")
    parser.add_argument("--skip-cluster-build", action="store_true", help="reuse a cached cluster file, do not time a build")
    parser.add_argument("--no-write", action="store_true", help=f"print only, do not write {RESULTS.relative_to(REPO)}")
    args = parser.parse_args(argv)
    if not NOTES.is_dir():
        print(f"{NOTES} is absent: nothing to benchmark", file=sys.stderr)
        return 0

    build = None
    if not args.skip_cluster_build or not CLUSTERS.exists():
        print("building clusters ...", file=sys.stderr, flush=True)
        build = build_clusters_timed()
        print(f"  {build['summary']}  peak {build['peak_mb']:.0f} MB", file=sys.stderr)

    from share_ner.features import GROUPS, FeatureConfig, FeatureResources, document_features, load_clusters
    from share_ner.features.abbreviations import find_definitions
    from share_ner.features.items import document_items
    from share_ner.features.tokens import word_features
    from share_ner.inputs.files import iter_note_paths, read_note
    from share_ner.lexicons import default_lexicon
    from share_ner.text import split_sentences

    paths = list(iter_note_paths(NOTES))[: args.notes]
    docs = [read_note(p) for p in paths]
    sentences = [split_sentences(d) for d in docs]
    n_tokens = sum(len(s.tokens) for ss in sentences for s in ss)
    n_chars = sum(len(d.text) for d in docs)
    started = time.perf_counter()
    resources = FeatureResources.build(default_lexicon(), load_clusters(CLUSTERS))
    resources_s = time.perf_counter() - started
    print(f"{len(docs)} notes, {n_tokens} tokens; resources built in {resources_s:.1f} s", file=sys.stderr)

    # Build the scispaCy abbreviation pipeline now: a once-per-process cost (~1 s), not per token.
    find_definitions("chronic kidney disease (CKD)")

    def run(config: FeatureConfig, features=document_items) -> tuple[float, float, int]:
        """CPU seconds (this process only: fair on a shared machine), wall seconds, features made."""
        cpu, wall = time.process_time(), time.perf_counter()
        n_feats = 0
        for doc, sents in zip(docs, sentences):
            for sent_feats in features(doc, sents, resources, config):
                n_feats += sum(map(len, sent_feats))
        return time.process_time() - cpu, time.perf_counter() - wall, n_feats

    rows = []
    configs = [("all groups", FeatureConfig())] + [(f"all but {g}", FeatureConfig().without(g)) for g in GROUPS]
    for i, (name, config) in enumerate(configs):
        word_features.cache_clear()
        cold, cold_wall, n_feats = run(config)
        warm_runs = [run(config) for _ in range(2)]
        warm, warm_wall = min(r[0] for r in warm_runs), min(r[1] for r in warm_runs)
        dicts = min(run(config, document_features)[0] for _ in range(2))
        rows.append((name, n_tokens / cold, n_tokens / warm, n_tokens / warm_wall, n_tokens / dicts, n_feats / n_tokens))
        print(f"  {name:<22} cold {n_tokens / cold:>9,.0f} tok/s  warm {n_tokens / warm:>9,.0f} tok/s "
              f"(wall {n_tokens / warm_wall:>9,.0f})  dicts {n_tokens / dicts:>9,.0f} tok/s  "
              f"{n_feats / n_tokens:.1f} features/token", file=sys.stderr, flush=True)

    lines = [
        "# Feature extraction speed and word-cluster build",
        "",
        f"Command: `nice python benchmarks/bench_features.py --notes {args.notes}"
        + (" --skip-cluster-build" if args.skip_cluster_build else "") + "`",
        "",
        "The machine was shared with other jobs (numbers are a lower bound). "
        f"Input: the first {len(docs)} MTSamples notes ({n_chars:,} characters, {n_tokens:,} tokens from "
        "`share_ner.text.split_sentences`, not timed). Resources: embedded HPO lexicon "
        f"({len(resources.term_matcher or ())} terms in the matcher), the packaged clinical abbreviation list, "
        f"MTSamples clusters ({len(resources.clusters or ())} words); building them took {resources_s:.1f} s. "
        "`document_items` (the attribute lists training reads) includes scispaCy's abbreviation detector on every "
        "note with a parenthesis. Tokens per CPU second of this process (the machine is shared, so wall time "
        "overstates the cost; the warm wall-clock figure is given too). Cold = first pass (empty per-string "
        "cache), warm = best of two further passes; dicts = best of two passes of `document_features`, the same "
        "features read back into one dict per token (for sklearn-crfsuite and for reading). Target: 40,000 "
        "tokens/s.",
        "",
        "| configuration | cold tokens/s | warm tokens/s | warm tokens/s (wall) | dicts tokens/s | features/token |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {name} | {cold:,.0f} | {warm:,.0f} | {wall:,.0f} | {dicts:,.0f} | {fpt:.1f} |"
        for name, cold, warm, wall, dicts, fpt in rows
    ]
    if build is not None:
        lines += [
            "",
            "## Cluster build",
            "",
            "`share-ner clusters build DATA/mtsamples/raw/notes --out CLUSTERS.tsv` "
            f"(defaults: 64,256,1024 clusters, min count 5, seed 0): **{build['seconds']:.0f} s** wall, "
            f"{build['cpu']:.0f} s CPU (user + system, all threads), peak RSS **{build['peak_mb']:.0f} MB**.",
            "",
            f"Output: `{build['summary'].split(': ', 1)[-1]}`",
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(text, encoding="utf-8")
        print(f"wrote {RESULTS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
