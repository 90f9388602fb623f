"""Benchmark ``share-ner spark`` (local[1], local[2]) against ``share-ner tag --jobs 1/2`` on the same notes.

    python benchmarks/bench_spark.py [--data DIR] [--notes N] [--repeat K]

The MTSamples notes (all of them, or the first ``--notes`` in name order) are written once as a Parquet table (note_id, text) for
Spark and as a MIMIC-IV-Note-style CSV for ``share-ner tag`` (both with the default model). Every run is a fresh
process; its wall time, its CPU seconds (the process and all its children: JVM, Python workers) and its
summary.json are recorded. Writes ``benchmarks/results/spark.md``.

``--repeat K`` (K > 1) measures how Spark's overhead against ``share-ner tag`` moves with the job's size: the notes
go in K times, each copy under ids of its own, the full-JIT run is left out, and the results go to
``benchmarks/results/spark_scale.md``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_data import add_data_argument

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "spark.md"
SCALE_RESULTS = REPO / "benchmarks" / "results" / "spark_scale.md"
CORES_PER_EXECUTOR = 16
EXECUTORS = 100
PROJECTED_NOTES = 1_000_000_000




def prepare(notes_dir: Path, n: int | None, work: Path, repeat: int = 1) -> tuple[Path, Path, int]:
    """The notes as a Parquet table and a CSV export, and their characters; with ``repeat`` K, each note K times,
    copy k (from 1) under the id ``<note>~k`` after the originals."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    work.mkdir(parents=True, exist_ok=True)
    paths = sorted(notes_dir.glob("*.txt"))[:n]
    names = [p.name[:-4] for p in paths]
    ids = names + [f"{name}~{k}" for k in range(1, repeat) for name in names]
    texts = [p.read_bytes().decode("utf-8") for p in paths] * repeat
    table = work / "notes.parquet"
    pq.write_table(pa.table({"note_id": ids, "text": texts}), table)
    export = work / "discharge.csv"
    with open(export, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"])
        for i, t in zip(ids, texts):
            w.writerow([i, "1", "1", "DS", "1", "", "", t])
    return table, export, sum(map(len, texts))


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str]) -> tuple[float, float, str]:
    cpu0, t0 = children_cpu(), time.perf_counter()
    done = subprocess.run(["nice", *cmd], capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return wall, cpu, done.stdout


def run_tag(export: Path, out: Path, jobs: int) -> dict:
    share_ner = [sys.executable, "-m", "share_ner.cli"]
    wall, cpu, _ = timed([*share_ner, "tag", str(export), "--out", str(out), "--jobs", str(jobs), "--quiet"])
    summary = json.loads((out / "summary.json").read_text())
    run = summary["this_run"]  # this run's own timings (the top level counts the whole output)
    return {"wall": wall, "cpu": cpu, "seconds": run["seconds"], "startup": run["startup_seconds"],
            "work": run["seconds"] - run["startup_seconds"],
            "notes": summary["notes"], "mentions": summary["mentions"]}


def _proc_stats() -> dict[int, list[str]]:
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stats[int(entry)] = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
    return stats


def tree_cpu(root: int) -> tuple[float, float]:
    """CPU seconds of process ``root`` itself (its threads), and of its live descendants with their reaped
    children (for the JVM: the Python daemon and workers), from /proc."""
    stats = _proc_stats()
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo += [c for c, f in stats.items() if int(f[1]) == pid and c not in tree]
    tick = os.sysconf("SC_CLK_TCK")
    own = stats[root]
    below = sum(int(v) for pid in tree - {root} if pid in stats for v in stats[pid][11:15])
    return (int(own[11]) + int(own[12])) / tick, (below + int(own[13]) + int(own[14])) / tick


THREAD_GROUPS = (("JIT compiler", ("C1 CompilerThre", "C2 CompilerThre")),
                 ("garbage collector", ("GC Thread", "G1 ")),
                 ("executor tasks (reading, shuffle, Arrow to and from Python, Parquet writing)", ("Executor task",)),
                 ("driver: planning, code generation, the calls from Python (py4j)", ("Thread-",)))


def jvm_threads(pid: int) -> dict[str, float]:
    """CPU seconds of the JVM's threads, in the groups of THREAD_GROUPS (the rest as other)."""
    out = {name: 0.0 for name, _ in THREAD_GROUPS} | {"other (scheduler, listeners, heartbeats, ...)": 0.0}
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        group = next((g for g, prefixes in THREAD_GROUPS if name.startswith(prefixes)),
                     "other (scheduler, listeners, heartbeats, ...)")
        out[group] += (int(fields[11]) + int(fields[12])) / tick
    return out


def event_stages(log_dir: Path, since_ms: float, until_ms: float) -> list[dict]:
    """The Spark jobs of the event log that ran between the two times: each stage's tasks, wall seconds, the
    executor's run and CPU seconds, shuffle bytes and the Parquet bytes written."""
    events = []
    for path in sorted(log_dir.rglob("*")):
        if path.is_file() and path.name.startswith("events_"):  # not the .crc files and the app status
            events += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    job_of, stages = {}, []
    for e in events:
        if e["Event"] == "SparkListenerJobStart" and since_ms <= e["Submission Time"] <= until_ms:
            for sid in e["Stage IDs"]:
                job_of[sid] = e["Job ID"]
    for e in events:
        if e["Event"] != "SparkListenerStageCompleted" or e["Stage Info"]["Stage ID"] not in job_of:
            continue
        info = e["Stage Info"]
        acc = {a["Name"]: float(a.get("Value") or 0) for a in info.get("Accumulables", [])
               if str(a.get("Value", "")).replace(".", "", 1).isdigit()}
        m = "internal.metrics."
        stages.append({"job": job_of[info["Stage ID"]], "stage": info["Stage ID"], "tasks": info["Number of Tasks"],
                       "wall": (info["Completion Time"] - info["Submission Time"]) / 1000,
                       "run": acc.get(m + "executorRunTime", 0) / 1000,
                       "jvm_cpu": acc.get(m + "executorCpuTime", 0) / 1e9,
                       "shuffle_write_mb": acc.get(m + "shuffle.write.bytesWritten", 0) / 1e6,
                       "shuffle_read_mb": (acc.get(m + "shuffle.read.localBytesRead", 0)
                                           + acc.get(m + "shuffle.read.remoteBytesRead", 0)) / 1e6,
                       "output_mb": acc.get(m + "output.bytesWritten", 0) / 1e6})
    return stages


# the JVM's compilers as the JVM has them by default (C1, then C2 for the hottest code), against share-ner's
# default for a local session (C1 alone, share_ner.spark.job.LOCAL_CONF)
FULL_JIT = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"}


def spark_child(master: str, table: str, out: str, conf: str = "{}", warm_too: str = "1") -> None:
    """In a fresh process: start the session, then time the job alone (cold: a new Python daemon loading the model
    and forking the workers), then the same job again into another directory (warm: the workers and their model
    reused). The JVM's own CPU (its threads, by group) and the Python processes' are taken apart; the event log
    gives the job's stages."""
    from share_ner.spark.job import SparkOptions, run_spark, start_session

    events = Path(out + "-events")
    events.mkdir(parents=True)
    t0 = time.perf_counter()
    spark = start_session(master, app="bench-spark", conf={
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(), "spark.eventLog.compress": "false",
        **json.loads(conf)})
    spark.sparkContext.setLogLevel("ERROR")
    session = time.perf_counter() - t0
    jvm = spark.sparkContext._gateway.proc.pid
    (jvm0, py0), threads0, driver0 = tree_cpu(jvm), jvm_threads(jvm), time.process_time()
    since = time.time() * 1000
    t1 = time.perf_counter()
    run_spark(SparkOptions(table, out), spark)
    job = time.perf_counter() - t1
    until = time.time() * 1000
    (jvm1, py1), threads1, driver1 = tree_cpu(jvm), jvm_threads(jvm), time.process_time()
    warm = None
    if warm_too == "1":
        t2 = time.perf_counter()
        run_spark(SparkOptions(table, out + "-warm"), spark)
        warm = time.perf_counter() - t2
    spark.stop()
    print(json.dumps({"session": session, "job": job, "warm": warm, "jvm_cpu": jvm1 - jvm0, "python_cpu": py1 - py0,
                      "driver_cpu": driver1 - driver0, "job_cpu": jvm1 - jvm0 + py1 - py0 + driver1 - driver0,
                      "threads": {k: threads1[k] - threads0.get(k, 0.0) for k in threads1},
                      "stages": event_stages(events, since, until)}))


def run_spark(master: str, table: Path, out: Path, conf: dict | None = None, warm: bool = True) -> dict:
    wall, cpu, stdout = timed([sys.executable, __file__, "--spark-child", master, str(table), str(out),
                               json.dumps(conf or {}), "1" if warm else "0"])
    child = json.loads(stdout.strip().splitlines()[-1])
    summary = json.loads((out / "summary.json").read_text())
    workers = summary["workers"].values()
    return {"wall": wall, "cpu": child["job_cpu"], "session": child["session"], "job": child["job"],
            "warm": child["warm"], "notes": summary["notes"], "jvm_cpu": child["jvm_cpu"],
            "python_cpu": child["python_cpu"], "driver_cpu": child["driver_cpu"], "threads": child["threads"],
            "stages": child["stages"], "mentions": summary["mentions"], "workers": len(workers),
            "rss_mb": max(w["rss_kb"] for w in workers) / 1024,
            "private_mb": max(w["private_kb"] for w in workers) / 1024,
            "preload": max(w["preload_seconds"] for w in workers),
            "worker_cpu": sum(w["cpu_seconds"] for w in workers),
            "worker_process_cpu": sum(w["process_cpu_seconds"] for w in workers),
            "load": max(w["load_seconds"] for w in workers)}


def four_runs(table: Path, export: Path, work: Path) -> dict[str, dict]:
    """``share-ner tag --jobs 1/2`` on the CSV export and ``share-ner spark`` ``local[1]/[2]`` on the table."""
    work.mkdir(parents=True, exist_ok=True)
    return {"tag --jobs 1": run_tag(export, work / "t1", 1), "tag --jobs 2": run_tag(export, work / "t2", 2),
            "spark local[1]": run_spark("local[1]", table, work / "s1"),
            "spark local[2]": run_spark("local[2]", table, work / "s2")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--notes", type=int, help="MTSamples notes to use (default: all)")
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="each note K times under new ids; K > 1 writes spark_scale.md, without the full-JIT run")
    ap.add_argument("--from-json", metavar="FILE", help="re-make the results file from a run's raw figures")
    ap.add_argument("--spark-child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.spark_child:
        spark_child(*args.spark_child)
        return
    if args.from_json:
        raw = json.loads(Path(args.from_json).read_text())
        (write_scale_results if raw.get("repeat", 1) > 1 else write_results)(raw)
        return
    notes_dir = args.data / "mtsamples" / "raw" / "notes"
    from share_ner.default_model.build import default_model_dir

    default_model_dir()  # built before any timing
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        table, export, chars = prepare(notes_dir, args.notes, work)
        runs = four_runs(table, export, work / "x1")
        if args.repeat == 1:
            runs["spark local[2], full JIT"] = run_spark("local[2]", table, work / "s2c2", FULL_JIT, warm=False)
        else:  # the same four runs on the repeated notes, in the same session of the machine
            table, export, _ = prepare(notes_dir, args.notes, work / f"x{args.repeat}", args.repeat)
            larger = four_runs(table, export, work / f"x{args.repeat}")
    load_after = os.getloadavg()
    raw = {"runs": runs, "notes": args.notes, "repeat": args.repeat, "all_notes": len(list(notes_dir.glob("*.txt"))),
           "chars": chars, "load_before": load_before, "load_after": load_after,
           "when": time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}
    if args.repeat > 1:
        raw["repeated_runs"] = larger
    print(json.dumps(raw), file=sys.stderr)  # the raw figures: --from-json re-makes the table from them
    (write_scale_results if args.repeat > 1 else write_results)(raw)


def stage_label(stage: dict, stages: list[dict]) -> str:
    if stage["shuffle_write_mb"] > 0:
        return "read the notes, shuffle them over the partitions (the repartition)"
    if stage is max(stages, key=lambda x: x["run"]):
        return "annotate (mapInPandas: counts and rejects into the accumulator) and write the mentions"
    if stage is stages[-1]:
        return "write the rejects (from the driver, as Arrow)"
    return "read the input's schema (Parquet footers)"


def publish(path: Path, lines: list[str]) -> None:
    """Write a results file and print it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    print("\n".join(lines))


def measures(runs: dict[str, dict]) -> dict:
    """The issue's measures of one set of runs: rates, speed-ups and Spark's overhead against ``--jobs 2``."""
    t2, s1, s2 = (runs[k] for k in ("tag --jobs 2", "spark local[1]", "spark local[2]"))
    rate = {k: r["notes"] / (r["job"] if "job" in r else r["seconds"]) for k, r in runs.items()}
    cpu_rate = {k: r["notes"] / r["cpu"] for k, r in runs.items()}
    tag_speedup = rate["tag --jobs 2"] / rate["tag --jobs 1"]
    return {"rate": rate, "cpu_rate": cpu_rate, "tag_speedup": tag_speedup,
            "speedup": rate["spark local[2]"] / rate["spark local[1]"],
            "overhead": (s2["job"] - t2["seconds"]) / s2["job"],
            "warm_overhead": (s2["warm"] - t2["work"]) / s2["warm"],
            "cpu_overhead": (s2["cpu"] - t2["cpu"]) / s2["cpu"],
            # with 2 free cores, local[2] would run local[1]'s work in half the time, less its extra CPU
            "cpu_speedup": 2 * s1["cpu"] / s2["cpu"],
            "cpu_rate_ratio": cpu_rate["spark local[2]"] / cpu_rate["spark local[1]"],
            # share-ner tag's own scaling says whether both cores were free for the runs
            "free": tag_speedup >= 1.7}


def targets(m: dict) -> list[tuple[str, str, str]]:
    """The issue's targets from :func:`measures`: (target, measured, met) each."""
    yes = {True: "yes", False: "no"}

    def judged(ok: bool) -> str:
        return yes[ok] if m["free"] else "not judged (load)"

    return [
        ("`local[2]` ≥ 1.8 × `local[1]` (notes/s, wall)", f"{m['speedup']:.2f} ×", judged(m["speedup"] >= 1.8)),
        ("Spark's overhead against `--jobs 2`, share of Spark's wall once the session is up ≤ 15 %",
         f"{m['overhead'] * 100:.1f} %", judged(m["overhead"] <= 0.15)),
        ("the same with warm workers, against `--jobs 2` after its model load", f"{m['warm_overhead'] * 100:.1f} %",
         judged(m["warm_overhead"] <= 0.15)),
        ("load-independent: Spark's extra CPU seconds against `--jobs 2`, share of Spark's ≤ 15 %",
         f"{m['cpu_overhead'] * 100:.1f} %", yes[m["cpu_overhead"] <= 0.15]),
        ("load-independent: `local[2]` / `local[1]` per CPU second (notes per CPU s)",
         f"{m['cpu_rate_ratio']:.2f} ×", "–"),
        ("load-independent estimate of `local[2]` / `local[1]` on 2 free cores: 2 × CPU s of `local[1]` / CPU s "
         "of `local[2]` ≥ 1.8", f"{m['cpu_speedup']:.2f} ×", yes[m["cpu_speedup"] >= 1.8]),
    ]


def write_results(raw: dict) -> None:
    runs, chars, before, after = raw["runs"], raw["chars"], raw["load_before"], raw["load_after"]
    s1, s2 = runs["spark local[1]"], runs["spark local[2]"]
    c2 = runs["spark local[2], full JIT"]
    n = s2["notes"]
    m = measures(runs)
    rate, cpu_rate = m["rate"], m["cpu_rate"]
    tag_speedup = m["tag_speedup"]
    per_core = n / s2["worker_cpu"]  # notes per worker CPU second: the rate one executor core sustains
    cluster_cores = EXECUTORS * CORES_PER_EXECUTOR
    hours = PROJECTED_NOTES / (per_core * cluster_cores) / 3600
    free = m["free"]
    lines = [
        "# `share-ner spark` against `share-ner tag`",
        "",
        "Command: `nice python benchmarks/bench_spark.py" + (f" --notes {raw['notes']}" if raw["notes"] else "") + "` "
        f"({raw['when']}, Python {sys.version.split()[0]}, "
        f"{os.cpu_count()} cores, default model).",
        "",
        f"Load average {before[0]:.1f} before the runs and {after[0]:.1f} after, on {os.cpu_count()} cores: other "
        "work shared the machine, so compare the runs by their CPU seconds and by ratios within this run; "
        "wall-clock rates and speed-ups are lower bounds.",
        "",
        ("Notes: all " if n == raw["all_notes"] else "Notes: the first ")
        + f"{n:,} MTSamples notes" + (" in name order" if n < raw["all_notes"] else "") + f" ({chars:,} characters), "
        "as a Parquet table (`note_id`, `text`) for Spark and as a MIMIC-IV-Note-style CSV for "
        "`share-ner tag`. Mentions found: " + ", ".join(f"{k} {r['mentions']:,}" for k, r in runs.items()) + ".",
        "",
        "| run | wall, whole process (s) | session start (s) | job / run wall (s) | notes/s, wall | same job again, "
        "warm workers (s) | CPU s of the job / run, all processes | of which JVM | of which Python workers | "
        "notes per CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, r in runs.items():
        job = r["job"] if "job" in r else r["seconds"]
        session = f"{r['session']:.1f}" if "session" in r else "–"
        warm = f"{r['warm']:.1f}" if r.get("warm") is not None else "–"
        jvm = f"{r['jvm_cpu']:.1f}" if "jvm_cpu" in r else "–"
        py = f"{r['python_cpu']:.1f}" if "python_cpu" in r else "–"
        lines.append(f"| {k} | {r['wall']:.1f} | {session} | {job:.1f} | {rate[k]:.1f} | {warm} | {r['cpu']:.1f} | "
                     f"{jvm} | {py} | {cpu_rate[k]:.2f} |")
    lines += [
        "",
        "Every Spark run is `share-ner spark`'s default session (the Python daemon `share_ner.spark.daemon`, which "
        "loads the model once and forks the workers from it; for a local JVM, the JIT compiler C1 alone, "
        "`-XX:TieredStopAtLevel=1`) except `full JIT`: the same `local[2]` job with the JVM's default compilers "
        "(C1, then C2 for the hottest code; `spark.driver.extraJavaOptions=-XX:TieredStopAtLevel=4`).",
        "",
        "`job / run wall`: for Spark, the wall time of the whole `run_spark` call once the session is up (reading the "
        "table, the Python daemon starting and loading the model, annotating, writing the tables, the summary); "
        "for `share-ner tag`, its summary's `seconds` (model loading included). `same job again`: the same "
        "`run_spark` call once more in the same session, into another directory: the Python daemon and workers are "
        "already up with the model loaded and the JVM's code compiled. CPU seconds: for Spark, over the job, the JVM's own "
        "threads, the Python daemon and workers (from /proc) and the driver's Python; for `share-ner tag`, the "
        "whole process and its workers.",
        "",
        f"`share-ner tag --jobs 2` ran at {tag_speedup:.2f} × the notes/s of `--jobs 1` in this run"
        + (": the second core was not free, and the load changed from run to run, so the wall-clock rows of the "
           "targets compare runs made under different loads and are not judged; the CPU-second rows are."
           if not free else "."),
        "",
        "| target | measured | met |",
        "|---|---:|---|",
        *(f"| {target} | {measured} | {met} |" for target, measured, met in targets(m)),
        "",
        "## Where the CPU goes",
        "",
        f"`local[2]`, {s2['cpu']:.1f} CPU seconds over the job: the JVM {s2['jvm_cpu']:.1f}, the Python processes "
        f"{s2['python_cpu']:.1f} (of which the workers' tasks {s2['worker_cpu']:.1f}: annotating, as "
        f"`share-ner tag` does, and the pandas/Arrow rows; the workers' own start "
        f"{s2['worker_process_cpu'] - s2['worker_cpu']:.1f}; the daemon, its model load "
        f"({s2['preload']:.1f} s) and the forks, the rest), the driver's Python {s2['driver_cpu']:.1f}. Like "
        "`share-ner tag --jobs 2`, the daemon loads the model once and forks the workers from it (a worker whose "
        f"daemon did not load it loads its own: model loads in the workers here, {s2['load']:.1f} s). The JVM's CPU "
        "seconds by thread:",
        "",
        "| JVM threads | `local[1]` CPU s | `local[2]` CPU s | `local[2]`, full JIT, CPU s |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {g} | {s1['threads'][g]:.1f} | {s2['threads'][g]:.1f} | {c2['threads'][g]:.1f} |"
              for g in s2["threads"]]
    # the JVM's own CPU seconds count its threads that ended during the job; the table by thread cannot name them
    ended = {k: r["jvm_cpu"] - sum(r["threads"].values()) for k, r in (("s1", s1), ("s2", s2), ("c2", c2))}
    lines.append(f"| the rest of the JVM's total: threads that ended during the job (compiler threads come and go) | "
                 f"{ended['s1']:.1f} | {ended['s2']:.1f} | {ended['c2']:.1f} |")
    task = "executor tasks (reading, shuffle, Arrow to and from Python, Parquet writing)"
    lines += [
        "",
        f"C1 alone against the full JIT, in the same `local[2]` job: the JVM {s2['jvm_cpu']:.1f} CPU s against "
        f"{c2['jvm_cpu']:.1f}, the job {s2['cpu']:.1f} CPU s and {s2['job']:.1f} s wall against {c2['cpu']:.1f} and "
        f"{c2['job']:.1f}; the executor tasks' own CPU, the JVM's work per note that C2 would make faster, "
        f"{s2['threads'][task]:.1f} s against {c2['threads'][task]:.1f}. On a cluster the executors' JVMs run for "
        "the whole job, where C2's compiling is paid once; share-ner sets C1 alone only for a local JVM it starts "
        "itself. The rest of the JVM's seconds are mostly a fixed cost of a fresh JVM (loading its classes, "
        "planning and generating the query's code) rather than a cost per note: the same job again in the same "
        f"session took {s2['warm']:.1f} s against {s2['job']:.1f} s.",
        "",
        f"On 2 cores the JVM shares the cores with the Python workers: `local[1]` runs one Python worker on one core "
        f"while its JVM ({s1['jvm_cpu']:.1f} CPU s) mostly runs on the other; `local[2]` runs two workers and its JVM "
        f"({s2['jvm_cpu']:.1f} CPU s) on the same two cores, so its wall is at least all its CPU seconds over two "
        f"({s2['cpu']:.1f} / 2 = {s2['cpu'] / 2:.1f} s). The Python workers themselves scale: "
        f"{n / s1['worker_cpu']:.1f} notes per worker CPU second under `local[1]`, {per_core:.1f} under `local[2]`; "
        "on executors whose JVM has cores to spare beside the workers' (a cluster), the rate grows with the cores.",
        "",
        "## The job's Spark stages (`local[2]`, from the event log)",
        "",
        "| job | stage | what | tasks | wall (s) | executor run (s) | executor JVM CPU (s) | shuffle written (MB) | "
        "shuffle read (MB) | Parquet written (MB) |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    stages = s2["stages"]
    lines += [f"| {st['job']} | {st['stage']} | {stage_label(st, stages)} | {st['tasks']} | {st['wall']:.1f} | "
              f"{st['run']:.1f} | {st['jvm_cpu']:.2f} | {st['shuffle_write_mb']:.2f} | {st['shuffle_read_mb']:.2f} | "
              f"{st['output_mb']:.2f} |" for st in stages]
    lines += [
        "",
        f"{len({st['job'] for st in stages})} Spark jobs and one pass over the notes: the mentions are written by the "
        "job that annotates them, while an accumulator gathers the counts of the summary and the rejects, which the "
        "driver writes as a small table; nothing is persisted or read twice. The one shuffle spreads the notes of a "
        "single-row-group Parquet file over 3 tasks per core; an input read in at least that many tasks is not "
        "shuffled. `executor run` counts the Python workers' time the task waits for; `executor JVM CPU`, the "
        "task threads' own. Arrow batches of 256 rows: turning the rows to pandas and Arrow costs the workers "
        "little against annotating (both are inside the tasks' CPU seconds above), so larger batches would save "
        "little and hold more notes in a worker at once.",
        "",
        f"Python worker processes: {s1['workers']} under `local[1]`, {s2['workers']} under `local[2]`, forked from the "
        f"daemon, which loaded the model in {s1['preload']:.1f} s and {s2['preload']:.1f} s (wall). Peak memory (max "
        f"RSS) of a Python worker: {s1['rss_mb']:.0f} MB (`local[1]`), {s2['rss_mb']:.0f} MB (`local[2]`), of which "
        f"its own, not shared with the daemon and the other workers (Linux's private pages): {s1['private_mb']:.0f} MB "
        f"and {s2['private_mb']:.0f} MB. Spark reuses its Python workers, so a worker's model serves all its later "
        "tasks. The JVM is not counted there.",
        "",
        "## Projection: 1 billion notes on 100 executors of 16 cores",
        "",
        f"From the measured rate per core: `local[2]`'s Python workers annotated {n:,} notes in "
        f"{s2['worker_cpu']:.1f} CPU seconds, {per_core:.1f} notes per core-second (MTSamples notes, "
        f"{chars / n:,.0f} characters on average). {PROJECTED_NOTES:,} notes on {cluster_cores:,} cores at that rate: "
        f"{PROJECTED_NOTES / (per_core * cluster_cores):,.0f} s, about {hours:.1f} hours, plus each executor's model "
        f"load (≈ {s2['preload']:.0f} s, once per executor, in its Python daemon) and reading the notes. This assumes "
        "one Python worker per core, forked from the executor's daemon with the model loaded (give each worker "
        "memory for its own pages, above), notes of this size, and input "
        "split into at least as many partitions as cores; longer notes (MIMIC discharge summaries run to several "
        "times this length) scale the time with their characters.",
        "",
    ]
    publish(RESULTS, lines)


def marginal(small: dict, large: dict, key: str) -> float:
    """Seconds per note of one more note: the difference of ``key`` between the two runs over their notes'."""
    return (large[key] - small[key]) / (large["notes"] - small["notes"])


def write_scale_results(raw: dict) -> None:
    """``spark_scale.md``: the four runs on the notes once and K times, the targets at each size, and Spark's extra
    time against ``share-ner tag --jobs 2`` split into a fixed part and a part per note."""
    k, small, large = raw["repeat"], raw["runs"], raw["repeated_runs"]
    before, after = raw["load_before"], raw["load_after"]
    n, big = small["spark local[2]"]["notes"], large["spark local[2]"]["notes"]
    ms, ml = measures(small), measures(large)
    wall_key = {"tag": "seconds", "spark": "job"}
    lines = [
        "# `share-ner spark` against `share-ner tag` as the job grows",
        "",
        f"Command: `nice python benchmarks/bench_spark.py --repeat {k}" + (f" --notes {raw['notes']}" if raw["notes"]
                                                                          else "") + "` "
        f"({raw['when']}, Python {sys.version.split()[0]}, {os.cpu_count()} cores, default model). Load average "
        f"{before[0]:.1f} before the runs and {after[0]:.1f} after.",
        "",
        f"The runs of [spark.md](spark.md) (without the full-JIT one) on {n:,} MTSamples notes "
        f"({raw['chars']:,} characters), then again on the same notes {k} times over ({big:,} notes), each copy under "
        "ids of its own, all in one run of this script. A note seen before is cheaper to annotate (each process "
        "keeps the word types and lexicon look-ups it has met), for `share-ner tag` and Spark's workers alike, so "
        "the larger job's work per note is smaller and Spark's fixed cost is, if anything, a larger share of it "
        "than on as many distinct notes.",
        "",
        "| run | notes | job / run wall (s) | notes/s, wall | CPU s of the job / run, all processes | "
        "of which JVM | notes per CPU s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for runs, m in ((small, ms), (large, ml)):
        for name, r in runs.items():
            job = r[wall_key[name.split()[0]]]
            jvm = f"{r['jvm_cpu']:.1f}" if "jvm_cpu" in r else "–"
            lines.append(f"| {name} | {r['notes']:,} | {job:.1f} | {m['rate'][name]:.1f} | {r['cpu']:.1f} | {jvm} | "
                         f"{m['cpu_rate'][name]:.2f} |")
    lines += ["", f"The issue's targets on {n:,} notes, then on {big:,}. `share-ner tag --jobs 2` ran at "
              f"{ms['tag_speedup']:.2f} × and {ml['tag_speedup']:.2f} × the notes/s of `--jobs 1`; as in spark.md, "
              "a wall-clock row is judged only where that is at least 1.7 × (both cores free), the CPU-second rows "
              "always:", ""]
    lines += [f"| target | {n:,} notes | {big:,} notes | met on {big:,} |", "|---|---:|---:|---|"]
    lines += [f"| {target} | {measured} | {larger} | {met} |"
              for (target, measured, _), (_, larger, met) in zip(targets(ms), targets(ml))]
    t2s, t2l, s2s, s2l = small["tag --jobs 2"], large["tag --jobs 2"], small["spark local[2]"], large["spark local[2]"]
    s1s, s1l = small["spark local[1]"], large["spark local[1]"]
    extra_wall = {"small": s2s["job"] - t2s["seconds"], "large": s2l["job"] - t2l["seconds"]}
    extra_cpu = {"small": s2s["cpu"] - t2s["cpu"], "large": s2l["cpu"] - t2l["cpu"]}
    per_note_wall = marginal(s2s, s2l, "job") - marginal(t2s, t2l, "seconds")
    per_note_cpu = marginal(s2s, s2l, "cpu") - marginal(t2s, t2l, "cpu")
    fixed_wall, fixed_cpu = extra_wall["small"] - per_note_wall * n, extra_cpu["small"] - per_note_cpu * n
    spark_note_wall, spark_note_cpu = marginal(s2s, s2l, "job"), marginal(s2s, s2l, "cpu")
    local_ratio = marginal(s1s, s1l, "job") / spark_note_wall

    def crossing(fixed: float, per_note: float, spark_fixed: float, spark_per_note: float) -> str:
        """The notes at which the extra time, on both lines, is 15 % of Spark's."""
        if 0.15 * spark_per_note <= per_note:
            return "never (one more note's share is above 15 %)"
        return f"{max(0.0, (fixed - 0.15 * spark_fixed) / (0.15 * spark_per_note - per_note)):,.0f}"

    cross_wall = crossing(fixed_wall, per_note_wall, s2s["job"] - spark_note_wall * n, spark_note_wall)
    cross_cpu = crossing(fixed_cpu, per_note_cpu, s2s["cpu"] - spark_note_cpu * n, spark_note_cpu)
    lines += [
        "",
        "## Fixed cost and cost per note",
        "",
        "Spark's extra time against `share-ner tag --jobs 2` at the two sizes, split as a fixed part plus a part "
        "per note (the line through the two points, for the extra and for Spark's own time); \"share of one more "
        "note's time\" is the share the overhead tends to as the job grows, and the last column the job size, by "
        "those lines, above which the overhead is under the issue's 15 %:",
        "",
        f"| `local[2]` against `--jobs 2` | extra on {n:,} notes | extra on {big:,} notes | fixed part | "
        "per 1,000 notes | share of one more note's time | notes at which the extra is 15 % |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| wall (s) | {extra_wall['small']:.1f} | {extra_wall['large']:.1f} | {fixed_wall:.1f} | "
        f"{per_note_wall * 1000:.2f} | {per_note_wall / spark_note_wall * 100:.1f} % | {cross_wall} |",
        f"| CPU s, all processes | {extra_cpu['small']:.1f} | {extra_cpu['large']:.1f} | {fixed_cpu:.1f} | "
        f"{per_note_cpu * 1000:.2f} | {per_note_cpu / spark_note_cpu * 100:.1f} % | {cross_cpu} |",
        "",
        f"One more note takes `local[1]` {local_ratio:.2f} × the wall time it takes `local[2]` (the speed-up "
        "once the fixed cost is paid). On these 2 cores the JVM's own work shares the cores with the Python workers "
        "(spark.md, \"Where the CPU goes\"), so neither figure can reach the workers' own scaling here; on a cluster "
        "the fixed part (a fresh JVM's class loading and code generation, the Python daemon's start and model "
        "load) is paid once per executor, and a job over a hospital's notes is thousands of times these sizes.",
        "",
    ]
    publish(SCALE_RESULTS, lines)


if __name__ == "__main__":
    main()
