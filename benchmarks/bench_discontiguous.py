"""Discontiguous mentions: two share-ner installations compared as a user runs them, in one run.

Each system is a Python interpreter with share-ner installed (``--system NAME=PYTHON``, repeatable; default: this
interpreter as ``current``). For each, ``share-ner train`` on chia/train with the defaults, then ``share-ner tag``
on the test split of every corpus with discontiguous mentions (chia/test, mantra_gsc/test; Mantra GSC has no
training split, so the chia model tags it) and ``share-ner evaluate --json``: strict / relaxed P/R/F1 and strict
P/R/F1 on the discontiguous mentions alone. Train and tag times are the CPU seconds of the child processes
(``resource.getrusage(RUSAGE_CHILDREN)``), the best of ``--rounds`` rounds in which the systems alternate, so their
ratios compare within one run on a shared machine; tagging is also timed on the first 1,000 MTSamples notes, where
start-up is a small share.
Then ``share-ner ceiling`` of the current installation with learned pairing (fragment tags) and with the rules.

    nice python benchmarks/bench_discontiguous.py --system before=/path/to/old/venv/bin/python [--rounds N] [--out FILE]

Writes ``benchmarks/results/discontiguous.md``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from bench_data import RESULTS_DIR, add_data_argument, write_results
from bench_speed_scale import link_notes

RESULTS = RESULTS_DIR / "discontiguous.md"
TESTS = ("chia/test", "mantra_gsc/test")
SPEED_NOTES = 1000  # MTSamples notes tagged for speed: long enough that start-up is a small share
CEILING_SPLITS = ("chia/train", "chia/dev", "chia/test", "mantra_gsc/test")
COMMAND = "nice python benchmarks/bench_discontiguous.py --system before=<python of the previous release>"


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _cli(python: str, *args: str) -> tuple[str, float]:
    """Run ``share-ner ARGS`` with ``python``; its stdout and CPU seconds."""
    before = _child_cpu()
    # run outside the repository, so that the installation under test is imported, not the working tree
    proc = subprocess.run([python, "-m", "share_ner.cli", *args], capture_output=True, text=True,
                          cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise SystemExit(f"share-ner {' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout, _child_cpu() - before


def run_round(python: str, data: Path, work: Path, out: dict, score: bool, speed: Path | None) -> None:
    """Train and tag with ``python`` once, adding the CPU seconds to ``out``; with ``score``, evaluate too."""
    model = work / "model"
    train = data / "chia" / "train"
    _, train_cpu = _cli(python, "train", "--text", str(train / "text"), "--gold", str(train / "gold"),
                        "--model", str(model), "--quiet")
    out.setdefault("train_cpu_s", []).append(train_cpu)
    for split in TESTS:
        base = data / split
        pred = work / split.replace("/", "-")
        shutil.rmtree(pred, ignore_errors=True)  # each round's model is a new one: a fresh run, not a resumed one
        _, tag_cpu = _cli(python, "tag", str(base / "text"), "--model", str(model), "--out", str(pred))
        entry = out.setdefault("splits", {}).setdefault(split, {"tag_cpu_s": []})
        entry["tag_cpu_s"].append(tag_cpu)
        if score:
            # scored by the current installation, which reports the discontiguous scores whatever the system's
            # version
            scores, _ = _cli(sys.executable, "evaluate", "--gold", str(base / "gold"), "--pred", str(pred), "--json")
            entry["scores"] = json.loads(scores)
    if speed is not None:
        shutil.rmtree(work / "speed-out", ignore_errors=True)
        _, tag_cpu = _cli(python, "tag", str(speed), "--model", str(model), "--out", str(work / "speed-out"))
        out.setdefault("speed_cpu_s", []).append(tag_cpu)


def _times(values: list[float]) -> str:
    """The best of a measure's rounds, all rounds in brackets."""
    return f"{min(values):.1f} ({', '.join(f'{v:.1f}' for v in values)})"


