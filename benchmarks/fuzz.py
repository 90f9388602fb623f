"""Fuzzing ``share-ner`` with broken and hostile input: model files cut short or with bytes changed, site placeholder
patterns that backtrack, 10 MB notes, corrupted CSV and gzip exports, runs into one ``--out`` at once, workers
killed under ``tag`` and under ``Annotator.pipe``.

Each case tries many inputs through the command line (or the API) as a user runs it, on MTSamples notes with the
default model, and counts:

- crashes: a process ended by a signal, or a traceback on stderr;
- hangs: a process still running at the case's timeout (then killed);
- silent losses: a run that goes on although its input was bad (a changed model accepted), a good note missing
  from the outputs or whose output differs from a clean run's, a bad record neither tagged nor named in the
  rejects or the error.

Prints the table and writes ``benchmarks/results/fuzz.md``::

    nice python benchmarks/fuzz.py [--data DIR] [--jobs 2]

Cases are functions registered with :func:`case`, in the order they run; another benchmark (Spark's) can import
this module, register its own cases on :data:`CASES` and write the same table with :func:`report`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from bench_data import REPO, RESULTS_DIR, add_data_argument
from fault_injection import Bench, Run, children, csv_text, mimic_row, read_outputs, rejects_of, wait_until

RESULTS = RESULTS_DIR / "fuzz.md"


@dataclass
class Outcome:
    """What one case found over its tries."""

    case: str
    tries: int = 0
    crashes: int = 0
    hangs: int = 0
    losses: int = 0
    seen: list[str] = field(default_factory=list)  # what happened, in a few words

    def run(self, run: Run) -> None:
        """Count a command-line run: a crash (signal, traceback) or a hang."""
        self.tries += 1
        if run.hung:
            self.hangs += 1
        elif run.status < 0 or "Traceback (most recent call last)" in run.stderr:
            self.crashes += 1

    @property
    def clean(self) -> bool:
        return self.crashes == self.hangs == self.losses == 0


@dataclass
class Fuzz:
    """The case's shared material: the temporary directory, the command runner, notes and clean outputs."""

    tmp: Path
    bench: Bench
    jobs: int
    source: Path
    model: Path  # a copy of the default model
    notes: Path  # a few MTSamples notes
    clean: dict[str, bytes]  # their outputs with the default model
    texts: list[str]
    many: Path  # 100 MTSamples notes: runs long enough to be met mid-way
    clean_many: dict[str, bytes]


Case = Callable[[Fuzz], Outcome]
CASES: list[tuple[str, Case]] = []


def case(name: str) -> Callable[[Case], Case]:
    """Register a case under ``name`` (the table's first column)."""
    def register(fn: Case) -> Case:
        CASES.append((name, fn))
        return fn
    return register


def one_line_naming(run: Run, *names: str) -> bool:
    """A one-line error, exit 2, naming each of ``names``."""
    err = run.stderr.strip()
    return run.status == 2 and err.count("\n") == 0 and all(n in err for n in names)


# ---------------------------------------------------------------- model files

# Loads every variant of a model in one process, one line each: "<variant> refused <message>" or "<variant>
# accepted"; a variant that crashes the process ends it (the parent starts again after it).
LOADER = '''
import json, sys
import share_ner
from share_ner.errors import ShareNerError

for line in sys.stdin:
    name, path = line.rstrip("\\n").split("\\t")
    print(name, end=" ", flush=True)
    try:
        annotator = share_ner.load(path)
        annotator("He has chest pain and a history of congestive heart failure (CHF).")
    except ShareNerError as exc:
        print("refused", str(exc).replace(path, "MODEL"), flush=True)
        continue
    print("accepted", flush=True)
'''


