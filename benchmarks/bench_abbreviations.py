"""In-note abbreviation definitions: the detector runs only on the notes that define one, with the same result.

Writes ``benchmarks/results/abbreviations.md``:

- exactness: on every MTSamples note and every split under the data directory, ``find_definitions`` (the two
  screening steps of ``share_ner.features.abbreviations``, then the detector) against the detector run on every
  note with brackets; how many notes each step leaves; exit status 1 if one note differs (the detector against
  scispaCy's: ``bench_scispacy_oracle.py``);
- cost: CPU seconds of ``Pipeline.annotate`` with the default model on ``--notes`` MTSamples notes (every k-th), the
  screening on and off (off: the detector on every note with brackets, as before it), alternating, best of
  ``--rounds``; the mentions must be the same.

Run under ``nice`` on a shared machine: only the ratios within the run count.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench_data import RESULTS_DIR, add_data_argument, command_line, write_results

from share_ner.document import Document
from share_ner.features import abbreviations
from share_ner.inputs.files import read_notes


def corpora(data: Path) -> dict[str, dict[str, str]]:
    """``{name: {note id: text}}``: MTSamples, then every ``<corpus>/<split>/text``."""
    found = {"mtsamples": {i: d.text for i, d in read_notes(data / "mtsamples" / "raw" / "notes").items()}}
    for text_dir in sorted(data.glob("*/*/text")):
        found[f"{text_dir.parent.parent.name}/{text_dir.parent.name}"] = {
            i: d.text for i, d in read_notes(text_dir).items()}
    return found


def exactness(texts: dict[str, str]) -> dict[str, float]:
    """Counts of one corpus, and the CPU seconds of both ways."""
    counts = dict.fromkeys(("notes", "brackets", "step1", "defines", "detector", "pairs", "differ"), 0)
    new_s = old_s = 0.0
    for text in texts.values():
        counts["notes"] += 1
        abbreviations._RECENT.clear()
        t0 = time.process_time()
        new = abbreviations.find_definitions(text)
        new_s += time.process_time() - t0
        if "(" not in text or ")" not in text:
            continue  # without a "(" and a ")" token the detector's matcher matches nothing
        counts["brackets"] += 1
        t0 = time.process_time()
        old = abbreviations._detect(text)
        old_s += time.process_time() - t0
        starts, _ = abbreviations._runs(text)
        counts["step1"] += any(abbreviations._may_open_definition(text, p, starts)
                               for p in abbreviations._positions(text))
        defines = abbreviations.defines_abbreviation(text)
        counts["defines"] += defines
        counts["detector"] += bool(old)
        counts["pairs"] += len(old)
        counts["differ"] += new != old or defines != bool(old)
    return {**counts, "new_s": new_s, "old_s": old_s}


def tagging(texts: list[str], rounds: int, chunk: int = 25) -> dict[str, list[float]]:
    """CPU seconds of annotating ``texts`` with the screening on and off, per round: both sides take each chunk of
    ``chunk`` notes in turn (who goes first alternating), so that the machine's load changes fall on both alike.
    Checks that the mentions are the same."""
    from share_ner.batch.annotate import load_annotator
    from share_ner.default_model.build import default_model_dir

    annotate = load_annotator(default_model_dir())
    docs = [Document(f"n{i}", t) for i, t in enumerate(texts)]
    screened, detect = abbreviations.defines_abbreviation, abbreviations._detect
    inside = [0.0]  # CPU seconds in the screening and the detector

    def timed(fn):
        def run(text):
            t0 = time.process_time()
            try:
                return fn(text)
            finally:
                inside[0] += time.process_time() - t0
        return run

    screens = {"on": timed(screened), "off": lambda text: True}
    abbreviations._detect = timed(detect)
    times: dict[str, list[float]] = {"on": [], "off": [], "on_abbr": [], "off_abbr": []}
    mentions: dict[str, list] = {"on": [], "off": []}
    for r in range(rounds):
        spent = {"on": 0.0, "off": 0.0, "on_abbr": 0.0, "off_abbr": 0.0}
        for k in range(0, len(docs), chunk):
            for side in (("off", "on") if (k // chunk + r) % 2 == 0 else ("on", "off")):
                abbreviations.defines_abbreviation = screens[side]
                abbreviations._RECENT.clear()
                inside[0] = 0.0
                t0 = time.process_time()
                out = [annotate(d) for d in docs[k:k + chunk]]
                spent[side] += time.process_time() - t0
                spent[f"{side}_abbr"] += inside[0]
                if r == 0:
                    mentions[side] += out
        for side in spent:
            times[side].append(spent[side])
    abbreviations.defines_abbreviation, abbreviations._detect = screened, detect
    if mentions["on"] != mentions["off"]:
        raise SystemExit("the screening changed the mentions")
    times["mentions"] = [float(sum(len(m) for m in mentions["on"]))]
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--notes", type=int, default=600, help="MTSamples notes to tag, spread over the corpus (default 600)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR / "abbreviations.md")
    args = ap.parse_args(argv)
    found = corpora(args.data)
    abbreviations.find_definitions("warm (W) up")
    rows = {name: exactness(texts) for name, texts in found.items()}
    mts = [t for _, t in sorted(found["mtsamples"].items())]
    tag = tagging(mts[:: max(1, len(mts) // args.notes)][: args.notes], args.rounds)
    write_results(args.out, report(rows, tag, args))
    return 1 if any(r["differ"] for r in rows.values()) else 0


def report(rows: dict[str, dict[str, float]], tag: dict[str, list[float]], args: argparse.Namespace) -> str:
    total = {k: sum(r[k] for r in rows.values()) for k in next(iter(rows.values()))}
    lines = [
        "# In-note abbreviation definitions: the detector only where a note defines one",
        "",
        f"Command: `nice {command_line('bench_abbreviations.py', sys.argv[1:])}` "
        f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}).",
        "",
        "`share_ner.features.abbreviations.find_definitions` tells from the characters around each `(` (step 1)",
        "and then from the tokens of a window around it (step 2) whether the detector (Schwartz & Hearst's",
        "algorithm as scispaCy runs it; the same pairs: `scispacy_oracle.md`) finds a definition, and runs the",
        "detector on the whole note only then. Against the detector run on every note with brackets:",
        "",
        "| corpus | notes | with `(` and `)` | left by step 1 | left by step 2 | the detector defines | pairs | "
        "differ | CPU s: steps + detector | detector on every note with brackets |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in [*rows.items(), ("all", total)]:
        lines.append(f"| {name} | {r['notes']:,} | {r['brackets']:,} | {r['step1']:,} | {r['defines']:,} | "
                     f"{r['detector']:,} | {r['pairs']:,} | {r['differ']} | {r['new_s']:.2f} | {r['old_s']:.2f} |")
    on, off = min(tag["on"]), min(tag["off"])
    lines += [
        "",
        "\"pairs\": (short form, long form) occurrences the detector finds; \"differ\": notes where",
        "`find_definitions` or step 2's answer is not the detector's (must be 0). The CPU columns load nothing:",
        "the tokenizer is built before.",
        "",
        f"## Tagging: `Pipeline.annotate`, default model, {args.notes} MTSamples notes (every k-th of the sorted ids)",
        "",
        f"Both sides tag each chunk of 25 notes in turn, who goes first alternating; best of {args.rounds} rounds (all",
        "rounds in brackets). \"off\": the detector on every note with brackets, as before the screening.",
        "",
        "| screening | CPU s | off / on | of which the screening and the detector | off / on |",
        "|---|---:|---:|---:|---:|",
        f"| off | {off:.2f} ({', '.join(f'{t:.2f}' for t in tag['off'])}) | | "
        f"{min(tag['off_abbr']):.2f} ({', '.join(f'{t:.2f}' for t in tag['off_abbr'])}) | |",
        f"| on | {on:.2f} ({', '.join(f'{t:.2f}' for t in tag['on'])}) | **{off / on:.2f}x** | "
        f"{min(tag['on_abbr']):.2f} ({', '.join(f'{t:.2f}' for t in tag['on_abbr'])}) | "
        f"**{min(tag['off_abbr']) / min(tag['on_abbr']):.2f}x** |",
        "",
        f"Mentions: {int(tag['mentions'][0]):,}, the same either way.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
