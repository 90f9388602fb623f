"""Disorder attributes (ShARe/CLEF 2014 Task 2a) on given spans, beside medspaCy: the NegEx/ConText test kit's dev
half, hand-annotated narrative sentences, and the cost of a long sentence.

- ``negex_kit/dev`` (text/, gold/, assertions.tsv) with the gold condition spans, the kit's labels mapped to the
  2014 attributes: negated <-> negation=yes, historical <-> doctime=before, "not particular" (hypothetical) <->
  conditional=true, an experiencer other than the patient <-> subject other than patient; negation accuracy,
  negated / historical / hypothetical / experiencer P, R, F1, and spans per CPU second of the attribute step alone
  (sentence limits, sections, triggers, body location; notes already read);
- the MTSamples narrative sentences of ``tests/fixtures/narrative_attributes`` (its README: the guideline, and the
  ``dev`` half the rules were written on beside the ``check`` half they were not): negation and uncertainty P, R,
  F1, and F1 of "uncertain or hypothetical" (uncertainty or conditional);
- one sentence of ``"no fever, " * n`` (3n words and marks, n mentions) for growing n: CPU seconds of the attribute
  step, a size left out once a smaller one took more than ``--cap`` seconds.

share-ner's attribute step is what ``share-ner attributes`` runs (:class:`share_ner.attributes.ContextMatcher`,
the default model's terms as disorder names), in a child process of this Python; with ``--baseline-python`` the
same in another Python whose share-ner is another checkout (a row named ``--baseline-name``), for a comparison
within one run. medspaCy 1.3.1's ConText with its default rules runs in the same run: ``spacy.blank("en")`` with
the pipes ``medspacy_pyrush`` and ``medspacy_context``, the span set as ``doc.ents``; its CPU time is that of
PyRuSH and ConText (tokenizing the note is left out). medspaCy pins spaCy below 3.8, so it runs in a Python of its
own (``--medspacy-python``; the ``peers`` extra, never installed into the project's environment); without one its
rows are left out. Last, end-to-end ``share-ner tag`` on a sample of MTSamples notes, with attributes and with
``--no-attributes`` (each twice, alternating; the lower CPU time of each kept), tokens per CPU second.

Prints a table and writes ``benchmarks/results/attributes.md``; from the repository root::

    python -m venv ../venv-peers
    ../venv-peers/bin/pip install '.[peers]'
    nice python benchmarks/bench_attributes.py --medspacy-python ../venv-peers/bin/python

(other options: ``--baseline-python PY --baseline-name NAME``, ``--data DIR``, ``--notes N``, ``--cap S``,
``--out FILE``).

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

from bench_data import REPO, add_data_argument, write_results

RESULTS = Path(__file__).resolve().parent / "results" / "attributes.md"
NARRATIVE = REPO / "tests" / "fixtures" / "narrative_attributes"
PASSES = 5  # the attribute step is timed over this many passes over the kit (the fastest kept)
LONG = (250, 500, 1000, 2000, 7000)  # n of the sentence "no fever, " * n
LONG_UNIT = "no fever, "

# The kit's labels as 2014 attribute tests: (row label, gold test on a kit row, prediction test on attributes)
TARGETS = {
    "negated": (lambda r: r["negation"] == "negated", lambda a: a["negation"] == "yes"),
    "historical": (lambda r: r["temporality"] == "historical", lambda a: a["doctime"] == "before"),
    "hypothetical": (lambda r: r["temporality"] == "not particular", lambda a: a["conditional"] == "true"),
    "experiencer": (lambda r: r["experiencer"] != "patient", lambda a: a["subject"] != "patient"),
}
# The narrative sentences' values as tests on a gold row and on predicted attributes
NARRATIVE_TARGETS = {
    "negation": (lambda r: r["negation"] == "yes", lambda a: a["negation"] == "yes"),
    "uncertainty": (lambda r: r["uncertainty"] == "yes", lambda a: a["uncertainty"] == "yes"),
    "uncertain or hypothetical": (lambda r: r["uncertainty"] == "yes" or r["conditional"] == "true",
                                  lambda a: a["uncertainty"] == "yes" or a["conditional"] == "true"),
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


def read_narrative(root: Path) -> list[dict[str, Any]]:
    """The rows of one half of the narrative sentences, each with its sentence."""
    with open(root / "annotations.tsv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    texts: dict[str, str] = {}
    for r in rows:
        if r["doc"] not in texts:
            texts[r["doc"]] = (root / "text" / f"{r['doc']}.txt").read_text(encoding="utf-8")
        r["text"] = texts[r["doc"]]
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


def score_narrative(rows: list[dict[str, Any]], preds: list[dict[str, str]]) -> dict[str, Any]:
    return {name: prf([g(r) for r in rows], [t(a) for a in preds]) for name, (g, t) in NARRATIVE_TARGETS.items()}


def payload(kit: list[dict[str, Any]], narrative: dict[str, list[dict[str, Any]]], cap: float) -> str:
    """What a worker reads on stdin: the spans to fill (one mention each), the long-sentence sizes and the cap."""
    def spans(rows: list[dict[str, Any]]) -> list[list[Any]]:
        return [[r["text"], r["start"], r["end"]] for r in rows]
    return json.dumps({"kit": spans(kit), "narrative": {k: spans(v) for k, v in narrative.items()},
                       "long": list(LONG), "unit": LONG_UNIT, "cap": cap})


def long_sentence(n: int, unit: str) -> tuple[str, list[tuple[int, int]]]:
    """``unit * n`` and the span of the disorder word of each unit (its second word)."""
    word = unit.split()[1].strip(",")
    at = unit.index(word)
    return unit * n, [(k * len(unit) + at, k * len(unit) + at + len(word)) for k in range(n)]


def share_ner_worker() -> None:
    """Run in a share-ner's Python: the spans of :func:`payload` on stdin, one JSON result on stdout (attributes of
    the kit and the narrative sentences, spans per CPU second on the kit, CPU seconds of each long sentence)."""
    from share_ner.attributes import ContextMatcher
    from share_ner.document import Document, Mention

    job = json.loads(sys.stdin.read())
    try:  # the default model's terms as disorder names, as share-ner attributes takes them
        from share_ner.default_model.build import default_model_dir
        from share_ner.pipeline import model_names
        matcher = ContextMatcher(names=model_names(default_model_dir()))
    except ImportError:  # a share-ner whose attribute step takes no names
        matcher = ContextMatcher()

    def fill(spans: list[list[Any]]) -> list[dict[str, str]]:
        return [matcher.attributes(Document("d", t), [Mention("d", ((s, e),))])[0].to_dict() for t, s, e in spans]

    items = [(Document("d", t), [Mention("d", ((s, e),))]) for t, s, e in job["kit"]]
    best = float("inf")
    for _ in range(PASSES):
        t0 = time.process_time()
        for doc, ms in items:
            matcher.attributes(doc, ms)
        best = min(best, time.process_time() - t0)
    long: dict[int, float] = {}
    for n in job["long"]:
        text, spans = long_sentence(n, job["unit"])
        t0 = time.process_time()
        matcher.attributes(Document("d", text), [Mention("d", (sp,)) for sp in spans])
        long[n] = time.process_time() - t0
        if long[n] > job["cap"]:
            break
    print(json.dumps({"kit": fill(job["kit"]), "speed": len(items) / best, "long": long,
                      "narrative": {k: fill(v) for k, v in job["narrative"].items()}}))


def medspacy_worker() -> None:
    """Run in medspaCy's Python: the spans of :func:`payload` on stdin, one JSON result on stdout."""
    import medspacy  # noqa: F401 - registers the pipes
    import spacy

    job = json.loads(sys.stdin.read())
    nlp = spacy.blank("en")
    nlp.add_pipe("medspacy_pyrush")
    nlp.add_pipe("medspacy_context")
    pipes = [nlp.get_pipe("medspacy_pyrush"), nlp.get_pipe("medspacy_context")]

    def run(spans: list[list[Any]]) -> tuple[list[dict[str, str]], float]:
        docs = []
        for text, start, end in spans:
            doc = nlp.make_doc(text)
            docs.append((doc, doc.char_span(start, end, label="CONDITION", alignment_mode="expand")))
        t0 = time.process_time()
        out = []
        for doc, span in docs:
            doc = pipes[0](doc)
            doc.ents = [span] if span is not None else []
            doc = pipes[1](doc)
            ent = doc.ents[0] if doc.ents else None
            out.append({
                "negation": "yes" if ent is not None and ent._.is_negated else "no",
                "uncertainty": "yes" if ent is not None and ent._.is_uncertain else "no",
                "doctime": "before" if ent is not None and ent._.is_historical else "unknown",
                "conditional": "true" if ent is not None and ent._.is_hypothetical else "false",
                "subject": "family_member" if ent is not None and ent._.is_family else "patient",
            })
        return out, time.process_time() - t0

    kit, cpu = run(job["kit"])
    long: dict[int, float] = {}
    for n in job["long"]:
        text, spans = long_sentence(n, job["unit"])
        doc = pipes[0](nlp.make_doc(text))
        ents = [doc.char_span(s, e, label="CONDITION", alignment_mode="expand") for s, e in spans]
        doc.ents = [e for e in ents if e is not None]
        t0 = time.process_time()
        pipes[1](doc)
        long[n] = time.process_time() - t0
        if long[n] > job["cap"]:
            break
    print(json.dumps({"kit": kit, "speed": len(job["kit"]) / cpu, "long": long, "version": medspacy.__version__,
                      "narrative": {k: run(v)[0] for k, v in job["narrative"].items()}}))


