"""Disorder attributes (ShARe/CLEF 2014 Task 2a) on the NegEx/ConText test kit's dev half, beside medspaCy.

On ``negex_kit/dev`` (text/, gold/, assertions.tsv) with the gold condition spans, the kit's labels mapped to
the 2014 attributes: negated <-> negation=yes, historical <-> doctime=before, "not particular" (hypothetical)
<-> conditional=true, an experiencer other than the patient <-> subject other than patient. Measures:

- share-ner's ConText rules (:class:`share_ner.attributes.ContextMatcher`, what ``share-ner attributes`` runs):
  negation accuracy, negated / historical / hypothetical / experiencer P, R, F1, and spans per CPU second of the
  attribute step alone (sentence limits, sections, triggers, body location; notes already read);
- medspaCy 1.3.1's ConText with its default rules, in the same run: ``spacy.blank("en")`` with the pipes
  ``medspacy_pyrush`` and ``medspacy_context``, the span set as ``doc.ents``; its CPU time is that of PyRuSH and
  ConText (tokenizing the note is left out). medspaCy pins spaCy below 3.8, so it runs in a Python of its own
  (``--medspacy-python``; the ``peers`` extra, never installed into the project's environment); without one the
  row is left out;
- end-to-end ``share-ner tag`` on a sample of MTSamples notes, with attributes and with ``--no-attributes``
  (each twice, alternating; the lower CPU time of each kept), tokens per CPU second.

Prints a table and writes ``benchmarks/results/attributes.md``; from the repository root::

    python -m venv ../venv-peers
    ../venv-peers/bin/pip install '.[peers]'
    nice python benchmarks/bench_attributes.py --medspacy-python ../venv-peers/bin/python

(other options: ``--data DIR``, ``--notes N``, ``--out FILE``).

Corpora come from ``--data``, else ``$SHARE_NER_DATA``, else ``<repo>/../shared/data``.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_data import add_data_argument, write_results

RESULTS = Path(__file__).resolve().parent / "results" / "attributes.md"
PASSES = 5  # the attribute step is timed over this many passes over the kit (the fastest kept)

# The kit's labels as 2014 attribute tests: (row label, gold test on a kit row, prediction test on attributes)
TARGETS = {
    "negated": (lambda r: r["negation"] == "negated", lambda a: a["negation"] == "yes"),
    "historical": (lambda r: r["temporality"] == "historical", lambda a: a["doctime"] == "before"),
    "hypothetical": (lambda r: r["temporality"] == "not particular", lambda a: a["conditional"] == "true"),
    "experiencer": (lambda r: r["experiencer"] != "patient", lambda a: a["subject"] != "patient"),
}


def read_kit(root: Path) -> list[dict[str, Any]]:
    """The kit's rows, each with its note text."""
    with open(root / "assertions.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        with open(root / "text" / f"{r['doc']}.txt", newline="", encoding="utf-8") as f:
            r["text"] = f.read()
        r["start"], r["end"] = int(r["start"]), int(r["end"])
    return rows


def prf(gold: list[bool], pred: list[bool]) -> dict[str, float]:
    tp = sum(g and p for g, p in zip(gold, pred))
    fp = sum(p and not g for g, p in zip(gold, pred))
    fn = sum(g and not p for g, p in zip(gold, pred))
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return {"p": p, "r": r, "f1": 2 * p * r / (p + r) if p + r else 0.0, "tp": tp, "fp": fp, "fn": fn}


def score(rows: list[dict[str, Any]], preds: list[dict[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (gold_test, pred_test) in TARGETS.items():
        out[name] = prf([gold_test(r) for r in rows], [pred_test(a) for a in preds])
    neg_g = [TARGETS["negated"][0](r) for r in rows]
    neg_p = [TARGETS["negated"][1](a) for a in preds]
    out["negation_accuracy"] = sum(g == p for g, p in zip(neg_g, neg_p)) / len(rows)
    return out


def run_share_ner(rows: list[dict[str, Any]]) -> tuple[list[dict[str, str]], float]:
    from share_ner.attributes import ContextMatcher
    from share_ner.document import Document, Mention

    matcher = ContextMatcher()
    items = [(Document(r["doc"], r["text"]), [Mention(r["doc"], ((r["start"], r["end"]),))]) for r in rows]
    best = float("inf")
    preds: list[Any] = []
    for _ in range(PASSES):
        t0 = time.process_time()
        preds = [matcher.attributes(doc, ms)[0] for doc, ms in items]
        best = min(best, time.process_time() - t0)
    return [a.to_dict() for a in preds], len(items) / best


def medspacy_worker() -> None:
    """Run in medspaCy's Python: rows (JSON lines: text, start, end) on stdin, one JSON result on stdout."""
    import medspacy  # noqa: F401 - registers the pipes
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("medspacy_pyrush")
    nlp.add_pipe("medspacy_context")
    pipes = [nlp.get_pipe("medspacy_pyrush"), nlp.get_pipe("medspacy_context")]
    rows = [json.loads(line) for line in sys.stdin if line.strip()]
    docs = []
    for r in rows:
        doc = nlp.make_doc(r["text"])
        span = doc.char_span(r["start"], r["end"], label="CONDITION", alignment_mode="expand")
        docs.append((doc, span))
    t0 = time.process_time()
    out = []
    for doc, span in docs:
        doc = pipes[0](doc)
        doc.ents = [span] if span is not None else []
        doc = pipes[1](doc)
        ent = doc.ents[0] if doc.ents else None
        out.append({
            "negation": "yes" if ent is not None and ent._.is_negated else "no",
            "doctime": "before" if ent is not None and ent._.is_historical else "unknown",
            "conditional": "true" if ent is not None and ent._.is_hypothetical else "false",
            "subject": "family_member" if ent is not None and ent._.is_family else "patient",
        })
    cpu = time.process_time() - t0
    print(json.dumps({"preds": out, "cpu": cpu, "version": medspacy.__version__}))


def run_medspacy(python: str, rows: list[dict[str, Any]]) -> tuple[list[dict[str, str]], float, str]:
    payload = "".join(json.dumps({"text": r["text"], "start": r["start"], "end": r["end"]}) + "\n" for r in rows)
    proc = subprocess.run([python, __file__, "--medspacy-worker"], input=payload, capture_output=True, text=True,
                          check=True)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["preds"], len(rows) / result["cpu"], result["version"]


def tag_cpu(notes: Path, out: Path, extra: list[str]) -> float:
    """CPU seconds of one ``share-ner tag`` child process over ``notes``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "share_ner.cli", "tag", str(notes), "--out", str(out), "--quiet",
                    *extra], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_tag(data: Path, n_notes: int) -> dict[str, Any]:
    from share_ner.batch.annotate import count_tokens

    notes = sorted((data / "mtsamples" / "raw" / "notes").glob("*.txt"))
    step = max(1, len(notes) // n_notes)
    sample = notes[::step][:n_notes]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "notes"
        src.mkdir()
        tokens = 0
        for p in sample:
            (src / p.name).write_bytes(p.read_bytes())
            tokens += count_tokens(p.read_text(encoding="utf-8"))
        cpu: dict[str, list[float]] = {"with": [], "without": []}
        for k in range(2):
            for label, extra in (("with", []), ("without", ["--no-attributes"])):
                cpu[label].append(tag_cpu(src, Path(tmp) / f"out-{label}-{k}", extra))
        mentions = sum(len(f.read_text(encoding="utf-8").splitlines())
                       for f in (Path(tmp) / "out-with-0").glob("*.pipe.txt"))
    best = {k: min(v) for k, v in cpu.items()}
    return {"notes": len(sample), "tokens": tokens, "mentions": mentions, "cpu": best,
            "tokens_per_cpu_s": {k: tokens / v for k, v in best.items()}}


def markdown(kit: int, ours: dict[str, Any], ours_speed: float, med: dict[str, Any] | None, med_speed: float,
             med_version: str, tag: dict[str, Any] | None, command: str) -> str:
    lines = [
        "# Disorder attributes on the NegEx/ConText test kit (dev half)",
        "",
        "The machine was shared with other work while this ran; speeds are CPU-time figures, compared as ratios "
        "within this run.",
        "",
        f"Produced by `{command}`: {kit} conditions of `negex_kit/dev` with their gold spans.",
        "",
        "| system | negation accuracy | negated P / R / F1 | historical F1 | hypothetical F1 | experiencer F1 "
        "| spans per CPU s |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(name: str, s: dict[str, Any], speed: float) -> str:
        n = s["negated"]
        return (f"| {name} | {s['negation_accuracy']:.3f} | {n['p']:.3f} / {n['r']:.3f} / {n['f1']:.3f} "
                f"| {s['historical']['f1']:.3f} | {s['hypothetical']['f1']:.3f} | {s['experiencer']['f1']:.3f} "
                f"| {speed:,.0f} |")

    lines.append(row("share-ner ConText rules", ours, ours_speed))
    if med is not None:
        lines.append(row(f"medspaCy {med_version} ConText (default rules, PyRuSH sentences)", med, med_speed))
        lines.append("")
        lines.append(f"share-ner's attribute step is {ours_speed / med_speed:,.0f} times medspaCy's speed here.")
    lines += ["", "Counts (tp / fp / fn):", ""]
    for name in TARGETS:
        o = ours[name]
        cell = f"share-ner {o['tp']} / {o['fp']} / {o['fn']}"
        if med is not None:
            m = med[name]
            cell += f"; medspaCy {m['tp']} / {m['fp']} / {m['fn']}"
        lines.append(f"- {name}: {cell}")
    lines += ["", "Targets: negation accuracy >= 0.985, negated F1 >= 0.96, historical F1 >= 0.72, hypothetical "
              "F1 >= 0.85, >= 50,000 spans per CPU second. The kit has only 2 conditions with an experiencer "
              "other than the patient: that F1 says little."]
    if tag is not None:
        w, wo = tag["tokens_per_cpu_s"]["with"], tag["tokens_per_cpu_s"]["without"]
        lines += [
            "",
            "## End-to-end `share-ner tag` (default model) on MTSamples",
            "",
            f"{tag['notes']} notes (every k-th of the sorted files), {tag['tokens']:,} tokens, {tag['mentions']:,} "
            "mentions found; each setting run twice, alternating, the lower CPU time kept (model load included).",
            "",
            "| setting | CPU s | tokens per CPU s |",
            "|---|---|---|",
            f"| with attributes (default) | {tag['cpu']['with']:.1f} | {w:,.0f} |",
            f"| `--no-attributes` | {tag['cpu']['without']:.1f} | {wo:,.0f} |",
            "",
            f"With attributes the throughput is {100 * (w / wo - 1):+.1f}% of that without (target: no more than "
            "10% below).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_argument(ap)
    ap.add_argument("--medspacy-python", help="a Python with medspacy 1.3.1 installed (default: this one, if it "
                    "has medspacy)")
    ap.add_argument("--notes", type=int, default=500, help="MTSamples notes for the end-to-end run (0: skip)")
    ap.add_argument("--out", default=str(RESULTS), help="results file")
    ap.add_argument("--medspacy-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.medspacy_worker:
        medspacy_worker()
        return
    data = args.data
    rows = read_kit(data / "negex_kit" / "dev")
    preds, speed = run_share_ner(rows)
    ours = score(rows, preds)
    med = None
    med_speed = 0.0
    med_version = ""
    python = args.medspacy_python
    if python is None:
        try:
            import medspacy  # noqa: F401

            python = sys.executable
        except ImportError:
            print("medspaCy is not installed here and no --medspacy-python was given: its row is left out",
                  file=sys.stderr)
    if python:
        med_preds, med_speed, med_version = run_medspacy(python, rows)
        med = score(rows, med_preds)
    tag = run_tag(data, args.notes) if args.notes else None
    command = "nice python benchmarks/bench_attributes.py" + (
        " --medspacy-python PY" if args.medspacy_python else "") + (
        f" --notes {args.notes}" if args.notes != 500 else "")
    text = markdown(len(rows), ours, speed, med, med_speed, med_version, tag, command)
    write_results(args.out, text)


if __name__ == "__main__":
    main()