def load_variants(fz: Fuzz, variants: dict[str, Path], out: Outcome) -> dict[str, str]:
    """Each variant's outcome through :data:`LOADER` ("refused ..." / "accepted"); a crash or hang is counted."""
    loader = fz.tmp / "loader.py"
    loader.write_text(LOADER)
    todo = list(variants)
    got: dict[str, str] = {}
    while todo:
        proc = subprocess.Popen([sys.executable, str(loader)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            stdout, stderr = proc.communicate("".join(f"{v}\t{variants[v]}\n" for v in todo), timeout=1800)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            out.hangs += 1
        done = [ln.rstrip().split(" ", 1) for ln in stdout.splitlines()]
        for parts in done:
            if len(parts) == 2:
                got[parts[0]] = parts[1]
        if proc.returncode not in (0, None) or "Traceback" in stderr:
            out.crashes += 1
            # the variant it died on: the one it named last without an outcome, else the first not done
            last = done[-1][0] if done and len(done[-1]) == 1 else next(v for v in todo if v not in got)
            got[last] = "crashed"
        todo = [v for v in todo if v not in got]
    out.tries += len(variants)
    return got


def _variant(fz: Fuzz, name: str, change: Callable[[Path], None]) -> Path:
    """A copy of the model (files linked, the one changed copied) with ``change`` applied."""
    path = fz.tmp / "variants" / name
    shutil.copytree(fz.model, path, copy_function=os.link)
    change(path)
    return path


def _rewrite(rel: str, transform: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def change(model: Path) -> None:
        data = (model / rel).read_bytes()
        (model / rel).unlink()  # a link to the original: write a file of its own
        (model / rel).write_bytes(transform(data))
    return change


@case("model files cut at every sixteenth of their length (each file of the default model)")
def model_cut(fz: Fuzz) -> Outcome:
    out = Outcome("")
    files = sorted(json.loads((fz.model / "config.json").read_text())["files"]) + ["config.json"]
    variants, cut_file = {}, {}
    for rel in files:
        for k in range(16):
            name = f"cut-{rel.replace('/', '-')}-{k}"
            variants[name] = _variant(fz, name, _rewrite(rel, lambda d, k=k: d[: len(d) * k // 16]))
            cut_file[name] = rel
    got = load_variants(fz, variants, out)
    named = sum(1 for v, r in got.items() if r.startswith(f"refused MODEL/{cut_file[v]}: ") and "\n" not in r)
    out.losses += sum(1 for r in got.values() if r == "accepted")
    # the command line on one cut of each file, with workers
    one_line = 0
    for rel in files:
        run = fz.bench.tag([str(fz.notes), "--model", str(variants[f"cut-{rel.replace('/', '-')}-8"]), "--out",
                            str(fz.tmp / "o-cut" / rel.replace("/", "-")), "--jobs", str(fz.jobs)], timeout=600)
        out.run(run)
        one_line += one_line_naming(run, rel)
        out.losses += run.status == 0
    out.seen.append(f"{len(files)} files x 16 cuts loaded by share_ner.load: {named} of {len(got)} refused in one "
                    f"line naming the file; `tag --jobs {fz.jobs}` on each file cut in half: {one_line} of "
                    f"{len(files)} exit 2, one line naming it")
    return out


@case("model.crfsuite with random bytes or 32-bit words changed (1 to 16 at a time)")
def model_flips(fz: Fuzz) -> Outcome:
    out = Outcome("")
    rnd = random.Random(45)
    variants = {}
    for i in range(300):
        def change(data: bytes, seed: int = rnd.randrange(1 << 30)) -> bytes:
            return _mutate(data, random.Random(seed))
        name = f"flip-{i}"
        variants[name] = _variant(fz, name, _rewrite("model.crfsuite", change))
    got = load_variants(fz, variants, out)
    refused = sum(1 for r in got.values() if r.startswith("refused MODEL/model.crfsuite: its content differs"))
    out.losses += sum(1 for r in got.values() if r == "accepted")
    out.seen.append(f"{refused} of {len(got)} refused by the manifest (one line naming model.crfsuite)")
    return out


def _mutate(data: bytes, rnd: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rnd.choice([1, 2, 4, 16])):
        at = rnd.randrange(len(out))
        if rnd.random() < 0.5:
            out[at] ^= 1 << rnd.randrange(8)
        else:  # an offset or a count replaced
            at = min(at & ~3, len(out) - 4)
            out[at:at + 4] = struct.pack("<I", rnd.choice([0, 1, 0xFFFFFFFF, rnd.randrange(1 << 32),
                                                           rnd.randrange(len(out))]))
    return bytes(out)


# CRFsuite's own reader, in one process, on model files the structure check passed (a crash ends the process).
STRUCTURE = '''
import random, sys
import pycrfsuite
sys.path.insert(0, sys.argv[3])
from fuzz import _mutate
from share_ner.tagging.weights import WeightsError, check_model_bytes, read_weights

original = open(sys.argv[1], "rb").read()
names = [n.decode() for n in read_weights(original).attributes][:5000]
items = [{n: 1.0 for n in names[i:i + 40]} | {f"unseen{i}": 1.0} for i in range(0, len(names), 40)]
for seed in map(int, sys.argv[2].split(",")):
    data = _mutate(original, random.Random(seed))
    print(seed, end=" ", flush=True)
    try:
        check_model_bytes(data)
    except WeightsError:
        print("refused", flush=True)
        continue
    tagger = pycrfsuite.Tagger()
    tagger.open_inmemory(data)
    tagger.labels()
    tagger.tag(items)
    print("tagged", flush=True)
'''


@case("the CRFsuite file's structure check alone (no manifest): CRFsuite's reader on every file it lets through")
def crf_structure(fz: Fuzz) -> Outcome:
    out = Outcome("")
    script = fz.tmp / "structure.py"
    script.write_text(STRUCTURE)
    seeds = list(range(3000))
    outcome: dict[int, str] = {}
    while len(outcome) < len(seeds):
        todo = [s for s in seeds if s not in outcome]
        run = subprocess.run([sys.executable, str(script), str(fz.model / "model.crfsuite"), ",".join(map(str, todo)),
                              str(Path(__file__).parent)], capture_output=True, text=True, timeout=3600)
        for line in run.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2:
                outcome[int(parts[0])] = parts[1]
            else:  # the process died on this one
                outcome[int(parts[0])] = "crashed"
                out.crashes += 1
        if run.returncode != 0 and not run.stdout.strip():
            out.crashes += 1
            break
    out.tries = len(outcome)
    tagged = sum(v == "tagged" for v in outcome.values())
    out.seen.append(f"{len(outcome) - tagged} refused by the check, {tagged} opened and tagged with by CRFsuite "
                    "(changes to weights or names: the manifest refuses those)")
    return out


# ---------------------------------------------------------------- hostile patterns, huge notes

HOSTILE = [r"(a+)+b", r"(a*)*b", r"(a|aa)+b", r"(a|a?)+b", r"(\w+\s?)+$", r"(.*a){12}x", r"(x+x+)+y",
           r"([a-z]+|[b-z]+)+!", r"(?:\d+-?)+X", r"(\s*a\s*)+b", r"((ab)*|a)*c", r"(?:[A-Za-z]+\s?)+;"]
# Polynomial on the bait note's long runs of one character, harmless on clinical text: for the time limit.
SLOW = [r"a*a*a*a*a*a*a*b", r"x*~*x*~*x*~*x*~*x*~*x*~*q", r"1*-*1*-*1*-*1*-*1*-*1*-*Z"]


@case("site placeholder patterns that backtrack (12 exponential: refused when loaded; 3 polynomial: the time limit)")
def hostile_patterns(fz: Fuzz) -> Outcome:
    out = Outcome("")
    notes = fz.tmp / "hostile-notes"
    shutil.copytree(fz.notes, notes)
    bait = " ".join(["a" * 300, "x" * 300, "1" * 300, "ab" * 150, "aaaa " * 60, "word " * 100]) + "\n"
    (notes / "bait.txt").write_text(fz.texts[0] + bait, encoding="utf-8")
    refused = timed_out = 0
    for i, regex in enumerate(HOSTILE + SLOW):
        site = fz.tmp / f"site{i}.tsv"
        site.write_text(f"name\tregex\npattern\t{regex}\n", encoding="utf-8")
        dest = fz.tmp / f"o-hostile{i}"
        run = fz.bench.tag([str(notes), "--out", str(dest), "--jobs", str(fz.jobs), "--placeholders", str(site),
                            "--note-timeout", "20"], timeout=900)
        out.run(run)
        if regex in HOSTILE:
            ok = one_line_naming(run, f"site{i}.tsv:2: the regex for 'pattern' can take exponential time")
            refused += ok
            out.losses += not ok
            continue
        got, rej = read_outputs(dest), rejects_of(dest)
        stopped = [r for r in rej if r[1] == "bait" and "time limit" in r[4]]
        timed_out += len(stopped) == 1
        # every other note is tagged (a site pattern may mask text, so only their presence is compared)
        out.losses += run.status != 0 or sum(k in got for k in fz.clean) != len(fz.clean) or \
            ("bait.pipe.txt" not in got and not stopped)
    out.seen.append(f"{refused} of {len(HOSTILE)} refused in one line naming the file and line; with "
                    f"{timed_out} of {len(SLOW)} polynomial ones the bait note was stopped at the time limit "
                    f"(`--note-timeout 20`, `--jobs {fz.jobs}`) and rejected by name, every other note tagged")
    return out


@case("notes of 10 MB: MTSamples text, one line without a line break, one character repeated")
def huge_notes(fz: Fuzz) -> Outcome:
    out = Outcome("")
    notes = fz.tmp / "huge"
    notes.mkdir()
    size = 10_000_000
    text = ""
    for t in fz.texts * 200:
        if len(text) >= size:
            break
        text += t if t.endswith("\n") else t + "\n"
    shapes = {"mtsamples": text[:size], "one-line": " ".join(text[:size].split()), "repeated": "a" * size}
    for name, body in shapes.items():
        (notes / f"{name}.txt").write_text(body, encoding="utf-8")
    dest = fz.tmp / "o-huge"
    run = fz.bench.tag([str(notes), "--out", str(dest), "--format", "jsonl", "--jobs", str(fz.jobs)], timeout=7200)
    out.run(run)
    got = {json.loads(v)["doc_id"]: json.loads(v) for v in read_outputs(dest).values()}
    named = {r[1]: r[4] for r in rejects_of(dest)}
    out.losses += sum(1 for n in shapes if n not in got and n not in named) + (run.status != 0)
    per_mb = run.seconds / (3 * size / 1e6)
    counts = ", ".join(f"{n}: {len(got[n]['mentions'])} mentions" for n in got)
    out.seen.append(f"{len(got)} tagged ({counts}), "
                    f"{len(named)} rejected; {run.seconds:.0f} s in all, {per_mb:.1f} s per million characters "
                    "with the work of all workers (the default time limit is 300 s per million)")
    return out


# ---------------------------------------------------------------- corrupted exports

@dataclass
class Export:
    """A MIMIC-III-style CSV export of MTSamples notes: its bytes, and each row's id, first byte and text bytes."""

    data: bytes
    ids: list[str]
    starts: list[int]
    texts: list[tuple[int, int]]  # (first, end) byte of each row's note text, inside its quotes


def _export(fz: Fuzz, rows: int = 120) -> Export:
    header = csv_text([]).encode()
    data, ids, starts, texts = bytearray(header), [], [], []
    for k in range(rows):
        row_id = str(1000 + k)
        chunk = csv_text([mimic_row(row_id, fz.texts[k % len(fz.texts)])]).encode()[len(header):]
        at = len(data)
        comma = -1
        for _ in range(10):  # the text is the 11th field; the fields before it hold no comma
            comma = chunk.index(b",", comma + 1)
        ids.append(row_id)
        starts.append(at)
        texts.append((at + comma + 2, at + len(chunk) - 2))  # inside the quotes, before the closing quote and \n
        data += chunk
    return Export(bytes(data), ids, starts, texts)


def _csv_run(fz: Fuzz, path: Path, dest: Path) -> tuple[Run, dict[str, bytes], list[list[str]]]:
    run = fz.bench.tag([str(path), "--out", str(dest), "--shard-size", "25", "--jobs", str(fz.jobs)], timeout=900)
    return run, read_outputs(dest), rejects_of(dest)


@case("CSV exports: bytes changed inside note texts, and the file cut at every sixteenth")
def corrupted_csv(fz: Fuzz) -> Outcome:
    out = Outcome("")
    ex = _export(fz)
    path = fz.tmp / "csv" / "NOTEEVENTS.csv"
    path.parent.mkdir()
    path.write_bytes(ex.data)
    _, clean, _ = _csv_run(fz, path, fz.tmp / "o-csv-clean")
    rnd = random.Random(7)
    exact = tries = 0
    for trial in range(12):
        # bytes of note texts replaced by others that are no quote, comma or line break: every row stays a row
        changed = bytearray(ex.data)
        hit: set[str] = set()
        for _ in range(rnd.choice([1, 5, 30])):
            row = rnd.randrange(len(ex.ids))
            first, end = ex.texts[row]
            at = rnd.randrange(first, end)
            if changed[at] in b'"\r\n':
                continue
            changed[at] = rnd.choice([0x00, 0xFF, 0xC3, 0x80, ord("x"), 0xE2])
            hit.add(ex.ids[row])
        path.write_bytes(bytes(changed))
        run, got, rej = _csv_run(fz, path, fz.tmp / f"o-csv-flip{trial}")
        out.run(run)
        rejected = {r[1] for r in rej}
        lost = [i for i in ex.ids if i not in got and i not in rejected]
        differ = [i for i in ex.ids if i not in hit and got.get(i) != clean[i]]
        out.losses += len(lost) + len(differ) + (run.status != 0)
        exact += not lost and not differ
        tries += 1
    for k in range(1, 16):
        cut = len(ex.data) * k // 16
        path.write_bytes(ex.data[:cut])
        run, got, rej = _csv_run(fz, path, fz.tmp / f"o-csv-cut{k}")
        out.run(run)
        ends = ex.starts[1:] + [len(ex.data)]
        whole = [i for i, e in zip(ex.ids, ends) if e <= cut]  # rows complete before the cut
        cut_at = next((n for n, (b, e) in enumerate(zip(ex.starts, ends)) if b < cut < e), None)
        named = cut_at is None or ex.ids[cut_at] in got or any(r[2] == str(cut_at + 1) for r in rej)
        wrong = [i for i in whole if got.get(i) != clean[i]]
        out.losses += len(wrong) + (not named) + (run.status != 0)
        exact += not wrong and named
        tries += 1
    out.seen.append(f"{exact} of {tries} runs: every row untouched tagged as in the clean run, every changed or "
                    "cut row tagged or named in the rejects")
    return out


@case("gzip CSV exports: cut at every sixteenth, and bytes of the compressed stream changed")
def corrupted_gzip(fz: Fuzz) -> Outcome:
    out = Outcome("")
    ex = _export(fz)
    packed = gzip.compress(ex.data, compresslevel=6)
    path = fz.tmp / "gz" / "NOTEEVENTS.csv.gz"
    path.parent.mkdir()
    path.write_bytes(packed)
    _, clean, _ = _csv_run(fz, path, fz.tmp / "o-gz-clean")
    rnd = random.Random(11)
    good = 0
    variants = [packed[: len(packed) * k // 16] for k in range(1, 16)]
    for _ in range(15):
        changed = bytearray(packed)
        for _ in range(rnd.choice([1, 3, 10])):
            changed[rnd.randrange(10, len(changed))] ^= 1 << rnd.randrange(8)
        variants.append(bytes(changed))
    for k, body in enumerate(variants):
        path.write_bytes(body)
        run, got, rej = _csv_run(fz, path, fz.tmp / f"o-gz{k}")
        out.run(run)
        kept = [i for i in ex.ids if i in got]
        # a break in the stream is named (a reject or the error); what was read before it is tagged as in the
        # clean run, unless the break is named: deflate data changed may decode to other text until the CRC at
        # the end of the stream tells
        broken = len(kept) < len(ex.ids) or any(got[i] != clean[i] for i in kept)
        named = bool(rej) or one_line_naming(run, "NOTEEVENTS.csv.gz")
        ok = run.status in (0, 2) and (named or not broken)
        good += ok
        out.losses += not ok
    out.seen.append(f"{good} of {len(variants)} runs: every break in the stream named in the rejects or the error, "
                    "no row of an unbroken stream lost or changed")
    return out


# ---------------------------------------------------------------- concurrent runs, killed workers

@case("a second run into the same --out while the first runs; the first killed, then run again")
def concurrent_runs(fz: Fuzz) -> Outcome:
    out = Outcome("")
    dest = fz.tmp / "o-shared"
    second: list[tuple[Run, bool]] = []  # the second run, and whether the first was still running when it ended
    refused = missed = 0
    for trial in range(3):
        outputs = 10 * trial
        while True:
            shutil.rmtree(dest, ignore_errors=True)

            def start_another(proc: subprocess.Popen, outputs: int = outputs) -> None:
                # once the first holds the lock; then after some of its outputs
                wait_until(proc, lambda: (dest / ".share-ner.lock").exists()
                           and len(list(dest.glob("*.pipe.txt"))) >= outputs)
                run = fz.bench.tag([str(fz.many), "--out", str(dest)], timeout=600)
                second.append((run, proc.poll() is None))

            first = fz.bench.tag([str(fz.many), "--out", str(dest), "--jobs", str(fz.jobs)], kill=start_another,
                                 timeout=1800)
            run, met = second[-1]
            if met or outputs == 0 or run.status != 0:
                break
            # The first finished before the second started up and looked (a fast machine): nothing to refuse, and
            # nothing lost; meet it earlier.
            missed += 1
            outputs //= 2
        out.run(first)
        out.run(run)
        ok = one_line_naming(run, "another run is writing into this directory", "pid")
        refused += ok
        out.losses += (not ok) + (read_outputs(dest) != fz.clean_many) + (first.status != 0)
    # the first run killed (SIGKILL) mid-way: its lock is stale, the same command takes over and resumes
    shutil.rmtree(dest)

    def kill_midway(proc: subprocess.Popen) -> None:
        wait_until(proc, lambda: len(list(dest.glob("*.pipe.txt"))) >= 5)
        for pid in children(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.kill()

    killed = fz.bench.tag([str(fz.many), "--out", str(dest), "--jobs", str(fz.jobs)], kill=kill_midway)
    out.tries += 1
    time.sleep(1)
    again = fz.bench.command(["tag", str(fz.many), "--out", str(dest), "--jobs", str(fz.jobs)], timeout=1800)
    out.run(again)
    took_over = again.status == 0 and "taking over from a run that ended without finishing" in again.stderr
    same = read_outputs(dest) == fz.clean_many and not (dest / ".share-ner.lock").exists()
    out.losses += (not took_over) + (not same) + (killed.status != -9)
    out.seen.append(f"{refused} of 3 second runs refused in one line naming the first (pid, host, start, command), "
                    f"the first's outputs as a clean run's"
                    + (f" ({missed} started again earlier: the first had finished before the second looked)"
                       if missed else "") + "; after a SIGKILL the same command "
                    f"{'took over the stale lock and resumed to the same outputs' if took_over and same else 'FAILED'}")
    return out


# Annotator.pipe over the notes in two processes, a worker killed from outside mid-way: the results must equal
# one process's.
PIPE = '''
import os, signal, sys, threading, time
import share_ner
from share_ner.inputs.files import read_notes

docs = list(read_notes(sys.argv[1]).values()) * 3
annotator = share_ner.load()
one = [annotator(d) for d in docs]
me = os.getpid()

def kill_a_worker():
    time.sleep(float(sys.argv[2]))
    kids = open(f"/proc/{me}/task/{me}/children").read().split()
    if kids:
        os.kill(int(kids[0]), signal.SIGKILL)

threading.Thread(target=kill_a_worker, daemon=True).start()
two = list(annotator.pipe(docs, batch_size=2, n_process=2))
print("same" if two == one else "DIFFERENT", len(two), len(one))
'''


@case("workers SIGKILLed from outside: under `tag --jobs N`, and under `Annotator.pipe(n_process=2)`")
def killed_workers(fz: Fuzz) -> Outcome:
    out = Outcome("")
    same_tag = 0
    for trial in range(3):
        dest = fz.tmp / f"o-killed{trial}"

        def kill_a_worker(proc: subprocess.Popen, dest: Path = dest, trial: int = trial) -> None:
            wait_until(proc, lambda: len(list(dest.glob("*.pipe.txt"))) >= 5 + 25 * trial
                       and len(children(proc.pid)) == fz.jobs)
            pids = children(proc.pid)
            if pids:
                os.kill(pids[0], signal.SIGKILL)

        run = fz.bench.tag([str(fz.many), "--out", str(dest), "--jobs", str(fz.jobs)], kill=kill_a_worker,
                           timeout=1800)
        out.run(run)
        ok = run.status == 0 and read_outputs(dest) == fz.clean_many
        same_tag += ok
        out.losses += not ok
    script = fz.tmp / "pipe.py"
    script.write_text(PIPE)
    same_pipe = 0
    for delay in ("2", "6", "12"):
        try:
            run = subprocess.run([sys.executable, str(script), str(fz.notes), delay], capture_output=True, text=True,
                                 timeout=1800)
        except subprocess.TimeoutExpired:
            out.tries += 1
            out.hangs += 1
            continue
        out.run(Run(run.returncode, run.stderr, 0.0))
        ok = run.returncode == 0 and run.stdout.startswith("same")
        same_pipe += ok
        out.losses += not ok
    out.seen.append(f"`tag`: {same_tag} of 3 runs exit 0 with the clean outputs; `pipe`: {same_pipe} of 3 give the "
                    "one-process results")
    return out


# ---------------------------------------------------------------- the table

TITLE = "Fuzzing: bad models, hostile patterns and notes, corrupted exports, runs at once, killed workers"
HOW = "through the command line (and `share_ner.load`, `Annotator.pipe`) as a user runs them"


def report(outcomes: list[Outcome], jobs: int, cpu: float, command: str = "nice python benchmarks/fuzz.py",
           title: str = TITLE, how: str = HOW) -> str:
    lines = [f"# {title}", "",
             f"Measured with `{command}` (workers: `--jobs {jobs}`), on MTSamples notes with the default model, "
             f"{how}. A crash is a "
             "process ended by a signal or a traceback on stderr; a hang, a process still running at the case's "
             "timeout; a silent loss, a run that went on with bad input (a changed model accepted), a good note "
             "missing or different from a clean run's, or a bad record neither tagged nor named.",
             "The machine was shared with other work while this ran; the seconds quoted are not a speed "
             "measurement.", "",
             "| case | tries | crashes | hangs | silent losses | what happened |", "|---|---:|---:|---:|---:|---|"]
    for o in outcomes:
        seen = "; ".join(o.seen).replace("|", "\\|")
        lines.append(f"| {o.case} | {o.tries} | {o.crashes} | {o.hangs} | {o.losses} | {seen} |")
    lines += ["", f"{sum(o.clean for o in outcomes)} of {len(outcomes)} cases with no crash, hang or silent loss, "
              f"over {sum(o.tries for o in outcomes)} tries. CPU time of all the runs: {cpu:.0f} s.", ""]
    return "\n".join(lines)


def setup(tmp: Path, source: Path, jobs: int, count: int = 12) -> Fuzz:
    from share_ner.default_model.build import default_model_dir

    bench = Bench(tmp, jobs)
    paths = sorted(source.glob("*.txt"))[:100]
    notes, many = tmp / "notes", tmp / "many"
    notes.mkdir()
    many.mkdir()
    for k, p in enumerate(paths):
        shutil.copyfile(p, many / p.name)
        if k < count:
            shutil.copyfile(p, notes / p.name)
    model = tmp / "model"
    shutil.copytree(default_model_dir(), model)
    clean = read_outputs(_clean(bench, notes, tmp / "o-clean"))
    clean_many = read_outputs(_clean(bench, many, tmp / "o-clean-many"))
    return Fuzz(tmp, bench, jobs, source, model, notes, clean, [p.read_text(encoding="utf-8") for p in paths[:count]],
                many, clean_many)


def _clean(bench: Bench, notes: Path, dest: Path) -> Path:
    run = bench.tag([str(notes), "--out", str(dest)])
    if run.status != 0:
        sys.exit(f"fuzz: the clean run failed: {run.stderr}")
    return dest


def command_line(argv: list[str] | None, doc: str, results: Path) -> argparse.Namespace:
    """The options of a fuzz benchmark: ``--data``, ``--jobs``, ``--out`` (default ``results``), ``--only``."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_data_argument(p)
    p.add_argument("--jobs", type=int, default=2, help="worker processes of the runs that use workers (default 2)")
    p.add_argument("--out", default=str(results), help=f"results file (default {results.relative_to(REPO)})")
    p.add_argument("--only", action="append", default=[], metavar="WORD",
                   help="run only the cases whose name holds WORD (repeatable); the file is not written")
    return p.parse_args(argv)


def run_cases(cases: list[tuple[str, Case]], fz: Any, only: list[str], name: str) -> list[Outcome]:
    """Run each case (those whose name holds a word of ``only``, when given), saying how each went on stderr."""
    outcomes = []
    for case_name, fn in cases:
        if only and not any(w in case_name for w in only):
            continue
        start = time.monotonic()
        o = fn(fz)
        o.case = case_name
        o.seen = [s.replace(f"{fz.tmp}/", "") for s in o.seen]
        outcomes.append(o)
        print(f"{name}: {case_name}: {o.tries} tries, {o.crashes} crashes, {o.hangs} hangs, {o.losses} losses "
              f"({time.monotonic() - start:.0f} s)", file=sys.stderr, flush=True)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    args = command_line(argv, __doc__, RESULTS)
    source = args.data / "mtsamples" / "raw" / "notes"
    if not source.is_dir():
        print(f"fuzz: {source}: no MTSamples notes", file=sys.stderr)
        return 2
    cpu0 = children_cpu()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp_name:
        outcomes = run_cases(CASES, setup(Path(tmp_name), source, args.jobs), args.only, "fuzz")
    return publish(report(outcomes, args.jobs, children_cpu() - cpu0), outcomes, args)


def children_cpu() -> float:
    """CPU seconds of the child processes ended and waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def publish(text: str, outcomes: list[Outcome], args: argparse.Namespace) -> int:
    """Print the table, write it (unless ``--only`` chose some cases), and the exit status: 0 when every case is
    clean."""
    print(text)
    if not args.only:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0 if all(o.clean for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
