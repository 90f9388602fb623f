"""Normalizer speed and memory as the lexicon grows toward the size of SNOMED CT's disorders.

UMLS is not available here, so the large lexicons are made of public names (built at run time in a temporary
directory, never committed):

* ``hpo`` -- the embedded HPO lexicon;
* ``hpo+icd`` -- plus the ICD-10-CM code titles and inclusion terms in the ``simple-icd-10-cm`` wheel (PyPI, public
  domain; a benchmark-only install: ``pip install -e '.[bench]'``), without the titles of 7th-character
  extensions ("..., subsequent encounter for fracture with routine healing"), which are billing variants, not names;
* ``hpo+icd+composed`` -- plus composed names ("Chronic ulcer of left tibia") built from HPO's body sites and a
  list of morphologies, up to 250,000 strings, the size of the synthetic UMLS build (benchmarks/results/lexicon.md). Their
  words repeat more than a real release's do, so this row is the costly end.

Each lexicon, in fresh processes: compile its index with a cold cache (time, peak memory, size of the cached index,
unique names, 3-grams, postings entries, learned word swaps and phrase pairs); then, in another process, load it
from the cache and normalize (a) the mentions the default model finds in the first ``--notes`` MTSamples notes,
with the default model's gazetteer, settings and threshold plus this lexicon as ``share-ner tag`` would, per note,
16 notes at a time (a ``share-ner tag`` batch) and 256 at a time, and (b) the NCBI disease test gold spans, batched.
Rates are mentions per CPU second of the process, the best of two passes, each with cold string caches and search
memo.

    python benchmarks/bench_scale.py --out benchmarks/results/scale.md
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import re
import sys
import tempfile
import time
from pathlib import Path

from bench_data import add_data_argument, command_line

HERE = Path(__file__).resolve().parent
COMPOSED_TARGET = 250_000
MORPHOLOGIES = [
    "fracture", "dislocation", "neoplasm", "carcinoma", "ulcer", "abscess", "cyst", "hemorrhage", "infection",
    "injury", "laceration", "contusion", "stenosis", "atresia", "hypoplasia", "aplasia", "inflammation", "necrosis",
    "degeneration", "calcification", "deformity", "disorder", "lesion", "pain", "sprain", "burn", "hematoma",
    "fistula", "obstruction", "perforation", "rupture", "prolapse", "hypertrophy", "atrophy", "ischemia",
    "infarction", "thrombosis", "embolism", "aneurysm", "adenoma", "sarcoma", "lymphoma", "melanoma", "polyp",
    "stricture", "torsion", "erosion", "foreign body", "malignant neoplasm", "benign neoplasm",
    "secondary malignant neoplasm", "carcinoma in situ", "open wound", "superficial injury", "crush injury",
    "pressure ulcer", "congenital anomaly", "closed fracture", "open fracture", "stress fracture",
    "pathological fracture"]
QUALIFIERS = ["acute", "chronic", "congenital", "recurrent", "primary", "traumatic", "bilateral", "subacute",
              "severe"]
NOT_SITES = re.compile(r"physiology|morphology|cycle|height|function|level|concentration|metabolism|system$|"
                       r"phenotype")


def icd10cm_entries() -> list:
    """ICD-10-CM code titles and inclusion terms (codes as labels), without 7th-character extensions."""
    import simple_icd_10_cm as icd

    from share_ner.lexicons import LexiconEntry

    out = []
    for code in icd.get_all_codes(with_dots=False):
        if icd.is_chapter_or_block(code) or icd.is_extended_subcategory(code):
            continue
        label = f"ICD10CM:{code}"
        out.append(LexiconEntry(label, icd.get_description(code), "ICD10CM", ("T047",), True))
        out.extend(LexiconEntry(label, term, "ICD10CM", ("T047",), False) for term in icd.get_inclusion_term(code))
    return out


def composed_entries(hpo_entries: list, target: int, seed: int = 0) -> list:
    """Names "<qualifier> <morphology> of <side> <site>" (and "<site> <morphology>" for 60% of concepts) from HPO's
    "Abnormality of the <site>" terms, one concept each, until ``target`` entries."""
    from share_ner.lexicons import LexiconEntry

    rng = random.Random(seed)
    sites = sorted({m.group(1).lower() for e in hpo_entries
                    if (m := re.match(r"(?i)abnormality of (?:the )?(.+)$", e.name)) and not NOT_SITES.search(m[1])})
    out: list = []
    seen: set[tuple[str, str, str, str]] = set()
    while len(out) < target:
        morphology, site = rng.choice(MORPHOLOGIES), rng.choice(sites)
        qualifier = rng.choice(QUALIFIERS) if rng.random() < 0.3 else ""
        side = rng.choice(["left", "right"]) if rng.random() < 0.25 else ""
        if (morphology, site, qualifier, side) in seen:
            continue
        seen.add((morphology, site, qualifier, side))
        label = f"COMPOSED:{len(seen)}"
        where = f"{side} {site}".strip()
        name = f"{qualifier} {morphology} of {where}".strip()
        out.append(LexiconEntry(label, name[0].upper() + name[1:], "COMPOSED", ("T047",), True))
        if rng.random() < 0.6:
            other = f"{qualifier} {where} {morphology}".strip()
            out.append(LexiconEntry(label, other[0].upper() + other[1:], "COMPOSED", ("T047",), False))
    return out


def write_lexicons(directory: Path) -> dict[str, Path]:
    """The benchmark's lexicon files (ICD-10-CM rows only where simple-icd-10-cm is installed)."""
    from share_ner.lexicons import default_lexicon, write_lexicon

    hpo = list(default_lexicon().entries)
    files = {"hpo": directory / "hpo.tsv"}
    write_lexicon(files["hpo"], hpo)
    try:
        icd = icd10cm_entries()
    except ImportError:
        print("simple-icd-10-cm is not installed: only the HPO lexicon is measured", file=sys.stderr)
        return files
    files["hpo+icd"] = directory / "hpo_icd.tsv"
    write_lexicon(files["hpo+icd"], hpo + icd)
    files["hpo+icd+composed"] = directory / "hpo_icd_composed.tsv"
    write_lexicon(files["hpo+icd+composed"], hpo + icd + composed_entries(hpo, COMPOSED_TARGET - len(hpo) - len(icd)))
    return files


