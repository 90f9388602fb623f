"""Fault injection for ``share-ner tag`` (and ``train``): every fault of a hospital-scale run, on real notes.

Runs each case on a 500-note MTSamples directory (copied to a temporary directory) and on a 300-row
MIMIC-III-style ``NOTEEVENTS.csv`` synthesized from MTSamples notes (no MIMIC data is read), with the default
model, through the command line as a user runs it. Each case's outputs are compared note by note with a clean run
of the same notes; prints a table and writes ``benchmarks/results/fault_injection.md``::

    nice python benchmarks/fault_injection.py [--data DIR] [--jobs 2]

Columns: the case, what should happen, what happened, good notes whose output equals the clean run's out of the
good notes given, rejects that name the bad records (out of those expected), note text found in rejects, stderr
or summary (markers seeded in every bad record, and every 25+ character line of the notes), the exit status,
and the verdict: "nothing lost" when every good note was kept, every bad one named, no text leaked and the exit
status is the expected one.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from bench_data import add_data_argument

REPO = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results" / "fault_injection.md"
MARKER = "QZX-SEEDED-NOTE-TEXT"
POISON = "QZX-POISON-PILL"
III_HEADER = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY",
              "DESCRIPTION", "CGID", "ISERROR", "TEXT"]

# Runs share-ner's command line; with a poison marker set, the loaded model kills its own process (SIGKILL, as the
# OOM killer does) on any batch or note containing it: a note that kills every worker it reaches.
DRIVER = '''
import os, signal, sys
from share_ner.commands import tag as tag_command
from share_ner.cli import main

POISON = os.environ.get("FAULT_POISON")
if POISON:
    real = tag_command.load_annotator

    class Poisoned:
        def __init__(self, inner):
            self.inner = inner

        def __call__(self, doc):
            if POISON in doc.text:
                os.kill(os.getpid(), signal.SIGKILL)
            return self.inner(doc)

        def many(self, docs):
            if any(POISON in d.text for d in docs):
                os.kill(os.getpid(), signal.SIGKILL)
            return self.inner.many(docs)

    tag_command.load_annotator = lambda *a, **k: Poisoned(real(*a, **k))
sys.exit(main(sys.argv[1:]))
'''


@dataclass
class Run:
    status: int
    stderr: str
    seconds: float
    hung: bool = False  # still running at the timeout (then killed)


@dataclass
class Row:
    case: str
    expected: str
    observed: str
    kept: int
    given: int
    named: int
    bad: int
    leaked: int
    status: int
    want_status: int
    extra_ok: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        ok = (self.kept == self.given and self.named == self.bad and self.leaked == 0
              and self.status == self.want_status and self.extra_ok)
        return "nothing lost" if ok else "LOST"


class Bench:
    def __init__(self, tmp: Path, jobs: int) -> None:
        self.tmp = tmp
        self.jobs = jobs
        self.driver = tmp / "driver.py"
        self.driver.write_text(DRIVER)
        self.note_lines: list[str] = []

    def tag(self, args: list[str], *, env: dict[str, str] | None = None, preexec: Callable[[], None] | None = None,
            kill: Callable[[subprocess.Popen], None] | None = None, timeout: float = 3600) -> Run:
        return self.command(["tag", *args, "--quiet"], env=env, preexec=preexec, kill=kill, timeout=timeout)

    def command(self, args: list[str], *, env: dict[str, str] | None = None,
                preexec: Callable[[], None] | None = None, kill: Callable[[subprocess.Popen], None] | None = None,
                timeout: float = 3600) -> Run:
        """``share-ner ARGS`` in a child process (through the driver); one still running at ``timeout`` is killed,
        with its workers, and reported ``hung``."""
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, str(self.driver), *args],
                                env=dict(os.environ, **(env or {})), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=preexec)
        if kill is not None:
            kill(proc)
        hung = False
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            hung = True
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
        # paths are shown relative to the temporary directory, whose name is no result
        return Run(proc.returncode, err.replace(f"{self.tmp}/", ""), time.monotonic() - start, hung)

    def leaks(self, *texts: str) -> int:
        """Seeded markers and note lines found in ``texts`` (rejects, stderr, summaries)."""
        found = 0
        for text in texts:
            found += text.count(MARKER) + text.count(POISON)
            found += sum(1 for line in self.note_lines if line in text)
        return found


def read_outputs(out: Path) -> dict[str, bytes]:
    """Each note's output: per-note files by relative path, CSV shard lines by note id."""
    got: dict[str, bytes] = {}
    for p in sorted(out.rglob("*")):
        if not p.is_file() or p.name.startswith("."):
            continue
        if p.name.startswith("part-") and p.suffix == ".jsonl":
            for line in p.read_text(encoding="utf-8").splitlines():
                got[json.loads(line)["doc_id"]] = line.encode()
        elif p.name.endswith((".pipe.txt", ".ann", ".jsonl")) and not p.name.startswith("part-"):
            got[str(p.relative_to(out))] = p.read_bytes()
    return got


