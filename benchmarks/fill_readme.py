"""Fill the results section of ``docs/evidence.md`` from the committed results files, so every figure there is a
results file's.

The section lies between ``<!-- results:begin -->`` and ``<!-- results:end -->``; everything else in the page is
left alone. Each block names the results file and the command that wrote it, and copies its figures from the file's
own tables (rows and columns picked by their labels). Run after a benchmark rewrites a results file::

    python benchmarks/fill_readme.py            # rewrite docs/evidence.md
    python benchmarks/fill_readme.py --check    # exit 1 if docs/evidence.md is not what the results files give
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Sequence

from bench_data import REPO, RESULTS_DIR

PAGE = REPO / "docs" / "evidence.md"
TO_REPO = "../"  # links from the page to files of the repository
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
Table = list[list[str]]


def _text(name: str) -> str:
    return (RESULTS_DIR / name).read_text(encoding="utf-8")


def tables(name: str, after: str | None = None) -> list[Table]:
    """The Markdown tables of results file ``name`` (after the heading ``after``, when given), header row first."""
    text = _text(name)
    if after is not None:
        text = text[text.index(after):]
    out: list[Table] = []
    current: Table = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append(cells)
        elif current:
            out.append(current)
            current = []
    return out


def pick(table: Table, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None) -> Table:
    """``table`` cut to the rows whose first cell is in ``rows`` (in that order) and the columns named ``cols``."""
    head, body = table[0], table[1:]
    if rows is not None:
        by_label = {r[0]: r for r in body}
        missing = [r for r in rows if r not in by_label]
        if missing:
            raise SystemExit(f"rows {missing} not found (have {list(by_label)})")
        body = [by_label[r] for r in rows]
    if cols is not None:
        missing = [c for c in cols if c not in head]
        if missing:
            raise SystemExit(f"columns {missing} not found (have {head})")
        idx = [head.index(c) for c in cols]
        head, body = [head[i] for i in idx], [[r[i] for i in idx] for r in body]
    return [head, *body]


def markdown(table: Table) -> str:
    head, body = table[0], table[1:]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in body])


COMMAND_LINES = (
    r"(?:Command:|Produced by|Measured with) `([^`]+)`",  # a sentence naming it
    r"^`((?:nice )?python benchmarks/[^`]+)`",  # a paragraph opening with it
    r"^    ((?:nice )?python benchmarks/\S.*)$",  # an indented code line
)


def command(name: str) -> str:
    """The command a results file says wrote it: the first code span of its ``Command:``, ``Produced by`` or
    ``Measured with`` line, else a paragraph or indented line that is a ``python benchmarks/...`` command."""
    text = _text(name)
    for pattern in COMMAND_LINES:
        m = re.search(pattern, text, re.MULTILINE)
        if m:
            return m.group(1).strip()
    raise SystemExit(f"{name}: no line naming the command that wrote it")


def block(title: str, name: str, body: str, note: str = "") -> str:
    link = f"[benchmarks/results/{name}]({TO_REPO}benchmarks/results/{name})"
    return f"**{title}** — `{command(name)}` → {link}{': ' + note if note else ''}\n\n{body}\n"


def tagger() -> str:
    variants = ("full", "lbfgs", "scheme_bio", "plain_crf", "dictionary")
    rows = []
    for corpus in ("chia", "ncbi_disease", "bc5cdr"):
        table = next(t for t in tables("tagger.md", f"## {corpus}") if t[0][0] == "variant" and "strict F1" in t[0])
        cut = pick(table, variants, ["variant", "strict F1", "relaxed F1", "disc. R"])
        cells = {r[0]: f"{r[1]} / {r[2]}".replace("**", "") for r in cut[1:]}
        rows.append([corpus, *(cells[v] for v in variants), cut[1][3]])
    head = ["corpus", "full", "trained with L-BFGS", "`--scheme bio`", "plain CRF", "dictionary",
            "discontiguous strict recall (full)"]
    return block("Task 1a, tagger trained on each corpus's train split, scored on its test split", "tagger.md",
                 markdown([head, *rows]), "strict / relaxed F1; the plain CRF is contiguous BIO with tutorial "
                 "word features, the dictionary a longest match of training mention strings")


def normalizer() -> str:
    main = pick(tables("normalizer.md")[0], None,
                ["corpus", "setup", "share-ner", "scispaCy 0.6.2 (quoted)", "target", "ceiling (id known)",
                 "mentions/s batched (wall / CPU)"])
    dense = pick(tables("normalizer.md")[1], None, ["corpus", "+ `dense=True`", "with `dense` (CPU)"])
    return block("Task 1b, normalization of gold spans", "normalizer.md", markdown(main) + "\n\n" + markdown(dense),
                 "accuracy; the scispaCy figures are quoted, not re-measured; `dense` is the optional "
                 "sentence-embedding similarity (`pip install 'share-ner[dense]'`, then `--dense`)")


def scale() -> str:
    rows = ["lexicon strings", "compile, cold cache (s)", "load lexicon + index from cache (s)",
            "clinical notes, 16 notes at a time (`share-ner tag`)"]
    return block("Lexicons of SNOMED CT's size", "scale.md", markdown(pick(tables("scale.md")[0], rows)),
                 "HPO, plus ICD-10-CM titles, plus composed names; mentions per CPU second")


def default_model() -> str:
    table = pick(tables("default_model.md")[0], None, ["split", "strict F1", "relaxed F1", "acc. strict"])
    return block("The embedded default model on corpora it never saw", "default_model.md",
                 markdown([[c.replace("**", "") for c in r] for r in table]))


def throughput() -> str:
    rows = ["tokens/s per CPU second (load-independent)", "tokens/s, wall, after start-up",
            "start-up: model load + warm-up note (s)", "peak memory per worker (MB)", "mentions found"]
    default, large = (pick(tables(n)[0], rows) for n in ("throughput.md", "throughput_large_lexicon.md"))
    head = ["measure", "default model, one process", "`--jobs 2`", "250,000-string lexicon, one process",
            "`--jobs 2`"]
    body = [[d[0], d[1], d[2], g[1], g[2]] for d, g in zip(default[1:], large[1:])]
    note = ("the 4,966 MTSamples notes end to end; the second pair of columns is "
            f"[benchmarks/results/throughput_large_lexicon.md]({TO_REPO}benchmarks/results/throughput_large_lexicon.md) "
            f"(`{command('throughput_large_lexicon.md')}`)")
    return block("Throughput of `share-ner tag`", "throughput.md", markdown([head, *body]), note)


def others() -> str:
    ceiling = pick(tables("ceiling.md")[0], None, ["split", "mentions", "disc.", "biohd ceiling", "biohd disc."])
    corpora = pick(tables("corpora.md")[0], None, ["split", "gold", "self = 1", "round trip"])
    features = pick(tables("features.md")[0], ["all groups"])
    lexicon = tables("lexicon.md")[0]
    return "\n".join([
        block("Round-trip ceiling of the tag encoding", "ceiling.md", markdown(ceiling)),
        block("The scorer on every corpus", "corpora.md", markdown(corpora),
              "gold scored against itself gives 1 everywhere; BRAT and JSON Lines copies read back the same"),
        block("Feature extraction speed", "features.md", markdown(features)),
        block("The UMLS lexicon builder on a synthetic full-size MRCONSO", "lexicon.md", markdown(lexicon)),
    ])


def attributes() -> str:
    def systems(table: Table) -> Table:  # share-ner and medspaCy; a baseline checkout's row stays in the file
        return [r for r in table if not r[0].startswith("share-ner, ")]

    main = systems(pick(tables("attributes.md")[0], None,
                        ["system", "negation accuracy", "negated P / R / F1", "historical F1", "hypothetical F1",
                         "spans per CPU s"]))
    check = systems(tables("attributes.md", "## Narrative sentences, `check` half")[0])
    tag = tables("attributes.md", "## End-to-end")[0]
    return block("Disorder attributes (ShARe/CLEF 2014 Task 2a), NegEx/ConText test kit dev half, gold spans",
                 "attributes.md", markdown(main) + "\n\n" + markdown(check) + "\n\n" + markdown(tag),
                 "PY is a venv of its own with `pip install '.[peers]'` (medspaCy pins spaCy < 3.8); the second "
                 "table is hand-annotated MTSamples narrative sentences (the half the rules were not written on), "
                 "the third `share-ner tag` with the default model on 500 MTSamples notes, with and without "
                 "attributes ([docs/attributes.md](attributes.md))")


def subject() -> str:
    table = [r for r in tables("subject.md")[0] if r[0] in ("rules", "share-ner ConText rules") or
             r[0].startswith("medspaCy")]
    return block("Subject (whose disorder), hand-labelled MTSamples sentences that name a relative", "subject.md",
                 markdown(pick(table, None, ["rules", "sample", "mentions", "not the patient's", "accuracy"])),
                 "`check`: narrative sentences drawn after the rules were changed; `holdout`: drawn after they "
                 "were final; FILE the former rules file, PY a venv of its own with `pip install '.[peers]'` "
                 "([docs/attributes.md](attributes.md))")


def false_positives() -> str:
    review = pick(tables("mtsamples_review.md")[0], None,
                  ["model", "mentions", "not a disorder (false positives)", "false positives per 100 notes"])
    titles = tables("section_titles.md")[0]
    return "\n".join([
        block("False positives of the default model on 50 MTSamples notes reviewed by hand", "mtsamples_review.md",
              markdown([[c.replace("**", "") for c in r] for r in review]),
              "each mention looked up in a hand review following ShARe/CLEF 2013's definition of a disorder"),
        block("Section titles dropped from the default model's output, every MTSamples note", "section_titles.md",
              markdown(titles), "a mention that is exactly the title of a header naming a standard note section"),
    ])


def rules_review() -> str:
    return block("A change of the ConText rules on every MTSamples note, judged by hand", "rules_review.md",
                 markdown(tables("rules_review.md")[0]),
                 "each attribute value the change made different, looked up in a hand review; in brackets the "
                 "distinct sentences (MTSamples repeats some notes)")


def default_real() -> str:
    recall = tables("default_real.md")[0]
    corpora = pick(tables("default_real.md", "## Test corpora")[0], None,
                   ["split", "strict F1", "relaxed F1", "upper-cased strict F1", "strict drop",
                    "Task 1b acc. strict"])
    return block("The embedded default model on real clinical sentences and on upper-cased corpora",
                 "default_real.md",
                 markdown(recall) + "\n\n" + markdown([[c.replace("**", "") for c in r] for r in corpora]),
                 "recall of the annotated condition in negex_kit/dev sentences; the test corpora as published "
                 "and upper-cased (offsets unchanged); Task 1b end to end on Mantra GSC, the one corpus with CUIs")


def fault_injection() -> str:
    table = tables("fault_injection.md")[0]
    head, body = table[0], table[1:]
    # counted from the row's end: a case's description may hold a '|' ("ROW_IDs with '||'")
    verdict, leaked = head.index("verdict") - len(head), head.index("text leaked") - len(head)
    kept = sum(1 for r in body if r[verdict] == "nothing lost")
    text = sum(int(r[leaked]) for r in body)
    line = (f"{len(body)} fault cases (workers killed, a note that kills every worker, bad and duplicate rows, "
            f"disk full, SIGTERM and SIGKILL then resume, a 5 MB note, ...): {kept} of {len(body)} "
            f"'nothing lost' (every good note's output equal to a clean run's, every bad record rejected by "
            f"name); note text leaked into rejects, stderr, summaries or errors: {text}")
    return block("`share-ner tag` and `train` under injected faults", "fault_injection.md", line)


def spark() -> str:
    runs = pick(tables("spark.md")[0], None,
                ["run", "job / run wall (s)", "notes/s, wall", "CPU s of the job / run, all processes",
                 "notes per CPU s"])
    targets = pick(tables("spark.md")[1], None, ["target", "measured", "met"])
    return block("`share-ner spark` against `share-ner tag`", "spark.md", markdown(runs) + "\n\n" + markdown(targets),
                 "MTSamples notes, default model")


def spark_scale() -> str:
    targets = tables("spark_scale.md")[1]
    split = tables("spark_scale.md")[2]
    return block("`share-ner spark` as the job grows", "spark_scale.md",
                 markdown(targets) + "\n\n" + markdown(split),
                 "the same runs on the MTSamples notes once and repeated under new ids; Spark's extra time "
                 "against `--jobs 2` as a fixed part plus a part per note")


def spacy() -> str:
    table = pick(tables("spacy.md")[0], None,
                 ["corpus", "notes", "mentions", "boundaries inside a spaCy token", "notes whose spans differ",
                  "spaCy / api"])
    return block("The spaCy component on real text", "spacy.md", markdown(table),
                 "default model; `spaCy / api` is the CPU time of `nlp.pipe` over that of `annotator.pipe` "
                 "([docs/spacy.md](spacy.md))")


def report() -> str:
    table = pick(tables("report.md")[0], None,
                 ["run", "notes", "systems", "page (bytes)", "under 5 MB", "build CPU s", "rendered"])
    return block("The HTML report", "report.md", markdown(table),
                 "chia/test, two systems; the second row repeats its notes 27 times under new ids")


def speed_scale() -> str:
    table = tables("speed_scale.md")[0]
    return block("The normalizer at SNOMED CT's size against the code of issue 19's filing", "speed_scale.md",
                 markdown(table), "mentions per CPU second, 16 notes at a time; old and new in one run")


def memory() -> str:
    steps, run = tables("memory.md")[:2]
    return block("Memory of `share-ner tag`", "memory.md", markdown(steps) + "\n\n" + markdown(run),
                 "default model; MB")


def end_to_end() -> str:
    table = tables("end_to_end.md")[0]
    baseline = table[0][1]
    rows = ["one process: CPU s", f"one process, side by side with the {baseline}: CPU s", "one process: wall s",
            "`--jobs 2`: wall s", "start-up: CPU s", "peak memory, one process (MB)"]
    # the side-by-side median ratios with their confidence intervals, as the results file words them
    intervals = [line for line in _text("end_to_end.md").splitlines() if line.startswith("- this code") and
                 "median ratio" in line]
    return block(f"`share-ner tag` end to end against the {baseline}, on Python 3.11 and 3.13", "end_to_end.md",
                 "\n".join([markdown(pick(table, rows)), *([""] + intervals if intervals else [])]),
                 "all 4,966 MTSamples notes, each code with its own default model; ratios old time / new time; side "
                 "by side: both processes at once, each on a core of its own, the median of the rounds")


def section() -> str:
    parts = [tagger(), normalizer(), scale(), speed_scale(), default_model(), default_real(), false_positives(), throughput(), end_to_end(),
             memory(), attributes(), subject(), rules_review(), fault_injection(), spark(), spark_scale(), spacy(), report(), others()]
    return "\n".join([BEGIN, "<!-- filled by `python benchmarks/fill_readme.py`; edit the script, not this -->", "",
                      *parts, END])


def filled(page: str) -> str:
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{PAGE}: no {BEGIN} ... {END} markers")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + section() + tail


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that docs/evidence.md is up to date")
    args = ap.parse_args(argv)
    old = PAGE.read_text(encoding="utf-8")
    new = filled(old)
    if args.check:
        if new != old:
            print(f"{PAGE.relative_to(REPO)} is not what the results files give: run python "
                  "benchmarks/fill_readme.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(new, encoding="utf-8")
    print(f"wrote the results section of {PAGE.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