def write_model(directory: Path, lexicon_file: Path) -> None:
    """A copy of the default model whose normalizer links against ``lexicon_file`` (copied in) instead of HPO,
    with the same gazetteer, settings and threshold: ``share-ner tag`` with a large lexicon, for
    ``benchmarks/bench_throughput.py --model``."""
    import shutil

    from share_ner.default_model.build import default_model_dir
    from share_ner.lexicons import load_lexicon

    shutil.copytree(default_model_dir(), directory)
    target = directory / "normalizer" / "lexicon.tsv"
    shutil.copyfile(lexicon_file, target)
    settings_file = directory / "normalizer" / "normalizer.json"
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    settings["lexicon"] = {"kind": "file", "path": str(target.resolve()),
                           "content_hash": load_lexicon(target).content_hash}
    settings_file.write_text(json.dumps(settings, indent=1), encoding="utf-8")
    from share_ner.pipeline import Pipeline

    copy, original = Pipeline.load(directory), Pipeline.load(default_model_dir())
    if (copy.normalizer.lexicon is None or copy.normalizer.lexicon.content_hash != load_lexicon(target).content_hash
            or copy.normalizer.threshold_ != original.normalizer.threshold_):
        raise SystemExit(f"{directory}: the model copy does not link against {lexicon_file} with the same threshold")


