"""Tagging a note with a trained model: sentences → features → CRF tags → mentions → CUIs.

    >>> pipeline = Pipeline.load("models/chia")            # doctest: +SKIP
    >>> pipeline.annotate(Document("note1", text))         # doctest: +SKIP
    [Mention(doc_id='note1', spans=((12, 20),), cui='C0020538', ...)]

A :class:`Pipeline` pickles as its model directory and re-loads itself on the
other side, so it can be handed to worker processes.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any, Sequence

from share_ner.attributes import ContextMatcher
from share_ner.document import Document, Mention
from share_ner.features.matcher import TermMatcher
from share_ner.linking.normalizer import Normalizer
from share_ner.model import FILES, ModelInfo, read_model_info
from share_ner.tagging.config import TaggerConfig
from share_ner.tagging.crf import CrfTagger
from share_ner.tagging.resources import TaggerResources


class Pipeline:
    """A loaded model: the CRF tagger (:class:`~share_ner.tagging.crf.CrfTagger`), the normalizer when one was
    fitted (:class:`~share_ner.linking.normalizer.Normalizer`), and the attribute rules.

    A note makes three stops here: :meth:`tag` (mentions are born, ``CUI-less``), the normalizer (each mention
    gets its CUI), and the ConText rules (its attributes). :meth:`annotate` makes all three.
    """

    def __init__(self, info: ModelInfo, tagger: CrfTagger, normalizer: Normalizer | None) -> None:
        self.info = info
        self.tagger = tagger
        self.normalizer = normalizer
        # ShARe/CLEF 2014 attributes by ConText rules (share_ner.attributes); None: mentions carry none.
        self.context: ContextMatcher | None = None
        self._default_context = True  # the packaged rules, compiled on first use (not at load: start-up time)

    @property
    def config(self) -> TaggerConfig:
        """The tagger's settings."""
        return self.tagger.config

    @property
    def resources(self) -> TaggerResources:
        """The tagger's feature resources (term matcher, head words, clusters)."""
        return self.tagger.resources

    def use_attributes(self, context: ContextMatcher | None) -> None:
        """Fill attributes with ``context`` (a :class:`share_ner.attributes.ContextMatcher`), or with none. A
        context without disorder names gets the model's terms as its names (a "non-" that begins one is no
        negation)."""
        if context is not None and context.names is None:
            context = context.with_names(self.resources.term_matcher)
        self.context = context
        self._default_context = False

    def _attributes(self, doc: Document, mentions: list[Mention]) -> list[Mention]:
        if self._default_context:
            self.context = ContextMatcher(names=self.resources.term_matcher)
            self._default_context = False
        if self.context is None or not mentions:
            return mentions
        return self.context.assign(doc, mentions)  # the same mentions, in the same order

    @property
    def model_dir(self) -> Path:
        return self.info.directory

    @classmethod
    def load(cls, model_dir: str | Path) -> "Pipeline":
        """Load a model directory written by :func:`share_ner.training.train_model`.

        Raises:
            ShareNerError: one line naming the missing file, or both model format versions.
        """
        # Loading makes millions of objects and no garbage: the collections it would trigger (each walking all
        # that is loaded so far) are a third of the load time.
        enabled = gc.isenabled()
        gc.disable()
        try:
            info = read_model_info(model_dir)
            tagger = CrfTagger.load(info)
            normalizer = Normalizer.load(info.path(FILES.normalizer)) if info.has_normalizer else None
        finally:
            if enabled:
                gc.enable()
        return cls(info, tagger, normalizer)

    def tag(self, doc: Document) -> list[Mention]:
        """Task 1a only: the note's disorder mentions, all ``CUI-less``."""
        return self.tagger.tag(doc)

    def annotate(self, doc: Document) -> list[Mention]:
        """Tasks 1a and 1b: the note's mentions, each with a CUI (or ``CUI-less``) when a normalizer was trained,
        and (Task 2, unless :meth:`use_attributes` was given None) its attributes."""
        mentions = self.tag(doc)
        if self.normalizer is not None and mentions:
            mentions = list(self.normalizer.normalize(doc, mentions))
        return self._attributes(doc, mentions)

    def annotate_many(self, docs: Sequence[Document]) -> list[list[Mention] | Exception]:
        """:meth:`annotate` for several notes, the same mentions and CUIs: the tagger decodes their sentences
        together (:meth:`CrfTagger.tag_many`), and the normalizer takes them together (one tf-idf product, and
        one embedding batch under ``dense``, for all). A note whose tagging raises gets the exception in its
        place; if tagging or normalizing them together raises, each note is tagged or normalized alone, so that
        only the note at fault gets an exception."""
        try:
            out = self.tagger.tag_many(docs)
        except Exception:  # noqa: BLE001 - find the note at fault
            out = []
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
        context = self.context
        if context is not None and context.names is self.resources.term_matcher:
            context = context.with_names(None)  # the model's own terms: loaded again with it, not pickled twice
        return (_load_with_context, (str(self.model_dir), context))


def _load_with_context(model_dir: str, context: ContextMatcher | None) -> Pipeline:
    pipeline = Pipeline.load(model_dir)
    pipeline.use_attributes(context)
    return pipeline


def model_names(model_dir: str | Path) -> TermMatcher | None:
    """The disorder names of a model (its term matcher: lexicon names and training mentions), loaded without the
    rest of the model, for :class:`share_ner.attributes.ContextMatcher` on given mentions; None when it has none."""
    return CrfTagger.load(read_model_info(model_dir)).resources.term_matcher
