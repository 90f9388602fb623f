"""Tagging a note with a trained model: sentences → features → CRF tags → mentions → CUIs.

    >>> pipeline = Pipeline.load("models/chia")            # doctest: +SKIP
    >>> pipeline.annotate(Document("note1", text))         # doctest: +SKIP
    [Mention(doc_id='note1', spans=((12, 20),), cui='C0020538', ...)]

A :class:`Pipeline` pickles as its model directory and re-loads itself on the
other side, so it can be handed to worker processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pycrfsuite

from share_ner.attributes import ContextMatcher
from share_ner.config import TaggerConfig
from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.features.clusters import load_clusters
from share_ner.features.items import model_attributes
from share_ner.model import FILES, ModelError, ModelInfo, read_model_info, read_terms
from share_ner.tagger import doc_sequences, make_resources, tag_sequences


class Pipeline:
    """A loaded model: the CRF tagger, its feature resources and (when trained) the normalizer."""

    def __init__(self, info: ModelInfo, config: TaggerConfig, tagger: pycrfsuite.Tagger,
                 resources: Any, normalizer: Any | None) -> None:
        self.info = info
        self.config = config
        self.tagger_ = tagger
        self.resources = resources
        self.normalizer = normalizer
        # ShARe/CLEF 2014 attributes by ConText rules (share_ner.attributes); None: mentions carry none.
        self.context: ContextMatcher | None = None
        self._default_context = True  # the packaged rules, compiled on first use (not at load: start-up time)

    def use_attributes(self, context: ContextMatcher | None) -> None:
        """Fill attributes with ``context`` (a :class:`share_ner.attributes.ContextMatcher`), or with none."""
        self.context = context
        self._default_context = False

    def _attributes(self, doc: Document, mentions: list[Mention]) -> list[Mention]:
        if self._default_context:
            self.context = ContextMatcher()
            self._default_context = False
        if self.context is None or not mentions:
            return mentions
        return self.context.assign(doc, mentions)  # the same mentions, in the same order

    @property
    def model_dir(self) -> Path:
        return self.info.directory

    @classmethod
    def load(cls, model_dir: str | Path) -> "Pipeline":
        """Load a model directory written by :func:`share_ner.tagger.train_model`.

        Raises:
            ShareNerError: one line naming the missing file, or both model format versions.
        """
        info = read_model_info(model_dir)
        try:
            # Models saved before the ``algorithm`` setting existed were all trained with L-BFGS.
            config = TaggerConfig.from_dict({"algorithm": "lbfgs", **info.tagger})
        except ShareNerError as exc:
            raise ModelError(
                f"{info.path(FILES.config)}: {exc} (model written by share-ner {info.data.get('share_ner_version')})"
            ) from None
        terms = list(read_terms(info.path(FILES.terms))) if info.has_terms else None
        clusters = load_clusters(info.path(FILES.clusters)) if info.has_clusters else None
        resources = make_resources(terms, clusters)
        tagger = pycrfsuite.Tagger()
        try:
            tagger.open(str(info.path(FILES.crf)))
        except (OSError, ValueError) as exc:
            raise ModelError(f"{info.path(FILES.crf)}: not a readable CRFsuite model ({exc})") from None
        # Tokens carry only the attributes the model weighs; CRFsuite would skip the others (same tags, less work).
        resources.features.keep_only(model_attributes(tagger))
        normalizer = None
        if info.has_normalizer:
            from share_ner.normalizer import Normalizer

            normalizer = Normalizer.load(info.path(FILES.normalizer))
        return cls(info, config, tagger, resources, normalizer)

    def tag(self, doc: Document) -> list[Mention]:
        """Task 1a only: the note's disorder mentions, all ``CUI-less``."""
        seqs = doc_sequences(doc, self.resources, self.config.features, self.config.coordination)
        return tag_sequences(self.tagger_, seqs, self.config.scheme,
                             self.resources if self.config.expand_coordinations else None,
                             brackets=self.config.balance_brackets)

    def annotate(self, doc: Document) -> list[Mention]:
        """Tasks 1a and 1b: the note's mentions, each with a CUI (or ``CUI-less``) when a normalizer was trained,
        and (Task 2, unless :meth:`use_attributes` was given None) its attributes."""
        mentions = self.tag(doc)
        if self.normalizer is not None and mentions:
            mentions = list(self.normalizer.normalize(doc, mentions))
        return self._attributes(doc, mentions)

    def annotate_many(self, docs: Sequence[Document]) -> list[list[Mention] | Exception]:
        """:meth:`annotate` for several notes, the same mentions and CUIs: each note is tagged alone, and the
        normalizer takes them together (one tf-idf product, and one embedding batch under ``dense``, for all).
        A note whose tagging raises gets the exception in its place; if normalizing them together raises, each
        note is normalized alone, so that only the note at fault gets an exception."""
        out: list[list[Mention] | Exception] = []
        for doc in docs:
            try:
                out.append(self.tag(doc))
            except Exception as exc:  # noqa: BLE001 - reported for this note only
                out.append(exc)
        if self.normalizer is None:
            return self._attributes_many(docs, out)
        todo = [(i, doc, ms) for i, (doc, ms) in enumerate(zip(docs, out)) if isinstance(ms, list) and ms]
        try:
            for (i, _, _), ms in zip(todo, self.normalizer.normalize_many([(doc, ms) for _, doc, ms in todo])):
                out[i] = ms
        except Exception:  # noqa: BLE001 - find the note at fault
            for i, doc, ms in todo:
                try:
                    out[i] = list(self.normalizer.normalize(doc, ms))
                except Exception as exc:  # noqa: BLE001
                    out[i] = exc
        return self._attributes_many(docs, out)

    def _attributes_many(self, docs: Sequence[Document], out: list[list[Mention] | Exception]
                         ) -> list[list[Mention] | Exception]:
        for i, (doc, ms) in enumerate(zip(docs, out)):
            if isinstance(ms, list):
                try:
                    out[i] = self._attributes(doc, ms)
                except Exception as exc:  # noqa: BLE001 - reported for this note only
                    out[i] = exc
        return out

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pycrfsuite.Tagger cannot be pickled; the model directory re-loads cheaply in a worker.
        if self._default_context:
            return (Pipeline.load, (str(self.model_dir),))
        return (_load_with_context, (str(self.model_dir), self.context))


def _load_with_context(model_dir: str, context: Any | None) -> Pipeline:
    pipeline = Pipeline.load(model_dir)
    pipeline.use_attributes(context)
    return pipeline
