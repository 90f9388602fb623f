"""The normalizer at SNOMED CT's size, this code against a baseline, in one run.

The lexicons are those of ``bench_scale.py`` (in ``eval/``, or ``benchmarks/`` once moved there): the embedded HPO
lexicon, and HPO + ICD-10-CM titles + composed names, 250,000 strings (``pip install -e '.[bench]'``). Each is
linked, as ``share-ner tag`` would, with the default model's training gazetteer, settings and CUI-less threshold.
The mentions are those the default model finds in the first ``--notes`` MTSamples notes.

Each measurement runs in a fresh process of one of two Python environments: this checkout's and a baseline's
(``--baseline-python``: the interpreter of a venv where another checkout of share-ner is installed). The two are
run alternately, ``--rounds`` times each, and each process times ``--passes`` cold passes (string caches and
search memo emptied) 16 notes at a time and keeps the best; the table shows the best process of each side.
Rates are mentions per CPU second of the process. Every process also hashes the label and step of every mention
(decisions made 16 notes at a time) with its own default model. Where the default model or the decisions changed
after the baseline, in commits of their own, those hashes differ; ``--reference-python`` names a third code (the
one before a speed change) whose decisions with this code's default model (its gazetteer, settings and threshold,
read by the reference's ``Normalizer.load``) are hashed too, in one untimed process per lexicon: the table says
whether they equal this code's.

    nice python benchmarks/bench_speed_scale.py --baseline-python OLD_VENV/bin/python \\
        --out benchmarks/results/speed_scale.md
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import json
import os
import pickle
import pstats
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
from bench_data import add_data_argument, side_env

REPO = HERE.parent
BATCH = 16  # notes normalized together: a batch of ``share-ner tag``




def scale_module():
    """``bench_scale`` (where it is: ``eval/`` or ``benchmarks/``), for its lexicons."""
    for where in (HERE, REPO / "eval"):
        if (where / "bench_scale.py").is_file():
            sys.path.insert(0, str(where))
            import bench_scale

            return bench_scale
    sys.exit("bench_scale.py not found in benchmarks/ or eval/")


# ---------------------------------------------------------------- preparation (this checkout)


def prepare(tmp: Path, data: Path, n_notes: int) -> dict:
    """Lexicon files and the mentions of the first ``n_notes`` MTSamples notes, pickled for the children."""
    from share_ner.default_model.build import default_model_dir
    from share_ner.inputs.files import read_notes
    from share_ner.pipeline import Pipeline

    bench_scale = scale_module()
    files = bench_scale.write_lexicons(tmp)
    if "hpo+icd+composed" not in files:
        sys.exit("simple-icd-10-cm is not installed: pip install -e '.[bench]'")
    pipe = Pipeline.load(default_model_dir())
    notes = read_notes(data / "mtsamples" / "raw" / "notes")
    ids = sorted(notes)[:n_notes]
    mentions = {d: ms for d in ids if (ms := pipe.tag(notes[d]))}
    docs = {d: notes[d] for d in mentions}
    (tmp / "mentions.pkl").write_bytes(pickle.dumps((docs, mentions)))
    distinct = {" ".join(m.text(docs[d].text).split()).lower() for d, ms in mentions.items() for m in ms}
    return {"lexicons": {"hpo": str(files["hpo"]), "250k": str(files["hpo+icd+composed"])}, "notes": len(ids),
            "mentions": sum(map(len, mentions.values())), "distinct": len(distinct)}


# ---------------------------------------------------------------- child (either checkout)


# Where the normalizer's modules are in this layout, in the one before the string keys left lexicons/index.py, and in
# the older flat one (share_ner/normalizer.py, share_ner/default_model.py), so that a baseline checkout of any runs
# the same child.
_LAYOUTS = (("share_ner.default_model.build", "share_ner.linking.normalizer",
             ("share_ner.lexicons.keys", "share_ner.lexicons.index", "share_ner.linking.normalizer",
              "share_ner.linking.candidates")),
            ("share_ner.default_model.build", "share_ner.linking.normalizer",
             ("share_ner.lexicons.index", "share_ner.linking.normalizer", "share_ner.linking.candidates")),
            ("share_ner.default_model", "share_ner.normalizer", ("share_ner.lexicons.index", "share_ner.normalizer")))


def _layout() -> tuple:
    """(``default_model_dir``, ``Normalizer``, the modules whose string caches a cold pass empties)."""
    import importlib

    for build, normalizer, cached in _LAYOUTS:
        try:
            model_dir = importlib.import_module(build).default_model_dir
            norm_cls = importlib.import_module(normalizer).Normalizer
            modules = [importlib.import_module(m) for m in cached]
        except (ImportError, AttributeError):
            continue
        return model_dir, norm_cls, modules
    sys.exit("no share_ner normalizer found in this Python")


def _cold(norm) -> None:
    """Empty the string caches and the search memo, as a new process would have them."""
    for module in _layout()[2]:
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and getattr(value, "__module__", "") == module.__name__:
                value.cache_clear()
    for index in (norm._gaz, norm._lex):
        if index is not None:
            index.forget_searches()


def _batches(docs: dict, mentions: dict) -> list:
    ids = list(mentions)
    return [[(docs[d], mentions[d]) for d in ids[i:i + BATCH]] for i in range(0, len(ids), BATCH)]


def _decisions_hash(norm, batches: list) -> str:
    """A hash of the label and step of every mention, decided 16 notes at a time from a cold start."""
    _cold(norm)
    digest = hashlib.sha256()
    for batch in batches:
        for (doc, _), decisions in zip(batch, norm.decide_many(batch)):
            for i, d in enumerate(decisions):
                digest.update(f"{doc.id}\t{i}\t{d.cui}\t{d.method}\n".encode())
    return digest.hexdigest()[:16]


def child(lexicon_file: str, mentions_file: str, passes: int, profile: bool, shared_model: str) -> dict:
    """Time the normalizer of this Python's default model with the lexicon; hash its decisions, and those of the
    normalizer saved in ``shared_model`` (a model directory; "-" for none) with the same lexicon."""
    from share_ner.lexicons import load_lexicon
    from share_ner.pipeline import Pipeline

    default_model_dir, Normalizer, _ = _layout()
    own = Pipeline.load(default_model_dir()).normalizer
    lexicon = load_lexicon(lexicon_file)
    norm = Normalizer(lexicon, own.gazetteer, own.config, own.threshold_)
    docs, mentions = pickle.loads(Path(mentions_file).read_bytes())
    batches = _batches(docs, mentions)
    n = sum(len(ms) for ms in mentions.values())
    for batch in batches[:2]:  # warm: the abbreviation detector's pipeline
        norm.decide_many(batch)
    gc.collect()  # as share_ner.batch.processes.settle_heap does, here for either code (the baseline has none)
    gc.freeze()
    digest = _decisions_hash(norm, batches)
    shared = None
    if shared_model != "-":
        saved = Normalizer.load(Path(shared_model) / "normalizer")
        shared = _decisions_hash(Normalizer(lexicon, saved.gazetteer, saved.config, saved.threshold_), batches)
    rates = []
    for _ in range(passes):
        _cold(norm)
        cpu = time.process_time()
        for batch in batches:
            norm.decide_many(batch)
        rates.append(n / (time.process_time() - cpu))
    out = {"rate": max(rates, default=None), "rates": rates, "hash": digest, "shared_hash": shared, "mentions": n}
    if profile:
        _cold(norm)
        prof = cProfile.Profile()
        prof.enable()
        for batch in batches:
            norm.decide_many(batch)
        prof.disable()
        out["profile"] = profile_rows(prof)
    return out


def profile_rows(prof: cProfile.Profile, top: int = 10) -> list:
    """The ``top`` functions by own time: (function, share of own time, share of time under it)."""
    stats = pstats.Stats(prof, stream=io.StringIO())
    total = sum(row[2] for row in stats.stats.values()) or 1.0
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]
    out = []
    for (file, line, name), (_, _, own, cum, _) in rows:
        where = Path(file).name if file != "~" else ""
        out.append([f"{where}:{line}({name})" if where else name, own / total, cum / total])
    return out


# ---------------------------------------------------------------- parent


def run_child(python: str, *args: str, cache: Path | None = None) -> dict:
    env = side_env(cache) if cache else None
    proc = subprocess.run([python, str(Path(__file__).resolve()), "--child", *args], capture_output=True,
                          text=True, cwd=tempfile.gettempdir(), env=env)
    if proc.returncode != 0:
        sys.exit(f"child {python} {args[0]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-python", help="the Python of a venv with the baseline installed")
    ap.add_argument("--baseline-name", default="baseline", help="what to call the baseline in the table")
    ap.add_argument("--baseline-cache", type=Path, help="the baseline's SHARE_NER_CACHE (default: this one's; "
                    "two codes of different INDEX_VERSION sharing a cache rebuild each other's indexes)")
    ap.add_argument("--reference-python", help="the Python of a third code whose decisions, with this code's default "
                    "model, must equal this code's (the code before a speed change)")
    ap.add_argument("--reference-name", default="reference", help="what to call the reference in the table")
    ap.add_argument("--reference-cache", type=Path, help="the reference's SHARE_NER_CACHE")
    ap.add_argument("--notes", type=int, default=1000, help="MTSamples notes to tag (default 1000)")
    ap.add_argument("--rounds", type=int, default=3, help="processes per side and lexicon, run alternately")
    ap.add_argument("--passes", type=int, default=2, help="timed passes per process (best kept)")
    add_data_argument(ap)
    ap.add_argument("--work", type=Path, help="keep the lexicons and mentions here (default: a temporary directory)")
    ap.add_argument("--out", type=Path, help="write the results (Markdown) here")
    ap.add_argument("--tag-notes", type=int, help="instead: time `share-ner tag` end to end on the first N MTSamples "
                    "notes with the default model and with its copy linking the 250,000-string lexicon")
    ap.add_argument("--hpo-only", action="store_true", help="with --tag-notes: only the default model (each code "
                    "its own), for a baseline whose models this code's large-lexicon copy cannot be read by")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        lexicon_file, mentions_file, passes, profile, shared_model = args.child
        print(json.dumps(child(lexicon_file, mentions_file, int(passes), profile == "1", shared_model)))
        return 0
    if not args.baseline_python:
        ap.error("--baseline-python is required")
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="share-ner-bench-speed-scale-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        meta_file = work / "meta.json"
        if args.tag_notes and args.hpo_only:
            meta = {}  # no large lexicon to compose
        elif meta_file.is_file():
            meta = json.loads(meta_file.read_text())
        else:
            meta = prepare(work, args.data, args.notes)
            meta_file.write_text(json.dumps(meta))
        if meta:
            print(f"{meta['notes']:,} notes, {meta['mentions']:,} mentions, {meta['distinct']:,} distinct", flush=True)
        sides = {args.baseline_name: args.baseline_python, "this code": sys.executable}
        if args.tag_notes:
            text = tag_report(tag_end_to_end(work, sides, meta, args), sides, started, args)
            print(text)
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(text, encoding="utf-8")
            return 0
        results: dict = {(s, lex): [] for s in sides for lex in meta["lexicons"]}
        if args.reference_python:
            model = str(_layout()[0]())  # this code's default model
            for lex, path in meta["lexicons"].items():
                res = run_child(args.reference_python, path, str(work / "mentions.pkl"), "0", "0", model,
                                cache=args.reference_cache)
                results[("reference", lex)] = res["shared_hash"]
                print("reference", lex, res["shared_hash"], flush=True)
        for r in range(args.rounds):
            for lex, path in meta["lexicons"].items():
                for side, python in sides.items():
                    profile = "1" if r == 0 and lex == "250k" else "0"
                    res = run_child(python, path, str(work / "mentions.pkl"), str(args.passes), profile, "-",
                                    cache=args.baseline_cache if side == args.baseline_name else None)
                    results[(side, lex)].append(res)
                    print(side, lex, f"{res['rate']:,.0f}", res["hash"], flush=True)
    text = report(results, list(sides), meta, started, args)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


def link_notes(work: Path, data: Path, n: int | None) -> Path:
    """A directory of links to the first ``n`` MTSamples notes (all when None), made once in ``work``."""
    notes = work / f"notes{n or 'all'}"
    if not notes.is_dir():
        notes.mkdir()
        source = data / "mtsamples" / "raw" / "notes"
        for path in sorted(source.iterdir())[:n]:
            (notes / path.name).symlink_to(path.resolve())
    return notes


def time_tag(python: str, notes: Path, out: Path, cache: Path, extra: tuple[str, ...] = ()) -> dict:
    """Run ``share-ner tag NOTES --out OUT EXTRA`` of ``python``'s venv with ``SHARE_NER_CACHE=cache``: the CPU
    seconds of the process and its workers, wall seconds, and the peak resident memory of its largest process (MB)."""
    cmd = [str(Path(python).parent / "share-ner"), "tag", str(notes), "--out", str(out), *extra]
    shutil.rmtree(out, ignore_errors=True)  # tag refuses to write into a used --out
    env = side_env(cache)
    wall = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)  # the child's rusage, its reaped workers included
    wall = time.perf_counter() - wall
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "peak_mb": usage.ru_maxrss / 1024}


def tag_end_to_end(work: Path, sides: dict, meta: dict, args) -> dict:
    """CPU seconds of ``share-ner tag`` (process start to last note written) per side and model, alternately;
    each side with its own cache directory, warmed by a first run that is not counted."""
    notes = link_notes(work, args.data, args.tag_notes)
    models: dict[str, list[str]] = {"hpo": []}
    if not args.hpo_only:
        large = work / "large_model"
        if not large.is_dir():
            scale_module().write_model(large, Path(meta["lexicons"]["250k"]))
        models["250k"] = ["--model", str(large)]
    out: dict = {(side, m): [] for side in sides for m in models}
    for r in range(args.rounds + 1):
        for side, python in sides.items():
            cache = work / f"cache-{side.replace(' ', '-')}"
            for model, extra in models.items():
                cpu = time_tag(python, notes, work / "tagged", cache, tuple(extra))["cpu"]
                if r:
                    out[(side, model)].append(cpu)
                print(side, model, f"{cpu:.2f}", "(warm-up)" if not r else "", flush=True)
    return out


def tag_report(results: dict, sides: dict, started: str, args) -> str:
    # the baseline may be this checkout's own venv: one side only (the code of the filing cannot read the
    # 250,000-string model copy this code writes)
    own = os.path.abspath(Path(args.baseline_python).parent) == os.path.abspath(Path(sys.executable).parent)
    venv = "VENV" if own else "OLD_VENV"
    cmd = " ".join([f"nice python benchmarks/bench_speed_scale.py --baseline-python {venv}/bin/python",
                    "--baseline-name", shlex.quote(args.baseline_name), "--tag-notes", str(args.tag_notes),
                    *(["--hpo-only"] if args.hpo_only else []),
                    "--rounds", str(args.rounds), *(["--out", str(args.out)] if args.out else [])])
    if args.hpo_only:
        old, new = sides
        best = {side: min(results[(side, "hpo")]) for side in sides}
        lines = ["# `share-ner tag` end to end: this code against a baseline, each with its own default model", "",
                 f"Command: `{cmd}` ({started}). The runs alternate and are compared as ratios within the run.", "",
                 f"`share-ner tag` on the first {args.tag_notes:,} MTSamples notes (start-up, model load from a warm "
                 "cache, tagging, normalization, attributes where the code fills them, writing), each code with the "
                 f"default model it builds. CPU seconds of the process, the best of {args.rounds} runs (all runs in "
                 "brackets).", "",
                 "| code | CPU s | rate against the baseline |", "|---|---:|---:|"]
        for side in sides:
            runs = results[(side, "hpo")]
            lines.append(f"| {side} | {best[side]:.2f} ({', '.join(f'{x:.2f}' for x in runs)}) | "
                         f"{best[old] / best[side]:.2f}x |")
        return "\n".join(lines) + "\n"
    lines = ["# `share-ner tag` end to end with a 250,000-string lexicon", "",
             f"Command: `{cmd}` ({started})"
             + (", VENV being this checkout's own venv: one side only, since the code of the issue's filing cannot "
                "read this code's model copy" if own else "")
             + ". The machine was shared with other work during the run, so the runs alternate and are compared as "
             "ratios within the run.", "",
             f"`share-ner tag` on the first {args.tag_notes:,} MTSamples notes (start-up, model and index load "
             "from a warm cache, tagging, normalization, writing), with the default model (HPO lexicon) and with "
             "its copy whose normalizer links the 250,000-string lexicon (gazetteer, settings and threshold the "
             f"same). CPU seconds of the process, the best of {args.rounds} runs (all runs in brackets).", "",
             "| code | HPO | 250,001 strings | rate with 250,001 strings / rate with HPO |", "|---|---:|---:|---:|"]
    for side in sides:
        a, b = results[(side, "hpo")], results[(side, "250k")]
        lines.append(f"| {side} | {min(a):.2f} ({', '.join(f'{x:.2f}' for x in a)}) | {min(b):.2f} "
                     f"({', '.join(f'{x:.2f}' for x in b)}) | {min(a) / min(b):.0%} |")
    return "\n".join(lines) + "\n"


def report(results: dict, sides: list, meta: dict, started: str, args) -> str:
    old, new = sides
    shown = ["--baseline-python", "OLD_VENV/bin/python", "--baseline-name", args.baseline_name,
             *(["--reference-python", "REF_VENV/bin/python", "--reference-name", args.reference_name]
               if args.reference_python else []), "--notes",
             str(args.notes), "--rounds", str(args.rounds), "--passes", str(args.passes)]
    if args.out:
        shown += ["--out", str(args.out)]
    cmd = " ".join(["python benchmarks/bench_speed_scale.py", *map(shlex.quote, shown)])
    lines = [
        "# The normalizer at SNOMED CT's size: this code against a baseline", "",
        f"Command: `{cmd}` ({started}). The machine was shared with other work during the run, so old and new were "
        "run alternately and are compared as ratios within the run.", "",
        f"Mentions: the {meta['mentions']:,} mentions ({meta['distinct']:,} distinct strings) the default model finds "
        f"in the first {meta['notes']:,} MTSamples notes, normalized {BATCH} notes at a time with the default "
        "model's gazetteer, settings and threshold plus the lexicon of the row. Rates: mentions per CPU second, the "
        f"best of {args.passes} cold passes per process and of {args.rounds} processes per side (all processes in "
        "brackets). Decisions: a hash of every mention's label and step with each code's own default model (all "
        "processes of a side give the same one, or the column says so); the two codes' hashes differ where the "
        "default model or the decisions changed after the baseline, in commits of their own."
        + (f" The last column: whether {args.reference_name} decides the same as this code, both with this code's "
           "default model (gazetteer, settings and threshold)." if args.reference_python else ""), "",
        f"| lexicon | {old} | this code | new / old | decisions ({old}, this code) |"
        + (f" same decisions as {args.reference_name} |" if args.reference_python else ""),
        "|---|---:|---:|---:|---|" + ("---|" if args.reference_python else "")]
    for lex, label in (("hpo", "HPO (35,957 strings)"), ("250k", "HPO + ICD-10-CM + composed (250,001 strings)")):
        a, b = results[(old, lex)], results[(new, lex)]
        ra, rb = max(x["rate"] for x in a), max(x["rate"] for x in b)
        all_a = ", ".join(f"{x['rate']:,.0f}" for x in a)
        all_b = ", ".join(f"{x['rate']:,.0f}" for x in b)
        ha, hb = sorted({x["hash"] for x in a}), sorted({x["hash"] for x in b})
        row = (f"| {label} | {ra:,.0f} ({all_a}) | {rb:,.0f} ({all_b}) | {rb / ra:.2f} | "
               f"`{'`/`'.join(ha)}`, `{'`/`'.join(hb)}` |")
        if args.reference_python:
            ref = results[("reference", lex)]
            row += f" {'yes' if hb == [ref] else 'NO'} (`{ref}`) |"
        lines.append(row)
    for side in sides:
        prof = next((x["profile"] for x in results[(side, "250k")] if "profile" in x), None)
        if not prof:
            continue
        lines += ["", f"Profile, {side}, 250,001 strings (one cold pass under cProfile; shares of the profiled time):",
                  "", "| function | own time | time under it |", "|---|---:|---:|"]
        lines += [f"| `{name}` | {own:.0%} | {cum:.0%} |" for name, own, cum in prof]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
