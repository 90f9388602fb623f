"""Finding and loading the systems to evaluate: one prediction path each, or a directory of run directories."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from share_ner.document import Document, Mention
from share_ner.errors import InputError, some_of
from share_ner.formats import annotation_files, format_of, read_annotations


def _is_run_directory(path: Path) -> bool:
    return path.is_dir() and bool(annotation_files(path))


def find_systems(paths: Sequence[str | Path]) -> dict[str, Path]:
    """System name -> prediction path.

    One directory holding no annotation files itself but several
    subdirectories that do is a directory of runs: each subdirectory is a
    system named after it. Otherwise each path is a system, named by its last
    component (the whole path when two would share a name).
    """
    paths = [Path(p) for p in paths]
    if len(paths) == 1 and paths[0].is_dir():
        root = paths[0]
        direct = [p for p in root.iterdir() if p.is_file() and format_of(p) is not None]
        runs = sorted(p for p in root.iterdir() if not p.name.startswith(".") and _is_run_directory(p))
        if not direct and len(runs) > 1:
            return {p.name: p for p in runs}
    names = [p.name or str(p) for p in paths]
    if len(set(names)) < len(names):
        names = [str(p) for p in paths]
    if len(set(names)) < len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise InputError(dup, "given twice as a system to evaluate")
    return dict(zip(names, paths))


def load_gold_and_systems(
    gold_path: str | Path, systems: Mapping[str, Path], notes: Mapping[str, Document] | None = None
) -> tuple[dict[str, list[Mention]], dict[str, dict[str, list[Mention]]]]:
    """Read gold and every system's predictions; with ``notes``, check spans against them.

    Every gold note must then have its text among ``notes``.
    """
    gold = read_annotations(gold_path, notes)
    if notes is not None:
        absent = sorted(d for d in gold if d not in notes)
        if absent:
            raise InputError(gold_path, f"{len(absent)} annotated note(s) have no text among the notes given: "
                             f"{some_of(absent)}")
    preds = {name: read_annotations(path, notes) for name, path in systems.items()}
    return gold, preds