def run_worker(python: str, flag: str, job: str) -> dict[str, Any]:
    proc = subprocess.run([python, __file__, flag], input=job, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{python} {flag} failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["long"] = {int(n): cpu for n, cpu in result["long"].items()}
    return result


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


def markdown(kit_rows: int, narrative: dict[str, list[dict[str, Any]]], systems: list[dict[str, Any]],
             tag: dict[str, Any] | None, command: str, cap: float) -> str:
    """``systems``: per row, its ``name``, ``kit`` and ``narrative`` scores, ``speed`` and ``long`` CPU seconds."""
    lines = [
        "# Disorder attributes on given spans: the NegEx/ConText test kit (dev half), narrative sentences, a long "
        "sentence",
        "",
        "The machine was shared with other work while this ran; speeds are CPU-time figures, compared as ratios "
        "within this run.",
        "",
        f"Produced by `{command}`.",
        "",
        f"## The NegEx/ConText test kit, dev half ({kit_rows} conditions with their gold spans)",
        "",
        "| system | negation accuracy | negated P / R / F1 | historical F1 | hypothetical F1 | experiencer F1 "
        "| spans per CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for sy in systems:
        s, n = sy["kit"], sy["kit"]["negated"]
        lines.append(f"| {sy['name']} | {s['negation_accuracy']:.3f} | {n['p']:.3f} / {n['r']:.3f} / {n['f1']:.3f} "
                     f"| {s['historical']['f1']:.3f} | {s['hypothetical']['f1']:.3f} | {s['experiencer']['f1']:.3f} "
                     f"| {sy['speed']:,.0f} |")
    lines += ["", "Counts (tp / fp / fn):", ""]
    for name in TARGETS:
        cells = [f"{sy['name']} {sy['kit'][name]['tp']} / {sy['kit'][name]['fp']} / {sy['kit'][name]['fn']}"
                 for sy in systems]
        lines.append(f"- {name}: " + "; ".join(cells))
    lines += ["", "Targets: negation accuracy >= 0.985, negated F1 >= 0.96, historical F1 >= 0.72, hypothetical "
              "F1 >= 0.85, >= 50,000 spans per CPU second. The kit has only 2 conditions with an experiencer "
              "other than the patient: that F1 says little."]
    for half, rows in narrative.items():
        docs = len({r["doc"] for r in rows})
        counts = {k: sum(g(r) for r in rows) for k, (g, _) in NARRATIVE_TARGETS.items()}
        lines += [
            "",
            f"## Narrative sentences, `{half}` half ({docs} MTSamples sentences, {len(rows)} mentions: "
            f"{counts['negation']} negated, {counts['uncertainty']} uncertain, "
            f"{counts['uncertain or hypothetical']} uncertain or hypothetical)",
            "",
            "`tests/fixtures/narrative_attributes` (its README: guideline, sampling; the rules were written on the "
            "`dev` half, the `check` half was annotated after them and changed none)." if half == "dev" else
            "Annotated after the rules were written; no rule was changed after reading its errors.",
            "",
            "| system | negation P / R / F1 | uncertainty P / R / F1 | uncertain or hypothetical P / R / F1 |",
            "|---|---|---|---|",
        ]
        for sy in systems:
            cells = [f"{v['p']:.3f} / {v['r']:.3f} / {v['f1']:.3f}" for v in sy["narrative"][half].values()]
            lines.append(f"| {sy['name']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"## One long sentence: `\"{LONG_UNIT}\" * n` (3n words and marks, n mentions)",
        "",
        f"CPU seconds of the attribute step; a size is left out once a smaller one took more than {cap:g} s.",
        "",
        "| n | words and marks | " + " | ".join(sy["name"] for sy in systems) + " |",
        "|---|---|" + "---|" * len(systems),
    ]
    for n in LONG:
        cells = [f"{sy['long'][n]:.2f}" if n in sy["long"] else "—" for sy in systems]
        lines.append(f"| {n:,} | {3 * n:,} | " + " | ".join(cells) + " |")
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
    ap.add_argument("--baseline-python", help="the Python of another share-ner checkout, measured beside this one")
    ap.add_argument("--baseline-name", default="baseline", help="what to call the baseline in the tables")
    ap.add_argument("--notes", type=int, default=500, help="MTSamples notes for the end-to-end run (0: skip)")
    ap.add_argument("--cap", type=float, default=20.0, help="CPU seconds after which longer sentences are skipped")
    ap.add_argument("--out", default=str(RESULTS), help="results file")
    ap.add_argument("--medspacy-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--share-ner-worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.medspacy_worker:
        medspacy_worker()
        return
    if args.share_ner_worker:
        share_ner_worker()
        return
    kit = read_kit(args.data / "negex_kit" / "dev")
    narrative = {half: read_narrative(NARRATIVE / half) for half in ("dev", "check")}
    job = payload(kit, narrative, args.cap)
    sides = [("share-ner ConText rules", sys.executable, "--share-ner-worker")]
    if args.baseline_python:
        sides.append((f"share-ner, {args.baseline_name}", args.baseline_python, "--share-ner-worker"))
    python = args.medspacy_python
    if python is None:
        try:
            import medspacy  # noqa: F401

            python = sys.executable
        except ImportError:
            print("medspaCy is not installed here and no --medspacy-python was given: its rows are left out",
                  file=sys.stderr)
    systems = []
    for name, py, flag in sides + ([("medspaCy ConText", python, "--medspacy-worker")] if python else []):
        result = run_worker(py, flag, job)
        if flag == "--medspacy-worker":
            name = f"medspaCy {result['version']} ConText (default rules, PyRuSH sentences)"
        systems.append({"name": name, "kit": score(kit, result["kit"]), "speed": result["speed"],
                        "long": result["long"],
                        "narrative": {h: score_narrative(narrative[h], result["narrative"][h]) for h in narrative}})
    tag = run_tag(args.data, args.notes) if args.notes else None
    command = "nice python benchmarks/bench_attributes.py" + (
        " --medspacy-python PY" if args.medspacy_python else "") + (
        f" --baseline-python OLD_VENV/bin/python --baseline-name '{args.baseline_name}'"
        if args.baseline_python else "") + (f" --notes {args.notes}" if args.notes != 500 else "") + (
        f" --cap {args.cap:g}" if args.cap != 20.0 else "")
    write_results(args.out, markdown(len(kit), narrative, systems, tag, command, args.cap))


if __name__ == "__main__":
    main()