def child_compile(lexicon_file: str) -> dict:
    """Load the lexicon and compile its index with a cold cache."""
    sys.path.insert(0, str(HERE))
    from bench_throughput import peak_rss_mb

    from share_ner.lexicons import compile_index, load_lexicon
    from share_ner.lexicons.index import index_cache_path

    t = time.perf_counter()
    lexicon = load_lexicon(lexicon_file)
    index = compile_index(lexicon)
    seconds = time.perf_counter() - t
    rewrites = index.rewrites
    return {"strings": len(lexicon), "labels": len({e.cui for e in lexicon.entries}),
            "unique": len(index.unique_names), "grams": len(index.vectorizer.vocabulary_),
            "postings": int(index.postings.nnz), "swaps": sum(map(len, rewrites.swap.values())) if rewrites else 0,
            "phrases": sum(map(len, rewrites.phrase.values())) if rewrites else 0, "compile_s": seconds,
            "cache_mb": index_cache_path(lexicon.content_hash).stat().st_size / 1e6, "compile_peak_mb": peak_rss_mb()}


def child_speed(lexicon_file: str, mentions_file: str) -> dict:
    """Load the index from the cache, then the normalization rates (see the module docstring)."""
    sys.path.insert(0, str(HERE))
    import bench_normalizer as B
    from bench_throughput import peak_rss_mb

    from share_ner.batch.processes import settle_heap
    from share_ner.default_model.build import default_model_dir
    from share_ner.lexicons import load_lexicon
    from share_ner.linking.normalizer import Normalizer
    from share_ner.pipeline import Pipeline

    own = Pipeline.load(default_model_dir()).normalizer
    t = time.perf_counter()
    lexicon = load_lexicon(lexicon_file)
    norm = Normalizer(lexicon, own.gazetteer, own.config, own.threshold_)
    load_s = time.perf_counter() - t
    docs, mentions = pickle.loads(Path(mentions_file).read_bytes())
    B.accuracy(norm, docs, dict(list(mentions.items())[:20]))  # warm: abbreviation pipeline
    settle_heap()
    out: dict = {"load_s": load_s}
    for label, batched in (("per_note", False), ("tag_batch", B.TAG_BATCH), ("batch_256", True)):
        out[label] = max(B.throughput(norm, docs, mentions, batched)[1] for _ in range(2))
    ncbi_docs, ncbi_gold = B.load("ncbi_disease", "test")
    out["ncbi"] = max(B.throughput(norm, ncbi_docs, ncbi_gold, True)[1] for _ in range(2))
    out["speed_peak_mb"] = peak_rss_mb()
    return out


def in_child(*args: str) -> dict:
    sys.path.insert(0, str(HERE))
    from bench_throughput import run_child

    return run_child(Path(__file__).resolve(), *args)


