"""Memory of `share-ner tag` with the default model: where it goes while loading, and its peak over a run.

Two measurements per Python environment (this checkout's, and with ``--baseline-python`` another checkout's venv):

* load steps, in a fresh process: the resident set size (RSS) after the imports `share-ner tag` makes, after
  ``Pipeline.load`` of the default model, and after the first note (the tokenizer, abbreviation detector and
  attribute rules are set up on first use);
* `share-ner tag` on the first ``--notes`` MTSamples notes, one process and ``--jobs 2``: the peak RSS of the
  main process (VmHWM, from ``wait4``), and, sampled every half second from ``/proc/PID/smaps_rollup``, the
  largest private memory of one worker (what each more worker adds: the model is shared copy-on-write) and the
  largest proportional set size (PSS) of the whole process tree.

    nice python benchmarks/bench_memory.py --baseline-python OLD_VENV/bin/python --out benchmarks/results/memory.md
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_data import add_data_argument, side_env, write_results  # noqa: E402
from bench_throughput import _children, _rollup  # noqa: E402  (/proc readers: one copy)

STEPS_CODE = r"""
import json, sys
def rss():
    out = {}
    for line in open("/proc/self/status"):
        key, value = line.split(":", 1)
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out
steps = [("Python", rss())]
import share_ner.batch, share_ner.commands.tag, share_ner.pipeline
try:  # today's layout, then the one before the package split (a baseline checkout)
    import share_ner.linking.normalizer
except ImportError:
    import share_ner.normalizer
steps.append(("imports of share-ner tag", rss()))
try:
    from share_ner.default_model.build import default_model_dir
except ImportError:
    from share_ner.default_model import default_model_dir
from share_ner.pipeline import Pipeline
model = default_model_dir()
pipe = Pipeline.load(model)
steps.append(("Pipeline.load (CRF model, features, normalizer and lexicon index)", rss()))
from share_ner.document import Document
text = ("Patient with hypertension and congestive heart failure (CHF), no chest pain. History of MI. "
        "Mother had breast cancer.")
pipe.annotate(Document("note", text))
steps.append(("first note (tokenizer, abbreviation detector, attribute rules)", rss()))
print(json.dumps({"steps": steps, "modules": len(sys.modules),
                  "scikit-learn imported": any(m.split(".")[0] == "sklearn" for m in sys.modules)}))
"""


def load_steps(python: str, env: dict) -> dict:
    proc = subprocess.run([python, "-c", STEPS_CODE], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir())
    if proc.returncode:
        sys.exit(f"{python}: load steps failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def tag_run(python: str, env: dict, notes: Path, out: Path, jobs: int) -> dict:
    """Peak RSS of `share-ner tag`'s process, and the sampled peaks of its tree's PSS and a worker's own memory."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [str(Path(python).parent / "share-ner"), "tag", str(notes), "--out", str(out), "--jobs", str(jobs)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    memory = {"pss_total_mb": 0.0, "private_worker_mb": 0.0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.5):
            total = 0.0
            for pid in [proc.pid, *_children(proc.pid)]:
                roll = _rollup(pid)
                total += roll.get("Pss", 0) / 1024
                if pid != proc.pid:
                    own = (roll.get("Private_Clean", 0) + roll.get("Private_Dirty", 0)) / 1024
                    memory["private_worker_mb"] = max(memory["private_worker_mb"], own)
            memory["pss_total_mb"] = max(memory["pss_total_mb"], total)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    stop.set()
    sampler.join()
    err = proc.stderr.read() if proc.stderr else ""
    if status:
        sys.exit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return {"peak_rss_mb": usage.ru_maxrss / 1024, **memory}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-python", help="the Python of a venv with another checkout of share-ner installed")
    ap.add_argument("--baseline-name", default="baseline", help="what to call the baseline in the table")
    ap.add_argument("--baseline-cache", type=Path, help="the baseline's SHARE_NER_CACHE (default: a new one)")
    ap.add_argument("--notes", type=int, default=1000, help="MTSamples notes to tag (default 1000)")
    add_data_argument(ap)
    ap.add_argument("--out", type=Path, help="write the results (Markdown) here")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    sides = {"this code": sys.executable}
    if args.baseline_python:
        sides = {args.baseline_name: args.baseline_python, **sides}
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="share-ner-bench-memory-") as tmp:
        notes = Path(tmp) / "notes"
        notes.mkdir()
        for path in sorted((args.data / "mtsamples" / "raw" / "notes").iterdir())[:args.notes]:
            (notes / path.name).symlink_to(path.resolve())
        for side, python in sides.items():
            # each side its own cache (its default model), built by a first call that is not measured
            cache = os.environ.get("SHARE_NER_CACHE") if side == "this code" else args.baseline_cache
            env = side_env(cache or Path(tmp) / f"cache-{side.replace(' ', '-')}")
            load_steps(python, env)
            steps = load_steps(python, env)
            one = tag_run(python, env, notes, Path(tmp) / "out", 1)
            two = tag_run(python, env, notes, Path(tmp) / "out", 2)
            results[side] = {"steps": steps, "one": one, "two": two}
            print(side, json.dumps(results[side]), flush=True)
    text = report(results, started, args)
    print(text)
    if args.out:
        write_results(args.out, text)
    return 0


def report(results: dict, started: str, args) -> str:
    shown = ["--baseline-python", "OLD_VENV/bin/python", "--baseline-name", args.baseline_name] \
        if args.baseline_python else []
    shown += ["--notes", str(args.notes)] + (["--out", str(args.out)] if args.out else [])
    cmd = " ".join(["nice python benchmarks/bench_memory.py", *map(shlex.quote, shown)])
    sides = list(results)
    lines = ["# Memory of `share-ner tag` with the default model", "",
             f"Command: `{cmd}` ({started}). The machine was shared with other work during the run; memory "
             "figures do not depend on it.", "",
             "Load steps: resident set size (RSS, MB) of a fresh process after each step.", "",
             "| step | " + " | ".join(sides) + " |", "|---|" + "---:|" * len(sides)]
    names = [name for name, _ in results[sides[-1]]["steps"]["steps"]]
    for i, name in enumerate(names):
        cells = []
        for side in sides:
            steps = results[side]["steps"]["steps"]
            cells.append(f"{steps[i][1]['VmRSS']:.0f}" if i < len(steps) else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| scikit-learn imported | " + " | ".join(
        "yes" if results[s]["steps"]["scikit-learn imported"] else "no" for s in sides) + " |")
    lines += ["", f"`share-ner tag` on the first {args.notes:,} MTSamples notes (MB; target: under 300 for one "
              "process, under 200 of its own for each more worker):", "",
              "| measure | " + " | ".join(sides) + " |", "|---|" + "---:|" * len(sides)]
    rows = [("one process: peak RSS", lambda r: r["one"]["peak_rss_mb"]),
            ("one process: peak PSS", lambda r: r["one"]["pss_total_mb"]),
            ("`--jobs 2`: main process peak RSS", lambda r: r["two"]["peak_rss_mb"]),
            ("`--jobs 2`: one worker's private memory, peak", lambda r: r["two"]["private_worker_mb"]),
            ("`--jobs 2`: PSS of all processes summed, peak", lambda r: r["two"]["pss_total_mb"])]
    for label, get in rows:
        lines.append(f"| {label} | " + " | ".join(f"{get(results[s]):.0f}" for s in sides) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
