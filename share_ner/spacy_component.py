"""share-ner as a spaCy 3 pipeline component: ``nlp.add_pipe("share_ner")``.

The factory is registered through the ``spacy_factories`` entry point, so any
spaCy 3 pipeline finds it without importing share-ner::

    nlp = spacy.blank("en")                       # or medspaCy's, scispaCy's ... pipeline
    nlp.add_pipe("share_ner", config={"model": None})   # None: the built-in default model
    doc = nlp(note)
    for span in doc.spans["share_ner"]:
        span.label_, span._.cui, span._.attributes, span._.fragments

Each mention becomes a :class:`~spacy.tokens.Span` of ``doc.spans[spans_key]``
labelled ``Disease_Disorder``, in text order. A discontiguous mention's span is
the hull of its fragments (from the first fragment's start to the last one's
end); ``span._.fragments`` lists the fragment spans (one for a contiguous
mention). ``span._.cui`` is the CUI or ``CUI-less`` (also in ``span.kb_id_``),
``span._.attributes`` the attributes' dict when the model computes them, else
None. With ``set_ents``, contiguous mentions are added to ``doc.ents`` where
they overlap neither an entity already there nor a longer mention.

Offsets are exact: the mentions are found on ``doc.text`` by share-ner's own
tokenizer, and where a mention boundary falls inside a token of the host
pipeline's tokenizer (``"arthritis(knee"`` is one token of spaCy's English
tokenizer), that token is split (``doc.retokenize()``). The pieces keep the
token's custom attributes, and medspaCy's sections (``doc._.sections``, token
indices) are moved to the new indices, so a sectionizer may run before this
component.

spaCy refuses a text longer than ``nlp.max_length`` (a million characters by default) before any component runs;
set ``nlp.max_length`` higher to tag longer notes (a pipeline without a parser or NER needs no more memory than
the text's tokens): this component tags a note of any length, in line-aligned pieces as ``share-ner tag`` does.
A model directory that fails its checks is one :class:`~share_ner.model.ModelError` (a ``ShareNerError``) when
the component is added or first used; a note that runs out of time raises ``share_ner.NoteTimeoutError``.

The mentions themselves live in one list per doc (``doc._.share_ner_mentions``:
spans, CUI, attributes; plain data, so docs travel between processes under
``nlp.pipe(..., n_process=N)``); the span attributes are read from it.
``nlp.to_disk`` saves the model reference (the model directory's absolute path,
or None for the default model), not the model; ``spacy.load`` loads it again.
"""

# No ``from __future__ import annotations`` here: spaCy validates the factory's arguments from its annotations.
import bisect
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from spacy.language import Language
from spacy.tokens import Doc, Span
from spacy.tokens.underscore import Underscore

from share_ner.api import load
from share_ner.document import DISORDER, Mention
from share_ner.errors import ShareNerError

FACTORY = "share_ner"
SPANS_KEY = "share_ner"
DOC_EXTENSION = "share_ner_mentions"
_ID_PREFIX = "share_ner-"
_SAVED = "share_ner.json"


def _mention_record(doc: Doc, span: Span) -> dict[str, Any] | None:
    records = doc._.get(DOC_EXTENSION) or []
    ident = span.id_
    if ident.startswith(_ID_PREFIX) and ident[len(_ID_PREFIX):].isdigit():
        k = int(ident[len(_ID_PREFIX):])
        if k < len(records):
            return records[k]
    # a span made elsewhere over the same characters (e.g. copied without its id)
    return next((r for r in records if r["spans"][0][0] == span.start_char and r["spans"][-1][1] == span.end_char),
                None)


def _cui(span: Span) -> str | None:
    record = _mention_record(span.doc, span)
    return None if record is None else record["cui"]


def _attributes(span: Span) -> dict[str, Any] | None:
    record = _mention_record(span.doc, span)
    return None if record is None else record["attributes"]


