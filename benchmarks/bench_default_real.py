"""The embedded default model on real clinical report sentences, in capitals, and end to end.

Run from the repository (politely, on a shared machine)::

    nice python benchmarks/bench_default_real.py                 # -> benchmarks/results/default_real.md
    nice python benchmarks/bench_default_real.py --dev           # dev splits only (for choosing settings)
    nice python benchmarks/bench_default_real.py --model DIR     # any trained model instead of the default
    nice python benchmarks/bench_default_real.py --errors        # negex_kit/dev and chia/dev misses by cause (dev only)
    nice python benchmarks/bench_default_real.py --dev --evidence off   # the tagger's evidence checks off (or on)

What it measures (issue 17):

* ``negex_kit/dev``: recall of the annotated condition (one per sentence, so
  recall only) leaving out normal findings (a condition containing one of
  :data:`NORMAL_WORDS`), by overlap and exactly, overall and in the sentences
  written wholly in capitals;
* each test corpus as published and upper-cased (every character mapped to its
  upper case where that keeps the length, so gold offsets do not move):
  strict and relaxed F1;
* Mantra GSC test end to end (tagging + normalization): strict CUI accuracy
  (Task 1b: correct CUIs / gold mentions);
* tagging + normalization speed in characters per CPU second.

The default model is the one ``share-ner tag`` uses (the packaged model); ``--synth`` variants are built on the
synthetic data alone into a benchmark cache under the system temp directory. Corpora come from ``--data``,
else ``$SHARE_NER_DATA``, else ``<repo>/../shared/data``.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench_data import add_data_argument

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "default_real.md"
CACHE = Path(tempfile.gettempdir()) / "share-ner-bench-default-real"

TEST_SPLITS = ("chia/test", "ncbi_disease/test", "bc5cdr/test", "mantra_gsc/test")
DEV_SPLITS = ("chia/dev", "ncbi_disease/dev", "bc5cdr/dev")
NEGEX = "negex_kit/dev"
# Issue 17's definition of a normal finding: the annotated condition contains one of these words.
NORMAL_WORDS = frozenset(
    "normal intact clear patent supple unremarkable equal reactive pink moist soft regular benign nontender "
    "non-tender symmetric nonfocal good stable".split()
)
_WORD = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")




def load_split(data: Path, split: str) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    from share_ner.formats.share import read_pipe_dir
    from share_ner.inputs.files import read_notes

    docs = read_notes(data / split / "text")
    gold = read_pipe_dir(data / split / "gold")
    return docs, {doc_id: gold.get(doc_id, []) for doc_id in docs}


def is_normal_finding(condition: str) -> bool:
    words = {w.lower() for w in _WORD.findall(condition)}
    return bool(words & NORMAL_WORDS)


def is_capitals(text: str) -> bool:
    """A sentence written wholly in capitals: it has letters and none is lower-case."""
    return any(c.isalpha() for c in text) and not any(c.islower() for c in text)


def _cpu() -> float:
    return time.process_time()


def run(pipeline: Any, docs: Mapping[str, Any], normalize: bool) -> tuple[dict[str, list[Any]], float]:
    started = _cpu()
    pred = {doc_id: (pipeline.annotate(doc) if normalize else pipeline.tag(doc)) for doc_id, doc in docs.items()}
    return pred, _cpu() - started


def sentence_case(text: str) -> str:
    """``text`` lower-cased with its first letter in capitals (offsets unchanged where lower-casing keeps them)."""
    lower = text.lower()
    if len(lower) != len(text):
        return text
    i = next((k for k, c in enumerate(lower) if c.isalpha()), 0)
    return lower[:i] + lower[i : i + 1].upper() + lower[i + 1 :]


def recased(docs: Mapping[str, Any]) -> dict[str, Any]:
    """Each sentence in the other case: the ones in capitals in sentence case, the others upper-cased, so the
    same sentences are scored in both cases (offsets unchanged)."""
    from share_ner.default_model.synthetic import same_length_upper
    from share_ner.document import Document

    return {k: Document(d.id, sentence_case(d.text) if is_capitals(d.text) else same_length_upper(d.text))
            for k, d in docs.items()}


def negex_recall(pipeline: Any, data: Path) -> dict[str, Any]:
    """Recall of negex_kit/dev's annotated conditions by group: ``normal``, ``mixed``, ``capitals`` (and
    ``non-normal``, the last two together), and ``mixed-upper`` and ``capitals-cased``: the same sentences
    tagged in the other case (:func:`recased`)."""
    docs, gold = load_split(data, NEGEX)
    pred, cpu = run(pipeline, docs, normalize=False)
    other, _ = run(pipeline, recased(docs), normalize=False)
    groups: dict[str, list[int]] = {}  # group -> [n, overlap, strict]
    for doc_id, doc in docs.items():
        for g in gold[doc_id]:
            condition = " ".join(doc.text[s:e] for s, e in g.spans)
            if is_normal_finding(condition):
                keys = [("normal", pred)]
            elif is_capitals(doc.text):
                keys = [("capitals", pred), ("capitals-cased", other)]
            else:
                keys = [("mixed", pred), ("mixed-upper", other)]
            for key, predicted in keys:
                found = predicted.get(doc_id, [])
                overlap = any(g.overlaps(p) for p in found)
                strict = any(p.spans == g.spans for p in found)
                row = groups.setdefault(key, [0, 0, 0])
                row[0] += 1
                row[1] += overlap
                row[2] += strict
    non = [sum(x) for x in zip(groups.get("mixed", [0, 0, 0]), groups.get("capitals", [0, 0, 0]))]
    groups["non-normal"] = non
    return {"groups": groups, "cpu": cpu, "chars": sum(len(d.text) for d in docs.values())}


# Word lists of the error groups (negex_kit/dev misses, --errors): written for this benchmark, not term lists.
_SIZE_WORDS = frozenset("trace mild moderate severe small tiny trivial borderline some minimal minor large extensive "
                        "dense marked advanced increased new chronic acute persistent nonsustained to diffuse mildly "
                        "moderately severely extremely somewhat".split())
_EXAM_WORDS = frozenset("afebrile alert oriented awake rubs gallops eomi perrla normocephalic atraumatic anicteric "
                        "cooperative lucid pleasant comfortably bowel sounds pulses reflexes motor strength ambulating "
                        "voiding conjugate sinus rhythm logical take care".split())
_USE_WORDS = frozenset("tobacco alcohol drug drugs smoker drinks cocaine use".split())
_PROCEDURE_WORDS = frozenset("cabg cholecystectomy transplant hysterectomy salpingooophorectomy resection "
                             "hemiarthroplasty surgeries allergies graft bolt penicillin".split())
_PREDICATE = re.compile(r" (?:is|are|was|were) | appear")
ERROR_GROUPS = (
    ("exam", "not found: exam or status findings, mostly normal (afebrile, alert, rubs, EOMI)"),
    ("use", "not found: substance use, procedures, allergies, devices (not ShARe disorders)"),
    ("phrase", 'not found: predicate or long descriptive phrases ("left atrial size is mildly enlarged")'),
    ("unlisted", "not found: disorder names in no lexicon or list"),
    ("listed", "not found: names in HPO or the project's lists"),
    ("severity", 'found, span short of a severity, size or course word ("trace", "mild"; ShARe leaves these out)'),
    ("before", 'found, span short of a site, side or type word before the head ("systolic heart failure")'),
    ("after", 'found, span short of words after the head or of a predicate ("colitis ... in the sigmoid colon")'),
    ("other", "found, other boundary (coordinations, shifted, longer)"),
)


def _listed_names() -> frozenset[str]:
    from share_ner.default_model import terms as synthetic
    from share_ner.lexicons import default_lexicon

    hpo = synthetic.hpo_terms()
    project = synthetic.project_terms()
    lists = [*project, *synthetic.finding_terms(), *synthetic.abbreviation_terms(hpo, project)]
    names = [e.name for e in default_lexicon().entries] + [t.name for t in (*hpo, *lists)]
    return frozenset(_key(n) for n in names)


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def error_group(condition: str, predicted: str | None, listed: frozenset[str]) -> str:
    """The cause group (:data:`ERROR_GROUPS`) of a condition not matched exactly; ``predicted`` is the text of
    the first predicted mention overlapping it, None when none does."""
    g = condition.lower()
    gw = re.findall(r"[a-z0-9+/-]+", g)
    if predicted is not None:
        pw = re.findall(r"[a-z0-9+/-]+", predicted.lower())
        if pw and len(gw) > len(pw) and gw[-len(pw):] == pw:
            return "severity" if all(w in _SIZE_WORDS for w in gw[:-len(pw)]) else (
                "after" if _PREDICATE.search(g) else "before")
        if _PREDICATE.search(g) or (pw and len(gw) > len(pw) and gw[:len(pw)] == pw):
            return "after"
        return "other"
    words = set(gw)
    if words & _EXAM_WORDS:
        return "exam"
    if words & (_USE_WORDS | _PROCEDURE_WORDS):
        return "use"
    if _PREDICATE.search(g) or len(gw) > 5:
        return "phrase"
    n = _key(condition)
    return "listed" if {n, n.rstrip("s"), n + "s"} & listed else "unlisted"


def negex_errors(pipeline: Any, data: Path) -> dict[str, int]:
    """negex_kit/dev conditions (not normal findings) not matched exactly, counted by :func:`error_group`."""
    docs, gold = load_split(data, NEGEX)
    listed = _listed_names()
    counts = dict.fromkeys((k for k, _ in ERROR_GROUPS), 0)
    for doc_id, doc in docs.items():
        found = pipeline.tag(doc)
        for g in gold[doc_id]:
            condition = " ".join(doc.text[s:e] for s, e in g.spans)
            if is_normal_finding(condition) or any(p.spans == g.spans for p in found):
                continue
            over = [p for p in found if g.overlaps(p)]
            predicted = " ".join(doc.text[s:e] for s, e in over[0].spans) if over else None
            counts[error_group(condition, predicted, listed)] += 1
    return counts


# Conditions of eligibility that Chia annotates and ShARe does not take for disorders (pregnancy is an organism
# function in UMLS, not in the disorder semantic group): a missed gold string containing one of these.
CHIA_SCHEME_WORDS = ("pregnan", "contraindication", "contra-indication", "lactat", "nursing", "breast-feeding",
                     "breastfeeding", "healthy", "childbearing", "child-bearing", "menopaus")


def chia_scheme_misses(pipeline: Any, data: Path, split: str = "chia/dev") -> dict[str, float]:
    """Gold mentions of ``split`` that no prediction overlaps, those of them that are :data:`CHIA_SCHEME_WORDS`
    conditions, and the strict F1 as scored and as it would be were those found exactly."""
    docs, gold = load_split(data, split)
    n_gold = n_pred = exact = missed = scheme = 0
    for doc_id, doc in docs.items():
        found = pipeline.tag(doc)
        n_pred += len(found)
        spans = {p.spans for p in found}
        for g in gold[doc_id]:
            n_gold += 1
            if g.spans in spans:
                exact += 1
            elif not any(g.overlaps(p) for p in found):
                missed += 1
                text = " ".join(doc.text[s:e] for s, e in g.spans).lower()
                scheme += any(w in text for w in CHIA_SCHEME_WORDS)

    def f1(tp: int, pred: int) -> float:
        return 2 * tp / max(pred + n_gold, 1)

    return {"gold": n_gold, "pred": n_pred, "exact": exact, "missed": missed, "scheme": scheme,
            "f1": f1(exact, n_pred), "f1_found": f1(exact + scheme, n_pred + scheme)}


def normalization_bound(pipeline: Any, gold: Mapping[str, list[Any]], pred: Mapping[str, list[Any]]) -> dict[str, int]:
    """Task 1b's end-to-end counts: gold mentions, those found exactly, those of them whose CUI the normalizer's
    lexicon or training gazetteer holds (or that are CUI-less: what any normalizer of these names could get
    right), and those normalized right."""
    from share_ner.document import CUI_LESS

    known = pipeline.normalizer.lexicon.cuis | pipeline.normalizer.gazetteer.cuis | {CUI_LESS}
    counts = {"gold": 0, "found": 0, "reachable": 0, "right": 0}
    for doc_id, mentions in gold.items():
        by_spans = {p.spans: p for p in pred.get(doc_id, ())}
        for g in mentions:
            counts["gold"] += 1
            p = by_spans.get(g.spans)
            if p is not None:
                counts["found"] += 1
                counts["reachable"] += g.cui in known
                counts["right"] += p.cui == g.cui
    return counts


def corpus_scores(pipeline: Any, data: Path, split: str, normalize: bool) -> dict[str, Any]:
    from share_ner.default_model.synthetic import same_length_upper
    from share_ner.document import Document
    from share_ner.eval.scoring import score

    docs, gold = load_split(data, split)
    pred, cpu = run(pipeline, docs, normalize)
    upper_docs = {k: Document(d.id, same_length_upper(d.text)) for k, d in docs.items()}
    upper_pred, _ = run(pipeline, upper_docs, normalize=False)
    return {"split": split, "mixed": score(gold, pred), "upper": score(gold, upper_pred), "cpu": cpu,
            "chars": sum(len(d.text) for d in docs.values()), "normalized": normalize,
            "bound": normalization_bound(pipeline, gold, pred) if normalize and pipeline.normalizer else None}


def bound_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One sentence per normalized split: how far Task 1b accuracy can go with this tagging and lexicon."""
    lines = []
    for row in rows:
        b = row.get("bound")
        if b:
            lines.append(f"{row['split']}, Task 1b: of {b['gold']} gold mentions {b['found']} are found exactly, "
                         f"{b['reachable']} of those have a CUI the normalizer's lexicon or training gazetteer holds "
                         f"(or are CUI-less), and {b['right']} are normalized right: strict accuracy "
                         f"{b['right'] / b['gold']:.3f}, at most {b['reachable'] / b['gold']:.3f} with this tagging "
                         "and lexicon.")
    return lines


