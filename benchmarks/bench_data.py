"""Where the benchmarks find the public corpora and write their results.

Corpora come from ``--data DIR`` on the command line, else ``$SHARE_NER_DATA``, else ``<repo>/../shared/data``.
A ``--data`` given on the command line is also put in ``$SHARE_NER_DATA``, so child processes a benchmark starts
read the same corpora. The benchmarks are scripts, not a package: they import this module (and each other) as
siblings, ``python benchmarks/bench_x.py``.
"""

from __future__ import annotations

import argparse
import csv
import os
import shlex
import sys
from pathlib import Path
from typing import Iterator, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULTS_DIR = HERE / "results"
ENV = "SHARE_NER_DATA"


def side_env(cache: str | Path) -> dict[str, str]:
    """The environment of a measured ``share-ner`` process: this one's, with ``SHARE_NER_CACHE=cache`` and without
    ``PYTHONDONTWRITEBYTECODE``, so that each side runs from its compiled bytecode, as an installed package does."""
    env = dict(os.environ, SHARE_NER_CACHE=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def data_dir(argv: Sequence[str] | None = None) -> Path:
    """The corpora directory: ``--data DIR`` in ``argv`` (default ``sys.argv``), else ``$SHARE_NER_DATA``, else
    ``<repo>/../shared/data``."""
    args = list(sys.argv[1:] if argv is None else argv)
    for i, a in enumerate(args):
        if a == "--data" and i + 1 < len(args):
            chosen = Path(args[i + 1])
        elif a.startswith("--data="):
            chosen = Path(a.split("=", 1)[1])
        else:
            continue
        os.environ[ENV] = str(chosen)
        return chosen
    env = os.environ.get(ENV)
    return Path(env) if env else REPO.parent / "shared" / "data"


def add_data_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--data DIR`` option every benchmark takes (its value is read by :func:`data_dir` at import)."""
    parser.add_argument("--data", type=Path, default=DATA,
                        help=f"the converted public corpora (default ${ENV}, else <repo>/../shared/data)")


def shown_path(value: str, placeholder: str = "DIR") -> str:
    """``value`` as a results file shows it: relative to the repository when inside it, else ``placeholder`` (a
    results file names no path of the machine that wrote it)."""
    path = Path(value).resolve()
    if path.is_relative_to(REPO):
        return str(path.relative_to(REPO))
    return placeholder


def command_line(script: str, argv: Sequence[str] | None = None) -> str:
    """``python benchmarks/<script> ARGS`` as run, with path arguments shown by :func:`shown_path` (``--model DIR``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    shown = []
    for i, a in enumerate(args):
        option = args[i - 1] if i else ""
        if option.startswith("--") and ("/" in a or os.sep in a) and not a.startswith("-"):
            a = shown_path(a, option.lstrip("-").replace("-", "_").upper())
        shown.append(shlex.quote(a))
    return " ".join([f"python benchmarks/{script}", *shown])


DATA = data_dir()


def dev_args(doc: str, name: str, results: Path, argv: Sequence[str] | None = None) -> argparse.Namespace | None:
    """The ``--data`` and ``--out`` arguments of a benchmark (its docstring ``doc``, results file ``results``);
    None, said on stderr, when the corpora are not there."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_data_argument(ap)
    ap.add_argument("--out", type=Path, default=results)
    args = ap.parse_args(argv)
    if not (args.data / "README.md").exists():
        print(f"{name}: {args.data} not found; nothing to measure", file=sys.stderr)
        return None
    return args


def write_results(path: str | Path, text: str) -> None:
    """Print the results and write them to ``path`` (its folder made if needed)."""
    print(text)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")


def tsv_rows(path: Path, columns: Sequence[str]) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each row of a hand-made TSV file after its header, which must be ``columns``;
    a wrong header is an error naming the file."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        if tuple(next(rows, ())) != tuple(columns):
            raise SystemExit(f"{path}:1: expected the header {'<TAB>'.join(columns)}")
        yield from enumerate(rows, start=2)


def read_split(split: Path) -> tuple[dict, dict]:
    """The notes of a corpus split (``split/text``) and their gold mentions (``split/gold``; a note without gold
    has none)."""
    from share_ner.formats import read_annotations
    from share_ner.inputs.files import read_notes

    docs = read_notes(split / "text")
    gold = read_annotations(split / "gold", docs)
    return docs, {d: gold.get(d, []) for d in docs}
