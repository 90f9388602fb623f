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
from share_ner.errors import ShareNerError
from share_ner.lexicons.lexicon import Lexicon
from share_ner.linking.config import NormalizerConfig
from share_ner.linking.normalizer import Normalizer
from share_ner.model import FILES, write_config
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.training import TrainingReport, _install, _prepare_out_dir, check_gold, peak_rss_mb, train_tagger

log = logging.getLogger(__name__)


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
            normalizer = Normalizer.fit(lexicon, docs, gold, normalizer_config, normalizer_abbreviations)
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
