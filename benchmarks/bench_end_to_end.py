"""``share-ner tag`` end to end on the MTSamples notes: this code against a baseline checkout, in one run.

Each side is the ``share-ner`` of a Python environment: this checkout's (the Python running the script) and a
baseline's (``--baseline-python``: the interpreter of a venv where another checkout is installed), each with its own
``SHARE_NER_CACHE`` (``--cache``, ``--baseline-cache``; by default fresh directories in the work directory), so each
tags with the default model its own code builds. Per round: start-up (a process tagging one short note:
imports, model load, first note), one process on the notes, ``--jobs 2`` on the notes, each for both sides back to
back, the side that goes first alternating from round to round. A first round builds the
models and warms the caches and is not counted. Figures: CPU seconds of the process and its workers, wall seconds,
peak resident memory of the largest process; the best of ``--rounds`` rounds. The ratio new/old is old time / new
time. Each round then runs one process of the baseline and one of each other side at the same time, each on a core of
its own ("side by side"): a host whose speed drifts by a quarter between runs slows both alike, so the median of those
rounds' ratios is the steadiest figure of the run. ``--paired-rounds N`` adds N rounds of that measure alone, and
the report gives its median ratio a confidence interval. Tokens: words and punctuation marks
(``share_ner.batch.annotate.count_tokens``). Then a cProfile of one process of each side on the first
``--profile-notes`` notes, by stage (``bench_throughput.profile``).

    nice python benchmarks/bench_end_to_end.py --baseline-python OLD_VENV/bin/python \\
        [--baseline-cache DIR] [--cache DIR] [--notes N] [--rounds 2] [--warm-up 1] [--paired-rounds 0] \\
        [--also-python 3.13=PY] [--out benchmarks/results/end_to_end.md]

``--also-python NAME=PY`` (repeatable) adds a side: this checkout installed in the venv of another Python, measured in
the same rounds and shown beside the others (Python 3.11 and 3.13 side by side, each against the baseline).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_data import RESULTS_DIR, add_data_argument, side_env
from bench_speed_scale import link_notes, time_tag

HERE = Path(__file__).resolve().parent
RESULTS = RESULTS_DIR / "end_to_end.md"
START_NOTE = "Patient with chest pain (CP) and shortness of breath. No fever.\n"


def child_profile(n: int, notes: str) -> dict:
    """The stage profile of this side's code (``bench_throughput.profile``) on the first ``n`` notes."""
    sys.argv = [sys.argv[0]]  # bench_data reads --data from the command line at import
    from bench_throughput import NESTED, profile, resolve_model

    model, _ = resolve_model(None)
    total, stages = profile(model, Path(notes), n)
    return {"total": total, "stages": stages, "nested": sorted(NESTED)}