def _fragments(span: Span) -> list[Span] | None:
    record = _mention_record(span.doc, span)
    if record is None:
        return None
    return [_char_span(span.doc, s, e) for s, e in record["spans"]]


_SPAN_EXTENSIONS: dict[str, Callable[[Span], Any]] = {"cui": _cui, "attributes": _attributes,
                                                      "fragments": _fragments}


def _register_extensions() -> None:
    for name, getter in _SPAN_EXTENSIONS.items():
        existing = Span.get_extension(name)
        if existing is not None and getattr(existing[2], "__module__", None) != __name__:
            raise ShareNerError(f"Span._.{name} is already registered by another component; share_ner needs it "
                                "for its mentions")
        Span.set_extension(name, getter=getter, force=True)
    if not Doc.has_extension(DOC_EXTENSION):
        Doc.set_extension(DOC_EXTENSION, default=None)


def _char_span(doc: Doc, start: int, end: int) -> Span:
    span = doc.char_span(start, end)
    # only if a later component merged tokens: the smallest token span holding the characters
    return span if span is not None else doc.char_span(start, end, alignment_mode="expand")


def split_tokens_at(doc: Doc, cuts: Iterable[int]) -> int:
    """Split every token of ``doc`` that a character offset of ``cuts`` falls strictly inside; the pieces keep
    the token's custom attribute values, and medspaCy's ``doc._.sections`` are re-indexed. Returns how many
    tokens were split."""
    starts = doc.to_array("IDX").tolist()  # token start offsets, without a Python loop over the tokens
    inside: dict[int, list[int]] = {}
    for c in sorted(set(cuts)):
        i = bisect.bisect_right(starts, c) - 1
        if i >= 0 and starts[i] < c < starts[i] + len(doc[i].text):
            inside.setdefault(i, []).append(c)
    if not inside:
        return 0
    plan = sorted(inside.items())
    n_before = len(doc)
    extras = [0] * (n_before + 1)  # extras[i]: tokens added before old token i
    for i, inner in plan:
        extras[i + 1] += len(inner)
    for i in range(1, n_before + 1):
        extras[i] += extras[i - 1]
    # custom token attributes stored on the doc (not computed by a getter or method): copied to every piece
    stored = [name for name, (_, method, getter, _) in Underscore.token_extensions.items()
              if getter is None and method is None]
    with doc.retokenize() as retokenizer:
        for i, inner in plan:
            token = doc[i]
            bounds = [token.idx, *inner, token.idx + len(token.text)]
            orths = [doc.text[s:e] for s, e in zip(bounds, bounds[1:])]
            last = len(orths) - 1
            head = (token, last) if token.head.i == token.i else token.head
            heads = [(token, last)] * last + [head]
            custom = {}
            for name in stored:
                key = ("._.", name, token.idx, None)
                if key in doc.user_data:
                    custom[name] = doc.user_data[key]
            retokenizer.split(token, orths, heads, attrs={"_": [dict(custom) for _ in orths]} if custom else {})
    _reindex_sections(doc, lambda j: j + extras[min(j, n_before)])
    return len(plan)


def _reindex_sections(doc: Doc, new_index: Callable[[int], int]) -> None:
    if not Doc.has_extension("sections"):
        return
    moved: set[int] = set()
    for section in doc._.get("sections") or []:
        if id(section) in moved:
            continue
        moved.add(id(section))
        for attr in ("title_start", "title_end", "body_start", "body_end"):
            value = getattr(section, attr, None)
            if isinstance(value, int):
                setattr(section, attr, new_index(value))


def _record(m: Mention) -> dict[str, Any]:
    return {"spans": [[s, e] for s, e in m.spans], "cui": m.cui,
            "attributes": None if m.attributes is None else m.attributes.to_dict()}


