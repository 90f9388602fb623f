"""The spaCy component on real text: exact offsets, how often host tokens are split, and its cost.

For each corpus (the notes of ``chia/dev`` and the first ``--mtsamples`` MTSamples notes), with the default
model (or ``--model``):

- the mentions of :class:`share_ner.Annotator` (``annotator.pipe``) and of ``nlp.add_pipe("share_ner")`` on
  ``spacy.blank("en")`` (``nlp.pipe``), compared note by note: the fragments' ``start_char``/``end_char``
  against the mentions' spans, and ``span._.cui`` against the CUI;
- how many mention boundaries fall inside a token of spaCy's English tokenizer (so that the component splits
  the token), per mention and per note;
- CPU seconds of each (one process, the model loaded beforehand; each run twice, alternating, the faster kept)
  and their ratio.

Prints a table and writes ``benchmarks/results/spacy.md``::

    nice python benchmarks/bench_spacy.py [--data DIR] [--model M] [--mtsamples N] [--out FILE]

Corpora come from ``--data``, else ``$SHARE_NER_DATA``, else ``<repo>/../shared/data``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench_data import add_data_argument, write_results

RESULTS = Path(__file__).resolve().parent / "results" / "spacy.md"


def corpora(data: Path, n_mtsamples: int) -> dict[str, list]:
    import share_ner
    from share_ner.inputs.files import read_note

    out = {"chia/dev": list(share_ner.read_notes(data / "chia" / "dev" / "text").values())}
    notes = sorted((data / "mtsamples" / "raw" / "notes").glob("*.txt"))[:n_mtsamples]
    out[f"mtsamples (first {len(notes)})"] = [read_note(p) for p in notes]
    return out


def measure(name: str, docs: list, annotator, nlp) -> dict:
    texts = [d.text for d in docs]
    # each run twice, alternating, the faster of each kept: neither gains from running second
    t_api = t_spacy = float("inf")
    for _ in range(2):
        t0 = time.process_time()
        expected = list(annotator.pipe(texts))
        t_api = min(t_api, time.process_time() - t0)
        t0 = time.process_time()
        docs_out = list(nlp.pipe(texts))
        t_spacy = min(t_spacy, time.process_time() - t0)
    host = spacy_blank()
    inside = notes_split = 0
    for text, mentions in zip(texts, expected):
        tokens = host.make_doc(text)
        edges = {t.idx for t in tokens} | {t.idx + len(t.text) for t in tokens}
        n = sum(1 for m in mentions for span in m.spans for b in span if b not in edges)
        inside += n
        notes_split += n > 0
    mismatched = 0
    for doc, mentions in zip(docs_out, expected):
        got = [(tuple((f.start_char, f.end_char) for f in s._.fragments), s._.cui) for s in doc.spans["share_ner"]]
        want = [(m.spans, m.cui) for m in sorted(mentions)]
        mismatched += got != want
    n_mentions = sum(map(len, expected))
    return {"corpus": name, "notes": len(texts), "mentions": n_mentions,
            "discontiguous": sum(m.is_discontiguous for ms in expected for m in ms),
            "boundaries inside a spaCy token": inside, "notes with a split": notes_split,
            "notes whose spans differ": mismatched, "api CPU s": t_api, "spaCy CPU s": t_spacy}


def spacy_blank():
    import spacy

    return spacy.blank("en")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(parser)
    parser.add_argument("--model", help="model directory (default: the built-in default model)")
    parser.add_argument("--mtsamples", type=int, default=300, help="MTSamples notes to use (default 300)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    import share_ner

    annotator = share_ner.load(args.model)
    nlp = spacy_blank()
    nlp.add_pipe("share_ner", config={"model": str(annotator.model_dir)})
    nlp("Warm-up: chest pain.")
    annotator("Warm-up: chest pain.")
    rows = [measure(name, docs, annotator, nlp) for name, docs in corpora(args.data, args.mtsamples).items()]

    cols = list(rows[0])
    lines = ["# The spaCy component on real text", "",
             "The machine was shared with other work while this ran; CPU seconds, one process, model loaded first, "
             "the faster of two alternating runs.",
             "", "    nice python benchmarks/bench_spacy.py" + (f" --mtsamples {args.mtsamples}"
                                                             if args.mtsamples != 300 else ""), "",
             "Model: " + ("the built-in default model" if args.model is None else "--model " + args.model), "",
             "| " + " | ".join(cols) + " | spaCy / api |", "|" + "---|" * (len(cols) + 1)]
    for r in rows:
        cells = [f"{v:.1f}" if isinstance(v, float) else str(v) for v in r.values()]
        lines.append("| " + " | ".join(cells) + f" | {r['spaCy CPU s'] / r['api CPU s']:.2f} |")
    lines += ["", "`notes whose spans differ`: notes where the component's fragments (start_char, end_char) and "
              "CUIs are not the annotator's mentions. `boundaries inside a spaCy token`: mention starts and ends "
              "that fall strictly inside a token of `spacy.blank(\"en\")`'s tokenizer; the component splits "
              "those tokens."]
    text = "\n".join(lines) + "\n"
    write_results(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
