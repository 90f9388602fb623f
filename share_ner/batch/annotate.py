"""The unit of work: one note (or a batch of notes) through an annotator, with notes over a million characters
tagged in line-aligned pieces, each under a time limit (:mod:`share_ner.batch.timeout`). Failures become a
:class:`NoteResult` with an error, never an exception.

Code interrupted by the time limit at an arbitrary point may leave a cache half made, so an annotator that was
interrupted is renewed (:meth:`PipelineAnnotator.renew`: its model loaded again) before its next note.
"""

from __future__ import annotations

import functools
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from share_ner.attributes import ContextMatcher
from share_ner.batch.timeout import DEFAULT_NOTE_SECONDS, NoteTimeout, note_seconds, time_limit
from share_ner.document import Document, Mention
from share_ner.errors import ShareNerError
from share_ner.pipeline import Pipeline
from share_ner.text import SIMPLE_TOKEN

Annotator = Callable[[Document], list[Mention]]


AnnotatorFactory = Callable[[], Annotator]


# Longer notes (spaCy's own limit on one text) are tagged in line-aligned pieces of at most PIECE_CHARS characters
# (a bound on the memory of one piece's token features), their mentions shifted back to offsets into the whole
# note.
LONG_NOTE_CHARS = 1_000_000


PIECE_CHARS = 250_000


_WARM_UP = Document("warm-up", "History: chest pain and shortness of breath. No fever.\n")


class PipelineAnnotator:
    """A loaded model as an annotator: called with one note, it annotates that note; :meth:`many` annotates a
    batch with the same result, normalizing the batch's mentions together (faster: one tf-idf product, one
    embedding batch under ``dense``). ``load`` loads the same pipeline again (:meth:`renew`); by default the
    pipeline's own pickled form (its model directory and attribute rules)."""

    def __init__(self, pipeline: Any, load: Callable[[], Any] | None = None) -> None:
        self.pipeline = pipeline
        self._load = load

    def __call__(self, doc: Document) -> list[Mention]:
        return self.pipeline.annotate(doc)

    def many(self, docs: Sequence[Document]) -> list[list[Mention] | Exception]:
        return self.pipeline.annotate_many(docs)

    def renew(self) -> None:
        """Load the pipeline again: after an interruption (:class:`NoteTimeout`) its caches may be half made."""
        if self._load is not None:
            self.pipeline = self._load()
        else:
            rebuild, args = self.pipeline.__reduce__()
            self.pipeline = rebuild(*args)
        self(_WARM_UP)


def _load_pipeline(model_dir: str | Path, abbreviations: Mapping[str, Sequence[str]] | None, attributes: bool,
                   context_rules: str | None, anatomy: str | None) -> Pipeline:
    pipeline = Pipeline.load(Path(model_dir))
    if abbreviations is not None:
        if pipeline.normalizer is None:
            raise ShareNerError(f"{model_dir}: this model has no normalizer; a site abbreviation list is for "
                                "normalization")
        pipeline.normalizer.use_site_abbreviations(abbreviations)
    if not attributes or context_rules is not None or anatomy is not None:
        pipeline.use_attributes(ContextMatcher.load(context_rules, anatomy) if attributes else None)
    return pipeline


def load_annotator(model_dir: str | Path, abbreviations: Mapping[str, Sequence[str]] | None = None,
                   attributes: bool = True, context_rules: str | None = None,
                   anatomy: str | None = None) -> Annotator:
    """Load a trained model and return it as a :class:`PipelineAnnotator` (the usual annotator factory);
    ``abbreviations``: a site's own list for its normalizer, instead of the model's own; ``attributes``: fill
    the ShARe/CLEF 2014 attributes (with a site's ``context_rules`` file on top of the packaged rules, and its
    ``anatomy`` lexicon for body locations instead of the packaged body sites).

    The model is tried on a one-line note, so that lazily built parts
    (tokenizer, abbreviation detector) count as start-up, not as the first note.
    """
    load = functools.partial(_load_pipeline, model_dir, abbreviations, attributes, context_rules, anatomy)
    annotate = PipelineAnnotator(load(), load)
    annotate(_WARM_UP)
    return annotate


# Per ASCII code: a word character of SIMPLE_TOKEN (its \w), and a character that is a token alone (neither \w
# nor \s); made by the pattern's own classes.
_WORD_CODE = np.array([re.fullmatch(r"\w", chr(c)) is not None for c in range(128)])
_MARK_CODE = np.array([re.fullmatch(r"[^\w\s]", chr(c)) is not None for c in range(128)])


def count_tokens(text: str) -> int:
    """The number of words and punctuation marks of ``text`` (the unit of tokens/s), as the tokenizer's own
    fallback pattern, :data:`share_ner.text.SIMPLE_TOKEN`, finds them: in an ASCII text, counted by numpy
    (runs of word characters and single marks; several times faster than the regex)."""
    if not text.isascii():
        return len(SIMPLE_TOKEN.findall(text))
    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    word = _WORD_CODE[codes]
    runs = np.count_nonzero(word[1:] > word[:-1]) + int(len(word) > 0 and word[0])
    return int(runs + np.count_nonzero(_MARK_CODE[codes]))


@dataclass(frozen=True)
class NoteResult:
    """What annotating one note gave: its mentions and token count, or an error (no note text in it)."""

    doc_id: str
    mentions: tuple[Mention, ...]
    tokens: int
    error: str | None = None


