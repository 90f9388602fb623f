"""Hashes of every output the command line produces, to show a change of code left behaviour unchanged.

``record`` runs the commands below and writes one SHA-256 per output into the results file; ``check`` runs them
again and writes the file with both columns, exiting 1 when any output differs:

* ``share-ner tag`` on every test split and on the MTSamples notes (``--notes N``: the first N only), with the
  default model and with a model trained on chia/train (``share-ner train``, default settings);
* ``share-ner normalize --lexicon hpo`` on the gold spans of every split with gold, and ``--model`` (the chia
  model) on the gold spans of every test split;
* ``share-ner evaluate --json`` of each of those outputs against its split's gold (every corpus).

An output directory's hash covers its files' names and bytes, leaving out ``run.json`` and ``summary.json`` (they
hold timings and paths); the temporary directory's path is replaced by a placeholder before hashing. The commands
use a fresh ``SHARE_NER_CACHE`` in that directory, so every cache is built by the code measured (the default model
is the packaged one, or, when the code measured left it behind, one trained on the synthetic data into that cache).
Run from the repository root, under ``nice``; the commands run in a temporary directory, so ``PYTHONPATH`` can point at
another checkout's code (``--code`` then names it)::

    nice python benchmarks/output_hashes.py record [--notes N]    # before the change
    nice python benchmarks/output_hashes.py check                  # after it: same --notes as recorded
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_data import DATA, REPO, RESULTS_DIR, add_data_argument

RESULTS = RESULTS_DIR / "output_hashes.md"
SKIP = {"run.json", "summary.json"}
ROW = re.compile(r"^\| `([^`]+)` \| ([0-9a-f]+|—) \|")


def cli(*args: str, work: Path) -> bytes:
    """stdout of ``share-ner ARGS`` (the work directory's path replaced by ``WORK``); stops on failure."""
    env = dict(os.environ, SHARE_NER_CACHE=str(work / "cache"))  # caches built by the code measured
    done = subprocess.run([sys.executable, "-m", "share_ner.cli", *args], capture_output=True, cwd=work, env=env)
    if done.returncode != 0:
        sys.exit(f"share-ner {' '.join(args)} failed:\n{done.stderr.decode(errors='replace')[-2000:]}")
    return done.stdout.replace(str(work).encode(), b"WORK")


def hash_dir(directory: Path, work: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and p.name not in SKIP):
        h.update(str(path.relative_to(directory)).encode() + b"\0")
        h.update(path.read_bytes().replace(str(work).encode(), b"WORK") + b"\0")
    return h.hexdigest()


def gold_splits(data: Path) -> list[str]:
    return sorted(f"{p.parent.parent.name}/{p.parent.name}" for p in data.glob("*/*/gold")
                  if (p.parent / "text").is_dir())


def compute(data: Path, notes: int | None, work: Path) -> dict[str, str]:
    """Output name -> SHA-256, in a fixed order."""
    out: dict[str, str] = {}
    splits = gold_splits(data)
    tests = [s for s in splits if s.endswith("/test")]
    chia = work / "chia-model"
    cli("train", "--text", str(data / "chia/train/text"), "--gold", str(data / "chia/train/gold"),
        "--model", str(chia), "--quiet", work=work)
    models = {"default": [], "chia": ["--model", str(chia)]}
    for label, model in models.items():
        for split in tests:
            pred = work / "tag" / label / split
            cli("tag", str(data / split / "text"), "--out", str(pred), "--quiet", *model, work=work)
            out[f"tag {label} {split}"] = hash_dir(pred, work)
            out[f"evaluate tag {label} {split}"] = hashlib.sha256(cli(
                "evaluate", "--gold", str(data / split / "gold"), "--pred", str(pred),
                "--text", str(data / split / "text"), "--json", work=work)).hexdigest()
        mts = work / "tag" / label / "mtsamples"
        limit = ["--limit", str(notes)] if notes else []
        t0 = time.perf_counter()
        cli("tag", str(data / "mtsamples/raw/notes"), "--out", str(mts), "--quiet", *model, *limit, work=work)
        print(f"tag {label} mtsamples: {time.perf_counter() - t0:.0f} s wall", file=sys.stderr)
        out[f"tag {label} mtsamples" + (f" (first {notes})" if notes else "")] = hash_dir(mts, work)
    for how, which, args in [("hpo", splits, ["--lexicon", "hpo"]), ("chia", tests, ["--model", str(chia)])]:
        for split in which:
            pred = work / "normalize" / how / split
            cli("normalize", str(data / split / "text"), "--mentions", str(data / split / "gold"), "--out", str(pred),
                *args, work=work)
            out[f"normalize {how} {split}"] = hash_dir(pred, work)
            out[f"evaluate normalize {how} {split}"] = hashlib.sha256(cli(
                "evaluate", "--gold", str(data / split / "gold"), "--pred", str(pred),
                "--text", str(data / split / "text"), "--json", work=work)).hexdigest()
        print(f"normalize {how}: done", file=sys.stderr)
    return out


def code_label() -> str:
    """The commit measured (``+`` when the worktree has uncommitted changes)."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           cwd=REPO).stdout
    return rev.strip() + ("+" if dirty.strip() else "")


def read_recorded(path: Path) -> tuple[dict[str, str], str]:
    """The recorded column of a results file, and its header lines up to the table."""
    recorded, head = {}, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if m := ROW.match(line):
            recorded[m[1]] = m[2]
        elif not recorded and not line.startswith("|"):
            head.append(line)
    return recorded, "\n".join(head).rstrip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(ap)
    ap.add_argument("mode", choices=["record", "check"])
    ap.add_argument("--notes", type=int, help="record: tag only the first N MTSamples notes (default all)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="the results file (Markdown)")
    ap.add_argument("--code", help="what code is measured (default: the worktree's commit)")
    args = ap.parse_args(argv)
    if not (DATA / "chia" / "train" / "gold").is_dir():
        print(f"{DATA}: no corpora, nothing to hash", file=sys.stderr)
        return 0
    if args.mode == "check":
        recorded, head = read_recorded(args.out)
        notes = next((int(m[1]) for k in recorded if (m := re.search(r"\(first (\d+)\)", k))), None)
    else:
        recorded, notes = {}, args.notes
    code = args.code or code_label()
    cpu = time.process_time()
    with tempfile.TemporaryDirectory(prefix="share-ner-hashes-") as tmp:
        now = compute(DATA, notes, Path(tmp))
    child = os.times()
    cpu_s = child.children_user + child.children_system + time.process_time() - cpu
    if args.mode == "record":
        head = "\n".join([
            "# Output hashes", "",
            f"Recorded with `nice python benchmarks/output_hashes.py record"
            f"{f' --notes {notes}' if notes else ''}` at {code}; checked with "
            "`nice python benchmarks/output_hashes.py check` (see the script's docstring for what is hashed). "
            f"The MTSamples rows cover {'the first ' + str(notes) if notes else 'all'} notes.",
        ])
        lines = [head, "", f"| output | recorded ({code}) |", "|---|---|"]
        lines += [f"| `{k}` | {v} |" for k, v in now.items()]
        same = True
    else:
        base = head.split("\n\nChecked at")[0]
        lines = [base, "", f"Checked at {code}: "
                 + ("every output is byte-identical." if all(now.get(k) == v for k, v in recorded.items())
                    and set(now) == set(recorded) else "SOME OUTPUTS DIFFER (see the last column)."),
                 "", f"| output | recorded | checked ({code}) | same |", "|---|---|---|---|"]
        for k in dict.fromkeys([*recorded, *now]):
            r, c = recorded.get(k, "—"), now.get(k, "—")
            lines.append(f"| `{k}` | {r} | {c} | {'yes' if r == c else '**no**'} |")
        same = all(recorded.get(k) == now.get(k) for k in set(recorded) | set(now))
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(text)
    print(f"{len(now)} outputs, {cpu_s:.0f} s CPU; wrote {args.out}", file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
