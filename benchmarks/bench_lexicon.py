"""Benchmark the UMLS lexicon builder on a synthetic, full-size MRCONSO.

Generates (at run time, into a temporary directory that is deleted afterwards;
never committed) an MRSTY.RRF and an MRCONSO.RRF in the real column layout,
sorted by CUI like a UMLS release, with UMLS-like proportions: ~3.5 strings a
concept, 1 in 8 concepts in the Disorders group, 45% English strings, 10%
SNOMEDCT_US, 5% suppressed. Then runs ``share-ner lexicon build --umls`` in a
child process and reports its wall time and peak memory (maximum resident set
size of the child), plus the time to load the resulting lexicon and compile
(then re-load from cache) its index.

    nice python benchmarks/bench_lexicon.py --lines 16000000 --out benchmarks/results/lexicon.md
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DISORDER = ["T047", "T191", "T046", "T037", "T019", "T184", "T048", "T020", "T190", "T049", "T050"]
OTHER = ["T109", "T121", "T023", "T061", "T033", "T170", "T028", "T116"]
SOURCES = ["MSH", "MDR", "RXNORM", "LNC", "NCI", "MTH", "ICD10CM", "MEDCIN", "SNOMEDCT_US", "CHV"]
LANGS = ["ENG"] * 9 + ["SPA", "FRE", "GER", "DUT", "ITA", "JPN", "POR", "CZE", "HUN", "RUS", "SWE"]
WORDS = ("acute chronic renal hepatic cardiac failure syndrome disease disorder carcinoma infection fracture "
         "lesion pain deficiency stenosis insufficiency hypertension diabetes mellitus type left right upper lower "
         "bilateral primary secondary congenital neoplasm malignant benign tumor of the with without").split()


def generate(meta: Path, lines: int, seed: int = 0) -> tuple[int, int]:
    """Write MRSTY.RRF and MRCONSO.RRF with about ``lines`` MRCONSO lines; returns (concepts, MRCONSO lines)."""
    rng = random.Random(seed)
    written = 0
    aui = 0
    with open(meta / "MRSTY.RRF", "w", encoding="utf-8", newline="\n") as sty, \
            open(meta / "MRCONSO.RRF", "w", encoding="utf-8", newline="\n", buffering=1 << 22) as conso:
        buf: list[str] = []
        c = -1
        while written < lines:
            c += 1
            cui = f"C{c:07d}"
            tui = rng.choice(DISORDER) if rng.random() < 0.125 else rng.choice(OTHER)
            sty.write(f"{cui}|{tui}|B2.2.1.2.1|Disease or Syndrome|AT{c:08d}|256|\n")
            n = 1 + int(rng.expovariate(1 / 2.5))
            for k in range(n):
                aui += 1
                lat = "ENG" if rng.random() < 0.45 else rng.choice(LANGS)
                sab = "SNOMEDCT_US" if rng.random() < 0.10 else rng.choice(SOURCES)
                supp = "N" if rng.random() < 0.95 else rng.choice("OEY")
                name = " ".join(rng.choices(WORDS, k=rng.randint(1, 5))) + f" {c}"
                ts = "P" if k == 0 else "S"
                buf.append(f"{cui}|{lat}|{ts}|L{c:07d}|PF|S{aui:07d}|Y|A{aui:08d}|{aui}|{c}||{sab}|PT|{c}|"
                           f"{name}|0|{supp}|256|\n")
            written += n
            if len(buf) > 50_000:
                conso.write("".join(buf))
                buf.clear()
        conso.write("".join(buf))
    return c + 1, written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=16_000_000, help="MRCONSO lines to generate (default 16M)")
    ap.add_argument("--out", type=Path, help="write the results table (Markdown) here")
    ap.add_argument("--tmp", type=Path, help="directory for the temporary META files (default: system temp)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.tmp, prefix="share-ner-bench-lexicon-") as tmp:
        meta = Path(tmp) / "META"
        meta.mkdir()
        t0 = time.perf_counter()
        concepts, lines = generate(meta, args.lines)
        gen_s = time.perf_counter() - t0
        size_gb = (meta / "MRCONSO.RRF").stat().st_size / 1e9
        print(f"generated {lines:,} MRCONSO lines ({size_gb:.2f} GB), {concepts:,} concepts in {gen_s:.0f} s",
              flush=True)
        out = Path(tmp) / "umls.tsv"
        cache = Path(tmp) / "cache"
        env = {**os.environ, "SHARE_NER_CACHE": str(cache)}
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "share_ner.cli", "lexicon", "build", "--umls", str(meta),
                               "--out", str(out)], env=env, capture_output=True, text=True)
        build_s = time.perf_counter() - t0
        if proc.returncode:
            print(proc.stderr, file=sys.stderr)
            return proc.returncode
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(proc.stderr.strip(), flush=True)
        entries = sum(1 for _ in open(out, encoding="utf-8")) - 1
        code = ("import sys,time; t=time.perf_counter(); from share_ner.lexicons import load_lexicon, compile_index; "
                "t1=time.perf_counter(); L=load_lexicon(sys.argv[1]); i=compile_index(L); t2=time.perf_counter(); "
                "print(f'{t2-t1:.2f} s ({t2-t:.2f} s with imports)')")
        first = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True)
        second = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True)
        first_s, second_s = first.stdout.strip() or first.stderr[-300:], second.stdout.strip() or second.stderr[-300:]
    rate = lines / build_s
    rows = [
        ("MRCONSO lines (synthetic, generated at run time)", f"{lines:,} ({size_gb:.2f} GB)"),
        ("concepts (MRSTY lines)", f"{concepts:,}"),
        ("lexicon entries written", f"{entries:,}"),
        ("build wall time (`share-ner lexicon build --umls`)", f"{build_s:.1f} s ({rate:,.0f} lines/s)"),
        ("build peak memory (max RSS of the build process)", f"{peak_mb:,.0f} MB"),
        ("load lexicon + compile index (first run, cache cold)", first_s),
        ("load lexicon + index (second run, from cache)", second_s),
    ]
    table = "| measure | value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows) + "\n"
    print(table)
    if args.out:
        full = 16_000_000
        note = "" if lines >= full else (
            f"\nThis run used {lines:,} lines, not the full 16 M; extrapolating linearly (the build streams "
            f"MRCONSO, so time grows with lines and memory with MRSTY's disorder concepts only), 16 M lines would "
            f"take about {build_s * full / lines:.0f} s.\n")
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            "# UMLS lexicon builder benchmark\n\n"
            f"Command: `nice python benchmarks/bench_lexicon.py --lines {args.lines} --out {args.out}` "
            f"(the machine was shared with other jobs; generation took {gen_s:.0f} s and is not counted).\n\n"
            "Targets: a full-size MRCONSO (16 M lines) builds in under 10 minutes and 4 GB.\n\n"
            + table + note, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