def annotate_note(annotator: Annotator, doc: Document, seconds: float | None = DEFAULT_NOTE_SECONDS) -> NoteResult:
    """Annotate one note; an exception becomes ``NoteResult.error`` so that one bad note does not stop a batch.

    Pure and picklable with a picklable annotator: a distributed engine can map it over partitions.
    """
    return annotate_notes(annotator, [doc], seconds)[0]


def failure_reason(exc: BaseException) -> str:
    """A one-line reason for a note's failure, without note text: exception messages may quote the note, so only
    the type and where it was raised; for a time-out, the limit."""
    if isinstance(exc, NoteTimeout):
        return exc.reason()
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" in {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"annotation failed: {type(exc).__name__}{where}"


def note_pieces(text: str, limit: int = LONG_NOTE_CHARS, piece: int = PIECE_CHARS) -> list[tuple[int, int]]:
    """``(start, end)`` of the pieces ``text`` is tagged in: itself when at most ``limit`` characters, else
    consecutive pieces of at most ``piece`` characters, each cut after a line break (else after a space, else
    anywhere)."""
    if len(text) <= limit:
        return [(0, len(text))]
    limit = piece
    pieces = []
    start, n = 0, len(text)
    while n - start > limit:
        end = text.rfind("\n", start, start + limit) + 1
        if end <= start:
            end = max(text.rfind(" ", start, start + limit), text.rfind("\t", start, start + limit)) + 1
        if end <= start:
            end = start + limit
        pieces.append((start, end))
        start = end
    pieces.append((start, n))
    return pieces


def _shifted(mention: Mention, doc_id: str, offset: int) -> Mention:
    shifted = Mention(doc_id, tuple((s + offset, e + offset) for s, e in mention.spans), mention.cui, mention.type)
    return shifted if mention.attributes is None else shifted.with_attributes(mention.attributes)


def annotate_notes(annotator: Annotator, docs: Sequence[Document],
                   seconds: float | None = DEFAULT_NOTE_SECONDS) -> list[NoteResult]:
    """:func:`annotate_note` for each of ``docs``; an annotator with a ``many`` method (:class:`PipelineAnnotator`)
    gets the whole batch at once, and a failure stays with its note either way. A note over
    :data:`LONG_NOTE_CHARS` is annotated as its :func:`note_pieces`, each piece a note of its own, and its
    mentions are those of its pieces at their offsets in the whole note. Each note may take ``seconds`` per
    million characters (:func:`note_seconds`; None: no limit); one that takes longer is rejected
    (:class:`NoteTimeout`)."""
    results = []
    for doc, out in zip(docs, annotate_documents(annotator, docs, seconds)):
        tokens = count_tokens(doc.text)
        if isinstance(out, BaseException):
            results.append(NoteResult(doc.id, (), tokens, failure_reason(out)))
        else:
            results.append(NoteResult(doc.id, tuple(out), tokens))
    return results


def annotate_documents(annotator: Annotator, docs: Sequence[Document],
                       seconds: float | None = DEFAULT_NOTE_SECONDS) -> list[list[Mention] | BaseException]:
    """The work of :func:`annotate_notes`: each note's mentions, or the exception that stopped it (a
    :class:`NoteTimeout` when it ran out of time)."""
    parts: list[Document] = []
    owner: list[tuple[int, int]] = []  # (index in docs, offset of the piece)
    for i, doc in enumerate(docs):
        for start, end in note_pieces(doc.text):
            parts.append(doc if (start, end) == (0, len(doc.text)) else Document(doc.id, doc.text[start:end]))
            owner.append((i, start))
    outs = _annotate_parts(annotator, parts, seconds)
    mentions: list[list[Mention]] = [[] for _ in docs]
    errors: list[BaseException | None] = [None] * len(docs)
    for (i, offset), out in zip(owner, outs):
        if isinstance(out, BaseException):
            errors[i] = errors[i] or out
        else:
            mentions[i].extend(out if offset == 0 else (_shifted(m, docs[i].id, offset) for m in out))
    return [err if err is not None else ms for ms, err in zip(mentions, errors)]


def _renew(annotator: Annotator) -> None:
    renew = getattr(annotator, "renew", None)  # an annotator without it holds no state to mend
    if renew is None:
        return
    try:
        renew()
    except Exception as exc:  # noqa: BLE001 - one line: the notes after it cannot be annotated
        what = str(exc) if isinstance(exc, ShareNerError) else type(exc).__name__
        raise ShareNerError(f"cannot load the model again after a note ran out of time: {what}") from None


def _annotate_parts(annotator: Annotator, docs: Sequence[Document],
                    seconds: float | None) -> list[list[Mention] | BaseException]:
    many = getattr(annotator, "many", None)
    if many is not None and len(docs) > 1:
        try:
            with time_limit(note_seconds(seconds, sum(len(d.text) for d in docs))):
                return list(many(docs))
        except NoteTimeout:  # then note by note, so that only the note at fault is stopped
            _renew(annotator)
        except Exception:  # noqa: BLE001 - then note by note, so that only the note at fault fails
            pass
    outs: list[list[Mention] | BaseException] = []
    for doc in docs:
        try:
            with time_limit(note_seconds(seconds, len(doc.text))):
                outs.append(list(annotator(doc)))
        except NoteTimeout as exc:
            outs.append(exc)
            _renew(annotator)
        except Exception as exc:  # noqa: BLE001 - a batch must survive any failure on one note
            outs.append(exc)
    return outs