def tag_mentions(n_notes: int, out: Path) -> tuple[int, int, int]:
    """Tag the first ``n_notes`` MTSamples notes with the default model; pickle (notes, mentions) to ``out``."""
    sys.path.insert(0, str(HERE))
    import bench_normalizer as B

    from share_ner.default_model.build import default_model_dir
    from share_ner.pipeline import Pipeline

    pipe = Pipeline.load(default_model_dir())
    notes = B.read_notes(B.DATA / "mtsamples" / "raw" / "notes")
    ids = sorted(notes)[:n_notes]
    mentions = {d: ms for d in ids if (ms := pipe.tag(notes[d]))}
    docs = {d: notes[d] for d in mentions}
    out.write_bytes(pickle.dumps((docs, mentions)))
    distinct = {" ".join(m.text(docs[d].text).split()).lower() for d, ms in mentions.items() for m in ms}
    return len(ids), sum(map(len, mentions.values())), len(distinct)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_argument(ap)
    ap.add_argument("--notes", type=int, default=1000, help="MTSamples notes to tag (default 1000)")
    ap.add_argument("--out", type=Path, help="write the results (Markdown) here")
    ap.add_argument("--model-dir", type=Path, help="also write there a copy of the default model whose normalizer "
                    "uses the largest lexicon (for benchmarks/bench_throughput.py --model)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.model_dir and args.model_dir.exists():
        ap.error(f"--model-dir {args.model_dir} exists; give a new directory")
    if args.child:
        what, *rest = args.child
        print(json.dumps(child_compile(*rest) if what == "compile" else child_speed(*rest)))
        return 0
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="share-ner-bench-scale-") as tmp:
        os.environ["SHARE_NER_CACHE"] = str(Path(tmp) / "cache")  # index caches of these lexicons: thrown away
        mentions_file = Path(tmp) / "mentions.pkl"
        notes, n_mentions, distinct = tag_mentions(args.notes, mentions_file)
        print(f"{notes:,} MTSamples notes: {n_mentions:,} mentions, {distinct:,} distinct strings", flush=True)
        rows = []
        lexicons = write_lexicons(Path(tmp))
        for label, path in lexicons.items():
            built = in_child("compile", str(path))
            speed = in_child("speed", str(path), str(mentions_file))
            rows.append((label, built, speed))
            print(label, json.dumps({**built, **speed}), flush=True)
        if args.model_dir:  # after the compile rows: the copy compiles its lexicon's index into the cache
            write_model(args.model_dir, list(lexicons.values())[-1])
            print(f"{args.model_dir}: the default model with the `{list(lexicons)[-1]}` lexicon", flush=True)
    text = report(rows, notes, n_mentions, distinct, started)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


def report(rows: list, notes: int, n_mentions: int, distinct: int, started: str) -> str:
    load = os.getloadavg()
    head = "| measure | " + " | ".join(f"`{label}`" for label, _, _ in rows) + " |"
    lines = [
        "# The normalizer as the lexicon grows", "",
        f"Command: `{command_line('bench_scale.py')}` ({started}, "
        f"load average at the end {load[0]:.1f} / {load[1]:.1f}). See the script's docstring for the lexicons.", "",
        f"Clinical notes: the {n_mentions:,} mentions ({distinct:,} distinct strings) the default model finds in the "
        f"first {notes:,} MTSamples notes, normalized with the default model's training gazetteer, settings and "
        "threshold plus the lexicon of the column. Rates: mentions per CPU second, best of two passes.", "",
        head, "|---|" + "---:|" * len(rows)]

    def row(name: str, fmt) -> None:
        lines.append(f"| {name} | " + " | ".join(fmt(b, s) for _, b, s in rows) + " |")

    row("lexicon strings", lambda b, s: f"{b['strings']:,}")
    row("labels (concepts, codes)", lambda b, s: f"{b['labels']:,}")
    row("unique names searched", lambda b, s: f"{b['unique']:,}")
    row("3-grams / postings entries", lambda b, s: f"{b['grams']:,} / {b['postings']:,}")
    row("learned word swaps / phrase pairs", lambda b, s: f"{b['swaps']:,} / {b['phrases']:,}")
    row("compile, cold cache (s)", lambda b, s: f"{b['compile_s']:.1f}")
    row("peak memory compiling (MB)", lambda b, s: f"{b['compile_peak_mb']:,.0f}")
    row("cached index (MB)", lambda b, s: f"{b['cache_mb']:,.0f}")
    row("load lexicon + index from cache (s)", lambda b, s: f"{s['load_s']:.2f}")
    row("clinical notes, one note at a time", lambda b, s: f"{s['per_note']:,.0f}")
    row("clinical notes, 16 notes at a time (`share-ner tag`)", lambda b, s: f"{s['tag_batch']:,.0f}")
    row("clinical notes, 256 notes at a time", lambda b, s: f"{s['batch_256']:,.0f}")
    row("NCBI disease test spans, batched", lambda b, s: f"{s['ncbi']:,.0f}")
    row("peak memory normalizing (MB)", lambda b, s: f"{s['speed_peak_mb']:,.0f}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