class ShareNerComponent:
    """The pipeline component; it pickles as its settings and model reference (the model re-loads in a worker)."""

    def __init__(self, name: str = FACTORY, model: str | None = None, spans_key: str = SPANS_KEY,
                 set_ents: bool = True) -> None:
        self.name = name
        self.model = None if model is None else str(model)
        self.spans_key = spans_key
        self.set_ents = set_ents
        self._annotator: Any = None
        _register_extensions()
        # A model directory that does not exist here yet may be set by from_disk; it is loaded on first use then.
        if self.model is None or Path(self.model).is_dir():
            self._load()

    def _load(self) -> Any:
        if self._annotator is None:
            self._annotator = load(self.model)
        return self._annotator

    def __call__(self, doc: Doc) -> Doc:
        return self._set(doc, self._load()(doc.text))

    def pipe(self, docs: Iterable[Doc], batch_size: int = 16) -> Iterable[Doc]:
        """Annotate docs ``batch_size`` at a time (the normalizer takes a batch's mentions together)."""
        annotator = self._load()
        batch: list[Doc] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= batch_size:
                yield from self._set_many(annotator, batch)
                batch = []
        if batch:
            yield from self._set_many(annotator, batch)

    def _set_many(self, annotator: Any, docs: list[Doc]) -> Iterable[Doc]:
        for doc, mentions in zip(docs, annotator.pipe([d.text for d in docs], batch_size=len(docs))):
            yield self._set(doc, mentions)

    def _set(self, doc: Doc, mentions: list[Mention]) -> Doc:
        split_tokens_at(doc, (b for m in mentions for span in m.spans for b in span))
        doc._.set(DOC_EXTENSION, [_record(m) for m in mentions])
        group = []
        for k, m in enumerate(mentions):
            hull = _char_span(doc, m.start, m.end)
            group.append(Span(doc, hull.start, hull.end, label=DISORDER, kb_id=m.cui, span_id=f"{_ID_PREFIX}{k}"))
        doc.spans[self.spans_key] = group
        if self.set_ents:
            doc.ents = _with_ents(doc, [s for s, m in zip(group, mentions) if not m.is_discontiguous])
        return doc

    def to_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        model = None if self.model is None else str(Path(self.model).resolve())
        (path / _SAVED).write_text(json.dumps({"model": model}) + "\n", encoding="utf-8")

    def from_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> "ShareNerComponent":
        saved = Path(path) / _SAVED
        try:
            model = json.loads(saved.read_text(encoding="utf-8"))["model"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ShareNerError(f"{saved}: not a saved share_ner component ({exc})") from None
        if model != self.model:
            self.model = model
            self._annotator = None
        self._load()
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (ShareNerComponent, (self.name, self.model, self.spans_key, self.set_ents))


def _with_ents(doc: Doc, spans: list[Span]) -> list[Span]:
    taken = [False] * len(doc)
    ents = list(doc.ents)
    for ent in ents:
        taken[ent.start:ent.end] = [True] * len(ent)
    for span in sorted(spans, key=lambda s: (-(s.end - s.start), s.start)):
        if not any(taken[span.start:span.end]):
            taken[span.start:span.end] = [True] * len(span)
            ents.append(span)
    return sorted(ents, key=lambda s: s.start)


@Language.factory(
    FACTORY,
    default_config={"model": None, "spans_key": SPANS_KEY, "set_ents": True},
    assigns=["doc.spans", "doc.ents", f"doc._.{DOC_EXTENSION}", "span._.cui", "span._.attributes",
             "span._.fragments"],
)
def make_share_ner(nlp: Language, name: str, model: Optional[str], spans_key: str,
                   set_ents: bool) -> "ShareNerComponent":
    """The ``share_ner`` factory: ``model`` is a model directory, or None for the built-in default model."""
    return ShareNerComponent(name, model, spans_key, set_ents)


__all__ = ["FACTORY", "SPANS_KEY", "ShareNerComponent", "make_share_ner", "split_tokens_at"]