def rejects_of(out: Path) -> list[list[str]]:
    path = out / "rejects.tsv"
    if not path.exists():
        return []
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]


def side_texts(out: Path, run: Run) -> list[str]:
    texts = [run.stderr]
    for name in ("rejects.tsv", "summary.json"):
        if (out / name).exists():
            texts.append((out / name).read_text(encoding="utf-8", errors="replace"))
    return texts


def kept(got: dict[str, bytes], clean: dict[str, bytes], keys: list[str]) -> int:
    return sum(1 for k in keys if k in got and got[k] == clean[k])


def csv_text(rows: list[list[str]]) -> str:
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    buf.write(",".join(f'"{h}"' for h in III_HEADER) + "\n")
    for r in rows:
        w.writerow(r)
    return buf.getvalue()


def mimic_row(row_id: str, text: str, iserror: str = "") -> list[str]:
    return [row_id, "22532", "167853", "2151-08-04", "", "", "Discharge summary", "Report", "", iserror, text]


def wait_until(proc: subprocess.Popen, ready: Callable[[], bool]) -> None:
    while not ready():
        if proc.poll() is not None:
            return
        time.sleep(0.05)


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(p)
    p.add_argument("--jobs", type=int, default=2, help="worker processes of the runs that use workers (default 2)")
    p.add_argument("--out", default=str(RESULTS), help="results file (default benchmarks/results/fault_injection.md)")
    args = p.parse_args(argv)
    data = args.data
    source = data / "mtsamples" / "raw" / "notes"
    if not source.is_dir():
        print(f"fault_injection: {source}: no MTSamples notes", file=sys.stderr)
        return 2
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="fault-injection-") as tmp_name:
        rows = run_cases(Path(tmp_name), source, args.jobs)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    text = report(rows, cpu, args.jobs)
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0 if all(r.verdict == "nothing lost" for r in rows) else 1


