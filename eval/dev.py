"""Scoring a trained model on dev notes (``share-ner train --dev-text``): strict and relaxed P/R/F1 of its
mentions, kept in the model's ``config.json`` under ``training.dev``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from share_ner.document import Document, Mention
from share_ner.eval.scoring import score
from share_ner.model import read_model_info, write_config
from share_ner.pipeline import Pipeline


def score_dict(gold: Mapping[str, Sequence[Mention]], pred: Mapping[str, Sequence[Mention]],
               docs: Mapping[str, Document] | None = None) -> dict[str, Any]:
    """Strict/relaxed precision, recall and F1 of ``pred`` against ``gold`` (``share_ner.eval.scoring.score``)."""
    ids = set(gold) | set(pred)
    if docs is not None:
        ids |= set(docs)
    g = {d: list(gold.get(d, ())) for d in ids}
    p = {d: list(pred.get(d, ())) for d in ids}
    return score(g, p).to_dict()


def record_dev_scores(model_dir: str | Path, docs: Mapping[str, Document],
                      gold: Mapping[str, Sequence[Mention]]) -> dict[str, Any]:
    """Tag ``docs`` with the model in ``model_dir`` (Task 1a), score the mentions against ``gold``, and keep the
    scores in its ``config.json`` (``training.dev``); the scores."""
    pipeline = Pipeline.load(model_dir)
    pred = {doc_id: pipeline.tag(doc) for doc_id, doc in docs.items()}
    scores = score_dict(gold, pred, docs)
    info = read_model_info(model_dir)
    data = dict(info.data)
    data["training"] = {**data.get("training", {}), "dev": scores}
    write_config(info.directory, data)
    return scores
