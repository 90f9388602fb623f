"""Sentences + tokens per CPU second (``share_ner.text.split_sentences``), this code against older code, and start-up.

Each measurement runs in a fresh child process, the codes alternating round by round:

- ``new``: the worktree's code;
- ``start``: ``--start COMMIT`` of this repository (``git archive``), run with the same Python: the identity check;
- ``baseline``: ``--baseline-python PY``, a venv with older code installed (``--baseline-label`` names it).

A child reads the notes, builds the tokenizer (its set-up is timed on its own), then splits every note into
sentences once (``cold``: each note seen for the first time, as ``share-ner tag`` sees a corpus) and once more
(``warm``). Tokens are counted as the code makes them. The hash covers every note's id, and each sentence's
section and tokens (text, start, end), on the MTSamples notes and on every train/dev/test split under the data
directory (not for the baseline); ``new`` and ``start`` must be equal. Start-up (imports, ``Pipeline.load`` of the default model, the
first note) is measured in fresh processes for ``new`` and ``start`` on the same model directory. Run under
``nice``::

    nice python benchmarks/bench_text_speed.py --baseline-python VENV/bin/python --baseline-label COMMIT
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_data import REPO, RESULTS_DIR, add_data_argument, command_line

RESULTS = RESULTS_DIR / "text_speed.md"
WARMUP_NOTE = "Patient with chest pain and shortness of breath. No fever."


# ---------------------------------------------------------------- child processes


def child_text(listing: str) -> dict[str, Any]:
    t0 = time.process_time()
    from share_ner.document import Document
    from share_ner.text import get_tokenizer, split_sentences

    t1 = time.process_time()
    get_tokenizer()
    t2 = time.process_time()
    groups = json.loads(Path(listing).read_text(encoding="utf-8"))
    docs = {name: [Document(Path(p).stem, Path(p).read_text(encoding="utf-8")) for p in paths]
            for name, paths in groups.items()}
    out: dict[str, Any] = {"import_s": t1 - t0, "tokenizer_setup_s": t2 - t1}
    for label in ("cold", "warm"):
        t = time.process_time()
        sentences = [split_sentences(d) for d in docs["speed"]]
        out[f"{label}_s"] = time.process_time() - t
    out["tokens"] = sum(len(s.tokens) for note in sentences for s in note)
    out["sentences"] = sum(map(len, sentences))
    digests = {}
    for name, group in docs.items():
        h = hashlib.sha256()
        for d in group:
            h.update(f"\x00{d.id}".encode())
            for s in split_sentences(d):
                h.update(f"\x01{s.section}".encode())
                for t in s.tokens:
                    h.update(f"\x02{t.text}\x03{t.start}\x03{t.end}".encode())
        digests[name] = h.hexdigest()
    out["hashes"] = digests
    return out


def child_startup(model: str) -> dict[str, Any]:
    t0 = time.process_time()
    import share_ner.pipeline  # noqa: F401
    from share_ner.document import Document
    from share_ner.pipeline import Pipeline

    t1 = time.process_time()
    pipeline = Pipeline.load(model)
    t2 = time.process_time()
    pipeline.annotate(Document("warmup", WARMUP_NOTE))
    t3 = time.process_time()
    return {"imports": t1 - t0, "load": t2 - t1, "first_note": t3 - t2}


def run_child(python: str, pythonpath: str | None, *args: str) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run([python, str(Path(__file__).resolve()), "--child", *args], capture_output=True, text=True,
                          env=env, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        sys.exit(f"bench_text_speed: child {args[0]} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- set-up


def archive(commit: str, into: Path) -> Path:
    """``commit``'s code laid out as installed (``features/`` as ``share_ner/features`` ...), for PYTHONPATH."""
    into.mkdir(parents=True)
    tar = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    for sub in ("features", "lexicons", "eval"):
        shutil.copytree(into / sub, into / "share_ner" / sub)
    return into