def run_cases(tmp: Path, source: Path, jobs: int) -> list[Row]:
    b = Bench(tmp, jobs)
    j = ["--jobs", str(jobs)]
    paths = sorted(source.glob("*.txt"))[:500]
    notes = tmp / "notes"
    for i, path in enumerate(paths):  # five wards of 100 notes
        (notes / f"ward{i // 100}").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, notes / f"ward{i // 100}" / path.name)
    texts = [p.read_text(encoding="utf-8") for p in paths]
    b.note_lines = sorted({ln.strip() for t in texts for ln in t.splitlines() if len(ln.strip()) >= 25})
    note_keys = [f"ward{i // 100}/{p.name[:-4]}.pipe.txt" for i, p in enumerate(paths)]
    csv_rows = [mimic_row(str(1000 + i), texts[i]) for i in range(300)]
    csv_ids = [str(1000 + i) for i in range(300)]
    csv_path = tmp / "NOTEEVENTS.csv"
    csv_path.write_text(csv_text(csv_rows), encoding="utf-8")

    clean_dir, clean_csv = tmp / "clean-dir", tmp / "clean-csv"
    b.tag([str(notes), "--out", str(clean_dir), *j])
    b.tag([str(csv_path), "--out", str(clean_csv), "--shard-size", "50"])
    ref_dir, ref_csv = read_outputs(clean_dir), read_outputs(clean_csv)
    assert len(ref_dir) == 500 and len(ref_csv) == 300, (len(ref_dir), len(ref_csv))
    rows: list[Row] = []

    # 1a. a worker killed from outside mid-run (the OOM killer)
    out = tmp / "c1a"
    killed: list[int] = []

    def kill_a_worker(proc: subprocess.Popen) -> None:
        wait_until(proc, lambda: len(list(out.rglob("*.pipe.txt"))) >= 50 and len(children(proc.pid)) == jobs)
        pids = children(proc.pid)
        if pids:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(len(list(out.rglob("*.pipe.txt"))))

    run = b.tag([str(notes), "--out", str(out), *j], kill=kill_a_worker)
    got = read_outputs(out)
    rows.append(Row("worker SIGKILLed from outside mid-run (dir, --jobs 2)", "worker replaced, its batch redone, "
                    "exit 0", f"worker killed after {killed[0] if killed else '-'} outputs; {len(got)} outputs, "
                    f"{len(rejects_of(out))} rejects", kept(got, ref_dir, note_keys), 500, 0, 0,
                    b.leaks(*side_texts(out, run)), run.status, 0, extra_ok=bool(killed)))

    # 1b. a note that kills every worker it reaches
    poisoned = tmp / "poisoned"
    shutil.copytree(notes, poisoned)
    victim = poisoned / "ward2" / paths[250].name
    victim.write_text(victim.read_text(encoding="utf-8") + f"\n{POISON}\n", encoding="utf-8")
    out = tmp / "c1b"
    run = b.tag([str(poisoned), "--out", str(out), *j], env={"FAULT_POISON": POISON})
    got, rej = read_outputs(out), rejects_of(out)
    good = [k for k in note_keys if k != note_keys[250]]
    named = sum(1 for r in rej if r[1] == paths[250].name[:-4] and r[4] == "worker died (signal 9)")
    rows.append(Row("a note kills every worker it reaches (dir, --jobs 2)", "that note rejected 'worker died "
                    "(signal 9)', all others written", f"{len(got)} outputs; reject: {rej[0][4] if rej else '-'}",
                    kept(got, ref_dir, good), 499, named, 1, b.leaks(*side_texts(out, run)), run.status, 0,
                    extra_ok=len(rej) == 1))

    # 2. the same note name in two inputs
    a_dir, b_dir = tmp / "coll" / "2019", tmp / "coll" / "2020"
    a_dir.mkdir(parents=True)
    b_dir.mkdir(parents=True)
    for path in paths[:300]:
        shutil.copyfile(path, a_dir / path.name)
    for path in paths[250:]:
        shutil.copyfile(path, b_dir / path.name)
    out = tmp / "c2"
    run = b.tag([str(a_dir), str(b_dir), "--out", str(out)])
    got = read_outputs(out)
    names_both = f"coll/2019/{paths[250].name}" in run.stderr and f"coll/2020/{paths[250].name}" in run.stderr
    rows.append(Row("same note name in two inputs (300 + 250 notes, 50 names shared)", "stop before any work, "
                    "one line naming both files, exit 2", f"{len(got)} outputs written; "
                    f"{'both files named' if names_both else 'not named'}", 0, 0, int(names_both), 1,
                    b.leaks(run.stderr), run.status, 2, extra_ok=not got and run.stderr.count("\n") == 1))
    out = tmp / "c2-parent"
    run = b.tag([str(tmp / "coll"), "--out", str(out), *j])
    got = read_outputs(out)
    rows.append(Row("the same two directories given as their parent", "all 550 notes written, in 2019/ and 2020/",
                    f"{len(got)} outputs", len(got), 550, 0, 0, b.leaks(*side_texts(out, run)), run.status, 0))

    # 3 and 4. bad rows of every kind, each seeding the marker; an unterminated quote in the middle
    m = f"Seen by Dr. [**Last Name (STitle) 123**] {MARKER}"
    bad_rows = csv_rows[:150] + [mimic_row("1150", "x")] + csv_rows[151:]
    body = csv_text(bad_rows)
    lines = body.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("1150,"))
    lines[at] = f'1150,22532,167853,2151-08-04,,,"Discharge summary","Report",,,"{m} the quote never closes'
    lines.insert(at + 1, m)
    extra = [f"{m},1,2",  # wrong field count, text where the id goes
             f'"{m}||x",1,2,2151-08-04,,,"DS","Report",,,"{m}"',  # an id that would break pipe lines
             f',1,2,2151-08-04,,,"DS","Report",,,"{m}"',  # empty id
             f'1001,1,2,2151-08-04,,,"DS","Report",,,"{m} a second 1001"',  # duplicate
             f'9001,1,2,2151-08-04,,,"DS","Report",,,"{m} \x00"']  # NUL
    leaky = tmp / "leaky" / "NOTEEVENTS.csv"
    leaky.parent.mkdir()
    leaky.write_bytes(("\n".join(lines).rstrip("\n") + "\n" + "\n".join(extra) + "\n").encode()
                      + f'9002,1,2,,,,"DS","R",,,"{m} caf'.encode() + b'\xff"\n')
    out = tmp / "c3"
    run = b.tag([str(leaky), "--out", str(out), "--shard-size", "50", *j])
    got, rej = read_outputs(out), rejects_of(out)
    good = [k for k in csv_ids if k != "1150"]
    headerless = tmp / "headerless.csv"
    headerless.write_text(lines[1] + "\n" + lines[2] + "\n", encoding="utf-8")
    run_h = b.tag([str(headerless), "--out", str(tmp / "c3h")])
    run_s = b.tag([str(leaky)])  # without --out: rejects on stderr
    leaked = b.leaks(*side_texts(out, run), run_h.stderr, run_s.stderr)
    rows.append(Row("bad rows of 7 kinds, each seeding note text; a header-less CSV; rejects to stderr",
                    "no text in any reject, stderr line, summary or error", f"{len(rej)} rejects; header-less: exit "
                    f"{run_h.status}", kept(got, ref_csv, good), 299, len(rej), 7, leaked, run.status, 0,
                    extra_ok=run_h.status == 2 and run_s.status == 0))
    quote = [r for r in rej if r[1] == "1150" and r[2] == "151" and "unterminated quote" in r[4]]
    rows.append(Row("an unterminated quote at row 151 of 300", "cut at row 152; 299 exact notes, 1 reject naming "
                    "1150", f"reject: {quote[0][1]} row {quote[0][2]} byte {quote[0][3]}" if quote else "not named",
                    kept(got, ref_csv, good), 299, len(quote), 1, leaked, run.status, 0))

    # 5. duplicate ROW_IDs
    dup = tmp / "dup" / "NOTEEVENTS.csv"
    dup.parent.mkdir()
    dup.write_text(csv_text(csv_rows + [mimic_row(str(1000 + i), texts[i + 300]) for i in range(10)]),
                   encoding="utf-8")
    out = tmp / "c5"
    run = b.tag([str(dup), "--out", str(out), "--shard-size", "50"])
    got, rej = read_outputs(out), rejects_of(out)
    named = sum(1 for r in rej if "duplicate note id" in r[4])
    rows.append(Row("10 duplicate ROW_IDs after the 300 rows", "second copies rejected 'duplicate note id'",
                    f"{len(got)} notes, {named} duplicates rejected", kept(got, ref_csv, csv_ids), 300, named, 10,
                    b.leaks(*side_texts(out, run)), run.status, 0, extra_ok=len(got) == 300))

    # 6. a symlink loop, a dangling link and a FIFO among the notes
    looped = tmp / "looped"
    shutil.copytree(notes, looped)
    (looped / "ward0" / "self").symlink_to("..")
    (looped / "ward1" / "gone.txt").symlink_to("missing.txt")
    os.mkfifo(looped / "ward1" / "pipe.txt")
    out = tmp / "c6"
    run = b.tag([str(looped), "--out", str(out), *j])
    got, rej = read_outputs(out), rejects_of(out)
    named = sum(1 for r in rej if r[1] in ("gone", "pipe"))
    rows.append(Row("symlink loop (ward0/self -> ..), dangling link, FIFO", "each note once, the link and FIFO "
                    "rejected with a reason", f"{len(got)} outputs; {'; '.join(r[4] for r in rej)}",
                    kept(got, ref_dir, note_keys), 500, named, 2, b.leaks(*side_texts(out, run)), run.status, 0,
                    extra_ok=len(got) == 500))

    # 7a. the disk fills mid-run (a 50 kB file size limit stands for it: a shard of 100 notes' mentions is larger),
    # then space is freed
    out = tmp / "c7a"

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))

    run = b.tag([str(csv_path), "--out", str(out), "--shard-size", "100"], preexec=small_disk)
    one_line = run.stderr.strip().count("\n") == 0 and "cannot write (File too large)" in run.stderr
    partial = len(read_outputs(out))
    again = b.tag([str(csv_path), "--out", str(out), "--shard-size", "100"])
    got = read_outputs(out)
    rows.append(Row("disk full mid-run (CSV shards; a file size limit), then space freed", "one line naming the path, exit 2; the "
                    "rerun resumes", f"exit {run.status}: {run.stderr.strip()[:90]}...; {partial} kept, rerun exit "
                    f"{again.status}", kept(got, ref_csv, csv_ids), 300, 0, 0, b.leaks(run.stderr, again.stderr),
                    run.status, 2, extra_ok=one_line and again.status == 0
                    and (out / "summary.json").exists()))

    # 7b. an output sub-directory that cannot be created (a file in its place)
    out = tmp / "c7b"
    out.mkdir()
    (out / "ward3").write_text("in the way")
    run = b.tag([str(notes), "--out", str(out), *j])
    one_line = run.stderr.strip().count("\n") == 0 and "c7b/ward3: cannot write (File exists)" in run.stderr
    (out / "ward3").unlink()
    again = b.tag([str(notes), "--out", str(out), *j])
    got = read_outputs(out)
    rows.append(Row("an output sub-directory blocked mid-run, then fixed", "one line naming it, exit 2; the rerun "
                    "resumes", f"exit {run.status}: {run.stderr.strip()[:70]}...; rerun exit {again.status}",
                    kept(got, ref_dir, note_keys), 500, 0, 0, b.leaks(run.stderr, again.stderr), run.status, 2,
                    extra_ok=one_line and again.status == 0))

    # 8. a 5 MB note, against its pieces tagged as separate notes
    big_dir = tmp / "big"
    big_dir.mkdir()
    big = ""
    for t in texts * 4:
        if len(big) >= 5_000_000:
            break
        big += t if t.endswith("\n") else t + "\n"
    (big_dir / "big.txt").write_text(big, encoding="utf-8")
    sys.path.insert(0, str(REPO))
    from share_ner.batch.annotate import note_pieces

    pieces = note_pieces(big)
    piece_dir = tmp / "pieces"
    piece_dir.mkdir()
    for k, (s, e) in enumerate(pieces):
        (piece_dir / f"piece{k}.txt").write_text(big[s:e], encoding="utf-8")
    out, out_p = tmp / "c8", tmp / "c8-pieces"
    run = b.tag([str(big_dir), "--out", str(out), "--format", "jsonl"])
    b.tag([str(piece_dir), "--out", str(out_p), "--format", "jsonl", *j])
    whole = json.loads((out / "big.jsonl").read_text(encoding="utf-8"))["mentions"] if (out / "big.jsonl").exists() \
        else None
    expected = []
    for k, (s, e) in enumerate(pieces):
        for mention in json.loads((out_p / f"piece{k}.jsonl").read_text(encoding="utf-8"))["mentions"]:
            expected.append({**mention, "spans": [[a + s, b_ + s] for a, b_ in mention["spans"]]})
    same = whole is not None and whole == expected
    rows.append(Row(f"a note of {len(big):,} characters", "tagged; its mentions equal those of its "
                    f"{len(pieces)} pieces tagged as notes", f"{len(whole or [])} mentions, "
                    f"{'equal' if same else 'DIFFERENT'}", int(same), 1, 0, 0, b.leaks(*side_texts(out, run)),
                    run.status, 0))

    # 9. train: gold without a note, notes without gold
    rows.append(train_case(b, tmp, paths[:20], texts[:20]))

    # 10. the summary after a resume; ISERROR rows
    flagged = tmp / "flagged" / "NOTEEVENTS.csv"
    flagged.parent.mkdir()
    flagged.write_text(csv_text(csv_rows + [mimic_row(str(5000 + i), texts[i], "1") for i in range(10)]
                                + [["7000", "1", "2"]]), encoding="utf-8")
    summaries = []
    for name, killer in (("c10-clean", None), ("c10", "term")):
        out = tmp / name

        def stop_midway(proc: subprocess.Popen, out: Path = out) -> None:
            wait_until(proc, lambda: len(list((out / "NOTEEVENTS").glob("part-*"))) >= 2)
            proc.send_signal(signal.SIGTERM)

        first = b.tag([str(flagged), "--out", str(out), "--shard-size", "25"], kill=stop_midway if killer else None)
        run = b.tag([str(flagged), "--out", str(out), "--shard-size", "25"]) if killer else first
        saved = json.loads((out / "summary.json").read_text())
        saved.pop("this_run")
        saved.pop("out")
        saved.pop("rejects_file")
        summaries.append((saved, first.status))
    (clean_sum, _), (resumed_sum, stopped) = summaries
    same = clean_sum == resumed_sum
    got = read_outputs(tmp / "c10")
    rows.append(Row("SIGTERM mid-run, resumed (300 rows, 10 ISERROR, 1 short row)", "summary.json equals the "
                    "uninterrupted run's but for this_run", f"stopped with exit {stopped}; skipped_iserror "
                    f"{resumed_sum['skipped_iserror']}, rejected {resumed_sum['rejected']}; "
                    f"{'equal' if same else 'DIFFERENT'}", kept(got, ref_csv, csv_ids), 300,
                    resumed_sum["rejected"], 1, b.leaks(run.stderr), run.status, 0,
                    extra_ok=same and stopped == 130 and resumed_sum["skipped_iserror"] == 10))

    # kill and resume (the guarantee that held before): SIGKILL on the directory run
    out = tmp / "c-kill"

    def sigkill_midway(proc: subprocess.Popen) -> None:
        wait_until(proc, lambda: len(list(out.rglob("*.pipe.txt"))) >= 100)
        proc.kill()

    first = b.tag([str(notes), "--out", str(out), *j], kill=sigkill_midway)
    time.sleep(1)  # workers orphaned by the kill notice their closed pipe and exit
    run = b.tag([str(notes), "--out", str(out), *j])
    got = read_outputs(out)
    rows.append(Row("SIGKILL of the whole run mid-way, then the same command", "resumed to the same outputs",
                    f"killed (exit {first.status}), rerun exit {run.status}", kept(got, ref_dir, note_keys), 500,
                    0, 0, b.leaks(run.stderr), run.status, 0, extra_ok=first.status == -9))

    # 11. small ones
    out = tmp / "c11a"
    run = b.tag([str(notes), "--out", str(out), "--encoding", "bogus"])
    rows.append(Row("--encoding bogus", "one setup error, exit 2, no rejects", run.stderr.strip()[:70], 0, 0, 0, 0,
                    b.leaks(run.stderr), run.status, 2, extra_ok=not rejects_of(out)
                    and run.stderr.strip().count("\n") == 0))
    run = b.tag([str(notes / "ward0"), "--format", "brat"])
    rows.append(Row("--format brat without --out", "refused, exit 2", run.stderr.strip()[:70], 0, 0, 0, 0,
                    b.leaks(run.stderr), run.status, 2))
    odd = tmp / "odd" / "NOTEEVENTS.csv"
    odd.parent.mkdir()
    odd.write_text(csv_text(csv_rows[:100] + [mimic_row("12||34", texts[400]), mimic_row("56\n78", texts[401])]
                            + csv_rows[100:]), encoding="utf-8")
    out = tmp / "c11c"
    run = b.tag([str(odd), "--out", str(out), "--format", "share", "--shard-size", "50"])
    rej = rejects_of(out)
    by_note: dict[str, list] = {}
    for shard in sorted((out / "NOTEEVENTS").glob("part-*.pipe.txt")):
        for line in shard.read_text(encoding="utf-8").splitlines():
            f = line.split("||")
            spans = [[int(f[k]), int(f[k + 1])] for k in range(3, len(f), 2)]
            by_note.setdefault(f[0][:-4], []).append((f[2], spans))
    same = sum(1 for k in csv_ids if by_note.get(k, []) == [(mention["cui"], mention["spans"]) for mention in
                                                            json.loads(ref_csv[k])["mentions"]])
    rows.append(Row("ROW_IDs with '||' and a line break, --format share", "both rejected by row; every other "
                    "note's pipe lines intact", f"rejected rows {', '.join(r[2] for r in rej)}; "
                    f"{len(by_note)} note ids in the shards, all of the 300", same, 300, len(rej), 2,
                    b.leaks(*side_texts(out, run)), run.status, 0, extra_ok=set(by_note) <= set(csv_ids)))
    for r in rows:  # the temporary directory's name is no result
        r.observed = r.observed.replace(f"{tmp}/", "")
    return rows


