"""Training a model directory: the CRF tagger (:mod:`share_ner.tagging.training`), then the normalizer
(:meth:`share_ner.linking.normalizer.Normalizer.fit`), then ``config.json`` (:mod:`share_ner.model`).

The directory is built beside ``out_dir`` and renamed into place when complete, so a failed run leaves no
half-written model. Scoring a trained model on dev notes is the caller's (``share-ner train --dev-text``:
:func:`share_ner.eval.dev.record_dev_scores`).
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError, some_of
from share_ner.formats import annotation_files
from share_ner.io import doc_id_from_path
from share_ner.lexicons.lexicon import Lexicon
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer
from share_ner.model import FILES, write_config
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.training import TrainingReport, _install, _prepare_out_dir, check_gold, peak_rss_mb, train_tagger

log = logging.getLogger(__name__)


def gold_of_notes(docs: Mapping[str, Document], gold: Mapping[str, list[Mention]], gold_path: Path,
                  text_path: Path) -> tuple[dict[str, list[Mention]], list[str]]:
    """The gold of the notes in ``docs``, and one line per problem found: gold of a note that is not there (left
    out, with counts and file names), and notes without a gold file when the gold is a directory of per-note files
    (trained on as mention-free; a single gold file lists only notes with mentions)."""
    orphans = sorted(d for d in gold if d not in docs)
    missing = sorted(d for d in docs if d not in gold) if gold_path.is_dir() else []
    problems = []
    if orphans:
        if gold_path.is_dir():
            by_id = {doc_id_from_path(p): p for p in annotation_files(gold_path)}
            names = [str(by_id.get(d, d)) for d in orphans]
        else:
            names = [f"{gold_path} (note {d})" for d in orphans]
        lost = sum(len(gold[d]) for d in orphans)
        problems.append(f"{len(orphans)} gold file(s) name no note of {text_path}, so their {lost} mention(s) are "
                        f"not used: {some_of(names)}")
    if missing:
        problems.append(f"{len(missing)} note(s) of {text_path} have no gold file in {gold_path} and are trained "
                        f"on as mention-free: {some_of(missing)}")
    return {d: ms for d, ms in gold.items() if d in docs}, problems


def train_model(
    docs: Mapping[str, Document],
    gold: Mapping[str, list[Mention]],
    out_dir: Path,
    config: TaggerConfig | None = None,
    *,
    lexicon: Lexicon | None = None,
    clusters: Mapping[str, str] | None = None,
    fit_normalizer: bool = True,
    normalizer_config: NormalizerConfig | None = None,
    normalizer_abbreviations: Mapping[str, Sequence[str]] | None = None,
    normalizer_lexicon: Lexicon | None = None,
    normalizer_data: tuple[Mapping[str, Document], Mapping[str, list[Mention]]] | None = None,
    clusters_source: str | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Train the CRF tagger (and the normalizer) and write a model directory.

    Args:
        docs: training notes by id; notes without gold have no mentions.
        gold: gold mentions by note id.
        out_dir: the model directory to write (replaced atomically if it is a model already).
        config: training settings; defaults to :class:`TaggerConfig()`.
        lexicon: a lexicon whose names become term-matcher features and which the normalizer is fitted on;
            None for no lexicon.
        clusters: word → cluster id (``share_ner.features.load_clusters``); copied into the model.
        fit_normalizer: fit the Normalizer and keep it in ``normalizer/``.
        normalizer_config: its settings (default settings when None).
        normalizer_abbreviations: a site's own abbreviation list for the normalizer, kept in the model.
        normalizer_lexicon: the lexicon the normalizer is fitted on when it is not ``lexicon``.
        normalizer_data: the notes and gold the normalizer is fitted on when they are not ``docs`` and ``gold``.
        clusters_source: where the clusters came from, recorded in config.json.
        progress: called with one-line status messages.

    Returns:
        ``out_dir``.
    """
    config = config or TaggerConfig()
    say = progress or (lambda msg: log.info(msg))
    out_dir = Path(out_dir)
    check_gold(docs, gold)
    if not any(d.text.strip() for d in docs.values()):
        raise ShareNerError("no training text: every note is empty")
    started = time.perf_counter()
    report = TrainingReport()
    tmp = _prepare_out_dir(out_dir)
    try:
        data = train_tagger(docs, gold, tmp, config, report, lexicon=lexicon, clusters=clusters,
                            clusters_source=clusters_source, say=say)
        normalizer_info = None
        if fit_normalizer:
            say("fitting the normalizer")
            fit_docs, fit_gold = normalizer_data or (docs, gold)
            normalizer = Normalizer.fit(normalizer_lexicon or lexicon, fit_docs, fit_gold, normalizer_config,
                                        normalizer_abbreviations)
            normalizer.save(tmp / FILES.normalizer)
            normalizer_info = {"directory": FILES.normalizer}
        report.seconds = time.perf_counter() - started
        report.peak_rss_mb = peak_rss_mb()
        write_config(tmp, {**data, "normalizer": normalizer_info, "training": report.to_dict()})
        _install(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
