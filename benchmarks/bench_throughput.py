"""Throughput of ``share-ner tag`` end to end (read, tokenize, features, CRF, normalize, write).

On the MTSamples notes of ``mtsamples/raw/notes`` of the corpora directory (``--data``; 4,966 notes,
15.2 M characters), with the default model (``share_ner.default_model.build.default_model_dir()``) or the
``--model`` given (the table says which). Measures, each run in a fresh child process:

- start-up: Python imports, model and lexicon load, first note;
- one process and ``--jobs 2``: wall time, tokens/s (wall, after start-up),
  CPU seconds, peak memory of each worker;
- a cProfile of one process on the first ``--profile-notes`` notes, grouped by stage;
- the projection for MIMIC-III NOTEEVENTS (2,083,180 notes) on 16 cores.

Prints a table and writes ``benchmarks/results/throughput.md``::

    nice python benchmarks/bench_throughput.py [--model M] [--notes DIR] [--limit N] [--profile-notes N] [--out FILE]

The machine may be shared: the CPU-time figures are the load-independent ones.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_data import DATA, REPO, RESULTS_DIR, add_data_argument, command_line, shown_path

NOTES = DATA / "mtsamples" / "raw" / "notes"
RESULTS = RESULTS_DIR / "throughput.md"

MIMIC_III_NOTES = 2_083_180
# MIMIC-III NOTEEVENTS TEXT: about 3.8 G characters (the CSV is about 4 GB); an assumption, MIMIC is not read here.
MIMIC_III_CHARS = 3.8e9
CORES = 16

# Profile stages: (label, function names, file suffix); each is the cumulative time of those functions.
# Each stage's entry functions and the files they live in: today's layout (token features as emission scores, the
# CRF's Viterbi over a batch), then the layouts before (attribute lists tagged by CRFsuite; before the package
# split), so that a baseline checkout of older code is profiled by the same stages.
STAGES = [
    ("read note files", ("_read_note_file",), ("batch/runner.py", "batch.py")),
    ("sentences + tokens (rule tokenizer)", ("split_sentences",), ("text.py",)),
    ("token features (incl. abbreviations)", ("doc_emissions", "doc_sequences"), ("tagging/crf.py", "tagger.py")),
    ("  of which abbreviation detection", ("note_abbreviations",), ("extract.py",)),
    ("CRF tagging + decoding", ("viterbi", "_decode", "tag_sequences"), ("tagging/crf.py", "tagging/weights.py",
                                                                       "tagger.py")),
    ("normalization (CUIs)", ("decide_many",), ("linking/normalizer.py", "normalizer.py")),  # one note or a batch
    ("write outputs", ("write_annotations",), ("__init__.py",)),
    ("token counting (batch)", ("count_tokens",), ("batch/annotate.py", "batch.py")),
]
NESTED = {"  of which abbreviation detection"}


# ---------------------------------------------------------------- child processes


def child_startup(model: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    import share_ner.pipeline  # noqa: F401
    from share_ner.document import Document
    from share_ner.pipeline import Pipeline

    t1 = time.perf_counter()
    pipeline = Pipeline.load(model)
    t2 = time.perf_counter()
    pipeline.annotate(Document("warmup", "Patient with chest pain and shortness of breath. No fever."))
    t3 = time.perf_counter()
    return {"imports": t1 - t0, "load": t2 - t1, "first_note": t3 - t2, "rss_mb": peak_rss_mb()}


_STARTUP_CPU = [0.0]


def _timed_load(model: str) -> Any:
    from share_ner.batch.annotate import load_annotator

    t = time.process_time()
    annotate = load_annotator(model)
    _STARTUP_CPU[0] = time.process_time() - t
    return annotate


def child_run(model: str, notes: str, out: str, jobs: int, limit: int | None) -> dict[str, Any]:
    import threading

    from share_ner.batch.runner import BatchOptions, run_batch
    from share_ner.linking.store import saved_dense
    from share_ner.model import FILES

    wall = time.perf_counter()
    factory = functools.partial(_timed_load, model)  # its CPU time is recorded where it runs: here, if preloaded
    # as `share-ner tag` runs it: workers forked from this process once it has loaded the model, unless dense
    preload = not saved_dense(Path(model) / FILES.normalizer)
    memory: dict[str, float] = {}
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_memory, args=(memory, stop), daemon=True)
    sampler.start()
    summary = run_batch([notes], factory, BatchOptions(out=Path(out), jobs=jobs, progress=False, limit=limit,
                                                       model=model, preload=preload))
    stop.set()
    sampler.join()
    wall = time.perf_counter() - wall
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    counts = summary.to_dict()
    counts.update(counts.pop("this_run"))  # the run's own rates and times beside the output's counts
    return {"summary": counts, "wall": wall, "startup_cpu": _STARTUP_CPU[0],
            "cpu_self": me.ru_utime + me.ru_stime - memory.get("sampler_cpu", 0.0),
            "cpu_workers": kids.ru_utime + kids.ru_stime,
            "rss_self_mb": peak_rss_mb(), "rss_worker_mb": kids.ru_maxrss / 1024, "preload": preload, **memory}


def _sample_memory(memory: dict[str, float], stop: Any) -> None:
    """Every second until ``stop``: the largest private memory of one worker (what each more worker adds) and
    the largest proportional set size of this process and its workers together (what the run takes), in MB.
    Reading ``smaps_rollup`` costs CPU time in this process; it is kept in ``sampler_cpu`` and not counted."""
    me = os.getpid()
    while not stop.wait(1.0):
        total, private = 0.0, 0.0
        for pid in [me, *_children(me)]:
            roll = _rollup(pid)
            total += roll.get("Pss", 0) / 1024
            if pid != me:
                private = max(private, (roll.get("Private_Clean", 0) + roll.get("Private_Dirty", 0)) / 1024)
        memory["pss_total_mb"] = max(memory.get("pss_total_mb", 0.0), total)
        memory["private_worker_mb"] = max(memory.get("private_worker_mb", 0.0), private)
        memory["sampler_cpu"] = time.thread_time()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for t in os.listdir(f"/proc/{pid}/task")
                for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
    except OSError:
        return []


def _rollup(pid: int) -> dict[str, int]:
    """kB figures of /proc/PID/smaps_rollup (empty if the process is gone)."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
    except OSError:
        return {}
    return {k.rstrip(":"): int(v) for k, v, *_ in (line.split() for line in lines) if v.isdigit()}


def peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM): ``ru_maxrss`` would carry the parent's over ``exec``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _in_child(*args: str) -> dict[str, Any]:
    return run_child(__file__, *args)


def run_child(script: str | Path, *args: str) -> dict[str, Any]:
    """``python SCRIPT --child ARGS...`` in a fresh process; the JSON object on its last line of output. A failed
    child ends this benchmark with the end of its stderr."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), "--child", *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"{Path(script).stem}: child {args[0]} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- model


def resolve_model(arg: str | None) -> tuple[str, str]:
    """The model directory and a description of where it came from."""
    if arg:
        return str(Path(arg).resolve()), f"`{shown_path(arg, 'MODEL')}` (given with --model)"
    try:
        from share_ner.default_model.build import default_model_dir
    except ImportError:  # a baseline checkout from before the package split
        from share_ner.default_model import default_model_dir  # type: ignore[no-redef]

    return str(default_model_dir()), "the default model (`share_ner.default_model.build.default_model_dir()`)"


# ---------------------------------------------------------------- profile


def profile(model: str, notes: Path, n: int) -> tuple[float, list[tuple[str, float]]]:
    try:
        from share_ner.batch.annotate import load_annotator
        from share_ner.batch.runner import BatchOptions, run_batch
    except ImportError:  # a baseline checkout from before the package split
        from share_ner.batch import BatchOptions, load_annotator, run_batch  # type: ignore[no-redef]

    annotate = load_annotator(model)  # start-up is measured apart
    with tempfile.TemporaryDirectory() as tmp:
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        run_batch([notes], lambda: annotate, BatchOptions(out=Path(tmp), progress=False, limit=n))
        prof.disable()
        total = time.perf_counter() - t
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    cum = {label: sum(v[3] for (fname, _, name), v in stats.items() if name in funcs and fname.endswith(suffix))
           for label, funcs, suffix in STAGES}
    # doc_emissions (doc_sequences) calls split_sentences: keep the features alone
    cum[STAGES[2][0]] -= cum[STAGES[1][0]]
    return total, list(cum.items())


# ---------------------------------------------------------------- report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(p)
    p.add_argument("--model", help="model directory (default: the default model)")
    p.add_argument("--notes", default=str(NOTES), help="directory of notes (default: MTSamples)")
    p.add_argument("--limit", type=int, help="only the first N notes (quick check; the committed table uses all)")
    p.add_argument("--profile-notes", type=int, default=400, help="notes profiled with cProfile (default 400)")
    p.add_argument("--out", default=str(RESULTS), help="results file (default benchmarks/results/throughput.md)")
    p.add_argument("--code", default="", help="what code was measured (e.g. a commit), written in the results")
    args = p.parse_args(argv)
    notes = Path(args.notes)
    if not notes.is_dir():
        print(f"bench_throughput: {notes} not found; nothing to measure", file=sys.stderr)
        return 0
    model, model_desc = resolve_model(args.model)
    limit = [str(args.limit)] if args.limit else []

    start = _in_child("startup", model)
    print(f"start-up: imports {start['imports']:.2f} s, model load {start['load']:.2f} s, "
          f"first note {start['first_note']:.2f} s", file=sys.stderr)
    runs = {}
    for jobs in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            load = os.getloadavg()[0]
            runs[jobs] = _in_child("run", model, str(notes), tmp, str(jobs), *limit)
            runs[jobs]["load_before"] = load
        s = runs[jobs]["summary"]
        print(f"--jobs {jobs}: {s['notes']} notes, {s['tokens']} tokens, {runs[jobs]['wall']:.1f} s wall, "
              f"{s['tokens_per_second']:,.0f} tokens/s", file=sys.stderr)
    prof_total, stages = profile(model, notes, args.profile_notes)

    text = report(model_desc, start, runs, prof_total, stages, args)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    return 0


def report(model_desc: str, start: dict, runs: dict, prof_total: float, stages: list, args: argparse.Namespace) -> str:
    one, two = runs[1], runs[2]
    s1, s2 = one["summary"], two["summary"]
    tokens, chars = s1["tokens"], s1["characters"]
    cpu1 = one["cpu_self"] - one["startup_cpu"]  # CPU seconds of the work in one process, after start-up
    cpu_tps = tokens / cpu1
    speedup = s2["tokens_per_second"] / s1["tokens_per_second"]
    worker_rss = max(two["rss_worker_mb"], 0.0)
    feed_cpu = two["cpu_self"] - (two["startup_cpu"] if two.get("preload") else 0.0)
    tokens_per_char = tokens / chars
    mimic_tokens = MIMIC_III_CHARS * tokens_per_char
    efficiency = min(speedup / 2, 1.0)
    proj_tps = cpu_tps * CORES * efficiency
    ideal_tps = cpu_tps * CORES
    lines = [
        "# Throughput of `share-ner tag`",
        "",
        f"Command: `{command_line('bench_throughput.py')}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python {platform.python_version()}, "
        f"{os.cpu_count()} cores; load average before the runs: "
        f"{one['load_before']:.1f} / {two['load_before']:.1f}).",
        "",
        f"Model: {model_desc}." + (f" Code: {args.code}." if args.code else ""),
        f"Notes: `{Path(args.notes).name}` — {s1['notes']:,} notes, {chars:,} characters, {tokens:,} tokens "
        "(words and punctuation marks, `share_ner.batch.annotate.count_tokens`); end to end: read, tokenize, features, "
        "CRF, normalize, write one `.pipe.txt` per note.",
        "",
        "| measure | one process | `--jobs 2` | target |",
        "|---|---:|---:|---|",
        f"| wall time (s) | {one['wall']:.1f} | {two['wall']:.1f} | |",
        f"| start-up: model load + warm-up note (s) | {s1['startup_seconds']:.2f} | {s2['startup_seconds']:.2f} "
        f"({'once: workers forked from the loaded model' if two.get('preload') else 'per worker'}) | < 3 s |",
        f"| tokens/s, wall, after start-up | {s1['tokens_per_second']:,.0f} | {s2['tokens_per_second']:,.0f} "
        f"({speedup:.2f}×) | ≥ 30,000; `--jobs 2` ≥ 1.7× |",
        f"| tokens/s per CPU second (load-independent) | {cpu_tps:,.0f} | | ≥ 30,000 |",
        f"| notes/s, wall | {s1['notes_per_second']:,.1f} | {s2['notes_per_second']:,.1f} | |",
        f"| CPU seconds: main process / workers | {one['cpu_self']:.1f} / – | "
        f"{two['cpu_self']:.1f} / {two['cpu_workers']:.1f} | |",
        f"| peak memory per worker (MB) | {one['rss_self_mb']:.0f} | {worker_rss:.0f} (main: {two['rss_self_mb']:.0f}) | < 1,024 |",
        f"| memory of one more worker: its private peak (MB) | | {two.get('private_worker_mb', float('nan')):.0f} | |",
        f"| memory of the whole run: processes' PSS summed, peak (MB) | {one.get('pss_total_mb', float('nan')):.0f} | "
        f"{two.get('pss_total_mb', float('nan')):.0f} | |",
        f"| mentions found | {s1['mentions']:,} | {s2['mentions']:,} | equal |",
        "",
        "Wall-clock rates and the `--jobs 2` speed-up depend on what else the machine runs (the load average "
        "before each run is given above: near 0 means the cores were free); the CPU-second figures do not. "
        f"With `--jobs 2` the parent process (reading notes, sending them to the workers, writing outputs) "
        f"used {feed_cpu:.1f} CPU seconds for the whole corpus"
        + (f" besides loading the model the workers share ({two['startup_cpu']:.1f} CPU s)" if two.get("preload") else "")
        + f", i.e. it can feed about {tokens / max(feed_cpu, 1e-9):,.0f} tokens/s of workers.",
        "",
        f"Start-up in a fresh process: Python imports {start['imports']:.2f} s, `Pipeline.load` (model and "
        f"lexicon) {start['load']:.2f} s, first note (lazy set-up of the tokenizer and abbreviation detector) "
        f"{start['first_note']:.2f} s; peak {start['rss_mb']:.0f} MB. The batch start-up above is "
        f"`share_ner.batch.annotate.load_annotator`: load plus a one-line warm-up note, so the lazy set-up is not "
        f"counted in the tokens/s (one process: {one['startup_cpu']:.2f} CPU seconds).",
        "",
        f"## Where the time goes (cProfile, one process, first {args.profile_notes} notes, model already loaded)",
        "",
        "Cumulative time of each stage's entry function; profiling slows pure-Python code, so the shares matter "
        "more than the seconds.",
        "",
        "| stage | seconds | share |",
        "|---|---:|---:|",
    ]
    for label, secs in stages:
        lines.append(f"| {label} | {secs:.2f} | {secs / prof_total:.0%} |")
    other = prof_total - sum(secs for label, secs in stages if label not in NESTED)
    lines += [
        f"| other (batch loop, I/O glue) | {other:.2f} | {other / prof_total:.0%} |",
        f"| total | {prof_total:.2f} | 100% |",
        "",
        "## Projection: MIMIC-III NOTEEVENTS on 16 cores",
        "",
        f"MIMIC-III has {MIMIC_III_NOTES:,} notes; assuming about {MIMIC_III_CHARS / 1e9:.1f} G characters of TEXT "
        f"(NOTEEVENTS.csv is about 4 GB) and MTSamples' {tokens_per_char:.3f} tokens per character, that is "
        f"about {mimic_tokens / 1e6:,.0f} M tokens. The work is CPU-bound and the workers share no work, so "
        f"with `--jobs {CORES}` on {CORES} free cores at {cpu_tps:,.0f} tokens per CPU second: "
        f"{ideal_tps:,.0f} tokens/s, about **{mimic_tokens / ideal_tps / 60:.0f} minutes**; with the 2-process "
        f"efficiency measured here on a shared machine ({efficiency:.0%}) as a pessimistic bound: "
        f"{proj_tps:,.0f} tokens/s, about {mimic_tokens / proj_tps / 3600:.1f} hours. Peak memory about "
        + (f"{two['rss_self_mb']:.0f} MB for the parent, which holds the model the workers share, plus {CORES} × "
           f"{two['private_worker_mb']:.0f} MB of each worker's own"
           if two.get("preload") and two.get("private_worker_mb")
           else f"{CORES} × {max(worker_rss, one['rss_self_mb']):.0f} MB")
        + ". The parent process reads the gzipped CSV "
        f"and writes the shards (its CPU time is in the table), one process for all workers: at "
        f"{CORES} workers it must keep up with {ideal_tps:,.0f} tokens/s.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        what, rest = sys.argv[2], sys.argv[3:]
        if what == "startup":
            result = child_startup(rest[0])
        else:
            result = child_run(rest[0], rest[1], rest[2], int(rest[3]), int(rest[4]) if len(rest) > 4 else None)
        print(json.dumps(result))
        sys.exit(0)
    sys.exit(main())
