"""One code path on every Python: the same notes give the same bytes in every output format, whichever Python runs.

Each ``--python NAME=PY`` is the interpreter of a venv where this checkout is installed (``pip install '.[spark]'``
for Parquet; pyarrow missing: the Parquet row is left out). Each side, in a work directory of its own with its own
``SHARE_NER_CACHE``:

* ``share-ner tag`` with the default model in every note format (``share``, ``brat``, ``jsonl``, ``share2014``,
  ``bioc``; attributes included, the default) on the notes (``--notes DIR``, default ``examples/notes``), and in
  ``parquet`` on the same notes as a MIMIC-III NOTEEVENTS export;
* ``share-ner train`` on ``--train DIR`` (``text/`` and ``gold/``; default the tagger test fixtures), then every side
  tags the notes with every side's model: a model trained on one Python loads and tags alike on the others.

An output's hash covers its files' names and bytes (``output_hashes.hash_dir``: without ``run.json`` and
``summary.json``, which hold timings and paths); a model's, its files but for the training time and peak memory in
``config.json``. A Parquet file also records the pyarrow that wrote it
(``created_by``), so its row compares the table instead (schema, then the rows, as pyarrow reads them), with the
pyarrow versions shown. Exit status 1 if one output differs between the sides::

    python benchmarks/bench_versions.py --python 3.10=VENV310/bin/python --python 3.13=VENV313/bin/python \\
        [--notes DIR] [--train DIR] [--out benchmarks/results/versions.md | --no-write]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_data import REPO, RESULTS_DIR, shown_path, write_results
from output_hashes import hash_dir

DEFAULT_TRAIN = REPO / "tests" / "fixtures" / "tagger"
FORMATS = ("share", "brat", "jsonl", "share2014", "bioc")
HEADER = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY", "DESCRIPTION", "CGID",
          "ISERROR", "TEXT"]
# What a side reports of itself, and the Parquet tables of a directory as JSON (schema and rows).
ABOUT = """import json, platform
from importlib.metadata import PackageNotFoundError, version
def v(name):
    try:
        return version(name)
    except PackageNotFoundError:
        return "-"
print(json.dumps({"python": platform.python_version(), **{p: v(p) for p in
      ("numpy", "scipy", "scikit-learn", "spacy", "python-crfsuite", "pyarrow")}}))"""
TABLES = """import json, sys
from pathlib import Path
import pyarrow.parquet as pq
out = {}
for path in sorted(Path(sys.argv[1]).rglob("*.parquet")):
    table = pq.read_table(path)
    out[str(path.relative_to(sys.argv[1]))] = [str(table.schema), table.to_pylist()]