def _prf(d: dict) -> str:
    return f"{d['precision']:.3f} | {d['recall']:.3f} | **{d['f1']:.3f}**"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--system", action="append", default=[], metavar="NAME=PYTHON",
                    help="an installation to compare (repeatable); the current interpreter is always 'current'")
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds, the systems alternating (default 3)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if not (args.data / "README.md").exists():
        print(f"bench_discontiguous: {args.data} not found; nothing to measure", file=sys.stderr)
        return 0
    systems = [tuple(s.split("=", 1)) for s in args.system] + [("current", sys.executable)]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-disc-") as tmp:
        # the first MTSamples notes, to time tagging beyond start-up (none without MTSamples)
        has_notes = (args.data / "mtsamples" / "raw" / "notes").is_dir()
        speed = link_notes(Path(tmp), args.data, SPEED_NOTES) if has_notes else None
        # the systems alternate round by round, so that a slower spell of a shared machine falls on each of them
        for r in range(args.rounds):
            for name, python in systems:
                print(f"round {r + 1}, {name}: train, tag{', evaluate' if not r else ''} ...", file=sys.stderr,
                      flush=True)
                work = Path(tmp) / name
                work.mkdir(exist_ok=True)
                run_round(python, args.data, work, results.setdefault(name, {}), score=not r, speed=speed)
    lines = [
        "# Discontiguous mentions: the system before and after learned pairing",
        "",
        f"Command: `{COMMAND}{f' --rounds {args.rounds}' if args.rounds != 3 else ''}`. Each system: `share-ner train --text chia/train/text --gold chia/train/gold "
        "--model M` (defaults), `share-ner tag <split>/text --model M --out P`, `share-ner evaluate --gold "
        "<split>/gold --pred P --json`. Mantra GSC has no training split: the chia model tags it. `disc.` = strict "
        "P/R/F1 on the discontiguous mentions alone; every system's output is scored by the current `evaluate`. "
        f"CPU seconds of the child processes, the best of {args.rounds} rounds (all in brackets), the systems "
        "alternating round by round on one machine (compare the ratios).",
        "",
        "| system | split | strict P | strict R | strict F1 | relaxed P | relaxed R | relaxed F1 | disc. P | disc. R "
        "| disc. F1 | disc. gold | tag CPU s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, res in results.items():
        for split, r in res["splits"].items():
            sc = r["scores"]
            disc = sc["discontiguous"]
            n_disc = disc["tp"] + disc["fn"]
            lines.append(f"| {name} | {split} | {_prf(sc['strict'])} | {_prf(sc['relaxed'])} | {_prf(disc)} "
                         f"| {n_disc} | {_times(r['tag_cpu_s'])} |")
    with_speed = all("speed_cpu_s" in res for res in results.values())
    lines += ["", "| system | train CPU s (chia/train) | train ratio | tag CPU s (chia/test) | tag ratio |"
              + (f" tag CPU s ({SPEED_NOTES:,} MTSamples notes) | tag ratio |" if with_speed else ""),
              "|---|---:|---:|---:|---:|" + ("---:|---:|" if with_speed else "")]
    ref = next(iter(results.values()))
    for name, res in results.items():
        train, ref_train = res["train_cpu_s"], ref["train_cpu_s"]
        tag, ref_tag = res["splits"]["chia/test"]["tag_cpu_s"], ref["splits"]["chia/test"]["tag_cpu_s"]
        lines.append(f"| {name} | {_times(train)} | {min(train) / min(ref_train):.2f} "
                     f"| {_times(tag)} | {min(tag) / min(ref_tag):.2f} |"
                     + (f" {_times(res['speed_cpu_s'])} | {min(res['speed_cpu_s']) / min(ref['speed_cpu_s']):.2f} |"
                        if with_speed else ""))
    lines += ["", "Ratios: a system's best CPU seconds over the first system's (below 1: faster). The MTSamples notes "
              "are tagged by each system's chia model, for speed only."]
    lines += ["", "Ceiling of the current installation (`share-ner ceiling --text <split>/text --gold <split>/gold "
              "[--pairing rules]`): share of gold mentions, and of discontiguous ones, that the tags hold.", "",
              "| split | learned pairing: all | discontiguous | lost: in token / on whitespace / crossing / overlap "
              "| rules: all | discontiguous |", "|---|---:|---:|---|---:|---:|"]
    for split in CEILING_SPLITS:
        base = args.data / split
        row = {}
        for pairing in ("learned", "rules"):
            text, _ = _cli(sys.executable, "ceiling", "--text", str(base / "text"), "--gold", str(base / "gold"),
                           "--pairing", pairing, "--json")
            row[pairing] = json.loads(text)
        le, ru = row["learned"], row["rules"]
        lost = le["lost"]
        lines.append(f"| {split} | {100 * le['ceiling']:.2f}% | {100 * le['discontiguous_ceiling']:.2f}% "
                     f"| {lost['inexact']} / {lost['whitespace']} / {lost['crossing']} / {lost['dropped']} "
                     f"| {100 * ru['ceiling']:.2f}% | {100 * ru['discontiguous_ceiling']:.2f}% |")
    write_results(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