def throughput(pipelines: Mapping[str, Any], data: Path, n_notes: int, repeats: int = 2) -> dict[str, float]:
    """Characters per CPU second of tagging + normalization on the first ``n_notes`` MTSamples notes, each
    model timed ``repeats`` times in turn (the best time kept), so the models are compared within one run."""
    from share_ner.inputs.files import read_notes

    notes = read_notes(data / "mtsamples" / "raw" / "notes")
    docs = [notes[k] for k in sorted(notes)[:n_notes]]
    chars = sum(len(d.text) for d in docs)
    best = {name: float("inf") for name in pipelines}
    for _ in range(repeats):
        for name, pipeline in pipelines.items():
            started = _cpu()
            for doc in docs:
                pipeline.annotate(doc)
            best[name] = min(best[name], _cpu() - started)
    return {name: chars / max(t, 1e-9) for name, t in best.items()}


def build_default(cache: Path, changes: Sequence[str] = ()) -> Path:
    """The default model (the packaged one), or with ``KEY=VALUE`` changes to its generator settings one built
    (or reused) in ``cache``."""
    import json
    from dataclasses import replace

    from share_ner.default_model.build import DEFAULT_SYNTH, default_model_dir

    synth = replace(DEFAULT_SYNTH, **{k: json.loads(v) for k, v in (c.split("=", 1) for c in changes)})
    return default_model_dir(synth=synth, cache=cache)