def run_profile(python: str, cache: Path, n: int, notes: Path) -> dict:
    env = side_env(cache)
    proc = subprocess.run([python, str(Path(__file__).resolve()), "--child-profile", str(n), str(notes)],
                          capture_output=True, text=True, env=env, cwd=str(HERE))
    if proc.returncode:
        sys.exit(f"profile with {python} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def count_tokens(notes: Path) -> tuple[int, int]:
    from share_ner.batch.annotate import count_tokens as count

    n = tokens = 0
    for path in sorted(notes.iterdir()):
        n += 1
        tokens += count(path.read_text(encoding="utf-8", errors="replace"))
    return n, tokens


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-python", required=True, help="the Python of a venv with the baseline installed")
    ap.add_argument("--baseline-name", default="baseline", help="what to call the baseline in the tables")
    ap.add_argument("--baseline-cache", type=Path, help="SHARE_NER_CACHE of the baseline (default: a fresh one)")
    ap.add_argument("--cache", type=Path, help="SHARE_NER_CACHE of this code (default: a fresh one)")
    ap.add_argument("--also-python", action="append", default=[], metavar="NAME=PY",
                    help="another side: this code in the venv of another Python (repeatable)")
    ap.add_argument("--notes", type=int, help="only the first N MTSamples notes (quick runs; default all)")
    ap.add_argument("--rounds", type=int, default=2, help="counted rounds (default 2)")
    ap.add_argument("--warm-up", type=int, default=1, help="uncounted rounds first (default 1: builds the models)")
    ap.add_argument("--paired-rounds", type=int, default=0,
                    help="more rounds of the side-by-side measure alone, after the others (default 0)")
    ap.add_argument("--profile-notes", type=int, default=300, help="notes profiled per side (0: no profile)")
    ap.add_argument("--work", type=Path, help="work directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="results file (default benchmarks/results/end_to_end.md)")
    add_data_argument(ap)
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="share-ner-bench-e2e-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        notes = link_notes(work, args.data, args.notes)
        one = work / "one"
        one.mkdir(exist_ok=True)
        (one / "start.txt").write_text(START_NOTE, encoding="utf-8")
        n_notes, tokens = count_tokens(notes)
        sides = {args.baseline_name: (args.baseline_python, args.baseline_cache or work / "cache-baseline"),
                 "this code": (sys.executable, args.cache or work / "cache-this")}
        for k, also in enumerate(args.also_python):
            name, python = also.split("=", 1)
            sides[f"this code, {name}"] = (python, work / f"cache-also-{k}")
        runs: dict = {(side, what): [] for side in sides for what in ("start", "jobs1", "jobs2")}
        paired: dict = {side: [] for side in list(sides)[1:]}  # (baseline run, side run) started together
        for r in range(args.rounds + args.warm_up + args.paired_rounds):
            # each measure of both sides back to back, the side first each round alternating: the machine's load
            # drifts over minutes, and so touches both sides of a pair alike
            order = list(sides.items()) if r % 2 == 0 else list(sides.items())[::-1]
            measures = (("start", one, ()), ("jobs1", notes, ()), ("jobs2", notes, ("--jobs", "2")))
            for what, folder, extra in measures if r < args.rounds + args.warm_up else ():
                for side, (python, cache) in order:
                    res = time_tag(python, folder, work / "tagged", cache, extra)
                    if what != "start":
                        summary = json.loads((work / "tagged" / "summary.json").read_text())
                        res["mentions"] = summary.get("mentions")
                    warm = r < args.warm_up
                    if not warm:
                        runs[(side, what)].append(res)
                    print(f"round {r}{' (warm-up)' if warm else ''} {side} {what}: {res['cpu']:.2f} CPU s, "
                          f"{res['wall']:.2f} s wall, {res['peak_mb']:.0f} MB", flush=True)
            base_python, base_cache = sides[args.baseline_name]
            for side, (python, cache) in list(sides.items())[1:]:
                with ThreadPoolExecutor(2) as pool:  # each run waits on its own child: the threads only wait
                    both = [pool.submit(time_tag, py, notes, work / f"tagged-{k}", c)
                            for k, (py, c) in enumerate(((base_python, base_cache), (python, cache)))]
                    pair = tuple(f.result() for f in both)
                if r >= args.warm_up:
                    paired[side].append(pair)
                print(f"round {r} side by side, {args.baseline_name} / {side}: {pair[0]['cpu']:.2f} / "
                      f"{pair[1]['cpu']:.2f} CPU s", flush=True)
        profiles = {side: run_profile(python, cache, args.profile_notes, notes)
                    for side, (python, cache) in list(sides.items())[:2]} if args.profile_notes else {}
    text = report(runs, paired, list(sides), profiles, n_notes, tokens, started, args)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """A confidence interval for the median of ``values`` from their order statistics (the sign test's): the
    ``k``-th smallest to the ``k``-th largest, ``k`` the largest with coverage at least ``level``, and that
    coverage; (nan, nan, 0.0) when even the smallest to the largest falls short."""
    x = sorted(values)
    n = len(x)
    below = 0.0  # P(Binomial(n, 1/2) < k)
    best = None
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2 ** n
        coverage = 1 - 2 * below
        if coverage < level:
            break
        best = (x[k - 1], x[n - k], coverage)
    return best or (math.nan, math.nan, 0.0)


def _best(runs: list[dict], key: str) -> float:
    return min(r[key] for r in runs)


def report(runs: dict, paired: dict, sides: list, profiles: dict, n_notes: int, tokens: int, started: str, args) -> str:
    old, new, *also = sides
    shown = ["--baseline-python", "OLD_VENV/bin/python", "--baseline-name", args.baseline_name,
             *[a for k, x in enumerate(args.also_python) for a in ("--also-python", f"{x.split('=')[0]}=PY{k + 1}")],
             *(["--notes", str(args.notes)] if args.notes else []), "--rounds", str(args.rounds),
             *(["--warm-up", str(args.warm_up)] if args.warm_up != 1 else []),
             *(["--paired-rounds", str(args.paired_rounds)] if args.paired_rounds else []),
             "--profile-notes", str(args.profile_notes)]
    cmd = " ".join(["nice python benchmarks/bench_end_to_end.py", *map(shlex.quote, shown)])
    lines = [
        "# `share-ner tag` end to end: this code against a baseline", "",
        f"Command: `{cmd}` ({started}). The machine may have been shared with other work during the run: the sides "
        "alternate and are compared as ratios within the run.", "",
        f"Notes: the {'first ' if args.notes else ''}{n_notes:,} MTSamples notes, {tokens:,} tokens; each side tags "
        "them with the default model its code builds (read, tokenize, features, CRF, normalize, attributes where the "
        f"code fills them, write). Best of {args.rounds} rounds (all rounds in brackets); the start-up row is a "
        "process tagging one short note (imports, model load, first note).", "",
        f"| measure | {old} | " + " | ".join(f"{side} | new / old" for side in (new, *also)) + " |",
        "|---|---:|" + "---:|---:|" * (1 + len(also))]

    def row(label: str, what: str, key: str, fmt: str = "{:.2f}", speed: bool = True) -> None:
        a = runs[(old, what)]
        ba = _best(a, key)
        cells = [f"{fmt.format(ba)} ({', '.join(fmt.format(r[key]) for r in a)})"]
        for side in (new, *also):
            b = runs[(side, what)]
            bb = _best(b, key)
            cells.append(f"{fmt.format(bb)} ({', '.join(fmt.format(r[key]) for r in b)})")
            cells.append(f"**{ba / bb:.2f}x**" if speed else f"{bb / ba:.2f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("one process: CPU s", "jobs1", "cpu")
    row("one process: wall s", "jobs1", "wall")
    row("`--jobs 2`: CPU s (all processes)", "jobs2", "cpu")
    row("`--jobs 2`: wall s", "jobs2", "wall")
    cells = []
    intervals = []
    for side in (new, *also):
        pairs = paired[side]
        ratios = [a["cpu"] / b["cpu"] for a, b in pairs]
        median = statistics.median(ratios)
        cells.append(f"{statistics.median(p[1]['cpu'] for p in pairs):.2f} ("
                     + ", ".join(f"{a['cpu']:.2f} / {b['cpu']:.2f}" for a, b in pairs) + ")")
        cells.append(f"**{median:.2f}x**")
        low, high, coverage = median_interval(ratios)
        faster = sum(x > 1 for x in ratios)
        intervals.append(f"{side}: median ratio {median:.3f}x over {len(ratios)} rounds, "
                         + (f"{coverage:.1%} interval {low:.3f}x to {high:.3f}x" if coverage else "too few rounds "
                            "for an interval") + f"; this code faster in {faster} of {len(ratios)} rounds.")
    lines.append(f"| one process, side by side with the {old}: CPU s | "
                 f"{statistics.median(p[0]['cpu'] for p in paired[new]):.2f} | " + " | ".join(cells) + " |")
    row("start-up: CPU s", "start", "cpu")
    row("start-up: wall s", "start", "wall")
    row("peak memory, one process (MB)", "jobs1", "peak_mb", "{:.0f}", speed=False)
    row("peak memory, largest process of `--jobs 2` (MB)", "jobs2", "peak_mb", "{:.0f}", speed=False)
    for side in sides:
        cpu1, wall1, wall2 = (_best(runs[(side, w)], k) for w, k in (("jobs1", "cpu"), ("jobs1", "wall"),
                                                                      ("jobs2", "wall")))
        mentions = {r.get("mentions") for w in ("jobs1", "jobs2") for r in runs[(side, w)]}
        lines.append("")
        lines.append(f"{side}: {tokens / cpu1:,.0f} tokens per CPU second in one process (start-up included), "
                     f"`--jobs 2` {wall1 / wall2:.2f}x one process on wall time; mentions "
                     f"{', '.join(f'{m:,}' for m in sorted(x for x in mentions if x is not None))} "
                     f"({'the same in every run' if len(mentions) == 1 else 'NOT the same in every run'}).")
    lines += ["", "Ratios: old time / new time (above 1: this code is faster); memory: new / old. Side by side: "
              f"the median of the rounds (each round's {old} / side CPU seconds in brackets) and the median ratio of "
              "those rounds, the two processes of a round started together, each with a core of its own."]
    lines += ["", "Side by side over all rounds"
              + (f" ({args.rounds} with the other measures, {args.paired_rounds} of this measure alone)"
                 if args.paired_rounds else "")
              + ": the median ratio and a distribution-free confidence interval for it (the order statistics a "
              "sign test gives; no assumption about how the rounds spread):", ""]
    lines += [f"- {x}" for x in intervals]
    if profiles:
        lines += ["", f"## Where the time goes (cProfile, one process, first {args.profile_notes} notes, model "
                  "loaded)", "", "Cumulative time of each stage's entry function (`bench_throughput.STAGES`); "
                  "profiling slows pure-Python code, so compare shares, not seconds.", "",
                  f"| stage | {old} s | share | this code s | share |", "|---|---:|---:|---:|---:|"]
        po, pn = profiles[old], profiles[new]
        by_new = dict(map(tuple, pn["stages"]))
        for label, secs in po["stages"]:
            s_new = by_new.get(label, 0.0)
            lines.append(f"| {label} | {secs:.2f} | {secs / po['total']:.0%} | {s_new:.2f} | "
                         f"{s_new / pn['total']:.0%} |")
        other = [p["total"] - sum(s for label, s in p["stages"] if label not in p["nested"]) for p in (po, pn)]
        lines.append(f"| other (batch loop, I/O glue, attributes) | {other[0]:.2f} | {other[0] / po['total']:.0%} | "
                     f"{other[1]:.2f} | {other[1] / pn['total']:.0%} |")
        lines.append(f"| total | {po['total']:.2f} | 100% | {pn['total']:.2f} | 100% |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-profile":
        print(json.dumps(child_profile(int(sys.argv[2]), sys.argv[3])))
        sys.exit(0)
    sys.exit(main())