print(json.dumps(out, sort_keys=True, default=str))"""


def run(python: str, args: list[str], cache: Path, cwd: Path) -> str:
    env = dict(os.environ, SHARE_NER_CACHE=str(cache))
    done = subprocess.run([python, *args], capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode:
        sys.exit(f"{python} {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def mimic_export(notes: Path, path: Path) -> None:
    """The notes as a MIMIC-III NOTEEVENTS export, one row each in file-name order."""
    buf = io.StringIO(newline="")
    rows = csv.writer(buf, lineterminator="\n")
    buf.write(",".join(f'"{h}"' for h in HEADER) + "\n")
    for k, note in enumerate(sorted(notes.glob("*.txt"))):
        text = note.read_bytes().decode("utf-8")
        rows.writerow([1000 + k, 1, 1, "2151-08-04", "", "", "Discharge summary", "Report", "", "", text])
    path.write_text(buf.getvalue(), encoding="utf-8", newline="")


def model_hash(model: Path) -> str:
    """SHA-256 of a model directory's files' names and bytes, ``config.json`` without its timings (``seconds``,
    ``peak_rss_mb``: the machine's, not the model's) and the checksum of its content, which covers them."""

    def untimed(value: object) -> object:
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if k not in ("seconds", "peak_rss_mb")}
        return value

    h = hashlib.sha256()
    for path in sorted(p for p in model.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "config.json" and path.parent == model:
            content = untimed(json.loads(data))
            content.pop("checksum", None)
            data = json.dumps(content, sort_keys=True).encode()
        h.update(str(path.relative_to(model)).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def side(name: str, python: str, work: Path, notes: Path, train: Path, export: Path) -> dict:
    """This side's versions, output hashes (and Parquet tables) and trained model."""
    home = work / name
    cache = home / "cache"
    home.mkdir()
    about = json.loads(run(python, ["-c", ABOUT], cache, home))
    cli = ["-m", "share_ner.cli"]
    hashes: dict[str, str] = {}
    for fmt in FORMATS:
        out = home / f"tag-{fmt}"
        run(python, [*cli, "tag", str(notes), "--out", str(out), "--format", fmt, "--quiet"], cache, home)
        hashes[f"tag {fmt}"] = hash_dir(out, home)
    if about["pyarrow"] != "-":
        out = home / "tag-parquet"
        run(python, [*cli, "tag", str(export), "--out", str(out), "--format", "parquet", "--quiet"], cache, home)
        hashes["tag parquet (table)"] = hashlib.sha256(run(python, ["-c", TABLES, str(out)], cache, home).encode()
                                                       ).hexdigest()
    model = home / "model"
    run(python, [*cli, "train", "--text", str(train / "text"), "--gold", str(train / "gold"), "--model", str(model),
                 "--quiet"], cache, home)
    hashes["train (model files)"] = model_hash(model)
    return {"python": python, "about": about, "hashes": hashes, "model": model, "home": home, "cache": cache}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", action="append", required=True, metavar="NAME=PY",
                    help="a side: its name and the Python of a venv with this checkout installed (two or more)")
    ap.add_argument("--notes", type=Path, default=REPO / "examples" / "notes", help="notes to tag (a directory)")
    ap.add_argument("--train", type=Path, default=DEFAULT_TRAIN,
                    help="training data: a directory with text/ and gold/")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "versions.md")
    ap.add_argument("--no-write", action="store_true", help="print the table, write no results file")
    args = ap.parse_args(argv)
    pythons = dict(p.split("=", 1) for p in args.python)
    if len(pythons) < 2:
        ap.error("give two sides or more")
    notes, train = args.notes.resolve(), args.train.resolve()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        export = work / "NOTEEVENTS.csv"
        mimic_export(notes, export)
        sides = {name: side(name, py, work, notes, train, export) for name, py in pythons.items()}
        for name, s in sides.items():  # every side tags with every side's model
            for trained_on, t in sides.items():
                out = s["home"] / f"tag-model-{trained_on}"
                run(s["python"], ["-m", "share_ner.cli", "tag", str(notes), "--out", str(out), "--model",
                                  str(t["model"]), "--quiet"], s["cache"], s["home"])
                s["hashes"][f"tag with the model trained on {trained_on}"] = hash_dir(out, s["home"])
        text = report(sides, notes, train, time.perf_counter() - t0)
    if args.no_write:
        print(text)
    else:
        write_results(args.out, text)
    rows = {key for s in sides.values() for key in s["hashes"]}
    return 1 if any(len({s["hashes"].get(key) for s in sides.values()}) > 1 for key in rows) else 0


def shown_command(names: list[str], notes: Path, train: Path) -> str:
    """The command line, each side's Python shown as ``PY_<name>`` (a results file names no machine path)."""
    args = [a for n in names for a in ("--python", f"{n}=PY_{n}")]
    args += ["--notes", shown_path(str(notes), "NOTES")]
    if train != DEFAULT_TRAIN:
        args += ["--train", shown_path(str(train), "TRAIN")]
    return " ".join(["python benchmarks/bench_versions.py", *args])


def report(sides: dict[str, dict], notes: Path, train: Path, seconds: float) -> str:
    names = list(sides)
    texts = [p.read_bytes().decode("utf-8", "replace") for p in sorted(notes.rglob("*.txt"))]
    lines = [
        "# The same outputs on every Python",
        "",
        f"Command: `{shown_command(names, notes, train)}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {seconds:.0f} s). Notes: "
        f"`{shown_path(str(notes))}`, {len(texts):,} notes, {sum(map(len, texts)):,} characters; training data: "
        f"`{shown_path(str(train))}`.",
        "",
        "| side | " + " | ".join(sides[names[0]]["about"]) + " |",
        "|---|" + "---|" * len(sides[names[0]]["about"]),
    ]
    lines += [f"| {n} | " + " | ".join(sides[n]["about"].values()) + " |" for n in names]
    lines += [
        "",
        "Each output's SHA-256 (first 16 hex digits) on each side; \"same\": one hash on every side.",
        "",
        "| output | " + " | ".join(names) + " | same |",
        "|---|" + "---|" * len(names) + "---|",
    ]
    for key in dict.fromkeys(k for s in sides.values() for k in s["hashes"]):
        hashes = [sides[n]["hashes"].get(key) for n in names]
        same = "yes" if len(set(hashes)) == 1 else "**no**"
        lines.append(f"| {key} | " + " | ".join((h or "—")[:16] for h in hashes) + f" | {same} |")
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    raise SystemExit(main())