def r(x: float) -> str:
    return f"{x:.3f}"


def negex_table(res: dict[str, Any]) -> list[str]:
    g = res["groups"]
    lines = ["| conditions | n | overlap recall | strict recall |", "|---|---|---|---|"]
    for key, label in (("non-normal", "not normal findings (target: overlap 0.85, strict 0.60)"),
                       ("mixed", "... in mixed-case sentences"),
                       ("mixed-upper", "... the same mixed-case sentences, upper-cased"),
                       ("capitals", "... in sentences wholly in capitals"),
                       ("capitals-cased", "... the same sentences in capitals, in sentence case"),
                       ("normal", "normal findings (not ShARe disorders; shown for reference)")):
        n, o, s = g.get(key, [0, 0, 0])
        lines.append(f"| {label} | {n} | {r(o / n if n else 0)} | {r(s / n if n else 0)} |")
    return lines


def corpus_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    lines = ["| split | strict F1 | relaxed F1 | upper-cased strict F1 | upper-cased relaxed F1 | strict drop "
             "| Task 1b acc. strict | chars per CPU s |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        m, u = row["mixed"], row["upper"]
        acc = r(m.accuracy_strict) if row["normalized"] else "-"
        lines.append(f"| {row['split']} | **{r(m.strict.f1)}** | {r(m.relaxed.f1)} | {r(u.strict.f1)} | "
                     f"{r(u.relaxed.f1)} | {r(m.strict.f1 - u.strict.f1)} | {acc} | "
                     f"{row['chars'] / max(row['cpu'], 1e-9):,.0f} |")
    return lines


def kept_sections(path: Path, lines: Sequence[str]) -> str:
    """The ``## `` sections of the results file at ``path`` that ``lines`` (this run's) do not write again: the
    error analysis and the choice of settings, written from the ``--errors`` and ``--dev`` runs, are kept."""
    if not path.is_file():
        return ""
    written = {line for line in lines if line.startswith("## ")}
    sections = re.split(r"(?m)^(?=## )", path.read_text(encoding="utf-8"))[1:]
    return "".join(sec for sec in sections if sec.splitlines()[0] not in written).rstrip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(parser)
    parser.add_argument("--model", type=Path, help="a trained model directory instead of the default model")
    parser.add_argument("--synth", nargs="*", default=[], metavar="KEY=VALUE",
                        help="build the default model with these generator settings changed (for --dev)")
    parser.add_argument("--dev", action="store_true", help="dev splits instead of test splits (choosing settings)")
    parser.add_argument("--cache", type=Path, default=CACHE, help="where the default model is built")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (test run only)")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="an earlier default model directory to compare end-to-end throughput with")
    parser.add_argument("--throughput-notes", type=int, default=300, metavar="N",
                        help="MTSamples notes for the throughput comparison (default 300)")
    parser.add_argument("--no-write", dest="write", action="store_false", help="print only")
    parser.add_argument("--evidence", choices=("on", "off"),
                        help="the tagger's evidence checks (share_ner.tagging.evidence) on or off, whatever the "
                             "model's settings say (default: the model's)")
    parser.add_argument("--errors", action="store_true",
                        help="print negex_kit/dev's conditions not matched exactly, by cause, and chia/dev's "
                             "misses that are not ShARe disorders, and stop")
    args = parser.parse_args(argv)
    data = args.data
    if not (data / NEGEX / "gold").is_dir():
        print(f"{data / NEGEX}: not found: nothing to benchmark", file=sys.stderr)
        return 2
    from share_ner.pipeline import Pipeline

    if args.model:
        model = args.model
    else:
        model = build_default(args.cache, args.synth)
    pipeline = Pipeline.load(model)
    if args.evidence is not None:
        from share_ner.lexicons.abbreviations import other_senses
        from share_ner.tagging.evidence import Evidence

        tagger = pipeline.tagger
        tagger.evidence = Evidence(tagger.resources, other_senses()) if args.evidence == "on" else None
    if args.errors:
        counts = negex_errors(pipeline, data)
        print("| not matched exactly, by cause | conditions |\n|---|---|")
        for key, label in ERROR_GROUPS:
            print(f"| {label} | {counts[key]} |")
        print(f"| all | {sum(counts.values())} |")
        if (data / "chia" / "dev" / "gold").is_dir():
            c = chia_scheme_misses(pipeline, data)
            print(f"\nchia/dev: {c['gold']} gold mentions, {c['pred']} predicted, {c['exact']} exact (strict F1 "
                  f"{c['f1']:.3f}); {c['missed']} overlap no prediction, {c['scheme']} of them Chia-scheme conditions "
                  f"({', '.join(CHIA_SCHEME_WORDS)}); found exactly, strict F1 would be {c['f1_found']:.3f}")
        return 0
    print("negex_kit/dev ...", file=sys.stderr, flush=True)
    negex = negex_recall(pipeline, data)
    lines = negex_table(negex)
    print("\n".join(lines), flush=True)
    rows = []
    for split in DEV_SPLITS if args.dev else TEST_SPLITS:
        if not (data / split / "gold").is_dir():
            print(f"skipping {split}: not found", file=sys.stderr)
            continue
        print(f"{split} ...", file=sys.stderr, flush=True)
        rows.append(corpus_scores(pipeline, data, split, normalize=split.startswith("mantra_gsc")))
        print(corpus_table(rows)[-1], flush=True)
    ctable = corpus_table(rows) + ["", *bound_lines(rows)]
    print("\n".join(ctable))
    speed: list[str] = []
    if args.against is not None:
        print("throughput ...", file=sys.stderr, flush=True)
        rates = throughput({"earlier": Pipeline.load(args.against), "this": pipeline}, data, args.throughput_notes)
        speed = ["## End-to-end throughput", "",
                 f"Tagging + normalization of the first {args.throughput_notes} MTSamples notes, each model timed twice in "
                 "turn in this run (best kept), with this code: `--against DIR` names the earlier model.", "",
                 "| model | chars per CPU s | ratio |", "|---|---|---|",
                 f"| earlier default | {rates['earlier']:,.0f} | 1.00 |",
                 f"| this default | {rates['this']:,.0f} | {rates['this'] / rates['earlier']:.2f} |", ""]
        print("\n".join(speed))
    if args.dev or not args.write:
        return 0
    out = [
        "# The default model on real clinical sentences, in capitals and end to end",
        "",
        "Produced by `nice python benchmarks/bench_default_real.py` (from the repository root)"
        + (f" with `--model {model.name}`." if args.model else
           "; the default model `share-ner tag` uses (the packaged model)."),
        "Measured on a shared, loaded machine: speeds are CPU-time figures, comparable only within one run.",
        "",
        "## negex_kit/dev: recall of the annotated condition",
        "",
        "One condition per sentence is annotated, so this is recall only. A normal finding is a condition",
        "containing one of: " + ", ".join(sorted(NORMAL_WORDS)) + ".",
        "",
        *lines,
        "",
        "## Test corpora as published and upper-cased (offsets unchanged)",
        "",
        "Task 1b accuracy is end to end (tagged and normalized mentions against gold): Mantra GSC only,",
        "the one corpus with UMLS CUIs. Speed: tagging (and for Mantra normalization) of the mixed-case notes.",
        "",
        *ctable,
        "",
        *speed,
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    kept = kept_sections(args.out, out)
    args.out.write_text("\n".join(out).rstrip("\n") + ("\n\n" + kept if kept else "\n"), encoding="utf-8")
    print(f"wrote {args.out.relative_to(REPO) if args.out.is_relative_to(REPO) else args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
