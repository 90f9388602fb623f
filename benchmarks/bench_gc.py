"""The garbage collector's share of ``share-ner tag``, at Python's default threshold and at others.

The ``share-ner`` console script raises the young generation's collection threshold
(``share_ner.collector.collect_less``, ``YOUNG_THRESHOLD``) and, once the model is loaded, freezes it
(``share_ner.batch.processes.settle_heap``). Each round runs one process per threshold on the
same MTSamples notes with the default model, the thresholds in turn (the first alternating from round to round);
each process times every collection with :data:`gc.callbacks` and reports the collector's CPU seconds, the
collections per generation, its own CPU seconds and its peak memory. The outputs of every threshold are compared
byte for byte. Figures: the median over the rounds.

    nice python benchmarks/bench_gc.py [--notes 1500] [--rounds 3] [--thresholds default,10000,50000,200000]
        [--out benchmarks/results/gc.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_data import RESULTS_DIR, add_data_argument, side_env
from bench_speed_scale import link_notes
from output_hashes import hash_dir

RESULTS = RESULTS_DIR / "gc.md"

# Run in each measured process: the threshold given (or Python's own), collections timed, `share-ner tag` run.
CHILD = r"""
import gc, json, resource, sys, time
import share_ner.collector as collector
threshold = sys.argv[1]
collector.YOUNG_THRESHOLD = 0 if threshold == "default" else int(threshold)  # 0: Python's own is kept
collector.collect_less()  # as the console script does before its command
spent = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}
began = [0.0]
def timed(phase, info):
    if phase == "start":
        began[0] = time.process_time()
    else:
        entry = spent[info["generation"]]
        entry[0] += 1
        entry[1] += time.process_time() - began[0]
gc.callbacks.append(timed)
from share_ner.cli import main
start = time.process_time()
try:
    code = main(["tag", sys.argv[2], "--out", sys.argv[3], "--quiet"])
except SystemExit as stop:
    code = stop.code
if code:
    sys.exit(code)
print(json.dumps({"cpu": time.process_time() - start, "gc": sum(s for _, s in spent.values()),
                  "collections": [spent[g][0] for g in range(3)],
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "threshold": gc.get_threshold()[0]}))
"""


def run(threshold: str, notes: Path, out: Path, cache: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, threshold, str(notes), str(out)], capture_output=True,
                          text=True, env=side_env(cache))
    if proc.returncode:
        sys.exit(f"share-ner tag with threshold {threshold} failed:\n{proc.stderr[-2000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["digest"] = hash_dir(out, out.parent)
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=1500, help="first N MTSamples notes (default 1500)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--thresholds", default="default,10000,50000,200000",
                    help="young-generation thresholds, comma-separated; 'default': Python's own")
    ap.add_argument("--cache", type=Path, help="SHARE_NER_CACHE (default: a fresh one, built by a first run)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results file (default benchmarks/results/gc.md)")
    add_data_argument(ap)
    args = ap.parse_args(argv)
    thresholds = args.thresholds.split(",")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="share-ner-bench-gc-") as tmp:
        work = Path(tmp)
        notes = link_notes(work, args.data, args.notes)
        cache = args.cache or work / "cache"
        run(thresholds[0], notes, work / "warm", cache)  # builds the default model into the cache: not counted
        runs: dict[str, list[dict]] = {t: [] for t in thresholds}
        for r in range(args.rounds):
            for t in thresholds if r % 2 == 0 else thresholds[::-1]:
                res = run(t, notes, work / f"out-{t}-{r}", cache)
                runs[t].append(res)
                print(f"round {r} threshold {t}: {res['cpu']:.2f} CPU s, collector {res['gc']:.2f} s, "
                      f"collections {res['collections']}, {res['peak_mb']:.0f} MB", flush=True)
    digests = {res["digest"] for rs in runs.values() for res in rs}
    text = report(runs, args, started, len(digests) == 1)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0 if len(digests) == 1 else 1


def report(runs: dict[str, list[dict]], args, started: str, same: bool) -> str:
    shown = ["--notes", str(args.notes), "--rounds", str(args.rounds), "--thresholds", args.thresholds]
    base = runs[next(iter(runs))]
    lines = [
        "# The garbage collector's share of `share-ner tag`", "",
        f"Command: `nice python benchmarks/bench_gc.py {' '.join(shown)}` ({started}). The first {args.notes:,} "
        f"MTSamples notes, the default model, one process per threshold and round; medians of {args.rounds} rounds "
        "(all rounds in brackets). The collector's CPU seconds are timed around each collection "
        "(`gc.callbacks`); the total includes them. The first threshold is the baseline of the ratios.", "",
        "| young-generation threshold | collector CPU s | collections (young / middle / old) | CPU s in all | "
        "collector share | total, first / this | peak MB |",
        "|---|---:|---:|---:|---:|---:|---:|"]
    for t, rs in runs.items():
        gc_s = [r["gc"] for r in rs]
        cpu = [r["cpu"] for r in rs]
        counts = " / ".join(str(round(statistics.median(r["collections"][g] for r in rs))) for g in range(3))
        ratio = statistics.median(b["cpu"] / r["cpu"] for b, r in zip(base, rs))
        label = f"Python's default ({rs[0]['threshold']:,})" if t == "default" else f"{int(t):,}"
        lines.append(f"| {label} | {statistics.median(gc_s):.2f} ({', '.join(f'{x:.2f}' for x in gc_s)}) | {counts} "
                     f"| {statistics.median(cpu):.2f} ({', '.join(f'{x:.2f}' for x in cpu)}) | "
                     f"{statistics.median(g / c for g, c in zip(gc_s, cpu)):.1%} | {ratio:.2f}x | "
                     f"{statistics.median(r['peak_mb'] for r in rs):.0f} |")
    lines += ["", "Outputs: " + ("byte-identical at every threshold." if same else
                                 "NOT identical across thresholds."),
              "", "Ratios: the first threshold's CPU seconds / this one's, per round, the median (above 1: faster). "
              "The collections count those of the imports too (loading the model runs with the collector off)."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
