"""Size and cost of ``share-ner report``: chia/test, and a 10,000-note run.

    nice python benchmarks/bench_report.py --pred PRED [--vs PRED2]   # -> benchmarks/results/report.md

``--pred`` (and ``--vs``): predictions for chia/test (``share-ner tag chia/test/text --out PRED``); without
``--pred`` the embedded default model tags chia/test here. The 10,000-note run repeats chia/test's notes under new
ids (27 copies, 10,260 notes) with the same predictions, so its text and mentions are real. Each page is built
through the library (:func:`share_ner.eval.html_report.report_data`, ``render_html``); its size is measured, and
when Chromium is installed each page is opened headless on the notes view and on one note (``--dump-dom``) and the
browser's CPU time is recorded. Corpora come from ``--data``, ``$SHARE_NER_DATA`` or ``<repo>/../shared/data``.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from bench_data import REPO, add_data_argument, write_results

RESULTS = REPO / "benchmarks" / "results" / "report.md"
COPIES = 27
LIMIT_BYTES = 5_000_000


def _default_predictions(docs: Mapping[str, Any]) -> dict[str, list]:
    from share_ner.default_model.build import default_model_dir
    from share_ner.pipeline import Pipeline

    pipeline = Pipeline.load(default_model_dir())
    return {d: pipeline.annotate(doc) for d, doc in docs.items()}


def _copies(mapping: Mapping[str, Any], n: int, rename: Any) -> dict[str, Any]:
    return {f"{k}~{c:02d}": rename(v, f"{k}~{c:02d}") for c in range(n) for k, v in mapping.items()}


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _browser(page: Path, fragment: str, marker: str) -> tuple[float, bool]:
    """CPU seconds of headless Chromium dumping the page at ``fragment``, and whether ``marker`` was rendered."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as profile:
        before = _cpu_children()
        done = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--virtual-time-budget=5000", "--dump-dom", f"{page.as_uri()}#{fragment}"],
            capture_output=True, text=True, timeout=600)
        return _cpu_children() - before, marker in done.stdout


def measure(name: str, gold: Mapping[str, Any], systems: Mapping[str, Any], texts: Mapping[str, str],
            groups: Mapping[str, str], out_dir: Path) -> dict[str, Any]:
    from share_ner.eval.html_report import render_html, report_data

    t0 = time.process_time()
    page = render_html(report_data(gold, systems, texts, groups, n_shuffles=10_000))
    build_cpu = time.process_time() - t0
    path = out_dir / f"{name}.html"
    path.write_text(page, encoding="utf-8")
    row: dict[str, Any] = {"name": name, "notes": len(gold), "systems": len(systems),
                           "bytes": len(page.encode("utf-8")), "build_cpu": build_cpu,
                           "text_bytes": sum(len(t.encode("utf-8")) for t in texts.values())}
    if shutil.which("chromium") or shutil.which("chromium-browser"):
        first = sorted(gold)[0]
        row["notes_cpu"], ok1 = _browser(path, "notes?errors=1", 'id="note-count"')
        row["note_cpu"], ok2 = _browser(path, f"note?id={first}", 'id="note-title"')
        row["rendered"] = ok1 and ok2
    return row


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--pred", help="predictions for chia/test (default: tag it with the embedded default model)")
    ap.add_argument("--vs", help="a second system's predictions for chia/test")
    ap.add_argument("--label", default=None, help="what the systems are, for the results file")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    from share_ner.document import Mention
    from share_ner.eval.html_report import groups_by_pattern
    from share_ner.formats import read_annotations
    from share_ner.inputs.files import read_notes

    base = args.data / "chia" / "test"
    docs = read_notes(base / "text")
    gold = read_annotations(base / "gold", docs)
    texts = {d: doc.text for d, doc in docs.items()}
    pred = read_annotations(args.pred, docs) if args.pred else _default_predictions(docs)
    systems = {"A": pred}
    if args.vs:
        systems["B"] = read_annotations(args.vs, docs)
    groups = groups_by_pattern(sorted(gold), r"_(inc|exc)$")

    def moved(ms: Sequence[Mention], new_id: str) -> list[Mention]:
        return [Mention(new_id, m.spans, m.cui, m.type, m.attributes) for m in ms]

    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure("chia/test".replace("/", "_"), gold, systems, texts, groups, Path(tmp))]
        big_gold = _copies(gold, COPIES, moved)
        big = {n: _copies({d: p.get(d, []) for d in gold}, COPIES, moved) for n, p in systems.items()}
        big_texts = _copies(texts, COPIES, lambda t, _: t)
        big_groups = groups_by_pattern(sorted(big_gold), r"_(inc|exc)~")
        rows.append(measure(f"chia_test_x{COPIES}", big_gold, big, big_texts, big_groups, Path(tmp)))

    label = args.label or (args.pred and "given predictions") or "the embedded default model"
    lines = [
        "# share-ner report: page size and cost",
        "",
        "The machine was shared with other jobs while this ran; CPU seconds are comparable only within this table.",
        "",
        f"`nice python benchmarks/bench_report.py{' --pred PRED' if args.pred else ''}"
        f"{' --vs PRED2' if args.vs else ''}`: chia/test predicted by {label}; the second row repeats its 380 notes {COPIES} times under new ids. Build: `report_data` + "
        "`render_html` in this process (10,000 approximate-randomization shuffles with two systems). Browser: "
        "headless Chromium `--dump-dom` on the notes view filtered to notes with errors, and on one note "
        "(CPU of the whole browser, start-up included).",
        "",
        "| run | notes | systems | note text (bytes) | page (bytes) | under 5 MB | build CPU s | browser CPU s: "
        "notes view | one note | rendered |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['notes']:,} | {r['systems']} | {r['text_bytes']:,} | {r['bytes']:,} | "
            f"{'yes' if r['bytes'] < LIMIT_BYTES else 'no'} | {r['build_cpu']:.2f} | "
            f"{r.get('notes_cpu', float('nan')):.2f} | {r.get('note_cpu', float('nan')):.2f} | "
            f"{'yes' if r.get('rendered') else 'not measured' if 'rendered' not in r else 'NO'} |")
    text = "\n".join(lines) + "\n"
    write_results(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