def train_case(b: Bench, tmp: Path, paths: list[Path], texts: list[str]) -> Row:
    text_dir, gold_dir = tmp / "train-text", tmp / "train-gold"
    text_dir.mkdir()
    gold_dir.mkdir()
    given = 0
    for k, (path, text) in enumerate(zip(paths, texts)):
        (text_dir / path.name).write_text(text, encoding="utf-8")
        if k >= 17:
            continue  # 3 notes without gold
        lines = []
        for word in ("pain", "fever", "hypertension", "diabetes"):
            at = text.find(word)
            if at >= 0:
                lines.append(f"{path.name}||Disease_Disorder||CUI-less||{at}||{at + len(word)}\n")
        (gold_dir / f"{path.name[:-4]}.pipe.txt").write_text("".join(lines), encoding="utf-8")
        given += len(lines)
    for ghost in ("ghost1", "ghost2"):
        (gold_dir / f"{ghost}.pipe.txt").write_text(f"{ghost}.txt||Disease_Disorder||CUI-less||0||4\n")
    base = [sys.executable, "-m", "share_ner.cli", "train", "--text", str(text_dir), "--gold", str(gold_dir),
            "--lexicon", "none", "--no-normalizer", "--algorithm", "pa", "--quiet"]
    warn = subprocess.run(base + ["--model", str(tmp / "m1")], capture_output=True, text=True)
    strict = subprocess.run(base + ["--model", str(tmp / "m2"), "--strict"], capture_output=True, text=True)
    used = json.loads((tmp / "m1" / "config.json").read_text())["training"]["counts"]["mentions"] \
        if warn.returncode == 0 else -1
    named = int("ghost1.pipe.txt" in warn.stderr and "ghost2.pipe.txt" in warn.stderr) + int(
        all(p.name[:-4] in warn.stderr for p in paths[17:]))
    return Row("train: 2 gold files without a note, 3 notes without gold", "warned with counts and names; "
               "--strict exit 2", f"warnings: {warn.stderr.count('warning:')}; mentions counted {used} of "
               f"{given} real; --strict exit {strict.returncode}", int(used == given), 1, named, 2,
               b.leaks(warn.stderr, strict.stderr), warn.returncode, 0, extra_ok=strict.returncode == 2)


def report(rows: list[Row], cpu: float, jobs: int) -> str:
    out = ["# Fault injection: `share-ner tag` and `train` under the faults of a hospital run", "",
           "Measured with `nice python benchmarks/fault_injection.py` (workers: `--jobs "
           f"{jobs}`): 500 MTSamples notes in five sub-directories, and a 300-row MIMIC-III-style `NOTEEVENTS.csv` "
           "synthesized from MTSamples notes, tagged with the default model through the command line. Each case's "
           "outputs are compared note by note with a clean run of the same notes.",
           "The machine was shared with other work while this ran; no timing is compared here.", "",
           "| case | expected | observed | good notes kept / given | rejects named / expected | text leaked | "
           "exit status | verdict |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        observed = r.observed.replace("|", "\\|").replace("\n", " ")
        out.append(f"| {r.case} | {r.expected} | {observed} | {r.kept} / {r.given} | {r.named} / {r.bad} | "
                   f"{r.leaked} | {r.status} | {r.verdict} |")
    out += ["", f"{sum(r.verdict == 'nothing lost' for r in rows)} of {len(rows)} cases: nothing lost. "
            f"CPU time of all the runs: {cpu:.0f} s.", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