def note_groups(data: Path, limit: int | None) -> dict[str, list[str]]:
    notes = sorted(str(p) for p in (data / "mtsamples" / "raw" / "notes").glob("*.txt"))
    groups = {"speed": notes[:limit] if limit else notes, "mtsamples": notes}
    for split in sorted(data.glob("*/*/text")):
        if split.parent.name in ("train", "dev", "test"):
            groups[f"{split.parent.parent.name}/{split.parent.name}"] = sorted(str(p) for p in split.glob("*.txt"))
    return groups


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--baseline-python", help="Python of a venv with the older code installed (required)")
    ap.add_argument("--baseline-label", help="what the baseline is (a commit; required)")
    ap.add_argument("--start", default="d5c8165", help="commit whose tokens and sentences must be equal")
    ap.add_argument("--notes", type=int, help="time the first N MTSamples notes only (hashes cover all)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, arg = args.child
        print(json.dumps(child_text(arg) if kind == "text" else child_startup(arg)))
        return 0
    if not (args.baseline_python and args.baseline_label):
        ap.error("--baseline-python and --baseline-label are required")

    from share_ner.default_model import default_model_dir

    model = str(default_model_dir())  # built once here, so no child builds it
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-text-") as tmp:
        listing = Path(tmp) / "notes.json"
        groups = note_groups(args.data, args.notes)
        listing.write_text(json.dumps(groups), encoding="utf-8")
        speed_only = Path(tmp) / "speed.json"  # the baseline's hashes are not needed (see the results file)
        speed_only.write_text(json.dumps({"speed": groups["speed"]}), encoding="utf-8")
        start_code = str(archive(args.start, Path(tmp) / "start"))
        codes = {"new": (sys.executable, None, listing), "start": (sys.executable, start_code, listing),
                 "baseline": (args.baseline_python, None, speed_only)}
        text: dict[str, list[dict[str, Any]]] = {c: [] for c in codes}
        startup: dict[str, list[dict[str, Any]]] = {"new": [], "start": []}
        for r in range(args.rounds):
            for code, (python, path, notes) in codes.items():
                text[code].append(res := run_child(python, path, "text", str(notes)))
                print(f"round {r + 1} {code}: cold {res['tokens'] / res['cold_s']:,.0f} tokens/CPU s, "
                      f"warm {res['tokens'] / res['warm_s']:,.0f}", file=sys.stderr)
                if code in startup:
                    startup[code].append(run_child(python, path, "startup", model))
    text_out = report(text, startup, groups, args, load)
    RESULTS.write_text(text_out, encoding="utf-8")
    print(text_out)
    same = text["new"][0]["hashes"] == text["start"][0]["hashes"]
    return 0 if same else 1


def report(text: dict, startup: dict, groups: dict, args: argparse.Namespace, load: tuple) -> str:
    def best(runs: list[dict], key: str) -> float:
        return min(r[key] for r in runs)

    n_tokens = text["new"][0]["tokens"]
    rate = {c: {k: runs[0]["tokens"] / best(runs, f"{k}_s") for k in ("cold", "warm")} for c, runs in text.items()}
    lines = [
        "# Sentences and tokens per CPU second",
        "",
        f"Command: `{command_line('bench_text_speed.py', None)}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python {sys.version.split()[0]}; load average "
        f"before the runs: {load[0]:.1f} / {load[1]:.1f}).",
        "",
        "The machine is shared and loaded, so only ratios measured in this run are compared; each figure is the best of "
        f"{args.rounds} fresh child processes per code, the codes alternating.",
        "",
        f"`share_ner.text.split_sentences` (tokens and sentences) over {len(groups['speed']):,} MTSamples notes, "
        f"{n_tokens:,} tokens as the new code makes them. `cold`: the first pass of a process over the notes (each "
        "note new, as `share-ner tag` meets a corpus); `warm`: a second pass. The tokenizer's set-up is timed apart.",
        "",
        "| code | tokens/CPU s, cold | tokens/CPU s, warm | tokenizer set-up (CPU s) | import of share_ner.text (CPU s) |",
        "|---|---:|---:|---:|---:|",
    ]
    names = {"new": "this code", "start": f"{args.start} (start of this change)", "baseline": args.baseline_label}
    for code, runs in text.items():
        lines.append(f"| {names[code]} | {rate[code]['cold']:,.0f} | {rate[code]['warm']:,.0f} | "
                     f"{best(runs, 'tokenizer_setup_s'):.2f} | {best(runs, 'import_s'):.2f} |")
    lines += [
        "",
        f"Ratio this code / {args.baseline_label}: cold {rate['new']['cold'] / rate['baseline']['cold']:.2f}×, "
        f"warm {rate['new']['warm'] / rate['baseline']['warm']:.2f}×; this code / {args.start}: cold "
        f"{rate['new']['cold'] / rate['start']['cold']:.2f}×, warm {rate['new']['warm'] / rate['start']['warm']:.2f}×.",
        "",
        "## Same tokens and sentences",
        "",
        f"SHA-256 of every note's sentences (section, tokens with offsets); `{args.start}` must equal this code. "
        f"({args.baseline_label} is not compared: it predates the placeholder styles other than MIMIC-III's, so "
        "notes with `___` differ there by design.)",
        "",
        f"| notes | files | this code | {args.start} |",
        "|---|---:|---|---|",
    ]
    for name in text["new"][0]["hashes"]:
        if name == "speed":
            continue
        h = {c: text[c][0]["hashes"][name] for c in ("new", "start")}
        mark = "same" if h["start"] == h["new"] else "**differs**"
        lines.append(f"| {name} | {len(groups[name]):,} | `{h['new'][:16]}` | {mark} |")
    lines += [
        "",
        "## Start-up",
        "",
        "A fresh process each: imports (`share_ner.pipeline`), `Pipeline.load` of the default model, and one short "
        "note (the lazy set-up of the tokenizer and the abbreviation detector); CPU seconds, best of "
        f"{args.rounds}.",
        "",
        "| code | imports | model load | first note | total |",
        "|---|---:|---:|---:|---:|",
    ]
    for code, runs in startup.items():
        parts = [best(runs, k) for k in ("imports", "load", "first_note")]
        lines.append(f"| {names[code]} | {parts[0]:.2f} | {parts[1]:.2f} | {parts[2]:.2f} | "
                     f"{min(sum(r[k] for k in ('imports', 'load', 'first_note')) for r in runs):.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
